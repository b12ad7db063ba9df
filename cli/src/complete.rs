//! `rho mcp complete <id> <prompt-or-template> <argument> <prefix>
//! [ARG=VALUE...]`: start one server and print the values it suggests
//! for an argument of one of its prompts, or a variable of one of its
//! resource templates, one per line (`--json`: the values and whether the
//! server has more).
//!
//! The request goes through the same
//! [`rho_proto_core::features::completions::CompletionBroker`]
//! an interactive palette uses, so a server that does not declare the
//! `completions` capability is never asked (said so, exit 1), and the
//! arguments already given (`ARG=VALUE` words) are sent as
//! `context.arguments`.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::completions::{CompletionBroker, CompletionRef, Query};
use rho_proto_core::features::uri_template::UriTemplate;
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::text::terminal::sanitize_line;
use serde_json::json;

use crate::{Failure, write_stdout};
use rho_host::{LoadedConfig, RuntimeKind};

/// `rho mcp complete` arguments.
#[derive(clap::Args, Debug)]
#[command(
    override_usage = "rho mcp complete [OPTIONS] <ID> <TARGET> <ARGUMENT> <PREFIX> [ARG=VALUE]...\n       rho mcp complete [OPTIONS] --stdio <COMMAND> <TARGET> <ARGUMENT> <PREFIX> [ARG=VALUE]...\n       rho mcp complete [OPTIONS] --url <URL> <TARGET> <ARGUMENT> <PREFIX> [ARG=VALUE]..."
)]
pub(crate) struct CompleteArgs {
    /// The server identity (with --stdio or --url, the target).
    pub(crate) id: String,
    /// A prompt's name, or a resource template's URI template.
    pub(crate) target: String,
    /// The argument (or template variable) being filled in.
    pub(crate) argument: String,
    /// What has been typed of its value so far (may be empty: '').
    pub(crate) prefix: Option<String>,
    /// Arguments already given, as ARG=VALUE words.
    #[arg(value_name = "ARG=VALUE")]
    pub(crate) context: Vec<String>,
    /// Print the values as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) adhoc: crate::adhoc::AdhocArgs,
}

/// Runs `rho mcp complete`.
pub(crate) fn run(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    options: RuntimeOptions,
    args: &CompleteArgs,
) -> Result<ExitCode, Failure> {
    // With --stdio or --url there is no id: every word moves up a place.
    let (id, target, argument, prefix, words) = if args.adhoc.given() {
        (
            crate::adhoc::ID,
            args.id.as_str(),
            args.target.as_str(),
            args.argument.clone(),
            args.prefix
                .iter()
                .chain(&args.context)
                .cloned()
                .collect::<Vec<_>>(),
        )
    } else {
        let Some(prefix) = args.prefix.clone() else {
            return Err(Failure::Usage(
                "give what is typed of the value after the argument ('' for nothing)".into(),
            ));
        };
        (
            args.id.as_str(),
            args.target.as_str(),
            args.argument.as_str(),
            prefix,
            args.context.clone(),
        )
    };
    let mut context = BTreeMap::new();
    for word in &words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(Failure::Usage(format!(
                "arguments already given are ARG=VALUE words, not `{word}`"
            )));
        };
        context.insert(key.to_owned(), value.to_owned());
    }
    let connected = crate::prompt::connect(loaded, kind, options, id)?;
    let report = connected.report();
    let catalog = &report.catalog;
    // What the target names, and the argument names it takes.
    let named = target;
    let target = if let Some(prompt) = catalog.prompt(named) {
        Ok((
            CompletionRef::Prompt {
                name: prompt.name.clone(),
            },
            prompt.arguments.iter().map(|a| a.name.clone()).collect(),
        ))
    } else if let Some(template) = catalog
        .templates
        .items
        .iter()
        .find(|t| t.uri_template == named)
    {
        let variables = UriTemplate::parse(&template.uri_template)
            .map(|t| t.variables())
            .unwrap_or_default();
        Ok((
            CompletionRef::Resource {
                uri: template.uri_template.clone(),
            },
            variables,
        ))
    } else {
        Err(format!(
            "server `{id}` has no prompt or resource template `{named}`"
        ))
    };
    let checked = target.and_then(|(reference, names): (CompletionRef, Vec<String>)| {
        for key in std::iter::once(argument).chain(context.keys().map(String::as_str)) {
            if !names.iter().any(|n| n == key) {
                return Err(format!(
                    "`{named}` has no argument `{key}`; its arguments: {}",
                    names.join(", ")
                ));
            }
        }
        Ok(reference)
    });
    let reference = match checked {
        Ok(reference) => reference,
        Err(message) => {
            connected.host.shutdown();
            return Err(Failure::Usage(message));
        }
    };
    let mut broker = CompletionBroker::new(
        report.capabilities.completions,
        connected
            .view
            .config
            .as_ref()
            .map_or(std::time::Duration::from_secs(30), |c| c.tool_timeout),
    );
    let query = Query {
        reference,
        argument: argument.to_owned(),
        value: prefix,
        context,
    };
    let _ = broker.ask(Instant::now(), query);
    let Some((ticket, params)) = broker.poll_request() else {
        connected.host.shutdown();
        return Err(Failure::Runtime(format!(
            "server `{id}` does not declare the completions capability, so it is never asked"
        )));
    };
    let value = connected.request_then_shut_down(FeatureRequest::Complete(params))?;
    let completion = rho_proto_core::features::completions::Completion::from_value(&value)
        .map_err(|e| Failure::Runtime(format!("server `{id}` sent a malformed completion: {e}")))?;
    let values = broker
        .handle_answer(Instant::now(), ticket, Ok(&value))
        .unwrap_or_default();
    if args.json {
        let doc = json!({
            "schema": 1,
            "document": "complete",
            "server": id,
            "result": value,
            "values": values,
            "total": completion.total,
            "has_more": completion.has_more,
        });
        write_stdout(&crate::output::json_text(&doc))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    for value in &values {
        text.push_str(&sanitize_line(value));
        text.push('\n');
    }
    if completion.has_more {
        text.push_str("… (the server has more)\n");
    }
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
