//! Which protocol era a session speaks, and how it finds out: the one
//! seam between the 2025 handshake and the stateless 2026-07-28 revision.
//!
//! A session offered a stateless version starts by probing with
//! `server/discover` (on HTTP before anything else; on stdio as the spec's
//! backward-compatibility probe). [`probe_outcome`] reads the answer:
//!
//! | answer | era |
//! | --- | --- |
//! | a `DiscoverResult` listing a stateless version rho speaks | stateless, that version |
//! | a `DiscoverResult` listing only handshake versions rho speaks | handshake, offering the newest |
//! | -32022 listing a stateless version rho speaks | probe again with it, once |
//! | -32022 listing only handshake versions | handshake, offering the newest |
//! | -32022 listing nothing rho speaks, -32020, -32021 | the server is modern and refused: fail in words |
//! | any other error, an unreadable answer | handshake (2025-11-25) |
//!
//! The fallback is never keyed to one error code: legacy servers answer an
//! unknown pre-`initialize` request with whatever they like, or not at all.
//! It shares the session's startup budget.
//!
//! On stdio an `initialize` goes right behind the probe, and a timer never
//! decides the era: an answer does. A handshake result to it means 2025
//! (a server that ignores the probe is ready at once); a refusal that says
//! the method or version is unknown ([`refusal_says_modern`]) means the
//! probe's answer is coming and is waited for, however slowly the server
//! starts (the TypeScript SDK 2.x on a cold `npx`); only a refusal that
//! says neither gives the probe a short wait before a plain `initialize`.
//!
//! In the stateless era every request carries [`ModernMeta`] in its
//! `_meta`: there is no `initialize`, no `notifications/initialized`, no
//! `ping` and no `logging/setLevel` (the log level rides on each request).

use serde_json::{Map, Value};

use crate::wire::jsonrpc::ErrorObject;
use crate::wire::protocol::{
    DiscoverResult, LATEST_PROTOCOL_VERSION, MODERN_PROTOCOL_VERSIONS, ModernMeta,
    SUPPORTED_PROTOCOL_VERSIONS, UnsupportedVersion, code, describe_error, is_modern,
    is_modern_error,
};

/// The era a session is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    /// `server/discover` is out; `offered` is the version it carries.
    /// `retried`: it already went again after a -32022.
    Probing {
        offered: &'static str,
        retried: bool,
    },
    /// The 2025 handshake (`initialize`, sessions, ping).
    Legacy,
    /// Stateless, at `version`.
    Modern { version: &'static str },
}

impl Era {
    /// The stateless version requests carry now (probing or modern).
    pub(crate) fn stateless_version(&self) -> Option<&'static str> {
        match self {
            Era::Probing { offered, .. } => Some(offered),
            Era::Modern { version } => Some(version),
            Era::Legacy => None,
        }
    }
}

/// The stateless version rho speaks that `version` names, as a constant.
pub(crate) fn modern_version(version: &str) -> Option<&'static str> {
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == version)
}

