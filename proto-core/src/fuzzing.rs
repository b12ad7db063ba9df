//! What the fuzz harness needs beyond the public API, behind the `fuzzing`
//! feature, which only the harness turns on (rho's build never has it).
//!
//! The harness (`fuzz-harness/`, crate `rho-fuzz-harness`) drives the core
//! as a host does, through its public API, with one exception: the opaque
//! ids a host only ever gets from a session. It makes ids no session
//! handed out, to check that a made-up or stale id is refused and never
//! panics, and a server's request id from its wire form, to check that the
//! session's response writer round-trips. These constructors are that and
//! nothing else, as quinn-proto keeps a small `fuzzing` module in its core.

use crate::session::{CallId, QuestionId};
use crate::wire::jsonrpc::{RequestId, ServerRequestId};

/// The call id whose wire number is `n`, whether or not a session handed
/// it out.
pub fn call_id(n: u64) -> CallId {
    CallId(n)
}

/// The question id numbered `n`, whether or not a session asked it.
pub fn question_id(n: u64) -> QuestionId {
    QuestionId(n)
}

/// The id of a server's request that carried `id` on the wire.
pub fn server_request_id(id: RequestId) -> ServerRequestId {
    ServerRequestId(id)
}
