//! A stdio server's child process on smol: the command is prepared exactly
//! as on threads (`rho_os::process::prepare_command`: no shell, a
//! computed environment, its own process group) and spawned by std, its
//! pipes non-blocking and registered with async-io's reactor. The
//! session task itself reads stdout and writes stdin
//! ([`StdioChild::poll_pipes`], raced with its other inputs): a call's
//! bytes go out and its answer comes in without a hop through another
//! task or a channel, and without a copy. Only stderr has a task of its
//! own, draining into tracing and a bounded tail. Shutdown closes stdin,
//! waits the grace period, kills the group and reaps the child.
//!
//! Both pipes are bounded without dropping a byte, as on threads
//! (`rho_proto_core::runtime::backlog`): stdout is read only when the
//! session has handled the previous chunk (it reads between inputs, so it
//! cannot fall behind what it read), and never while more than
//! [`READ_PAUSE`] bytes wait for stdin; the stdin queue is counted in the
//! shared backlog, so callers wait for room before sending more.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rho_os::process::{
    describe_exit, has_exited_pid, kill_group, prepare_command, terminate_group,
};
use rho_proto_core::config::StdioConfig;
use rho_proto_core::runtime::backlog::{Backlog, READ_PAUSE, STDOUT_CHUNK};
use rho_proto_core::text::redact::Redactor;
use rho_proto_core::text::stderr::StderrTail;
use rustix::buffer::spare_capacity;
use rustix::io::Errno;
use smol::io::AsyncReadExt;
use smol::{Async, Executor, Task, Timer};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

/// A running stdio server.
pub(crate) struct StdioChild {
    child: Child,
    pid: u32,
    /// Gone once a write failed or shutdown began.
    stdin: Option<Async<ChildStdin>>,
    /// Bytes for stdin not yet written, oldest first; of the first,
    /// `written` bytes are out already.
    pending: VecDeque<Vec<u8>>,
    written: usize,
    /// Gone once it closed.
    stdout: Option<Async<ChildStdout>>,
    /// The last read of stdout filled the buffer (or readiness was
    /// reported since): read again before asking the reactor. Reading
    /// only when the reactor said so saves the read that would find the
    /// pipe empty after every message.
    stdout_ready: bool,
    /// Where stdout is read into (what [`PipeReady::Read`] reports is
    /// [`StdioChild::read_bytes`] of it): reserved, not zeroed, so only
    /// what the largest read filled is ever resident.
    buf: Vec<u8>,
    backlog: Arc<Backlog>,
    stderr_tail: Arc<Mutex<StderrTail>>,
    drain: Option<Task<()>>,
    exit: Option<String>,
}

/// What the pipes have for the session task.
#[derive(Debug)]
pub(crate) enum PipeReady {
    /// This many bytes of stdout are in [`StdioChild::read_bytes`].
    Read(usize),
    /// Stdout closed (or failed): the server is gone or going.
    StdoutClosed,
    /// Writing stdin failed; nothing more is written.
    WriteFailed(String),
}

/// How long shutdown waits for the stderr drain after the group is killed.
const DRAIN_EXIT_WAIT: Duration = Duration::from_millis(500);
/// How long a reap polls for the exit of a child whose group was just
/// killed before it waits for it outright.
const REAP_POLL_WAIT: Duration = Duration::from_millis(500);
/// How often an exit is polled for (without reaping).
const EXIT_POLL: Duration = Duration::from_millis(5);

