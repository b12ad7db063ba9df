//! Server-sent events: the `text/event-stream` bodies of Streamable HTTP
//! back into events.
//!
//! Over Streamable HTTP, a server may answer a POST, or speak on its GET
//! stream, with server-sent events instead of one JSON body.
//! [`SseDecoder`] interprets that stream exactly as the WHATWG HTML
//! standard's event-stream interpretation says a browser's `EventSource`
//! does, bounded in memory by the same cap as a stdio line
//! ([`super::framing::DEFAULT_MAX_LINE`], or a server's
//! `max_message_bytes`), and additionally keeps the last event ID and the
//! `retry` delay the transport needs to resume a broken stream. Each
//! event's `data` is one JSON-RPC message for [`super::jsonrpc`].

use std::collections::VecDeque;

use super::framing::{DEFAULT_MAX_LINE, byte_size};

/// The UTF-8 byte order mark. The spec's UTF-8 decode drops it once, at the
/// start of a stream; anywhere else it is an ordinary U+FEFF.
const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// One event an SSE stream dispatched: what a browser's `EventSource` would
/// fire as a `MessageEvent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type: the block's last `event` field, or `"message"` when
    /// it had none or an empty one.
    pub event: String,
    /// The block's `data` lines joined with `\n`. It can be empty: a block
    /// with a `data:` line without a value is an event with empty data, and
    /// MCP priming events (`id: 7`, `data: `) arrive this way. A block with
    /// no `data` line at all dispatches nothing.
    pub data: String,
    /// The last event ID in force when the event was dispatched: this
    /// block's `id`, else the latest earlier one. `None` when no `id` was
    /// ever seen or the latest was empty, which per spec resets it.
    pub id: Option<String>,
}

/// Why an SSE event was not delivered. The peer's fault and recoverable:
/// the decoder has already skipped to the next event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// An event needed more than `limit` bytes of buffer. Its bytes were
    /// discarded up to the blank line that ends it; later events decode.
    #[error(
        "the server sent a server-sent event over the {} limit (`max_message_bytes`); it was \
         discarded and decoding resumed at the next event. If this server's \
         messages are legitimately that large, raise `max_message_bytes`",
        byte_size(*limit)
    )]
    TooLarge {
        /// The cap in force, in bytes.
        limit: usize,
    },
}

/// Where the decoder is within the current line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineState {
    /// No byte of the line yet: the next byte decides what the line is.
    Start,
    /// A field line whose bytes are kept in `SseDecoder::line`.
    Buffering,
    /// A line that is dropped as it arrives: a comment, or any line of an
    /// event being discarded.
    Skipping,
}

/// Interprets a `text/event-stream` body, as the WHATWG HTML standard's
/// "event stream interpretation" specifies, bounded in memory.
///
/// Feed chunks with [`push`](Self::push) and drain with
/// [`next_event`](Self::next_event) until it returns `None`. At end of
/// stream call [`finish`](Self::finish) until it returns `None`; the same
/// decoder then reads the next stream, such as the response to a reconnect,
/// with [`last_event_id`](Self::last_event_id) and [`retry`](Self::retry)
/// carried over, as the spec keeps them on the `EventSource` rather than on
/// one connection.
///
/// Lines end with CRLF, LF or a lone CR, also when a CR ends one chunk and
/// its LF starts the next. Bytes that are not UTF-8 decode to U+FFFD, as the
/// spec's UTF-8 decode does.
///
/// # Implementation note
///
/// Every pushed byte is searched for a line end once (by `memchr`'s
/// vectorized search for CR and LF). Lines that end inside
/// the chunk they start in are interpreted straight from the chunk; only a
/// line split across chunks is copied, and only while it is unfinished.
/// Comment lines and the lines of a discarded event are never copied at all.
/// The cap bounds the bytes held for the event being read (its data and type
/// so far plus the unfinished line); on overflow they are dropped at once
/// and the rest of the event is skipped as it arrives, so a peer that sends
/// endless bytes with no newline, or endless lines with no blank line, costs
/// no memory. Memory is therefore about the cap plus the undrained events.
#[derive(Debug)]
pub struct SseDecoder {
    max_event: usize,
    /// Dispatched events (or errors) in stream order, for `next_event`.
    ready: VecDeque<Result<SseEvent, SseError>>,
    /// Bytes held in `ready`.
    ready_bytes: usize,
    /// How many bytes of a leading BOM have arrived; `None` once the start
    /// of the stream is behind us.
    bom_matched: Option<usize>,
    /// The last byte seen was a CR ending a line: an LF next belongs to it.
    after_cr: bool,
    line_state: LineState,
    /// The unfinished line, while `line_state` is `Buffering`.
    line: Vec<u8>,
    /// Inside an event already reported as too large: skip to a blank line.
    discarding: bool,
    /// The spec's data buffer: each `data` value followed by `\n`.
    data: String,
    /// The spec's event type buffer.
    event_type: String,
    /// An `id` this block set, which takes effect when the block ends. The
    /// spec's "last event ID buffer" is this if set, else `last_event_id`.
    pending_id: Option<String>,
    /// The spec's "last event ID string"; empty means none.
    last_event_id: String,
    retry: Option<u64>,
}

