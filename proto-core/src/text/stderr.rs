//! The bounded tail of a stdio server's stderr.
//!
//! A child's stderr is diagnostics for people: rho logs each line as it
//! arrives and keeps the last few, so that when a server fails to start or
//! dies, the failure reason can quote what it said. This module owns
//! splitting the raw stream into lines and keeping that tail within a fixed
//! memory budget, whatever the child writes.

use std::collections::VecDeque;

use crate::text::redact::Redactor;

/// Marks a line cut to the byte limit.
const ELLIPSIS: char = '…';

/// The last lines a child wrote to stderr, bounded in lines and in bytes
/// per line.
///
/// Memory stays within `max_lines` lines of at most `max_bytes` bytes (plus
/// an ellipsis) and one partial line of at most `max_bytes` raw bytes: a
/// child that prints a gigabyte without a newline costs only `max_bytes`.
/// Invalid UTF-8 is replaced, a trailing `\r` is trimmed, and blank lines
/// are neither kept nor returned.
#[derive(Clone, Debug)]
pub struct StderrTail {
    max_lines: usize,
    max_bytes: usize,
    /// The most recent complete lines, oldest first.
    lines: VecDeque<String>,
    /// The first `max_bytes` raw bytes of the unterminated line.
    partial: Vec<u8>,
    /// Raw length of the unterminated line, including bytes not kept.
    partial_len: usize,
    /// The last raw byte of the unterminated line, kept or not.
    partial_last: Option<u8>,
    /// Hides the server's configured secrets in every line.
    redactor: Redactor,
}

impl Default for StderrTail {
    /// 20 lines of at most 8 KiB each.
    fn default() -> Self {
        Self::new(20, 8 * 1024)
    }
}

impl StderrTail {
    /// A tail keeping the last `max_lines` lines, each cut to `max_bytes`.
    pub fn new(max_lines: usize, max_bytes: usize) -> Self {
        Self {
            max_lines,
            max_bytes,
            lines: VecDeque::new(),
            partial: Vec::new(),
            partial_len: 0,
            partial_last: None,
            redactor: Redactor::default(),
        }
    }

    /// This tail with every line passed through `redactor`, so a server
    /// printing its own token never puts it in a log line or a failure
    /// reason, whichever host reads them.
    pub fn redacting(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Feeds a raw chunk of stderr, split anywhere. Returns the non-blank
    /// lines this chunk completed, cut to `max_bytes`, for the caller to
    /// log.
    pub fn push(&mut self, mut bytes: &[u8]) -> Vec<String> {
        let mut finished = Vec::new();
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let piece = newline.map_or(bytes, |at| &bytes[..at]);
            let room = self.max_bytes.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&piece[..piece.len().min(room)]);
            self.partial_len = self.partial_len.saturating_add(piece.len());
            if let Some(&last) = piece.last() {
                self.partial_last = Some(last);
            }
            let Some(at) = newline else { break };
            bytes = &bytes[at + 1..];
            if let Some(line) = self.take_partial() {
                if self.max_lines > 0 {
                    if self.lines.len() == self.max_lines {
                        self.lines.pop_front();
                    }
                    self.lines.push_back(line.clone());
                }
                finished.push(line);
            }
        }
        finished
    }

    /// The last lines kept, oldest first, ending with the unterminated line
    /// if there is one; at most `max_lines` in all.
    pub fn lines(&self) -> Vec<String> {
        let partial = self.render_partial().filter(|_| self.max_lines > 0);
        let complete = self
            .max_lines
            .saturating_sub(usize::from(partial.is_some()));
        let skip = self.lines.len().saturating_sub(complete);
        let mut out: Vec<String> = self.lines.iter().skip(skip).cloned().collect();
        out.extend(partial);
        out
    }

    /// The tail for a failure reason, `stderr (last N lines):` followed by
    /// one indented line each; `None` when the child wrote nothing but
    /// blank lines.
    pub fn render(&self) -> Option<String> {
        let lines = self.lines();
        if lines.is_empty() {
            return None;
        }
        let noun = if lines.len() == 1 { "line" } else { "lines" };
        let mut out = format!("stderr (last {} {noun}):", lines.len());
        for line in &lines {
            out.push_str("\n  ");
            out.push_str(line);
        }
        Some(out)
    }

    /// Finishes the current line and resets the partial state.
    fn take_partial(&mut self) -> Option<String> {
        let line = self.render_partial();
        self.partial.clear();
        self.partial_len = 0;
        self.partial_last = None;
        line
    }

    /// The current unterminated line as text, `None` when blank.
    fn render_partial(&self) -> Option<String> {
        let mut len = self.partial_len;
        let mut kept = self.partial.as_slice();
        if self.partial_last == Some(b'\r') {
            len -= 1;
            if kept.len() > len {
                kept = &kept[..len];
            }
        }
        let mut cut = len > kept.len();
        if cut {
            kept = trim_incomplete_tail(kept);
        }
        let mut line = String::from_utf8_lossy(kept).into_owned();
        if line.len() > self.max_bytes {
            // Replacement characters can make the text longer than the bytes.
            line.truncate(floor_char_boundary(&line, self.max_bytes));
            cut = true;
        }
        if cut {
            line.push(ELLIPSIS);
        } else if line.trim().is_empty() {
            return None;
        }
        Some(self.redactor.redact_owned(line))
    }
}

