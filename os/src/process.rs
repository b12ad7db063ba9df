//! Preparing and ending a stdio server's process: the IO half of
//! `rho_proto_core::config::process`, shared by both executors.
//!
//! [`prepare_command`] builds the `std::process::Command` (no shell, a
//! computed environment, its own process group, piped stdio, and on Linux
//! a parent-death signal), and [`spawn`] starts it and puts the child in
//! its [`ProcessGroup`] (on Unix the process group it leads, on Windows a
//! Job Object that kills the tree when rho's handle to it closes), so
//! both executors start servers the same way. [`has_exited`] and
//! [`ProcessGroup::kill`] let shutdown sweep the whole group before the
//! child is reaped, so its pid and group id cannot be reused while rho
//! still signals them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use rho_proto_core::config::StdioConfig;
use rho_proto_core::config::env::{Platform, child_environment};
use rho_proto_core::config::process::{
    ProgramCandidates, batch_script_refusal, is_batch_script, program_candidates,
};
use rho_proto_core::runtime::driving::TransportSetupError;

/// The command that starts `config` for server `server`, and the
/// executable it resolved to. Fails, naming the server, when an ambient
/// variable is missing, the executable is not found, or `cwd` is not a
/// directory.
pub fn prepare_command(
    server: &str,
    config: &StdioConfig,
    ambient: &[(String, String)],
) -> Result<(Command, PathBuf), TransportSetupError> {
    let env = child_environment(ambient, config, Platform::current()).map_err(|error| {
        TransportSetupError::Environment {
            server: server.to_owned(),
            error,
        }
    })?;
    let lookup = |name: &str| {
        env.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let cwd = config.cwd.as_deref().map(Path::new);
    let candidates = program_candidates(
        &config.command,
        lookup("PATH"),
        lookup("PATHEXT"),
        cwd,
        Platform::current(),
    );
    let Some(program) = find_executable(&candidates) else {
        return Err(TransportSetupError::NotFound {
            server: server.to_owned(),
            command: config.command.clone(),
            candidates,
        });
    };
    if Platform::current() == Platform::Windows && is_batch_script(&program) {
        // Windows runs a .cmd/.bat through cmd.exe, whose command line std
        // quotes (the BatBadBut fix); what it would refuse is refused here
        // first, with the server and the argument named.
        let name = program.to_string_lossy();
        if let Some(refusal) = batch_script_refusal(&name, &config.args) {
            return Err(TransportSetupError::Spawn {
                server: server.to_owned(),
                program,
                reason: refusal.to_string(),
            });
        }
    }
    if let Some(dir) = cwd
        && !dir.is_dir()
    {
        return Err(TransportSetupError::CwdNotADirectory {
            server: server.to_owned(),
            cwd: dir.to_owned(),
        });
    }
    let mut command = Command::new(&program);
    command
        .args(&config.args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    #[cfg(unix)]
    {
        // Its own process group, so `npx` and its grandchildren end with it.
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    die_with_parent(&mut command);
    #[cfg(windows)]
    start_suspended(&mut command);
    Ok((command, program))
}

/// Has `command` start its process suspended, until [`ProcessGroup::of`]
/// has put it in its Job Object and resumes it: nothing it starts can
/// escape the job. A child started so must get its group (or be killed).
#[cfg(windows)]
pub fn start_suspended(command: &mut Command) {
    use std::os::windows::process::CommandExt;
    command.creation_flags(windows_sys::Win32::System::Threading::CREATE_SUSPENDED);
}

/// Starts `command` (from [`prepare_command`], which found `program`) for
/// server `server`, and puts the child in its [`ProcessGroup`]. A child
/// that cannot be contained is killed and not started.
pub fn spawn(
    server: &str,
    command: &mut Command,
    program: PathBuf,
) -> Result<(Child, ProcessGroup), TransportSetupError> {
    let mut child = command.spawn().map_err(|e| TransportSetupError::Spawn {
        server: server.to_owned(),
        program: program.clone(),
        reason: e.to_string(),
    })?;
    match ProcessGroup::of(&child) {
        Ok(group) => Ok((child, group)),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(TransportSetupError::Spawn {
                server: server.to_owned(),
                program,
                reason: format!(
                    "could not put it in a process group that ends with rho ({e}); it was stopped"
                ),
            })
        }
    }
}

/// A started server's whole process tree, as the platform groups it.
///
/// On Unix it is the process group the child leads (`process_group(0)` in
/// [`prepare_command`]): killing it ends `npx` and the node it started.
/// On Windows it is a Job Object the child is put in right after it
/// starts, created with kill-on-close: killing it ends every process in
/// it, and so does rho's exit, however it happens, since the kernel closes
/// rho's handle to the job. Windows has no SIGTERM: [`ProcessGroup::terminate`]
/// does nothing there, and a server that does not exit once its input
/// closed is killed when the grace ends.
///
/// On macOS, which has no parent-death signal, each group has a
/// [`Watchdog`]: a `/bin/sh` that kills the group once rho's end of its
/// stdin closes, which happens however rho ends, a SIGKILL included.
#[derive(Debug)]
pub struct ProcessGroup {
    pid: u32,
    #[cfg(windows)]
    job: crate::job::Job,
    #[cfg(target_os = "macos")]
    watchdog: std::sync::Mutex<Option<Watchdog>>,
}

impl ProcessGroup {
    /// The group of a child [`prepare_command`] prepared: on Windows a new
    /// Job Object with the child in it, then the child resumed (it was
    /// created suspended). A child that cannot be contained is not resumed:
    /// kill it.
    pub fn of(child: &Child) -> std::io::Result<Self> {
        Ok(Self {
            pid: child.id(),
            #[cfg(windows)]
            job: crate::job::Job::containing(child)?,
            #[cfg(target_os = "macos")]
            watchdog: std::sync::Mutex::new(Some(Watchdog::start(child.id())?)),
        })
    }

    /// The child's process id (on Unix also the group's id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Kills every process in the group (SIGKILL; on Windows
    /// `TerminateJobObject`). Nothing left in it is the common, fine case.
    pub fn kill(&self) {
        #[cfg(windows)]
        self.job.terminate();
        #[cfg(not(windows))]
        kill_group(self.pid);
        // Its work is done, and it must be gone before the child is reaped
        // (then the group id may be reused).
        #[cfg(target_os = "macos")]
        if let Some(watchdog) = self
            .watchdog
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            watchdog.dismiss();
        }
    }

    /// Asks every process in the group to terminate (SIGTERM). Windows
    /// has no such request for a process without a console window of its
    /// own: nothing is sent, and the kill follows when the grace ends.
    pub fn terminate(&self) {
        #[cfg(not(windows))]
        terminate_group(self.pid);
    }
}

/// A process that kills a process group when rho dies, where the kernel
/// has no parent-death signal (macOS): `/bin/sh` blocked reading a pipe
/// whose only write end is rho's (std opens it close-on-exec, so no other
/// child holds it). When rho exits, however, the kernel closes that end,
/// the read sees end of file, and the shell sends SIGKILL to the group.
/// It leads a process group of its own, so a Ctrl-C at the terminal
/// (sent to rho's group) does not end it before rho's orderly shutdown
/// does. Used on macOS; built and tested on every Unix.
#[cfg(unix)]
#[derive(Debug)]
pub struct Watchdog {
    shell: Child,
}

#[cfg(unix)]
impl Watchdog {
    /// Starts the watchdog of the group `pgid`.
    pub fn start(pgid: u32) -> std::io::Result<Watchdog> {
        use std::os::unix::process::CommandExt;
        let shell = Command::new("/bin/sh")
            .args([
                "-c",
                "read _ignored; kill -s KILL -- -\"$0\"",
                &pgid.to_string(),
            ])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        Ok(Watchdog { shell })
    }

    /// Ends the watchdog without it killing anything (rho is alive and
    /// ends the group itself), and reaps it.
    pub fn dismiss(mut self) {
        let _ = self.shell.kill();
        let _ = self.shell.wait();
    }

    /// What rho's death does: its end of the pipe closes. The shell then
    /// kills the group and exits; this waits for that. For tests.
    pub fn fire(mut self) -> std::io::Result<ExitStatus> {
        drop(self.shell.stdin.take());
        self.shell.wait()
    }
}

/// Has the child killed (SIGKILL) by the kernel when its parent dies, so a
/// rho that is itself SIGKILLed, or crashes, leaves no server behind (and
/// no sampling model command: the `rho` CLI's `CommandModel` uses it too,
/// spawning on the thread that then waits for the model).
///
/// Implementation note: Linux sends the parent-death signal when the
/// *thread* that forked the child exits, not the process. Both executors
/// spawn from a thread that outlives the session: io-blocking spawns on the
/// session's own driver thread, which ends only after the child is reaped;
/// io-smol spawns (async-process calls `std::process::Command::spawn`
/// inline) on the thread running the session's task, which in `rho` is the
/// main thread. A host that runs io-smol's executor on threads that come
/// and go must keep the spawning thread alive for as long as its sessions.
/// Only the direct child is covered: its own children (an `npx` wrapper's
/// node, a `sleep` a server started) are in its process group, which rho
/// kills on every orderly exit and on SIGINT/SIGTERM/SIGHUP, but a rho
/// killed with SIGKILL cannot signal them; they outlive it unless the
/// server ends them when its input closes. Elsewhere than Linux there is
/// no parent-death signal; the signal handlers of the `rho` CLI are all
/// there is.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(unsafe_code)]
pub fn die_with_parent(command: &mut Command) {
    use rustix::process::{Signal, getpid, getppid, set_parent_process_death_signal};
    use std::os::unix::process::CommandExt;
    let parent = getpid();
    // SAFETY: the hook runs in the forked child before `exec`, where only
    // async-signal-safe calls are allowed (another thread of rho may have
    // held a lock, such as the allocator's, at the fork). It makes two raw
    // system calls through rustix's linux_raw backend (prctl and getppid),
    // allocates nothing, takes no lock and touches no shared state; the
    // only data it reads is `parent`, a plain integer copied into the
    // closure before the fork. An error is an `io::Errno`, built without
    // allocating.
    unsafe {
        command.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::KILL))?;
            // rho may have died between the fork and the prctl: then the
            // signal was already missed and the child has a new parent. Do
            // not start a server nobody will stop.
            if getppid() != Some(parent) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

/// Whether the child with this pid has exited, without reaping it.
#[cfg(unix)]
pub fn has_exited_pid(pid: u32) -> bool {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return true;
    };
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    matches!(waitid(WaitId::Pid(pid), options), Ok(Some(_)))
}

