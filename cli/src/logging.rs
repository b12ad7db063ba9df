//! rho's own log output on stderr (`--verbose`, `RUST_LOG`): what it
//! filters, when it is coloured, and that server text in it is safe.
//!
//! Log lines carry server text: a server's `notifications/message` data,
//! each line of a stdio child's stderr, failure reasons with HTTP bodies in
//! them. Every field and message is therefore written through
//! [`terminal::sanitize`] (no raw ESC, CR or C1 control reaches the
//! terminal) and through the run's [`Redactor`] (no configured secret value
//! a server echoed back is logged); see [`SafeFields`].
//!
//! Colour follows the convention of <https://no-color.org>: on only when
//! stderr is a terminal and `NO_COLOR` is unset or empty.

use std::ffi::OsStr;
use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use rho_proto_core::text::redact::Redactor;
use rho_proto_core::text::terminal;
use tracing::field::{Field, Visit};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

/// The secrets of every configured server of this run, once the config is
/// loaded (log lines written before that cannot hold server text).
static SECRETS: OnceLock<Redactor> = OnceLock::new();

/// Where finished log lines go instead of stderr (the shell prints them
/// above its prompt line).
type Route = Arc<dyn Fn(&str) + Send + Sync>;

/// The current route, when one is set.
static ROUTE: Mutex<Option<Route>> = Mutex::new(None);

/// Installs the stderr logger: `debug` with `verbose`, else `warn`;
/// `RUST_LOG` overrides the filter. `server_logs` (a tracing level) lets
/// servers' log messages (target `rho::mcp::server`) through from that
/// level on, whatever the rest of the filter says (`rho mcp shell
/// --log-level`).
pub(crate) fn init(verbose: bool, server_logs: Option<&str>) {
    let mut filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(if verbose { "debug" } else { "warn" }));
    if let Some(level) = server_logs {
        if let Ok(directive) = format!("rho::mcp::server={level}").parse() {
            filter = filter.add_directive(directive);
        }
    }
    let ansi = use_color(
        std::env::var_os("NO_COLOR").as_deref(),
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
    );
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| LogLine(Vec::new()))
        .with_ansi(ansi)
        .with_target(verbose)
        .fmt_fields(SafeFields)
        .init();
}

/// Sends every later log line to `route` (or, with `None`, to stderr
/// again).
pub(crate) fn route_to(route: Option<Route>) {
    *ROUTE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = route;
}

/// One log line being formatted; written whole when dropped, to the
/// route or to stderr.
struct LogLine(Vec<u8>);

impl std::io::Write for LogLine {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let route = ROUTE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match route {
            Some(route) => route(String::from_utf8_lossy(&self.0).trim_end()),
            None => {
                let _ = std::io::stderr().lock().write_all(&self.0);
            }
        }
    }
}

/// Hides these secrets in every later log line (the first call wins; a
/// run loads one config).
pub(crate) fn redact_secrets(redactor: Redactor) {
    let _ = SECRETS.set(redactor);
}

/// Whether rho's output may be coloured: only on a terminal, and never
/// when `NO_COLOR` is set to a non-empty value.
pub(crate) fn use_color(no_color: Option<&OsStr>, terminal: bool) -> bool {
    terminal && no_color.is_none_or(OsStr::is_empty)
}

/// Formats an event's fields as the default formatter does (`message`
/// first without its name, then `name=value` separated by spaces), with
/// every value sanitized for the terminal and redacted.
pub(crate) struct SafeFields;

impl<'writer> FormatFields<'writer> for SafeFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut visitor = SafeVisitor { out: String::new() };
        fields.record(&mut visitor);
        writer.write_str(&visitor.out)
    }
}

/// Collects one event's fields as safe text.
struct SafeVisitor {
    out: String,
}

impl SafeVisitor {
    fn push(&mut self, field: &Field, value: &str) {
        if !self.out.is_empty() {
            self.out.push(' ');
        }
        if field.name() != "message" {
            self.out.push_str(field.name());
            self.out.push('=');
        }
        self.out.push_str(&safe(value));
    }
}

impl Visit for SafeVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.push(field, &text);
    }
}

/// `text` with this run's secrets hidden (for JSON, which needs no
/// sanitizing).
pub(crate) fn redact(text: &str) -> String {
    match SECRETS.get() {
        Some(redactor) => redactor.redact(text).into_owned(),
        None => text.to_owned(),
    }
}

/// `text` redacted, then sanitized for the terminal.
pub(crate) fn safe(text: &str) -> String {
    terminal::sanitize(&redact(text)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_color(None, true));
        assert!(use_color(Some(OsStr::new("")), true));
        assert!(!use_color(Some(OsStr::new("1")), true));
        assert!(!use_color(None, false));
    }
}