/// Appends `bytes` decoded as UTF-8, each invalid sequence replaced by
/// U+FFFD (the spec's decoding). Valid text, the usual case, is checked by
/// `str::from_utf8`, which runs word-wise over ASCII, where
/// `String::from_utf8_lossy` walks byte by byte.
fn push_lossy(into: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => into.push_str(text),
        Err(_) => into.push_str(&String::from_utf8_lossy(bytes)),
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE)
    }
}

impl SseDecoder {
    /// A decoder that rejects events needing more than `max_event` bytes:
    /// the data and type gathered so far plus the line being read, after
    /// decoding (so a byte that is not UTF-8 counts as the three of U+FFFD).
    pub fn new(max_event: usize) -> Self {
        Self {
            max_event,
            ready: VecDeque::new(),
            ready_bytes: 0,
            bom_matched: Some(0),
            after_cr: false,
            line_state: LineState::Start,
            line: Vec::new(),
            discarding: false,
            data: String::new(),
            event_type: String::new(),
            pending_id: None,
            last_event_id: String::new(),
            retry: None,
        }
    }

    // Getters.

    /// The last event ID to send as `Last-Event-ID` when resuming, or `None`
    /// when there is none to send. It changes only when a block ends with a
    /// blank line, so an `id` in a block cut off by end of stream is never
    /// seen here, and a block without data (an MCP priming event) still sets
    /// it.
    pub fn last_event_id(&self) -> Option<&str> {
        (!self.last_event_id.is_empty()).then_some(self.last_event_id.as_str())
    }

    /// The latest reconnection delay, in milliseconds, the server sent in a
    /// `retry` field; `None` if it sent none. Per spec it takes effect as
    /// soon as its line arrives, and a value that is not all ASCII digits
    /// (or does not fit a `u64`) is ignored.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Bytes currently held: undrained events plus the event being read.
    pub fn buffered(&self) -> usize {
        self.ready_bytes + self.line.len() + self.data.len() + self.event_type.len()
    }

    // Input.

