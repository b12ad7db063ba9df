//! Line framing: the stdio transport's byte stream back into messages.
//!
//! An MCP server on stdio writes one JSON-RPC message per line.
//! [`LineDecoder`] turns the arbitrary chunks a pipe delivers back into
//! those lines: it strips the `\n` (and a `\r` before it), skips blank
//! lines, and holds memory to a fixed cap however the peer misbehaves. A
//! line longer than the cap is reported once and dropped as its bytes
//! arrive, so a server that writes gigabytes without a newline costs
//! nothing but the time to skip them. What a line means is the JSON-RPC
//! layer's business, not this one's: even whether it is UTF-8, which
//! parsing the JSON checks anyway (the session asks
//! [`FrameError::not_utf8`] only of a line that did not parse).
//!
//! The cap ([`DEFAULT_MAX_LINE`], or a server's `max_message_bytes`) is
//! also the one [`super::sse`] holds each server-sent event to, and
//! [`byte_size`] is how both say it to a person.

use std::collections::VecDeque;

/// The default cap on one line: 16 MiB, room for any sane JSON-RPC message
/// while keeping a runaway peer from exhausting memory.
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

/// How many of the first bytes of a rejected line its error keeps: enough
/// to read the `id` of an answer (see [`crate::wire::jsonrpc::Peek`]) and fail
/// the request it answers at once.
pub const ERROR_HEAD: usize = 4096;

/// Why a line was not delivered. Both are the peer's fault and both are
/// recoverable: the decoder has already skipped past the bad line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameError {
    /// A line had more than `limit` bytes before its newline. Its bytes
    /// were discarded as they arrived; it is reported once its newline (or
    /// the end of the stream) is seen, with its whole length.
    #[error(
        "the server wrote a {}-byte line, over the {} limit (`max_message_bytes`); it was discarded. \
         Each JSON-RPC message must be on one line under that limit",
        crate::text::grouped(*len as u64),
        byte_size(*limit)
    )]
    TooLong {
        /// The cap in force, in bytes.
        limit: usize,
        /// The line's length in bytes (with a trailing `\r`, without `\n`).
        len: usize,
        /// Its first bytes (at most [`ERROR_HEAD`] and the cap).
        head: Vec<u8>,
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
        /// Its first bytes (at most [`ERROR_HEAD`]).
        head: Vec<u8>,
    },
}

impl FrameError {
    /// The first bytes of the rejected line.
    pub fn head(&self) -> &[u8] {
        match self {
            FrameError::TooLong { head, .. } | FrameError::NotUtf8 { head, .. } => head,
        }
    }

    /// [`FrameError::NotUtf8`] for a line that is not UTF-8, `None` for
    /// one that is. [`LineDecoder`] does not validate: a line that parses
    /// as JSON is UTF-8 already (the parser checks every string, and any
    /// other non-ASCII byte is a syntax error), so only a line that failed
    /// to parse is worth this second look.
    pub fn not_utf8(line: &[u8]) -> Option<Self> {
        let error = std::str::from_utf8(line).err()?;
        Some(FrameError::NotUtf8 {
            len: line.len(),
            valid_up_to: error.valid_up_to(),
            head: line[..line.len().min(ERROR_HEAD)].to_vec(),
        })
    }
}

/// A size for people: `16 MiB`, `64 KiB`, or bytes.
pub fn byte_size(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes}-byte")
    }
}

/// An oversized line being skipped.
#[derive(Debug)]
struct Discard {
    /// Its bytes so far.
    len: usize,
    head: Vec<u8>,
}

/// A finished line waiting for [`LineDecoder::next_line`].
#[derive(Debug)]
enum Ready {
    /// A line: `buf[start..end]`.
    Line { start: usize, end: usize },
    /// A line that was rejected.
    Rejected(FrameError),
}

/// The buffer capacity a decoder keeps between lines; a larger buffer,
/// grown for a large line, is given back once a line much smaller than it
/// has been read (so a server that answers megabytes every time keeps its
/// buffer, and one large answer does not pin its memory for the session).
const KEPT_CAPACITY: usize = 64 * 1024;

