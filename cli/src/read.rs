//! `rho mcp read <id> <URI> [VAR=VALUE...]`: start one server, read one
//! of its resources, and print what a message would carry
//! ([`rho_proto_core::features::resources::attachment`]): a text body as
//! it is, one image blob as a descriptor (the model would get the image
//! itself), any other blob as `[resource <mime>, <size>]`, several bodies
//! one after another, capped by the server's `max_output_bytes`.
//! `--output FILE` writes the body's bytes instead (a blob decoded, text
//! as UTF-8); `--json` prints the bodies as sent and the attachment.
//!
//! `--watch` subscribes to the resource (`resources.subscribe`, either
//! protocol era), prints it, and prints it again each time the server says
//! it changed, until a stop signal (Ctrl-C): then it unsubscribes and
//! exits as every interrupted command does (130 for SIGINT). Changes that
//! come while a read is under way are one more read, not one per
//! notification ([`rho_host::resource_update_channel`] coalesces them).
//! It subscribes before the first read, so a change between the two is
//! not missed. A server that does not declare `resources.subscribe` is
//! refused before anything is sent (exit 2), naming the server; a server
//! that refuses the subscription fails the command (exit 1).
//!
//! A stdio server that dies while watched is started again as its
//! `restart` policy says, and subscribed to again by the host: the watch
//! says so on stderr, reads the resource again (a change while the server
//! was down was not heard of) and carries on. A server that is not started
//! again (restarts off or given up), or whose new process refuses the
//! subscription, ends the watch: it says so on stderr, naming the server,
//! why, and what to do, and exits 1.
//!
//! A URI template (`demo://resource/dynamic/text/{resourceId}`) names
//! nothing to read until its variables are filled in: its values follow
//! as `VAR=VALUE` words and are expanded by RFC 6570. A template with a
//! variable left unfilled is refused with its variables named (exit 2),
//! before any server is started.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use rho_proto_core::features::content::human_size;
use rho_proto_core::features::resources::{Attachment, ResourceContents};
use rho_proto_core::features::uri_template::{TemplateError, UriTemplate};
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::text::terminal::sanitize;
use serde_json::json;

use crate::{Failure, unknown_server, write_stdout};
use rho_host::{
    AttachError, CallError, CallOptions, LoadedConfig, RuntimeKind, ToolCallError, WatchEnd,
    WatchNotice,
};

/// `rho mcp read` arguments.
#[derive(clap::Args, Debug)]
#[command(
    override_usage = "rho mcp read [OPTIONS] <ID> <URI> [VAR=VALUE]...\n       rho mcp read [OPTIONS] --stdio <COMMAND> <URI> [VAR=VALUE]...\n       rho mcp read [OPTIONS] --url <URL> <URI> [VAR=VALUE]..."
)]
pub(crate) struct ReadArgs {
    /// The server identity (with --stdio or --url, the URI).
    pub(crate) id: String,
    /// The resource's URI, or a URI template (quote it for the shell).
    pub(crate) uri: Option<String>,
    /// Values for a template's variables, as VAR=VALUE words.
    #[arg(value_name = "VAR=VALUE")]
    pub(crate) values: Vec<String>,
    /// Write the body's bytes to FILE (a blob decoded) instead of
    /// printing it.
    #[arg(long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Print the bodies as sent and the attachment as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Subscribe to the resource and print it again each time the server
    /// says it changed, until Ctrl-C (needs `resources.subscribe`).
    #[arg(long, conflicts_with_all = ["output", "json"])]
    pub(crate) watch: bool,
    #[command(flatten)]
    pub(crate) adhoc: crate::adhoc::AdhocArgs,
}

/// The URI to read: `uri` itself, or a template expanded with `values`.
pub(crate) fn resolve(uri: &str, values: &[String]) -> Result<String, String> {
    if !UriTemplate::is_template(uri) {
        if let Some(word) = values.first() {
            return Err(format!(
                "`{uri}` is not a URI template, so it takes no values (got `{word}`)"
            ));
        }
        return Ok(uri.to_owned());
    }
    let template = UriTemplate::parse(uri).map_err(|e| e.to_string())?;
    let variables = template.variables();
    let mut given = BTreeMap::new();
    for word in values {
        let Some((key, value)) = word.split_once('=') else {
            return Err(format!(
                "template values are VAR=VALUE words, not `{word}`; its variables: {}",
                variables.join(", ")
            ));
        };
        if !variables.iter().any(|v| v == key) {
            return Err(format!(
                "URI template `{uri}` has no variable `{key}`; its variables: {}",
                variables.join(", ")
            ));
        }
        given.insert(key.to_owned(), value.to_owned());
    }
    template.expand(uri, &given).map_err(|e| match e {
        TemplateError::Unfilled { missing, .. } => format!(
            "`{uri}` is a URI template: fill in {} (e.g. {}=VALUE) to name a resource",
            missing.join(", "),
            missing[0]
        ),
        other => other.to_string(),
    })
}

