//! The session task and the session it shares with its callers.
//!
//! A [`Session`] is the core's pure
//! [`Driver`](rho_proto_core::runtime::driver::Driver) together with
//! everything its effects are carried to: the transport's sending half
//! (a stdio child's stdin, or the HTTP exchanges) and the host. It sits
//! behind one short lock that is never held across an await. A caller
//! hands its command to the session itself ([`Session::command`]): the
//! call is written to the server on the caller's own turn, with no task
//! scheduled for it, and the session task is woken only when something is
//! left for it (stdin did not take the whole write, the timer must move
//! earlier, the transport must end).
//!
//! The task owns only waiting and receiving: it races HTTP input and the
//! host's other commands (both in its [`Inbox`]), a stdio child's stdout
//! (read by the task itself), stdin's room and a single timer, feeds
//! whichever wins into the driver, and carries the driver's effects out.
//! The timer is re-armed only when the driver says the deadline moved
//! earlier, and the task yields after a burst of inputs so one busy server
//! cannot starve the others sharing the executor thread.
//!
//! The task outlives a transport when the driver restarts the server (a
//! stdio child that died mid-session): after the transport ends and the
//! driver is not done, the same loop waits without one (its commands and
//! its timer, the restart's backoff) until the driver asks for a new
//! transport, which it starts as at startup. What to do and when is the
//! driver's; only the spawning is here.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use rho_proto_core::config::{ServerConfig, Transport};
use rho_proto_core::connection::Output;
use rho_proto_core::host::{HostServices, TranscriptSink};
use rho_proto_core::http::HttpOutput;
use rho_proto_core::runtime::Health;
use rho_proto_core::runtime::backlog::Backlog;
use rho_proto_core::runtime::driver::{Driver, Effect, Reports, Setup};
use rho_proto_core::runtime::driving::{
    CallUpdate, StartupError, StartupOutcome, TransportSetupError,
};
use smol::channel::Sender;
use smol::{Executor, Timer};

#[cfg(feature = "http")]
use crate::http::HttpIo;
use crate::inbox::{self, Inbox};
#[cfg(not(feature = "http"))]
use crate::no_http::HttpIo;
use crate::reply::ReplySender;
use crate::stdio::{PipeReady, Stdin, StdioChild};

/// What wakes a session task on smol: replies go through [`ReplySender`]s.
pub(crate) type Input = rho_proto_core::runtime::driving::Input<ReplySender>;
/// What the host asks of a session task.
pub(crate) type Command = rho_proto_core::runtime::driving::Command<ReplySender>;

/// Shared between a session task and the host's status reports.
pub(crate) type SharedHealth = Arc<Mutex<Health>>;

/// Where a session task puts its [`Session`] once the transport runs, for
/// its callers to find.
pub(crate) type SessionCell = Arc<OnceLock<Mutex<Session>>>;

/// How many inputs a session task handles before it yields.
const BURST: u32 = 64;
/// How long the task waits for an exit status after stdout closes.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);

/// What a session task owns of its transport: what it waits on.
// On Windows a child's pipes are the blocking pool's (larger handles); one
// per session, moved once.
#[cfg_attr(windows, allow(clippy::large_enum_variant))]
enum Io {
    Stdio(StdioChild),
    // Never made without the `http` feature (`no_http`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Http,
    /// The transport ended, and a restart is under way.
    Gone,
}

impl Io {
    /// A stdio child's process id.
    fn pid(&self) -> Option<u32> {
        match self {
            Io::Stdio(child) => Some(child.pid()),
            Io::Http | Io::Gone => None,
        }
    }

    async fn exit_detail(&mut self) -> Option<String> {
        match self {
            Io::Stdio(child) => child.exit_detail(EXIT_STATUS_WAIT).await,
            Io::Http | Io::Gone => None,
        }
    }

    async fn shutdown(self, grace: Duration) -> Option<String> {
        match self {
            Io::Stdio(child) => child.shutdown(grace).await,
            Io::Http | Io::Gone => None,
        }
    }
}

/// What a session sends over: the half of its transport callers share.
enum Out {
    Stdio(Stdin),
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Http(HttpIo),
}

impl Out {
    /// Carries one output out; whether anything is left for the task.
    fn carry(&mut self, output: Output) -> bool {
        match (self, output) {
            (Out::Stdio(stdin), Output::Write(bytes)) => stdin.write(bytes),
            (Out::Http(http), Output::Http(HttpOutput::Send(request))) => {
                http.send(request);
                false
            }
            (Out::Http(http), Output::Http(HttpOutput::Abort(exchange))) => {
                http.abort(exchange);
                false
            }
            _ => false,
        }
    }

