//! Waiting for room in a stdio server's [`Backlog`] on threads: the
//! sleeping half of the core's
//! [`Admission`](rho_proto_core::runtime::driving::Admission), which
//! decides whether a call may go and what it ends with if not (the smol
//! executor awaits a timer instead of sleeping).

use std::time::{Duration, Instant};

use rho_proto_core::runtime::backlog::Backlog;
use rho_proto_core::runtime::driving::Admission;
use rho_proto_core::runtime::{Cancel, ToolCallError};

/// Blocks until the call to `server` may go: `Ok` once `backlog` has room
/// (or nobody drains it), the core's error once the call `budget` passed
/// or `cancel` was cancelled.
pub(crate) fn wait_for_room(
    backlog: &Backlog,
    budget: Duration,
    server: &str,
    cancel: Option<&Cancel>,
) -> Result<(), ToolCallError> {
    let admission = Admission::new(Instant::now(), budget);
    while let Some(pause) = admission.check(Instant::now(), backlog, server)? {
        if cancel.is_some_and(Cancel::is_cancelled) {
            return Err(admission.gave_up(server));
        }
        std::thread::sleep(pause);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rho_proto_core::session::{CallError, CancelNotice};

    use super::*;

    #[test]
    fn a_wait_ends_on_the_budget_the_cancel_flag_or_the_close() {
        let b = Backlog::default();
        b.add(2 * 1024 * 1024);
        match wait_for_room(&b, Duration::ZERO, "s", None) {
            Err(ToolCallError::Call(CallError::Transport { server, reason })) => {
                assert_eq!(server, "s");
                assert!(reason.contains("has not read its input"), "{reason}");
            }
            other => panic!("expected the not-reading error, got {other:?}"),
        }
        let cancel = Cancel::new();
        cancel.cancel();
        match wait_for_room(&b, Duration::from_secs(60), "s", Some(&cancel)) {
            Err(ToolCallError::Call(CallError::Cancelled {
                server,
                notice: CancelNotice::NothingRunning,
            })) => assert_eq!(server, "s"),
            other => panic!("expected the core's Cancelled, got {other:?}"),
        }
        b.close();
        assert!(wait_for_room(&b, Duration::from_secs(60), "s", None).is_ok());
    }
}
