//! A stdio server's stdin as the thread executor writes it: non-blocking,
//! so whoever holds the session can write straight into the pipe without
//! ever waiting on the child, and a wait for room for the one thread that
//! writes what the pipe did not take at once.

use std::io;
use std::process::ChildStdin;
use std::time::Duration;

/// Makes writes to `stdin` return `WouldBlock` instead of waiting when
/// the pipe is full. The flag is on rho's end of the pipe only; the
/// child's end is unaffected. Elsewhere than Unix, writes keep blocking
/// (and callers must not write from a thread that may not wait).
#[cfg(unix)]
pub fn set_nonblocking(stdin: &ChildStdin) -> io::Result<()> {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let flags = fcntl_getfl(stdin)?;
    fcntl_setfl(stdin, flags | OFlags::NONBLOCK)?;
    Ok(())
}

/// Elsewhere than Unix: nothing to do (writes block).
#[cfg(not(unix))]
pub fn set_nonblocking(_stdin: &ChildStdin) -> io::Result<()> {
    Ok(())
}

/// Waits at most `within` until the pipe has room again, or the child
/// closed its end (the next write then fails).
#[cfg(unix)]
pub fn wait_writable(stdin: &ChildStdin, within: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(stdin, PollFlags::OUT)];
    let timeout = Timespec {
        tv_sec: i64::try_from(within.as_secs()).unwrap_or(i64::MAX),
        // Below 10^9, which every platform's field holds.
        tv_nsec: within.subsec_nanos() as _,
    };
    let _ = poll(&mut fds, Some(&timeout));
}

/// Elsewhere than Unix writes block, so a write returns only once the
/// child read: nothing to wait for.
#[cfg(not(unix))]
pub fn wait_writable(_stdin: &ChildStdin, _within: Duration) {}
