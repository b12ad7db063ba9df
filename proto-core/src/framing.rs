//! Newline-delimited JSON framing for the stdio transport.
//!
//! An MCP server on stdio writes one JSON-RPC message per line. This module
//! owns turning the arbitrary chunks a pipe delivers back into those lines:
//! it strips the `\n` (and a `\r` before it), skips blank lines, and holds
//! memory to a fixed cap however the peer misbehaves. A line longer than the
//! cap is reported once and dropped as its bytes arrive, so a server that
//! writes gigabytes without a newline costs nothing but the time to skip
//! them. What a line means is the JSON-RPC layer's business, not this one's.

use std::collections::VecDeque;

/// The default cap on one line: 16 MiB, room for any sane JSON-RPC message
/// while keeping a runaway peer from exhausting memory.
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

/// Why a line was not delivered. Both are the peer's fault and both are
/// recoverable: the decoder has already skipped past the bad line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A line had more than `limit` bytes before its newline. Its bytes
    /// were discarded; decoding resumes after its newline.
    #[error(
        "the server wrote a line longer than {limit} bytes; it was discarded. \
         Each JSON-RPC message must be on one line under that limit"
    )]
    TooLong {
        /// The cap in force, in bytes.
        limit: usize,
    },
    /// A line was not valid UTF-8, so it cannot be JSON. It was skipped.
    #[error(
        "the server wrote a {len}-byte line that is not valid UTF-8 \
         (first bad byte at offset {valid_up_to}); it was skipped. \
         MCP messages must be UTF-8 JSON"
    )]
    NotUtf8 {
        /// Length of the offending line in bytes.
        len: usize,
        /// Offset of the first byte that is not valid UTF-8.
        valid_up_to: usize,
    },
}

/// Splits a byte stream into newline-delimited lines, bounded in memory.
///
/// Feed chunks with [`push`](Self::push), drain with
/// [`next_line`](Self::next_line) until it returns `None`, and at end of
/// stream call [`finish`](Self::finish) until it returns `None`.
///
/// # Implementation note
///
/// Every pushed byte is examined exactly once: `push` cuts complete lines
/// off the chunk immediately and queues them, and only the unterminated tail
/// is kept, in a buffer that can never exceed the cap. There is therefore no
/// rescanning and no buffer compaction, and many tiny pushes cost linear
/// time. Memory is the cap plus whatever complete lines the caller has not
/// drained yet (at most the bytes it pushed since the last drain).
#[derive(Debug)]
pub struct LineDecoder {
    max_line: usize,
    /// Complete lines (or errors) in stream order, waiting for `next_line`.
    ready: VecDeque<Result<Vec<u8>, FrameError>>,
    /// Bytes held in `ready`.
    ready_bytes: usize,
    /// The unterminated tail of the stream; never longer than `max_line`.
    partial: Vec<u8>,
    /// Inside an oversized line already reported: drop bytes up to its `\n`.
    discarding: bool,
}

impl Default for LineDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE)
    }
}

impl LineDecoder {
    /// A decoder that rejects lines longer than `max_line` bytes. The count
    /// includes a trailing `\r` but not the `\n`.
    pub fn new(max_line: usize) -> Self {
        Self {
            max_line,
            ready: VecDeque::new(),
            ready_bytes: 0,
            partial: Vec::new(),
            discarding: false,
        }
    }

