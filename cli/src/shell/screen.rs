//! The shell's terminal: raw mode for the line editor, and the one lock
//! every writer takes, so text printed from any thread lands above the
//! prompt line without tearing it.
//!
//! Raw mode here is the usual one (no echo, no line buffering, no signals
//! from keys, so Ctrl-C reaches the editor as a key) with output
//! processing left on, so a `\n` in printed text still starts a new line.
//! [`RawMode`] restores the terminal as it was when dropped, on every exit
//! path including a panic's unwinding.

use std::io::Write as _;
use std::sync::{Mutex, MutexGuard};

use super::editor::{Candidate, Editor, width_of};

/// The terminal's settings before raw mode, put back on drop.
#[cfg(unix)]
pub(crate) struct RawMode {
    saved: rustix::termios::Termios,
}

#[cfg(unix)]
impl RawMode {
    /// Puts stdin's terminal into raw mode.
    pub(crate) fn enter() -> std::io::Result<RawMode> {
        use rustix::termios::{OptionalActions, OutputModes, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin)?;
        let mut raw = saved.clone();
        raw.make_raw();
        raw.output_modes |= OutputModes::OPOST | OutputModes::ONLCR;
        tcsetattr(&stdin, OptionalActions::Drain, &raw)?;
        Ok(RawMode { saved })
    }
}

#[cfg(unix)]
impl Drop for RawMode {
    fn drop(&mut self) {
        use rustix::termios::{OptionalActions, tcsetattr};
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Drain, &self.saved);
    }
}

/// The console's modes before raw mode (Windows: raw, virtual terminal
/// input and output, `rho_os::console::RawInput`), put back on drop.
#[cfg(windows)]
pub(crate) struct RawMode {
    _saved: rho_os::console::RawInput,
}

#[cfg(windows)]
impl RawMode {
    /// Puts the console into raw mode.
    pub(crate) fn enter() -> std::io::Result<RawMode> {
        Ok(RawMode {
            _saved: rho_os::console::RawInput::enter()?,
        })
    }
}

/// The terminal's width in columns (80 when it cannot be read).
pub(crate) fn width() -> usize {
    #[cfg(unix)]
    if let Ok(size) = rustix::termios::tcgetwinsize(std::io::stdout()) {
        if size.ws_col > 0 {
            return usize::from(size.ws_col);
        }
    }
    80
}

/// `text` with each line longer than `width` columns broken at its last
/// blank that fits, so the terminal never wraps it inside a name; the
/// continuation keeps the line's indent. A word longer than the whole
/// width (a URL) gets a row of its own, which the terminal wraps. An escape sequence
/// (`ESC [ ... letter`, the log's colours) takes no column.
pub(crate) fn wrap(text: &str, width: usize) -> std::borrow::Cow<'_, str> {
    let width = width.max(20);
    if text.lines().all(|line| columns(line) <= width) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let indent = line.len() - line.trim_start_matches(' ').len();
        let mut rest = line;
        let mut first = true;
        loop {
            let lead = if first { 0 } else { indent };
            let room = width.saturating_sub(lead);
            if columns(rest) <= room {
                out.extend(std::iter::repeat_n(' ', lead));
                out.push_str(rest);
                break;
            }
            // The last blank before the first column past the room, not
            // inside the leading blanks.
            let leading = rest.len() - rest.trim_start_matches(' ').len();
            let mut used = 0;
            let mut cut = None;
            let mut chars = rest.char_indices();
            while let Some((at, c)) = chars.next() {
                if c == '\x1b' {
                    for (_, c) in chars.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                    continue;
                }
                if c == ' ' && at > leading {
                    cut = Some(at);
                }
                used += width_of(c);
                if used > room {
                    break;
                }
            }
            // A first word longer than the room gets a row of its own.
            if cut.is_none() {
                cut = rest[leading..].find(' ').map(|i| i + leading);
            }
            let Some(at) = cut.filter(|&at| !rest[..at].trim_start().is_empty()) else {
                out.extend(std::iter::repeat_n(' ', lead));
                out.push_str(rest);
                break;
            };
            out.extend(std::iter::repeat_n(' ', lead));
            out.push_str(rest[..at].trim_end_matches(' '));
            out.push('\n');
            rest = rest[at..].trim_start_matches(' ');
            first = false;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Columns `line` takes, escape sequences taking none.
fn columns(line: &str) -> usize {
    let mut used = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        used += width_of(c);
    }
    used
}

