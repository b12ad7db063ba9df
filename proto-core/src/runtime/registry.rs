//! The registry of MCP tools rho exports to the model.
//!
//! After discovery, each server's `tools/list` result passes through its
//! configured [`ToolFilter`] and lands here under its exported name (see
//! [`crate::runtime::naming`]), with the description the model will read.
//! A tool whose MCP Apps visibility lacks `"model"` is held back first
//! ([`crate::features::apps`]): it is the server's view's own, and no
//! model is given it. This is
//! the pure part of the runtime's tool table: which tools exist, what they
//! are called, and which server answers each one. Calling them is the
//! session's job.

use serde::Serialize;

use crate::config::ToolFilter;
use crate::features::apps::Visibility;
use crate::runtime::naming::{MAX_MODEL_NAME_LEN, exported_name, model_name};
use crate::wire::protocol::Tool;

/// The behaviour hints shown on a tool's card. Only values the server set
/// explicitly appear; `None` means the server said nothing.
///
/// Hints are claims from a server rho does not control: they are displayed
/// to the model and the user and never relax a permission or skip an
/// approval.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ToolHints {
    /// `readOnlyHint`: the tool claims not to modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `destructiveHint`: the tool may delete or overwrite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// `openWorldHint`: the tool reaches systems beyond the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

/// One MCP tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExportedTool {
    /// The name the model is offered: `mcp__<server>__<tool>`, or its
    /// 64-character short form when that is longer (see
    /// [`crate::runtime::naming::model_name`]).
    pub name: String,
    /// The full `mcp__<server>__<tool>` name when `name` is its short form;
    /// calls by either name route to this tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_name: Option<String>,
    /// The identity of the server that answers calls.
    pub server: String,
    /// The server's own name for the tool, as `tools/call` takes it.
    pub tool: String,
    /// The tool's human-readable title, when the server gave one.
    pub title: Option<String>,
    /// The description the model reads; see [`exported_description`].
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: std::sync::Arc<serde_json::Value>,
    /// JSON Schema every result's `structuredContent` must satisfy.
    pub output_schema: Option<std::sync::Arc<serde_json::Value>>,
    /// Hints for the tool card.
    pub hints: ToolHints,
    /// The tool's `_meta` as the server sent it (its MCP Apps view, read
    /// with [`crate::features::apps::ToolUi::of`], is there).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<std::sync::Arc<serde_json::Value>>,
    /// The server withdrew the tool mid-session (`tools/list_changed`): it
    /// stays registered under its name, and calls fail with a reason.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub withdrawn: bool,
}

/// What [`ToolRegistry::add_server`] left out of one server's tools, by
/// the server's own names, in the order listed. A tool is in one list at
/// most: one held back for its visibility is not also filtered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Held back from the model by their MCP Apps visibility (no
    /// `"model"` in `_meta.ui.visibility`, or one rho could not read).
    pub app_only: Vec<String>,
    /// Kept out by the server's allow/deny.
    pub filtered: Vec<String>,
}

/// Every exported MCP tool, ordered by exported name so that the tool list
/// sent to the model is the same from run to run.
#[derive(Clone, Debug, Default)]
pub struct ToolRegistry {
    /// Sorted by `name`; names are unique.
    tools: Vec<ExportedTool>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the tools `server` listed that the model may be given
    /// (their MCP Apps visibility includes `"model"`, or is unset) and that
    /// `filter` permits (`deny` wins over `allow`). Registering a server
    /// again replaces its earlier tools. A tool name the server listed
    /// twice keeps its first definition and is logged.
    ///
    /// Returns what it left out, so the caller can report it.
    pub fn add_server(&mut self, server: &str, filter: &ToolFilter, tools: &[Tool]) -> LeftOut {
        self.tools.retain(|t| t.server != server);
        let mut seen = std::collections::BTreeSet::new();
        let mut left_out = LeftOut::default();
        for tool in tools {
            if !seen.insert(tool.name.as_str()) {
                tracing::warn!(
                    server,
                    tool = %tool.name,
                    "MCP server listed the same tool twice; keeping the first definition"
                );
                continue;
            }
            if !Visibility::of(tool.meta.as_deref()).for_model() {
                left_out.app_only.push(tool.name.clone());
                continue;
            }
            if !filter.permits(&tool.name) {
                left_out.filtered.push(tool.name.clone());
                continue;
            }
            let full = exported_name(server, &tool.name);
            let name = model_name(&full).into_owned();
            let full_name = (name != full).then_some(full);
            if self.tools.iter().any(|t| t.name == name) {
                // Only two short forms whose 64-bit digests collide get here.
                tracing::warn!(
                    server,
                    tool = %tool.name,
                    "MCP tool's exported name would collide with another tool's; leaving it out"
                );
                continue;
            }
            self.tools.push(ExportedTool {
                name,
                full_name,
                server: server.to_owned(),
                tool: tool.name.clone(),
                title: title(tool).map(str::to_owned),
                description: exported_description(server, tool),
                input_schema: tool.input_schema.clone(),
                output_schema: tool.output_schema.clone(),
                hints: ToolHints {
                    read_only: tool.annotations.read_only,
                    destructive: tool.annotations.destructive,
                    open_world: tool.annotations.open_world,
                },
                meta: tool.meta.clone(),
                withdrawn: false,
            });
        }
        self.tools.sort_by(|a, b| a.name.cmp(&b.name));
        left_out
    }

