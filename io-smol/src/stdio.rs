//! A stdio server's child process on smol: the command is prepared exactly
//! as on threads (`rho_os::process::prepare_command`: no shell, a
//! computed environment, its own process group), then run with
//! async-process. Three small tasks pump stdout into the session task,
//! write stdin from a queue, and drain stderr into tracing and a bounded
//! tail. Shutdown closes stdin, waits the grace period, kills the group and
//! reaps the child. Both pipes are bounded without dropping a byte, exactly
//! as on threads (`rho_proto_core::runtime::backlog`): the reader runs on credits
//! the session task returns, and the stdin queue is counted so that callers
//! and the reader can wait for it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_os::process::{
    describe_exit, has_exited_pid, kill_group, prepare_command, terminate_group,
};
use rho_proto_core::config::StdioConfig;
use rho_proto_core::runtime::backlog::{
    BACKLOG_POLL, Backlog, READ_PAUSE, STDOUT_CHUNK, STDOUT_CREDITS,
};
use rho_proto_core::runtime::driving::PipeEvent;
use rho_proto_core::text::redact::Redactor;
use rho_proto_core::text::stderr::StderrTail;
use smol::channel::{Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::process::Stdio;
use smol::{Executor, Task, Timer};

use crate::driver::Input;

/// A running stdio server.
pub(crate) struct StdioChild {
    child: smol::process::Child,
    pid: u32,
    stdin: Option<Sender<Vec<u8>>>,
    backlog: Arc<Backlog>,
    /// Returns a stdout credit to the reader; dropped at shutdown.
    credits: Option<Sender<()>>,
    stderr_tail: Arc<Mutex<StderrTail>>,
    pumps: Vec<Task<()>>,
    exit: Option<String>,
}

/// How long shutdown waits for the pump tasks after the group is killed.
const PUMP_EXIT_WAIT: Duration = Duration::from_millis(500);
/// How often an exit is polled for (without reaping).
const EXIT_POLL: Duration = Duration::from_millis(5);

impl StdioChild {
    /// Starts the server, its pumps running on `executor`, its stdin queue
    /// counted in `backlog`.
    pub(crate) fn spawn(
        executor: &Arc<Executor<'static>>,
        server: &str,
        config: &StdioConfig,
        ambient: &[(String, String)],
        (events, backlog): (Sender<Input>, Arc<Backlog>),
    ) -> Result<Self, String> {
        let (command, program) = prepare_command(server, config, ambient)?;
        // The async command tracks its own stdio choices; restate them.
        let mut child = smol::process::Command::from(command)
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
        let (Some(mut stdout), Some(mut stdin), Some(mut stderr)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take())
        else {
            kill_group(pid);
            return Err(format!("server `{server}`: its pipes could not be opened"));
        };
        // Lines are redacted in the tail itself: the debug log and the
        // failure reason both read them from there.
        let stderr_tail = Arc::new(Mutex::new(
            StderrTail::default().redacting(Redactor::for_stdio(config, ambient)),
        ));
        let (write_tx, write_rx): (Sender<Vec<u8>>, Receiver<Vec<u8>>) = smol::channel::unbounded();
        let (credit_tx, credit_rx) = smol::channel::bounded(STDOUT_CREDITS);
        for _ in 0..STDOUT_CREDITS {
            let _ = credit_tx.try_send(());
        }
        let out_events = events.clone();
        let read_backlog = Arc::clone(&backlog);
        let reader = executor.spawn(async move {
            let mut buf = vec![0u8; STDOUT_CHUNK];
            loop {
                // One credit per chunk, returned once the session handled
                // it; none while the child leaves its input unread.
                if credit_rx.recv().await.is_err() {
                    return;
                }
                while !read_backlog.has_room(READ_PAUSE) {
                    Timer::after(BACKLOG_POLL).await;
                }
                match stdout.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let bytes = buf[..n].to_vec();
                        if out_events
                            .send(Input::Pipe(PipeEvent::Stdout(bytes)))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
            let _ = out_events.send(Input::Pipe(PipeEvent::StdoutClosed)).await;
        });
        let write_backlog = Arc::clone(&backlog);
        let writer = executor.spawn(async move {
            // Ends when the queue's sender is dropped, closing the child's stdin.
            while let Ok(bytes) = write_rx.recv().await {
                if let Err(e) = async {
                    stdin.write_all(&bytes).await?;
                    stdin.flush().await
                }
                .await
                {
                    write_backlog.close();
                    let _ = events
                        .send(Input::Pipe(PipeEvent::WriteFailed(e.to_string())))
                        .await;
                    return;
                }
                write_backlog.remove(bytes.len());
            }
            write_backlog.close();
        });
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
            stdin: Some(write_tx),
            backlog,
            credits: Some(credit_tx),
            stderr_tail,
            pumps: vec![reader, writer, drain],
            exit: None,
        })
    }

    /// The child's process id (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Queues bytes for the child's stdin, counted in the backlog; never
    /// waits on the child and never drops (the queue is unbounded; callers
    /// and the reader wait for the backlog instead).
    pub(crate) fn write(&self, bytes: Vec<u8>) {
        if let Some(stdin) = &self.stdin {
            let len = bytes.len();
            self.backlog.add(len);
            if stdin.try_send(bytes).is_err() {
                // The writer is gone (it reported WriteFailed): nothing drains.
                self.backlog.remove(len);
                self.backlog.close();
            }
        }
    }

    /// The session handled a chunk of stdout: the reader may read another.
    pub(crate) fn chunk_handled(&self) {
        if let Some(credits) = &self.credits {
            let _ = credits.try_send(());
        }
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
        self.exit = Some(match self.child.status().await {
            Ok(status) => describe_exit(status),
            Err(e) => format!("exit status unknown: {e}"),
        });
    }

    /// Closes stdin, gives the child `grace` to exit, kills its group and
    /// reaps it. Returns the last lines of its stderr.
    pub(crate) async fn shutdown(mut self, grace: Duration) -> Option<String> {
        self.stdin = None;
        self.credits = None;
        self.backlog.close();
        let first = rho_proto_core::config::process::terminate_after(grace);
        if self.exit.is_none() && !self.wait_exit(first).await {
            terminate_group(self.pid);
            if !self.wait_exit(grace.saturating_sub(first)).await {
                tracing::debug!(pid = self.pid, "did not exit after SIGTERM; killing");
            }
        }
        self.reap().await;
        // The pipes close once the group is gone; a process that escaped the
        // group could hold them open, so the pumps get a bounded wait and
        // are then cancelled by dropping them.
        let pumps = std::mem::take(&mut self.pumps);
        let all = async {
            for pump in pumps {
                pump.await;
            }
            true
        };
        let finished = smol::future::or(all, async {
            Timer::after(PUMP_EXIT_WAIT).await;
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
    /// `shutdown`) still takes its whole process group with it.
    fn drop(&mut self) {
        if self.exit.is_none() {
            kill_group(self.pid);
        }
    }
}
