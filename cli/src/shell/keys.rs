//! Keys out of a terminal's bytes: the decoder the shell's line editor
//! reads through, pure so every sequence is tested without a terminal.
//!
//! A terminal in raw mode sends printable text as UTF-8, control keys as
//! single bytes (Ctrl-A is 0x01), and the editing keys as escape sequences
//! (`ESC [ A` for Up, `ESC [ 3 ~` for Delete, `ESC O H` for Home on some
//! terminals). A read can end in the middle of a sequence or of a UTF-8
//! character, so [`Decoder`] keeps the unfinished tail for the next read.
//! A sequence it does not know is consumed whole and reported as
//! [`Key::Unknown`], so stray bytes never turn into typed text.

/// One key press, as the line editor sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// A printable character.
    Char(char),
    Enter,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    Tab,
    BackTab,
    Escape,
    /// Ctrl-C: cancel what runs, or clear the line.
    Interrupt,
    /// Ctrl-D: end of input on an empty line.
    EndOfInput,
    /// Ctrl-K: delete to the end of the line.
    KillToEnd,
    /// Ctrl-U: delete to the start of the line.
    KillToStart,
    /// Ctrl-W: delete the word before the cursor.
    KillWord,
    /// Ctrl-L: redraw.
    Redraw,
    /// A sequence or control byte with no meaning here.
    Unknown,
}

/// Turns bytes into keys across reads.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    pending: Vec<u8>,
}

impl Decoder {
    /// The keys in `bytes` (after what an earlier read left unfinished).
    /// `final_read` says no more bytes follow at once (the read returned
    /// fewer than asked), so a lone ESC is the Escape key, not the start
    /// of a sequence.
    pub(crate) fn feed(&mut self, bytes: &[u8], final_read: bool) -> Vec<Key> {
        self.pending.extend_from_slice(bytes);
        let mut keys = Vec::new();
        let mut at = 0;
        while at < self.pending.len() {
            match decode_one(&self.pending[at..], final_read) {
                Some((key, used)) => {
                    keys.push(key);
                    at += used;
                }
                None => break,
            }
        }
        self.pending.drain(..at);
        keys
    }
}

/// The first key of `bytes` and how many bytes it took, or `None` when
/// `bytes` is the unfinished start of one.
fn decode_one(bytes: &[u8], final_read: bool) -> Option<(Key, usize)> {
    let first = bytes[0];
    let control = |key| Some((key, 1));
    match first {
        b'\r' | b'\n' => control(Key::Enter),
        0x7f | 0x08 => control(Key::Backspace),
        b'\t' => control(Key::Tab),
        0x01 => control(Key::Home),
        0x05 => control(Key::End),
        0x02 => control(Key::Left),
        0x06 => control(Key::Right),
        0x10 => control(Key::Up),
        0x0e => control(Key::Down),
        0x03 => control(Key::Interrupt),
        0x04 => control(Key::EndOfInput),
        0x0b => control(Key::KillToEnd),
        0x15 => control(Key::KillToStart),
        0x17 => control(Key::KillWord),
        0x0c => control(Key::Redraw),
        0x1b => escape(bytes, final_read),
        0x00..=0x1f => control(Key::Unknown),
        _ => utf8(bytes),
    }
}

/// An escape sequence: CSI (`ESC [` parameters, a final byte), SS3
/// (`ESC O` and one byte), or a lone ESC.
fn escape(bytes: &[u8], final_read: bool) -> Option<(Key, usize)> {
    match bytes.get(1) {
        None if final_read => Some((Key::Escape, 1)),
        None => None,
        Some(b'[') => {
            // Parameters and intermediates are 0x20..=0x3f; the final byte
            // is 0x40..=0x7e.
            let end = bytes[2..].iter().position(|b| (0x40..=0x7e).contains(b))?;
            let params = &bytes[2..2 + end];
            let last = bytes[2 + end];
            let used = 3 + end;
            if bytes[2..2 + end].iter().any(|b| !(0x20..=0x3f).contains(b)) {
                return Some((Key::Unknown, used));
            }
            let key = match (params, last) {
                (_, b'A') => Key::Up,
                (_, b'B') => Key::Down,
                (_, b'C') => Key::Right,
                (_, b'D') => Key::Left,
                (_, b'H') => Key::Home,
                (_, b'F') => Key::End,
                (_, b'Z') => Key::BackTab,
                (b"1" | b"7", b'~') => Key::Home,
                (b"4" | b"8", b'~') => Key::End,
                (b"3", b'~') => Key::Delete,
                _ => Key::Unknown,
            };
            Some((key, used))
        }
        Some(b'O') => {
            let key = match bytes.get(2)? {
                b'A' => Key::Up,
                b'B' => Key::Down,
                b'C' => Key::Right,
                b'D' => Key::Left,
                b'H' => Key::Home,
                b'F' => Key::End,
                _ => Key::Unknown,
            };
            Some((key, 3))
        }
        // Escape, then another key typed quickly (or Alt+key, which is not
        // bound): the Escape alone, and the next byte decoded on its own.
        Some(_) => Some((Key::Escape, 1)),
    }
}

