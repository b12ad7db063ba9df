//! Stopping on a signal: SIGINT (Ctrl-C), SIGTERM and SIGHUP end every
//! `rho mcp` command that starts servers the same way, at any phase —
//! startup, a call, a form on the terminal. The handler only records the
//! signal (a handler can wake nobody); the watcher thread then cancels
//! the [`Cancel`] that the startup wait and the call wait on, which wakes
//! them at once, and the form's reader sees the flag within 50 ms. Every
//! session is closed and every server's process group killed, and rho
//! exits with 128 + the signal's number (130 INT, 143 TERM, 129 HUP), as
//! shells report it.
//!
//! A second signal while rho shuts down (which takes up to the two-second
//! grace) exits at once, with 128 + that second signal, and first kills
//! the process group of every child rho has (on Linux, read from `/proc`),
//! so even the impatient path leaves no server or grandchild behind;
//! elsewhere it only exits. The watcher is a thread, started only once a
//! server is about to start ([`watch_for_second`]), so a run with nothing
//! enabled still starts no thread; before that, nothing waits on the
//! token, and a second signal just exits.
//!
//! On Windows the stops are the console's control events
//! (`rho_os::console`): Ctrl-C and Ctrl-Break stop as SIGINT (130), the
//! console closing as SIGHUP (129), logoff and shutdown as SIGTERM (143),
//! through the same flag and the same orderly shutdown; a second event
//! exits at once, and the servers' Job Objects, closed with rho, end
//! every server and what it started.
//!
//! Implementation note: the handlers come from `signal-hook` (with its
//! `signal-hook-registry`, on `libc`; both small and maintained, no
//! allocation in the handler): its `flag` module is exactly "set an atomic
//! from a handler", its iterator is a self-pipe a thread can block on, and
//! it chains with any handler already present. A hand-written `sigaction`
//! would need `unsafe` in the CLI for nothing the crate does not already
//! do. Handlers are installed only by commands that start servers, so
//! `rho mcp list` without `--connect` and `replay` keep the default
//! actions.

#[cfg(unix)]
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use rho_host::Cancel;

/// The signals that stop rho.
#[cfg(unix)]
const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// What the handlers write.
struct Received {
    /// Set by the first stop signal (from the handler); the form and the
    /// shell's loops read it.
    stop: Arc<AtomicBool>,
    /// Cancelled on the first stop signal by a thread (a handler cannot
    /// wake anyone): the watcher on Unix, the console's handler thread on
    /// Windows. The startup wait and the calls wait on it.
    cancel: Cancel,
    /// Which signal it was (0 until one arrives).
    which: Arc<AtomicUsize>,
    /// The handlers that exit on a second signal, until the watcher takes
    /// over.
    #[cfg(unix)]
    exit_on_second: Mutex<Vec<signal_hook::SigId>>,
}

static RECEIVED: OnceLock<Received> = OnceLock::new();

