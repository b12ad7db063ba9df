//! The shell's line editor as a pure model: the line and its cursor,
//! history, the completion menu, attachments, and the bytes that draw it
//! all.
//!
//! [`Editor::key`] applies one key and says what the shell must do
//! ([`Action`]); [`Editor::render`] gives the bytes that redraw the prompt
//! line and the menu under it for a terminal `width` columns wide. Nothing
//! here reads a terminal, so the tests drive it key by key.
//!
//! Drawing keeps to one screen line: a line longer than the terminal
//! scrolls sideways around the cursor. The menu takes up to
//! [`MENU_ROWS`] rows below the line, which the next redraw clears (`ESC
//! [J` after the line's text, never from the top-left corner, which tmux
//! takes for a whole-screen clear), and the cursor is put back on the
//! line. Text printed while a line is being edited (progress, logs) goes
//! above it: [`Editor::clear`], the text, then [`Editor::render`] again.
//!
//! The menu is opened two ways. Tab asks the shell for candidates
//! ([`Action::Complete`], answered by [`Editor::offer`]). And the shell may
//! put up a *palette* by itself ([`Editor::suggest`]): argument
//! suggestions that arrived from a server, or the `@` matches. A palette
//! has no highlighted row, so typing and Enter go on as if it were not
//! there; Tab (or Down/Up) highlights a row, and from then on Tab/Down and
//! BackTab/Up move, Enter picks and Escape closes. Tab on a palette of one
//! row picks it at once.
//!
//! A picked resource becomes an *attachment*: its label (`[resource: <uri>
//! · reading]`) sits in the line as one unit. The cursor steps over it,
//! Backspace (or Delete, or a kill that touches it) removes it whole, and
//! every removal is reported ([`Event::Detach`]) so the shell can cancel
//! its read. Enter is refused while an attachment is pending
//! ([`Action::Notice`]).
//!
//! Widths: a character counts one column, East Asian wide characters and
//! emoji two, combining marks none. That small table (see [`width_of`])
//! covers what people type; a terminal that disagrees on a rare character
//! misplaces the cursor until the next redraw, nothing worse.

use std::borrow::Cow;
use std::fmt::Write as _;

use rho_proto_core::features::resources::ResourceRead;
use rho_proto_core::text::terminal::{is_control, sanitize_line};

use super::keys::Key;

/// How many candidates the menu shows at once.
pub(crate) const MENU_ROWS: usize = 8;

/// How many lines history keeps.
pub(crate) const HISTORY_LINES: usize = 1000;

/// What picking a candidate does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// Its text replaces the word being completed.
    Insert,
    /// The word (an `@` token) gives way to an attachment: the shell reads
    /// `uri` from `server`.
    Attach { server: String, uri: String },
}

/// One completion the menu offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// What replaces the word being completed (for an attachment, the
    /// URI, as shown).
    pub(crate) replacement: String,
    /// A short note shown beside it (a title, "template", a server).
    pub(crate) note: String,
    /// What picking it does.
    pub(crate) pick: Pick,
}

impl Candidate {
    /// A candidate that inserts `replacement`.
    pub(crate) fn text(replacement: impl Into<String>, note: impl Into<String>) -> Self {
        Candidate {
            replacement: replacement.into(),
            note: note.into(),
            pick: Pick::Insert,
        }
    }
}

/// What the shell must do after a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Nothing beyond a redraw.
    Redraw,
    /// The line was submitted (Enter, no menu row highlighted): its text
    /// with the attachments taken out, and the attachments in order.
    Submit { line: String, attachments: Vec<u64> },
    /// Enter was refused; say why above the line.
    Notice(String),
    /// Ctrl-C: cancel what runs (the line is cleared).
    Interrupt,
    /// Ctrl-D on an empty line.
    EndOfInput,
    /// Ctrl-L: clear the screen, then draw the line at its top.
    ClearScreen,
    /// Tab asked for completions of the word ending at the cursor; the shell
    /// answers with [`Editor::offer`].
    Complete {
        /// The whole line.
        line: String,
        /// Where the word being completed starts (a byte offset).
        word_start: usize,
        /// Where the cursor is (a byte offset).
        cursor: usize,
    },
}

/// What happened to attachments, for the shell to act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// A resource was picked: read `uri` from `server` for attachment
    /// `chip`.
    Attach {
        chip: u64,
        server: String,
        uri: String,
    },
    /// Attachment `chip` was removed from the line (its read, if running,
    /// is to be cancelled).
    Detach { chip: u64 },
}

/// The open completion menu.
#[derive(Clone, Debug)]
struct Menu {
    candidates: Vec<Candidate>,
    /// The highlighted row; none on a palette until Tab or an arrow.
    selected: Option<usize>,
    /// The byte range of the line the choice replaces.
    word_start: usize,
    word_end: usize,
}

/// An attachment in the line: `line[start..end]` is its label.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Chip {
    id: u64,
    start: usize,
    end: usize,
    /// Its read runs: the line cannot be sent.
    pending: bool,
}

/// The line being edited and everything around it.
#[derive(Debug)]
pub(crate) struct Editor {
    prompt: String,
    line: String,
    /// A byte offset into `line`, always on a character boundary and never
    /// inside an attachment.
    cursor: usize,
    history: Vec<String>,
    /// Which history entry is shown (`history.len()` is the draft).
    browsing: usize,
    draft: String,
    menu: Option<Menu>,
    /// Attachments, in line order.
    chips: Vec<Chip>,
    next_chip: u64,
    events: Vec<Event>,
    /// Bumped whenever the line or the cursor changes.
    revision: u64,
}

