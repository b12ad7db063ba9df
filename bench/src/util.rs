//! Small shared pieces: CPU clocks, statistics, paths, process helpers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// CPU time this process has used so far (all threads), user and system,
/// from `getrusage(RUSAGE_SELF)`.
///
/// `/proc/self/stat` has the same figures, but in clock ticks (10 ms), far
/// too coarse for a batch of a few hundred calls; `getrusage` reports them
/// in microseconds. Node's `process.cpuUsage()` and Python's
/// `resource.getrusage` read the same counter, so every client is measured
/// with the same clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cpu {
    pub user: Duration,
    pub sys: Duration,
    /// Voluntary plus involuntary context switches of every thread.
    pub switches: u64,
}

impl Cpu {
    pub fn now() -> Self {
        // SAFETY: getrusage writes into the zeroed struct we pass.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        if rc != 0 {
            return Self::default();
        }
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        Self {
            user: tv(usage.ru_utime),
            sys: tv(usage.ru_stime),
            switches: (usage.ru_nvcsw + usage.ru_nivcsw) as u64,
        }
    }

    pub fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            user: self.user.saturating_sub(earlier.user),
            sys: self.sys.saturating_sub(earlier.sys),
            switches: self.switches.saturating_sub(earlier.switches),
        }
    }
}

/// The `q` quantile (0..=1) of `values`, by linear interpolation.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

pub fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// Median with its spread across repetitions: min and max.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Self {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        Self {
            median: median(&finite),
            min: finite.iter().copied().fold(f64::INFINITY, f64::min),
            max: finite.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n: finite.len(),
        }
    }
}

/// The repository root (the bench crate lives in `<root>/bench`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench has a parent")
        .to_path_buf()
}

pub fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn everything_js() -> PathBuf {
    repo_root()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

pub fn filesystem_js() -> PathBuf {
    repo_root()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
}

/// Where the timed round trips run: the client process on one CPU, the
/// servers on another. Left to the scheduler, a client and its server
/// shared a core in some rounds and not in others, and the CPU per call
/// of one client differed about 3x between the two placements (the bare
/// client over stdio: 4.4 vs 14 µs per sequential call), so the medians
/// said more about placement than about clients. Pinned, each side has a
/// core of its own, as on a machine with cores to spare.
#[derive(Clone, Copy, Debug)]
pub struct Pinning {
    pub client: usize,
    pub server: usize,
}

impl Pinning {
    /// CPUs 0 and 1, when `taskset` (util-linux) can put a process on
    /// each (the machine has both and this process may use them); `None`
    /// otherwise, and nothing is pinned.
    pub fn detect() -> Option<Self> {
        static FOUND: std::sync::OnceLock<Option<Pinning>> = std::sync::OnceLock::new();
        *FOUND.get_or_init(|| {
            let runs_on = |cpu: &str| {
                Command::new("taskset")
                    .args(["-c", cpu, "true"])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            (runs_on("0") && runs_on("1")).then_some(Pinning {
                client: 0,
                server: 1,
            })
        })
    }

    /// `argv` run on `cpu` (through `taskset`, which execs it: the pid
    /// stays the program's).
    pub fn on(cpu: usize, argv: &[String]) -> Vec<String> {
        let mut out = vec!["taskset".to_owned(), "-c".to_owned(), cpu.to_string()];
        out.extend_from_slice(argv);
        out
    }
}

/// A command running `program` on `cpu` (through `taskset`), or as is
/// when there is none: the run does not pin (see [`Pinning`]).
pub fn command_on(cpu: Option<usize>, program: impl AsRef<std::ffi::OsStr>) -> Command {
    match cpu {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(cpu.to_string()).arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// `program` on the servers' CPU when the run pins.
pub fn server_command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    command_on(Pinning::detect().map(|p| p.server), program)
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral loopback port")
}

/// The first line a command prints, trimmed; `None` if it cannot run.
pub fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    String::from_utf8_lossy(&text)
        .lines()
        .next()
        .map(|l| l.trim().to_owned())
}

/// A TOML basic string literal.
pub fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A `[mcp.servers.<id>]` stdio table.
pub fn stdio_server_toml(id: &str, command: &[String], extra: &str) -> String {
    let args: Vec<String> = command[1..].iter().map(|a| toml_str(a)).collect();
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = {}\nargs = [{}]\n{extra}",
        toml_str(&command[0]),
        args.join(", ")
    )
}

/// A `[mcp.servers.<id>]` Streamable HTTP table.
pub fn http_server_toml(id: &str, url: &str, extra: &str) -> String {
    format!(
        "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = {}\n{extra}",
        toml_str(url)
    )
}

/// Peak resident set size (VmHWM) of a live process, in bytes.
pub fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

/// Formats a duration in seconds with a sensible unit.
pub fn fmt_secs(s: f64) -> String {
    if !s.is_finite() {
        "–".into()
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.1} µs", s * 1e6)
    } else {
        format!("{:.0} ns", s * 1e9)
    }
}

pub fn fmt_bytes(b: f64) -> String {
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.0} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() {
        "–".into()
    } else if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.2}×")
    }
}