/// Runs `rho mcp read`.
pub(crate) fn run(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    options: RuntimeOptions,
    args: &ReadArgs,
) -> Result<ExitCode, Failure> {
    let (id, uri, values) =
        crate::adhoc::shift(args.adhoc.given(), &args.id, &args.uri, &args.values)
            .ok_or_else(|| Failure::Usage("give the resource's URI after the server id".into()))?;
    if loaded.config.get(id).is_none() {
        return Err(Failure::Usage(unknown_server(loaded, id)));
    }
    let from_template = UriTemplate::is_template(uri);
    let uri = resolve(uri, &values).map_err(Failure::Usage)?;
    if args.watch {
        return watch(loaded, kind, options, id, &uri);
    }
    let connected = crate::prompt::connect(loaded, kind, options, id)?;
    if !connected.report().capabilities.resources {
        let id = connected.view.id.clone();
        connected.host.shutdown();
        return Err(Failure::Usage(format!("server `{id}` offers no resources")));
    }
    // A URI the server did not list (and not made from a template) gets
    // the closest listed one, should the read fail.
    let catalog = &connected.report().catalog;
    let listed = from_template || catalog.resources.items.iter().any(|r| r.uri == uri);
    let near = if listed {
        None
    } else {
        rho_host::did_you_mean(&uri, catalog.resources.items.iter().map(|r| r.uri.as_str()))
            .map(|near| format!("; did you mean `{near}`?"))
    };
    let rho_host::Attached {
        attachment: carried,
        result,
        as_sent: value,
    } = connected
        .ask_then_shut_down(|host, server, cancel| host.attach_resource(server, &uri, cancel))
        .map_err(|failure| match (failure, &near) {
            (Failure::Runtime(message), Some(near)) => Failure::Runtime(format!("{message}{near}")),
            (failure, _) => failure,
        })?;
    if let Some(path) = &args.output {
        let [body] = result.contents.as_slice() else {
            return Err(Failure::Runtime(format!(
                "`{uri}` has {} bodies; --output writes one",
                result.contents.len()
            )));
        };
        let bytes = match body {
            ResourceContents::Text { text, .. } => text.as_bytes().to_vec(),
            blob => blob.decoded().ok_or_else(|| {
                Failure::Runtime(format!("server `{id}` sent a blob that is not base64"))
            })?,
        };
        std::fs::write(path, &bytes)
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
        // `human_size` already says bytes exactly below 1,000 bytes; above, the
        // exact count follows the rounded size.
        let size = human_size(bytes.len());
        let exact = if size.ends_with(" B") {
            String::new()
        } else {
            format!(" ({} bytes)", bytes.len())
        };
        write_stdout(&format!("wrote {size}{exact} to {}\n", path.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        let doc = json!({
            "schema": 1,
            "document": "read",
            "server": id,
            "uri": uri,
            "result": value,
            "contents": result.contents,
            "attachment": carried,
        });
        write_stdout(&crate::output::json_text(&doc))?;
        return Ok(ExitCode::SUCCESS);
    }
    write_stdout(&printed(carried))?;
    Ok(ExitCode::SUCCESS)
}

/// What `read` prints of an attachment, sanitized for a terminal.
fn printed(carried: Attachment) -> String {
    let mut text = match carried {
        Attachment::Text { text } => sanitize(&text).into_owned(),
        Attachment::Image {
            mime_type,
            data_base64,
        } => format!(
            "[image {}, {}] (the message carries the image itself; --output FILE saves it)",
            sanitize(&mime_type),
            human_size(data_base64.len() / 4 * 3)
        ),
        _ => String::new(),
    };
    text.push('\n');
    text
}

/// How long the unsubscribe on the way out may take: the command is
/// ending, and the session's close ends the subscription anyway.
const UNSUBSCRIBE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// `rho mcp read --watch`: subscribe, print, print again on each change,
/// until a stop signal.
fn watch(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    mut options: RuntimeOptions,
    id: &str,
    uri: &str,
) -> Result<ExitCode, Failure> {
    let (sink, updates) = rho_host::resource_update_channel();
    options.host.resource_updates = Some(sink);
    let connected = crate::prompt::connect_with(loaded, kind, options, id, true)?;
    let capabilities = &connected.report().capabilities;
    if !(capabilities.resources && capabilities.resources_subscribe) {
        let id = connected.view.id.clone();
        let what = if capabilities.resources {
            "does not offer resource subscriptions (it does not declare `resources.subscribe`)"
        } else {
            "offers no resources"
        };
        connected.host.shutdown();
        return Err(Failure::Usage(format!(
            "server `{id}` {what}, so rho cannot watch `{}`; without --watch, `rho mcp read` reads it once",
            sanitize(uri)
        )));
    }
    let crate::prompt::Connected { host, view, cancel } = connected;
    let server = view.id.as_str();
    let outcome = (|| -> Result<(), Failure> {
        let runtime = |e: &dyn std::fmt::Display| Failure::Runtime(e.to_string());
        host.subscribe_resource(server, uri, CallOptions::new().cancel(&cancel))
            .map_err(|e| runtime(&e))?;
        let mut last = None;
        loop {
            match host.attach_resource(server, uri, &cancel) {
                Ok(attached) => {
                    // A read that shows what was printed last is not
                    // printed again: the notifications of one change can
                    // straddle a read (the reader looked between them), and
                    // the same body twice says nothing new.
                    let text = printed(attached.attachment);
                    if last.as_ref() != Some(&text) {
                        write_stdout(&text)?;
                        last = Some(text);
                    }
                }
                // The server died under the read: what becomes of the
                // watch (renewed on a restarted server, or ended) comes
                // next, and says what to do.
                Err(AttachError::Request(ToolCallError::Call(CallError::SessionClosed {
                    ..
                }))) => {
                    tracing::info!(
                        server,
                        "the server ended during a read; waiting for what becomes of the watch"
                    );
                }
                Err(e) => return Err(runtime(&e)),
            }
            // Wait for news of this resource (no other can come: it is the
            // only subscription), or the stop signal.
            let notice = loop {
                match updates.next_blocking_until(&cancel) {
                    Some(update) if update.server == server && update.uri == uri => {
                        break update.notice;
                    }
                    Some(_) => continue,
                    None => return Ok(()),
                }
            };
            match notice {
                WatchNotice::Ended(end) => {
                    return Err(Failure::Runtime(
                        sanitize(&watch_ended(server, uri, &end)).into_owned(),
                    ));
                }
                WatchNotice::Renewed => eprintln!(
                    "{}",
                    sanitize(&format!(
                        "rho: server `{server}` was started again and rho subscribed to `{uri}` anew; reading it again"
                    ))
                ),
                _ => tracing::info!(server, "`{}` changed; reading it again", sanitize(uri)),
            }
        }
    })();
    // Unsubscribed on the way out, whatever ended the watch: the token is
    // likely cancelled by now, so the unsubscribe gets its own short wait.
    if let Err(error) =
        host.unsubscribe_resource(server, uri, CallOptions::new().timeout(UNSUBSCRIBE_WAIT))
    {
        tracing::debug!(server, "unsubscribing on the way out failed: {error}");
    }
    host.shutdown();
    crate::check_stopped()?;
    outcome?;
    Ok(ExitCode::SUCCESS)
}

/// What `--watch` says when its watch ended without it asking: which
/// server, what it no longer watches, what to run, then why (last: the
/// reason may carry the server's last stderr lines).
fn watch_ended(server: &str, uri: &str, end: &WatchEnd) -> String {
    let again = format!("run `rho mcp read --watch {server} {uri}` again");
    match end {
        WatchEnd::ServerEnded { reason } => format!(
            "server `{server}` ended and is not started again, so rho no longer watches `{uri}`; \
             once it runs again (`rho mcp show {server}` shows its state), {again}. How it ended: {reason}"
        ),
        WatchEnd::NotRenewed { reason } => format!(
            "server `{server}` was started again but did not take the subscription to `{uri}`, \
             so rho no longer watches it; {again} to ask once more. It answered: {reason}"
        ),
        other => format!(
            "server `{server}` stopped telling of `{uri}`, so rho no longer watches it; {again}. Why: {other}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_uris_pass_and_take_no_values() {
        assert_eq!(resolve("demo://a", &[]).as_deref(), Ok("demo://a"));
        assert!(resolve("demo://a", &["x=1".into()]).is_err());
    }

    #[test]
    fn templates_are_filled_or_refused_naming_their_variables() {
        let t = "demo://resource/dynamic/text/{resourceId}";
        assert_eq!(
            resolve(t, &["resourceId=7".into()]).as_deref(),
            Ok("demo://resource/dynamic/text/7")
        );
        let refused = resolve(t, &[]).expect_err("unfilled");
        assert!(refused.contains("fill in resourceId"), "{refused}");
        let unknown = resolve(t, &["id=7".into()]).expect_err("unknown");
        assert!(unknown.contains("its variables: resourceId"), "{unknown}");
        let bare = resolve(t, &["7".into()]).expect_err("no =");
        assert!(bare.contains("VAR=VALUE"), "{bare}");
        assert!(resolve("demo://{open", &[]).is_err());
    }

    #[test]
    fn an_ended_watch_names_the_server_the_resource_what_to_run_and_then_why() {
        let said = |end: WatchEnd| watch_ended("w", "watch://counter", &end);
        let ended = said(WatchEnd::ServerEnded {
            reason: "server exited (exit status: 1)\nstderr (last 1 line):\n  boom".into(),
        });
        assert!(
            ended.starts_with(
                "server `w` ended and is not started again, so rho no longer watches `watch://counter`"
            ),
            "{ended}"
        );
        assert!(
            ended.contains("run `rho mcp read --watch w watch://counter` again"),
            "{ended}"
        );
        assert!(ended.ends_with("  boom"), "the reason last: {ended}");
        let refused = said(WatchEnd::NotRenewed {
            reason: "no such resource".into(),
        });
        assert!(
            refused.contains("did not take the subscription"),
            "{refused}"
        );
        assert!(
            refused.ends_with("It answered: no such resource"),
            "{refused}"
        );
        let stream = said(WatchEnd::StreamEnded {
            reason: "closed".into(),
        });
        assert!(stream.contains("no longer watches"), "{stream}");
    }
}