    /// Stops sending: stdin closes (what the pipe takes now still goes
    /// out), HTTP exchanges are cancelled and their connections closed.
    fn close(&mut self) {
        match self {
            Out::Stdio(stdin) => stdin.close(),
            Out::Http(http) => http.shutdown(),
        }
    }
}

/// What ended a session task's wait.
enum Woke {
    /// A command or transport input from the inbox (`None`: every
    /// sender is gone).
    Input(Option<Input>),
    /// The stdio child's stdout.
    Pipe(PipeReady),
    /// Writing stdin failed; nothing more is written.
    WriteFailed(String),
    /// The driver said to end the transport (on a caller's turn).
    End,
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
    /// Where the task puts the session for its callers.
    pub(crate) session: SessionCell,
}

/// Where a task carries the driver's effects that are not transport IO.
struct Host {
    executor: Arc<Executor<'static>>,
    services: HostServices,
    reports: Reports,
    startup: Option<Sender<StartupOutcome>>,
    /// Where the host's answers to questions come back in.
    answers: inbox::Sender<Input>,
}

/// What the driver's effects left for the session task to do.
#[derive(Clone, Copy, Default)]
struct Left {
    /// End the transport ([`Effect::EndTransport`]).
    end: bool,
    /// Start a new one for a restart ([`Effect::StartTransport`]).
    start: bool,
}

impl Host {
    /// Carries out every effect the driver has, handing transport outputs
    /// to `transmit`; returns what is left for the task: ending the
    /// transport, or starting a new one.
    fn carry(
        &mut self,
        driver: &mut Driver<ReplySender>,
        mut transmit: impl FnMut(Output),
    ) -> Left {
        let mut left = Left::default();
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
                Effect::Ask {
                    question,
                    kind,
                    asked,
                } => {
                    // A person may take minutes: answer on the blocking pool.
                    let services = self.services.clone();
                    let answers = self.answers.clone();
                    self.executor
                        .spawn(async move {
                            let answer = smol::unblock(move || {
                                rho_proto_core::host::answer(&services, &asked, &kind)
                            })
                            .await;
                            let _ =
                                answers.send(Input::Command(Command::Answer { question, answer }));
                        })
                        .detach();
                }
                Effect::Report(report) => self.reports.deliver(report),
                Effect::EndTransport => left.end = true,
                Effect::StartTransport => left.start = true,
            }
        }
        left
    }
}

/// One server's session: the driver and where its effects go, shared by
/// the session task and its callers behind a lock held only for a step.
pub(crate) struct Session {
    driver: Driver<ReplySender>,
    out: Out,
    host: Host,
    /// The driver said to end the transport: the task does, next it runs.
    end: bool,
    /// The driver said to start a new transport (a restart): the task
    /// does, next it runs.
    start: bool,
    /// The session task, while it waits: woken when a caller leaves it
    /// something to do.
    waker: Option<Waker>,
}

