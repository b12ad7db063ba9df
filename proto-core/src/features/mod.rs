//! What MCP's features mean to rho, one module each, as pure models.
//!
//! A feature module turns a server's words into what a person or the
//! model sees, and a person's answer back into the server's shape:
//! [`content`] for `tools/call` results, [`elicitation`] for questions a
//! server asks a person, [`sampling`] for a server's requests of rho's
//! model, [`mrtr`] for the 2026 era's multi round-trip requests, which
//! carry those same questions inside a result, and [`subscriptions`] for
//! the 2026 era's `subscriptions/listen` stream, [`tasks`] for a call
//! whose answer comes later (both eras' tasks); [`catalog`] for the
//! prompts, resources and templates a server lists, [`prompts`] for
//! prompt commands and their turns, [`resources`] for `@` matching and
//! reads (with [`uri_template`] for RFC 6570 templates), [`completions`]
//! for argument suggestions, and [`limit`] for the `max_output_bytes` cap
//! they share with tool output; [`skills`] for the skills extension
//! (SEP-2640): skill entries, and verifying a skill's files before it is
//! loaded; [`apps`] for what MCP Apps (SEP-1865) says about a tool: its
//! view and whether the model may be given it. They hold no session state; the session routes messages to
//! them and carries their answers back.

pub mod apps;
pub mod catalog;
pub mod completions;
pub mod content;
pub mod elicitation;
pub mod limit;
pub mod mrtr;
pub mod prompts;
pub mod resource_subscriptions;
pub mod resources;
pub mod sampling;
pub mod skills;
pub mod subscriptions;
pub mod tasks;
pub mod uri_template;

use serde::Serialize;

use crate::wire::protocol::ServerCapabilities;

/// A request a host sends a ready server through
/// [`crate::session::Session::request`]: each carries the typed params of
/// its method, serialized as they are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum FeatureRequest {
    /// `prompts/get`.
    GetPrompt(prompts::GetPromptParams),
    /// `resources/read`.
    ReadResource(resources::ReadResourceParams),
    /// `completion/complete`.
    Complete(completions::CompleteParams),
    /// `skills/list` (the skills extension, SEP-2640): one page of a
    /// server's skills ([`skills::SkillListing`] reads them all).
    ListSkills(skills::ListSkillsParams),
    /// `skills/get` (the skills extension): one skill's entry by URI.
    GetSkill(skills::GetSkillParams),
    /// Subscribe to one resource's changes (`resources.subscribe`): in the
    /// 2025 era `resources/subscribe`; in the 2026 era the session carries
    /// the URI on a `subscriptions/listen` request instead (see
    /// [`resource_subscriptions`]). Answered with an empty object once the
    /// server agreed.
    SubscribeResource(resource_subscriptions::SubscribeParams),
    /// Unsubscribe from one resource (`resources/unsubscribe` in the 2025
    /// era; a new listen request without it in the 2026 era). Answered
    /// with an empty object; unsubscribing from a resource not subscribed
    /// to succeeds at once.
    UnsubscribeResource(resource_subscriptions::SubscribeParams),
}

impl FeatureRequest {
    /// The JSON-RPC method.
    pub fn method(&self) -> &'static str {
        match self {
            FeatureRequest::GetPrompt(_) => "prompts/get",
            FeatureRequest::ReadResource(_) => "resources/read",
            FeatureRequest::Complete(_) => "completion/complete",
            FeatureRequest::ListSkills(_) => "skills/list",
            FeatureRequest::GetSkill(_) => "skills/get",
            FeatureRequest::SubscribeResource(_) => "resources/subscribe",
            FeatureRequest::UnsubscribeResource(_) => "resources/unsubscribe",
        }
    }

    /// The request `method` with `params` names, as a transcript holds
    /// it; `None` for another method or params that do not fit.
    pub fn from_wire(method: &str, params: &serde_json::Value) -> Option<Self> {
        let params = params.clone();
        Some(match method {
            "prompts/get" => FeatureRequest::GetPrompt(serde_json::from_value(params).ok()?),
            "resources/read" => FeatureRequest::ReadResource(serde_json::from_value(params).ok()?),
            "completion/complete" => FeatureRequest::Complete(serde_json::from_value(params).ok()?),
            "skills/list" => FeatureRequest::ListSkills(serde_json::from_value(params).ok()?),
            "skills/get" => FeatureRequest::GetSkill(serde_json::from_value(params).ok()?),
            "resources/subscribe" => {
                FeatureRequest::SubscribeResource(serde_json::from_value(params).ok()?)
            }
            "resources/unsubscribe" => {
                FeatureRequest::UnsubscribeResource(serde_json::from_value(params).ok()?)
            }
            _ => return None,
        })
    }

    /// The server capability it needs, as the protocol names it (an
    /// extension by its identifier).
    pub fn capability(&self) -> &'static str {
        match self {
            FeatureRequest::GetPrompt(_) => "prompts",
            FeatureRequest::ReadResource(_) => "resources",
            FeatureRequest::Complete(_) => "completions",
            FeatureRequest::ListSkills(_) | FeatureRequest::GetSkill(_) => skills::EXTENSION_ID,
            FeatureRequest::SubscribeResource(_) | FeatureRequest::UnsubscribeResource(_) => {
                "resources.subscribe"
            }
        }
    }

    /// Whether a server that declared `capabilities` takes it.
    pub fn offered_by(&self, capabilities: &ServerCapabilities) -> bool {
        match self {
            FeatureRequest::GetPrompt(_) => capabilities.prompts,
            FeatureRequest::ReadResource(_) => capabilities.resources,
            FeatureRequest::Complete(_) => capabilities.completions,
            FeatureRequest::ListSkills(_) | FeatureRequest::GetSkill(_) => capabilities.skills,
            FeatureRequest::SubscribeResource(_) | FeatureRequest::UnsubscribeResource(_) => {
                capabilities.resources && capabilities.resources_subscribe
            }
        }
    }
}
