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
//! A server's own log message (`notifications/message`) is written as
//! the server's words, not as one of rho's lines: the time, the server's
//! own level, the server that said it and, when it named one, its
//! logger, then the message (``… warning from server `docs` (logger
//! `index`): disk almost full``); see [`Events`].
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
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The tracing target of servers' log messages (and of rho's notes about
/// them, such as how many a flood hid).
const SERVER_TARGET: &str = "rho::mcp::server";

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
    if let Some(level) = server_logs
        && let Ok(directive) = format!("rho::mcp::server={level}").parse()
    {
        filter = filter.add_directive(directive);
    }
    let ansi = use_color(
        std::env::var_os("NO_COLOR").as_deref(),
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
    );
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| LogLine(Vec::new()))
        .with_ansi(ansi)
        .fmt_fields(SafeFields)
        .event_format(Events {
            rho: tracing_subscriber::fmt::format().with_target(verbose),
        })
        .init();
}

/// Formats log events: a server's own log message (an event of the
/// server target carrying the server's `level`) as the server's words,
/// every other event as the default formatter does (with [`SafeFields`]).
struct Events {
    /// The format of rho's own lines.
    rho: Format<Full, SystemTime>,
}

impl<S, N> FormatEvent<S, N> for Events
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if event.metadata().target() == SERVER_TARGET {
            let mut said = ServerSaid::default();
            event.record(&mut said);
            if let Some(line) = said.line() {
                let ansi = writer.has_ansi_escapes();
                if ansi {
                    writer.write_str("\x1b[2m")?;
                }
                SystemTime.format_time(&mut writer)?;
                if ansi {
                    writer.write_str("\x1b[0m")?;
                }
                writer.write_char(' ')?;
                return match ansi {
                    true => writeln!(writer, "{}", line.coloured(*event.metadata().level())),
                    false => writeln!(writer, "{}", line.plain()),
                };
            }
        }
        self.rho.format_event(ctx, writer, event)
    }
}

/// The fields of a server's log message, as recorded.
#[derive(Default)]
struct ServerSaid {
    level: Option<String>,
    server: Option<String>,
    logger: Option<String>,
    message: Option<String>,
}

impl Visit for ServerSaid {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "level" => &mut self.level,
            "server" => &mut self.server,
            "logger" => &mut self.logger,
            "message" => &mut self.message,
            _ => return,
        };
        *slot = Some(value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // The message arrives as format arguments, whose Debug is the text.
        self.record_str(field, &format!("{value:?}"));
    }
}

impl ServerSaid {
    /// The line, when this is a server's own message (it names the
    /// server's level); every part redacted and sanitized.
    fn line(self) -> Option<ServerLine> {
        let level = safe_line(&self.level?);
        let mut from = format!("from server `{}`", safe_line(self.server.as_deref()?));
        if let Some(logger) = self.logger.filter(|l| !l.trim().is_empty()) {
            let _ = write!(from, " (logger `{}`)", safe_line(&logger));
        }
        let message = safe(self.message.as_deref().unwrap_or_default());
        Some(ServerLine {
            level,
            from,
            message,
        })
    }
}

/// A server's log message, ready to write.
struct ServerLine {
    /// The server's own level, as it named it.
    level: String,
    /// ``from server `<id>` ``, and its logger when it named one.
    from: String,
    message: String,
}

impl ServerLine {
    /// ``<level> from server `<id>` (logger `<name>`): <message>``.
    fn plain(&self) -> String {
        let Self {
            level,
            from,
            message,
        } = self;
        format!("{level} {from}: {message}")
    }

    /// [`ServerLine::plain`] with the level coloured as rho colours the
    /// tracing level it is logged at.
    fn coloured(&self, at: Level) -> String {
        let colour = match at {
            Level::ERROR => "31",
            Level::WARN => "33",
            Level::INFO => "32",
            Level::DEBUG => "34",
            Level::TRACE => "35",
        };
        let Self {
            level,
            from,
            message,
        } = self;
        format!("\x1b[{colour}m{level}\x1b[0m {from}: {message}")
    }
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

/// `text` redacted, then sanitized onto one line.
fn safe_line(text: &str) -> String {
    terminal::sanitize_line(&redact(text)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(level: Option<&str>, logger: Option<&str>) -> ServerSaid {
        ServerSaid {
            level: level.map(str::to_owned),
            server: Some("docs".into()),
            logger: logger.map(str::to_owned),
            message: Some("disk \x1b[2J almost full".into()),
        }
    }

    #[test]
    fn a_server_message_reads_as_its_words_without_empty_fields() {
        let line = |level, logger| said(level, logger).line().map(|l| l.plain());
        assert_eq!(
            line(Some("notice"), Some("index")).as_deref(),
            Some("notice from server `docs` (logger `index`): disk \\x1b[2J almost full")
        );
        for empty in [None, Some(""), Some("  ")] {
            assert_eq!(
                line(Some("critical"), empty).as_deref(),
                Some("critical from server `docs`: disk \\x1b[2J almost full"),
                "{empty:?}"
            );
        }
        // Server text in the level and the logger is escaped too.
        assert_eq!(
            line(Some("warn\x07ing"), Some("a\nb")).as_deref(),
            Some("warn\\x07ing from server `docs` (logger `a\\nb`): disk \\x1b[2J almost full")
        );
        // Without the server's level it is one of rho's own lines.
        assert!(said(None, Some("index")).line().is_none());
        let coloured = said(Some("error"), None)
            .line()
            .map(|l| l.coloured(Level::ERROR));
        assert_eq!(
            coloured.as_deref(),
            Some("\x1b[31merror\x1b[0m from server `docs`: disk \\x1b[2J almost full")
        );
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_color(None, true));
        assert!(use_color(Some(OsStr::new("")), true));
        assert!(!use_color(Some(OsStr::new("1")), true));
        assert!(!use_color(None, false));
    }
}