    /// Feeds the next chunk of the stream, split anywhere.
    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            if self.discarding {
                match newline {
                    Some(at) => {
                        self.discarding = false;
                        bytes = &bytes[at + 1..];
                        continue;
                    }
                    None => return,
                }
            }
            let (piece, rest) = match newline {
                Some(at) => (&bytes[..at], Some(&bytes[at + 1..])),
                None => (bytes, None),
            };
            if self.partial.len() + piece.len() > self.max_line {
                self.partial = Vec::new();
                self.enqueue(Err(FrameError::TooLong {
                    limit: self.max_line,
                }));
                // The newline, if this chunk has it, ends the bad line here.
                self.discarding = rest.is_none();
            } else if rest.is_some() {
                let line = if self.partial.is_empty() {
                    piece.to_vec()
                } else {
                    let mut line = std::mem::take(&mut self.partial);
                    line.extend_from_slice(piece);
                    line
                };
                self.complete(line);
            } else {
                self.partial.extend_from_slice(piece);
            }
            bytes = rest.unwrap_or_default();
        }
    }

    /// The next complete line, without its `\n` or a `\r` before it. Blank
    /// lines are skipped. `None` means more input is needed.
    #[must_use]
    pub fn next_line(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        let item = self.ready.pop_front()?;
        if let Ok(line) = &item {
            self.ready_bytes -= line.len();
        }
        Some(item)
    }

    /// At end of stream: first any complete lines not yet drained, then the
    /// unterminated final line, if it is not blank. Call until `None`.
    #[must_use]
    pub fn finish(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        if let Some(item) = self.next_line() {
            return Some(item);
        }
        self.discarding = false;
        let tail = std::mem::take(&mut self.partial);
        self.complete(tail);
        self.next_line()
    }

    /// Bytes currently held: undrained lines plus the unterminated tail.
    pub fn buffered(&self) -> usize {
        self.ready_bytes + self.partial.len()
    }

    /// Validates a finished line and queues it, unless it is blank.
    fn complete(&mut self, mut line: Vec<u8>) {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r')) {
            return;
        }
        match std::str::from_utf8(&line) {
            Ok(_) => self.enqueue(Ok(line)),
            Err(e) => self.enqueue(Err(FrameError::NotUtf8 {
                len: line.len(),
                valid_up_to: e.valid_up_to(),
            })),
        }
    }

    fn enqueue(&mut self, item: Result<Vec<u8>, FrameError>) {
        if let Ok(line) = &item {
            self.ready_bytes += line.len();
        }
        self.ready.push_back(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn drain(decoder: &mut LineDecoder) -> Vec<Result<Vec<u8>, FrameError>> {
        std::iter::from_fn(|| decoder.next_line()).collect()
    }

    fn drain_all(decoder: &mut LineDecoder) -> Vec<Result<Vec<u8>, FrameError>> {
        let mut out = drain(decoder);
        out.extend(std::iter::from_fn(|| decoder.finish()));
        out
    }

    fn ok(s: &str) -> Result<Vec<u8>, FrameError> {
        Ok(s.as_bytes().to_vec())
    }

    const INPUT: &[u8] = b"{\"a\":1}\n{\"b\":\"\xc3\xa9\"}\r\n\n  \n{\"c\":[]}\n";

    fn expected() -> Vec<Result<Vec<u8>, FrameError>> {
        vec![ok("{\"a\":1}"), ok("{\"b\":\"é\"}"), ok("{\"c\":[]}")]
    }

    #[test]
    fn whole_input_yields_each_message() {
        let mut d = LineDecoder::default();
        d.push(INPUT);
        assert_eq!(drain_all(&mut d), expected());
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn split_at_every_byte_boundary_yields_same_lines() {
        for cut in 0..=INPUT.len() {
            let mut d = LineDecoder::default();
            d.push(&INPUT[..cut]);
            let mut got = drain(&mut d);
            d.push(&INPUT[cut..]);
            got.extend(drain_all(&mut d));
            assert_eq!(got, expected(), "cut at {cut}");
        }
    }

    #[test]
    fn one_byte_pushes_yield_same_lines() {
        let mut d = LineDecoder::default();
        let mut got = Vec::new();
        for b in INPUT {
            d.push(std::slice::from_ref(b));
            got.extend(drain(&mut d));
        }
        got.extend(drain_all(&mut d));
        assert_eq!(got, expected());
    }

    #[test]
    fn crlf_is_stripped_but_inner_cr_kept() {
        let mut d = LineDecoder::default();
        d.push(b"a\r\nb\rc\r\n");
        assert_eq!(drain(&mut d), vec![ok("a"), ok("b\rc")]);
    }

    #[test]
    fn blank_and_whitespace_lines_are_skipped() {
        let mut d = LineDecoder::default();
        d.push(b"\n\r\n \t \r\n\nx\n\n");
        assert_eq!(drain_all(&mut d), vec![ok("x")]);
    }

    #[test]
    fn oversized_line_reported_once_and_following_lines_decode() {
        let mut d = LineDecoder::new(8);
        d.push(b"ok1\n0123456789");
        d.push(b"0123456789");
        d.push(b"0123\nok2\n");
        assert_eq!(
            drain_all(&mut d),
            vec![ok("ok1"), Err(FrameError::TooLong { limit: 8 }), ok("ok2")]
        );
    }

    #[test]
    fn oversized_line_within_one_chunk_is_reported_in_order() {
        let mut d = LineDecoder::new(4);
        d.push(b"a\nlonglonglong\nb\n");
        assert_eq!(
            drain(&mut d),
            vec![ok("a"), Err(FrameError::TooLong { limit: 4 }), ok("b")]
        );
    }

    #[test]
    fn line_exactly_at_cap_passes_and_one_more_byte_fails() {
        let mut d = LineDecoder::new(4);
        d.push(b"abcd\nabcde\n");
        assert_eq!(
            drain(&mut d),
            vec![ok("abcd"), Err(FrameError::TooLong { limit: 4 })]
        );
    }

    #[test]
    fn endless_line_keeps_memory_bounded_by_cap_plus_chunk() {
        let cap = 1024;
        let chunk = [b'x'; 300];
        let mut d = LineDecoder::new(cap);
        let mut errors = 0;
        for _ in 0..10_000 {
            d.push(&chunk);
            assert!(d.buffered() <= cap + chunk.len(), "{}", d.buffered());
            errors += drain(&mut d).len();
        }
        assert_eq!(errors, 1, "the oversized line is reported once");
        d.push(b"xxx\n{}\n");
        assert_eq!(drain(&mut d), vec![ok("{}")]);
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn non_utf8_line_is_skipped_with_error() {
        let mut d = LineDecoder::default();
        d.push(b"{}\n\"\xff\xfe\"\n[]\n");
        assert_eq!(
            drain(&mut d),
            vec![
                ok("{}"),
                Err(FrameError::NotUtf8 {
                    len: 4,
                    valid_up_to: 1
                }),
                ok("[]"),
            ]
        );
    }

    #[test]
    fn finish_returns_unterminated_final_line() {
        let mut d = LineDecoder::default();
        d.push(b"{}\n[1]\r");
        assert_eq!(d.next_line(), Some(ok("{}")));
        assert_eq!(d.next_line(), None);
        assert_eq!(d.buffered(), 4);
        assert_eq!(d.finish(), Some(ok("[1]")));
        assert_eq!(d.finish(), None);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn finish_without_partial_line_returns_none() {
        let mut d = LineDecoder::default();
        assert_eq!(d.finish(), None);
        d.push(b"{}\n   ");
        assert_eq!(d.finish(), Some(ok("{}")), "undrained lines come first");
        assert_eq!(d.finish(), None, "a blank tail is not a line");
    }

    #[test]
    fn finish_inside_oversized_line_reports_nothing_more() {
        let mut d = LineDecoder::new(2);
        d.push(b"abcdef");
        assert_eq!(d.finish(), Some(Err(FrameError::TooLong { limit: 2 })));
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn error_messages_name_the_limit_and_the_fix() {
        let msg = FrameError::TooLong { limit: 8 }.to_string();
        assert!(msg.contains("8 bytes") && msg.contains("one line"), "{msg}");
        let msg = FrameError::NotUtf8 {
            len: 3,
            valid_up_to: 1,
        }
        .to_string();
        assert!(msg.contains("UTF-8"), "{msg}");
    }

    fn line() -> impl Strategy<Value = String> {
        // No '\n'; no leading/trailing blanks so no line is blank or loses a '\r'.
        "[a-zA-Z0-9{}\":,é\u{1F600} ]{0,40}"
            .prop_map(|s| s.trim().to_owned())
            .prop_filter("non-blank", |s| !s.is_empty())
    }

    proptest! {
        #[test]
        fn any_split_of_concatenated_lines_yields_the_lines(
            lines in proptest::collection::vec(line(), 0..12),
            crlf in any::<bool>(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let sep: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let mut input = Vec::new();
            for l in &lines {
                input.extend_from_slice(l.as_bytes());
                input.extend_from_slice(sep);
            }
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.push(0);
            cuts.push(input.len());
            cuts.sort_unstable();
            let mut d = LineDecoder::new(256);
            let mut got = Vec::new();
            for w in cuts.windows(2) {
                d.push(&input[w[0]..w[1]]);
                got.extend(drain(&mut d));
            }
            got.extend(drain_all(&mut d));
            let want: Vec<_> = lines.iter().map(|l| ok(l)).collect();
            prop_assert_eq!(got, want);
        }
    }
}
