//! A stdio server's child process on smol: the command is prepared exactly
//! as on threads (`rho_os::process::prepare_command`: no shell, a
//! computed environment, its own process group) and spawned by std, its
//! pipes non-blocking and registered with async-io's reactor. It comes
//! in two halves. The [`Stdin`] half lives in the session the callers
//! share with the session task (`crate::driver`): whoever carries a write
//! out, a caller issuing its call or the task answering the server,
//! writes it at once, and the task takes over only what the pipe did not
//! take. The [`StdioChild`] half is the task's own: it reads stdout
//! ([`StdioChild::poll_read`], raced with the task's other inputs), so an
//! answer comes in without a hop through another task or a channel, and
//! without a copy. Only stderr has a task of its own, draining into
//! tracing and a bounded tail. Shutdown closes stdin, waits the grace
//! period, kills the group and reaps the child.
//!
//! Both pipes are bounded without dropping a byte, as on threads
//! (`rho_proto_core::runtime::backlog`): stdout is read only when the
//! session has handled the previous chunk (it reads between inputs, so it
//! cannot fall behind what it read), and never while more than
//! [`READ_PAUSE`] bytes wait for stdin; the stdin queue is counted in the
//! shared backlog, so callers wait for room before sending more.
//!
//! On Windows an anonymous pipe cannot be registered with a reactor
//! (async-io's `Async` takes sockets there): the pipes are handed to
//! smol's blocking pool instead (`smol::Unblock`, a thread per pipe that
//! copies through a bounded in-memory buffer), behind the same
//! [`StdioChild`] and [`Stdin`]. The server's tree lives in a Job Object
//! rather than a process group (`rho_os::process::ProcessGroup`); there
//! is nothing to reap.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rho_os::process::{ProcessGroup, describe_exit, has_exited, prepare_command, spawn};
use rho_proto_core::config::StdioConfig;
use rho_proto_core::runtime::backlog::{Backlog, READ_PAUSE, STDOUT_CHUNK};
use rho_proto_core::runtime::driving::TransportSetupError;
use rho_proto_core::text::redact::Redactor;
use rho_proto_core::text::stderr::StderrTail;
use smol::io::AsyncReadExt;
use smol::{Executor, Task, Timer};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Stdio};

/// One of the child's pipes made async: non-blocking, registered with
/// the reactor (on Windows, read or written by a thread of smol's
/// blocking pool).
#[cfg(unix)]
type Pipe<T> = smol::Async<T>;
#[cfg(windows)]
type Pipe<T> = smol::Unblock<T>;
/// Stdout as the session task reads it.
type StdoutPipe = Pipe<ChildStdout>;
/// Stdin as the session and its callers write it.
type StdinPipe = Pipe<ChildStdin>;
/// Stderr as its drain task reads it.
type StderrPipe = Pipe<ChildStderr>;

/// The child's pipes made async: non-blocking and registered with the
/// reactor on Unix, handed to the blocking pool on Windows.
fn async_pipes(
    stdout: ChildStdout,
    stdin: ChildStdin,
    stderr: ChildStderr,
) -> std::io::Result<(StdoutPipe, StdinPipe, StderrPipe)> {
    #[cfg(unix)]
    {
        Ok((
            smol::Async::new(stdout)?,
            smol::Async::new(stdin)?,
            smol::Async::new(stderr)?,
        ))
    }
    #[cfg(windows)]
    {
        Ok((
            smol::Unblock::with_capacity(STDOUT_CHUNK, stdout),
            smol::Unblock::new(stdin),
            smol::Unblock::new(stderr),
        ))
    }
}

