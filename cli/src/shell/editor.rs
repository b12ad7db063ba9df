//! The shell's line editor as a pure model: the line and its cursor,
//! history, the completion menu, and the bytes that draw it all.
//!
//! [`Editor::key`] applies one key and says what the shell must do
//! ([`Action`]); [`Editor::render`] gives the bytes that redraw the prompt
//! line and the menu under it for a terminal `width` columns wide. Nothing
//! here reads a terminal, so the tests drive it key by key.
//!
//! Drawing keeps to one screen line: a line longer than the terminal
//! scrolls sideways around the cursor. The menu takes up to
//! [`MENU_ROWS`] rows below the line, which the next redraw clears (`ESC
//! [J`), and the cursor is put back on the line. Text printed while a line
//! is being edited (progress, logs) goes above it: [`Editor::clear`], the
//! text, then [`Editor::render`] again.
//!
//! Widths: a character counts one column, East Asian wide characters and
//! emoji two, combining marks none. That small table (see [`width`])
//! covers what people type; a terminal that disagrees on a rare character
//! misplaces the cursor until the next redraw, nothing worse.

use std::fmt::Write as _;

use super::keys::Key;

/// How many candidates the menu shows at once.
pub(crate) const MENU_ROWS: usize = 8;

/// How many lines history keeps.
pub(crate) const HISTORY_LINES: usize = 1000;

/// One completion the menu offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// What replaces the word being completed.
    pub(crate) replacement: String,
    /// A short note shown beside it (a title, "template", a server).
    pub(crate) note: String,
}

/// What the shell must do after a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Nothing beyond a redraw.
    Redraw,
    /// The line was submitted (Enter, no menu open).
    Submit(String),
    /// Ctrl-C: cancel what runs (the line is cleared).
    Interrupt,
    /// Ctrl-D on an empty line.
    EndOfInput,
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

/// The open completion menu.
#[derive(Clone, Debug)]
struct Menu {
    candidates: Vec<Candidate>,
    selected: usize,
    /// The byte range of the line the choice replaces.
    word_start: usize,
    word_end: usize,
}

/// The line being edited and everything around it.
#[derive(Debug)]
pub(crate) struct Editor {
    prompt: String,
    line: String,
    /// A byte offset into `line`, always on a character boundary.
    cursor: usize,
    history: Vec<String>,
    /// Which history entry is shown (`history.len()` is the draft).
    browsing: usize,
    draft: String,
    menu: Option<Menu>,
}

impl Editor {
    /// An empty line after `prompt`.
    pub(crate) fn new(prompt: &str, history: Vec<String>) -> Self {
        let browsing = history.len();
        Editor {
            prompt: prompt.to_owned(),
            line: String::new(),
            cursor: 0,
            history,
            browsing,
            draft: String::new(),
            menu: None,
        }
    }

    /// The prompt in front of the line.
    pub(crate) fn set_prompt(&mut self, prompt: &str) {
        prompt.clone_into(&mut self.prompt);
    }

    /// The line as typed so far.
    #[cfg(test)]
    pub(crate) fn line(&self) -> &str {
        &self.line
    }

    /// The history, oldest first.
    pub(crate) fn history(&self) -> &[String] {
        &self.history
    }

    /// Applies one key.
    pub(crate) fn key(&mut self, key: Key) -> Action {
        if let Some(action) = self.menu_key(key) {
            return action;
        }
        match key {
            Key::Char(c) => {
                self.line.insert(self.cursor, c);
                self.cursor += c.len_utf8();
            }
            Key::Enter => {
                let line = std::mem::take(&mut self.line);
                self.cursor = 0;
                self.remember(&line);
                return Action::Submit(line);
            }
            Key::Backspace => {
                if let Some(c) = self.line[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                    self.line.remove(self.cursor);
                }
            }
            Key::Delete => {
                if self.cursor < self.line.len() {
                    self.line.remove(self.cursor);
                }
            }
            Key::Left => {
                if let Some(c) = self.line[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                }
            }
            Key::Right => {
                if let Some(c) = self.line[self.cursor..].chars().next() {
                    self.cursor += c.len_utf8();
                }
            }
            Key::Home => self.cursor = 0,
            Key::End => self.cursor = self.line.len(),
            Key::Up => self.browse(-1),
            Key::Down => self.browse(1),
            Key::KillToEnd => self.line.truncate(self.cursor),
            Key::KillToStart => {
                self.line.drain(..self.cursor);
                self.cursor = 0;
            }
            Key::KillWord => {
                let start = word_before(&self.line, self.cursor);
                self.line.drain(start..self.cursor);
                self.cursor = start;
            }
            Key::Tab => {
                return Action::Complete {
                    line: self.line.clone(),
                    word_start: word_start(&self.line, self.cursor),
                    cursor: self.cursor,
                };
            }
            Key::Interrupt => {
                self.line.clear();
                self.cursor = 0;
                self.browsing = self.history.len();
                return Action::Interrupt;
            }
            Key::EndOfInput if self.line.is_empty() => return Action::EndOfInput,
            Key::EndOfInput => {
                if self.cursor < self.line.len() {
                    self.line.remove(self.cursor);
                }
            }
            Key::BackTab | Key::Escape | Key::Redraw | Key::Unknown => {}
        }
        Action::Redraw
    }

