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
//! | any other error, an unreadable answer, no answer in the probe's wait | handshake (2025-11-25) |
//!
//! The fallback is never keyed to one error code: legacy servers answer an
//! unknown pre-`initialize` request with whatever they like, or not at all.
//! It shares the session's startup budget.
//!
//! In the stateless era every request carries [`ModernMeta`] in its
//! `_meta`: there is no `initialize`, no `notifications/initialized`, no
//! `ping` and no `logging/setLevel` (the log level rides on each request).

use serde_json::{Map, Value};

use crate::wire::jsonrpc::ErrorObject;
use crate::wire::protocol::{
    DiscoverResult, LATEST_PROTOCOL_VERSION, MODERN_PROTOCOL_VERSIONS, ModernMeta,
    SUPPORTED_PROTOCOL_VERSIONS, UnsupportedVersion, code, describe_error, is_modern,
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
}