/// Whether the child with this pid has exited. Elsewhere than Unix there
/// is no way to ask without the child handle; callers fall back to it.
#[cfg(not(unix))]
pub fn has_exited_pid(_pid: u32) -> bool {
    false
}

/// Whether `child` has exited, without reaping it where the platform
/// allows.
pub fn has_exited(child: &mut std::process::Child) -> bool {
    #[cfg(unix)]
    {
        has_exited_pid(child.id())
    }
    #[cfg(not(unix))]
    {
        matches!(child.try_wait(), Ok(Some(_)))
    }
}

/// Kills the whole process group led by `pid`. Nothing left in the group
/// (ESRCH) is the common, fine case.
pub fn kill_group(pid: u32) {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process_group};
        if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
    }
}

/// Asks the whole process group led by `pid` to terminate (SIGTERM).
pub fn terminate_group(pid: u32) {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process_group};
        if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            let _ = kill_process_group(pid, Signal::TERM);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
    }
}

/// An exit status in words, for failure reasons.
pub fn describe_exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => status.to_string(),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    /// Whether `pid` is gone or a zombie (killed, not yet reaped by
    /// whoever inherited it).
    #[cfg(target_os = "linux")]
    fn dead(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    /// Whether `pid` is dead, or killed and not yet gone: a SIGKILL sent
    /// is pending (/proc/<pid>/status) until the process next runs.
    #[cfg(target_os = "linux")]
    fn killed(pid: u32) -> bool {
        const SIGKILL_BIT: u64 = 1 << (9 - 1);
        dead(pid)
            || std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
                status.lines().any(|line| {
                    ["SigPnd:", "ShdPnd:"].iter().any(|field| {
                        line.strip_prefix(field)
                            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
                            .is_some_and(|mask| mask & SIGKILL_BIT != 0)
                    })
                })
            })
    }

    /// Whether `pid` is blocked in read(2) of its stdin, from
    /// /proc/<pid>/syscall (the call's number, then its arguments).
    #[cfg(target_os = "linux")]
    fn blocked_reading_stdin(pid: u32) -> bool {
        #[cfg(target_arch = "x86_64")]
        const READ: &str = "0";
        #[cfg(target_arch = "aarch64")]
        const READ: &str = "63";
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        const READ: &str = "read(2) is not known here";
        std::fs::read_to_string(format!("/proc/{pid}/syscall")).is_ok_and(|call| {
            let mut fields = call.split_whitespace();
            fields.next() == Some(READ) && fields.next() == Some("0x0")
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_watchdog_whose_pipe_closes_kills_the_whole_group() {
        use std::io::BufRead as _;
        use std::os::unix::process::ExitStatusExt as _;
        let mut leader = Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("the group starts");
        let mut line = String::new();
        std::io::BufReader::new(leader.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the grandchild's pid");
        let grandchild: u32 = line.trim().parse().expect("a pid");
        let watchdog = Watchdog::start(leader.id()).expect("the watchdog starts");
        // Once its shell waits in `read`, the kill after it has not run,
        // and cannot while rho's end of the pipe is open; a kill sent
        // before shows as the grandchild dead or its SIGKILL pending.
        let shell = watchdog.shell.id();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !blocked_reading_stdin(shell) {
            assert!(
                std::time::Instant::now() < until,
                "the watchdog never waited"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!killed(grandchild), "nothing is killed while rho lives");
        watchdog.fire().expect("the watchdog exits");
        let status = leader.wait().expect("the leader is reaped");
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status:?}");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !dead(grandchild) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            dead(grandchild),
            "the server's own child went with the group"
        );
    }

    #[test]
    fn a_dismissed_watchdog_kills_nothing() {
        let mut leader = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("the group starts");
        Watchdog::start(leader.id())
            .expect("the watchdog starts")
            .dismiss();
        // The watchdog is reaped: whatever it did is done. rho ends the
        // group itself, with SIGTERM; a group the watchdog had killed
        // would have died of SIGKILL (a process being killed takes no
        // other signal).
        terminate_group(leader.id());
        let status = leader.wait().expect("the leader is reaped");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(15),
            "ended by rho's SIGTERM, not a SIGKILL: {status:?}"
        );
    }
}

fn find_executable(candidates: &ProgramCandidates) -> Option<PathBuf> {
    match candidates {
        ProgramCandidates::Path(p) => is_executable(p).then(|| p.clone()),
        ProgramCandidates::Search(list) => list.iter().find(|p| is_executable(p)).cloned(),
    }
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}
