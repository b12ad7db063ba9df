//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865,
//! `modelcontextprotocol/ext-apps` `specification/2026-01-26/apps.mdx`):
//! what a tool's `_meta.ui` tells a host that renders no view.
//!
//! A tool names the view that renders its results (`_meta.ui.resourceUri`,
//! a `ui://` resource; the flat `_meta["ui/resourceUri"]` is its
//! deprecated spelling) and who may call it (`_meta.ui.visibility`, an
//! array of `"model"` and `"app"`; absent means both). A host must not give
//! the model a tool whose visibility lacks `"model"`: such a tool is the
//! view's own (`save_pdf` of `@modelcontextprotocol/server-pdf` writes
//! files when the view asks). Such a tool is listed for a person and
//! called only by its server's view, which rho serves to a browser
//! ([`view`] reads the view and builds its CSP, [`bridge`] speaks the
//! view's dialogue); the host crate runs the pages.
//!
//! Reading is lenient about what does not matter and conservative about
//! what does: `_meta.ui` that is not an object declares nothing, but a
//! `visibility` that is present and not an array of strings is
//! [`Visibility::Malformed`], and a malformed declaration keeps the tool
//! from the model (the server meant to restrict something; rho cannot
//! tell what).

use std::fmt;

use serde_json::{Value, json};

pub mod bridge;
pub mod view;

pub use bridge::{ViewAsk, ViewBridge, ViewSetup};
pub use view::{MIME_TYPE, ViewCsp, ViewError, ViewResource};

/// The extension's identifier.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The extension's settings in a client's capabilities: the one MIME type
/// rho renders.
pub fn capability() -> Value {
    json!({ "mimeTypes": [MIME_TYPE] })
}

/// Who may call a tool, as its `_meta.ui.visibility` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// No visibility declared (no `_meta.ui.visibility`, or `null`): the
    /// model and the app, the specification's default.
    Unset,
    /// An array of strings, as sent (entries other than `"model"` and
    /// `"app"` kept, and ignored).
    Listed(Vec<String>),
    /// Present but not an array of strings: held back from the model.
    Malformed,
}

impl Visibility {
    /// Reads `_meta.ui.visibility` from a tool's `_meta` (`None` when the
    /// tool has none).
    pub fn of(meta: Option<&Value>) -> Self {
        let declared = meta
            .and_then(|m| m.get("ui"))
            .filter(|ui| ui.is_object())
            .and_then(|ui| ui.get("visibility"));
        match declared {
            None | Some(Value::Null) => Self::Unset,
            Some(Value::Array(entries)) => entries
                .iter()
                .map(|e| e.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map_or(Self::Malformed, Self::Listed),
            Some(_) => Self::Malformed,
        }
    }

    /// Whether the model may be given the tool: unset, or listed with
    /// `"model"`.
    pub fn for_model(&self) -> bool {
        match self {
            Self::Unset => true,
            Self::Listed(entries) => entries.iter().any(|e| e == "model"),
            Self::Malformed => false,
        }
    }

    /// Whether the server's own view may call the tool: unset, or listed
    /// with `"app"`.
    pub fn for_app(&self) -> bool {
        match self {
            Self::Unset => true,
            Self::Listed(entries) => entries.iter().any(|e| e == "app"),
            Self::Malformed => false,
        }
    }

    /// Why the tool is held back from the model, for a person; `None` for
    /// a tool the model may be given.
    pub fn held_back_reason(&self) -> Option<String> {
        match self {
            _ if self.for_model() => None,
            Self::Listed(entries) => {
                let listed: Vec<String> = entries.iter().map(|e| format!("{e:?}")).collect();
                Some(format!(
                    "its `_meta.ui.visibility` is [{}], without \"model\": only the server's MCP App view may call it",
                    listed.join(", ")
                ))
            }
            _ => Some(
                "its `_meta.ui.visibility` is not an array of \"model\"/\"app\" strings, so rho keeps it from the model"
                    .into(),
            ),
        }
    }
}

/// `model, app` for a listed visibility (`none` for an empty list), `model,
/// app (unset)` for the default and `malformed` for one rho could not read.
impl fmt::Display for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unset => f.write_str("model, app (unset)"),
            Self::Listed(entries) if entries.is_empty() => f.write_str("none"),
            Self::Listed(entries) => f.write_str(&entries.join(", ")),
            Self::Malformed => f.write_str("malformed"),
        }
    }
}

/// The MCP Apps part of a tool's `_meta`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolUi {
    /// `_meta.ui.resourceUri`: the view that renders the tool's results.
    pub resource_uri: Option<String>,
    /// `_meta["ui/resourceUri"]`, the deprecated flat spelling, when the
    /// server sent it.
    pub deprecated_resource_uri: Option<String>,
    /// `_meta.ui.visibility`, read; `None` when unset.
    pub visibility: Option<Visibility>,
}

