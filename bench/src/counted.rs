//! Counted cost per call: what a client's own process does per
//! `tools/call` over stdio and Streamable HTTP, counted instead of timed, so that two runs
//! nearly agree whatever else the machine is doing: instructions within
//! about 1% (4% for bare async), system calls likewise, except `futex` on
//! smol, which swings between 0 and 7 per call (slowed by strace, the
//! caller sometimes finds async-io's helper thread holding the reactor and
//! parks). How many answers one read finds still depends on timing.
//!
//! CPU time per call on a 2-core VM swings by ±40% from run to run (the
//! bare client alone measured 10.5–60 µs), and most of it is the kernel
//! putting the process to sleep and waking it, whose price depends on the
//! machine's state more than on the client. Two counts do not:
//!
//! - **user-space instructions** per call, from callgrind (valgrind), of
//!   every thread of the client process;
//! - **system calls** per call, by name, from strace (`-ff`), of the
//!   client's own threads only (not the server it spawned).
//!
//! Each is the difference between two runs of the same client that differ
//! only in the number of timed calls, divided by that difference, so
//! connecting, warming up and exiting drop out. Under callgrind the client
//! runs some 50× slower while the server does not, so at 16 in flight more
//! answers wait per wake-up than in a timed run: the counts compare
//! clients with each other under the same conditions, not with the timed
//! figures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use crate::workers::WorkerSpec;

/// Timed calls of the two runs whose difference is counted.
const CALLS: (usize, usize) = (500, 1500);
/// Warm-up calls before the timed ones: node's JIT settles, as in the
/// timed runs.
const WARMUP: usize = 1000;
/// The clients counted over stdio: the bare limits and every Rust client.
const CLIENTS: [&str; 6] = [
    "bare",
    "bare-async",
    "bare-threads",
    "rho-smol",
    "rho-blocking",
    "rmcp",
];
/// The clients counted over HTTP: the bare limits (the bare client
/// already runs a thread per call there) and every Rust client.
const HTTP_CLIENTS: [&str; 5] = ["bare", "bare-async", "rho-smol", "rho-blocking", "rmcp"];

/// A server the counts run against: spawned per client over stdio, shared
/// over HTTP.
pub enum CountedTarget {
    /// The command that starts it.
    Stdio(Vec<String>),
    /// Where it listens.
    Http(String),
}

/// One client's counts against one server at one concurrency.
#[derive(Debug, Default, Serialize)]
pub struct CountedStat {
    /// `stdio` or `Streamable HTTP`.
    pub transport: String,
    pub server: String,
    pub client: String,
    pub inflight: usize,
    /// User-space instructions per call.
    pub instructions_per_call: Option<f64>,
    pub instructions_ratio_to_bare: Option<f64>,
    /// System calls per call, every name together.
    pub syscalls_per_call: Option<f64>,
    pub syscalls_ratio_to_bare: Option<f64>,
    /// System calls per call, by name (those at 0.05 or more).
    pub syscalls_by_name: BTreeMap<String, f64>,
    pub errors: Vec<String>,
}