/// One UTF-8 character, or `Unknown` for a byte that cannot start one.
fn utf8(bytes: &[u8]) -> Option<(Key, usize)> {
    let len = match bytes[0] {
        0x20..=0x7e => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Some((Key::Unknown, 1)),
    };
    if bytes.len() < len {
        // A continuation byte that is not one ends the character early.
        if bytes[1..].iter().any(|b| b & 0xc0 != 0x80) {
            return Some((Key::Unknown, 1));
        }
        return None;
    }
    match std::str::from_utf8(&bytes[..len]) {
        Ok(text) => {
            let c = text.chars().next().expect("one character");
            if c.is_control() {
                Some((Key::Unknown, len))
            } else {
                Some((Key::Char(c), len))
            }
        }
        Err(_) => Some((Key::Unknown, 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        Decoder::default().feed(bytes, true)
    }

    #[test]
    fn printable_text_and_utf8_become_characters() {
        assert_eq!(
            keys("a é 日".as_bytes()),
            vec![
                Key::Char('a'),
                Key::Char(' '),
                Key::Char('é'),
                Key::Char(' '),
                Key::Char('日')
            ]
        );
    }

    #[test]
    fn control_bytes_are_editing_keys() {
        assert_eq!(
            keys(b"\r\x7f\t\x03\x04\x0b\x15\x17\x01\x05"),
            vec![
                Key::Enter,
                Key::Backspace,
                Key::Tab,
                Key::Interrupt,
                Key::EndOfInput,
                Key::KillToEnd,
                Key::KillToStart,
                Key::KillWord,
                Key::Home,
                Key::End
            ]
        );
    }

    #[test]
    fn csi_and_ss3_sequences_are_arrows_and_friends() {
        assert_eq!(
            keys(b"\x1b[A\x1b[B\x1b[C\x1b[D\x1b[3~\x1b[1~\x1b[4~\x1bOH\x1bOF\x1b[Z\x1b[1;5C"),
            vec![
                Key::Up,
                Key::Down,
                Key::Right,
                Key::Left,
                Key::Delete,
                Key::Home,
                Key::End,
                Key::Home,
                Key::End,
                Key::BackTab,
                // Ctrl+Right carries a modifier; still Right.
                Key::Right
            ]
        );
    }

    #[test]
    fn a_sequence_split_across_reads_is_completed_by_the_next() {
        let mut decoder = Decoder::default();
        assert_eq!(decoder.feed(b"x\x1b[", false), vec![Key::Char('x')]);
        assert_eq!(decoder.feed(b"3", false), vec![]);
        assert_eq!(decoder.feed(b"~", true), vec![Key::Delete]);
        let utf8 = "日".as_bytes();
        assert_eq!(decoder.feed(&utf8[..1], false), vec![]);
        assert_eq!(decoder.feed(&utf8[1..], true), vec![Key::Char('日')]);
    }

    #[test]
    fn a_lone_escape_is_the_escape_key_only_when_nothing_follows() {
        let mut decoder = Decoder::default();
        assert_eq!(decoder.feed(b"\x1b", false), vec![]);
        assert_eq!(decoder.feed(b"", true), vec![Key::Escape]);
        assert_eq!(keys(b"\x1b"), vec![Key::Escape]);
    }

    #[test]
    fn escape_then_a_key_in_one_read_is_both_keys() {
        assert_eq!(keys(b"\x1b\x15"), vec![Key::Escape, Key::KillToStart]);
        assert_eq!(keys(b"\x1bz"), vec![Key::Escape, Key::Char('z')]);
    }

    #[test]
    fn unknown_sequences_and_bad_bytes_never_become_text() {
        assert_eq!(
            keys(b"\x1b[99x\xff\x00"),
            vec![Key::Unknown, Key::Unknown, Key::Unknown]
        );
        // A truncated UTF-8 character followed by ASCII.
        assert_eq!(keys(b"\xe6a"), vec![Key::Unknown, Key::Char('a')]);
        // C1 controls encoded in UTF-8 are not characters to insert.
        assert_eq!(keys("\u{9b}".as_bytes()), vec![Key::Unknown]);
    }
}