impl Session {
    fn lock(cell: &Mutex<Self>) -> MutexGuard<'_, Self> {
        // A panic under this lock leaves a driver that is still whole: its
        // steps change it only through `&mut self` methods.
        cell.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Does what the host asks, on the caller's turn: the driver handles
    /// the command and its effects are carried out at once (a call's
    /// request written to stdin, or its exchange started). Hands the
    /// command back when the session has closed.
    // The refused command comes back whole, by design (its reply sender
    // with it); moving it costs less than boxing every command.
    #[allow(clippy::result_large_err)]
    pub(crate) fn command(cell: &Mutex<Self>, command: Command) -> Result<(), Command> {
        let waker = {
            let mut session = Self::lock(cell);
            session.driver.handle_command(Instant::now(), command)?;
            if session.settle() {
                session.waker.take()
            } else {
                None
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Carries out every effect the driver has; whether the session task
    /// must run for what is left: the rest of a write stdin did not take,
    /// the timer to move earlier, the transport to end or to start anew.
    fn settle(&mut self) -> bool {
        let Self {
            driver, out, host, ..
        } = self;
        let mut unwritten = false;
        let left = host.carry(driver, |output| unwritten |= out.carry(output));
        self.end |= left.end;
        self.start |= left.start;
        unwritten | left.end | left.start | self.driver.rearm().is_some()
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
        session,
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
    // What a restart starts the transport with again.
    let transport = TransportStart {
        executor: Arc::clone(&executor),
        config: &config,
        ambient: &ambient,
        backlog,
        inbox: tx.clone(),
    };
    let (mut io, out) = match transport.start() {
        Ok(io) => io,
        Err(error) => {
            let _ = startup.try_send(Err(StartupError::Transport(error)));
            return;
        }
    };
    driver.transport_started(io.pid());
    let host = Host {
        executor,
        reports: Reports {
            server: config.id.to_string(),
            health,
            record,
            logs: host.logs.clone(),
            resource_updates: host.resource_updates.clone(),
        },
        services: host,
        startup: Some(startup),
        answers: tx,
    };
    // Set before the driver's first effect: callers can come only once
    // startup is heard, and they find it here.
    let cell = session.get_or_init(move || {
        Mutex::new(Session {
            driver,
            out,
            host,
            end: false,
            start: false,
            waker: None,
        })
    });
    let mut timer = Timer::never();
    let mut armed = None;
    let mut burst = 0u32;
    let mut reads_first = false;
    loop {
        let (end, start) = {
            let mut session = Session::lock(cell);
            session.settle();
            // Done without an end: a restart that could not start its
            // process gave up (there is no transport left).
            if !session.end && session.driver.is_done() {
                break;
            }
            // Input that is always ready (a flooding server) must not keep
            // a deadline from firing: the inbox is polled first, so a due
            // timer is handled here.
            let now = Instant::now();
            let start = std::mem::take(&mut session.start);
            if !session.end && !start && session.driver.is_due(now) {
                session.driver.handle_timeout(now);
                continue;
            }
            (session.end, start)
        };
        if end {
            // Unless the driver is done, a restart is under way: the loop
            // goes on without a transport, its backoff the driver's timer.
            if end_transport(cell, &mut io, grace).await {
                return;
            }
            continue;
        }
        if start {
            if let Some(started) = restart(cell, &transport, root.as_deref()).await {
                io = started;
            }
            continue;
        }
        burst += 1;
        if burst >= BURST {
            burst = 0;
            smol::future::yield_now().await;
        }
        // Fairness: a server that floods stdout must not keep commands
        // (a close, an answer) waiting, nor a flood of inputs the
        // server's answers; which goes first alternates.
        reads_first = !reads_first;
        let woke = std::future::poll_fn(|cx| {
            {
                let mut session = Session::lock(cell);
                if session.end {
                    return Poll::Ready(Woke::End);
                }
                // Writes go first: they never end the wait by themselves,
                // only move bytes out.
                if let Out::Stdio(stdin) = &mut session.out
                    && let Some(failed) = stdin.poll_flush(cx)
                {
                    return Poll::Ready(Woke::WriteFailed(failed));
                }
                let at = session.driver.timer();
                if at != armed {
                    armed = at;
                    if let Some(at) = at {
                        timer.set_at(at);
                    }
                }
                match &mut session.waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
            }
            let mut poll_read = |cx: &mut Context<'_>| match &mut io {
                Io::Stdio(child) => child.poll_read(cx),
                Io::Http | Io::Gone => Poll::Pending,
            };
            if reads_first && let Poll::Ready(ready) = poll_read(cx) {
                return Poll::Ready(Woke::Pipe(ready));
            }
            if let Poll::Ready(input) = rx.poll_recv(cx) {
                return Poll::Ready(Woke::Input(input));
            }
            if !reads_first && let Poll::Ready(ready) = poll_read(cx) {
                return Poll::Ready(Woke::Pipe(ready));
            }
            match Pin::new(&mut timer).poll(cx) {
                Poll::Ready(_) => Poll::Ready(Woke::Timer),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        let now = Instant::now();
        match woke {
            // Ended at the top of the loop.
            Woke::End => {}
            Woke::Input(Some(input)) => {
                let mut session = Session::lock(cell);
                match input {
                    // A command the closed session hands back is dropped
                    // with its reply channel: the caller hears the session
                    // is gone.
                    Input::Command(command) => drop(session.driver.handle_command(now, command)),
                    Input::Http(exchange, input) => {
                        if let Out::Http(http) = &mut session.out {
                            http.handled(exchange, &input);
                        }
                        session.driver.handle_http(now, exchange, input);
                    }
                    // Stdout is this task's own (`Woke::Pipe`): nothing
                    // sends its events through the inbox.
                    Input::Pipe(_) => {}
                }
            }
            Woke::Input(None) | Woke::Timer => {
                let mut session = Session::lock(cell);
                if rx.is_done() && !session.driver.is_due(now) {
                    // Every sender is gone: the host dropped the runtime.
                    let _ = session.driver.handle_command(now, Command::Close);
                } else {
                    session.driver.handle_timeout(now);
                }
            }
            Woke::Pipe(PipeReady::Read(n)) => {
                if let Io::Stdio(child) = &io {
                    Session::lock(cell)
                        .driver
                        .handle_stdout(now, child.read_bytes(n));
                }
            }
            Woke::Pipe(PipeReady::StdoutClosed) => {
                let exit = io.exit_detail().await;
                Session::lock(cell)
                    .driver
                    .handle_stdout_closed(Instant::now(), exit);
            }
            Woke::WriteFailed(error) => {
                let exit = io.exit_detail().await;
                Session::lock(cell)
                    .driver
                    .handle_write_failed(Instant::now(), &error, exit);
            }
        }
    }
    // Nothing is left to end; this only makes sure of it.
    end_transport(cell, &mut io, grace).await;
}

/// Ends the transport (a stdio child gets its grace, then is killed) and
/// tells the driver, which tells the callers still waiting, startup and
/// the health. Whether the driver is done: else a restart is under way.
async fn end_transport(cell: &Mutex<Session>, io: &mut Io, grace: Duration) -> bool {
    Session::lock(cell).out.close();
    let stderr = std::mem::replace(io, Io::Gone).shutdown(grace).await;
    let mut session = Session::lock(cell);
    session.driver.finish(Instant::now(), stderr);
    // What is left are the callers', startup's and the health's answers:
    // the transport is gone.
    session.settle();
    session.end = false;
    session.driver.is_done()
}

/// What a session task starts its transport with, at startup and at each
/// restart.
struct TransportStart<'a> {
    executor: Arc<Executor<'static>>,
    config: &'a ServerConfig,
    ambient: &'a [(String, String)],
    /// What waits for a stdio child's stdin, the same across restarts (the
    /// runtime's callers wait on it).
    backlog: Arc<Backlog>,
    /// Where an HTTP exchange's inputs go.
    inbox: inbox::Sender<Input>,
}

impl TransportStart<'_> {
    /// Starts the server's transport: spawns a stdio child, or sets up
    /// the HTTP exchanges.
    fn start(&self) -> Result<(Io, Out), TransportSetupError> {
        let server = self.config.id.as_str();
        match &self.config.transport {
            Transport::Stdio(stdio) => StdioChild::spawn(
                &self.executor,
                server,
                stdio,
                self.ambient,
                Arc::clone(&self.backlog),
            )
            .map(|(child, stdin)| (Io::Stdio(child), Out::Stdio(stdin))),
            #[cfg(feature = "http")]
            Transport::StreamableHttp(_) => Ok((
                Io::Http,
                Out::Http(HttpIo::new(&self.executor, self.inbox.clone())),
            )),
            #[cfg(not(feature = "http"))]
            Transport::StreamableHttp(_) => {
                let _ = &self.inbox;
                Err(crate::no_http::not_built_in(server))
            }
        }
    }
}

/// Starts the transport again for the restart the driver asked for, and
/// hands the driver the outcome; the new transport's reading half, when
/// the driver keeps it. Its sending half is put in place under the same
/// lock, so the driver's first outputs (the handshake) go to the new
/// child whoever carries them. One the driver does not keep (rho closed
/// the server meanwhile) is ended at once.
async fn restart(
    cell: &Mutex<Session>,
    transport: &TransportStart<'_>,
    root: Option<&str>,
) -> Option<Io> {
    // A fresh count for a fresh child: the old one's queue went with it.
    transport.backlog.reopen();
    let started = transport.start();
    let pid = started
        .as_ref()
        .map(|(io, _)| io.pid())
        .map_err(Clone::clone);
    let unwanted = {
        let mut session = Session::lock(cell);
        let Session { driver, host, .. } = &mut *session;
        let setup = Setup {
            config: transport.config,
            ambient: transport.ambient,
            workspace_root: root,
            host: &host.services,
            record: host.reports.record.is_some(),
        };
        let kept = driver.restart_transport(setup, Instant::now(), pid);
        match started {
            Ok((io, out)) if kept => {
                session.out = out;
                return Some(io);
            }
            Ok(unwanted) => Some(unwanted),
            Err(_) => None,
        }
    };
    if let Some((io, mut out)) = unwanted {
        out.close();
        let _ = io.shutdown(Duration::ZERO).await;
    }
    None
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::pin::pin;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use rho_proto_core::host::RuntimeOptions;
    use rho_proto_core::runtime::{CallOptions, Sessions as _, ToolCall};
    use serde_json::json;
    use smol::{Executor, Timer};

    use crate::{Runtime, block_on};

    /// A stdio MCP server with one tool, `echo`, whose answer is the
    /// length of the arguments' JSON text; each call touches the marker
    /// file (`argv[1]`) when its request arrived. With `pause` (`argv[2]`)
    /// it stops reading its input for 300 ms after listing its tools.
    const SERVER: &str = r#"
const fs = require('fs');
const [marker, mode] = [process.argv[2], process.argv[3]];
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const m = JSON.parse(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    if (m.method === 'initialize') {
      send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
        capabilities: { tools: {} }, serverInfo: { name: 't', version: '1' } } });
    } else if (m.method === 'tools/list') {
      send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] } });
      if (mode === 'pause') {
        process.stdin.pause();
        setTimeout(() => process.stdin.resume(), 300);
      }
    } else if (m.method === 'tools/call') {
      fs.writeFileSync(marker, 'called');
      const text = String(JSON.stringify(m.params.arguments).length);
      send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text }] } });
    } else if (m.id !== undefined) {
      send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no such method' } });
    }
  }
});
"#;

    /// How long a test waits for what should happen.
    const WAIT: Duration = Duration::from_secs(10);

    /// A fresh path under the temporary directory.
    fn scratch(name: &str) -> PathBuf {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::env::temp_dir().join(format!("rho-io-smol-{}-{n}-{name}", std::process::id()))
    }

    /// The server, started by a runtime on `executor`; and its marker.
    fn start(executor: &Arc<Executor<'static>>, mode: &str) -> (Runtime, PathBuf) {
        let script = scratch("server.js");
        std::fs::write(&script, SERVER).expect("write the server script");
        let marker = scratch("called");
        let quote = |p: &PathBuf| format!("{:?}", p.display().to_string());
        let text = format!(
            "[mcp.servers.t]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{}, {}, \"{mode}\"]\n",
            quote(&script),
            quote(&marker),
        );
        let config = rho_proto_core::config::parse(&text, "test.toml").expect("valid config");
        let mut options = RuntimeOptions::new(std::env::vars().collect(), None);
        options.shutdown_grace = Duration::from_millis(300);
        let runtime = block_on(
            executor,
            Runtime::start(executor, &config, options, |_| true),
        );
        let view = runtime.server("t").expect("configured");
        assert!(!view.status.is_failure(), "{:?}", view.status);
        (runtime, marker)
    }

    /// Within `wait`, or `None`.
    async fn within<T>(wait: Duration, future: impl Future<Output = T>) -> Option<T> {
        smol::future::or(async { Some(future.await) }, async {
            Timer::after(wait).await;
            None
        })
        .await
    }

    #[test]
    fn a_call_is_written_on_the_callers_turn_with_no_task_scheduled() {
        let executor = Arc::new(Executor::new());
        let (runtime, marker) = start(&executor, "serve");
        let result = {
            let mut call = pin!(runtime.submit(
                ToolCall::new("mcp__t__echo", json!({"n": 1})),
                CallOptions::new()
            ));
            // One poll, outside the executor: no session task can run, so
            // the request reaches the server only if the caller wrote it.
            let first = smol::future::block_on(smol::future::poll_once(call.as_mut()));
            assert!(first.is_none(), "the answer cannot be in yet: {first:?}");
            let until = Instant::now() + WAIT;
            while !marker.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(marker.exists(), "the server never saw the call");
            // The answer comes in once the executor runs the session task.
            block_on(&executor, within(WAIT, call))
        };
        let result = result
            .expect("answered in time")
            .expect("the call succeeds");
        assert_eq!(result.text(), r#"{"n":1}"#.len().to_string());
        block_on(&executor, runtime.shutdown());
        let _ = std::fs::remove_file(marker);
    }

    #[test]
    fn what_stdin_did_not_take_on_the_callers_turn_the_task_writes() {
        let executor = Arc::new(Executor::new());
        let (runtime, marker) = start(&executor, "pause");
        // Far more than a pipe holds, sent while the server is not
        // reading: the caller's write leaves most of it for the task.
        let big = "x".repeat(1024 * 1024);
        let arguments = json!({ "big": big });
        let expected = arguments.to_string().len().to_string();
        // A ready stdio session keeps no timer that would run the task
        // anyway (no ping, no probe): the answer is in within this bound
        // only if the caller woke the task for the rest.
        let wait = Duration::from_millis(2500);
        let result = block_on(
            &executor,
            within(
                wait,
                runtime.submit(ToolCall::new("mcp__t__echo", arguments), CallOptions::new()),
            ),
        )
        .expect("the whole request went out")
        .expect("the call succeeds");
        assert_eq!(result.text(), expected);
        block_on(&executor, runtime.shutdown());
        let _ = std::fs::remove_file(marker);
    }
}