/// Whether valgrind and strace are both here.
pub fn available() -> bool {
    ["valgrind", "strace"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Counts every client of [`CLIENTS`] (stdio) or [`HTTP_CLIENTS`] (rmcp
/// when built in) against every server in `servers` (name, target),
/// sequentially and at 16 in flight.
pub fn measure(
    self_exe: &Path,
    tmp: &Path,
    rmcp: bool,
    servers: &[(&str, CountedTarget)],
) -> Vec<CountedStat> {
    measure_clients(self_exe, tmp, rmcp, servers, (&CLIENTS, &HTTP_CLIENTS))
}

/// [`measure`] of other clients: `clients.0` over stdio, `clients.1`
/// over HTTP (`bench door` counts the host library's door with it).
pub fn measure_clients(
    self_exe: &Path,
    tmp: &Path,
    rmcp: bool,
    servers: &[(&str, CountedTarget)],
    clients: (&[&str], &[&str]),
) -> Vec<CountedStat> {
    let mut stats = Vec::new();
    for (server, target) in servers {
        let (transport, clients) = match target {
            CountedTarget::Stdio(_) => ("stdio", clients.0),
            CountedTarget::Http(_) => ("Streamable HTTP", clients.1),
        };
        for inflight in [1, 16] {
            let first = stats.len();
            for client in clients.iter().filter(|c| rmcp || **c != "rmcp") {
                let counter = Counter {
                    self_exe,
                    tmp,
                    client,
                    target,
                    inflight,
                };
                let mut stat = CountedStat {
                    transport: transport.to_owned(),
                    server: (*server).to_owned(),
                    client: (*client).to_owned(),
                    inflight,
                    ..CountedStat::default()
                };
                match counter.instructions() {
                    Ok(ir) => stat.instructions_per_call = Some(ir),
                    Err(e) => stat.errors.push(format!("callgrind: {e}")),
                }
                match counter.syscalls() {
                    Ok(by_name) => {
                        stat.syscalls_per_call = Some(by_name.values().sum());
                        stat.syscalls_by_name =
                            by_name.into_iter().filter(|(_, n)| *n >= 0.05).collect();
                    }
                    Err(e) => stat.errors.push(format!("strace: {e}")),
                }
                eprintln!(
                    "counted {transport} {server} / {client} / {inflight} in flight: {} instructions, {} system calls per call{}",
                    stat.instructions_per_call
                        .map_or("–".into(), |v| format!("{v:.0}")),
                    stat.syscalls_per_call
                        .map_or("–".into(), |v| format!("{v:.2}")),
                    if stat.errors.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", stat.errors.join("; "))
                    }
                );
                stats.push(stat);
            }
            let bare = stats[first..]
                .iter()
                .find(|s| s.client == "bare")
                .map(|s| (s.instructions_per_call, s.syscalls_per_call));
            if let Some((ir, sc)) = bare {
                for s in &mut stats[first..] {
                    s.instructions_ratio_to_bare = ratio(s.instructions_per_call, ir);
                    s.syscalls_ratio_to_bare = ratio(s.syscalls_per_call, sc);
                }
            }
        }
    }
    stats
}

fn ratio(x: Option<f64>, limit: Option<f64>) -> Option<f64> {
    match (x, limit) {
        (Some(x), Some(l)) if l > 0.0 => Some(x / l),
        _ => None,
    }
}

/// Runs one client under a counting tool.
struct Counter<'a> {
    self_exe: &'a Path,
    tmp: &'a Path,
    client: &'a str,
    target: &'a CountedTarget,
    inflight: usize,
}

impl Counter<'_> {
    fn spec(&self, n: usize) -> String {
        let spec = WorkerSpec {
            client: self.client.to_owned(),
            stdio: match self.target {
                CountedTarget::Stdio(command) => Some(command.clone()),
                CountedTarget::Http(_) => None,
            },
            url: match self.target {
                CountedTarget::Stdio(_) => None,
                CountedTarget::Http(url) => Some(url.clone()),
            },
            tool: "echo".into(),
            args: json!({"message": "hello"}),
            warmup: WARMUP,
            n,
            inflight: vec![self.inflight],
            dump: None,
            timeout_s: None,
        };
        serde_json::to_string(&spec).expect("serialize spec")
    }

    /// User-space instructions per call.
    fn instructions(&self) -> Result<f64, String> {
        let count = |n: usize| -> Result<u64, String> {
            let out = self.tmp.join(format!("callgrind.{}.{n}", self.client));
            let mut command = Command::new("valgrind");
            command
                .arg("--tool=callgrind")
                .arg(format!("--callgrind-out-file={}", out.display()))
                .arg(self.self_exe)
                .arg("worker")
                .arg(self.spec(n));
            let stderr = run(command)?;
            let _ = std::fs::remove_file(&out);
            // `==PID== Collected : N`
            stderr
                .lines()
                .find_map(|l| {
                    l.split_once("Collected :")
                        .map(|(_, n)| n.trim().to_owned())
                })
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| {
                    format!(
                        "no instruction total in: {}",
                        crate::run::tail(&stderr, 300)
                    )
                })
        };
        let (a, b) = (count(CALLS.0)?, count(CALLS.1)?);
        Ok(b.saturating_sub(a) as f64 / (CALLS.1 - CALLS.0) as f64)
    }

    /// System calls per call, by name, of the client's own threads.
    fn syscalls(&self) -> Result<BTreeMap<String, f64>, String> {
        let count = |n: usize| -> Result<BTreeMap<String, u64>, String> {
            let dir = self.tmp.join(format!("strace.{}.{n}", self.client));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let mut command = Command::new("strace");
            command
                .args(["-f", "-ff", "-o"])
                .arg(dir.join("t"))
                .arg(self.self_exe)
                .arg("worker")
                .arg(self.spec(n));
            run(command)?;
            let counts = own_syscalls(&dir);
            let _ = std::fs::remove_dir_all(&dir);
            counts
        };
        let (a, b) = (count(CALLS.0)?, count(CALLS.1)?);
        let calls = (CALLS.1 - CALLS.0) as f64;
        Ok(b.iter()
            .map(|(name, &nb)| {
                let na = a.get(name).copied().unwrap_or(0);
                (name.clone(), nb.saturating_sub(na) as f64 / calls)
            })
            .filter(|(_, n)| *n > 0.0)
            .collect())
    }
}

