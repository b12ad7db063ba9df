//! The shell's terminal: raw mode for the line editor, and the one lock
//! every writer takes, so text printed from any thread lands above the
//! prompt line without tearing it.
//!
//! Raw mode here is the usual one (no echo, no line buffering, no signals
//! from keys, so Ctrl-C reaches the editor as a key) with output
//! processing left on, so a `\n` in printed text still starts a new line.
//! [`RawMode`] restores the terminal as it was when dropped, on every exit
//! path including a panic's unwinding.
//!
//! Every line printed above the prompt line goes through [`Screen::print`],
//! which breaks it between words to fit the terminal's width ([`wrap`]);
//! the screen also remembers how many rows its last drawing took under the
//! line (the menu), so that printing erases exactly those, never with an
//! erase-below from the top-left corner (see [`Editor::render`]).

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
    if let Ok(size) = rustix::termios::tcgetwinsize(std::io::stdout())
        && size.ws_col > 0
    {
        return usize::from(size.ws_col);
    }
    #[cfg(windows)]
    if let Some(columns) = rho_os::console::columns() {
        return usize::from(columns);
    }
    80
}

/// `text` as the shell prints it on a terminal `width` columns wide: each
/// line longer than the width broken at blanks, so the terminal never
/// wraps it inside a word or a name.
///
/// - A continuation row hangs under the line's text: under the column
///   where the text after the last gap of two or more blanks starts, if
///   that is in the left half (the description of a `  name
///   description` row, the last column of a table), else under the
///   line's own indent.
/// - A word that does not fit where the row starts takes a row of its
///   own: at the row's start when it fits the width there (a URL then
///   stays on one screen row, to be copied whole), else unbroken at the
///   row's indent, for the terminal to wrap (terminals join such rows
///   again when they are copied). rho never splits a word itself.
/// - An escape sequence (`ESC [ ... letter`, the log's colours) takes no
///   column and is never broken: breaks fall on blanks only.
///
/// Columns are display columns ([`width_of`]): wide characters count
/// two, combining marks none. A width under 20 is taken as 20. `text` is
/// expected to be sanitized already.
pub(crate) fn wrap(text: &str, width: usize) -> std::borrow::Cow<'_, str> {
    let width = width.max(20);
    if text.split('\n').all(|line| columns(line) <= width) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if columns(line) <= width {
            out.push_str(line);
        } else {
            wrap_line(&mut out, line, width);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// One line wider than `width`, broken into rows onto `out` (see
/// [`wrap`]).
fn wrap_line(out: &mut String, line: &str, width: usize) {
    let body = line.trim_start_matches(' ');
    let indent = line.len() - body.len();
    // The words with the blanks before each (none before the first).
    let mut words: Vec<(usize, &str)> = Vec::new();
    let mut rest = body;
    let mut gap = 0;
    while !rest.is_empty() {
        let end = rest.find(' ').unwrap_or(rest.len());
        if end > 0 {
            words.push((gap, &rest[..end]));
        }
        let after = rest[end..].trim_start_matches(' ');
        gap = rest.len() - end - after.len();
        rest = after;
    }
    let hang = hang_column(indent, &words, width);
    let mut row_start = out.len();
    out.extend(std::iter::repeat_n(' ', indent));
    let mut used = indent;
    // Whether the row holds a word yet, and whether that word must stay
    // alone (it was moved to the row's start, or is wider than the row).
    let mut filled = false;
    let mut alone = false;
    for (gap, word) in words {
        let wide = columns(word);
        if filled && !alone && used + gap + wide <= width {
            out.extend(std::iter::repeat_n(' ', gap));
            out.push_str(word);
            used += gap + wide;
            continue;
        }
        if filled {
            out.push('\n');
            row_start = out.len();
            out.extend(std::iter::repeat_n(' ', hang));
            used = hang;
        }
        alone = used + wide > width;
        if alone && wide <= width {
            // Out of the indent, so the word stays on one screen row.
            out.truncate(row_start);
            used = 0;
        }
        out.push_str(word);
        used += wide;
        filled = true;
    }
}

/// The column continuation rows of a line hang under (see [`wrap`]):
/// where the text after the last gap of two or more blanks starts, if
/// that is in the left half of the width, else the line's indent.
fn hang_column(indent: usize, words: &[(usize, &str)], width: usize) -> usize {
    let mut column = indent;
    let mut hang = indent;
    for (i, (gap, word)) in words.iter().enumerate() {
        column += gap;
        if column > width / 2 {
            break;
        }
        if i > 0 && *gap >= 2 {
            hang = column;
        }
        column += columns(word);
    }
    hang
}

/// Columns `line` takes, escape sequences taking none.
pub(crate) fn columns(line: &str) -> usize {
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
    inner: Mutex<Drawn>,
}

/// The editor, and how many rows its last drawing took under the line.
struct Drawn {
    editor: Editor,
    below: usize,
}

impl Drawn {
    /// The bytes that draw the line again, noting the rows they take.
    fn render(&mut self, width: usize) -> String {
        self.below = self.editor.rows_below(width);
        self.editor.render(width)
    }

    /// The bytes that erase what the last drawing drew.
    fn clear(&mut self) -> &'static str {
        let below = std::mem::take(&mut self.below);
        Editor::clear(below)
    }
}

