//! What a person can do about a failure, as data: the core says which
//! remedy applies ([`Remedy`]), and the host says it in its own words
//! ([`RemedyWords`]), since only the host knows its commands. The `rho`
//! CLI installs words that name its `rho mcp ...` commands; a host that
//! installs none gets [`PlainWords`], which name no command.
//!
//! Implementation note: the remedy is worded where the failure is written
//! (an error's `Display`, a refused request's reason), which holds no
//! reference to the host, so the words are installed once per process
//! ([`install_words`]), the way a logger is. They are presentation only:
//! nothing in the core branches on them.

use std::fmt;
use std::sync::OnceLock;

/// A remedy for a failure, naming what it applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Remedy<'a> {
    /// A browser login to the server gets it a token.
    LogIn {
        /// The server identity.
        server: &'a str,
    },
    /// The server wants more scope: a login that asks for it, made where a
    /// person can approve it.
    LogInForScope {
        /// The server identity.
        server: &'a str,
    },
    /// A login made anew (a stored token's key is gone); the server is
    /// not known where this is said.
    LogInAgain,
    /// The server requires authorization and its entry does not opt in to
    /// OAuth: give it an `oauth` table and log in, or set a header.
    OptInToOAuth {
        /// The server identity.
        server: &'a str,
    },
    /// The configured servers are listed by the host.
    ListServers,
    /// The server is disabled in the config.
    Enable {
        /// The server identity.
        server: &'a str,
    },
}

impl fmt::Display for Remedy<'_> {
    /// The remedy in the installed words ([`install_words`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        words().write(self, f)
    }
}

/// How a host says each [`Remedy`]: a clause that follows a semicolon or
/// a colon in a sentence that already says what failed.
pub trait RemedyWords: Send + Sync {
    /// Writes `remedy` to `f`.
    fn write(&self, remedy: &Remedy<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

/// Words that name no host's command: the default.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlainWords;

impl RemedyWords for PlainWords {
    fn write(&self, remedy: &Remedy<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match remedy {
            Remedy::LogIn { server } => write!(f, "log in to server `{server}`"),
            Remedy::LogInForScope { server } => write!(
                f,
                "log in to server `{server}` again where a person can approve the scope"
            ),
            Remedy::LogInAgain => f.write_str("log in again"),
            Remedy::OptInToOAuth { server } => write!(
                f,
                "OAuth is opt-in, so give server `{server}` an `oauth` table and log in, or set an Authorization header with headers_from_env"
            ),
            Remedy::ListServers => f.write_str("the config lists the configured ones"),
            Remedy::Enable { server } => write!(f, "enable server `{server}` in the config"),
        }
    }
}

static WORDS: OnceLock<&'static dyn RemedyWords> = OnceLock::new();

/// Installs the words remedies are said in, for this process. The first
/// install wins: `false` when words were installed already.
pub fn install_words(words: &'static dyn RemedyWords) -> bool {
    WORDS.set(words).is_ok()
}

/// The installed words, or [`PlainWords`].
fn words() -> &'static dyn RemedyWords {
    WORDS.get().copied().unwrap_or(&PlainWords)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renders `remedy` in `words`, whatever is installed.
    fn said(words: &dyn RemedyWords, remedy: Remedy<'_>) -> String {
        struct In<'w, 'r>(&'w dyn RemedyWords, Remedy<'r>);
        impl fmt::Display for In<'_, '_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.write(&self.1, f)
            }
        }
        In(words, remedy).to_string()
    }

    #[test]
    fn plain_words_name_the_server_and_no_command() {
        for remedy in [
            Remedy::LogIn { server: "s" },
            Remedy::LogInForScope { server: "s" },
            Remedy::OptInToOAuth { server: "s" },
            Remedy::Enable { server: "s" },
        ] {
            let text = said(&PlainWords, remedy);
            assert!(text.contains("server `s`"), "{text}");
            assert!(!text.contains("rho mcp"), "{text}");
        }
        assert_eq!(said(&PlainWords, Remedy::LogInAgain), "log in again");
    }

    #[test]
    fn a_host_says_a_remedy_in_its_own_words() {
        struct Commands;
        impl RemedyWords for Commands {
            fn write(&self, remedy: &Remedy<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match remedy {
                    Remedy::LogIn { server } => write!(f, "run `host login {server}`"),
                    other => PlainWords.write(other, f),
                }
            }
        }
        assert_eq!(
            said(&Commands, Remedy::LogIn { server: "s" }),
            "run `host login s`"
        );
        assert_eq!(
            said(&Commands, Remedy::ListServers),
            "the config lists the configured ones"
        );
    }
}
