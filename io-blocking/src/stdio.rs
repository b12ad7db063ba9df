//! A stdio server's child process on plain threads: spawn it without a
//! shell in its own process group, feed its stdout to the session, write
//! its stdin, drain its stderr into tracing and a bounded tail, and shut it
//! down without leaving anything behind.
//!
//! Threads per child: one reader (stdout), one writer (stdin), one stderr
//! drain. The reader hands each chunk to the session itself, on its own
//! thread, and reads the next once the session has handled it: there is
//! never more than one chunk in flight, so a session that falls behind
//! stops the reader and the server blocks in its own `write`.
//!
//! stdin is non-blocking (on Unix). The session queues what it writes,
//! under its own lock, in the order the core produced it; the thread that
//! held the session then writes the queue straight into the pipe once it
//! has let go of the session ([`StdinWriter::flush`]), so a call costs no
//! thread hop on the way out and the session is never held across a
//! system call (16 callers at once otherwise queue on its lock: a futex
//! wait and wake per call). One thread writes at a time, always from the
//! front of the queue, and whoever flushes writes what others queued
//! meanwhile. What the pipe does not take at once stays queued, counted in
//! the [`Backlog`], and the writer thread writes it as the child reads;
//! bytes are never reordered and never dropped. A server that stops
//! reading therefore never blocks anyone: callers wait for room before
//! they add calls, and the reader pauses while the backlog is over
//! [`READ_PAUSE`].

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, ExitStatus};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rho_proto_core::config::StdioConfig;
use rho_proto_core::text::redact::Redactor;
use rho_proto_core::text::stderr::StderrTail;

use rho_os::process::{self, ProcessGroup};
use rho_proto_core::runtime::backlog::{BACKLOG_POLL, Backlog, READ_PAUSE, STDOUT_CHUNK};
use rho_proto_core::runtime::driving::TransportSetupError;

/// What a child's pipe threads tell the session. Stdout bytes are
/// borrowed: the session handles them before the reader reads again.
#[derive(Debug)]
pub(crate) enum Pipe<'a> {
    /// Bytes from stdout.
    Stdout(&'a [u8]),
    /// stdout reached end of file (or failed to read).
    Closed,
    /// Writing stdin failed: the child stopped reading.
    WriteFailed(String),
}