/// A running stdio server: what its session task owns.
pub(crate) struct StdioChild {
    child: Child,
    /// Its whole process tree (its process group; on Windows its job).
    group: ProcessGroup,
    pid: u32,
    /// Gone once it closed.
    stdout: Option<StdoutPipe>,
    /// The last read of stdout filled the buffer (or readiness was
    /// reported since): read again before asking the reactor. Reading
    /// only when the reactor said so saves the read that would find the
    /// pipe empty after every message.
    #[cfg(unix)]
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

/// A running stdio server's input: what the session shares with its
/// callers. A write goes out as soon as it is queued, as far as the pipe
/// takes it; the rest waits for [`Stdin::poll_flush`].
pub(crate) struct Stdin {
    /// Gone once a write failed or shutdown began.
    pipe: Option<StdinPipe>,
    /// Bytes not yet written, oldest first; of the first, `written` bytes
    /// are out already.
    pending: VecDeque<Vec<u8>>,
    written: usize,
    /// Why the last write failed, until the session task hears it.
    failed: Option<String>,
    backlog: Arc<Backlog>,
}

/// What stdout has for the session task.
#[derive(Debug)]
pub(crate) enum PipeReady {
    /// This many bytes of stdout are in [`StdioChild::read_bytes`].
    Read(usize),
    /// Stdout closed (or failed): the server is gone or going.
    StdoutClosed,
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
    ) -> Result<(Self, Stdin), TransportSetupError> {
        let (mut command, program) = prepare_command(server, config, ambient)?;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (mut child, group) = spawn(server, &mut command, program)?;
        let pid = child.id();
        let pipes = match (child.stdout.take(), child.stdin.take(), child.stderr.take()) {
            (Some(stdout), Some(stdin), Some(stderr)) => {
                async_pipes(stdout, stdin, stderr).map_err(|e| e.to_string())
            }
            _ => Err("not all were created".to_owned()),
        };
        let (stdout, stdin, mut stderr) = match pipes {
            Ok(pipes) => pipes,
            Err(why) => {
                group.kill();
                let _ = child.wait();
                return Err(TransportSetupError::Pipes {
                    server: server.to_owned(),
                    reason: Some(why),
                });
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
        let stdin = Stdin {
            pipe: Some(stdin),
            pending: VecDeque::new(),
            written: 0,
            failed: None,
            backlog: Arc::clone(&backlog),
        };
        let child = Self {
            child,
            group,
            pid,
            stdout: Some(stdout),
            #[cfg(unix)]
            stdout_ready: true,
            buf: Vec::with_capacity(STDOUT_CHUNK),
            backlog,
            stderr_tail,
            drain: Some(drain),
            exit: None,
        };
        Ok((child, stdin))
    }

    /// The child's process id (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// When the stdin backlog allows, reads stdout. Ready with what the
    /// session must handle; pending (woken by stdout, or by stdin's
    /// draining) otherwise.
    pub(crate) fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<PipeReady> {
        if !self.backlog.has_room(READ_PAUSE) {
            // Reading resumes once the child takes its input (the task
            // waits for stdin's room meanwhile) or the next input arrives.
            return Poll::Pending;
        }
        #[cfg(windows)]
        return self.poll_read_pool(cx);
        #[cfg(unix)]
        self.poll_read_ready(cx)
    }

    /// [`StdioChild::poll_read`] on Windows: the pool's thread reads into
    /// its own buffer; this copies what it has (at most a chunk) without
    /// waiting.
    #[cfg(windows)]
    fn poll_read_pool(&mut self, cx: &mut Context<'_>) -> Poll<PipeReady> {
        use smol::io::AsyncRead;
        let Some(stdout) = self.stdout.as_mut() else {
            return Poll::Pending;
        };
        self.buf.resize(STDOUT_CHUNK, 0);
        match std::pin::Pin::new(stdout).poll_read(cx, &mut self.buf) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(n)) if n > 0 => Poll::Ready(PipeReady::Read(n)),
            Poll::Ready(_) => {
                self.stdout = None;
                Poll::Ready(PipeReady::StdoutClosed)
            }
        }
    }

