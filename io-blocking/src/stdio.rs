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
//! stdin is non-blocking (on Unix): whoever holds the session writes
//! straight into the pipe, so a call costs no thread hop on the way out.
//! What the pipe does not take at once is queued, counted in the
//! [`Backlog`], and written by the writer thread as the child reads; bytes
//! are never reordered (nothing is written directly while a queue waits)
//! and never dropped. A server that stops reading therefore never blocks
//! anyone: callers wait for room before they add calls, and the reader
//! pauses while the backlog is over [`READ_PAUSE`].

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rho_proto_core::config::StdioConfig;
use rho_proto_core::text::redact::Redactor;
use rho_proto_core::text::stderr::StderrTail;

use rho_os::process;
use rho_proto_core::runtime::backlog::{BACKLOG_POLL, Backlog, READ_PAUSE, STDOUT_CHUNK};

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
    /// The writer thread is writing bytes it took from `pending`: nothing
    /// may be written directly until it is done.
    writing: bool,
    /// Shutdown began: the writer flushes what waits, then closes stdin.
    closing: bool,
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
    ) -> Result<Self, String> {
        let (mut command, program) = process::prepare_command(server, config, ambient)?;
        let mut child = command.spawn().map_err(|e| {
            format!(
                "server `{server}`: could not start `{}`: {e}",
                program.display()
            )
        })?;
        let (Some(stdout), Some(stdin), Some(stderr)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take())
        else {
            process::kill_group(child.id());
            let _ = child.wait();
            return Err(format!("server `{server}`: its pipes could not be opened"));
        };
        if let Err(e) = rho_os::pipe::set_nonblocking(&stdin) {
            process::kill_group(child.id());
            let _ = child.wait();
            return Err(format!(
                "server `{server}`: its input could not be made non-blocking: {e}"
            ));
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
                Err(format!("server `{server}`: {e}"))
            }
        }
    }

    /// The child's process id (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes bytes to the child's stdin, straight into the pipe when
    /// nothing waits and it has room, else behind what waits (counted in
    /// the backlog, for the writer thread). Never blocks on the child and
    /// never drops: callers wait for room before they add calls, and the
    /// reader pauses while the backlog is large. An error means writing
    /// failed just now (the child stopped reading); later bytes are
    /// dropped, as nothing will ever read them.
    pub(crate) fn write(&self, bytes: Vec<u8>) -> Result<(), String> {
        let mut queue = lock(&self.stdin.queue);
        if !queue.open {
            return Ok(());
        }
        let mut from = 0;
        let idle = queue.pending.is_empty() && !queue.writing;
        if let (true, Some(pipe)) = (idle, &queue.direct) {
            match write_some(pipe, &bytes) {
                Ok(n) if n == bytes.len() => return Ok(()),
                Ok(n) => from = n,
                Err(e) => {
                    queue.open = false;
                    queue.direct = None;
                    self.backlog.close();
                    return Err(e.to_string());
                }
            }
        }
        let rest = if from == 0 {
            bytes
        } else {
            bytes[from..].to_vec()
        };
        self.backlog.add(rest.len());
        queue.pending.push_back(rest);
        drop(queue);
        self.stdin.queued.notify_one();
        Ok(())
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
        process::kill_group(self.child.id());
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
            process::terminate_group(self.child.id());
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

fn spawn_named(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, String> {
    thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| format!("could not start a thread: {e}"))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reads stdout a chunk at a time and hands each to the session, not while
/// the child leaves its input unread.
fn read_stdout(mut stdout: impl Read, sink: &PipeSink, backlog: &Backlog) {
    let mut buf = vec![0u8; STDOUT_CHUNK];
    loop {
        while !backlog.has_room(READ_PAUSE) {
            thread::sleep(BACKLOG_POLL);
        }
        match stdout.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
            Ok(n) => {
                if !sink(Pipe::Stdout(&buf[..n])) {
                    // The session ended.
                    return;
                }
            }
        }
    }
    sink(Pipe::Closed);
}

/// Writes what the session queued, oldest first, as the child takes it;
/// once shutdown began and nothing waits, returns, dropping its handle on
/// the pipe, which closes the child's stdin.
fn write_stdin(stdin: &ChildStdin, shared: &Stdin, sink: &PipeSink, backlog: &Backlog) {
    loop {
        let bytes = {
            let mut queue = lock(&shared.queue);
            loop {
                if let Some(bytes) = queue.pending.pop_front() {
                    queue.writing = true;
                    break bytes;
                }
                queue.writing = false;
                if queue.closing {
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
                queue.open = false;
                queue.direct = None;
                queue.writing = false;
                queue.pending.clear();
            }
            backlog.close();
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
        let config = StdioConfig {
            command: "sh".into(),
            args: vec![
                "-c".into(),
                format!(
                    "while [ ! -e '{}' ]; do sleep 0.01; done; exec cat",
                    gate.display()
                ),
            ],
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
        for chunk in &chunks {
            child
                .write(chunk.clone())
                .expect("never fails, never blocks");
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
}