impl Screen {
    /// A screen whose bottom line is `editor`'s.
    pub(crate) fn new(editor: Editor) -> Self {
        Screen {
            inner: Mutex::new(Drawn { editor, below: 0 }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Drawn> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Prints `text` above the prompt line and draws the line again.
    /// `text` must already be safe for a terminal (sanitized): it is
    /// broken between words to fit the terminal's width here ([`wrap`]),
    /// the one place every line the shell shows goes through.
    pub(crate) fn print(&self, text: &str) {
        let mut drawn = self.lock();
        let width = width();
        let text = wrap(text, width);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(drawn.clear().as_bytes());
        let _ = out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = out.write_all(b"\n");
        }
        let _ = out.write_all(drawn.render(width).as_bytes());
        let _ = out.flush();
    }

    /// Runs `change` on the editor, then redraws the line.
    pub(crate) fn edit<R>(&self, change: impl FnOnce(&mut Editor) -> R) -> R {
        let mut drawn = self.lock();
        let result = change(&mut drawn.editor);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(drawn.render(width()).as_bytes());
        let _ = out.flush();
        result
    }

    /// Runs `change` on the editor, and redraws the line if it says it
    /// changed something.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Editor) -> bool) {
        let mut drawn = self.lock();
        if change(&mut drawn.editor) {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(drawn.render(width()).as_bytes());
            let _ = out.flush();
        }
    }

    /// Reads the editor without drawing.
    pub(crate) fn look<R>(&self, read: impl FnOnce(&Editor) -> R) -> R {
        read(&self.lock().editor)
    }

    /// Changes the editor without drawing (for what does not show).
    pub(crate) fn look_mut<R>(&self, change: impl FnOnce(&mut Editor) -> R) -> R {
        change(&mut self.lock().editor)
    }

    /// Offers completions for `line` (see [`Editor::offer`]).
    pub(crate) fn offer(&self, line: &str, word_start: usize, candidates: Vec<Candidate>) {
        self.edit(|editor| editor.offer(line, word_start, candidates));
    }

    /// Draws the line (and the menu) again, as they are.
    pub(crate) fn draw(&self) {
        let mut drawn = self.lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(drawn.render(width()).as_bytes());
        let _ = out.flush();
    }

    /// Ctrl-L: clears the screen (cursor home, erase below) and draws the
    /// line at its top. The clear itself puts a copy of the screen in a
    /// terminal's scrollback, as `clear` does; the redraws after it do not
    /// (see [`Editor::render`]).
    pub(crate) fn clear_screen(&self) {
        let mut drawn = self.lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(b"\x1b[H\x1b[J");
        let _ = out.write_all(drawn.render(width()).as_bytes());
        let _ = out.flush();
    }

    /// Erases the prompt line (before leaving).
    pub(crate) fn erase(&self) {
        let mut drawn = self.lock();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(drawn.clear().as_bytes());
        let _ = out.flush();
    }

    /// The history, for saving.
    pub(crate) fn history(&self) -> Vec<String> {
        self.lock().editor.history().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::{columns, wrap};

    /// The rows of `wrapped`, each checked to fit `width` unless it is a
    /// single word wider than that; and every word of `line` is in them,
    /// whole and in order.
    fn rows_fit_and_keep_every_word(line: &str, width: usize) -> Vec<String> {
        let wrapped = wrap(line, width);
        let rows: Vec<String> = wrapped.split('\n').map(str::to_owned).collect();
        for row in &rows {
            let one_word = row.split_whitespace().count() == 1;
            assert!(
                columns(row) <= width || one_word,
                "a row of {} columns at {width}: {row:?} in {wrapped:?}",
                columns(row)
            );
            assert!(!row.ends_with(' '), "no trailing blank: {row:?}");
        }
        assert_eq!(
            wrapped.split_whitespace().collect::<Vec<_>>(),
            line.split_whitespace().collect::<Vec<_>>(),
            "no word is cut or lost"
        );
        rows
    }

    #[test]
    fn long_lines_break_between_words_never_inside_a_name() {
        let line = "13 tool(s), 4 prompt(s), 107 resource(s) and template(s): /mcp lists them, /tools [server] shows the tools, /help the commands";
        for width in [40, 60, 80, 120] {
            let rows = rows_fit_and_keep_every_word(line, width);
            assert!(rows.len() > 1, "{width}: {rows:?}");
            assert_eq!(
                rows.last()
                    .map(String::as_str)
                    .map(|r| r.ends_with("commands")),
                Some(true)
            );
        }
        let form = "(Enter keeps a [default] or skips an optional field; `!decline` declines the form, `!cancel` cancels it; keys: Ctrl-D declines, Ctrl-C cancels the form and the call)";
        for width in [60, 120] {
            let rows = rows_fit_and_keep_every_word(form, width);
            assert!(
                rows.iter().all(|r| !r.starts_with(' ')),
                "no indent: {rows:?}"
            );
        }
    }

    #[test]
    fn continuation_rows_hang_under_the_text_column_of_an_indented_row() {
        let row = "  mcp__everything__echo  Echoes back the input string, so that a client can check that the server answers at all";
        let rows = rows_fit_and_keep_every_word(row, 60);
        let text_column = row.find("Echoes").expect("the description");
        assert!(
            rows[0].starts_with("  mcp__everything__echo  Echoes back"),
            "{rows:?}"
        );
        for continuation in &rows[1..] {
            let indent = continuation.len() - continuation.trim_start().len();
            assert_eq!(indent, text_column, "{rows:?}");
        }
        // Past the left half, the gap is not a column: the line's indent.
        let name = format!("  {}  {}", "n".repeat(40), "word ".repeat(20));
        let rows = rows_fit_and_keep_every_word(&name, 60);
        assert!(rows[1..].iter().all(|r| r.starts_with("  w")), "{rows:?}");
        // A parameter row keeps its own deeper indent.
        let parameter = format!(
            "    message (string, required)  {}",
            "the text to echo ".repeat(9)
        );
        let rows = rows_fit_and_keep_every_word(parameter.trim_end(), 80);
        assert!(rows.len() > 2, "{rows:?}");
        let text_column = parameter.find("the text").expect("text");
        assert!(
            rows[1..]
                .iter()
                .all(|r| r.len() - r.trim_start().len() == text_column),
            "{rows:?}"
        );
    }

    #[test]
    fn a_url_keeps_to_one_row_of_its_own_and_an_overlong_word_stays_whole() {
        // Fits the width, not after the indent: moved to the row's start,
        // alone, so it can be copied off one row.
        let url = format!("http://127.0.0.1:4000/authorize?state={}", "a".repeat(41));
        let line = format!("  {url}");
        assert_eq!(columns(&line), 81);
        assert_eq!(wrap(&line, 80), url);
        let prose = format!("open this URL in a browser: {url} and come back");
        let rows = rows_fit_and_keep_every_word(&prose, 80);
        assert_eq!(
            rows,
            ["open this URL in a browser:", url.as_str(), "and come back"]
        );
        // Wider than the terminal: whole, on a row of its own, for the
        // terminal to wrap; the text around it goes on.
        let huge = format!("  http://127.0.0.1/{}", "a".repeat(60));
        assert_eq!(wrap(&huge, 40), huge);
        let rows = rows_fit_and_keep_every_word(&format!("{huge} and more"), 40);
        assert_eq!(rows, [huge.as_str(), "  and more"]);
    }

    #[test]
    fn widths_are_display_columns_and_escapes_are_never_broken() {
        // Wide characters take two columns each.
        let wide = "漢字 ".repeat(20);
        let rows = rows_fit_and_keep_every_word(wide.trim_end(), 30);
        assert!(rows.iter().all(|r| columns(r) <= 30), "{rows:?}");
        assert!(rows.iter().any(|r| columns(r) > 25), "{rows:?}");
        // Combining marks take none: 60 letters with 60 accents fit 60.
        let accented = "e\u{301}".repeat(30) + " " + &"e\u{301}".repeat(29);
        assert_eq!(wrap(&accented, 60), accented);
        // The log's colours take no column and come out whole.
        let coloured = format!("\x1b[33m WARN\x1b[0m {}", "word ".repeat(20));
        let wrapped = wrap(coloured.trim_end(), 40);
        assert!(
            wrapped.starts_with("\x1b[33m WARN\x1b[0m word"),
            "{wrapped:?}"
        );
        assert_eq!(wrapped.matches('\x1b').count(), 2, "{wrapped:?}");
        for row in wrapped.split('\n') {
            assert!(columns(row) <= 40, "{row:?}");
        }
        let short = format!("\x1b[33m WARN\x1b[0m {}", "x".repeat(30));
        assert_eq!(wrap(&short, 40), short);
        assert!(matches!(wrap("short", 40), std::borrow::Cow::Borrowed(_)));
    }
}
