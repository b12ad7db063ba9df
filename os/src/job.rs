//! Windows' process group: a Job Object. A stdio server and everything it
//! starts are put in a job of their own, created with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, so ending the session
//! (`TerminateJobObject`) ends the whole tree, and a rho that dies in any
//! way (its handles are closed by the kernel, the last one of the job
//! with them) takes the tree with it: Windows' parent-death signal.
//!
//! Processes are assigned right after they start; a grandchild started in
//! the few microseconds between `CreateProcess` and the assignment would
//! escape the job. A server's first instructions are its runtime's
//! start-up, so in practice nothing has been started yet; a child created
//! suspended would close the gap, but std's `Command` does not hand back
//! the thread to resume.

#![allow(unsafe_code)]

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::process::Child;

use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};

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
    /// handle closes, with `child` in it.
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
        Ok(job)
    }

    /// Kills every process in the job; an empty job is fine.
    pub(crate) fn terminate(&self) {
        // SAFETY: the handle is the job's, open while `self` lives.
        let _ = unsafe { TerminateJobObject(self.handle.as_raw_handle(), KILLED_EXIT_CODE) };
    }
}
