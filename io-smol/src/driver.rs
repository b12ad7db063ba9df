//! The session task: one per server, owning the core's pure
//! [`Driver`](rho_proto_core::runtime::driver::Driver) (no lock around
//! it). The task only waits and does IO: it races host commands and HTTP
//! input (both in its [`Inbox`]), a stdio child's pipes (read and written
//! by the task itself) and a single timer, feeds whichever wins into the
//! driver, and carries the driver's effects out. The timer is
//! re-armed only when the driver says the deadline moved earlier, and the
//! task yields after a burst of inputs so one busy server cannot starve
//! the others sharing the executor thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rho_proto_core::config::{ServerConfig, Transport};
use rho_proto_core::connection::Output;
use rho_proto_core::host::{HostServices, TranscriptSink};
use rho_proto_core::http::HttpOutput;
use rho_proto_core::runtime::Health;
use rho_proto_core::runtime::backlog::Backlog;
use rho_proto_core::runtime::driver::{Driver, Effect, Setup};
use rho_proto_core::runtime::driving::{CallUpdate, StartupError, StartupOutcome};
use smol::channel::Sender;
use smol::{Executor, Timer};

use crate::http::HttpIo;
use crate::inbox::{self, Inbox};
use crate::reply::ReplySender;
use crate::stdio::{PipeReady, StdioChild};

/// What wakes a session task on smol: replies go through [`ReplySender`]s.
pub(crate) type Input = rho_proto_core::runtime::driving::Input<ReplySender>;
/// What the host asks of a session task.
pub(crate) type Command = rho_proto_core::runtime::driving::Command<ReplySender>;

/// Shared between a session task and the host's status reports.
pub(crate) type SharedHealth = Arc<Mutex<Health>>;

/// How many inputs a session task handles before it yields.
const BURST: u32 = 64;
/// How long the task waits for an exit status after stdout closes.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);

/// The IO a connection runs over.
enum Io {
    Stdio(StdioChild),
    Http(HttpIo),
}

impl Io {
    fn pid(&self) -> Option<u32> {
        match self {
            Io::Stdio(child) => Some(child.pid()),
            Io::Http(_) => None,
        }
    }

    fn carry(&mut self, output: Output) {
        match (self, output) {
            (Io::Stdio(child), Output::Write(bytes)) => child.write(bytes),
            (Io::Http(http), Output::Http(HttpOutput::Send(request))) => http.send(request),
            (Io::Http(http), Output::Http(HttpOutput::Abort(exchange))) => http.abort(exchange),
            _ => {}
        }
    }

    async fn exit_detail(&mut self) -> Option<String> {
        match self {
            Io::Stdio(child) => child.exit_detail(EXIT_STATUS_WAIT).await,
            Io::Http(_) => None,
        }
    }

    async fn shutdown(self, grace: Duration) -> Option<String> {
        match self {
            Io::Stdio(child) => child.shutdown(grace).await,
            Io::Http(mut http) => {
                http.shutdown();
                None
            }
        }
    }
}

/// What ended a session task's wait.
enum Woke {
    /// A command or transport input from the inbox (`None`: every
    /// sender is gone).
    Input(Option<Input>),
    /// The stdio child's pipes.
    Pipe(PipeReady),
    /// The timer fired.
    Timer,
}

/// Everything a session task is given.
pub(crate) struct TaskArgs {
    pub(crate) executor: Arc<Executor<'static>>,
    pub(crate) config: ServerConfig,
    pub(crate) ambient: Arc<Vec<(String, String)>>,
    pub(crate) root: Option<String>,
    pub(crate) host: HostServices,
    pub(crate) record: Option<Arc<dyn TranscriptSink>>,
    pub(crate) grace: Duration,
    pub(crate) inputs: (inbox::Sender<Input>, Inbox<Input>),
    pub(crate) startup: Sender<StartupOutcome>,
    pub(crate) health: SharedHealth,
    /// What waits for a stdio child's stdin.
    pub(crate) backlog: Arc<Backlog>,
}

/// Where a task carries the driver's effects that are not transport IO.
struct Host {
    executor: Arc<Executor<'static>>,
    services: HostServices,
    record: Option<Arc<dyn TranscriptSink>>,
    startup: Option<Sender<StartupOutcome>>,
    health: SharedHealth,
    /// Where the host's answers to questions come back in.
    answers: inbox::Sender<Input>,
}

impl Host {
    /// Carries out every effect the driver has, handing transport outputs
    /// to `transmit`; returns whether the driver said to end the transport.
    fn carry(
        &mut self,
        driver: &mut Driver<ReplySender>,
        mut transmit: impl FnMut(Output),
    ) -> bool {
        let mut end = false;
        while let Some(effect) = driver.poll_effect() {
            match effect {
                Effect::Transmit(output) => transmit(output),
                Effect::Reply(reply, update) => reply.send(update),
                Effect::Progress { call, progress } => {
                    if let Some(reply) = driver.caller(call) {
                        reply.send(CallUpdate::Progress(progress));
                    }
                }
                Effect::Startup(outcome) => {
                    if let Some(tx) = self.startup.take() {
                        let _ = tx.try_send(outcome);
                    }
                }
                Effect::Ask { question, kind } => {
                    // A person may take minutes: answer on the blocking pool.
                    let services = self.services.clone();
                    let server = driver.server().to_owned();
                    let answers = self.answers.clone();
                    self.executor
                        .spawn(async move {
                            let answer = smol::unblock(move || {
                                rho_proto_core::host::answer(&services, &server, &kind)
                            })
                            .await;
                            let _ =
                                answers.send(Input::Command(Command::Answer { question, answer }));
                        })
                        .detach();
                }
                Effect::Health(now) => match self.health.lock() {
                    Ok(mut health) => *health = now,
                    Err(poisoned) => *poisoned.into_inner() = now,
                },
                Effect::Record(lines) => {
                    if let Some(sink) = &self.record {
                        sink.write(lines);
                    }
                }
                Effect::EndTransport => end = true,
                // An effect added to the core later asks nothing of this
                // executor until it is carried out here.
                _ => {}
            }
        }
        end
    }
}