impl StdioChild {
    /// Starts the server, its stderr drained on `executor`, its stdin
    /// queue counted in `backlog`.
    pub(crate) fn spawn(
        executor: &Arc<Executor<'static>>,
        server: &str,
        config: &StdioConfig,
        ambient: &[(String, String)],
        backlog: Arc<Backlog>,
    ) -> Result<Self, String> {
        let (mut command, program) = prepare_command(server, config, ambient)?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "server `{server}`: could not start `{}`: {e}",
                    program.display()
                )
            })?;
        let pid = child.id();
        let pipes = match (child.stdout.take(), child.stdin.take(), child.stderr.take()) {
            (Some(stdout), Some(stdin), Some(stderr)) => {
                // Non-blocking, registered with the reactor.
                (|| {
                    Ok::<_, std::io::Error>((
                        Async::new(stdout)?,
                        Async::new(stdin)?,
                        Async::new(stderr)?,
                    ))
                })()
                .map_err(|e| e.to_string())
            }
            _ => Err("not all were created".to_owned()),
        };
        let (stdout, stdin, mut stderr) = match pipes {
            Ok(pipes) => pipes,
            Err(why) => {
                kill_group(pid);
                let _ = child.wait();
                return Err(format!(
                    "server `{server}`: its pipes could not be opened: {why}"
                ));
            }
        };
        // Lines are redacted in the tail itself: the debug log and the
        // failure reason both read them from there.
        let stderr_tail = Arc::new(Mutex::new(
            StderrTail::default().redacting(Redactor::for_stdio(config, ambient)),
        ));
        let drain = executor.spawn({
            let tail = Arc::clone(&stderr_tail);
            let server = server.to_owned();
            async move {
                let mut buf = vec![0u8; 8 * 1024];
                loop {
                    match stderr.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            let lines = match tail.lock() {
                                Ok(mut t) => t.push(&buf[..n]),
                                Err(poisoned) => poisoned.into_inner().push(&buf[..n]),
                            };
                            for line in lines {
                                tracing::debug!(target: "rho::mcp::stderr", server, "{line}");
                            }
                        }
                    }
                }
            }
        });
        Ok(Self {
            child,
            pid,
            stdin: Some(stdin),
            pending: VecDeque::new(),
            written: 0,
            stdout: Some(stdout),
            stdout_ready: true,
            buf: Vec::with_capacity(STDOUT_CHUNK),
            backlog,
            stderr_tail,
            drain: Some(drain),
            exit: None,
        })
    }

    /// The child's process id (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Queues bytes for the child's stdin, counted in the backlog; never
    /// waits on the child and never drops (the queue is unbounded; callers
    /// wait for the backlog instead). The next [`StdioChild::poll_pipes`]
    /// writes them, at once when the pipe has room.
    pub(crate) fn write(&mut self, bytes: Vec<u8>) {
        if self.stdin.is_some() && !bytes.is_empty() {
            self.backlog.add(bytes.len());
            self.pending.push_back(bytes);
        }
    }

    /// Writes what is queued as far as stdin takes it, then, when `read`
    /// and the stdin backlog allows, reads stdout. Ready with what the
    /// session must handle; pending (woken by either pipe) otherwise.
    pub(crate) fn poll_pipes(&mut self, cx: &mut Context<'_>, read: bool) -> Poll<PipeReady> {
        if let Some(failed) = self.poll_write(cx) {
            return Poll::Ready(failed);
        }
        if !read || !self.backlog.has_room(READ_PAUSE) {
            // Reading resumes once the child takes its input (a write
            // wakes this task) or the next input arrives.
            return Poll::Pending;
        }
        let Some(stdout) = &self.stdout else {
            return Poll::Pending;
        };
        loop {
            if !self.stdout_ready {
                // Registers this task with the reactor until stdout is
                // readable; an error means it is gone.
                match stdout.poll_readable(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(())) => self.stdout_ready = true,
                    Poll::Ready(Err(_)) => break,
                }
            }
            self.buf.clear();
            match rustix::io::read(stdout.get_ref(), spare_capacity(&mut self.buf)) {
                Ok(0) => break,
                Ok(n) => {
                    // A short read emptied the pipe, most likely: ask the
                    // reactor before reading again.
                    self.stdout_ready = n == self.buf.capacity();
                    return Poll::Ready(PipeReady::Read(n));
                }
                Err(Errno::AGAIN) => self.stdout_ready = false,
                Err(Errno::INTR) => {}
                Err(_) => break,
            }
        }
        self.stdout = None;
        Poll::Ready(PipeReady::StdoutClosed)
    }

    /// What the last [`PipeReady::Read`] of `n` bytes read.
    pub(crate) fn read_bytes(&self, n: usize) -> &[u8] {
        &self.buf[..n]
    }

    /// Writes queued bytes until stdin would block; the failure, when a
    /// write failed (then nothing more is written, and the backlog is
    /// closed so nobody waits for it).
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Option<PipeReady> {
        let stdin = self.stdin.as_ref()?;
        while let Some(front) = self.pending.front() {
            let failure = match rustix::io::write(stdin.get_ref(), &front[self.written..]) {
                Ok(0) => "the server closed its input".to_owned(),
                Ok(n) => {
                    self.backlog.remove(n);
                    self.written += n;
                    if self.written == front.len() {
                        self.pending.pop_front();
                        self.written = 0;
                    }
                    continue;
                }
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => match stdin.poll_writable(cx) {
                    // Woken once the child made room.
                    Poll::Pending => return None,
                    Poll::Ready(Ok(())) => continue,
                    Poll::Ready(Err(e)) => e.to_string(),
                },
                Err(e) => std::io::Error::from(e).to_string(),
            };
            self.stdin = None;
            self.drop_pending();
            return Some(PipeReady::WriteFailed(failure));
        }
        None
    }

    /// Drops what was queued and not written (stdin is gone), and closes
    /// the backlog: nothing drains it any more.
    fn drop_pending(&mut self) {
        let queued: usize = self.pending.iter().map(Vec::len).sum();
        self.backlog.remove(queued - self.written);
        self.pending.clear();
        self.written = 0;
        self.backlog.close();
    }

    /// Waits up to `within` for the child to exit by itself; when it did,
    /// sweeps its group, reaps it and describes its exit.
    pub(crate) async fn exit_detail(&mut self, within: Duration) -> Option<String> {
        if self.exit.is_none() && self.wait_exit(within).await {
            self.reap().await;
        }
        self.exit.clone()
    }

    async fn wait_exit(&self, within: Duration) -> bool {
        let until = Instant::now() + within;
        loop {
            if has_exited_pid(self.pid) {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            Timer::after(EXIT_POLL).await;
        }
    }

    async fn reap(&mut self) {
        if self.exit.is_some() {
            return;
        }
        kill_group(self.pid);
        // The group was just killed: the child is gone or going.
        let until = Instant::now() + REAP_POLL_WAIT;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if Instant::now() < until => Timer::after(EXIT_POLL).await,
                // Stuck in the kernel, say: never block the executor on it.
                Ok(None) => {
                    reap_in_background(self.pid);
                    break Err(std::io::Error::other(
                        "it had not exited half a second after SIGKILL",
                    ));
                }
                Err(e) => break Err(e),
            };
        };
        self.exit = Some(match status {
            Ok(status) => describe_exit(status),
            Err(e) => format!("exit status unknown: {e}"),
        });
    }

    /// Closes stdin, gives the child `grace` to exit, kills its group and
    /// reaps it. Returns the last lines of its stderr.
    pub(crate) async fn shutdown(mut self, grace: Duration) -> Option<String> {
        // What was queued last (a cancellation, say) goes out if the pipe
        // takes it now; closing stdin does not wait for a server that
        // stopped reading.
        let _ = smol::future::poll_once(std::future::poll_fn(|cx| match self.poll_write(cx) {
            None if !self.pending.is_empty() => Poll::Pending,
            _ => Poll::Ready(()),
        }))
        .await;
        self.stdin = None;
        self.drop_pending();
        let first = rho_proto_core::config::process::terminate_after(grace);
        if self.exit.is_none() && !self.wait_exit(first).await {
            terminate_group(self.pid);
            if !self.wait_exit(grace.saturating_sub(first)).await {
                tracing::debug!(pid = self.pid, "did not exit after SIGTERM; killing");
            }
        }
        self.reap().await;
        // The pipes close once the group is gone; a process that escaped the
        // group could hold stderr open, so the drain gets a bounded wait and
        // is then cancelled by dropping it.
        let drain = self.drain.take();
        let all = async {
            if let Some(drain) = drain {
                drain.await;
            }
            true
        };
        let finished = smol::future::or(all, async {
            Timer::after(DRAIN_EXIT_WAIT).await;
            false
        })
        .await;
        if !finished {
            tracing::warn!(
                pid = self.pid,
                "a pipe stayed open after the process group was killed"
            );
        }
        match self.stderr_tail.lock() {
            Ok(tail) => tail.render(),
            Err(poisoned) => poisoned.into_inner().render(),
        }
    }
}

