//! Stopping on a signal: SIGINT (Ctrl-C), SIGTERM and SIGHUP end every
//! `rho mcp` command that starts servers the same way, at any phase —
//! startup, a call, a form on the terminal. The handler only records the
//! signal; whoever is waiting (the startup wait, the call, the form's
//! reader) sees it within 50 ms, every session is closed and every
//! server's process group killed, and rho exits with 128 + the signal's
//! number (130 INT, 143 TERM, 129 HUP), as shells report it. A second
//! signal while rho is shutting down exits at once with the same code.
//!
//! Implementation note: the handlers come from `signal-hook` (with its
//! `signal-hook-registry`, on `libc`; no thread, no allocation in the
//! handler): its `flag` module is exactly "set an atomic from a handler",
//! which is all rho needs, and it chains with any handler already present.
//! A hand-written `sigaction` would need `unsafe` in the CLI for nothing
//! the crate does not already do. Handlers are installed only by commands
//! that start servers, so `rho mcp list` without `--connect` or `replay`
//! keep the default actions.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The signals that stop rho.
#[cfg(unix)]
const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];
#[cfg(not(unix))]
const STOP_SIGNALS: [i32; 2] = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];

/// What the handlers write.
struct Received {
    /// Set by the first stop signal; the runtimes and the form watch it.
    stop: Arc<AtomicBool>,
    /// Which signal it was (0 until one arrives).
    which: Arc<AtomicUsize>,
}

static RECEIVED: OnceLock<Received> = OnceLock::new();

/// Installs the handlers (once per process) and returns the flag the first
/// stop signal sets, for `RuntimeOptions::interrupt` and call cancellation.
pub(crate) fn install() -> Arc<AtomicBool> {
    let received = RECEIVED.get_or_init(|| {
        let received = Received {
            stop: Arc::new(AtomicBool::new(false)),
            which: Arc::new(AtomicUsize::new(0)),
        };
        for signal in STOP_SIGNALS {
            // Order matters: handlers run in registration order. The
            // conditional exit sees the flag unset on the first signal; the
            // signal number is stored before the flag, so a reader that
            // sees the flag also sees which signal set it.
            let code = i32::from(exit_code(signal));
            let registered = signal_hook::flag::register_conditional_shutdown(
                signal,
                code,
                Arc::clone(&received.stop),
            )
            .and_then(|_| {
                signal_hook::flag::register_usize(
                    signal,
                    Arc::clone(&received.which),
                    usize::try_from(signal).unwrap_or(0),
                )
            })
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&received.stop)));
            if let Err(error) = registered {
                tracing::warn!(
                    "cannot handle signal {signal}: {error}; it will end rho without stopping its servers"
                );
            }
        }
        received
    });
    Arc::clone(&received.stop)
}

/// The stop signal rho received, if any.
pub(crate) fn received() -> Option<i32> {
    let received = RECEIVED.get()?;
    if !received.stop.load(Ordering::SeqCst) {
        return None;
    }
    match received.which.load(Ordering::SeqCst) {
        0 => None,
        n => i32::try_from(n).ok(),
    }
}

/// The exit code of a command a signal stopped: 128 + its number.
pub(crate) fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(128)
}

/// The signal's conventional name, for the closing message.
pub(crate) fn name(signal: i32) -> String {
    #[cfg(unix)]
    {
        match signal {
            signal_hook::consts::SIGINT => return "SIGINT".into(),
            signal_hook::consts::SIGTERM => return "SIGTERM".into(),
            signal_hook::consts::SIGHUP => return "SIGHUP".into(),
            _ => {}
        }
    }
    format!("signal {signal}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(exit_code(signal_hook::consts::SIGINT), 130);
        assert_eq!(exit_code(signal_hook::consts::SIGTERM), 143);
        assert_eq!(exit_code(signal_hook::consts::SIGHUP), 129);
        assert_eq!(name(signal_hook::consts::SIGHUP), "SIGHUP");
    }
}