    /// Feeds the next chunk of the stream, split anywhere.
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = self.skip_bom(bytes);
        self.feed(bytes);
    }

    // Output.

    /// The next dispatched event, or the error that stood in for one, in
    /// stream order. `None` means more input is needed.
    #[must_use]
    pub fn next_event(&mut self) -> Option<Result<SseEvent, SseError>> {
        let item = self.ready.pop_front()?;
        if let Ok(event) = &item {
            self.ready_bytes -= event_size(event);
        }
        Some(item)
    }

    /// Ends the stream; call until `None`. Returns only events already
    /// dispatched: an event not yet ended by a blank line is discarded, as
    /// the spec requires at end of stream. Afterwards the decoder reads a
    /// new stream, keeping the last event ID and the retry delay.
    #[must_use]
    pub fn finish(&mut self) -> Option<Result<SseEvent, SseError>> {
        self.bom_matched = Some(0);
        self.after_cr = false;
        self.line_state = LineState::Start;
        self.line = Vec::new();
        self.discarding = false;
        self.data = String::new();
        self.event_type = String::new();
        self.pending_id = None;
        self.next_event()
    }

    /// Drops a BOM at the start of the stream, even one split across
    /// chunks, and returns the bytes after it.
    fn skip_bom<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let Some(matched) = self.bom_matched else {
            return bytes;
        };
        let more = BOM[matched..]
            .iter()
            .zip(bytes)
            .take_while(|(want, got)| want == got)
            .count();
        let matched = matched + more;
        if matched == BOM.len() {
            self.bom_matched = None;
            return &bytes[more..];
        }
        if more == bytes.len() {
            // All of this chunk could still be the start of a BOM.
            self.bom_matched = Some(matched);
            return &[];
        }
        // Not a BOM after all: what looked like one is stream content.
        self.bom_matched = None;
        self.feed(&BOM[..matched]);
        &bytes[more..]
    }

    /// Splits a chunk into lines.
    fn feed(&mut self, mut bytes: &[u8]) {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let Some((b'\n', rest)) = bytes.split_first() {
                bytes = rest;
            }
        }
        while let Some(at) = memchr::memchr2(b'\n', b'\r', bytes) {
            let cr = bytes[at] == b'\r';
            self.end_line(&bytes[..at]);
            bytes = &bytes[at + 1..];
            if cr {
                match bytes.split_first() {
                    Some((b'\n', rest)) => bytes = rest,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.extend_line(bytes);
    }

    /// Takes bytes of the current line that do not end it.
    fn extend_line(&mut self, piece: &[u8]) {
        let Some(&first) = piece.first() else {
            return;
        };
        match self.line_state {
            LineState::Skipping => {}
            LineState::Start if self.discarding || first == b':' => {
                self.line_state = LineState::Skipping;
            }
            LineState::Start | LineState::Buffering => {
                if self.exceeds_cap(piece.len()) {
                    self.overflow();
                    self.line_state = LineState::Skipping;
                } else {
                    self.line.extend_from_slice(piece);
                    self.line_state = LineState::Buffering;
                }
            }
        }
    }

    /// Takes the last bytes of the current line; its line end was seen.
    fn end_line(&mut self, piece: &[u8]) {
        match std::mem::replace(&mut self.line_state, LineState::Start) {
            LineState::Skipping => {}
            LineState::Start if piece.is_empty() => self.end_block(),
            LineState::Start if self.discarding || piece.first() == Some(&b':') => {}
            LineState::Start if self.exceeds_cap(piece.len()) => self.overflow(),
            LineState::Start => self.field(piece),
            LineState::Buffering if self.exceeds_cap(piece.len()) => self.overflow(),
            LineState::Buffering => {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(piece);
                self.field(&line);
            }
        }
    }

    /// Processes one field line, as the spec's "process the field" step.
    fn field(&mut self, line: &[u8]) {
        let (name, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"event" => {
                self.event_type.clear();
                push_lossy(&mut self.event_type, value);
            }
            b"data" => {
                push_lossy(&mut self.data, value);
                self.data.push('\n');
            }
            b"id" if memchr::memchr(0, value).is_none() => {
                let mut id = String::new();
                push_lossy(&mut id, value);
                self.pending_id = Some(id);
            }
            b"retry" => {
                if let Some(ms) = parse_retry(value) {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        // Decoding can grow bytes that are not UTF-8 threefold.
        if self.exceeds_cap(0) {
            self.overflow();
        }
    }

    /// A blank line: the spec's "dispatch the event".
    fn end_block(&mut self) {
        if std::mem::take(&mut self.discarding) {
            return;
        }
        if let Some(id) = self.pending_id.take() {
            self.last_event_id = id;
        }
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        if data.ends_with('\n') {
            data.pop();
        }
        let mut event = std::mem::take(&mut self.event_type);
        if event.is_empty() {
            event = "message".to_owned();
        }
        let id = self.last_event_id().map(str::to_owned);
        self.enqueue(Ok(SseEvent { event, data, id }));
    }

    /// Whether holding `extra` more bytes for this event breaks the cap.
    fn exceeds_cap(&self, extra: usize) -> bool {
        self.line.len() + self.data.len() + self.event_type.len() + extra > self.max_event
    }

    /// Reports the current event as too large and drops it. Its `id` never
    /// takes effect: the event was not received, so a resumption must not
    /// claim it was. A `retry` already seen stands, as it applies at once.
    fn overflow(&mut self) {
        self.enqueue(Err(SseError::TooLarge {
            limit: self.max_event,
        }));
        self.line = Vec::new();
        self.data = String::new();
        self.event_type = String::new();
        self.pending_id = None;
        self.discarding = true;
    }

    fn enqueue(&mut self, item: Result<SseEvent, SseError>) {
        if let Ok(event) = &item {
            self.ready_bytes += event_size(event);
        }
        self.ready.push_back(item);
    }
}

/// Bytes an event holds, for [`SseDecoder::buffered`].
fn event_size(event: &SseEvent) -> usize {
    event.event.len() + event.data.len() + event.id.as_ref().map_or(0, String::len)
}

/// A `retry` value: ASCII digits only, at least one, in base ten.
fn parse_retry(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |ms, &b| {
        let digit = u64::from(b.checked_sub(b'0').filter(|d| *d < 10)?);
        ms.checked_mul(10)?.checked_add(digit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Item = Result<SseEvent, SseError>;

    fn drain(d: &mut SseDecoder) -> Vec<Item> {
        std::iter::from_fn(|| d.next_event()).collect()
    }

    fn drain_all(d: &mut SseDecoder) -> Vec<Item> {
        let mut out = drain(d);
        out.extend(std::iter::from_fn(|| d.finish()));
        out
    }

    fn decode(input: &[u8]) -> Vec<Item> {
        let mut d = SseDecoder::default();
        d.push(input);
        drain_all(&mut d)
    }

    fn ev(event: &str, data: &str, id: Option<&str>) -> Item {
        Ok(SseEvent {
            event: event.to_owned(),
            data: data.to_owned(),
            id: id.map(str::to_owned),
        })
    }

    fn msg(data: &str) -> Item {
        ev("message", data, None)
    }

    fn too_large(limit: usize) -> Item {
        Err(SseError::TooLarge { limit })
    }

    // The examples of the WHATWG "event stream interpretation" section.

    #[test]
    fn spec_example_multiline_data_joins_lines_with_newline() {
        assert_eq!(
            decode(b"data: YHOO\ndata: +2\ndata: 10\n\n"),
            vec![msg("YHOO\n+2\n10")]
        );
    }

    #[test]
    fn spec_example_comment_fires_nothing_and_empty_id_resets_last_id() {
        let mut d = SseDecoder::default();
        d.push(b": test stream\n\n");
        assert_eq!(drain(&mut d), vec![]);
        d.push(b"data: first event\nid: 1\n\n");
        assert_eq!(drain(&mut d), vec![ev("message", "first event", Some("1"))]);
        assert_eq!(d.last_event_id(), Some("1"));
        d.push(b"data:second event\nid\n\n");
        assert_eq!(drain(&mut d), vec![msg("second event")]);
        assert_eq!(d.last_event_id(), None, "an empty id resets it");
        d.push(b"data:  third event\n\n");
        assert_eq!(drain_all(&mut d), vec![msg(" third event")]);
    }

    #[test]
    fn spec_example_field_without_colon_is_field_with_empty_value() {
        // The first block is an event with empty data, the second one with a
        // single newline; the last is cut off by end of stream.
        assert_eq!(
            decode(b"data\n\ndata\ndata\n\ndata:"),
            vec![msg(""), msg("\n")]
        );
    }

    #[test]
    fn spec_example_space_after_colon_is_optional() {
        assert_eq!(
            decode(b"data:test\n\ndata: test\n\n"),
            vec![msg("test"), msg("test")]
        );
    }

    #[test]
    fn only_one_space_after_colon_is_stripped_and_later_colons_are_value() {
        assert_eq!(
            decode(b"data:  a: b \n\n"),
            vec![msg(" a: b ")],
            "trailing space is kept too"
        );
    }

    // Line ends.

    #[test]
    fn crlf_lf_and_lone_cr_all_end_lines() {
        let want = vec![msg("a\nb"), msg("c")];
        assert_eq!(decode(b"data: a\ndata: b\n\ndata: c\n\n"), want);
        assert_eq!(decode(b"data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"), want);
        assert_eq!(decode(b"data: a\rdata: b\r\rdata: c\r\r"), want);
        assert_eq!(decode(b"data: a\rdata: b\r\n\ndata: c\n\r\n"), want);
    }

    #[test]
    fn cr_ending_a_chunk_and_lf_starting_the_next_are_one_line_end() {
        let mut d = SseDecoder::default();
        d.push(b"data: a\r");
        d.push(b"\ndata: b\r");
        assert_eq!(drain(&mut d), vec![], "no blank line has been seen yet");
        d.push(b"\n\r");
        assert_eq!(drain(&mut d), vec![msg("a\nb")], "the lone CR is blank");
        d.push(b"\ndata: c\r");
        d.push(b"\ndata: d\n\n");
        assert_eq!(drain_all(&mut d), vec![msg("c\nd")]);
    }

    #[test]
    fn cr_ending_a_chunk_then_other_byte_is_a_lone_cr() {
        let mut d = SseDecoder::default();
        d.push(b"data: a\r");
        d.push(b"\r");
        assert_eq!(drain(&mut d), vec![msg("a")]);
        d.push(b"");
        d.push(b"data: b\r");
        d.push(b"");
        d.push(b"\n\n");
        assert_eq!(
            drain_all(&mut d),
            vec![msg("b")],
            "empty pushes keep the CR"
        );
    }

    // Splitting.

    const STREAM: &[u8] = "\u{FEFF}: comment\r\n\
        retry: 1500\r\n\
        id: 1\r\n\
        event: greet\r\n\
        data: h\u{e9}llo\r\n\
        data:w\u{f6}rld \u{1F600}\r\n\
        \r\n\
        : keep-alive\n\
        unknown: field\n\
        data: {\"jsonrpc\":\"2.0\"}\n\
        \n\
        id: 2\r\
        data\r\
        data: tail\r\
        \r\
        id: \0bad\n\
        data: x\n\
        \n\
        id\n\
        data: last\n\
        \n\
        data: cut off by end of stream\n"
        .as_bytes();

    fn stream_events() -> Vec<Item> {
        vec![
            ev("greet", "h\u{e9}llo\nw\u{f6}rld \u{1F600}", Some("1")),
            ev("message", "{\"jsonrpc\":\"2.0\"}", Some("1")),
            ev("message", "\ntail", Some("2")),
            ev("message", "x", Some("2")),
            msg("last"),
        ]
    }

    fn decode_chunks(chunks: &[&[u8]]) -> (Vec<Item>, SseDecoder) {
        let mut d = SseDecoder::default();
        let mut got = Vec::new();
        for chunk in chunks {
            d.push(chunk);
            got.extend(drain(&mut d));
        }
        got.extend(drain_all(&mut d));
        (got, d)
    }

    #[test]
    fn whole_stream_yields_each_event_and_stream_state() {
        let (got, d) = decode_chunks(&[STREAM]);
        assert_eq!(got, stream_events());
        assert_eq!(d.retry(), Some(1500));
        assert_eq!(d.last_event_id(), None);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn split_at_every_pair_of_byte_boundaries_yields_same_events() {
        for i in 0..=STREAM.len() {
            for j in i..=STREAM.len() {
                let (got, d) = decode_chunks(&[&STREAM[..i], &STREAM[i..j], &STREAM[j..]]);
                assert_eq!(got, stream_events(), "cuts at {i} and {j}");
                assert_eq!(d.retry(), Some(1500));
            }
        }
    }

    #[test]
    fn one_byte_pushes_yield_same_events() {
        let chunks: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(decode_chunks(&chunks).0, stream_events());
    }

    #[test]
    fn many_tiny_pushes_of_one_long_line_take_linear_time() {
        // Quadratic rescanning would make this take minutes.
        let mut d = SseDecoder::default();
        d.push(b"data: ");
        for _ in 0..300_000 {
            d.push(b"x");
        }
        d.push(b"\n\n");
        let got = drain(&mut d);
        assert!(matches!(&got[..], [Ok(e)] if e.data.len() == 300_000));
    }

    // Event ids, priming events, retry.

    #[test]
    fn block_without_data_dispatches_nothing_but_sets_last_event_id() {
        let mut d = SseDecoder::default();
        d.push(b"id: prime-1\nretry: 3000\n\n");
        assert_eq!(drain(&mut d), vec![]);
        assert_eq!(d.last_event_id(), Some("prime-1"));
        assert_eq!(d.retry(), Some(3000));
        d.push(b"data: {}\n\n");
        assert_eq!(drain(&mut d), vec![ev("message", "{}", Some("prime-1"))]);
    }

    #[test]
    fn mcp_priming_event_with_empty_data_line_dispatches_empty_data() {
        // What the TypeScript SDK writes. Per spec the `data: ` line makes the
        // data buffer "\n", so an event with empty data is dispatched; MCP
        // callers skip it (PROTOCOL-NOTES "Streamable HTTP").
        let mut d = SseDecoder::default();
        d.push(b"id: 0_1\nretry: 1000\ndata: \n\n");
        assert_eq!(drain(&mut d), vec![ev("message", "", Some("0_1"))]);
        assert_eq!(d.last_event_id(), Some("0_1"));
        assert_eq!(d.retry(), Some(1000));
    }

    #[test]
    fn last_event_id_persists_to_later_events_until_changed() {
        assert_eq!(
            decode(b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\ndata: d\n\n"),
            vec![
                ev("message", "a", Some("1")),
                ev("message", "b", Some("1")),
                ev("message", "c", Some("2")),
                ev("message", "d", Some("2")),
            ]
        );
    }

    #[test]
    fn id_takes_effect_only_at_the_blank_line_ending_its_block() {
        let mut d = SseDecoder::default();
        d.push(b"id: 1\n\nid: 2\ndata: partial\n");
        assert_eq!(d.last_event_id(), Some("1"));
        assert_eq!(drain_all(&mut d), vec![]);
        assert_eq!(d.last_event_id(), Some("1"), "a cut-off block is discarded");
    }

    #[test]
    fn id_containing_nul_is_ignored() {
        let mut d = SseDecoder::default();
        d.push(b"id: 1\n\nid: 2\0x\ndata: a\n\n");
        assert_eq!(drain(&mut d), vec![ev("message", "a", Some("1"))]);
        assert_eq!(d.last_event_id(), Some("1"));
    }

    #[test]
    fn retry_other_than_ascii_digits_is_ignored() {
        let mut d = SseDecoder::default();
        assert_eq!(d.retry(), None);
        d.push(b"retry: 10\n");
        assert_eq!(d.retry(), Some(10), "retry applies without a blank line");
        for bad in [
            &b"retry: 1.5\n"[..],
            b"retry: -1\n",
            b"retry: +1\n",
            b"retry:  5\n",
            b"retry: 5 \n",
            b"retry: 1e3\n",
            b"retry: \n",
            b"retry\n",
            b"retry: \xd9\xa3\n",
            b"retry: 99999999999999999999999\n",
        ] {
            d.push(bad);
            assert_eq!(d.retry(), Some(10), "{}", String::from_utf8_lossy(bad));
        }
        d.push(b"retry:007\n\n");
        assert_eq!(d.retry(), Some(7));
        assert_eq!(drain_all(&mut d), vec![]);
    }

    // Event types, unknown fields, end of stream.

    #[test]
    fn event_type_applies_to_its_block_only_and_defaults_to_message() {
        assert_eq!(
            decode(b"event: add\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\nevent: x\n\ndata: 4\n\n"),
            vec![ev("add", "1", None), msg("2"), msg("3"), msg("4")]
        );
    }

    #[test]
    fn field_names_are_exact_and_unknown_fields_are_ignored() {
        assert_eq!(
            decode(b"Data: no\n data: no\ndata : no\nfoo: bar\ndata: yes\n\n"),
            vec![msg("yes")]
        );
    }

    #[test]
    fn incomplete_event_at_end_of_stream_is_discarded() {
        assert_eq!(decode(b"data: x"), vec![]);
        assert_eq!(decode(b"data: x\n"), vec![]);
        assert_eq!(decode(b"data: x\r"), vec![]);
        assert_eq!(decode(b"data: x\n\ndata: y\n"), vec![msg("x")]);
    }

    #[test]
    fn finish_starts_a_new_stream_keeping_last_event_id_and_retry() {
        let mut d = SseDecoder::default();
        d.push(b"retry: 50\nid: 9\ndata: a\n\ndata: lost\r");
        assert_eq!(d.finish(), Some(ev("message", "a", Some("9"))));
        assert_eq!(d.finish(), None);
        assert_eq!(d.buffered(), 0);
        // The reconnection's response: a fresh BOM, no leftover CR or data.
        d.push(b"\xEF\xBB\xBF\ndata: b\n\n");
        assert_eq!(drain(&mut d), vec![ev("message", "b", Some("9"))]);
        assert_eq!((d.last_event_id(), d.retry()), (Some("9"), Some(50)));
    }

    // Byte order mark and UTF-8.

    #[test]
    fn bom_is_skipped_at_stream_start_even_split_across_chunks() {
        let (got, _) = decode_chunks(&[b"\xEF", b"\xBB", b"", b"\xBF", b"data: a\n\n"]);
        assert_eq!(got, vec![msg("a")]);
    }

    #[test]
    fn bom_is_skipped_only_once() {
        // The second BOM is part of the first field name, which is unknown.
        assert_eq!(
            decode(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n"),
            vec![msg("b")]
        );
        assert_eq!(
            decode(b"data: a\n\n\xEF\xBB\xBFdata: b\n\ndata: \xEF\xBB\xBFc\n\n"),
            vec![msg("a"), msg("\u{FEFF}c")]
        );
    }

    #[test]
    fn partial_bom_is_content_not_dropped() {
        let (got, _) = decode_chunks(&[b"\xEF\xBB", b"data: a\n\n"]);
        assert_eq!(got, vec![], "the field is named \\xEF\\xBBdata, not data");
        let (got, _) = decode_chunks(&[b"\xEF", b"\n\ndata: a\n\n"]);
        assert_eq!(got, vec![msg("a")]);
    }

    #[test]
    fn bytes_that_are_not_utf8_decode_to_replacement_characters() {
        assert_eq!(
            decode(b"event: \xFFe\ndata: a\xFFb\xC3\n\n"),
            vec![ev("\u{FFFD}e", "a\u{FFFD}b\u{FFFD}", None)]
        );
    }

    // Size cap.

    #[test]
    fn event_at_cap_passes_and_one_byte_more_fails() {
        // The cap counts the line being read plus the data held so far.
        let mut d = SseDecoder::new(10);
        d.push(b"data:abcde\n\n");
        assert_eq!(drain(&mut d), vec![msg("abcde")]);
        d.push(b"data:abcdef\n\n");
        assert_eq!(drain(&mut d), vec![too_large(10)]);
    }

    #[test]
    fn oversized_event_is_reported_once_in_order_and_later_events_decode() {
        let mut d = SseDecoder::new(16);
        d.push(b"data: ok1\n\nid: big\ndata: 0123456789\ndata: 0123");
        d.push(b"456789\ndata: more\nid: skipped\nretry: 5\n\ndata: ok2\n\n");
        assert_eq!(
            drain_all(&mut d),
            vec![msg("ok1"), too_large(16), msg("ok2")]
        );
        assert_eq!(d.last_event_id(), None, "the lost event's ids never apply");
        assert_eq!(d.retry(), None, "nor do fields after the overflow");
    }

    #[test]
    fn expansion_of_bytes_that_are_not_utf8_counts_toward_the_cap() {
        assert_eq!(
            {
                let mut d = SseDecoder::new(10);
                d.push(b"data:\xFF\xFF\xFF\xFF\n\ndata: ok\n\n");
                drain(&mut d)
            },
            vec![too_large(10), msg("ok")]
        );
    }

    #[test]
    fn endless_line_keeps_memory_bounded_by_cap() {
        let cap = 1024;
        let chunk = [b'x'; 300];
        let mut d = SseDecoder::new(cap);
        d.push(b"data: ");
        let mut errors = 0;
        for _ in 0..10_000 {
            d.push(&chunk);
            assert!(d.buffered() <= cap, "{}", d.buffered());
            errors += drain(&mut d).len();
        }
        assert_eq!(errors, 1, "the oversized event is reported once");
        d.push(b"\ndata: still the bad event\n\ndata: ok\n\n");
        assert_eq!(drain_all(&mut d), vec![msg("ok")]);
    }

    #[test]
    fn endless_lines_without_blank_line_keep_memory_bounded_by_cap() {
        let cap = 1024;
        let mut d = SseDecoder::new(cap);
        let mut errors = 0;
        for _ in 0..10_000 {
            d.push(b"data: 0123456789abcdef\r\n");
            assert!(d.buffered() <= cap, "{}", d.buffered());
            errors += drain(&mut d).len();
        }
        assert_eq!(errors, 1);
        d.push(b"\r\ndata: ok\r\n\r\n");
        assert_eq!(drain(&mut d), vec![msg("ok")]);
    }

    #[test]
    fn endless_comment_costs_no_memory_and_is_no_error() {
        let mut d = SseDecoder::new(16);
        d.push(b":");
        for _ in 0..1_000 {
            d.push(&[b'c'; 100]);
            assert_eq!(d.buffered(), 0);
        }
        d.push(b"\ndata: ok\n\n");
        assert_eq!(drain(&mut d), vec![msg("ok")]);
    }

    #[test]
    fn error_message_names_the_limit_and_the_remedy() {
        let msg = SseError::TooLarge { limit: 16 << 20 }.to_string();
        assert!(
            msg.contains("over the 16 MiB limit") && msg.contains("raise `max_message_bytes`"),
            "{msg}"
        );
        assert!(
            SseError::TooLarge { limit: 8 }
                .to_string()
                .contains("8-byte limit")
        );
    }

    // Generated streams.

    /// One block of a generated stream, written by `write_block`.
    #[derive(Clone, Debug)]
    struct Block {
        comment: Option<String>,
        retry: Option<u64>,
        event: Option<String>,
        id: Option<String>,
        data: Vec<(String, bool)>,
    }

    fn text() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9 :{}\"\u{e9}\u{1F600}\u{FEFF}]{0,12}"
    }

    fn block() -> impl Strategy<Value = Block> {
        (
            proptest::option::of(text()),
            proptest::option::of(0u64..100_000),
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::collection::vec((text(), any::<bool>()), 0..4),
        )
            .prop_map(|(comment, retry, event, id, data)| Block {
                comment,
                retry,
                event,
                id,
                data,
            })
    }

    /// The block's lines, without line ends; the last is the blank line.
    fn block_lines(b: &Block) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(c) = &b.comment {
            lines.push(format!(":{c}"));
        }
        if let Some(r) = b.retry {
            lines.push(format!("retry: {r}"));
        }
        if let Some(e) = &b.event {
            lines.push(format!("event: {e}"));
        }
        for (d, tight) in &b.data {
            // "data:" without the space only where it cannot eat a space.
            if *tight && !d.starts_with(' ') {
                lines.push(format!("data:{d}"));
            } else {
                lines.push(format!("data: {d}"));
            }
        }
        if let Some(i) = &b.id {
            lines.push(format!("id: {i}"));
        }
        lines.push(String::new());
        lines
    }

    /// What the spec says the blocks dispatch, computed independently.
    fn model(blocks: &[Block]) -> (Vec<Item>, Option<u64>) {
        let mut last_id = String::new();
        let mut retry = None;
        let mut events = Vec::new();
        for b in blocks {
            retry = b.retry.or(retry);
            if let Some(i) = &b.id {
                last_id = i.clone();
            }
            if !b.data.is_empty() {
                let data: Vec<&str> = b.data.iter().map(|(d, _)| d.as_str()).collect();
                let event = match b.event.as_deref() {
                    None | Some("") => "message",
                    Some(e) => e,
                };
                let id = (!last_id.is_empty()).then_some(last_id.as_str());
                events.push(ev(event, &data.join("\n"), id));
            }
        }
        (events, retry)
    }

    proptest! {
        #[test]
        fn any_split_of_generated_blocks_yields_the_modelled_events(
            blocks in proptest::collection::vec(block(), 0..8),
            bom in any::<bool>(),
            ends in proptest::collection::vec(0..3usize, 1..16),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut input = Vec::new();
            if bom {
                input.extend_from_slice(BOM);
            }
            let mut prev_cr = false;
            let lines = blocks.iter().flat_map(block_lines);
            for (n, line) in lines.enumerate() {
                input.extend_from_slice(line.as_bytes());
                let mut end: &[u8] = [&b"\n"[..], b"\r", b"\r\n"][ends[n % ends.len()]];
                // CR then an empty LF-ended line would read as one CRLF.
                if prev_cr && line.is_empty() && end == b"\n" {
                    end = b"\r\n";
                }
                prev_cr = end == b"\r";
                input.extend_from_slice(end);
            }
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.push(0);
            cuts.push(input.len());
            cuts.sort_unstable();
            let chunks: Vec<&[u8]> = cuts.windows(2).map(|w| &input[w[0]..w[1]]).collect();
            let (got, d) = decode_chunks(&chunks);
            let (want, retry) = model(&blocks);
            prop_assert_eq!(got, want);
            prop_assert_eq!(d.retry(), retry);
        }
    }
}
