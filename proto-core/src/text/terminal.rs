//! Server text made safe for a terminal: the one sanitizer every
//! human-output path of a host runs server-controlled text through before
//! printing it.
//!
//! A server chooses its name, instructions, tool titles, result text, log
//! messages, error messages and stderr. Printed raw, a control character in
//! any of them is an instruction to the terminal: `ESC ] 0 ; … BEL` retitles
//! the window, `ESC [ 2 J` clears the screen, `CR ESC [ K` erases what rho
//! just printed (such as the "MCP server `x` asks" header of a form), an
//! OSC-8 sequence turns text into a hidden link, and the 8-bit C1 forms
//! (U+009B is CSI) do the same in one character. [`sanitize`] and
//! [`sanitize_line`] turn every such character into a visible escape, so
//! the rest of the sequence is inert printable text:
//!
//! | character | shown as |
//! |---|---|
//! | C0 controls U+0000..U+001F and DEL U+007F | `\x1b`, `\x07`, `\x7f`, ... |
//! | CR, and in single-line text LF and TAB | `\r`, `\n`, `\t` |
//! | C1 controls U+0080..U+009F | `\u{9b}`, ... |
//! | bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C) | `\u{202e}`, ... |
//!
//! Multi-line text ([`sanitize`]) keeps LF and TAB, and a CR directly
//! before an LF is dropped (a CRLF line end is a line end). Backslashes are
//! not escaped: the output is for reading, not for decoding. JSON output
//! needs none of this (JSON escapes control characters itself) and must
//! stay exact, so hosts never sanitize a JSON value.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character (except LF and TAB) shown as a
/// visible escape, for text that may span lines: result text,
/// instructions, descriptions, failure reasons.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// `text` with every control character, LF and TAB included, shown as a
/// visible escape, for text that must stay on one line: names, versions,
/// titles, enum labels, MIME types, progress messages.
pub fn sanitize_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Whether a terminal could take `c` as an instruction (every character
/// [`sanitize_line`] escapes). For writers with their own escape syntax,
/// such as a JSON encoder.
pub fn is_control(c: char) -> bool {
    unsafe_char(c, false)
}

/// Whether `c` must not reach a terminal raw in text of this kind.
fn unsafe_char(c: char, multi_line: bool) -> bool {
    match c {
        '\n' | '\t' => !multi_line,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            true
        }
        _ => false,
    }
}

fn escape(text: &str, multi_line: bool) -> Cow<'_, str> {
    let Some(first) = text.find(|c| unsafe_char(c, multi_line)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    let mut chars = text[first..].chars().peekable();
    while let Some(c) = chars.next() {
        if !unsafe_char(c, multi_line) {
            out.push(c);
            continue;
        }
        match c {
            '\r' if multi_line && chars.peek() == Some(&'\n') => {}
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\u{0}'..='\u{1f}' | '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The four payloads a hostile server tries everywhere.
    const PAYLOADS: [&str; 4] = ["\x1b]0;pwned\x07", "\x1b[2J", "\r\x1b[K", "\u{9b}31m"];

    #[test]
    fn escape_sequences_become_visible_text() {
        assert_eq!(sanitize(PAYLOADS[0]), "\\x1b]0;pwned\\x07");
        assert_eq!(sanitize(PAYLOADS[1]), "\\x1b[2J");
        assert_eq!(sanitize(PAYLOADS[2]), "\\r\\x1b[K");
        assert_eq!(sanitize(PAYLOADS[3]), "\\u{9b}31m");
        assert_eq!(
            sanitize("\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\"),
            "\\x1b]8;;https://evil.example\\x1b\\link\\x1b]8;;\\x1b\\"
        );
        assert_eq!(sanitize("\x1bP1$r\x1b\\"), "\\x1bP1$r\\x1b\\");
        assert_eq!(sanitize("a\x7fb\u{202e}c"), "a\\x7fb\\u{202e}c");
    }

    #[test]
    fn multi_line_text_keeps_newlines_and_tabs_and_crlf_ends() {
        assert_eq!(sanitize("one\n\ttwo\r\nthree\r"), "one\n\ttwo\nthree\\r");
        assert_eq!(sanitize_line("one\n\ttwo\r\n"), "one\\n\\ttwo\\r\\n");
    }

    #[test]
    fn clean_text_is_borrowed_unchanged() {
        let text = "ready · émoji 🎉 · 中文\n\tindented";
        assert!(matches!(sanitize(text), Cow::Borrowed(t) if t == text));
        assert!(matches!(
            sanitize_line("name 1.0"),
            Cow::Borrowed("name 1.0")
        ));
    }

    proptest! {
        #[test]
        fn no_control_but_newline_and_tab_survives(text in any::<String>()) {
            let multi = sanitize(&text);
            prop_assert!(
                !multi.chars().any(|c| c != '\n' && c != '\t' && unsafe_char(c, true)),
                "{multi:?}"
            );
            prop_assert!(!multi.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
            let line = sanitize_line(&text);
            prop_assert!(!line.chars().any(char::is_control), "{line:?}");
            prop_assert!(!line.chars().any(|c| unsafe_char(c, false)));
        }

        #[test]
        fn sanitizing_twice_changes_nothing_more(text in any::<String>()) {
            let once = sanitize(&text).into_owned();
            prop_assert_eq!(sanitize(&once), once.as_str());
            let line = sanitize_line(&text).into_owned();
            prop_assert_eq!(sanitize_line(&line), line.as_str());
        }

        #[test]
        fn printable_text_passes_through(text in "[^\\p{Cc}\\p{Cf}]*") {
            prop_assert_eq!(sanitize_line(&text), text.as_str());
        }

        #[test]
        fn payloads_anywhere_leave_no_raw_escape(
            prefix in any::<String>(),
            payload in 0usize..4,
            suffix in any::<String>(),
        ) {
            let text = format!("{prefix}{}{suffix}", PAYLOADS[payload]);
            let out = sanitize(&text);
            let raw = out.contains('\x1b') || out.contains('\r') || out.contains('\u{9b}');
            prop_assert!(!raw, "{:?}", out);
        }
    }
}