/// Where the pipe threads deliver; `false` means the session has ended and
/// the thread should stop.
pub(crate) type PipeSink = Arc<dyn Fn(Pipe<'_>) -> bool + Send + Sync>;

/// A running stdio server.
pub(crate) struct StdioChild {
    server: String,
    child: Child,
    /// Its whole process tree (its process group; on Windows its job).
    group: ProcessGroup,
    stdin: Arc<Stdin>,
    backlog: Arc<Backlog>,
    stderr_tail: Arc<Mutex<StderrTail>>,
    threads: Vec<JoinHandle<()>>,
    exit: Option<ExitStatus>,
}

/// The child's stdin: the pipe, and what waits to be written into it.
struct Stdin {
    queue: Mutex<StdinQueue>,
    /// Wakes the writer thread: bytes were queued, or the input closes.
    queued: Condvar,
}

struct StdinQueue {
    /// Whether bytes are still taken: not after shutdown began or a write
    /// failed (nothing would ever read them).
    open: bool,
    /// For writes straight from the session (Unix, where the pipe is
    /// non-blocking); `None` elsewhere and once the input is not open.
    direct: Option<Arc<ChildStdin>>,
    /// Waiting bytes, oldest first.
    pending: VecDeque<Vec<u8>>,
    /// A thread (the writer thread, or one flushing) is writing bytes it
    /// took from `pending`: nobody else writes until it is done.
    writing: bool,
    /// A flush failed to write: the writer thread tells the session (a
    /// flush may run where the session is locked).
    failed: Option<String>,
    /// Shutdown began: the writer flushes what waits, then closes stdin.
    closing: bool,
}

impl StdinQueue {
    /// A write failed with `in_flight` bytes taken from the queue: nothing
    /// will ever read those or what still waits, so the input closes and
    /// all of them leave the backlog (callers waiting for room would
    /// otherwise count bytes nobody holds).
    fn close_after_failure(&mut self, backlog: &Backlog, in_flight: usize) {
        self.open = false;
        self.direct = None;
        let dropped: usize = self.pending.drain(..).map(|b| b.len()).sum();
        backlog.remove(in_flight + dropped);
        backlog.close();
    }
}

/// How long shutdown waits for the pipe threads after the group is killed.
const PUMP_EXIT_WAIT: Duration = Duration::from_millis(500);

/// How long the writer waits for the pipe to take bytes before it looks at
/// its queue again.
const WRITABLE_WAIT: Duration = Duration::from_millis(100);

impl StdioChild {
    /// Spawns `config` for server `server`; its pipe threads deliver to
    /// `sink`, and what waits for its stdin is counted in `backlog`.
    pub(crate) fn spawn(
        server: &str,
        config: &StdioConfig,
        ambient: &[(String, String)],
        sink: PipeSink,
        backlog: Arc<Backlog>,
    ) -> Result<Self, TransportSetupError> {
        let (mut command, program) = process::prepare_command(server, config, ambient)?;
        let (mut child, group) = process::spawn(server, &mut command, program)?;
        let (Some(stdout), Some(stdin), Some(stderr)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take())
        else {
            group.kill();
            let _ = child.wait();
            return Err(TransportSetupError::Pipes {
                server: server.to_owned(),
                reason: None,
            });
        };
        if let Err(e) = rho_os::pipe::set_nonblocking(&stdin) {
            group.kill();
            let _ = child.wait();
            return Err(TransportSetupError::NonBlockingInput {
                server: server.to_owned(),
                reason: e.to_string(),
            });
        }

        // Lines are redacted in the tail itself: the debug log and the
        // failure reason both read them from there.
        let stderr_tail = Arc::new(Mutex::new(
            StderrTail::default().redacting(Redactor::for_stdio(config, ambient)),
        ));
        let stdin = Arc::new(stdin);
        let queue = Arc::new(Stdin {
            queue: Mutex::new(StdinQueue {
                open: true,
                direct: cfg!(unix).then(|| Arc::clone(&stdin)),
                pending: VecDeque::new(),
                writing: false,
                failed: None,
                closing: false,
            }),
            queued: Condvar::new(),
        });
        let mut threads = Vec::with_capacity(3);
        let started = spawn_named(format!("rho-mcp-{server}-out"), {
            let sink = Arc::clone(&sink);
            let backlog = Arc::clone(&backlog);
            move || read_stdout(stdout, &sink, &backlog)
        })
        .and_then(|t| {
            threads.push(t);
            spawn_named(format!("rho-mcp-{server}-in"), {
                let (queue, backlog) = (Arc::clone(&queue), Arc::clone(&backlog));
                move || write_stdin(&stdin, &queue, &sink, &backlog)
            })
        })
        .and_then(|t| {
            threads.push(t);
            spawn_named(format!("rho-mcp-{server}-err"), {
                let tail = Arc::clone(&stderr_tail);
                let server = server.to_owned();
                move || drain_stderr(&server, stderr, &tail)
            })
        });
        let mut this = Self {
            server: server.to_owned(),
            child,
            group,
            stdin: queue,
            backlog,
            stderr_tail,
            threads,
            exit: None,
        };
        match started {
            Ok(t) => {
                this.threads.push(t);
                Ok(this)
            }
            Err(e) => {
                this.shutdown(Duration::ZERO);
                Err(TransportSetupError::Thread {
                    server: server.to_owned(),
                    reason: e.to_string(),
                })
            }
        }
    }

    /// The child's process id (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Queues bytes for the child's stdin, behind what waits, counted in
    /// the backlog; [`StdinWriter::flush`] writes them. Never blocks on the
    /// child and never drops: callers wait for room before they add calls,
    /// and the reader pauses while the backlog is large. Where the pipe
    /// blocks (not Unix), the writer thread writes everything.
    pub(crate) fn write(&self, bytes: Vec<u8>) {
        let mut queue = lock(&self.stdin.queue);
        if !queue.open {
            return;
        }
        self.backlog.add(bytes.len());
        queue.pending.push_back(bytes);
        let direct = queue.direct.is_some();
        drop(queue);
        if !direct {
            self.stdin.queued.notify_one();
        }
    }

    /// What writes the queue into the pipe from the session's threads.
    pub(crate) fn writer(&self) -> StdinWriter {
        StdinWriter {
            stdin: Arc::clone(&self.stdin),
            backlog: Arc::clone(&self.backlog),
        }
    }

    /// Waits up to `within` for the child to exit by itself. When it did,
    /// sweeps its process group, reaps it, and describes its exit status.
    pub(crate) fn exit_detail(&mut self, within: Duration) -> Option<String> {
        if self.exit.is_none() && self.wait_exit(within) {
            self.reap();
        }
        self.exit.map(process::describe_exit)
    }

    /// Polls until the child has exited (without reaping it, so its pid and
    /// process group id cannot be reused while rho still signals them).
    fn wait_exit(&mut self, within: Duration) -> bool {
        let until = Instant::now() + within;
        loop {
            if self.has_exited() {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    fn has_exited(&mut self) -> bool {
        process::has_exited(&mut self.child)
    }

    /// Kills whatever is left of the process group, then reaps the child.
    fn reap(&mut self) {
        if self.exit.is_some() {
            return;
        }
        self.group.kill();
        self.exit = self.child.wait().ok();
    }

    /// Shuts the child down: close its stdin (once what waits for it is
    /// written), give it `grace` to exit, then kill its whole process group
    /// (even after a clean exit: grandchildren may linger), and always reap
    /// it. Returns the last lines of its stderr, for a failure reason.
    pub(crate) fn shutdown(mut self, grace: Duration) -> Option<String> {
        {
            let mut queue = lock(&self.stdin.queue);
            queue.open = false;
            queue.direct = None;
            queue.closing = true;
        }
        self.stdin.queued.notify_one();
        self.backlog.close();
        let first = rho_proto_core::config::process::terminate_after(grace);
        if self.exit.is_none() && !self.wait_exit(first) {
            self.group.terminate();
            if !self.wait_exit(grace.saturating_sub(first)) {
                tracing::debug!(server = %self.server, "did not exit after SIGTERM; killing");
            }
        }
        self.reap();
        // The pipes close once the group is gone. A process that escaped the
        // group (a daemon that called setsid) could hold them open forever, so
        // the pipe threads get a bounded wait and are otherwise left behind.
        let until = Instant::now() + PUMP_EXIT_WAIT;
        while self.threads.iter().any(|t| !t.is_finished()) && Instant::now() < until {
            thread::sleep(Duration::from_millis(2));
        }
        for handle in self.threads.drain(..) {
            if handle.is_finished() {
                let _ = handle.join();
            } else {
                tracing::warn!(server = %self.server, "a pipe stayed open after the process group was killed");
            }
        }
        match self.stderr_tail.lock() {
            Ok(tail) => tail.render(),
            Err(poisoned) => poisoned.into_inner().render(),
        }
    }
}

fn spawn_named(name: String, f: impl FnOnce() + Send + 'static) -> io::Result<JoinHandle<()>> {
    thread::Builder::new().name(name).spawn(f)
}

/// Writes a child's queued stdin straight into the pipe, from whichever
/// thread queued it, after that thread let go of the session.
#[derive(Clone)]
pub(crate) struct StdinWriter {
    stdin: Arc<Stdin>,
    backlog: Arc<Backlog>,
}

impl StdinWriter {
    /// Writes what waits, oldest first, until the queue is empty, the pipe
    /// is full (the writer thread takes the rest over as the child reads)
    /// or another thread is writing (it writes ours after its own). A
    /// failure closes the input; the writer thread reports it, so a flush
    /// may run with the session locked.
    pub(crate) fn flush(&self) {
        let mut queue = lock(&self.stdin.queue);
        let mut wake = false;
        while !queue.writing {
            let Some(pipe) = queue.direct.clone() else {
                break;
            };
            let Some(bytes) = queue.pending.pop_front() else {
                break;
            };
            queue.writing = true;
            drop(queue);
            let written = write_some(&pipe, &bytes);
            queue = lock(&self.stdin.queue);
            queue.writing = false;
            match written {
                Ok(n) => {
                    self.backlog.remove(n);
                    if n < bytes.len() {
                        queue.pending.push_front(bytes[n..].to_vec());
                        wake = true;
                        break;
                    }
                }
                Err(e) => {
                    queue.close_after_failure(&self.backlog, bytes.len());
                    queue.failed = Some(e.to_string());
                    wake = true;
                    break;
                }
            }
        }
        // The writer thread waits out a write in progress; it must hear
        // when shutdown waits behind this one.
        wake |= queue.closing;
        drop(queue);
        if wake {
            self.stdin.queued.notify_one();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reads stdout a chunk at a time and hands each to the session, not while
/// the child leaves its input unread.
fn read_stdout(mut stdout: ChildStdout, sink: &PipeSink, backlog: &Backlog) {
    let mut buf = StdoutBuffer::new();
    loop {
        while !backlog.has_room(READ_PAUSE) {
            thread::sleep(BACKLOG_POLL);
        }
        match buf.read(&mut stdout) {
            Ok(0) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
            Ok(n) => {
                if !sink(Pipe::Stdout(buf.filled(n))) {
                    // The session ended.
                    return;
                }
            }
        }
    }
    sink(Pipe::Closed);
}

/// Where stdout is read into, [`STDOUT_CHUNK`] at a time. On Unix the
/// buffer is reserved, not zeroed, and a read fills its spare capacity
/// (as on smol), so only what the largest read filled is ever resident: a
/// server whose messages are small costs a page or two here, not the
/// 64 KiB that zeroing touched, on this thread's own malloc arena, for
/// every stdio server.
struct StdoutBuffer(Vec<u8>);

impl StdoutBuffer {
    #[cfg(unix)]
    fn new() -> Self {
        Self(Vec::with_capacity(STDOUT_CHUNK))
    }

    #[cfg(not(unix))]
    fn new() -> Self {
        Self(vec![0; STDOUT_CHUNK])
    }

    /// One read of up to [`STDOUT_CHUNK`] bytes; see [`StdoutBuffer::filled`].
    #[cfg(unix)]
    fn read(&mut self, stdout: &mut ChildStdout) -> io::Result<usize> {
        self.0.clear();
        Ok(rustix::io::read(
            &*stdout,
            rustix::buffer::spare_capacity(&mut self.0),
        )?)
    }

    #[cfg(not(unix))]
    fn read(&mut self, stdout: &mut ChildStdout) -> io::Result<usize> {
        stdout.read(&mut self.0)
    }

    /// The `n` bytes the last read returned.
    fn filled(&self, n: usize) -> &[u8] {
        &self.0[..n]
    }
}

/// Writes what the session queued, oldest first, as the child takes it;
/// once shutdown began and nothing waits, returns, dropping its handle on
/// the pipe, which closes the child's stdin.
fn write_stdin(stdin: &ChildStdin, shared: &Stdin, sink: &PipeSink, backlog: &Backlog) {
    // Whether this thread holds `writing` for the bytes it last wrote.
    let mut held = false;
    loop {
        let bytes = {
            let mut queue = lock(&shared.queue);
            if std::mem::take(&mut held) {
                queue.writing = false;
            }
            loop {
                if let Some(error) = queue.failed.take() {
                    drop(queue);
                    sink(Pipe::WriteFailed(error));
                    return;
                }
                if !queue.writing
                    && let Some(bytes) = queue.pending.pop_front()
                {
                    queue.writing = true;
                    held = true;
                    break bytes;
                }
                if queue.closing && !queue.writing {
                    drop(queue);
                    backlog.close();
                    return;
                }
                queue = shared
                    .queued
                    .wait(queue)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        };
        // Unlocked: the session queues more meanwhile, behind these.
        if let Err(e) = write_all(stdin, &bytes) {
            {
                let mut queue = lock(&shared.queue);
                queue.writing = false;
                queue.close_after_failure(backlog, bytes.len());
            }
            sink(Pipe::WriteFailed(e.to_string()));
            return;
        }
        backlog.remove(bytes.len());
    }
}

/// Writes all of `bytes`, waiting for the child to read when the pipe is
/// full.
fn write_all(stdin: &ChildStdin, bytes: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        done += write_some(stdin, &bytes[done..])?;
        if done < bytes.len() {
            wait_writable(stdin);
        }
    }
    Ok(())
}

/// Writes as much of `bytes` as the pipe takes now: all of it, or up to
/// where it is full (non-blocking on Unix; elsewhere the pipe blocks, and
/// only the writer thread writes).
fn write_some(mut pipe: &ChildStdin, bytes: &[u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < bytes.len() {
        match pipe.write(&bytes[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Waits (bounded) until the pipe has room or the child closed its end.
fn wait_writable(stdin: &ChildStdin) {
    rho_os::pipe::wait_writable(stdin, WRITABLE_WAIT);
}

fn drain_stderr(server: &str, mut stderr: impl Read, tail: &Mutex<StderrTail>) {
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let lines = lock(tail).push(&buf[..n]);
                for line in lines {
                    tracing::debug!(target: "rho::mcp::stderr", server, "{line}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that reads nothing until `gate` exists, then echoes its
    /// stdin to stdout.
    fn gated_cat(
        server: &str,
        gate: &std::path::Path,
        sink: PipeSink,
    ) -> (StdioChild, Arc<Backlog>) {
        let script = format!(
            "while [ ! -e '{}' ]; do sleep 0.01; done; exec cat",
            gate.display()
        );
        sh_child(server, &script, sink)
    }

    /// A child running `script` under `sh -c`.
    fn sh_child(server: &str, script: &str, sink: PipeSink) -> (StdioChild, Arc<Backlog>) {
        let config = StdioConfig {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: None,
            env: std::collections::BTreeMap::new(),
            env_from_env: std::collections::BTreeMap::new(),
        };
        let ambient: Vec<(String, String)> = std::env::vars().collect();
        let backlog = Arc::new(Backlog::default());
        let child = StdioChild::spawn(server, &config, &ambient, sink, Arc::clone(&backlog))
            .expect("spawn sh");
        (child, backlog)
    }

    fn threads_named(prefix: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .map(|tasks| {
                tasks
                    .flatten()
                    .filter(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            .is_ok_and(|comm| comm.starts_with(prefix))
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn a_child_that_does_not_read_never_blocks_the_writer_and_loses_nothing() {
        let gate = std::env::temp_dir().join(format!("rho-stdio-gate-{}", std::process::id()));
        let _ = std::fs::remove_file(&gate);
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let tx = Mutex::new(tx);
        let sink: PipeSink = Arc::new(move |pipe| match pipe {
            Pipe::Stdout(bytes) => lock(&tx).send(bytes.to_vec()).is_ok(),
            Pipe::Closed | Pipe::WriteFailed(_) => false,
        });
        let (child, backlog) = gated_cat("s1", &gate, sink);
        // 64 chunks of 64 KiB, each a different byte: more than any pipe
        // holds, all written while the child reads nothing.
        let chunks: Vec<Vec<u8>> = (0..64u8).map(|n| vec![b'0' + n; 64 * 1024]).collect();
        let writer = child.writer();
        for chunk in &chunks {
            child.write(chunk.clone());
            writer.flush();
        }
        let waiting = backlog.bytes();
        assert!(
            waiting > 0,
            "what the pipe could not take waits in the backlog"
        );
        std::fs::write(&gate, b"").expect("open the gate");
        let expected: Vec<u8> = chunks.concat();
        let mut echoed = Vec::new();
        while echoed.len() < expected.len() {
            let bytes = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the child echoes everything");
            echoed.extend(bytes);
        }
        assert!(echoed == expected, "every byte, in order");
        let until = Instant::now() + Duration::from_secs(10);
        while backlog.bytes() > 0 {
            assert!(Instant::now() < until, "the backlog drains");
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(threads_named("rho-mcp-s1-"), 3, "out, in, err");
        let pid = child.pid();
        child.shutdown(Duration::from_millis(500));
        assert_eq!(threads_named("rho-mcp-s1-"), 0, "every pipe thread joined");
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the child is reaped"
        );
        let _ = std::fs::remove_file(&gate);
    }

    #[test]
    fn a_failure_while_the_writer_thread_holds_bytes_empties_the_backlog() {
        let gate = std::env::temp_dir().join(format!("rho-stdio-gate3-{}", std::process::id()));
        let _ = std::fs::remove_file(&gate);
        let (tx, rx) = std::sync::mpsc::channel::<(String, Option<String>)>();
        let tx = Mutex::new(tx);
        let sink: PipeSink = Arc::new(move |pipe| match pipe {
            Pipe::WriteFailed(error) => {
                let on = thread::current().name().map(str::to_owned);
                lock(&tx).send((error, on)).is_ok()
            }
            Pipe::Stdout(_) | Pipe::Closed => true,
        });
        // Reads nothing; once the gate exists, closes its stdin and lives on.
        let script = format!(
            "while [ ! -e '{}' ]; do sleep 0.01; done; exec 0<&-; exec sleep 30",
            gate.display()
        );
        let (child, backlog) = sh_child("s3", &script, sink);
        let writer = child.writer();
        // More than any pipe holds: the writer thread takes the rest over.
        for n in 0..16u8 {
            child.write(vec![b'a' + n; 64 * 1024]);
            writer.flush();
        }
        assert!(backlog.bytes() > 0, "the writer thread holds what waits");
        std::fs::write(&gate, b"").expect("open the gate");
        let (error, on) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the failure is reported");
        assert!(error.to_lowercase().contains("pipe"), "{error}");
        assert_eq!(
            on.as_deref(),
            Some("rho-mcp-s3-in"),
            "the writer thread failed"
        );
        assert_eq!(
            backlog.bytes(),
            0,
            "what it held and what waited left the backlog"
        );
        assert!(backlog.is_closed(), "nobody waits for room");
        child.write(b"dropped\n".to_vec());
        assert_eq!(backlog.bytes(), 0, "nothing is queued after a failure");
        child.shutdown(Duration::from_millis(200));
        let _ = std::fs::remove_file(&gate);
    }

    #[test]
    fn a_flush_that_cannot_write_is_reported_by_the_writer_thread_and_closes_the_input() {
        let (tx, rx) = std::sync::mpsc::channel::<(String, Option<String>)>();
        let tx = Mutex::new(tx);
        let sink: PipeSink = Arc::new(move |pipe| match pipe {
            Pipe::WriteFailed(error) => {
                let on = thread::current().name().map(str::to_owned);
                lock(&tx).send((error, on)).is_ok()
            }
            Pipe::Stdout(_) | Pipe::Closed => true,
        });
        // The child closes its end of stdin at once, then lives on.
        let (child, backlog) = sh_child("s2", "exec 0<&-; exec sleep 30", sink);
        let writer = child.writer();
        let until = Instant::now() + Duration::from_secs(10);
        let (error, on) = loop {
            child.write(b"{}\n".to_vec());
            // Flushed here, where a session may hold its lock: the report
            // must not come back on this thread.
            writer.flush();
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(error) => break error,
                Err(_) => assert!(Instant::now() < until, "the failure is reported"),
            }
        };
        assert!(error.to_lowercase().contains("pipe"), "{error}");
        assert_eq!(
            on.as_deref(),
            Some("rho-mcp-s2-in"),
            "told by the writer thread"
        );
        assert!(!lock(&child.stdin.queue).open, "the input closed");
        child.write(b"dropped\n".to_vec());
        assert_eq!(backlog.bytes(), 0, "nothing is queued after a failure");
        assert!(backlog.is_closed(), "nobody waits for room");
        child.shutdown(Duration::from_millis(200));
    }
}