    /// [`StdioChild::poll_read`] on Unix: a read only when the reactor
    /// said stdout is readable (or the last read filled the buffer).
    #[cfg(unix)]
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<PipeReady> {
        use rustix::buffer::spare_capacity;
        use rustix::io::Errno;
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

    /// Waits up to `within` for the child to exit by itself; when it did,
    /// sweeps its group, reaps it and describes its exit.
    pub(crate) async fn exit_detail(&mut self, within: Duration) -> Option<String> {
        if self.exit.is_none() && self.wait_exit(within).await {
            self.reap().await;
        }
        self.exit.clone()
    }

    async fn wait_exit(&mut self, within: Duration) -> bool {
        let until = Instant::now() + within;
        loop {
            if has_exited(&mut self.child) {
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
        self.group.kill();
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

    /// Gives the child `grace` to exit (its stdin closed first:
    /// [`Stdin::close`]), kills its group and reaps it. Returns the last
    /// lines of its stderr.
    pub(crate) async fn shutdown(mut self, grace: Duration) -> Option<String> {
        let first = rho_proto_core::config::process::terminate_after(grace);
        if self.exit.is_none() && !self.wait_exit(first).await {
            self.group.terminate();
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

impl Stdin {
    /// Queues bytes for the child, counted in the backlog, and writes what
    /// the pipe takes now; never waits on the child and never drops (the
    /// queue is unbounded; callers wait for the backlog instead). Whether
    /// anything is left for [`Stdin::poll_flush`]: the rest, or a failure.
    pub(crate) fn write(&mut self, bytes: Vec<u8>) -> bool {
        if self.pipe.is_some() && !bytes.is_empty() {
            self.backlog.add(bytes.len());
            self.pending.push_back(bytes);
            self.flush(None);
        }
        !self.pending.is_empty() || self.failed.is_some()
    }

    /// Writes what is queued as far as the pipe takes it, registering the
    /// session task to be woken once the child makes room; the failure,
    /// once, when a write failed.
    pub(crate) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Option<String> {
        self.flush(Some(cx));
        self.failed.take()
    }

    /// Writes queued bytes until the pipe would block (then, given `cx`,
    /// waits for room). A failed write is kept in `failed`; nothing more
    /// is written, and the backlog is closed so nobody waits for it.
    fn flush(&mut self, cx: Option<&mut Context<'_>>) {
        #[cfg(unix)]
        self.flush_ready(cx);
        #[cfg(windows)]
        self.flush_to_pool(cx);
    }

    /// [`Stdin::flush`] on Windows: the pool's thread takes what fits its
    /// buffer at once and writes it as the child reads; without a task to
    /// wake (`cx` is `None`) a full buffer leaves the rest to the task.
    #[cfg(windows)]
    fn flush_to_pool(&mut self, cx: Option<&mut Context<'_>>) {
        use smol::io::AsyncWrite;
        let mut no_task = Context::from_waker(std::task::Waker::noop());
        let cx = cx.unwrap_or(&mut no_task);
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        while let Some(front) = self.pending.front() {
            let failure =
                match std::pin::Pin::new(&mut *pipe).poll_write(cx, &front[self.written..]) {
                    Poll::Pending => return,
                    Poll::Ready(Ok(0)) => "the server closed its input".to_owned(),
                    Poll::Ready(Ok(n)) => {
                        self.backlog.remove(n);
                        self.written += n;
                        if self.written == front.len() {
                            self.pending.pop_front();
                            self.written = 0;
                        }
                        continue;
                    }
                    Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Poll::Ready(Err(e)) => e.to_string(),
                };
            self.failed = Some(failure);
            self.close();
            return;
        }
    }

    /// [`Stdin::flush`] on Unix: writes straight into the non-blocking
    /// pipe, and waits on the reactor for room.
    #[cfg(unix)]
    fn flush_ready(&mut self, mut cx: Option<&mut Context<'_>>) {
        use rustix::io::Errno;
        let Some(pipe) = self.pipe.as_ref() else {
            return;
        };
        while let Some(front) = self.pending.front() {
            let failure = match rustix::io::write(pipe.get_ref(), &front[self.written..]) {
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
                Err(Errno::AGAIN) => match cx.as_deref_mut().map(|cx| pipe.poll_writable(cx)) {
                    // Without a task to wake, the task takes over.
                    None | Some(Poll::Pending) => return,
                    Some(Poll::Ready(Ok(()))) => continue,
                    Some(Poll::Ready(Err(e))) => e.to_string(),
                },
                Err(e) => std::io::Error::from(e).to_string(),
            };
            self.failed = Some(failure);
            self.close();
            return;
        }
    }

    /// Closes the pipe: what the pipe takes now of what is queued (a
    /// cancellation, say) goes out, the rest is dropped (closing does not
    /// wait for a server that stopped reading), and the backlog is
    /// closed: nothing drains it any more.
    pub(crate) fn close(&mut self) {
        if self.failed.is_none() {
            self.flush(None);
        }
        let pipe = self.pipe.take();
        // On Windows what the pipe took is still in the pool's buffer:
        // dropping it could lose that (a cancellation, say). Closing on a
        // pool thread writes it out, then closes the child's stdin; a
        // child that never reads holds only that thread, until its job
        // is killed.
        #[cfg(windows)]
        if let Some(mut pipe) = pipe {
            use smol::io::AsyncWriteExt as _;
            smol::unblock(move || {
                let _ = smol::block_on(pipe.close());
            })
            .detach();
        }
        #[cfg(not(windows))]
        drop(pipe);
        let queued: usize = self.pending.iter().map(Vec::len).sum();
        self.backlog.remove(queued - self.written);
        self.pending.clear();
        self.written = 0;
        self.backlog.close();
    }
}

impl Drop for StdioChild {
    /// A child whose task was cancelled (its runtime dropped without
    /// `shutdown`) still takes its whole process group with it, and is
    /// reaped (off this thread: the kill takes effect a moment later)
    /// rather than left a zombie for the host's lifetime.
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.group.kill();
            if !matches!(self.child.try_wait(), Ok(Some(_))) {
                reap_in_background(self.pid);
            }
        }
    }
}

/// Waits for child `pid` on a short-lived thread of its own, so that it
/// does not stay a zombie while the host runs on.
#[cfg(unix)]
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

/// Windows keeps no zombies: the exit is kept with the process handle,
/// which closes with the `Child`.
#[cfg(windows)]
fn reap_in_background(_pid: u32) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// How long a test waits for a pipe that should become ready.
    const WAIT: Duration = Duration::from_secs(5);

    fn start(ex: &Arc<Executor<'static>>, command: &str, args: &[&str]) -> (StdioChild, Stdin) {
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

    /// What the pipes have within `within`, `None` if nothing: a failed
    /// write as `Err`, stdout (when `read`) as `Ok`. Stdin is flushed
    /// first, as the session task does.
    async fn next(
        (child, stdin): &mut (StdioChild, Stdin),
        read: bool,
        within: Duration,
    ) -> Option<Result<PipeReady, String>> {
        let pipes = std::future::poll_fn(|cx| {
            if let Some(failed) = stdin.poll_flush(cx) {
                return Poll::Ready(Err(failed));
            }
            if read {
                child.poll_read(cx).map(Ok)
            } else {
                Poll::Pending
            }
        });
        smol::future::or(async { Some(pipes.await) }, async {
            Timer::after(within).await;
            None
        })
        .await
    }

    /// Closes stdin and shuts the child down, as the session task does.
    async fn stop((child, mut stdin): (StdioChild, Stdin), grace: Duration) {
        stdin.close();
        child.shutdown(grace).await;
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
            let left = child.1.write(b"hello\n".to_vec());
            assert!(!left, "an empty pipe takes a line at once");
            assert_eq!(
                child.1.backlog.bytes(),
                0,
                "written bytes leave the backlog"
            );
            let mut got = Vec::new();
            while got.len() < 6 {
                match next(&mut child, true, WAIT).await {
                    Some(Ok(PipeReady::Read(n))) => got.extend_from_slice(child.0.read_bytes(n)),
                    other => panic!("expected stdout, got {other:?}"),
                }
            }
            assert_eq!(got, b"hello\n");
            stop(child, Duration::from_secs(1)).await;
        });
    }

    #[test]
    fn a_child_that_does_not_read_keeps_the_rest_queued_and_counted() {
        on_executor(|ex| async move {
            let mut child = start(&ex, "sleep", &["10"]);
            const SENT: usize = 4 * 1024 * 1024;
            assert!(child.1.write(vec![b'x'; SENT]), "the rest is left");
            assert!(
                next(&mut child, true, Duration::from_millis(200))
                    .await
                    .is_none()
            );
            let waiting = child.1.backlog.bytes();
            assert!(
                waiting > 0 && waiting < SENT,
                "the pipe took some, the rest waits: {waiting}"
            );
            let backlog = Arc::clone(&child.1.backlog);
            stop(child, Duration::from_millis(100)).await;
            assert_eq!(backlog.bytes(), 0, "what was queued went with stdin");
            assert!(backlog.is_closed(), "nobody waits for a closed stdin");
        });
    }

    #[test]
    fn stdout_is_not_read_while_stdin_is_over_the_read_pause() {
        let printed = std::env::temp_dir().join(format!("rho-smol-printed-{}", std::process::id()));
        let _ = std::fs::remove_file(&printed);
        let script = format!("echo ready; : > '{}'; sleep 10", printed.display());
        let watched = printed.clone();
        on_executor(|ex| async move {
            let mut child = start(&ex, "sh", &["-c", &script]);
            child.1.write(vec![b'x'; READ_PAUSE + 1024 * 1024]);
            // Once the child says so, `ready` is on stdout: a read would
            // find it at once. Yet the session reads nothing more while the
            // server leaves this much of its input unread.
            let until = Instant::now() + WAIT;
            while !watched.exists() && Instant::now() < until {
                Timer::after(EXIT_POLL).await;
            }
            assert!(watched.exists(), "the child never printed");
            assert!(
                next(&mut child, true, Duration::from_millis(300))
                    .await
                    .is_none()
            );
            stop(child, Duration::from_millis(100)).await;
        });
        let _ = std::fs::remove_file(&printed);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_dropped_without_shutdown_is_killed_and_reaped() {
        on_executor(|ex| async move {
            let (child, _stdin) = start(&ex, "sleep", &["30"]);
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
            while !has_exited(&mut child.0.child) && Instant::now() < until {
                Timer::after(EXIT_POLL).await;
            }
            assert!(child.1.write(b"too late\n".to_vec()), "a failure is left");
            match next(&mut child, false, WAIT).await {
                Some(Err(why)) => assert!(!why.is_empty()),
                other => panic!("expected a failed write, got {other:?}"),
            }
            assert!(child.1.backlog.is_closed());
            // Nothing more is queued or reported for stdin; stdout closes.
            assert!(!child.1.write(b"more\n".to_vec()), "heard once");
            assert_eq!(child.1.backlog.bytes(), 0);
            assert!(matches!(
                next(&mut child, true, WAIT).await,
                Some(Ok(PipeReady::StdoutClosed))
            ));
            let detail = child.0.exit_detail(WAIT).await;
            assert!(detail.is_some(), "the exit is described");
            stop(child, Duration::from_millis(100)).await;
        });
    }
}