impl Editor {
    /// An empty line after `prompt` (see [`Editor::set_prompt`]).
    pub(crate) fn new(prompt: &str, history: Vec<String>) -> Self {
        let browsing = history.len();
        Editor {
            prompt: shown_prompt(prompt).to_owned(),
            line: String::new(),
            cursor: 0,
            history,
            browsing,
            draft: String::new(),
            menu: None,
            chips: Vec::new(),
            next_chip: 0,
            events: Vec::new(),
            revision: 0,
        }
    }

    /// The prompt in front of the line (one that takes no column is shown
    /// as `> `).
    pub(crate) fn set_prompt(&mut self, prompt: &str) {
        shown_prompt(prompt).clone_into(&mut self.prompt);
    }

    /// The line as typed so far (attachment labels included).
    pub(crate) fn line(&self) -> &str {
        &self.line
    }

    /// Where the cursor is (a byte offset into [`Editor::line`]).
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    /// Changes whenever the line or the cursor does.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The history, oldest first.
    pub(crate) fn history(&self) -> &[String] {
        &self.history
    }

    /// What happened to attachments since the last call.
    pub(crate) fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Applies one key.
    pub(crate) fn key(&mut self, key: Key) -> Action {
        if let Some(action) = self.menu_key(key) {
            return action;
        }
        let before = (self.cursor, self.line.len(), self.revision);
        let action = self.edit_key(key);
        if before != (self.cursor, self.line.len(), self.revision) {
            self.revision += 1;
        }
        action
    }

    fn edit_key(&mut self, key: Key) -> Action {
        match key {
            // A control or BIDI character (pasted) would be drawn raw:
            // the line never holds one.
            Key::Char(c) if is_control(c) => {}
            Key::Char(c) => {
                let mut buf = [0u8; 4];
                self.splice(self.cursor, self.cursor, c.encode_utf8(&mut buf));
            }
            Key::Enter => return self.enter(),
            Key::Backspace => {
                if let Some(chip) = self.chips.iter().find(|c| c.end == self.cursor) {
                    let (start, end) = (chip.start, chip.end);
                    self.splice(start, end, "");
                } else if let Some(c) = self.line[..self.cursor].chars().next_back() {
                    let start = self.cursor - c.len_utf8();
                    self.splice(start, self.cursor, "");
                }
            }
            Key::Delete => self.delete_forward(),
            Key::Left => {
                if let Some(chip) = self.chips.iter().find(|c| c.end == self.cursor) {
                    self.cursor = chip.start;
                } else if let Some(c) = self.line[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                }
            }
            Key::Right => {
                if let Some(chip) = self.chips.iter().find(|c| c.start == self.cursor) {
                    self.cursor = chip.end;
                } else if let Some(c) = self.line[self.cursor..].chars().next() {
                    self.cursor += c.len_utf8();
                }
            }
            Key::Home => self.cursor = 0,
            Key::End => self.cursor = self.line.len(),
            Key::Up => self.browse(-1),
            Key::Down => self.browse(1),
            Key::KillToEnd => self.splice(self.cursor, self.line.len(), ""),
            Key::KillToStart => self.splice(0, self.cursor, ""),
            Key::KillWord => {
                let start = word_before(&self.line, self.cursor);
                self.splice(start, self.cursor, "");
            }
            Key::Tab => {
                return Action::Complete {
                    line: self.line.clone(),
                    word_start: word_start(&self.line, self.cursor),
                    cursor: self.cursor,
                };
            }
            Key::Interrupt => {
                self.set_line(String::new());
                self.browsing = self.history.len();
                return Action::Interrupt;
            }
            Key::EndOfInput if self.line.is_empty() => return Action::EndOfInput,
            Key::EndOfInput => self.delete_forward(),
            Key::Redraw => return Action::ClearScreen,
            Key::BackTab | Key::Escape | Key::Unknown => {}
        }
        Action::Redraw
    }

    fn delete_forward(&mut self) {
        if let Some(chip) = self.chips.iter().find(|c| c.start == self.cursor) {
            let (start, end) = (chip.start, chip.end);
            self.splice(start, end, "");
        } else if let Some(c) = self.line[self.cursor..].chars().next() {
            self.splice(self.cursor, self.cursor + c.len_utf8(), "");
        }
    }

    /// Enter with no menu row highlighted: submits, unless a read runs.
    fn enter(&mut self) -> Action {
        if self.chips.iter().any(|c| c.pending) {
            return Action::Notice(
                "a resource is still being read: wait for it, or Backspace over it to cancel the read"
                    .into(),
            );
        }
        let mut line = String::new();
        let mut at = 0;
        let mut attachments = Vec::new();
        for chip in std::mem::take(&mut self.chips) {
            line.push_str(&self.line[at..chip.start]);
            at = chip.end;
            attachments.push(chip.id);
        }
        line.push_str(&self.line[at..]);
        self.line.clear();
        self.cursor = 0;
        self.revision += 1;
        self.menu = None;
        self.remember(&line);
        Action::Submit { line, attachments }
    }

    /// Replaces `line[start..end]` with `text`, widened so it never cuts an
    /// attachment: attachments it covers are removed (and reported), later
    /// ones move. The cursor ends after `text`.
    fn splice(&mut self, start: usize, end: usize, text: &str) {
        let (mut start, mut end) = (start, end);
        for chip in &self.chips {
            if chip.start < end && chip.end > start {
                start = start.min(chip.start);
                end = end.max(chip.end);
            }
        }
        let events = &mut self.events;
        self.chips.retain(|chip| {
            let covered = chip.start >= start && chip.end <= end && chip.start < chip.end;
            if covered {
                events.push(Event::Detach { chip: chip.id });
            }
            !covered
        });
        self.line.replace_range(start..end, text);
        for chip in &mut self.chips {
            if chip.start >= end {
                chip.start = chip.start - end + start + text.len();
                chip.end = chip.end - end + start + text.len();
            }
        }
        self.cursor = start + text.len();
        self.revision += 1;
    }