/// `bytes` without a trailing UTF-8 sequence the byte limit cut in half.
fn trim_incomplete_tail(bytes: &[u8]) -> &[u8] {
    match bytes.utf8_chunks().last() {
        Some(chunk) if !chunk.invalid().is_empty() && chunk.invalid().len() < 4 => {
            &bytes[..bytes.len() - chunk.invalid().len()]
        }
        _ => bytes,
    }
}

/// The largest char boundary of `s` not above `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    (0..=at.min(s.len()))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redacting_tail_hides_secrets_in_logged_lines_and_the_reason() {
        let mut tail = StderrTail::default().redacting(Redactor::new(["tok-0123456789"]));
        let logged = tail.push(b"using tok-0123456789 now\nstill tok-01234");
        assert_eq!(logged, ["using <redacted> now"]);
        tail.push(b"56789 here\n");
        let reason = tail.render().expect("lines");
        assert!(!reason.contains("tok-0123456789"), "{reason}");
        assert!(reason.contains("still <redacted> here"), "{reason}");
    }

    #[test]
    fn complete_lines_are_returned_and_kept() {
        let mut tail = StderrTail::default();
        assert_eq!(tail.push(b"one\ntwo\r\nthr"), ["one", "two"]);
        assert_eq!(tail.lines(), ["one", "two", "thr"]);
        assert_eq!(tail.push(b"ee\n"), ["three"]);
        assert_eq!(tail.lines(), ["one", "two", "three"]);
    }

    #[test]
    fn lines_split_at_every_byte_give_the_same_result() {
        let input = "alpha\r\nbeta\n\ngamma é\n".as_bytes();
        for cut in 0..=input.len() {
            let mut tail = StderrTail::default();
            let mut got = tail.push(&input[..cut]);
            got.extend(tail.push(&input[cut..]));
            assert_eq!(got, ["alpha", "beta", "gamma é"], "cut at {cut}");
        }
    }

    #[test]
    fn only_the_last_lines_are_kept() {
        let mut tail = StderrTail::new(3, 100);
        for i in 0..10 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        assert_eq!(tail.lines(), ["line 7", "line 8", "line 9"]);
        tail.push(b"partial");
        assert_eq!(tail.lines(), ["line 8", "line 9", "partial"]);
    }

    #[test]
    fn long_lines_are_cut_with_an_ellipsis() {
        let mut tail = StderrTail::new(5, 4);
        assert_eq!(
            tail.push(b"abcdefgh\nabcd\nabcd\r\n"),
            ["abcd…", "abcd", "abcd"]
        );
        // A multi-byte character is never split.
        assert_eq!(tail.push("abcé\n".as_bytes()), ["abc…"]);
    }

    #[test]
    fn endless_line_keeps_memory_bounded() {
        let mut tail = StderrTail::new(20, 64);
        let chunk = [b'x'; 4096];
        for _ in 0..1000 {
            assert!(tail.push(&chunk).is_empty());
            assert!(tail.partial.len() <= 64);
        }
        let lines = tail.lines();
        assert_eq!(lines, [format!("{}…", "x".repeat(64))]);
        let done = tail.push(b"\nnext\n");
        assert_eq!(done.len(), 2);
        assert_eq!(done[1], "next");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let mut tail = StderrTail::default();
        assert_eq!(tail.push(b"bad \xff byte\n"), ["bad \u{FFFD} byte"]);
    }

    #[test]
    fn replacement_characters_do_not_exceed_the_limit() {
        let mut tail = StderrTail::new(5, 4);
        let line = &tail.push(b"\xff\xff\xff\n")[0];
        assert!(line.len() <= 4 + ELLIPSIS.len_utf8(), "{line}");
        assert!(line.ends_with(ELLIPSIS));
    }

    #[test]
    fn blank_lines_are_dropped() {
        let mut tail = StderrTail::default();
        assert!(tail.push(b"\n  \r\n\n").is_empty());
        assert_eq!(tail.render(), None);
    }

    #[test]
    fn render_is_none_before_anything_is_written() {
        assert_eq!(StderrTail::default().render(), None);
    }

    #[test]
    fn render_quotes_the_tail_indented() {
        let mut tail = StderrTail::default();
        tail.push(b"error: missing token\nexiting");
        assert_eq!(
            tail.render().as_deref(),
            Some("stderr (last 2 lines):\n  error: missing token\n  exiting")
        );
        let mut one = StderrTail::default();
        one.push(b"boom\n");
        assert_eq!(
            one.render().as_deref(),
            Some("stderr (last 1 line):\n  boom")
        );
    }

    #[test]
    fn zero_lines_keeps_nothing_but_still_returns_lines() {
        let mut tail = StderrTail::new(0, 10);
        assert_eq!(tail.push(b"a\nb"), ["a"]);
        assert!(tail.lines().is_empty());
        assert_eq!(tail.render(), None);
    }
}