/// Runs a command to completion and returns its exact peak RSS (`VmHWM`)
/// in bytes: the child is traced (`PTRACE_TRACEME`, then
/// `PTRACE_O_TRACEEXIT`), so it stops on its way out with its memory still
/// mapped, and its `/proc/<pid>/status` is read then. Signals it receives
/// meanwhile are passed on.
///
/// Simpler ways are wrong here: polling `/proc` misses a process that
/// lives a millisecond, and `wait4`'s `ru_maxrss` counts the children it
/// reaped and the forked child's size before its `exec` (the parent's).
pub fn peak_rss(command: Command) -> Result<u64, String> {
    traced_to_exit(command, vm_hwm)?
        .0
        .ok_or_else(|| "no VmHWM at exit".to_owned())
}

/// A process's memory as it exits, in bytes, from `/proc/<pid>/status`.
#[derive(Clone, Copy, Debug)]
pub struct ExitMemory {
    /// Peak resident set (`VmHWM`).
    pub peak: u64,
    /// Resident pages backed by files at exit (`RssFile`): the program's
    /// and its libraries' code and read-only data.
    pub file: u64,
    /// Resident anonymous pages at exit (`RssAnon`): heap, stacks, and
    /// the data the dynamic loader relocated.
    pub anon: u64,
}

/// Runs a command to completion and returns its [`ExitMemory`], read as
/// [`peak_rss`] reads its peak; an error if it did not exit with status 0.
pub fn exit_memory(command: Command) -> Result<ExitMemory, String> {
    let read = |pid: u32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
                .map(|kb| kb * 1024)
        };
        Some(ExitMemory {
            peak: field("VmHWM:")?,
            file: field("RssFile:")?,
            anon: field("RssAnon:")?,
        })
    };
    match traced_to_exit(command, read)? {
        (_, None) => Err("killed by a signal".to_owned()),
        (_, Some(code)) if code != 0 => Err(format!("exited with status {code}")),
        (Some(memory), _) => Ok(memory),
        (None, _) => Err("no memory figures at exit".to_owned()),
    }
}

/// Runs `command` traced to its exit and returns what `read` saw of it
/// there (see [`peak_rss`]), and its exit status (`None`: a signal).
fn traced_to_exit<T>(
    mut command: Command,
    read: impl Fn(u32) -> Option<T>,
) -> Result<(Option<T>, Option<i32>), String> {
    use std::os::unix::process::CommandExt;
    let null = std::ptr::null_mut::<libc::c_void>();
    // SAFETY: ptrace(PTRACE_TRACEME) is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            let null = std::ptr::null_mut::<libc::c_void>();
            if libc::ptrace(libc::PTRACE_TRACEME, 0, null, null) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
    let pid = child.id() as i32;
    let mut seen = None;
    let mut code = None;
    let mut traced = false;
    loop {
        let mut status = 0;
        // SAFETY: waiting on and resuming our own traced child.
        if unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
            return Err(format!("waitpid: {}", std::io::Error::last_os_error()));
        }
        if libc::WIFEXITED(status) {
            code = Some(libc::WEXITSTATUS(status));
            break;
        }
        if libc::WIFSIGNALED(status) {
            break;
        }
        if !libc::WIFSTOPPED(status) {
            continue;
        }
        let signal = libc::WSTOPSIG(status);
        let mut deliver = 0;
        if status >> 8 == (libc::SIGTRAP | (libc::PTRACE_EVENT_EXIT << 8)) {
            seen = read(pid as u32);
        } else if signal == libc::SIGTRAP && !traced {
            // The stop at exec: ask for the stop at exit.
            traced = true;
            let rc = unsafe {
                libc::ptrace(
                    libc::PTRACE_SETOPTIONS,
                    pid,
                    null,
                    libc::PTRACE_O_TRACEEXIT as usize as *mut libc::c_void,
                )
            };
            if rc == -1 {
                return Err(format!(
                    "PTRACE_SETOPTIONS: {}",
                    std::io::Error::last_os_error()
                ));
            }
        } else if signal != libc::SIGTRAP {
            deliver = signal;
        }
        unsafe {
            libc::ptrace(
                libc::PTRACE_CONT,
                pid,
                null,
                deliver as usize as *mut libc::c_void,
            )
        };
    }
    drop(child);
    Ok((seen, code))
}

/// The fallback where tracing is not allowed: polls `VmHWM` every 200 µs
/// until the command exits (it can miss the end of a very short run).
pub fn polled_peak_rss(mut command: Command) -> Result<u64, String> {
    let mut child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
    let mut peak = 0;
    loop {
        if let Some(h) = vm_hwm(child.id()) {
            peak = peak.max(h);
        }
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    if peak == 0 {
        return Err("no VmHWM seen".into());
    }
    Ok(peak)
}

/// The machine's CPU time so far, from the first line of `/proc/stat`, in
/// clock ticks: (stolen by the hypervisor for other guests, all of it).
pub fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal
    let steal = *fields.get(7)?;
    Some((steal, fields.iter().sum()))
}

/// The share of the machine's CPU time stolen between two [`cpu_ticks`].
pub fn stolen_share(from: Option<(u64, u64)>, to: Option<(u64, u64)>) -> Option<f64> {
    let ((s0, t0), (s1, t1)) = (from?, to?);
    (t1 > t0).then(|| s1.saturating_sub(s0) as f64 / (t1 - t0) as f64)
}
