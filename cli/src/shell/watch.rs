//! What changed on the servers while the shell ran, as lines for the
//! person: tools a server added (which join only after a restart, as the
//! reference says), tools it revised (the shell uses the new definition at
//! once), tools it withdrew, a keep-alive ping that failed, a server whose
//! process died and is being restarted (and is back), and a server that
//! failed. Pure: the shell hands it two snapshots of [`ServerView`]s
//! (and of the current tools) and prints what it returns.

use rho_proto_core::runtime::ServerView;
use rho_proto_core::runtime::registry::ExportedTool;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::text::terminal::sanitize_line;

/// The lines that tell what changed from `before` to `after`.
pub(crate) fn changes(before: &[ServerView], after: &[ServerView]) -> Vec<String> {
    let mut lines = Vec::new();
    for now in after {
        let Some(was) = before.iter().find(|v| v.id == now.id) else {
            continue;
        };
        let id = sanitize_line(&now.id);
        match (&was.status, &now.status) {
            (ServerStatus::Ready(old), ServerStatus::Ready(new)) => {
                // Restarted between two looks: its process died and is back.
                if new.restarts > old.restarts {
                    lines.push(format!(
                        "server `{id}` {}; its tools are kept",
                        crate::output::restarted(new.restarts)
                    ));
                }
                for tool in new
                    .added_tools
                    .iter()
                    .filter(|t| !old.added_tools.contains(t))
                {
                    lines.push(format!(
                        "server `{id}` added tool `{}`: `/reconnect {id}` to use it",
                        sanitize_line(tool)
                    ));
                }
                for tool in new
                    .withdrawn_tools
                    .iter()
                    .filter(|t| !old.withdrawn_tools.contains(t))
                {
                    lines.push(format!(
                        "server `{id}` withdrew tool `{}`",
                        sanitize_line(tool)
                    ));
                }
                if new.last_ping_error != old.last_ping_error {
                    match &new.last_ping_error {
                        Some(why) => lines.push(format!(
                            "server `{id}` did not answer a ping: {}",
                            sanitize_line(why)
                        )),
                        None => lines.push(format!("server `{id}` answers pings again")),
                    }
                }
            }
            (
                ServerStatus::Ready(_) | ServerStatus::Restarting { .. },
                ServerStatus::Failed { error, .. },
            ) => {
                lines.push(format!(
                    "server `{id}` failed: {} (`/reconnect {id}` starts it again)",
                    sanitize_line(error)
                ));
            }
            (
                ServerStatus::Ready(_),
                ServerStatus::Restarting {
                    error,
                    attempt,
                    attempts,
                },
            ) => lines.push(format!(
                "server `{id}` ended: {}; restarting it (attempt {attempt} of {attempts})",
                sanitize_line(error)
            )),
            (ServerStatus::Restarting { .. }, ServerStatus::Ready(new)) => lines.push(format!(
                "server `{id}` {}; its tools are kept",
                crate::output::restarted(new.restarts)
            )),
            _ => {}
        }
    }
    lines
}