/// Splits a byte stream into newline-delimited lines, bounded in memory.
///
/// Feed chunks with [`push`](Self::push), drain with
/// [`next_line`](Self::next_line) until it returns `None`, and at end of
/// stream call [`finish`](Self::finish) until it returns `None`. Lines are
/// bytes, lent until the next call: a line that is not UTF-8 is delivered
/// too (see [`FrameError::not_utf8`]).
///
/// # Implementation note
///
/// Every pushed byte is examined exactly once, by `memchr`'s vectorized
/// search for `\n`: `push` appends the chunk to one buffer, scanning only
/// the bytes it appended, and records where each complete line lies;
/// `next_line` lends that slice. Bytes of lines already read are dropped
/// from the front of the buffer at the next `push` (when everything was
/// read, that is a `clear`, keeping the allocation), so a stream of small
/// lines allocates nothing per line and a large line is copied once, from
/// the chunks into the buffer. Memory is the cap plus whatever complete
/// lines the caller has not drained yet (at most the bytes it pushed since
/// the last drain).
#[derive(Debug)]
pub struct LineDecoder {
    max_line: usize,
    /// Lines read, lines waiting in `ready`, then from `tail` on the
    /// unterminated tail of the stream (never longer than `max_line`).
    buf: Vec<u8>,
    /// Where the unterminated tail starts in `buf`.
    tail: usize,
    /// Complete lines (or errors) in stream order, waiting for `next_line`.
    ready: VecDeque<Ready>,
    /// Bytes of the lines in `ready`.
    ready_bytes: usize,
    /// Inside an oversized line: drop bytes up to its `\n`, counting them.
    discarding: Option<Discard>,
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
            buf: Vec::new(),
            tail: 0,
            ready: VecDeque::new(),
            ready_bytes: 0,
            discarding: None,
        }
    }

    /// Feeds the next chunk of the stream, split anywhere.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.release_read();
        while !bytes.is_empty() {
            let newline = memchr::memchr(b'\n', bytes);
            if let Some(discard) = &mut self.discarding {
                match newline {
                    Some(at) => {
                        discard.len += at;
                        self.end_discard();
                        bytes = &bytes[at + 1..];
                        continue;
                    }
                    None => {
                        discard.len += bytes.len();
                        return;
                    }
                }
            }
            let (piece, rest) = match newline {
                Some(at) => (&bytes[..at], Some(&bytes[at + 1..])),
                None => (bytes, None),
            };
            let partial = self.buf.len() - self.tail;
            if partial + piece.len() > self.max_line {
                let keep = ERROR_HEAD.min(self.max_line);
                let mut head = self.buf[self.tail..self.tail + partial.min(keep)].to_vec();
                let more = keep - head.len();
                head.extend_from_slice(&piece[..piece.len().min(more)]);
                self.buf.truncate(self.tail);
                self.discarding = Some(Discard {
                    len: partial + piece.len(),
                    head,
                });
                // The newline, if this chunk has it, ends the bad line here.
                if rest.is_some() {
                    self.end_discard();
                }
            } else {
                self.buf.extend_from_slice(piece);
                if rest.is_some() {
                    self.complete_tail();
                }
            }
            bytes = rest.unwrap_or_default();
        }
    }

    /// The next complete line, without its `\n` or a `\r` before it. Blank
    /// lines are skipped. `None` means more input is needed.
    #[must_use]
    pub fn next_line(&mut self) -> Option<Result<&[u8], FrameError>> {
        match self.ready.pop_front()? {
            Ready::Line { start, end } => {
                self.ready_bytes -= end - start;
                Some(Ok(&self.buf[start..end]))
            }
            Ready::Rejected(error) => Some(Err(error)),
        }
    }

    /// At end of stream: first any complete lines not yet drained, then the
    /// unterminated final line, if it is not blank. Call until `None`.
    #[must_use]
    pub fn finish(&mut self) -> Option<Result<&[u8], FrameError>> {
        if self.ready.is_empty() {
            if self.discarding.is_some() {
                self.end_discard();
            } else if self.buf.len() > self.tail {
                self.complete_tail();
            }
        }
        self.next_line()
    }

    /// The line being discarded for passing the cap, while its newline has
    /// not come: its first bytes and its length so far. Its
    /// [`FrameError::TooLong`] comes only when it ends; this lets a reader
    /// act on it before (a server may never end it).
    pub fn oversized(&self) -> Option<(&[u8], usize)> {
        self.discarding.as_ref().map(|d| (d.head.as_slice(), d.len))
    }

    /// Bytes currently held: undrained lines plus the unterminated tail
    /// (or the head kept of an oversized line).
    pub fn buffered(&self) -> usize {
        self.ready_bytes
            + (self.buf.len() - self.tail)
            + self.discarding.as_ref().map_or(0, |d| d.head.len())
    }

    /// Drops the bytes of lines already read from the front of the buffer.
    fn release_read(&mut self) {
        // Errors hold no bytes: the first queued line, else the tail.
        let first = self
            .ready
            .iter()
            .find_map(|r| match r {
                Ready::Line { start, .. } => Some(*start),
                Ready::Rejected(_) => None,
            })
            .unwrap_or(self.tail);
        if first == 0 {
            return;
        }
        if first == self.buf.len() {
            let read = self.buf.len();
            self.buf.clear();
            if self.buf.capacity() > KEPT_CAPACITY && read < self.buf.capacity() / 8 {
                self.buf.shrink_to(KEPT_CAPACITY);
            }
        } else {
            self.buf.copy_within(first.., 0);
            self.buf.truncate(self.buf.len() - first);
        }
        self.tail -= first;
        for ready in &mut self.ready {
            if let Ready::Line { start, end } = ready {
                *start -= first;
                *end -= first;
            }
        }
    }

    /// The oversized line ended: report it, with its length.
    fn end_discard(&mut self) {
        if let Some(Discard { len, head }) = self.discarding.take() {
            self.ready.push_back(Ready::Rejected(FrameError::TooLong {
                limit: self.max_line,
                len,
                head,
            }));
        }
    }

    /// The tail is a finished line: queue it, unless it is blank.
    fn complete_tail(&mut self) {
        let start = self.tail;
        let mut end = self.buf.len();
        if end > start && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        if self.buf[start..end]
            .iter()
            .all(|&b| matches!(b, b' ' | b'\t' | b'\r'))
        {
            self.buf.truncate(start);
            return;
        }
        self.tail = self.buf.len();
        self.ready_bytes += end - start;
        self.ready.push_back(Ready::Line { start, end });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn owned(item: Result<&[u8], FrameError>) -> Result<Vec<u8>, FrameError> {
        item.map(<[u8]>::to_vec)
    }

    fn drain(decoder: &mut LineDecoder) -> Vec<Result<Vec<u8>, FrameError>> {
        std::iter::from_fn(|| decoder.next_line().map(owned)).collect()
    }

    fn drain_all(decoder: &mut LineDecoder) -> Vec<Result<Vec<u8>, FrameError>> {
        let mut out = drain(decoder);
        out.extend(std::iter::from_fn(|| decoder.finish().map(owned)));
        out
    }

    fn ok(s: &str) -> Result<Vec<u8>, FrameError> {
        Ok(s.as_bytes().to_vec())
    }

    fn too_long(limit: usize, len: usize, head: &[u8]) -> Result<Vec<u8>, FrameError> {
        Err(FrameError::TooLong {
            limit,
            len,
            head: head.to_vec(),
        })
    }

    #[test]
    fn a_rejected_line_keeps_its_first_bytes_for_its_id() {
        let mut d = LineDecoder::new(ERROR_HEAD * 2);
        let mut line = br#"{"jsonrpc":"2.0","id":3,"result":""#.to_vec();
        line.resize(ERROR_HEAD * 3, b'a');
        d.push(&line[..100]);
        d.push(&line[100..]);
        d.push(b"\n");
        let Some(Err(FrameError::TooLong { len, head, .. })) = d.next_line() else {
            panic!("the line is over the cap");
        };
        assert_eq!(len, ERROR_HEAD * 3);
        assert_eq!(head, line[..ERROR_HEAD]);
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
            vec![ok("ok1"), too_long(8, 24, b"01234567"), ok("ok2")]
        );
    }

    #[test]
    fn oversized_line_within_one_chunk_is_reported_in_order() {
        let mut d = LineDecoder::new(4);
        d.push(b"a\nlonglonglong\nb\n");
        assert_eq!(
            drain(&mut d),
            vec![ok("a"), too_long(4, 12, b"long"), ok("b")]
        );
    }

    #[test]
    fn line_exactly_at_cap_passes_and_one_more_byte_fails() {
        let mut d = LineDecoder::new(4);
        d.push(b"abcd\nabcde\n");
        assert_eq!(drain(&mut d), vec![ok("abcd"), too_long(4, 5, b"abcd")]);
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
        assert_eq!(errors, 0, "reported once its end is seen");
        d.push(b"xxx\n{}\n");
        assert_eq!(
            drain(&mut d),
            vec![too_long(cap, 3_000_003, &[b'x'; 1024]), ok("{}")],
            "once, with its whole length"
        );
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn non_utf8_line_is_delivered_and_named_on_request() {
        let mut d = LineDecoder::default();
        d.push(b"{}\n\"\xff\xfe\"\n[]\n");
        assert_eq!(
            drain(&mut d),
            vec![ok("{}"), Ok(b"\"\xff\xfe\"".to_vec()), ok("[]")]
        );
        assert_eq!(
            FrameError::not_utf8(b"\"\xff\xfe\""),
            Some(FrameError::NotUtf8 {
                len: 4,
                valid_up_to: 1,
                head: b"\"\xff\xfe\"".to_vec(),
            })
        );
        assert_eq!(FrameError::not_utf8("\"é\"".as_bytes()), None);
        let long = [b'\xff'; ERROR_HEAD + 1];
        let Some(FrameError::NotUtf8 { len, head, .. }) = FrameError::not_utf8(&long) else {
            panic!("not UTF-8");
        };
        assert_eq!((len, head.len()), (ERROR_HEAD + 1, ERROR_HEAD));
    }

    #[test]
    fn read_lines_are_released_and_the_buffer_reused() {
        let mut d = LineDecoder::default();
        d.push(b"{\"a\":1}\n{\"b\"");
        assert_eq!(drain(&mut d), vec![ok("{\"a\":1}")]);
        let capacity = d.buf.capacity();
        d.push(b":2}\n");
        assert_eq!(drain(&mut d), vec![ok("{\"b\":2}")]);
        d.push(b"{}\n");
        assert_eq!(d.buf, b"{}", "only the line not yet read is held");
        assert_eq!(d.buf.capacity(), capacity, "no new allocation");
        assert_eq!(drain(&mut d), vec![ok("{}")]);
    }

    #[test]
    fn lines_left_undrained_survive_the_next_push() {
        let mut d = LineDecoder::new(4);
        d.push(b"a\nlonglong\nb\nc");
        assert_eq!(d.next_line(), Some(Ok(&b"a"[..])));
        d.push(b"d\n");
        assert_eq!(
            drain(&mut d),
            vec![too_long(4, 8, b"long"), ok("b"), ok("cd")]
        );
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn a_large_buffer_is_given_back_after_a_small_line() {
        let mut d = LineDecoder::default();
        let big = vec![b'x'; KEPT_CAPACITY * 4];
        d.push(&big);
        d.push(b"\n");
        assert_eq!(
            d.next_line().map(|l| l.map(<[u8]>::len)),
            Some(Ok(big.len()))
        );
        d.push(b"{}\n");
        assert!(d.buf.capacity() >= big.len(), "kept while large lines come");
        assert_eq!(drain(&mut d), vec![ok("{}")]);
        d.push(b"[]\n");
        assert!(d.buf.capacity() <= KEPT_CAPACITY, "{}", d.buf.capacity());
        assert_eq!(drain(&mut d), vec![ok("[]")]);
    }

    #[test]
    fn finish_returns_unterminated_final_line() {
        let mut d = LineDecoder::default();
        d.push(b"{}\n[1]\r");
        assert_eq!(d.next_line().map(owned), Some(ok("{}")));
        assert_eq!(d.next_line(), None);
        assert_eq!(d.buffered(), 4);
        assert_eq!(d.finish().map(owned), Some(ok("[1]")));
        assert_eq!(d.finish(), None);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn finish_without_partial_line_returns_none() {
        let mut d = LineDecoder::default();
        assert_eq!(d.finish(), None);
        d.push(b"{}\n   ");
        assert_eq!(
            d.finish().map(owned),
            Some(ok("{}")),
            "undrained lines come first"
        );
        assert_eq!(d.finish(), None, "a blank tail is not a line");
    }

    #[test]
    fn finish_inside_oversized_line_reports_nothing_more() {
        let mut d = LineDecoder::new(2);
        d.push(b"abcdef");
        assert_eq!(d.finish().map(owned), Some(too_long(2, 6, b"ab")));
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn error_messages_name_the_limit_and_the_fix() {
        let msg = FrameError::TooLong {
            limit: 16 << 20,
            len: 16_777_316,
            head: Vec::new(),
        }
        .to_string();
        assert!(
            msg.contains("16,777,316-byte line, over the 16 MiB limit (`max_message_bytes`)")
                && msg.contains("one line"),
            "{msg}"
        );
        let msg = FrameError::NotUtf8 {
            len: 3,
            valid_up_to: 1,
            head: Vec::new(),
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
