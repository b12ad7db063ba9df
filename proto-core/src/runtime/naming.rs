//! The names rho exports MCP tools under, and their inverse.
//!
//! A tool `tool` of the server with identity `server` is exported to the
//! model as `mcp__<server>__<tool>`. Model APIs accept only a narrow
//! alphabet in tool names, and two different (server, tool) pairs must
//! never collide, so each component is either kept verbatim or encoded as
//! `_rho_` followed by the lowercase hexadecimal of its UTF-8 bytes.
//!
//! A component is kept verbatim when it is non-empty, consists only of
//! ASCII letters, digits and `_`, contains no `__`, and neither begins nor
//! ends with `_` (which also excludes the reserved `_rho_` prefix). Every
//! other component is encoded; the empty component therefore encodes to
//! `_rho_` alone.
//!
//! # Why leading and trailing `_` are encoded
//!
//! Verbatim components alone could collide at the separator: server `a_`
//! with tool `b` and server `a` with tool `_b` would both give `mcp__a___b`.
//! With the rule above no component contains `__`, and the only component
//! ending in `_` is the empty one's `_rho_`; so the separator is the first
//! `__` whose left side is a valid component, and
//! [`parse_exported_name`] recovers the pair exactly. That inverse is what
//! makes [`exported_name`] injective.
//!
//! # Names longer than 64 characters
//!
//! The major model APIs refuse tool names longer than 64 characters, and
//! hex encoding doubles a component's length (a server id with a `-` is
//! always encoded). A full name over [`MAX_MODEL_NAME_LEN`] is therefore
//! offered to the model in a short form, [`model_name`]: its first 47
//! characters (readable: the prefix and most of the server component), `_`,
//! and the first 16 hex digits (64 bits) of the SHA-256 of the whole full
//! name — exactly 64 characters, deterministic from run to run. Two full
//! names share a short form only if their digests collide in 64 bits; the
//! registry checks every name it hands out and refuses the later of two
//! tools that would share one, so the names a model sees are always
//! distinct. The full name keeps routing: the registry answers to either.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The prefix of every exported MCP tool name.
pub const PREFIX: &str = "mcp__";

/// The separator between the server and tool components.
const SEPARATOR: &str = "__";

/// Marks an encoded component; reserved, so no verbatim component starts
/// with it.
const ENCODED: &str = "_rho_";

/// Whether `s` may appear in an exported name unchanged.
fn is_verbatim(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !s.contains(SEPARATOR)
        && !s.starts_with('_')
        && !s.ends_with('_')
}

/// One component of an exported name: `s` itself when it is safe to use
/// verbatim, else `_rho_` and the lowercase hex of its UTF-8 bytes. The
/// result contains only `[A-Za-z0-9_]`.
pub fn encode_component(s: &str) -> Cow<'_, str> {
    if is_verbatim(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(ENCODED.len() + 2 * s.len());
    out.push_str(ENCODED);
    for b in s.bytes() {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    Cow::Owned(out)
}

/// The inverse of [`encode_component`]: `None` for any text it never
/// produces (including non-canonical encodings such as `_rho_61` for `a`).
pub fn decode_component(s: &str) -> Option<String> {
    let Some(hex) = s.strip_prefix(ENCODED) else {
        return is_verbatim(s).then(|| s.to_owned());
    };
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes = hex
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| Some((hex_value(pair[0])? << 4) | hex_value(pair[1])?))
        .collect::<Option<Vec<u8>>>()?;
    let decoded = String::from_utf8(bytes).ok()?;
    // A string that would be kept verbatim has exactly one spelling.
    (!is_verbatim(&decoded)).then_some(decoded)
}

/// The value of one lowercase hex digit.
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// The name the model sees for `tool` of server `server`:
/// `mcp__<server>__<tool>`, each component encoded by [`encode_component`].
/// Distinct pairs always give distinct names.
pub fn exported_name(server: &str, tool: &str) -> String {
    let server = encode_component(server);
    let tool = encode_component(tool);
    let mut name =
        String::with_capacity(PREFIX.len() + server.len() + SEPARATOR.len() + tool.len());
    name.push_str(PREFIX);
    name.push_str(&server);
    name.push_str(SEPARATOR);
    name.push_str(&tool);
    name
}