    /// Replaces the whole line (history, Ctrl-C): every attachment goes.
    fn set_line(&mut self, line: String) {
        self.splice(0, self.line.len(), "");
        self.line = line;
        self.cursor = self.line.len();
    }

    /// Keys the open menu takes. With a row highlighted: Tab/Down and
    /// BackTab/Up move, Enter picks, Escape closes. On a palette (no row
    /// highlighted): Tab highlights the first row (or picks the only one),
    /// Down/Up highlight the first/last, Escape closes. Any other key
    /// closes it and then acts as usual.
    fn menu_key(&mut self, key: Key) -> Option<Action> {
        let menu = self.menu.as_mut()?;
        let count = menu.candidates.len();
        match (menu.selected, key) {
            (_, Key::Escape) => self.menu = None,
            (None, Key::Tab) if count == 1 => self.pick(0),
            (None, Key::Tab | Key::Down) => menu.selected = Some(0),
            (None, Key::Up | Key::BackTab) => menu.selected = Some(count - 1),
            (Some(at), Key::Tab | Key::Down) => menu.selected = Some((at + 1) % count),
            (Some(at), Key::BackTab | Key::Up) => menu.selected = Some((at + count - 1) % count),
            (Some(at), Key::Enter) => self.pick(at),
            (Some(_), Key::Interrupt) => self.menu = None,
            _ => {
                self.menu = None;
                return None;
            }
        }
        Some(Action::Redraw)
    }

    fn pick(&mut self, at: usize) {
        let Some(menu) = self.menu.take() else { return };
        let Some(choice) = menu.candidates.into_iter().nth(at) else {
            return;
        };
        match choice.pick {
            Pick::Insert => {
                let replacement = sanitize_line(&choice.replacement).into_owned();
                self.insert_choice(menu.word_start, menu.word_end, &replacement);
            }
            Pick::Attach { server, uri } => {
                // The URI is the server's: drawn only once made safe.
                let label = sanitize_line(&ResourceRead::new(uri.as_str(), 0).label()).into_owned();
                self.splice(menu.word_start, menu.word_end, &label);
                let id = self.next_chip;
                self.next_chip += 1;
                let end = menu.word_start + label.len();
                let at = self.chips.partition_point(|c| c.start < menu.word_start);
                self.chips.insert(
                    at,
                    Chip {
                        id,
                        start: menu.word_start,
                        end,
                        pending: true,
                    },
                );
                if !self.line[end..].starts_with(' ') {
                    self.splice(end, end, " ");
                } else {
                    self.cursor = end + 1;
                }
                self.events.push(Event::Attach {
                    chip: id,
                    server,
                    uri,
                });
            }
        }
    }

    /// Answers an [`Action::Complete`]: one candidate is inserted at once
    /// (the longest common prefix of several is, too), several open the
    /// menu with the first row highlighted. Candidates for a line that
    /// changed since are dropped.
    pub(crate) fn offer(&mut self, line: &str, word_start: usize, candidates: Vec<Candidate>) {
        if line != self.line || word_start > self.cursor || candidates.is_empty() {
            return;
        }
        let word_end = self.cursor;
        // What is inserted is what is drawn: a server's name with a
        // control or BIDI character goes in as its escaped form (which the
        // shell's lookups accept), never raw.
        let candidates: Vec<Candidate> = candidates
            .into_iter()
            .map(|mut c| {
                if let Cow::Owned(safe) = sanitize_line(&c.replacement) {
                    c.replacement = safe;
                }
                c
            })
            .collect();
        if let [only] = candidates.as_slice()
            && only.pick == Pick::Insert
        {
            let replacement = only.replacement.clone();
            self.insert_choice(word_start, word_end, &replacement);
            return;
        }
        let common = common_prefix(
            candidates
                .iter()
                .filter(|c| c.pick == Pick::Insert)
                .map(|c| c.replacement.as_str()),
        );
        // The common prefix goes in, and the menu stays open over it with
        // the first row highlighted: Enter picks it, as Tab promised.
        let mut word_end = word_end;
        if candidates.iter().all(|c| c.pick == Pick::Insert)
            && common.len() > word_end - word_start
            && common.starts_with(&self.line[word_start..word_end])
        {
            self.splice(word_start, word_end, &common);
            word_end = word_start + common.len();
        }
        self.menu = Some(Menu {
            candidates,
            selected: Some(0),
            word_start,
            word_end,
        });
    }

    /// Puts a picked `replacement` over `line[start..end]`. A replacement
    /// ending in a blank before a blank already in the line steps over
    /// that one instead of doubling it.
    fn insert_choice(&mut self, start: usize, end: usize, replacement: &str) {
        match replacement.strip_suffix(' ') {
            Some(bare) if self.line[end..].starts_with(' ') => {
                self.splice(start, end, bare);
                self.cursor += 1;
            }
            _ => self.splice(start, end, replacement),
        }
    }

    /// Puts up a palette of `candidates` for `line[start..end]`, no row
    /// highlighted, if the line and cursor are still `line` and `cursor`
    /// (else it is late, and dropped). No candidates close it. Returns
    /// whether anything changed (and needs drawing).
    pub(crate) fn suggest(
        &mut self,
        line: &str,
        cursor: usize,
        range: (usize, usize),
        candidates: Vec<Candidate>,
    ) -> bool {
        if line != self.line || cursor != self.cursor {
            return false;
        }
        if self.menu.as_ref().is_some_and(|m| m.selected.is_some()) {
            return false;
        }
        if candidates.is_empty() || range.0 > range.1 || range.1 > self.line.len() {
            return self.menu.take().is_some();
        }
        self.menu = Some(Menu {
            candidates,
            selected: None,
            word_start: range.0,
            word_end: range.1,
        });
        true
    }