    /// Keys the open menu takes: Tab/Down and BackTab/Up move, Enter picks,
    /// Escape closes; any other key closes it and then acts as usual.
    fn menu_key(&mut self, key: Key) -> Option<Action> {
        let menu = self.menu.as_mut()?;
        let count = menu.candidates.len();
        match key {
            Key::Tab | Key::Down => menu.selected = (menu.selected + 1) % count,
            Key::BackTab | Key::Up => menu.selected = (menu.selected + count - 1) % count,
            Key::Enter => {
                let menu = self.menu.take().expect("menu is open");
                let choice = menu.candidates[menu.selected].replacement.clone();
                self.replace(menu.word_start, menu.word_end, &choice);
            }
            Key::Escape | Key::Interrupt => self.menu = None,
            _ => {
                self.menu = None;
                return None;
            }
        }
        Some(Action::Redraw)
    }

    /// Answers an [`Action::Complete`]: one candidate is inserted at once
    /// (the longest common prefix of several is, too), several open the
    /// menu. Candidates for a line that changed since are dropped.
    pub(crate) fn offer(&mut self, line: &str, word_start: usize, candidates: Vec<Candidate>) {
        if line != self.line || word_start > self.cursor || candidates.is_empty() {
            return;
        }
        let word_end = self.cursor;
        if let [only] = candidates.as_slice() {
            let replacement = only.replacement.clone();
            self.replace(word_start, word_end, &replacement);
            return;
        }
        let common = common_prefix(candidates.iter().map(|c| c.replacement.as_str()));
        if common.len() > word_end - word_start
            && common.starts_with(&self.line[word_start..word_end])
        {
            self.replace(word_start, word_end, &common);
            return;
        }
        self.menu = Some(Menu {
            candidates,
            selected: 0,
            word_start,
            word_end,
        });
    }

    /// Whether the completion menu is open.
    #[cfg(test)]
    pub(crate) fn menu_open(&self) -> bool {
        self.menu.is_some()
    }

    fn replace(&mut self, start: usize, end: usize, text: &str) {
        self.line.replace_range(start..end, text);
        self.cursor = start + text.len();
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
        self.line = self
            .history
            .get(self.browsing)
            .cloned()
            .unwrap_or_else(|| self.draft.clone());
        self.cursor = self.line.len();
    }

    /// The bytes that erase the prompt line and the menu under it, leaving
    /// the cursor at the start of the line.
    pub(crate) fn clear(&self) -> &'static str {
        "\r\x1b[J"
    }

    /// The bytes that draw the prompt line (and the menu) for a terminal
    /// `width` columns wide, ending with the cursor where it belongs.
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
        let mut out = String::from("\r\x1b[J");
        out.push_str(&self.prompt);
        out.push_str(&shown);
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

/// The menu's visible rows: a window of [`MENU_ROWS`] around the selected
/// candidate, the selection in reverse video, each cut to `width`.
fn menu_rows(menu: &Menu, width: usize) -> Vec<String> {
    let count = menu.candidates.len();
    let first = menu
        .selected
        .saturating_sub(MENU_ROWS - 1)
        .min(count.saturating_sub(MENU_ROWS));
    let mut rows = Vec::new();
    for (i, candidate) in menu
        .candidates
        .iter()
        .enumerate()
        .skip(first)
        .take(MENU_ROWS)
    {
        let mut text = format!("  {}", candidate.replacement);
        if !candidate.note.is_empty() {
            text.push_str("  ");
            text.push_str(&candidate.note);
        }
        let text = cut(&text, width.saturating_sub(1));
        if i == menu.selected {
            rows.push(format!("\x1b[7m{text}\x1b[0m"));
        } else {
            rows.push(text);
        }
    }
    if count > MENU_ROWS {
        rows.push(cut(
            &format!("  ({} of {count})", menu.selected + 1),
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
        Candidate {
            replacement: text.to_owned(),
            note: String::new(),
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
        assert_eq!(editor.key(Key::Enter), Action::Submit("tool".into()));
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
        editor.offer("/doc", 0, vec![candidate("/doctor"), candidate("/doc2")]);
        assert!(editor.menu_open());
        editor.key(Key::Tab);
        editor.key(Key::Enter);
        assert_eq!(editor.line(), "/doc2");
        assert!(!editor.menu_open());
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
        assert_eq!(editor.render(80), "\r\x1b[Jrho> /mcp\r\x1b[8C");
    }

    #[test]
    fn a_long_line_scrolls_to_keep_the_cursor_on_screen() {
        let mut editor = Editor::new("> ", vec![]);
        typed(&mut editor, &"x".repeat(50));
        let drawn = editor.render(20);
        let visible = drawn
            .trim_start_matches("\r\x1b[J> ")
            .split('\r')
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
            vec![
                Candidate {
                    replacement: "/mcp".into(),
                    note: "status".into(),
                },
                candidate("/tools"),
            ],
        );
        let drawn = editor.render(40);
        assert_eq!(
            drawn,
            "\r\x1b[J> /\r\n\x1b[7m  /mcp  status\x1b[0m\r\n  /tools\x1b[2A\r\x1b[3C"
        );
    }

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(text_width("日本"), 4);
        assert_eq!(text_width("e\u{301}"), 1);
        assert_eq!(text_width("ab"), 2);
    }
}
