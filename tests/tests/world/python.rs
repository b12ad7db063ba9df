//! What the official Python client lists from a row's server
//! (`tests/world/python/list.py`, on the `mcp` package the PyPI servers
//! pin): the reference rho's lists are compared with.

use std::process::Command;

use serde_json::Value;

use crate::fixtures::{PROCESS_BOUND, run_bounded};
use crate::rows::{Ctx, Launch, Row, pypi, world_dir};

/// The Python client's lists, names sorted.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lists {
    pub(crate) tools: Vec<String>,
    /// The tools a host keeps from the model (MCP Apps, app-only).
    pub(crate) app_only: Vec<String>,
    /// `None`: the capability is not declared.
    pub(crate) prompts: Option<Vec<String>>,
    pub(crate) resources: Option<Vec<String>>,
}

impl Lists {
    /// The tools a model is given.
    pub(crate) fn for_model(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|t| !self.app_only.contains(t))
            .cloned()
            .collect()
    }
}

/// Runs the Python client against the row's server, launched as rho
/// launches it.
pub(crate) fn python_lists(row: &Row, ctx: &Ctx) -> Result<Lists, String> {
    let (launch, _) = (row.setup)(ctx);
    let mut command = Command::new(pypi("python"));
    command
        .arg(world_dir().join("python/list.py"))
        .current_dir(ctx.dir);
    match &launch {
        Launch::Stdio {
            command: program,
            args,
            env,
        } => {
            command
                .arg("stdio")
                .arg(program)
                .args(args)
                .envs(env.iter().map(|(k, v)| (k, v)));
        }
        Launch::Http { url } => {
            command.arg("http").arg(url);
        }
    }
    let output = run_bounded(command, b"", PROCESS_BOUND)?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let parsed: Value = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .ok_or_else(|| {
            format!(
                "the Python client listed nothing ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
        })?;
    let names = |v: &Value| -> Option<Vec<String>> {
        v.as_array().map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
    };
    Ok(Lists {
        tools: names(&parsed["tools"]).unwrap_or_default(),
        app_only: names(&parsed["app_only"]).unwrap_or_default(),
        prompts: names(&parsed["prompts"]),
        resources: names(&parsed["resources"]),
    })
}
