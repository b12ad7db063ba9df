//! A stdio server's child process on plain threads: spawn it without a
//! shell in its own process group, pump its stdout into the driver, write
//! its stdin from a queue, drain its stderr into tracing and a bounded tail,
//! and shut it down without leaving anything behind.
//!
//! Threads per child: one reader (stdout), one writer (stdin, so a server
//! that stops reading can never block the driver), one stderr drain. Both
//! pipes are bounded without dropping a byte (see `rho_proto_core::backlog`): the
//! reader runs on credits the driver returns, and the writer's queue is
//! counted so that callers and the reader can wait for it.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rho_os::process;
use rho_proto_core::config::StdioConfig;
use rho_proto_core::driving::PipeEvent;
use rho_proto_core::redact::Redactor;
use rho_proto_core::stderr::StderrTail;

use rho_proto_core::backlog::{BACKLOG_POLL, Backlog, READ_PAUSE, STDOUT_CHUNK, STDOUT_CREDITS};

/// A running stdio server.
pub(crate) struct StdioChild {
    server: String,
    child: Child,
    stdin: Option<Sender<Vec<u8>>>,
    backlog: Arc<Backlog>,
    /// Returns a stdout credit to the reader; dropped at shutdown, which
    /// stops a reader waiting for one.
    credits: Option<SyncSender<()>>,
    stderr_tail: Arc<Mutex<StderrTail>>,
    threads: Vec<JoinHandle<()>>,
    exit: Option<ExitStatus>,
}

/// How long shutdown waits for the pipe threads after the group is killed.
const PUMP_EXIT_WAIT: Duration = Duration::from_millis(500);

impl StdioChild {
    /// Spawns `config` for server `server`, with pipe events sent to
    /// `events` wrapped by `wrap`, and its stdin queue counted in
    /// `backlog`.
    pub(crate) fn spawn<E: Send + 'static>(
        server: &str,
        config: &StdioConfig,
        ambient: &[(String, String)],
        (events, wrap): (Sender<E>, fn(PipeEvent) -> E),
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

        // Lines are redacted in the tail itself: the debug log and the
        // failure reason both read them from there.
        let stderr_tail = Arc::new(Mutex::new(
            StderrTail::default().redacting(Redactor::for_stdio(config, ambient)),
        ));
        let (write_tx, write_rx) = mpsc::channel();
        let (credit_tx, credit_rx) = mpsc::sync_channel(STDOUT_CREDITS);
        for _ in 0..STDOUT_CREDITS {
            let _ = credit_tx.try_send(());
        }
        let threads = vec![
            spawn_named(format!("rho-mcp-{server}-out"), {
                let events = events.clone();
                let backlog = Arc::clone(&backlog);
                move || read_stdout(stdout, (events, wrap), &credit_rx, &backlog)
            })?,
            spawn_named(format!("rho-mcp-{server}-in"), {
                let backlog = Arc::clone(&backlog);
                move || write_stdin(stdin, write_rx, (events, wrap), &backlog)
            })?,
            spawn_named(format!("rho-mcp-{server}-err"), {
                let tail = Arc::clone(&stderr_tail);
                let server = server.to_owned();
                move || drain_stderr(&server, stderr, &tail)
            })?,
        ];
        Ok(Self {
            server: server.to_owned(),
            child,
            stdin: Some(write_tx),
            backlog,
            credits: Some(credit_tx),
            stderr_tail,
            threads,
            exit: None,
        })
    }

    /// The child's process id (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Queues bytes for the child's stdin, counted in the backlog. Never
    /// blocks on the child and never drops: callers wait for room before
    /// they add calls, and the reader pauses while the backlog is large.
    pub(crate) fn write(&self, bytes: Vec<u8>) {
        if let Some(stdin) = &self.stdin {
            let len = bytes.len();
            self.backlog.add(len);
            if stdin.send(bytes).is_err() {
                // The writer is gone (it reported WriteFailed): nothing drains.
                self.backlog.remove(len);
                self.backlog.close();
            }
        }
    }

    /// The driver handled a chunk of stdout: the reader may read another.
    pub(crate) fn chunk_handled(&self) {
        if let Some(credits) = &self.credits {
            let _ = credits.try_send(());
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
        process::kill_group(self.child.id());
        self.exit = self.child.wait().ok();
    }

    /// Shuts the child down: close its stdin, give it `grace` to exit, then
    /// kill its whole process group (even after a clean exit: grandchildren
    /// may linger), and always reap it. Returns the last lines of its
    /// stderr, for a failure reason.
    pub(crate) fn shutdown(mut self, grace: Duration) -> Option<String> {
        self.stdin = None;
        self.credits = None;
        self.backlog.close();
        let first = rho_proto_core::process::terminate_after(grace);
        if self.exit.is_none() && !self.wait_exit(first) {
            process::terminate_group(self.child.id());
            if !self.wait_exit(grace.saturating_sub(first)) {
                tracing::debug!(server = %self.server, "did not exit after SIGTERM; killing");
            }
        }
        self.reap();
        // The pipes close once the group is gone. A process that escaped the
        // group (a daemon that called setsid) could hold them open forever, so
        // the pump threads get a bounded wait and are otherwise left behind.
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

/// Reads stdout a chunk at a time, each on a credit the driver returns once
/// it handled the chunk, and not while the child leaves its input unread.
fn read_stdout<E>(
    mut stdout: impl Read,
    (events, wrap): (Sender<E>, fn(PipeEvent) -> E),
    credits: &Receiver<()>,
    backlog: &Backlog,
) {
    let mut buf = vec![0u8; STDOUT_CHUNK];
    loop {
        if credits.recv().is_err() {
            // The driver is shutting down.
            return;
        }
        while !backlog.has_room(READ_PAUSE) {
            thread::sleep(BACKLOG_POLL);
        }
        match stdout.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if events
                    .send(wrap(PipeEvent::Stdout(buf[..n].to_vec())))
                    .is_err()
                {
                    return;
                }
            }
        }
    }
    let _ = events.send(wrap(PipeEvent::StdoutClosed));
}

fn write_stdin<E>(
    mut stdin: ChildStdin,
    queue: Receiver<Vec<u8>>,
    (events, wrap): (Sender<E>, fn(PipeEvent) -> E),
    backlog: &Backlog,
) {
    // Ends when the queue's sender is dropped, which closes the child's stdin.
    for bytes in queue {
        if let Err(e) = stdin.write_all(&bytes).and_then(|()| stdin.flush()) {
            backlog.close();
            let _ = events.send(wrap(PipeEvent::WriteFailed(e.to_string())));
            return;
        }
        backlog.remove(bytes.len());
    }
    backlog.close();
}

fn drain_stderr(server: &str, mut stderr: impl Read, tail: &Mutex<StderrTail>) {
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buf) {
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
