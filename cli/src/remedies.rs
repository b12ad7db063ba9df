//! The remedies the runtime names ([`rho_host::Remedy`]), said as `rho
//! mcp` commands: installed once, before anything can fail, so every
//! message names the command that helps.

use std::fmt;

use rho_host::{PlainWords, Remedy, RemedyWords};

/// The `rho` CLI's words for remedies.
struct RhoWords;

impl RemedyWords for RhoWords {
    fn write(&self, remedy: &Remedy<'_>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match remedy {
            Remedy::LogIn { server } => write!(f, "run `rho mcp login {server}` to log in"),
            Remedy::LogInForScope { server } => write!(
                f,
                "log in with it at a terminal (`rho mcp call` does), or run `rho mcp login {server}`, which asks for it too"
            ),
            Remedy::LogInAgain => f.write_str("log in again with `rho mcp login`"),
            Remedy::OptInToOAuth { server } => write!(
                f,
                "OAuth is opt-in, so add an `[mcp.servers.{server}.oauth]` table (or re-add it with `rho mcp add {server} --url URL --oauth --force`) and run `rho mcp login {server}`, or set an Authorization header with headers_from_env"
            ),
            Remedy::ListServers => f.write_str("`rho mcp list` shows the configured ones"),
            Remedy::Enable { server } => write!(f, "`rho mcp enable {server}` enables it"),
            other => PlainWords.write(other, f),
        }
    }
}

/// Says remedies as `rho mcp` commands from now on.
pub(crate) fn install() {
    rho_host::install_remedy_words(&RhoWords);
}