/// What the answer to a `server/discover` probe decides.
#[derive(Debug, PartialEq)]
pub(crate) enum ProbeOutcome {
    /// The server is modern: speak `version` with it.
    Modern {
        result: Box<DiscoverResult>,
        version: &'static str,
    },
    /// The server is modern but wants another stateless version: probe
    /// again with it.
    Retry(&'static str),
    /// The server is legacy (or only speaks handshake versions rho also
    /// speaks): `initialize`, offering `offer`. `why` is for the log.
    Legacy { offer: &'static str, why: String },
    /// The server is modern and nothing rho speaks works with it.
    Refused(String),
}

/// Reads the answer to a probe. `retried`: this was already the probe
/// again after a -32022, which is not repeated.
pub(crate) fn probe_outcome(reply: Result<Value, ErrorObject>, retried: bool) -> ProbeOutcome {
    let error = match reply {
        Ok(value) => return discover_result_outcome(&value),
        Err(error) => error,
    };
    if let Some(versions) = UnsupportedVersion::from_error(&error) {
        if let Some(version) = versions.modern_choice() {
            if !retried {
                return ProbeOutcome::Retry(version);
            }
        } else if let Some(offer) = versions.legacy_choice() {
            return ProbeOutcome::Legacy {
                offer,
                why: format!(
                    "server/discover was refused, listing only handshake versions: {error}"
                ),
            };
        }
        return ProbeOutcome::Refused(format!(
            "the server refused server/discover: {}",
            describe_error(&error)
        ));
    }
    if matches!(
        error.code,
        code::HEADER_MISMATCH | code::MISSING_REQUIRED_CLIENT_CAPABILITY
    ) {
        return ProbeOutcome::Refused(format!(
            "the server refused server/discover: {}",
            describe_error(&error)
        ));
    }
    ProbeOutcome::Legacy {
        offer: LATEST_PROTOCOL_VERSION,
        why: format!("server/discover was answered with an error ({error})"),
    }
}

fn discover_result_outcome(value: &Value) -> ProbeOutcome {
    let result = match DiscoverResult::from_value(value) {
        Ok(result) => result,
        // A legacy server that answers unknown methods with `{}`, say.
        Err(e) => {
            return ProbeOutcome::Legacy {
                offer: LATEST_PROTOCOL_VERSION,
                why: format!("the server/discover answer is not a discovery result ({e})"),
            };
        }
    };
    if let Some(version) = result.modern_choice() {
        return ProbeOutcome::Modern {
            result: Box::new(result),
            version,
        };
    }
    if let Some(offer) = result.legacy_choice() {
        return ProbeOutcome::Legacy {
            offer,
            why: "the server lists only handshake protocol versions".into(),
        };
    }
    let listed: Vec<String> = result
        .supported_versions
        .iter()
        .take(8)
        .map(|v| v.chars().take(32).collect())
        .collect();
    ProbeOutcome::Refused(format!(
        "the server speaks protocol versions {}, none of which rho speaks (rho speaks {} and {})",
        if listed.is_empty() {
            "(none listed)".to_owned()
        } else {
            listed.join(", ")
        },
        MODERN_PROTOCOL_VERSIONS.join(", "),
        SUPPORTED_PROTOCOL_VERSIONS.join(", ")
    ))
}

/// Whether a refusal of `initialize` says the server is a modern one: it
/// does not know the method (-32601, or words to that effect), or not the
/// version or capabilities its envelope carried (-32022, -32021). A 2025
/// server answers `initialize` with its handshake, so such a refusal means
/// the `server/discover` answer is coming, however slowly the server
/// starts, and is waited for within the startup budget.
pub(crate) fn refusal_says_modern(error: &ErrorObject) -> bool {
    if error.code == code::METHOD_NOT_FOUND || is_modern_error(error) {
        return true;
    }
    let message = error.message.to_ascii_lowercase();
    ["method not found", "unknown method", "protocol version"]
        .iter()
        .any(|words| message.contains(words))
}

/// The `_meta` entries of every request at `version`, as a map to merge.
pub(crate) fn meta_map(
    version: &str,
    capabilities: &Value,
    client_info: &crate::wire::protocol::Implementation,
    log_level: Option<&str>,
) -> Map<String, Value> {
    debug_assert!(is_modern(version));
    let meta = ModernMeta {
        protocol_version: version,
        client_capabilities: capabilities,
        client_info,
        log_level,
    };
    match serde_json::to_value(meta) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The `_meta` entries every request of a stateless era carries, kept
/// both as a map (to merge into a value) and rendered once as JSON (to
/// splice into the bytes of each request without cloning or
/// re-serializing the client's capabilities every time).
#[derive(Clone, Debug, Default)]
pub(crate) struct Meta {
    map: Map<String, Value>,
    /// The map's members as JSON, without the braces: `"k":v,"k2":v2`.
    body: String,
}

impl Meta {
    pub(crate) fn new(map: Map<String, Value>) -> Self {
        let mut body = serde_json::to_string(&map).unwrap_or_else(|_| "{}".into());
        // `{...}` → `...`: serde_json writes a map with its braces.
        body.pop();
        body.remove(0);
        Self { map, body }
    }

    pub(crate) fn map(&self) -> &Map<String, Value> {
        &self.map
    }

    /// Writes the request `id` `method` with `params`, this `_meta` merged
    /// into the params' own `_meta` (what it had first, such as a progress
    /// token; an entry of the same name is replaced by this one). The
    /// bytes equal `write_request` of `with_meta(params, self.map())`
    /// whenever no entry is replaced.
    pub(crate) fn write_request(
        &self,
        out: &mut Vec<u8>,
        id: u64,
        method: &str,
        params: Option<&Value>,
    ) {
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        json_into(out, &id);
        out.extend_from_slice(b",\"method\":");
        json_into(out, method);
        out.extend_from_slice(b",\"params\":{");
        let mut first = true;
        let mut meta_written = false;
        if let Some(Value::Object(obj)) = params {
            for (k, v) in obj {
                if !first {
                    out.push(b',');
                }
                first = false;
                json_into(out, k);
                out.push(b':');
                if k == "_meta" {
                    self.write_merged(out, v.as_object());
                    meta_written = true;
                } else {
                    json_into(out, v);
                }
            }
        }
        if !meta_written {
            if !first {
                out.push(b',');
            }
            out.extend_from_slice(b"\"_meta\":");
            self.write_merged(out, None);
        }
        out.extend_from_slice(b"}}");
    }

    /// Writes a `tools/call` request straight from the host's name and
    /// arguments: the bytes [`Meta::write_request`] writes for the params
    /// `{"name", "arguments", "_meta": {"progressToken"}}`, without
    /// building that map. No era entry is named `progressToken`, so none
    /// replaces it.
    pub(crate) fn write_call(
        &self,
        out: &mut Vec<u8>,
        id: u64,
        name: &str,
        arguments: &Value,
        progress_token: u64,
    ) {
        debug_assert!(!self.map.contains_key("progressToken"));
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        json_into(out, &id);
        out.extend_from_slice(b",\"method\":\"tools/call\",\"params\":{\"name\":");
        json_into(out, name);
        out.extend_from_slice(b",\"arguments\":");
        json_into(out, arguments);
        out.extend_from_slice(b",\"_meta\":{\"progressToken\":");
        json_into(out, &progress_token);
        if !self.body.is_empty() {
            out.push(b',');
            out.extend_from_slice(self.body.as_bytes());
        }
        out.extend_from_slice(b"}}}");
    }

    /// `{` the entries of `existing` this meta does not replace, then this
    /// meta's own `}`.
    fn write_merged(&self, out: &mut Vec<u8>, existing: Option<&Map<String, Value>>) {
        out.push(b'{');
        let mut first = true;
        for (k, v) in existing.into_iter().flatten() {
            if self.map.contains_key(k) {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            json_into(out, k);
            out.push(b':');
            json_into(out, v);
        }
        if !self.body.is_empty() {
            if !first {
                out.push(b',');
            }
            out.extend_from_slice(self.body.as_bytes());
        }
        out.push(b'}');
    }
}

/// A stateless request's params as kept to be sent again, before the
/// era's `_meta` goes in.
#[derive(Clone, Debug)]
pub(crate) enum Params {
    /// Params as a JSON value, or none.
    Value(Option<Value>),
    /// A `tools/call`: the tool's name and the host's arguments, moved
    /// here rather than copied into a new map (the hot path of every
    /// stateless call), and the progress token its `_meta` carries.
    Call {
        name: String,
        arguments: Value,
        progress_token: u64,
    },
}

impl Params {
    /// The params as one JSON value, their own `_meta` included (what a
    /// multi round-trip retry merges its answers into).
    pub(crate) fn to_value(&self) -> Option<Value> {
        match self {
            Self::Value(params) => params.clone(),
            Self::Call {
                name,
                arguments,
                progress_token,
            } => Some(serde_json::json!({
                "name": name,
                "arguments": arguments,
                "_meta": {"progressToken": progress_token},
            })),
        }
    }

    /// Writes the request `id` of `method` with these params and `meta`.
    pub(crate) fn write(&self, meta: &Meta, out: &mut Vec<u8>, id: u64, method: &str) {
        match self {
            Self::Value(params) => meta.write_request(out, id, method, params.as_ref()),
            Self::Call {
                name,
                arguments,
                progress_token,
            } => {
                debug_assert_eq!(method, "tools/call");
                meta.write_call(out, id, name, arguments, *progress_token);
            }
        }
    }
}

/// Appends `value` as JSON. Strings and `Value`s (string keys, finite
/// numbers) cannot fail to serialize; were one to, `null` stands in.
fn json_into<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

/// `params` with `meta` merged into its `_meta` (which keeps what it had,
/// such as a progress token). Absent params become an object.
pub(crate) fn with_meta(params: Option<Value>, meta: &Map<String, Value>) -> Value {
    let mut obj = match params {
        Some(Value::Object(obj)) => obj,
        _ => Map::new(),
    };
    let entry = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(existing) = entry {
        for (k, v) in meta {
            existing.insert(k.clone(), v.clone());
        }
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(code: i64, data: Value) -> Result<Value, ErrorObject> {
        Err(ErrorObject {
            code,
            message: "no".into(),
            data: Some(data),
        })
    }

    #[test]
    fn a_discovery_result_with_the_modern_version_is_modern() {
        let outcome = probe_outcome(
            Ok(
                json!({"supportedVersions": ["2026-07-28", "2025-11-25"], "capabilities": {"tools": {}},
                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}),
            ),
            false,
        );
        let ProbeOutcome::Modern { result, version } = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(version, "2026-07-28");
        assert!(result.capabilities.tools);
        assert_eq!(result.server_info.expect("info").name, "s");
    }

    #[test]
    fn unsupported_version_retries_once_then_refuses() {
        let data = json!({"supported": ["2026-07-28"], "requested": "2026-07-28"});
        assert_eq!(
            probe_outcome(err(-32022, data.clone()), false),
            ProbeOutcome::Retry("2026-07-28")
        );
        assert!(matches!(
            probe_outcome(err(-32022, data), true),
            ProbeOutcome::Refused(_)
        ));
    }

    #[test]
    fn unsupported_version_listing_only_handshake_versions_falls_back_to_them() {
        let data = json!({"supported": ["2025-06-18"], "requested": "2026-07-28"});
        assert!(matches!(
            probe_outcome(err(-32022, data), false),
            ProbeOutcome::Legacy {
                offer: "2025-06-18",
                ..
            }
        ));
    }

    #[test]
    fn other_errors_and_non_results_fall_back_to_the_handshake() {
        for reply in [
            err(-32601, json!(null)),
            err(-32602, json!({})),
            err(-32000, json!("Bad Request")),
            Ok(json!({})),
            Ok(json!({"supportedVersions": "2026-07-28", "capabilities": {}})),
        ] {
            assert!(
                matches!(
                    probe_outcome(reply.clone(), false),
                    ProbeOutcome::Legacy {
                        offer: "2025-11-25",
                        ..
                    }
                ),
                "{reply:?}"
            );
        }
    }

    #[test]
    fn modern_refusals_and_unknown_versions_fail_in_words() {
        let ProbeOutcome::Refused(why) = probe_outcome(err(-32020, json!(null)), false) else {
            panic!()
        };
        assert!(why.contains("headers"), "{why}");
        let ProbeOutcome::Refused(why) = probe_outcome(
            Ok(json!({"supportedVersions": ["2030-01-01"], "capabilities": {}})),
            false,
        ) else {
            panic!()
        };
        assert!(
            why.contains("2030-01-01") && why.contains("rho speaks"),
            "{why}"
        );
    }

    #[test]
    fn meta_merges_into_params_and_keeps_the_progress_token() {
        let info = crate::wire::protocol::Implementation {
            name: "rho".into(),
            version: "1".into(),
            title: None,
        };
        let meta = meta_map("2026-07-28", &json!({"roots": {}}), &info, Some("debug"));
        let params = with_meta(
            Some(json!({"name": "t", "_meta": {"progressToken": 3}})),
            &meta,
        );
        assert_eq!(
            params,
            json!({"name": "t", "_meta": {
                "progressToken": 3,
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
                "io.modelcontextprotocol/clientInfo": {"name": "rho", "version": "1"},
                "io.modelcontextprotocol/logLevel": "debug"
            }})
        );
        assert_eq!(with_meta(None, &Map::new()), json!({"_meta": {}}));
    }

    #[test]
    fn spliced_meta_writes_the_bytes_of_the_merged_value() {
        let info = crate::wire::protocol::Implementation {
            name: "rho".into(),
            version: "1".into(),
            title: None,
        };
        let meta = Meta::new(meta_map(
            "2026-07-28",
            &json!({"roots": {"listChanged": true}, "elicitation": {}}),
            &info,
            Some("debug"),
        ));
        let cases = [
            None,
            Some(json!({})),
            Some(json!({"name": "t", "arguments": {"q": "a \"b\"\n"}})),
            Some(json!({"name": "t", "_meta": {"progressToken": 3}, "arguments": {}})),
            Some(json!({"_meta": "not an object"})),
        ];
        for params in cases {
            let mut spliced = Vec::new();
            meta.write_request(&mut spliced, 7, "tools/call", params.as_ref());
            let mut merged = Vec::new();
            crate::wire::jsonrpc::write_request(
                &mut merged,
                crate::wire::jsonrpc::ClientRequestId(7),
                "tools/call",
                Some(&with_meta(params.clone(), meta.map())),
            );
            assert_eq!(
                String::from_utf8(spliced).expect("utf-8"),
                String::from_utf8(merged).expect("utf-8"),
                "{params:?}"
            );
        }
        // A call written from its parts is the same bytes as its value,
        // with the era's entries and without any.
        let none = Meta::default();
        for meta in [&meta, &none] {
            for (arguments, token) in [
                (json!({}), 0),
                (json!({"q": "a \"b\"\n", "n": [1, 2.5, null]}), u64::MAX),
                (json!({"z": 1, "a": {"b": true}}), 42),
            ] {
                let params = Params::Call {
                    name: "say \"hi\"".into(),
                    arguments,
                    progress_token: token,
                };
                let mut parts = Vec::new();
                params.write(meta, &mut parts, 9, "tools/call");
                let mut whole = Vec::new();
                Params::Value(params.to_value()).write(meta, &mut whole, 9, "tools/call");
                assert_eq!(
                    String::from_utf8(parts).expect("utf-8"),
                    String::from_utf8(whole).expect("utf-8"),
                    "{params:?}"
                );
            }
        }
        // An entry of the same name is replaced, not doubled.
        let mut out = Vec::new();
        let clash = json!({"_meta": {"io.modelcontextprotocol/logLevel": "error", "k": 1}});
        meta.write_request(&mut out, 1, "m", Some(&clash));
        let written: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(
            written["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
            "debug"
        );
        assert_eq!(written["params"]["_meta"]["k"], 1);
        assert_eq!(String::from_utf8_lossy(&out).matches("logLevel").count(), 1);
    }
}