/// Installs the handlers (once per process) and returns the token the
/// first stop signal cancels, for `RuntimeOptions::interrupt` and call
/// cancellation. It is cancelled from the watcher thread, which runs once
/// a server is about to start ([`watch_for_second`]): nothing waits on it
/// before that.
pub(crate) fn install() -> Cancel {
    let received = RECEIVED.get_or_init(|| {
        let received = Received {
            stop: Arc::new(AtomicBool::new(false)),
            cancel: Cancel::new(),
            which: Arc::new(AtomicUsize::new(0)),
            #[cfg(unix)]
            exit_on_second: Mutex::new(Vec::new()),
        };
        #[cfg(windows)]
        install_console(&received);
        #[cfg(unix)]
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
            .and_then(|id| {
                lock(&received.exit_on_second).push(id);
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
    received.cancel.clone()
}

/// Whether a stop signal arrived (the handlers' flag: true as soon as the
/// handler ran, before any thread saw it).
pub(crate) fn stopped() -> bool {
    RECEIVED
        .get()
        .is_some_and(|received| received.stop.load(Ordering::SeqCst))
}

/// The console's control events as stop signals: the first records its
/// signal and sets the flag (in that order, as on Unix); a second exits
/// at once with its code (the Job Objects close with rho and kill every
/// server).
#[cfg(windows)]
fn install_console(received: &Received) {
    let stop = Arc::clone(&received.stop);
    let which = Arc::clone(&received.which);
    let cancel = received.cancel.clone();
    // The console runs this on a thread of its own: it may wake waiters.
    let installed = rho_os::console::on_stop_event(move |signal| {
        if stop.load(Ordering::SeqCst) {
            std::process::exit(i32::from(exit_code(signal)));
        }
        which.store(usize::try_from(signal).unwrap_or(0), Ordering::SeqCst);
        stop.store(true, Ordering::SeqCst);
        cancel.cancel();
    });
    if let Err(error) = installed {
        tracing::warn!(
            "cannot handle Ctrl-C: {error}; it will end rho without stopping its servers"
        );
    }
}

/// Starts the thread that, on a second stop signal, kills every child's
/// process group and exits at once (instead of exiting without killing
/// anything). Called when servers are about to start; once per process.
#[cfg(unix)]
pub(crate) fn watch_for_second() {
    static WATCHING: OnceLock<()> = OnceLock::new();
    WATCHING.get_or_init(|| {
        let Some(received) = RECEIVED.get() else {
            return;
        };
        // Read before registering: a signal after this line reaches the
        // iterator, so one is never counted twice.
        let already = received.stop.load(Ordering::SeqCst);
        let mut signals = match signal_hook::iterator::Signals::new(STOP_SIGNALS) {
            Ok(signals) => signals,
            Err(error) => {
                tracing::debug!("no second-signal watcher: {error}");
                return;
            }
        };
        let cancel = received.cancel.clone();
        let spawned = std::thread::Builder::new()
            .name("rho-signals".into())
            .spawn(move || {
                // The first signal cancels what waits (it may have come
                // before this thread); a second one stops at once.
                let mut seen = usize::from(already);
                if already {
                    cancel.cancel();
                }
                for _ in signals.forever() {
                    seen += 1;
                    if seen >= 2 {
                        stop_now();
                    }
                    cancel.cancel();
                }
            });
        match spawned {
            Ok(_) => {
                for id in lock(&received.exit_on_second).drain(..) {
                    signal_hook::low_level::unregister(id);
                }
            }
            Err(error) => tracing::debug!("no second-signal watcher: {error}"),
        }
    });
}

/// On Windows the console handler itself exits on a second event.
#[cfg(not(unix))]
pub(crate) fn watch_for_second() {}

/// The second signal: kill every child's process group, then exit with
/// its code (the handlers keep the latest signal's number).
#[cfg(unix)]
fn stop_now() -> ! {
    let code = received().map_or(128, exit_code);
    // Said before the kill: once the servers die, the main thread's own
    // shutdown may see them gone and exit first, and the reason would be
    // lost.
    {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "rho: stopped at once by a second signal; every server was killed"
        );
    }
    kill_children();
    // `_exit`: the main thread may be exiting too; nothing is left to flush.
    signal_hook::low_level::exit(i32::from(code))
}

/// Sends SIGKILL to the process group of each of rho's children. A server
/// leads its own group, so this ends it and everything it started; a
/// child that leads none (the sampling model) is left to its parent-death
/// signal.
#[cfg(unix)]
fn kill_children() {
    #[cfg(target_os = "linux")]
    {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return;
        };
        for task in tasks.flatten() {
            let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for pid in children.split_whitespace().filter_map(|p| p.parse().ok()) {
                rho_os::process::kill_group(pid);
            }
        }
    }
}

#[cfg(unix)]
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
    #[cfg(windows)]
    if let Some(name) = rho_os::console::stop_name(signal) {
        return name.into();
    }
    format!("signal {signal}")
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(exit_code(signal_hook::consts::SIGINT), 130);
        assert_eq!(exit_code(signal_hook::consts::SIGTERM), 143);
        assert_eq!(exit_code(signal_hook::consts::SIGHUP), 129);
        assert_eq!(name(signal_hook::consts::SIGHUP), "SIGHUP");
    }
}