impl Drop for StdioChild {
    /// A child whose task was cancelled (its runtime dropped without
    /// `shutdown`) still takes its whole process group with it, and is
    /// reaped (off this thread: the kill takes effect a moment later)
    /// rather than left a zombie for the host's lifetime.
    fn drop(&mut self) {
        if self.exit.is_none() {
            kill_group(self.pid);
            if !matches!(self.child.try_wait(), Ok(Some(_))) {
                reap_in_background(self.pid);
            }
        }
    }
}

/// Waits for child `pid` on a short-lived thread of its own, so that it
/// does not stay a zombie while the host runs on.
fn reap_in_background(pid: u32) {
    // `None` would wait for any child: only this one is reaped.
    let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("rho-reap".into())
        .spawn(move || {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How long a test waits for a pipe that should become ready.
    const WAIT: Duration = Duration::from_secs(5);

    fn start(ex: &Arc<Executor<'static>>, command: &str, args: &[&str]) -> StdioChild {
        let config = StdioConfig {
            command: command.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            cwd: None,
            env: Default::default(),
            env_from_env: Default::default(),
        };
        let ambient: Vec<(String, String)> = std::env::vars().collect();
        StdioChild::spawn(ex, "t", &config, &ambient, Arc::new(Backlog::default()))
            .expect("the child starts")
    }

    /// What the pipes have within `within`, `None` if nothing.
    async fn next(child: &mut StdioChild, read: bool, within: Duration) -> Option<PipeReady> {
        smol::future::or(
            async { Some(std::future::poll_fn(|cx| child.poll_pipes(cx, read)).await) },
            async {
                Timer::after(within).await;
                None
            },
        )
        .await
    }

    fn on_executor<F: std::future::Future>(
        test: impl FnOnce(Arc<Executor<'static>>) -> F,
    ) -> F::Output {
        let executor = Arc::new(Executor::new());
        smol::block_on(executor.run(test(Arc::clone(&executor))))
    }

    #[test]
    fn queued_bytes_go_out_and_the_answer_comes_back_in_the_same_wait() {
        on_executor(|ex| async move {
            let mut child = start(&ex, "cat", &[]);
            child.write(b"hello\n".to_vec());
            assert_eq!(child.backlog.bytes(), 6, "counted until written");
            let mut got = Vec::new();
            while got.len() < 6 {
                match next(&mut child, true, WAIT).await {
                    Some(PipeReady::Read(n)) => got.extend_from_slice(child.read_bytes(n)),
                    other => panic!("expected stdout, got {other:?}"),
                }
            }
            assert_eq!(got, b"hello\n");
            assert_eq!(child.backlog.bytes(), 0, "written bytes leave the backlog");
            child.shutdown(Duration::from_secs(1)).await;
        });
    }

    #[test]
    fn a_child_that_does_not_read_keeps_the_rest_queued_and_counted() {
        on_executor(|ex| async move {
            let mut child = start(&ex, "sleep", &["10"]);
            const SENT: usize = 4 * 1024 * 1024;
            child.write(vec![b'x'; SENT]);
            assert!(
                next(&mut child, true, Duration::from_millis(200))
                    .await
                    .is_none()
            );
            let waiting = child.backlog.bytes();
            assert!(
                waiting > 0 && waiting < SENT,
                "the pipe took some, the rest waits: {waiting}"
            );
            let backlog = Arc::clone(&child.backlog);
            child.shutdown(Duration::from_millis(100)).await;
            assert!(backlog.is_closed(), "nobody waits for a closed stdin");
        });
    }

    #[test]
    fn stdout_is_not_read_while_stdin_is_over_the_read_pause() {
        on_executor(|ex| async move {
            let mut child = start(&ex, "sh", &["-c", "echo ready; sleep 10"]);
            child.write(vec![b'x'; READ_PAUSE + 1024 * 1024]);
            // `ready` is on stdout, yet the session reads nothing more
            // while the server leaves this much of its input unread.
            assert!(
                next(&mut child, true, Duration::from_millis(300))
                    .await
                    .is_none()
            );
            child.shutdown(Duration::from_millis(100)).await;
        });
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_dropped_without_shutdown_is_killed_and_reaped() {
        on_executor(|ex| async move {
            let child = start(&ex, "sleep", &["30"]);
            let proc_dir = std::path::PathBuf::from(format!("/proc/{}", child.pid));
            drop(child);
            // Gone from the process table: killed, and not left a zombie.
            let until = Instant::now() + WAIT;
            while proc_dir.exists() && Instant::now() < until {
                Timer::after(EXIT_POLL).await;
            }
            assert!(!proc_dir.exists(), "{} is still there", proc_dir.display());
        });
    }

    #[test]
    fn a_write_to_a_child_that_is_gone_fails_once_and_closes_the_backlog() {
        on_executor(|ex| async move {
            let mut child = start(&ex, "true", &[]);
            let until = Instant::now() + WAIT;
            while !has_exited_pid(child.pid) && Instant::now() < until {
                Timer::after(EXIT_POLL).await;
            }
            child.write(b"too late\n".to_vec());
            match next(&mut child, false, WAIT).await {
                Some(PipeReady::WriteFailed(why)) => assert!(!why.is_empty()),
                other => panic!("expected a failed write, got {other:?}"),
            }
            assert!(child.backlog.is_closed());
            // Nothing more is queued or reported for stdin; stdout closes.
            child.write(b"more\n".to_vec());
            assert_eq!(child.backlog.bytes(), 0);
            assert!(matches!(
                next(&mut child, true, WAIT).await,
                Some(PipeReady::StdoutClosed)
            ));
            let detail = child.exit_detail(WAIT).await;
            assert!(detail.is_some(), "the exit is described");
            child.shutdown(Duration::from_millis(100)).await;
        });
    }
}
