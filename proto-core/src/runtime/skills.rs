//! Skills (SEP-2640) through an executor: what listing or loading a skill
//! ends with when it does not end with the skill.
//!
//! Both executors offer the same three steps over their `request`, each
//! a thin loop around the pure model in [`crate::features::skills`]:
//! `list_skills` (every `skills/list` page, no file read), `load_skill`
//! (read the entry's `SKILL.md`, verify it, return the loaded skill) and
//! `read_skill_file` (a file the loaded skill's entry lists, verified).

use crate::features::skills::SkillCheck;
use crate::runtime::ToolCallError;
use crate::wire::protocol::ShapeError;

/// Why listing or loading a skill, or reading one of its files, did not
/// produce it. Each names the server, and a refusal the skill and the
/// check that failed; refused content is never handed over.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The request failed, or never went out (an unknown server, one
    /// that is not ready or does not offer the extension).
    #[error(transparent)]
    Request(#[from] ToolCallError),
    /// The server's `skills/list` or `skills/get` result has the wrong
    /// shape.
    #[error("server `{server}` sent a malformed {method} result: {reason}")]
    Malformed {
        /// The server identity.
        server: String,
        /// `skills/list` or `skills/get`.
        method: &'static str,
        /// What is wrong with it.
        reason: ShapeError,
    },
    /// The skill, or a file of it, failed verification or is one rho
    /// declines: its content was not used.
    #[error("server `{server}`: skill `{skill}` refused: {check}")]
    Refused {
        /// The server identity.
        server: String,
        /// The skill's name (its URI is in `check` where it matters).
        skill: String,
        /// Which check failed (boxed: it carries two digests).
        check: Box<SkillCheck>,
    },
}

impl SkillError {
    /// `check` failed for `skill` on `server`: its content is not used.
    pub fn refused(server: &str, skill: &str, check: SkillCheck) -> Self {
        Self::Refused {
            server: server.to_owned(),
            skill: skill.to_owned(),
            check: Box::new(check),
        }
    }

    /// A `skills/list` page from `server` that cannot be read.
    pub fn malformed_listing(server: &str, reason: ShapeError) -> Self {
        Self::Malformed {
            server: server.to_owned(),
            method: "skills/list",
            reason,
        }
    }
}
