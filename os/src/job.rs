//! Windows' process group: a Job Object. A stdio server and everything it
//! starts are put in a job of their own, created with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, so ending the session
//! (`TerminateJobObject`) ends the whole tree, and a rho that dies in any
//! way (its handles are closed by the kernel, the last one of the job
//! with them) takes the tree with it: Windows' parent-death signal.
//!
//! A child is created suspended (`CREATE_SUSPENDED`, set by
//! `prepare_command`), assigned to its job, and only then resumed, so not
//! one of its instructions runs outside the job and no grandchild can
//! escape it. std's `Command` does not hand back the suspended thread, so
//! it is found in a snapshot of the system's threads (Toolhelp): a process
//! created suspended has exactly one, its main thread.

#![allow(unsafe_code)]

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::process::Child;

use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};

/// A job holding one server's process tree; closing it kills the tree.
#[derive(Debug)]
pub(crate) struct Job {
    handle: OwnedHandle,
}

/// The exit code the processes of a terminated job report (as a killed
/// Unix process reports SIGKILL).
const KILLED_EXIT_CODE: u32 = 1;

impl Job {
    /// A new anonymous job whose processes are all killed when its last
    /// handle closes, with `child` in it; a child created suspended is
    /// then resumed. On an error the caller kills the child.
    pub(crate) fn containing(child: &Child) -> io::Result<Job> {
        // SAFETY: both pointers may be null (default security, no name);
        // the returned handle is checked before it is owned.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh, valid handle that nothing else owns.
        let job = Job {
            handle: unsafe { OwnedHandle::from_raw_handle(raw) },
        };
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the pointer and size describe `limits`, which outlives
        // the call; the handle is the job's, open.
        let set = unsafe {
            SetInformationJobObject(
                job.handle.as_raw_handle(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                u32::try_from(size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>())
                    .unwrap_or(u32::MAX),
            )
        };
        if set == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both handles are open for the call: the job's, and the
        // child's process handle, which `child` owns.
        let assigned =
            unsafe { AssignProcessToJobObject(job.handle.as_raw_handle(), child.as_raw_handle()) };
        if assigned == 0 {
            return Err(io::Error::last_os_error());
        }
        resume(child.id())?;
        Ok(job)
    }

    /// Kills every process in the job; an empty job is fine.
    pub(crate) fn terminate(&self) {
        // SAFETY: the handle is the job's, open while `self` lives.
        let _ = unsafe { TerminateJobObject(self.handle.as_raw_handle(), KILLED_EXIT_CODE) };
    }
}

/// Resumes the threads of process `pid` (one, for a process created
/// suspended; a running process's threads have nothing to resume).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a plain call; the returned handle is checked, then owned.
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if raw == INVALID_HANDLE_VALUE || raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh, valid handle that nothing else owns.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut entry = THREADENTRY32 {
        dwSize: u32::try_from(size_of::<THREADENTRY32>()).unwrap_or(u32::MAX),
        cntUsage: 0,
        th32ThreadID: 0,
        th32OwnerProcessID: 0,
        tpBasePri: 0,
        tpDeltaPri: 0,
        dwFlags: 0,
    };
    let mut resumed = 0;
    // SAFETY: the snapshot is open and `entry` is a valid, sized out
    // pointer for both calls.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &raw mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: a plain call; the handle is checked, then owned.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if thread.is_null() {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a fresh, valid handle that nothing else owns.
            let thread = unsafe { OwnedHandle::from_raw_handle(thread) };
            // SAFETY: the handle is open with THREAD_SUSPEND_RESUME.
            if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &raw mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other(format!(
            "no thread of process {pid} to resume"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};
    use windows_sys::Win32::System::JobObjects::IsProcessInJob;

    #[test]
    fn a_child_started_suspended_is_in_its_job_before_it_runs_then_runs() {
        let mut command = Command::new("cmd");
        command.args(["/c", "exit", "3"]);
        crate::process::start_suspended(&mut command);
        let mut child = command.spawn().expect("cmd starts");
        // Suspended: not one instruction of it has run, so it cannot have
        // ended, whatever the machine's speed.
        assert!(child.try_wait().expect("try_wait").is_none());
        let job = Job::containing(&child).expect("contained, then resumed");
        let mut inside = 0;
        // SAFETY: both handles are open; `inside` is a valid out pointer.
        let asked = unsafe {
            IsProcessInJob(
                child.as_raw_handle(),
                job.handle.as_raw_handle(),
                &raw mut inside,
            )
        };
        assert_ne!(asked, 0, "{}", io::Error::last_os_error());
        assert_ne!(inside, 0, "the child is in its job");
        // Resumed: it runs to its end.
        let until = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                break status;
            }
            assert!(Instant::now() < until, "the child was never resumed");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(3));
    }

    #[test]
    fn resuming_a_process_that_is_gone_fails() {
        let mut child = Command::new("cmd")
            .args(["/c", "exit", "0"])
            .spawn()
            .expect("cmd starts");
        child.wait().expect("ends");
        assert!(resume(child.id()).is_err());
    }
}
