//! rho bugs the world rows show, each being fixed apart from this test.
//! Where a check fails with one's symptom (and the row lists it), the
//! cell carries the issue's mark and footnote instead of failing the
//! test; a row that no longer shows it passes as any other. The table
//! says which rows showed which issue in the run that wrote it.

/// A known rho bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum KnownIssue {
    /// rho's stdio `server/discover` probe gives up after a fixed 3 s and
    /// takes the `initialize` sent right behind it as the handshake: a
    /// TypeScript SDK 2.x server that starts slower refuses that
    /// `initialize` (-32601) before answering the probe, and the start
    /// fails. A timer, not the server, decides the era.
    EraByTimer,
    /// MCP Apps: rho gives the model tools whose `_meta.ui.visibility`
    /// lacks `"model"` (the views' own tools).
    AppOnlyExported,
    /// rho opens `subscriptions/listen` on a server that declares nothing
    /// to listen for (no `listChanged`, no `subscribe`), and prints the
    /// server's refusal as a WARN line on stderr.
    ListenWarning,
}

impl KnownIssue {
    /// Whether a check's failure is this issue's symptom.
    pub(crate) fn shows_in(self, failure: &str) -> bool {
        match self {
            KnownIssue::EraByTimer => {
                failure.contains("answered initialize with an error: Method not found")
            }
            KnownIssue::AppOnlyExported => failure.starts_with("exports the app-only tools"),
            KnownIssue::ListenWarning => {
                failure.contains("WARN subscriptions/listen ended")
                    && failure.contains("Subscription limit reached")
            }
        }
    }

    /// The cell's mark.
    pub(crate) fn mark(self) -> &'static str {
        match self {
            KnownIssue::EraByTimer => "✗¹",
            KnownIssue::AppOnlyExported => "✗²",
            KnownIssue::ListenWarning => "✗³",
        }
    }

    /// The table's footnote.
    pub(crate) fn footnote(self) -> &'static str {
        match self {
            KnownIssue::EraByTimer => {
                "¹ Known rho bug, being fixed: on stdio rho waits a fixed 3 s for the answer to its `server/discover` probe, then takes the `initialize` it sent right behind the probe as the handshake. Context7 4.1.1 (on the TypeScript SDK 2.x, `@modelcontextprotocol/server` 2.0.0) starting later than that answers the `initialize` with -32601 before it answers the probe, and rho fails the start (\"handshake failed: the server answered initialize with an error: Method not found\"): a timer, not the server, decides the era. Always seen when the server starts 5 s late; on the plain stdio row when the machine is busy enough."
            }
            KnownIssue::AppOnlyExported => {
                "² Known rho bug, being fixed: rho gives the model the MCP Apps tools whose `_meta.ui.visibility` is `[\"app\"]` (server-pdf's `read_pdf_bytes`, `poll_pdf_commands`, `save_pdf`, `submit_*`), which a host must keep for the view."
            }
            KnownIssue::ListenWarning => {
                "³ Known rho bug, being fixed: in the 2026-07-28 era rho opens `subscriptions/listen` although Context7 declares nothing to listen for (`listChanged: false` everywhere, `subscribe: false`; it allows no subscriptions), and prints the refusal as a WARN line on the shell's stderr (\"subscriptions/listen ended (the server refused subscriptions/listen: Subscription limit reached (code -32603))\"). Whether the line comes before the shell exits depends on timing."
            }
        }
    }
}