/// The longest tool name the major model APIs accept, and so the longest
/// name rho offers a model.
pub const MAX_MODEL_NAME_LEN: usize = 64;

/// How many characters of a long full name its short form keeps.
const SHORT_PREFIX_LEN: usize = MAX_MODEL_NAME_LEN - 1 - SHORT_DIGEST_HEX;

/// How many hex digits of the SHA-256 digest a short form carries.
const SHORT_DIGEST_HEX: usize = 16;

/// The name a model is offered for the full exported name `full` (as
/// [`exported_name`] makes it): `full` itself when it has at most
/// [`MAX_MODEL_NAME_LEN`] characters, else its short form (see the module
/// docs). The result uses only `[A-Za-z0-9_]` when `full` does.
pub fn model_name(full: &str) -> Cow<'_, str> {
    if full.len() <= MAX_MODEL_NAME_LEN {
        return Cow::Borrowed(full);
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(full.as_bytes());
    let mut out = String::with_capacity(MAX_MODEL_NAME_LEN);
    // Exported names are ASCII; a non-ASCII `full` is cut on a char boundary.
    let mut cut = SHORT_PREFIX_LEN;
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    out.push_str(&full[..cut]);
    out.push('_');
    for b in digest.iter().take(SHORT_DIGEST_HEX / 2) {
        let _ = write!(out, "{b:02x}");
    }
    Cow::Owned(out)
}