    /// Whether the completion menu is open.
    #[cfg(test)]
    pub(crate) fn menu_open(&self) -> bool {
        self.menu.is_some()
    }

    /// Redraws attachment `chip` with `label`; `pending` says whether its
    /// read still runs. An attachment no longer in the line is left alone.
    pub(crate) fn relabel(&mut self, chip: u64, label: &str, pending: bool) {
        let Some(at) = self.chips.iter().position(|c| c.id == chip) else {
            return;
        };
        let (start, end) = (self.chips[at].start, self.chips[at].end);
        let cursor = self.cursor;
        let grow = label.len() as isize - (end - start) as isize;
        self.line.replace_range(start..end, label);
        for c in &mut self.chips[at + 1..] {
            c.start = (c.start as isize + grow) as usize;
            c.end = (c.end as isize + grow) as usize;
        }
        let chip = &mut self.chips[at];
        chip.end = start + label.len();
        chip.pending = pending;
        self.cursor = if cursor >= end {
            (cursor as isize + grow) as usize
        } else {
            cursor
        };
        self.menu = None;
        self.revision += 1;
    }

    /// Takes attachment `chip` out of the line (its read failed); no
    /// [`Event::Detach`] is reported for it.
    pub(crate) fn remove_chip(&mut self, chip: u64) {
        let Some(found) = self.chips.iter().find(|c| c.id == chip) else {
            return;
        };
        let (start, mut end) = (found.start, found.end);
        if self.line[end..].starts_with(' ') {
            end += 1;
        }
        let cursor = self.cursor;
        self.splice(start, end, "");
        self.events.retain(|e| *e != Event::Detach { chip });
        self.cursor = if cursor >= end {
            cursor - (end - start)
        } else {
            cursor.min(start)
        };
        self.menu = None;
    }

    fn remember(&mut self, line: &str) {
        let line = line.trim();
        if !line.is_empty() && self.history.last().map(String::as_str) != Some(line) {
            self.history.push(line.to_owned());
            if self.history.len() > HISTORY_LINES {
                let over = self.history.len() - HISTORY_LINES;
                self.history.drain(..over);
            }
        }
        self.browsing = self.history.len();
        self.draft.clear();
    }

    fn browse(&mut self, step: isize) {
        let target = self.browsing as isize + step;
        if target < 0 || target > self.history.len() as isize {
            return;
        }
        if self.browsing == self.history.len() {
            self.draft = self.line.clone();
        }
        self.browsing = target as usize;
        let line = self
            .history
            .get(self.browsing)
            .cloned()
            .unwrap_or_else(|| self.draft.clone());
        self.set_line(line);
    }

    /// The bytes that erase the prompt line and the `below` rows drawn
    /// under it (the menu, as [`Editor::rows_below`] counted it when it
    /// was drawn), leaving the cursor at the start of the line.
    ///
    /// The line itself is erased on its own (`ESC [2K`) and the rows
    /// under it from the next row down (`ESC [1B ESC [J ESC [1A`): an
    /// erase-below from the top-left corner is a whole-screen clear to
    /// tmux, which would keep a copy of the screen in its scrollback for
    /// every line printed after Ctrl-L.
    pub(crate) fn clear(below: usize) -> &'static str {
        if below == 0 {
            "\r\x1b[2K"
        } else {
            "\r\x1b[2K\x1b[1B\x1b[J\x1b[1A"
        }
    }

    /// How many rows [`Editor::render`] draws under the prompt line (the
    /// menu's) for a terminal `width` columns wide.
    pub(crate) fn rows_below(&self, width: usize) -> usize {
        self.menu
            .as_ref()
            .map_or(0, |menu| menu_rows(menu, width.max(8)).len())
    }

    /// The bytes that draw the prompt line (and the menu) for a terminal
    /// `width` columns wide, ending with the cursor where it belongs.
    ///
    /// What was drawn before is erased: the line's row whole (`ESC [2K`),
    /// and the rows under it after the line's text (`ESC [J` once the
    /// prompt is written, never from the row's first column):
    /// from the top-left corner, as after Ctrl-L, an erase-below is a
    /// whole-screen clear to tmux, which keeps a copy of the screen in
    /// its scrollback each time, so every keystroke would add one.
    pub(crate) fn render(&self, width: usize) -> String {
        let width = width.max(8);
        let prompt_width = text_width(&self.prompt);
        let room = width.saturating_sub(prompt_width + 1).max(4);
        // Scroll sideways so the cursor is on screen.
        let before = &self.line[..self.cursor];
        let mut start = 0;
        while text_width(&before[start..]) >= room {
            start += before[start..].chars().next().map_or(1, char::len_utf8);
        }
        let mut shown = String::new();
        let mut used = 0;
        for c in self.line[start..].chars() {
            let w = width_of(c);
            if used + w > room {
                break;
            }
            used += w;
            shown.push(c);
        }
        let cursor_col = prompt_width + text_width(&self.line[start..self.cursor]);
        let mut out = String::from("\r\x1b[2K");
        out.push_str(&self.prompt);
        out.push_str(&shown);
        out.push_str("\x1b[J");
        if let Some(menu) = &self.menu {
            let rows = menu_rows(menu, width);
            for row in &rows {
                out.push_str("\r\n");
                out.push_str(row);
            }
            let _ = write!(out, "\x1b[{}A", rows.len());
        }
        out.push('\r');
        if cursor_col > 0 {
            let _ = write!(out, "\x1b[{cursor_col}C");
        }
        out
    }
}

