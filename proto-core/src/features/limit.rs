//! The `max_output_bytes` cap: how much text one tool result, one prompt
//! turn or one resource may put in front of the model.
//!
//! A server decides how much it returns; the context window is the
//! user's. So the text a result becomes is cut at the configured number of
//! bytes (on a character boundary), and a note saying how much there was
//! and which setting cut it is appended, so neither the model nor the
//! person wonders why a document stops mid-sentence. The default, 64 KiB
//! ([`crate::config::DEFAULT_MAX_OUTPUT_BYTES`]), holds a long source file
//! or a few dozen pages of prose while keeping one answer to a fraction
//! of a typical context window.

use std::borrow::Cow;

use crate::features::content::human_size;

/// `text` cut to at most `max` bytes plus a note, when it is longer;
/// borrowed unchanged otherwise.
pub fn cap_output(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}\n[rho cut this at {} of {} (max_output_bytes)]",
        &text[..end],
        human_size(end),
        human_size(text.len())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched_and_long_text_is_cut_with_a_note() {
        assert!(matches!(cap_output("abc", 3), Cow::Borrowed("abc")));
        let cut = cap_output("abcdef", 4);
        assert_eq!(cut, "abcd\n[rho cut this at 4 B of 6 B (max_output_bytes)]");
    }

    #[test]
    fn the_cut_never_splits_a_character() {
        // "é" is two bytes: a cap inside it keeps the character out.
        let cut = cap_output("aé", 2);
        assert!(cut.starts_with("a\n"), "{cut}");
    }
}