/// The lines for tools whose definition (title, description, schemas or
/// hints) changed from `before` to `after`; a withdrawn tool is said by
/// [`changes`], not here.
pub(crate) fn revisions(before: &[ExportedTool], after: &[ExportedTool]) -> Vec<String> {
    let mut lines = Vec::new();
    for now in after.iter().filter(|t| !t.withdrawn) {
        let Some(was) = before.iter().find(|t| t.name == now.name) else {
            continue;
        };
        let same = was.title == now.title
            && was.description == now.description
            && was.input_schema == now.input_schema
            && was.output_schema == now.output_schema
            && was.hints == now.hints;
        if !same && !was.withdrawn {
            lines.push(format!(
                "server `{}` revised tool `{}`: its new definition is in use",
                sanitize_line(&now.server),
                sanitize_line(&now.tool)
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::runtime::status::{FailureKind, ReadyReport};
    use rho_proto_core::wire::protocol::Implementation;

    fn ready(added: &[&str], withdrawn: &[&str], ping: Option<&str>) -> ServerView {
        let report = ReadyReport {
            protocol_version: "2025-11-25".into(),
            server_info: Implementation {
                name: "x".into(),
                version: "1".into(),
                title: None,
            },
            instructions: None,
            elapsed_ms: 1,
            pid: None,
            restarts: 0,
            filtered_tools: Vec::new(),
            app_only_tools: Vec::new(),
            last_ping_error: ping.map(str::to_owned),
            added_tools: added.iter().map(|s| (*s).to_owned()).collect(),
            withdrawn_tools: withdrawn.iter().map(|s| (*s).to_owned()).collect(),
            capabilities: Default::default(),
            catalog: Default::default(),
        };
        ServerView {
            id: "x".into(),
            config: None,
            status: ServerStatus::Ready(report),
            tools: Vec::new(),
        }
    }

    #[test]
    fn added_and_withdrawn_tools_are_said_once() {
        let before = [ready(&[], &[], None)];
        let after = [ready(&["extra"], &["old"], None)];
        assert_eq!(
            changes(&before, &after),
            [
                "server `x` added tool `extra`: `/reconnect x` to use it",
                "server `x` withdrew tool `old`"
            ]
        );
        assert!(changes(&after, &after).is_empty());
    }

    #[test]
    fn a_failed_ping_and_its_recovery_are_said() {
        let fine = [ready(&[], &[], None)];
        let failing = [ready(&[], &[], Some("timed out after 10 s"))];
        assert_eq!(
            changes(&fine, &failing),
            ["server `x` did not answer a ping: timed out after 10 s"]
        );
        assert_eq!(changes(&failing, &fine), ["server `x` answers pings again"]);
    }

    #[test]
    fn a_server_that_fails_is_said_and_its_text_is_sanitized() {
        let before = [ready(&[], &[], None)];
        let after = [ServerView {
            id: "x".into(),
            config: None,
            status: ServerStatus::Failed {
                error: "gone\x1b[2J".into(),
                kind: FailureKind::Ended,
            },
            tools: Vec::new(),
        }];
        let lines = changes(&before, &after);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("server `x` failed: gone"));
        assert!(!lines[0].contains('\x1b'));
    }

    #[test]
    fn a_restart_is_said_when_it_begins_and_when_the_server_is_back() {
        let up = [ready(&[], &[], None)];
        let restarting = [ServerView {
            id: "x".into(),
            config: None,
            status: ServerStatus::Restarting {
                error: "server exited (signal: 9 (SIGKILL))".into(),
                attempt: 1,
                attempts: 3,
            },
            tools: Vec::new(),
        }];
        let mut back = ready(&[], &[], None);
        if let ServerStatus::Ready(report) = &mut back.status {
            report.restarts = 1;
        }
        let back = [back];
        assert_eq!(
            changes(&up, &restarting),
            [
                "server `x` ended: server exited (signal: 9 (SIGKILL)); restarting it (attempt 1 of 3)"
            ]
        );
        let said = ["server `x` restarted once after its process died; its tools are kept"];
        assert_eq!(changes(&restarting, &back), said);
        assert_eq!(
            changes(&up, &back),
            said,
            "a restart between two looks is said too"
        );
        assert!(changes(&back, &back).is_empty());
    }

    fn tool(name: &str, description: &str, withdrawn: bool) -> ExportedTool {
        ExportedTool {
            name: format!("mcp__x__{name}"),
            full_name: None,
            server: "x".into(),
            tool: name.into(),
            title: None,
            description: description.into(),
            input_schema: serde_json::json!({"type": "object"}).into(),
            output_schema: None,
            hints: Default::default(),
            meta: None,
            withdrawn,
        }
    }

    #[test]
    fn a_revised_tool_is_said_once_and_a_withdrawn_one_is_left_to_changes() {
        let before = [tool("echo", "Echo", false), tool("gone", "Gone", false)];
        let after = [
            tool("echo", "Echo, revised", false),
            tool("gone", "Gone", true),
        ];
        assert_eq!(
            revisions(&before, &after),
            ["server `x` revised tool `echo`: its new definition is in use"]
        );
        assert!(revisions(&after, &after).is_empty());
        let mut schema = tool("echo", "Echo, revised", false);
        schema.input_schema = serde_json::json!({"type": "object", "required": ["m"]}).into();
        assert_eq!(
            revisions(&after, &[schema]).len(),
            1,
            "a schema change is a revision"
        );
    }
}