/// `prompt`, or `> ` for one that takes no column: the line's redraw
/// erases after the prompt ([`Editor::render`]), never from the row's
/// first column.
fn shown_prompt(prompt: &str) -> &str {
    if text_width(prompt) == 0 {
        "> "
    } else {
        prompt
    }
}

/// The menu's visible rows: a window of [`MENU_ROWS`] around the selected
/// candidate, the selection in reverse video, each cut to `width`.
fn menu_rows(menu: &Menu, width: usize) -> Vec<String> {
    let count = menu.candidates.len();
    let selected = menu.selected.unwrap_or(0);
    let first = selected
        .saturating_sub(MENU_ROWS - 1)
        .min(count.saturating_sub(MENU_ROWS));
    let mut rows = Vec::new();
    // Notes start in one column: after the widest text of the rows shown,
    // at most half the width (a longer text pushes its own note along).
    let column = menu
        .candidates
        .iter()
        .skip(first)
        .take(MENU_ROWS)
        .map(|c| text_width(&sanitize_line(&c.replacement)))
        .max()
        .unwrap_or(0)
        .min(width / 2);
    for (i, candidate) in menu
        .candidates
        .iter()
        .enumerate()
        .skip(first)
        .take(MENU_ROWS)
    {
        // Every row passes the one sanitizer: a candidate's text and note
        // may be a server's.
        let shown = sanitize_line(&candidate.replacement);
        let mut text = format!("  {shown}");
        if !candidate.note.is_empty() {
            let pad = column.saturating_sub(text_width(&shown)) + 2;
            text.extend(std::iter::repeat_n(' ', pad));
            text.push_str(&sanitize_line(&candidate.note));
        }
        let text = cut(&text, width.saturating_sub(1));
        if menu.selected == Some(i) {
            rows.push(format!("\x1b[7m{text}\x1b[0m"));
        } else {
            rows.push(text);
        }
    }
    if count > MENU_ROWS {
        rows.push(cut(
            &match menu.selected {
                Some(at) => format!("  ({} of {count})", at + 1),
                None => format!("  ({count} in all; Tab to choose)"),
            },
            width.saturating_sub(1),
        ));
    }
    rows
}

/// `text` cut to at most `columns` columns.
fn cut(text: &str, columns: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = width_of(c);
        if used + w > columns {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

/// Where the word ending at `cursor` starts: after the last space, or after
/// `=` in a `key=value` argument, or after `@` for a resource.
pub(crate) fn word_start(line: &str, cursor: usize) -> usize {
    line[..cursor].rfind([' ', '=']).map_or(0, |i| i + 1)
}

/// Where the word before `cursor` starts, skipping spaces first (Ctrl-W).
fn word_before(line: &str, cursor: usize) -> usize {
    let trimmed = line[..cursor].trim_end_matches(' ');
    trimmed.rfind(' ').map_or(0, |i| i + 1)
}

fn common_prefix<'a>(mut words: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = words.next() else {
        return String::new();
    };
    let mut common = first.to_owned();
    for word in words {
        let shared = common
            .char_indices()
            .zip(word.chars())
            .find(|((_, a), b)| a != b)
            .map_or(common.len().min(word.len()), |((i, _), _)| i);
        common.truncate(shared);
    }
    common
}

/// Columns `text` takes on a terminal.
pub(crate) fn text_width(text: &str) -> usize {
    text.chars().map(width_of).sum()
}