impl ToolUi {
    /// Reads a tool's `_meta` (`None` when it has none).
    pub fn of(meta: Option<&Value>) -> Self {
        let string = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let ui = meta.and_then(|m| m.get("ui")).filter(|ui| ui.is_object());
        let visibility = Visibility::of(meta);
        Self {
            resource_uri: string(ui.and_then(|ui| ui.get("resourceUri"))),
            deprecated_resource_uri: string(meta.and_then(|m| m.get("ui/resourceUri"))),
            visibility: (visibility != Visibility::Unset).then_some(visibility),
        }
    }

    /// The view's URI: `ui.resourceUri`, else the deprecated flat key.
    pub fn view(&self) -> Option<&str> {
        self.resource_uri
            .as_deref()
            .or(self.deprecated_resource_uri.as_deref())
    }

    /// Whether the tool says anything MCP Apps defines.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn visibility(meta: Value) -> Visibility {
        Visibility::of(Some(&meta))
    }

    #[test]
    fn a_tool_without_visibility_is_for_the_model_and_the_app() {
        assert_eq!(Visibility::of(None), Visibility::Unset);
        assert_eq!(visibility(json!({})), Visibility::Unset);
        assert_eq!(visibility(json!({"ui": {}})), Visibility::Unset);
        assert_eq!(
            visibility(json!({"ui": {"resourceUri": "ui://v"}})),
            Visibility::Unset
        );
        assert_eq!(
            visibility(json!({"ui": {"visibility": null}})),
            Visibility::Unset
        );
        assert!(Visibility::Unset.for_model());
    }

    #[test]
    fn only_a_visibility_listing_model_gives_the_tool_to_the_model() {
        for (listed, for_model) in [
            (json!(["model"]), true),
            (json!(["app", "model"]), true),
            (json!(["model", "app"]), true),
            (json!(["model", "future"]), true),
            (json!(["app"]), false),
            (json!([]), false),
            (json!(["Model"]), false),
            (json!(["app", "future"]), false),
        ] {
            let v = visibility(json!({"ui": {"visibility": listed}}));
            assert!(matches!(v, Visibility::Listed(_)), "{listed}: {v:?}");
            assert_eq!(v.for_model(), for_model, "{listed}");
        }
    }

    #[test]
    fn a_malformed_visibility_keeps_the_tool_from_the_model() {
        for malformed in [
            json!("model"),
            json!("app"),
            json!({"model": true}),
            json!(true),
            json!(1),
            json!(["model", 1]),
            json!(["model", null]),
            json!([["model"]]),
        ] {
            let v = visibility(json!({"ui": {"visibility": malformed}}));
            assert_eq!(v, Visibility::Malformed, "{malformed}");
            assert!(!v.for_model(), "{malformed}");
            assert!(v.held_back_reason().is_some(), "{malformed}");
        }
    }

    #[test]
    fn ui_that_is_not_an_object_declares_nothing() {
        for ui in [json!("compact"), json!(["app"]), json!(null), json!(3)] {
            assert_eq!(visibility(json!({ "ui": ui })), Visibility::Unset, "{ui}");
        }
        // The flat key is a resource URI, never a visibility.
        assert_eq!(
            visibility(json!({"ui/visibility": ["app"]})),
            Visibility::Unset
        );
    }

    #[test]
    fn the_reason_quotes_what_the_server_listed() {
        let v = visibility(json!({"ui": {"visibility": ["app"]}}));
        assert_eq!(
            v.held_back_reason().as_deref(),
            Some(
                "its `_meta.ui.visibility` is [\"app\"], without \"model\": only the server's MCP App view may call it"
            )
        );
        assert_eq!(Visibility::Unset.held_back_reason(), None);
        assert_eq!(
            Visibility::Listed(vec!["model".into()]).held_back_reason(),
            None
        );
        assert_eq!(v.to_string(), "app");
        assert_eq!(Visibility::Listed(vec![]).to_string(), "none");
    }

    #[test]
    fn the_view_is_the_nested_uri_else_the_deprecated_flat_one() {
        // As @modelcontextprotocol/server-pdf sends `display_pdf`.
        let both = json!({
            "ui": {"resourceUri": "ui://pdf-viewer/mcp-app.html"},
            "ui/resourceUri": "ui://pdf-viewer/mcp-app.html",
        });
        let ui = ToolUi::of(Some(&both));
        assert_eq!(ui.view(), Some("ui://pdf-viewer/mcp-app.html"));
        assert_eq!(ui.visibility, None);
        let flat = ToolUi::of(Some(&json!({"ui/resourceUri": "ui://old"})));
        assert_eq!(flat.resource_uri, None);
        assert_eq!(flat.view(), Some("ui://old"));
        let nested = ToolUi::of(Some(
            &json!({"ui": {"resourceUri": "ui://new"}, "ui/resourceUri": "ui://old"}),
        ));
        assert_eq!(nested.view(), Some("ui://new"));
        assert!(ToolUi::of(None).is_empty());
        assert!(ToolUi::of(Some(&json!({"other": 1}))).is_empty());
        let app_only = ToolUi::of(Some(&json!({"ui": {"visibility": ["app"]}})));
        assert_eq!(
            app_only.visibility,
            Some(Visibility::Listed(vec!["app".into()]))
        );
        assert!(!app_only.is_empty());
    }
}