/// Runs a counting tool to its end (killed past a bound, so a stuck
/// client cannot hold the run); returns its stderr.
fn run(mut command: Command) -> Result<String, String> {
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let (status, _, stderr) = crate::run::run_with_timeout(command, Duration::from_secs(300))?;
    // `run_with_timeout` reports the status in its `Display` words; the
    // default status is success (exit code 0).
    if status == std::process::ExitStatus::default().to_string() {
        Ok(stderr)
    } else {
        Err(format!("{status}: {}", crate::run::tail(&stderr, 300)))
    }
}

/// Counts the system calls in strace's per-thread files (`t.TID`) of the
/// traced process's own threads: the lowest id is the process strace
/// started, and a thread is its own when an own thread cloned it with
/// `CLONE_THREAD` (the server it spawned, and that server's threads, are
/// not).
fn own_syscalls(dir: &Path) -> Result<BTreeMap<String, u64>, String> {
    let files: BTreeMap<u32, PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let tid = path.extension()?.to_str()?.parse().ok()?;
            Some((tid, path))
        })
        .collect();
    let main = *files.keys().next().ok_or("strace wrote nothing")?;
    let mut own = vec![main];
    let mut counts = BTreeMap::new();
    let mut i = 0;
    while let Some(&tid) = own.get(i) {
        i += 1;
        let text = std::fs::read_to_string(&files[&tid]).map_err(|e| e.to_string())?;
        for line in text.lines() {
            let Some((name, _)) = line.split_once('(') else {
                continue;
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                continue;
            }
            *counts.entry(name.to_owned()).or_insert(0u64) += 1;
            if name.starts_with("clone") && line.contains("CLONE_THREAD") {
                let child = line
                    .rsplit_once("= ")
                    .and_then(|(_, r)| r.split_whitespace().next()?.parse::<u32>().ok());
                if let Some(child) = child.filter(|c| files.contains_key(c) && !own.contains(c)) {
                    own.push(child);
                }
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_traced_process_s_own_threads_are_counted() {
        let dir = std::env::temp_dir().join(format!("rho-bench-counted-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let write = |tid: u32, text: &str| {
            std::fs::write(dir.join(format!("t.{tid}")), text).expect("write")
        };
        write(
            100,
            "execve(\"/bench\", [...]) = 0\n\
             clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD}, 88) = 200\n\
             clone3({flags=CLONE_VM|CLONE_FS|CLONE_THREAD|CLONE_SYSVSEM}, 88) = 101\n\
             write(5, \"{}\\n\", 3) = 3\n\
             --- SIGCHLD {si_signo=SIGCHLD} ---\n\
             +++ exited with 0 +++\n",
        );
        write(
            101,
            "read(6, \"x\", 8) = 1\nfutex(0x1, FUTEX_WAKE_PRIVATE, 1) = 0\n",
        );
        // The server, and a thread of its own.
        write(
            200,
            "execve(\"/node\", [...]) = 0\n\
             clone3({flags=CLONE_VM|CLONE_THREAD}, 88) = 201\nwrite(1, \"{}\", 2) = 2\n",
        );
        write(201, "epoll_wait(3, [], 1024, 0) = 0\n");
        let counts = own_syscalls(&dir).expect("counts");
        let _ = std::fs::remove_dir_all(&dir);
        let expected: BTreeMap<String, u64> = [
            ("clone3", 2),
            ("execve", 1),
            ("futex", 1),
            ("read", 1),
            ("write", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(counts, expected);
    }
}