    /// Every exported tool, ordered by exported name.
    pub fn tools(&self) -> &[ExportedTool] {
        &self.tools
    }

    /// The tool exported as `exported` (the name the model is offered, or
    /// the full name behind a short form), if any.
    pub fn get(&self, exported: &str) -> Option<&ExportedTool> {
        let find = |name: &str| {
            self.tools
                .binary_search_by(|t| t.name.as_str().cmp(name))
                .ok()
                .map(|i| &self.tools[i])
        };
        if exported.len() <= MAX_MODEL_NAME_LEN {
            return find(exported);
        }
        find(&model_name(exported)).filter(|t| t.full_name.as_deref() == Some(exported))
    }

    /// The tools of one server, ordered by exported name.
    pub fn server_tools<'a>(&'a self, server: &'a str) -> impl Iterator<Item = &'a ExportedTool> {
        self.tools.iter().filter(move |t| t.server == server)
    }

    /// How many tools are exported.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is exported.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// The tool's title (or its annotations' title), unless blank.
fn title(tool: &Tool) -> Option<&str> {
    tool.title
        .as_deref()
        .or(tool.annotations.title.as_deref())
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The description the model reads for `tool` of `server`:
///
/// ```text
/// <title>: <description>
///
/// Provided by MCP server `<server>` as its tool `<tool's own name>`.
/// Server hint: ...
/// ```
///
/// The first line is `<title>: <description>` when both exist, else
/// whichever exists, else `(no description)`; blank values count as absent.
/// One `Server hint:` line follows for each of `readOnlyHint`,
/// `destructiveHint` and `openWorldHint` the server set explicitly, in that
/// order. The server identity is there so the model and a person reading a
/// transcript can tell which server a tool belongs to, and the tool's own
/// name so that one exported in hex (a name with `-`) can still be matched
/// to the server's instructions and to what a person types. Hints are claims
/// from a server rho does not control and never relax a permission.
pub fn exported_description(server: &str, tool: &Tool) -> String {
    let description = tool
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let mut out = match (title(tool), description) {
        (Some(title), Some(description)) => format!("{title}: {description}"),
        (Some(title), None) => title.to_owned(),
        (None, Some(description)) => description.to_owned(),
        (None, None) => "(no description)".to_owned(),
    };
    // The server's own name beside its identity: the exported name may
    // be hex (`get-env` is `mcp__everything___rho_6765742d656e76`), and
    // the server's instructions and a person use the server's name.
    out.push_str("\n\nProvided by MCP server `");
    out.push_str(server);
    out.push_str("` as its tool `");
    out.push_str(&tool.name);
    out.push_str("`.");
    let hints = &tool.annotations;
    let lines = [
        hints.read_only.map(|v| {
            if v {
                "read-only (does not modify its environment)."
            } else {
                "may modify its environment."
            }
        }),
        hints.destructive.map(|v| {
            if v {
                "destructive (may delete or overwrite)."
            } else {
                "non-destructive (additive changes only)."
            }
        }),
        hints.open_world.map(|v| {
            if v {
                "open world (reaches external systems)."
            } else {
                "closed world."
            }
        }),
    ];
    for line in lines.into_iter().flatten() {
        out.push_str("\nServer hint: ");
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::protocol::ToolAnnotations;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        Tool {
            name: name.to_owned(),
            title: None,
            description: Some(format!("Does {name}.")),
            input_schema: json!({"type": "object"}).into(),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            meta: None,
            task_support: Default::default(),
        }
    }

    fn with_meta(name: &str, meta: serde_json::Value) -> Tool {
        Tool {
            meta: Some(meta.into()),
            ..tool(name)
        }
    }

    fn names(registry: &ToolRegistry) -> Vec<&str> {
        registry.tools().iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn tools_are_exported_under_encoded_names_in_name_order() {
        let mut r = ToolRegistry::new();
        let filtered = r.add_server(
            "everything",
            &ToolFilter::default(),
            &[tool("echo"), tool("add"), tool("get-env")],
        );
        assert_eq!(filtered, LeftOut::default());
        r.add_server("alpha", &ToolFilter::default(), &[tool("zz")]);
        assert_eq!(
            names(&r),
            [
                "mcp__alpha__zz",
                "mcp__everything___rho_6765742d656e76",
                "mcp__everything__add",
                "mcp__everything__echo",
            ]
        );
        let echo = r.get("mcp__everything__echo").expect("registered");
        assert_eq!(
            (echo.server.as_str(), echo.tool.as_str()),
            ("everything", "echo")
        );
        assert_eq!(r.get("mcp__everything__nope"), None);
        assert_eq!(r.len(), 4);
        assert!(!r.is_empty());
        assert_eq!(r.server_tools("alpha").count(), 1);
        assert_eq!(r.server_tools("everything").count(), 3);
    }

    #[test]
    fn allow_list_keeps_only_named_tools() {
        let mut r = ToolRegistry::new();
        let filter = ToolFilter {
            allow: Some(vec!["echo".to_owned()]),
            deny: vec![],
        };
        let left_out = r.add_server("s", &filter, &[tool("echo"), tool("add"), tool("rm")]);
        assert_eq!(left_out.filtered, ["add", "rm"]);
        assert_eq!(names(&r), ["mcp__s__echo"]);
    }

    #[test]
    fn deny_wins_over_allow() {
        let mut r = ToolRegistry::new();
        let filter = ToolFilter {
            allow: Some(vec!["echo".to_owned(), "rm".to_owned()]),
            deny: vec!["rm".to_owned()],
        };
        let left_out = r.add_server("s", &filter, &[tool("echo"), tool("rm")]);
        assert_eq!(left_out.filtered, ["rm"]);
        assert_eq!(names(&r), ["mcp__s__echo"]);
    }

    #[test]
    fn duplicate_tool_keeps_first_definition() {
        let mut r = ToolRegistry::new();
        let mut second = tool("echo");
        second.description = Some("Second.".to_owned());
        let left_out = r.add_server("s", &ToolFilter::default(), &[tool("echo"), second]);
        assert_eq!(left_out, LeftOut::default());
        assert_eq!(r.len(), 1);
        let echo = r.get("mcp__s__echo").expect("registered");
        assert!(echo.description.starts_with("Does echo."));
    }

    #[test]
    fn long_names_are_offered_short_and_route_by_either_form() {
        let mut registry = ToolRegistry::new();
        let long_tool = "summarize-the-entire-repository-history";
        registry.add_server(
            "code-search",
            &ToolFilter::default(),
            &[tool(long_tool), tool("echo")],
        );
        let full = exported_name("code-search", long_tool);
        assert!(full.len() > MAX_MODEL_NAME_LEN);
        let long = registry
            .tools()
            .iter()
            .find(|t| t.tool == long_tool)
            .expect("registered");
        assert_eq!(long.name.len(), MAX_MODEL_NAME_LEN);
        assert_eq!(long.full_name.as_deref(), Some(full.as_str()));
        assert_eq!(
            registry.get(&long.name).map(|t| t.tool.as_str()),
            Some(long_tool)
        );
        assert_eq!(
            registry.get(&full).map(|t| t.tool.as_str()),
            Some(long_tool)
        );
        // A long name that is not registered finds nothing, even though its
        // short form is computed on the way.
        let other = exported_name("code-search", "summarize-the-entire-repository-historz");
        assert!(registry.get(&other).is_none());
        // Short names carry no second spelling.
        let echo = registry
            .get("mcp___rho_636f64652d736561726368__echo")
            .expect("echo");
        assert_eq!(echo.full_name, None);
    }

    #[test]
    fn tools_whose_visibility_lacks_model_are_held_back_and_reported() {
        // The shapes @modelcontextprotocol/server-pdf lists, and the edges.
        let view = json!({
            "ui": {"resourceUri": "ui://pdf-viewer/mcp-app.html"},
            "ui/resourceUri": "ui://pdf-viewer/mcp-app.html",
        });
        let tools = [
            tool("list_pdfs"),
            with_meta("display_pdf", view.clone()),
            with_meta("save_pdf", json!({"ui": {"visibility": ["app"]}})),
            with_meta("both", json!({"ui": {"visibility": ["app", "model"]}})),
            with_meta("model", json!({"ui": {"visibility": ["model"]}})),
            with_meta("nobody", json!({"ui": {"visibility": []}})),
            with_meta("garbled", json!({"ui": {"visibility": "model"}})),
            with_meta("unset", json!({"ui": {"visibility": null}})),
        ];
        let mut r = ToolRegistry::new();
        let filter = ToolFilter {
            allow: None,
            deny: vec!["save_pdf".to_owned(), "model".to_owned()],
        };
        let left_out = r.add_server("pdf", &filter, &tools);
        assert_eq!(
            names(&r),
            [
                "mcp__pdf__both",
                "mcp__pdf__display_pdf",
                "mcp__pdf__list_pdfs",
                "mcp__pdf__unset",
            ]
        );
        // Held back before allow/deny is asked: `save_pdf` is app-only,
        // not filtered; `model` is filtered.
        assert_eq!(left_out.app_only, ["save_pdf", "nobody", "garbled"]);
        assert_eq!(left_out.filtered, ["model"]);
        assert_eq!(r.get("mcp__pdf__save_pdf"), None);
        // An exported tool keeps its `_meta` as sent.
        let display = r.get("mcp__pdf__display_pdf").expect("exported");
        assert_eq!(display.meta.as_deref(), Some(&view));
        assert_eq!(r.get("mcp__pdf__list_pdfs").expect("exported").meta, None);
    }

    #[test]
    fn registering_a_server_again_replaces_its_tools() {
        let mut r = ToolRegistry::new();
        r.add_server("s", &ToolFilter::default(), &[tool("a"), tool("b")]);
        r.add_server("t", &ToolFilter::default(), &[tool("a")]);
        r.add_server("s", &ToolFilter::default(), &[tool("c")]);
        assert_eq!(names(&r), ["mcp__s__c", "mcp__t__a"]);
    }

    #[test]
    fn exported_tool_carries_schema_title_and_explicit_hints() {
        let mut t = tool("rm");
        t.title = Some("Remove".to_owned());
        t.output_schema = Some(json!({"type": "object"}).into());
        t.annotations.destructive = Some(true);
        t.annotations.idempotent = Some(true);
        let mut r = ToolRegistry::new();
        r.add_server("fs", &ToolFilter::default(), &[t]);
        let rm = r.get("mcp__fs__rm").expect("registered");
        assert_eq!(rm.title.as_deref(), Some("Remove"));
        assert_eq!(
            rm.output_schema.as_deref(),
            Some(&json!({"type": "object"}))
        );
        assert_eq!(
            rm.hints,
            ToolHints {
                read_only: None,
                destructive: Some(true),
                open_world: None,
            }
        );
    }

    #[test]
    fn description_with_title_and_all_hints() {
        let mut t = tool("rm");
        t.title = Some("Remove file".to_owned());
        t.description = Some("Deletes a file.".to_owned());
        t.annotations = ToolAnnotations {
            read_only: Some(false),
            destructive: Some(true),
            idempotent: Some(true),
            open_world: Some(false),
            title: None,
        };
        assert_eq!(
            exported_description("fs", &t),
            "Remove file: Deletes a file.\n\
             \n\
             Provided by MCP server `fs` as its tool `rm`.\n\
             Server hint: may modify its environment.\n\
             Server hint: destructive (may delete or overwrite).\n\
             Server hint: closed world."
        );
    }

    #[test]
    fn description_hint_lines_for_the_other_values() {
        let mut t = tool("ls");
        t.annotations = ToolAnnotations {
            read_only: Some(true),
            destructive: Some(false),
            open_world: Some(true),
            ..ToolAnnotations::default()
        };
        assert_eq!(
            exported_description("fs", &t),
            "Does ls.\n\
             \n\
             Provided by MCP server `fs` as its tool `ls`.\n\
             Server hint: read-only (does not modify its environment).\n\
             Server hint: non-destructive (additive changes only).\n\
             Server hint: open world (reaches external systems)."
        );
    }

    #[test]
    fn a_tool_exported_in_hex_is_described_with_its_own_name() {
        let t = tool("get-env");
        let described = exported_description("everything", &t);
        assert!(
            described.ends_with("Provided by MCP server `everything` as its tool `get-env`."),
            "{described}"
        );
    }

    #[test]
    fn description_falls_back_to_title_then_placeholder() {
        let mut t = tool("x");
        t.description = None;
        t.annotations.title = Some("Annotated".to_owned());
        assert_eq!(
            exported_description("s", &t),
            "Annotated\n\nProvided by MCP server `s` as its tool `x`."
        );
        t.annotations.title = None;
        t.description = Some("  ".to_owned());
        assert_eq!(
            exported_description("s", &t),
            "(no description)\n\nProvided by MCP server `s` as its tool `x`."
        );
    }
}