/// Columns one character takes: see the module docs.
pub(crate) fn width_of(c: char) -> usize {
    let c = c as u32;
    match c {
        0x0300..=0x036f | 0x1ab0..=0x1aff | 0x20d0..=0x20ff | 0xfe20..=0xfe2f | 0x200b..=0x200f => {
            0
        }
        0x1100..=0x115f
        | 0x2e80..=0x303e
        | 0x3041..=0x33ff
        | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff
        | 0xa000..=0xa4cf
        | 0xac00..=0xd7a3
        | 0xf900..=0xfaff
        | 0xfe30..=0xfe4f
        | 0xff00..=0xff60
        | 0xffe0..=0xffe6
        | 0x1f300..=0x1f64f
        | 0x1f900..=0x1f9ff
        | 0x20000..=0x3fffd => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(editor: &mut Editor, text: &str) {
        for c in text.chars() {
            editor.key(Key::Char(c));
        }
    }

    fn candidate(text: &str) -> Candidate {
        Candidate::text(text, "")
    }

    fn submitted(line: &str) -> Action {
        Action::Submit {
            line: line.into(),
            attachments: Vec::new(),
        }
    }

    #[test]
    fn typing_editing_and_enter_submit_the_line() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/tols");
        editor.key(Key::Left);
        editor.key(Key::Left);
        editor.key(Key::Char('o'));
        assert_eq!(editor.line(), "/tools");
        editor.key(Key::Home);
        editor.key(Key::Delete);
        editor.key(Key::End);
        editor.key(Key::Backspace);
        assert_eq!(editor.line(), "tool");
        assert_eq!(editor.key(Key::Enter), submitted("tool"));
        assert_eq!(editor.line(), "");
    }

    #[test]
    fn multibyte_characters_are_edited_whole() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "é日x");
        editor.key(Key::Left);
        editor.key(Key::Backspace);
        assert_eq!(editor.line(), "éx");
        editor.key(Key::Left);
        editor.key(Key::Delete);
        assert_eq!(editor.line(), "x");
    }

    #[test]
    fn kill_keys_cut_words_and_halves() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/call fs read_file  ");
        editor.key(Key::KillWord);
        assert_eq!(editor.line(), "/call fs ");
        editor.key(Key::Left);
        editor.key(Key::KillToEnd);
        assert_eq!(editor.line(), "/call fs");
        editor.key(Key::Left);
        editor.key(Key::KillToStart);
        assert_eq!(editor.line(), "s");
    }

    #[test]
    fn history_browses_back_and_returns_to_the_draft() {
        let mut editor = Editor::new("> ", vec!["/mcp".into()]);
        typed(&mut editor, "/tools");
        editor.key(Key::Enter);
        typed(&mut editor, "/do");
        editor.key(Key::Up);
        assert_eq!(editor.line(), "/tools");
        editor.key(Key::Up);
        assert_eq!(editor.line(), "/mcp");
        editor.key(Key::Up);
        assert_eq!(editor.line(), "/mcp");
        editor.key(Key::Down);
        editor.key(Key::Down);
        assert_eq!(editor.line(), "/do");
        // The same line twice in a row is kept once; blank lines never.
        editor.key(Key::KillToStart);
        typed(&mut editor, "/tools");
        editor.key(Key::Enter);
        editor.key(Key::Enter);
        assert_eq!(editor.history(), ["/mcp", "/tools"]);
    }

    #[test]
    fn history_keeps_the_newest_lines_only() {
        let mut editor = Editor::new("> ", vec![]);
        for i in 0..HISTORY_LINES + 5 {
            typed(&mut editor, &format!("/call {i}"));
            editor.key(Key::Enter);
        }
        assert_eq!(editor.history().len(), HISTORY_LINES);
        assert_eq!(editor.history()[0], "/call 5");
    }

    #[test]
    fn ctrl_d_ends_input_only_on_an_empty_line_and_ctrl_c_clears() {
        let mut editor = Editor::new("> ", vec![]);
        assert_eq!(editor.key(Key::EndOfInput), Action::EndOfInput);
        typed(&mut editor, "ab");
        editor.key(Key::Home);
        assert_eq!(editor.key(Key::EndOfInput), Action::Redraw);
        assert_eq!(editor.line(), "b");
        assert_eq!(editor.key(Key::Interrupt), Action::Interrupt);
        assert_eq!(editor.line(), "");
    }

    #[test]
    fn tab_asks_for_the_word_at_the_cursor_and_one_candidate_is_inserted() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/call ev");
        let Action::Complete {
            line,
            word_start,
            cursor,
        } = editor.key(Key::Tab)
        else {
            panic!("Tab completes");
        };
        assert_eq!((line.as_str(), word_start, cursor), ("/call ev", 6, 8));
        editor.offer(&line, word_start, vec![candidate("everything:")]);
        assert_eq!(editor.line(), "/call everything:");
        assert!(!editor.menu_open());
    }

    #[test]
    fn several_candidates_share_their_prefix_then_open_a_menu() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/d");
        editor.offer("/d", 0, vec![candidate("/doctor"), candidate("/doc2")]);
        assert_eq!(editor.line(), "/doc");
        assert!(editor.menu_open());
        editor.key(Key::Tab);
        editor.key(Key::Enter);
        assert_eq!(editor.line(), "/doc2");
        assert!(!editor.menu_open());
    }

    #[test]
    fn one_tab_then_enter_picks_the_first_candidate_instead_of_submitting() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/d");
        editor.offer("/d", 0, vec![candidate("/doctor "), candidate("/doc2 ")]);
        assert_eq!(editor.line(), "/doc");
        assert_eq!(editor.key(Key::Enter), Action::Redraw, "Enter picked");
        assert_eq!(editor.line(), "/doctor ");
    }

    #[test]
    fn a_picked_word_ending_in_a_blank_steps_over_the_blank_already_there() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/call ev x=1");
        for _ in 0.." x=1".len() {
            editor.key(Key::Left);
        }
        editor.offer("/call ev x=1", 6, vec![candidate("everything:echo ")]);
        assert_eq!(editor.line(), "/call everything:echo x=1");
        assert_eq!(editor.cursor(), "/call everything:echo ".len());
    }

    #[test]
    fn ctrl_l_asks_for_a_clear_screen_and_keeps_the_line() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/mc");
        assert_eq!(editor.key(Key::Redraw), Action::ClearScreen);
        assert_eq!(editor.line(), "/mc");
    }

    #[test]
    fn palette_notes_start_in_one_column() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/");
        let row = |text: &str, note: &str| Candidate::text(text, note);
        editor.offer(
            "/",
            0,
            vec![
                row("/mcp", "servers"),
                row("/doctor", "health"),
                row("/quit", "leave"),
            ],
        );
        let drawn = editor.render(80);
        let columns: Vec<usize> = ["servers", "health", "leave"]
            .iter()
            .map(|note| {
                let line = drawn
                    .split("\r\n")
                    .find(|l| l.contains(note))
                    .expect("a row");
                let plain = line.replace("\x1b[7m", "").replace("\x1b[0m", "");
                plain.find(note).expect("the note")
            })
            .collect();
        assert_eq!(columns, [11, 11, 11], "{drawn:?}");
    }

    #[test]
    fn a_typed_key_closes_the_menu_and_still_types() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/");
        editor.offer("/", 0, vec![candidate("/mcp"), candidate("/tools")]);
        assert!(editor.menu_open());
        editor.key(Key::Char('t'));
        assert!(!editor.menu_open());
        assert_eq!(editor.line(), "/t");
    }

    #[test]
    fn late_candidates_for_a_changed_line_are_dropped() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/to");
        editor.offer("/t", 0, vec![candidate("/tools")]);
        assert_eq!(editor.line(), "/to");
    }

    #[test]
    fn key_value_words_complete_after_the_equals_sign() {
        assert_eq!(word_start("/mcp:e:p city=Pa", 16), 14);
        assert_eq!(word_start("/mcp", 4), 0);
    }

    #[test]
    fn render_draws_prompt_and_line_and_places_the_cursor() {
        let mut editor = Editor::new("rho> ", vec![]);
        typed(&mut editor, "/mcp");
        editor.key(Key::Left);
        assert_eq!(editor.render(80), "\r\x1b[2Krho> /mcp\x1b[J\r\x1b[8C");
    }

    /// After Ctrl-L the line sits in the top-left corner, where an erase
    /// below (`ESC [J`) is a whole-screen clear that tmux copies into its
    /// scrollback: no drawing erases below from the start of the line's
    /// row, and what it must erase (the line's old tail, an old menu)
    /// goes all the same.
    #[test]
    fn no_redraw_erases_below_from_the_start_of_the_lines_row() {
        let erases_from_column_one = |drawn: &str| {
            drawn.contains("\r\x1b[J") || drawn.contains("\n\x1b[J") || drawn.starts_with("\x1b[J")
        };
        for prompt in ["rho> ", "", "\u{200b}"] {
            let mut editor = Editor::new(prompt, vec![]);
            assert!(!erases_from_column_one(&editor.render(80)), "{prompt:?}");
            typed(&mut editor, "/");
            editor.offer("/", 0, vec![candidate("/mcp"), candidate("/tools")]);
            let with_menu = editor.render(80);
            assert_eq!(editor.rows_below(80), 2);
            assert!(!erases_from_column_one(&with_menu), "{with_menu:?}");
            editor.key(Key::Char('m'));
            let drawn = editor.render(80);
            assert_eq!(editor.rows_below(80), 0);
            assert!(
                drawn.contains("/m\x1b[J"),
                "the old menu is erased: {drawn:?}"
            );
            assert!(!erases_from_column_one(&drawn), "{drawn:?}");
        }
        for below in [0, 3] {
            assert!(!erases_from_column_one(Editor::clear(below)), "{below}");
        }
        assert!(
            Editor::clear(3).contains("\x1b[1B\x1b[J"),
            "rows under the line go"
        );
    }

    #[test]
    fn a_long_line_scrolls_to_keep_the_cursor_on_screen() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, &"x".repeat(50));
        let drawn = editor.render(20);
        let visible = drawn
            .trim_start_matches("\r\x1b[2K> ")
            .split('\x1b')
            .next()
            .unwrap()
            .to_owned();
        assert!(visible.len() < 20, "{visible:?}");
        assert!(drawn.ends_with(&format!("\x1b[{}C", 2 + visible.len())));
    }

    #[test]
    fn the_menu_draws_under_the_line_and_returns_the_cursor() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/");
        editor.offer(
            "/",
            0,
            vec![Candidate::text("/mcp", "status"), candidate("/tools")],
        );
        let drawn = editor.render(40);
        assert_eq!(
            drawn,
            "\r\x1b[2K> /\x1b[J\r\n\x1b[7m  /mcp    status\x1b[0m\r\n  /tools\x1b[2A\r\x1b[3C"
        );
    }

    fn attach(uri: &str) -> Candidate {
        Candidate {
            replacement: uri.into(),
            note: "s".into(),
            pick: Pick::Attach {
                server: "s".into(),
                uri: uri.into(),
            },
        }
    }

    #[test]
    fn a_palette_highlights_nothing_so_typing_and_enter_go_on() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/mcp:e:p dept=E");
        let line = editor.line().to_owned();
        editor.suggest(
            &line,
            15,
            (14, 15),
            vec![candidate("Eng"), candidate("Eco")],
        );
        assert!(editor.menu_open());
        assert!(!editor.render(80).contains("\x1b[7m"), "no row highlighted");
        // A late palette for another line is dropped.
        editor.key(Key::Escape);
        editor.suggest("/mcp:e:p dept=", 14, (14, 14), vec![candidate("Eng")]);
        assert!(!editor.menu_open());
        editor.suggest(
            &line,
            15,
            (14, 15),
            vec![candidate("Eng"), candidate("Eco")],
        );
        assert_eq!(editor.key(Key::Enter), submitted("/mcp:e:p dept=E"));
    }

    #[test]
    fn tab_on_a_palette_highlights_then_enter_replaces_the_value_alone() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/mcp:e:p dept=Ex name=Bo");
        // The cursor in the middle of `dept`'s value.
        for _ in 0..9 {
            editor.key(Key::Left);
        }
        let (line, cursor) = (editor.line().to_owned(), editor.cursor());
        assert_eq!(cursor, 15);
        editor.suggest(
            &line,
            cursor,
            (14, 16),
            vec![candidate("Eng"), candidate("'Ex Co'")],
        );
        editor.key(Key::Tab);
        editor.key(Key::Down);
        editor.key(Key::Enter);
        assert_eq!(editor.line(), "/mcp:e:p dept='Ex Co' name=Bo");
        // One row: Tab picks it at once.
        let (line, cursor) = (editor.line().to_owned(), editor.cursor());
        editor.suggest(&line, cursor, (14, 21), vec![candidate("Sales")]);
        editor.key(Key::Tab);
        assert_eq!(editor.line(), "/mcp:e:p dept=Sales name=Bo");
    }

    #[test]
    fn a_picked_resource_is_one_unit_that_backspace_removes_and_reports() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "see @arch");
        editor.suggest("see @arch", 9, (4, 9), vec![attach("a://arch")]);
        editor.key(Key::Tab);
        assert_eq!(editor.line(), "see [resource: a://arch · reading] ");
        assert_eq!(
            editor.take_events(),
            [Event::Attach {
                chip: 0,
                server: "s".into(),
                uri: "a://arch".into()
            }]
        );
        typed(&mut editor, "now");
        // Enter is refused while the read runs.
        assert!(matches!(editor.key(Key::Enter), Action::Notice(_)));
        // The cursor steps over the attachment whole.
        for _ in 0..4 {
            editor.key(Key::Left);
        }
        editor.key(Key::Left);
        assert_eq!(editor.cursor(), 4);
        editor.key(Key::Right);
        editor.key(Key::Backspace);
        assert_eq!(editor.line(), "see  now");
        assert_eq!(editor.take_events(), [Event::Detach { chip: 0 }]);
    }

    #[test]
    fn a_ready_attachment_is_relabelled_and_submitted_apart_from_the_text() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "@a");
        editor.suggest("@a", 2, (0, 2), vec![attach("a://a"), attach("a://b")]);
        editor.key(Key::Down);
        editor.key(Key::Enter);
        typed(&mut editor, "read it");
        editor.take_events();
        editor.relabel(0, "[resource: a://a]", false);
        assert_eq!(editor.line(), "[resource: a://a] read it");
        assert_eq!(editor.cursor(), editor.line().len());
        assert_eq!(
            editor.key(Key::Enter),
            Action::Submit {
                line: " read it".into(),
                attachments: vec![0]
            }
        );
        assert_eq!(editor.history(), ["read it"]);
    }

    /// A raw control, C1 or BIDI override character in drawn bytes
    /// (the editor's own `ESC [` sequences taken out first).
    fn raw_server_control(drawn: &str) -> Option<char> {
        let own = drawn
            .replace("\x1b[J", "")
            .replace("\x1b[2K", "")
            .replace("\x1b[7m", "")
            .replace("\x1b[0m", "")
            .replace("\r\n", "");
        let own = without_cursor_moves(&own);
        own.chars().find(|c| is_control(*c))
    }

    /// `drawn` without the editor's cursor moves (`ESC [ n A`, `ESC [ n C`)
    /// and its lone CRs.
    fn without_cursor_moves(drawn: &str) -> String {
        let mut out = String::new();
        let mut rest = drawn;
        while let Some(at) = rest.find("\x1b[") {
            out.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            match after[digits..].chars().next() {
                Some('A' | 'C') if digits > 0 => rest = &after[digits + 1..],
                _ => {
                    out.push('\x1b');
                    rest = &rest[at + 1..];
                }
            }
        }
        out.push_str(rest);
        out.replace('\r', "")
    }

    #[test]
    fn hostile_candidates_are_drawn_and_inserted_escaped_never_raw() {
        let evil = "/mcp:h:evil\x1b]0;pwned\x07|\x1b[2J|\r\x1b[K|\u{9b}31m\u{202e} ";
        for width in [40, 120] {
            let mut editor = Editor::new("> ", vec![]);
            typed(&mut editor, "/mcp:h:");
            let line = editor.line().to_owned();
            editor.offer(
                &line,
                0,
                vec![
                    Candidate::text(evil, "note \x1b]0;pwned\x07\u{202e}"),
                    candidate("/mcp:h:plain "),
                ],
            );
            let drawn = editor.render(width);
            assert_eq!(raw_server_control(&drawn), None, "{drawn:?}");
            assert!(drawn.contains("evil\\x1b]0;pwned"), "{drawn:?}");
            editor.key(Key::Enter);
            assert_eq!(
                editor.line(),
                "/mcp:h:evil\\x1b]0;pwned\\x07|\\x1b[2J|\\r\\x1b[K|\\u{9b}31m\\u{202e} "
            );
            assert_eq!(raw_server_control(&editor.render(width)), None);
        }
        // One candidate is inserted at once, escaped too.
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "/mcp:h:e");
        editor.offer("/mcp:h:e", 0, vec![candidate(evil)]);
        assert!(!editor.line().contains(is_control), "{:?}", editor.line());
        assert!(editor.line().contains("\\u{202e}"));
    }

    #[test]
    fn typed_or_pasted_control_and_bidi_characters_never_enter_the_line() {
        let mut editor = Editor::new("> ", vec![]);
        for c in ['a', '\u{202e}', '\u{9b}', '\u{200f}', 'b'] {
            editor.key(Key::Char(c));
        }
        assert_eq!(editor.line(), "ab");
    }

    #[test]
    fn a_hostile_uri_is_drawn_safe_and_still_read_as_sent() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "@x");
        editor.suggest("@x", 2, (0, 2), vec![attach("a://x\x1b[2J")]);
        editor.key(Key::Tab);
        assert!(!editor.line().contains('\x1b'), "{:?}", editor.line());
        assert_eq!(
            editor.take_events(),
            [Event::Attach {
                chip: 0,
                server: "s".into(),
                uri: "a://x\x1b[2J".into()
            }]
        );
    }

    #[test]
    fn a_failed_attachment_leaves_without_a_detach_and_kills_report_theirs() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, "@x");
        editor.suggest("@x", 2, (0, 2), vec![attach("a://x")]);
        editor.key(Key::Tab);
        typed(&mut editor, "tail");
        editor.take_events();
        editor.remove_chip(0);
        assert_eq!(editor.line(), "tail");
        assert_eq!(editor.cursor(), 4);
        assert!(editor.take_events().is_empty());
        // Ctrl-U over an attachment removes it and says so.
        typed(&mut editor, " @y");
        editor.suggest("tail @y", 7, (5, 7), vec![attach("a://y")]);
        editor.key(Key::Tab);
        editor.take_events();
        editor.key(Key::KillToStart);
        assert_eq!(editor.line(), "");
        assert_eq!(editor.take_events(), [Event::Detach { chip: 1 }]);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(text_width("日本"), 4);
        assert_eq!(text_width("e\u{301}"), 1);
        assert_eq!(text_width("ab"), 2);
    }
}
