//! What MCP's features mean to rho, one module each, as pure models.
//!
//! A feature module turns a server's words into what a person or the
//! model sees, and a person's answer back into the server's shape:
//! [`content`] for `tools/call` results, [`elicitation`] for questions a
//! server asks a person, [`sampling`] for a server's requests of rho's
//! model, [`mrtr`] for the 2026 era's multi round-trip requests, which
//! carry those same questions inside a result, and [`subscriptions`] for
//! the 2026 era's `subscriptions/listen` stream; [`catalog`] for the
//! prompts, resources and templates a server lists, [`prompts`] for
//! prompt commands and their turns, [`resources`] for `@` matching and
//! reads (with [`uri_template`] for RFC 6570 templates), [`completions`]
//! for argument suggestions, and [`limit`] for the `max_output_bytes` cap
//! they share with tool output. They hold no session state; the session
//! routes messages to them and carries their answers back.

pub mod catalog;
pub mod completions;
pub mod content;
pub mod elicitation;
pub mod limit;
pub mod mrtr;
pub mod prompts;
pub mod resources;
pub mod sampling;
pub mod subscriptions;
pub mod uri_template;
