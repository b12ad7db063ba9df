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

use super::editor::{Candidate, Editor};

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