/// The screen: the editor's line at the bottom, text printed above it.
pub(crate) struct Screen {
    inner: Mutex<Editor>,
}

impl Screen {
    /// A screen whose bottom line is `editor`'s.
    pub(crate) fn new(editor: Editor) -> Self {
        Screen {
            inner: Mutex::new(editor),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Editor> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Prints `text` above the prompt line and draws the line again.
    /// `text` must already be safe for a terminal (sanitized).
    pub(crate) fn print(&self, text: &str) {
        let editor = self.lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(editor.clear().as_bytes());
        let _ = out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = out.write_all(b"\n");
        }
        let _ = out.write_all(editor.render(width()).as_bytes());
        let _ = out.flush();
    }

    /// Runs `change` on the editor, then redraws the line.
    pub(crate) fn edit<R>(&self, change: impl FnOnce(&mut Editor) -> R) -> R {
        let mut editor = self.lock();
        let result = change(&mut editor);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(editor.render(width()).as_bytes());
        let _ = out.flush();
        result
    }

    /// Runs `change` on the editor, and redraws the line if it says it
    /// changed something.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Editor) -> bool) {
        let mut editor = self.lock();
        if change(&mut editor) {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(editor.render(width()).as_bytes());
            let _ = out.flush();
        }
    }

    /// Reads the editor without drawing.
    pub(crate) fn look<R>(&self, read: impl FnOnce(&Editor) -> R) -> R {
        read(&self.lock())
    }

    /// Changes the editor without drawing (for what does not show).
    pub(crate) fn look_mut<R>(&self, change: impl FnOnce(&mut Editor) -> R) -> R {
        change(&mut self.lock())
    }

    /// Offers completions for `line` (see [`Editor::offer`]).
    pub(crate) fn offer(&self, line: &str, word_start: usize, candidates: Vec<Candidate>) {
        self.edit(|editor| editor.offer(line, word_start, candidates));
    }

    /// Draws the line (and the menu) again, as they are.
    pub(crate) fn draw(&self) {
        let editor = self.lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(editor.render(width()).as_bytes());
        let _ = out.flush();
    }

    /// Ctrl-L: clears the screen (cursor home, erase below) and draws the
    /// line at its top.
    pub(crate) fn clear_screen(&self) {
        let editor = self.lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"\x1b[H\x1b[J");
        let _ = out.write_all(editor.render(width()).as_bytes());
        let _ = out.flush();
    }

    /// Erases the prompt line (before leaving).
    pub(crate) fn erase(&self) {
        let editor = self.lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(editor.clear().as_bytes());
        let _ = out.flush();
    }

    /// The history, for saving.
    pub(crate) fn history(&self) -> Vec<String> {
        self.lock().history().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn long_lines_break_between_words_never_inside_a_name() {
        let line = "  mcp__everything__get-resource-reference  Returns a resource reference that can be used by MCP clients";
        let wrapped = wrap(line, 50);
        for row in wrapped.lines() {
            assert!(row.chars().count() <= 50, "{row:?} in {wrapped:?}");
            assert!(row.starts_with("  "), "the indent is kept: {row:?}");
        }
        assert!(
            wrapped
                .lines()
                .next()
                .unwrap_or("")
                .starts_with("  mcp__everything__get-resource-reference ")
        );
        assert_eq!(
            wrapped.split_whitespace().collect::<Vec<_>>(),
            line.split_whitespace().collect::<Vec<_>>(),
            "no word is cut or lost"
        );
    }

    #[test]
    fn short_lines_escapes_and_overlong_words_are_left_alone() {
        assert!(matches!(wrap("short", 40), std::borrow::Cow::Borrowed(_)));
        let coloured = format!("\x1b[33m WARN\x1b[0m {}", "x".repeat(30));
        assert_eq!(wrap(&coloured, 40), coloured);
        let url = format!("  http://127.0.0.1/{}", "a".repeat(60));
        assert_eq!(wrap(&url, 40), url);
        let long_then_short = format!("{url} and more");
        assert_eq!(wrap(&long_then_short, 40), format!("{url}\n  and more"));
    }
}