/// Runs one server to completion.
pub(crate) async fn run(args: TaskArgs) {
    let TaskArgs {
        executor,
        config,
        ambient,
        root,
        host,
        record,
        grace,
        inputs: (tx, mut rx),
        startup,
        health,
        backlog,
    } = args;
    let setup = Setup {
        config: &config,
        ambient: &ambient,
        workspace_root: root.as_deref(),
        host: &host,
        record: record.is_some(),
    };
    let mut driver = match Driver::connect(setup, Instant::now()) {
        Ok(driver) => driver,
        Err(error) => {
            let _ = startup.try_send(Err(error));
            return;
        }
    };
    let io = match &config.transport {
        Transport::Stdio(stdio) => {
            StdioChild::spawn(&executor, driver.server(), stdio, &ambient, backlog).map(Io::Stdio)
        }
        Transport::StreamableHttp(_) => Ok(Io::Http(HttpIo::new(&executor, tx.clone()))),
    };
    let mut io = match io {
        Ok(io) => io,
        Err(error) => {
            let _ = startup.try_send(Err(StartupError::Transport(error)));
            return;
        }
    };
    driver.transport_started(io.pid());
    let mut host = Host {
        executor,
        services: host,
        record,
        startup: Some(startup),
        health,
        answers: tx,
    };
    let mut timer = Timer::never();
    let mut burst = 0u32;
    let mut reads_first = false;
    while !host.carry(&mut driver, |output| io.carry(output)) {
        if let Some(at) = driver.rearm() {
            timer.set_at(at);
        }
        burst += 1;
        if burst >= BURST {
            burst = 0;
            smol::future::yield_now().await;
        }
        // Input that is always ready (a flooding server) must not keep a
        // deadline from firing: the inbox is polled first, so a due
        // timer is handled here.
        let now = Instant::now();
        if driver.is_due(now) {
            driver.handle_timeout(now);
            continue;
        }
        // Fairness: a server that floods stdout must not keep commands
        // (a close, a cancellation) waiting, nor a flood of commands the
        // server's answers; which goes first alternates.
        reads_first = !reads_first;
        let woke = {
            std::future::poll_fn(|cx| {
                let mut poll_pipes = |cx: &mut Context<'_>, read: bool| match &mut io {
                    Io::Stdio(child) => child.poll_pipes(cx, read),
                    Io::Http(_) => Poll::Pending,
                };
                // Writes always go first: they never end the wait by
                // themselves, only move bytes out.
                if let Poll::Ready(ready) = poll_pipes(cx, reads_first) {
                    return Poll::Ready(Woke::Pipe(ready));
                }
                if let Poll::Ready(input) = rx.poll_recv(cx) {
                    return Poll::Ready(Woke::Input(input));
                }
                if !reads_first {
                    if let Poll::Ready(ready) = poll_pipes(cx, true) {
                        return Poll::Ready(Woke::Pipe(ready));
                    }
                }
                match Pin::new(&mut timer).poll(cx) {
                    Poll::Ready(_) => Poll::Ready(Woke::Timer),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await
        };
        let now = Instant::now();
        let input = match woke {
            Woke::Input(Some(input)) => input,
            Woke::Input(None) | Woke::Timer => {
                if rx.is_done() && !driver.is_due(now) {
                    // Every sender is gone: the host dropped the runtime.
                    let _ = driver.handle_command(now, Command::Close);
                } else {
                    driver.handle_timeout(now);
                }
                continue;
            }
            Woke::Pipe(PipeReady::Read(n)) => {
                if let Io::Stdio(child) = &io {
                    driver.handle_stdout(now, child.read_bytes(n));
                }
                continue;
            }
            Woke::Pipe(PipeReady::StdoutClosed) => {
                let exit = io.exit_detail().await;
                driver.handle_stdout_closed(Instant::now(), exit);
                continue;
            }
            Woke::Pipe(PipeReady::WriteFailed(error)) => {
                let exit = io.exit_detail().await;
                driver.handle_write_failed(Instant::now(), &error, exit);
                continue;
            }
        };
        match input {
            // A command the closed session hands back is dropped with its
            // reply channel: the caller hears the session is gone.
            Input::Command(command) => drop(driver.handle_command(now, command)),
            Input::Http(exchange, input) => {
                if let Io::Http(http) = &mut io {
                    http.handled(exchange, &input);
                }
                driver.handle_http(now, exchange, input);
            }
            // The stdio pipes are this task's own (`Woke::Pipe`): nothing
            // sends their events through the inbox.
            Input::Pipe(_) => {}
        }
    }
    let stderr = io.shutdown(grace).await;
    driver.finish(stderr);
    // What is left are the callers' and startup's answers: the transport
    // is gone.
    host.carry(&mut driver, |_| {});
}