/// The inverse of [`exported_name`]: the (server, tool) pair a name was
/// made from, or `None` when no pair exports to `name`.
pub fn parse_exported_name(name: &str) -> Option<(String, String)> {
    let rest = name.strip_prefix(PREFIX)?;
    // A valid server component contains no `__`, so the separator is the
    // first `__` whose left side decodes (see the module docs); at most the
    // empty server's `_rho_` makes the very first `__` a false start.
    let mut from = 0;
    while let Some(offset) = rest.get(from..)?.find(SEPARATOR) {
        let at = from + offset;
        if let Some(server) = decode_component(&rest[..at]) {
            let tool = decode_component(&rest[at + SEPARATOR.len()..])?;
            return Some((server, tool));
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_names_are_kept_verbatim() {
        assert_eq!(exported_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(exported_name("gh2", "list_issues"), "mcp__gh2__list_issues");
        assert!(matches!(encode_component("a_b"), Cow::Borrowed("a_b")));
    }

    #[test]
    fn hyphenated_names_are_hex_encoded() {
        assert_eq!(encode_component("get-env"), "_rho_6765742d656e76");
        assert_eq!(
            exported_name("my-server", "get-env"),
            "mcp___rho_6d792d736572766572___rho_6765742d656e76"
        );
    }

    #[test]
    fn double_underscore_is_encoded() {
        assert_eq!(encode_component("a__b"), "_rho_615f5f62");
    }

    #[test]
    fn reserved_prefix_is_encoded() {
        assert_eq!(encode_component("_rho_x"), "_rho_5f72686f5f78");
        assert_eq!(
            decode_component("_rho_5f72686f5f78").as_deref(),
            Some("_rho_x")
        );
    }

    #[test]
    fn leading_or_trailing_underscore_is_encoded() {
        assert_eq!(encode_component("a_"), "_rho_615f");
        assert_eq!(encode_component("_b"), "_rho_5f62");
        assert_ne!(exported_name("a_", "b"), exported_name("a", "_b"));
    }

    #[test]
    fn unicode_is_encoded_as_utf8_hex() {
        assert_eq!(encode_component("é"), "_rho_c3a9");
        assert_eq!(decode_component("_rho_c3a9").as_deref(), Some("é"));
    }

    #[test]
    fn empty_component_is_bare_marker() {
        assert_eq!(encode_component(""), "_rho_");
        assert_eq!(exported_name("", ""), "mcp___rho____rho_");
        assert_eq!(
            parse_exported_name("mcp___rho____rho_"),
            Some((String::new(), String::new()))
        );
        assert_eq!(
            parse_exported_name("mcp___rho___x"),
            Some((String::new(), "x".to_owned()))
        );
    }

    #[test]
    fn parse_inverts_examples() {
        assert_eq!(
            parse_exported_name("mcp__everything__echo"),
            Some(("everything".to_owned(), "echo".to_owned()))
        );
        assert_eq!(
            parse_exported_name("mcp__s___rho_615f5f62"),
            Some(("s".to_owned(), "a__b".to_owned()))
        );
    }

    #[test]
    fn parse_rejects_names_never_exported() {
        for name in [
            "",
            "echo",
            "mcp__",
            "mcp__everything",
            "mcp__a__b__c",
            "mcp__a___b",
            "mcp___rho_61__b", // non-canonical spelling of `a`
            "mcp___rho_6__b",  // odd hex
            "mcp___rho_4A__b", // uppercase hex
            "mcp___rho_ff__b", // not UTF-8
            "mcp__a-b__c",
            "mcp__a__",
        ] {
            assert_eq!(parse_exported_name(name), None, "{name}");
        }
    }

    #[test]
    fn names_up_to_64_characters_are_offered_whole() {
        let name = exported_name("s", &"t".repeat(56));
        assert_eq!(name.len(), 64);
        assert_eq!(model_name(&name), name.as_str());
    }

    #[test]
    fn long_names_get_a_64_character_short_form_with_a_digest() {
        let full = exported_name("my-server", "get-environment-variables");
        assert!(full.len() > 64, "{full}");
        let short = model_name(&full);
        assert_eq!(short.len(), MAX_MODEL_NAME_LEN);
        assert!(short.starts_with(&full[..47]), "{short}");
        assert!(
            short
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "{short}"
        );
        // Deterministic, and a one-character change in the tail moves it.
        assert_eq!(model_name(&full), short);
        let other = exported_name("my-server", "get-environment-variablez");
        assert_eq!(other[..47], full[..47]);
        assert_ne!(model_name(&other), short);
        // The pinned value: a change of rule is a visible change.
        assert_eq!(
            short,
            "mcp___rho_6d792d736572766572___rho_6765742d656e_355a4bcd727a0414"
        );
    }

    /// Strings biased towards the characters that could break the scheme.
    fn tricky() -> impl Strategy<Value = String> {
        prop_oneof![
            ".*",
            "[a-zA-Z0-9_]{0,12}",
            "(_|__|_rho_|rho|a|0|f|6|-){0,6}",
            "(_rho_)?[0-9a-f_]{0,10}",
        ]
    }

    proptest! {
        #[test]
        fn parse_inverts_export(server in tricky(), tool in tricky()) {
            let name = exported_name(&server, &tool);
            prop_assert!(
                name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
                "{name}"
            );
            prop_assert_eq!(parse_exported_name(&name), Some((server, tool)));
        }

        #[test]
        fn model_names_fit_and_stay_distinct(a in tricky(), b in tricky(), c in tricky()) {
            let (x, y) = (exported_name(&a, &b), exported_name(&a, &c));
            let (mx, my) = (model_name(&x), model_name(&y));
            prop_assert!(mx.len() <= MAX_MODEL_NAME_LEN);
            prop_assert_eq!(x == y, mx == my);
        }

        #[test]
        fn components_round_trip(s in tricky()) {
            prop_assert_eq!(decode_component(&encode_component(&s)), Some(s));
        }

        #[test]
        fn distinct_pairs_get_distinct_names(
            a in "[a_rho0]{0,7}", b in "[a_rho0]{0,7}",
            c in "[a_rho0]{0,7}", d in "[a_rho0]{0,7}",
        ) {
            prop_assume!((&a, &b) != (&c, &d));
            prop_assert_ne!(exported_name(&a, &b), exported_name(&c, &d));
        }
    }

    #[test]
    fn small_alphabet_has_no_collisions_exhaustively() {
        // Every string of length <= 4 over the alphabet that could collide.
        let alphabet = ['a', '_', 'r', 'h', 'o', '0'];
        let mut words = vec![String::new()];
        let mut layer = vec![String::new()];
        for _ in 0..4 {
            layer = layer
                .iter()
                .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                .collect();
            words.extend(layer.iter().cloned());
        }
        // A name that parses back to its own pair cannot belong to another.
        for s in &words {
            for t in words.iter().step_by(7) {
                let name = exported_name(s, t);
                assert_eq!(parse_exported_name(&name), Some((s.clone(), t.clone())));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for s in words.iter().take(300) {
            for t in words.iter().take(300) {
                assert!(seen.insert(exported_name(s, t)), "collision: {s:?} {t:?}");
            }
        }
    }
}
