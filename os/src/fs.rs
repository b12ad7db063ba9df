//! Files only their owner may touch: the credential store's directory
//! made owner-only and its lock file locked, per platform; and the one
//! way rho reads a file someone else may have pointed it at (a secret, a
//! cache): a regular file only, never more than a bound ([`read_regular`]).
//!
//! On Unix the directory's mode does it (0700, set where the host creates
//! it) and the lock is `flock`. On Windows a directory inherits its
//! parent's ACL (in the profile: the user, SYSTEM and Administrators), so
//! [`make_owner_only`] replaces it with a protected DACL (no inherited
//! entries) that grants the current user alone full control, inherited
//! by every file and folder created inside; [`lock_exclusive`] is
//! `LockFileEx`. Both locks are released when the file closes.

use std::io::Read as _;
#[cfg(unix)]
use std::{fs::File, io, path::Path};

/// Why [`read_regular`] refused a file, as an `io::Error` of kind
/// `InvalidInput` (its text says which) or the open's own error.
const NOT_REGULAR: &str = "not a regular file (a FIFO, a device or a directory cannot hold it)";

/// Reads the whole of `path` when it is a regular file of at most `limit`
/// bytes. A FIFO, a device (`/dev/zero`), a socket or a directory is
/// refused at once, without blocking and without reading: on Unix the
/// file is opened non-blocking (a FIFO's open would otherwise wait for a
/// writer) and its type read from the open handle, so a file swapped
/// between a check and the open cannot slip through. A larger file is
/// refused after `limit + 1` bytes. Errors are `InvalidInput` with a
/// reason, or the open's or the read's own.
pub fn read_regular(path: &std::path::Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
        options.custom_flags(flags.bits() as i32);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            NOT_REGULAR,
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(bytes)
}

/// Blocks until this process holds the exclusive lock of `file`.
#[cfg(unix)]
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    Ok(rustix::fs::flock(
        file,
        rustix::fs::FlockOperation::LockExclusive,
    )?)
}

/// Makes `dir` accessible to its owner only. On Unix the host sets the
/// mode itself (0700 with `DirBuilder`); this only checks it is so.
#[cfg(unix)]
pub fn make_owner_only(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o700))?;
    }
    Ok(())
}

#[cfg(windows)]
pub use windows::{lock_exclusive, make_owner_only, owner_only_entries};

#[cfg(windows)]
#[allow(unsafe_code)]
mod windows {
    use std::fs::File;
    use std::io;
    use std::os::windows::ffi::OsStrExt as _;
    use std::os::windows::io::{AsRawHandle as _, FromRawHandle as _, OwnedHandle};
    use std::path::Path;

    use windows_sys::Win32::Foundation::{ERROR_SUCCESS, GENERIC_ALL, HANDLE, LocalFree};
    use windows_sys::Win32::Security::Authorization::{
        EXPLICIT_ACCESS_W, GetNamedSecurityInfoW, SE_FILE_OBJECT, SET_ACCESS, SetEntriesInAclW,
        SetSecurityInfo, TRUSTEE_IS_SID, TRUSTEE_IS_USER,
    };
    use windows_sys::Win32::Security::{
        ACL, ACL_SIZE_INFORMATION, AclSizeInformation, DACL_SECURITY_INFORMATION,
        GetAclInformation, GetTokenInformation, PROTECTED_DACL_SECURITY_INFORMATION,
        PSECURITY_DESCRIPTOR, SUB_CONTAINERS_AND_OBJECTS_INHERIT, TOKEN_QUERY, TOKEN_USER,
        TokenUser,
    };
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_FLAG_BACKUP_SEMANTICS, LOCKFILE_EXCLUSIVE_LOCK, LockFileEx, READ_CONTROL, WRITE_DAC,
    };
    use windows_sys::Win32::System::IO::OVERLAPPED;
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    /// Blocks until this process holds the exclusive lock of `file` (its
    /// whole range); released when the file closes.
    pub fn lock_exclusive(file: &File) -> io::Result<()> {
        let mut overlapped = OVERLAPPED::default();
        // SAFETY: the handle is `file`'s, open for the call; `overlapped`
        // is a zeroed OVERLAPPED (offset 0) that outlives it, and the file
        // was not opened for overlapped IO, so the call completes before
        // it returns.
        let locked = unsafe {
            LockFileEx(
                file.as_raw_handle() as HANDLE,
                LOCKFILE_EXCLUSIVE_LOCK,
                0,
                u32::MAX,
                u32::MAX,
                &raw mut overlapped,
            )
        };
        if locked == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The current user's TOKEN_USER, in a buffer aligned for it.
    fn token_user() -> io::Result<Vec<u64>> {
        let mut raw: HANDLE = std::ptr::null_mut();
        // SAFETY: GetCurrentProcess is a pseudo-handle; `raw` is a valid
        // out pointer, owned below once the call succeeded.
        if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &raw mut raw) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh handle nothing else owns.
        let token = unsafe { OwnedHandle::from_raw_handle(raw) };
        let mut needed = 0u32;
        // SAFETY: a size query: no buffer, `needed` a valid out pointer.
        unsafe {
            GetTokenInformation(
                token.as_raw_handle() as HANDLE,
                TokenUser,
                std::ptr::null_mut(),
                0,
                &raw mut needed,
            )
        };
        let mut buf = vec![0u64; (needed as usize).div_ceil(8).max(1)];
        let size = u32::try_from(buf.len() * 8).unwrap_or(u32::MAX);
        // SAFETY: `buf` is writable for `size` bytes and aligned for
        // TOKEN_USER; the token is open.
        let ok = unsafe {
            GetTokenInformation(
                token.as_raw_handle() as HANDLE,
                TokenUser,
                buf.as_mut_ptr().cast(),
                size,
                &raw mut needed,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(buf)
    }

    fn wide(path: &Path) -> Vec<u16> {
        path.as_os_str().encode_wide().chain(Some(0)).collect()
    }

    /// Gives `dir` a protected DACL with one entry: full control for the
    /// current user, inherited by everything created inside. Entries it
    /// had (inherited from the profile or set by hand) are dropped.
    pub fn make_owner_only(dir: &Path) -> io::Result<()> {
        let user = token_user()?;
        // SAFETY: `user` holds a TOKEN_USER written by the OS, whose SID
        // pointer points into the same buffer, alive for this function.
        let sid = unsafe { (*user.as_ptr().cast::<TOKEN_USER>()).User.Sid };
        let mut entry = EXPLICIT_ACCESS_W {
            grfAccessPermissions: GENERIC_ALL,
            grfAccessMode: SET_ACCESS,
            grfInheritance: SUB_CONTAINERS_AND_OBJECTS_INHERIT,
            ..Default::default()
        };
        entry.Trustee.TrusteeForm = TRUSTEE_IS_SID;
        entry.Trustee.TrusteeType = TRUSTEE_IS_USER;
        entry.Trustee.ptstrName = sid.cast();
        let mut acl: *mut ACL = std::ptr::null_mut();
        // SAFETY: one valid entry, no old ACL; `acl` receives a LocalAlloc'd
        // ACL, freed below.
        let made = unsafe { SetEntriesInAclW(1, &raw const entry, std::ptr::null(), &raw mut acl) };
        if made != ERROR_SUCCESS {
            return Err(io::Error::from_raw_os_error(made as i32));
        }
        // The directory itself, opened to write its DACL (a directory opens
        // only with backup semantics).
        let handle = {
            use std::os::windows::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new()
                .access_mode(WRITE_DAC | READ_CONTROL)
                .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
                .open(dir)
        };
        let handle = match handle {
            Ok(handle) => handle,
            Err(e) => {
                // SAFETY: `acl` came from SetEntriesInAclW's LocalAlloc.
                unsafe { LocalFree(acl.cast()) };
                return Err(e);
            }
        };
        // SAFETY: the handle is open with WRITE_DAC; `acl` is the valid
        // ACL made above; owner, group and SACL are left as they are.
        let set = unsafe {
            SetSecurityInfo(
                handle.as_raw_handle() as HANDLE,
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                acl,
                std::ptr::null(),
            )
        };
        // SAFETY: `acl` came from SetEntriesInAclW's LocalAlloc.
        unsafe { LocalFree(acl.cast()) };
        if set != ERROR_SUCCESS {
            return Err(io::Error::from_raw_os_error(set as i32));
        }
        Ok(())
    }

    /// How many entries the DACL of `path` has (one after
    /// [`make_owner_only`]), for checks.
    pub fn owner_only_entries(path: &Path) -> io::Result<u32> {
        let path = wide(path);
        let mut dacl: *mut ACL = std::ptr::null_mut();
        let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: `path` is NUL-terminated; the out pointers are valid;
        // the descriptor (which `dacl` points into) is freed below.
        let got = unsafe {
            GetNamedSecurityInfoW(
                path.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &raw mut dacl,
                std::ptr::null_mut(),
                &raw mut descriptor,
            )
        };
        if got != ERROR_SUCCESS {
            return Err(io::Error::from_raw_os_error(got as i32));
        }
        let mut info = ACL_SIZE_INFORMATION::default();
        // SAFETY: `dacl` points into `descriptor`, alive until freed;
        // `info` is the size the class asks for.
        let ok = !dacl.is_null()
            && unsafe {
                GetAclInformation(
                    dacl,
                    (&raw mut info).cast(),
                    size_of::<ACL_SIZE_INFORMATION>() as u32,
                    AclSizeInformation,
                )
            } != 0;
        // SAFETY: LocalAlloc'd by GetNamedSecurityInfoW.
        unsafe { LocalFree(descriptor) };
        if !ok {
            return Err(io::Error::other("no DACL"));
        }
        Ok(info.AceCount)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[cfg(unix)]
    #[test]
    fn only_a_regular_file_within_the_limit_is_read() {
        let dir = scratch("regular");
        let file = dir.join("secret");
        std::fs::write(&file, "s3cret\n").expect("write");
        assert_eq!(read_regular(&file, 64).expect("read"), b"s3cret\n");
        let err = read_regular(&file, 3).expect_err("over the limit");
        assert!(err.to_string().contains("larger than 3 bytes"), "{err}");
        // Neither a FIFO with no writer (whose plain open would block) nor
        // a device that never ends nor a directory is opened for long.
        let fifo = dir.join("fifo");
        // mkfifo(1), not rustix's mknodat: that one is missing on macOS.
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        for path in [fifo.as_path(), Path::new("/dev/zero"), dir.as_path()] {
            let err = read_regular(path, 1 << 30).expect_err("refused");
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{path:?}: {err}");
            assert!(err.to_string().contains("not a regular file"), "{err}");
        }
        // Through a symlink, the target decides.
        let link = dir.join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
        assert!(read_regular(&link, 1 << 30).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rho-os-fs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    #[test]
    fn an_owner_only_dir_still_lets_its_owner_write_and_read() {
        let dir = scratch("owner");
        make_owner_only(&dir).expect("made owner-only");
        let file = dir.join("store.json");
        std::fs::write(&file, b"{}").expect("the owner writes");
        assert_eq!(std::fs::read(&file).expect("the owner reads"), b"{}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dir).expect("dir").permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Wine 8 keeps no DACL on a file (it answers with one derived from
    /// the Unix mode, three entries), so this runs on Windows itself:
    /// `cargo test -p rho-os -- --ignored`.
    #[cfg(windows)]
    #[test]
    #[ignore = "needs Windows: Wine 8 keeps no file DACL"]
    fn an_owner_only_dir_has_one_entry_that_its_files_inherit() {
        let dir = scratch("dacl");
        make_owner_only(&dir).expect("made owner-only");
        let file = dir.join("store.json");
        std::fs::write(&file, b"{}").expect("the owner writes");
        assert_eq!(owner_only_entries(&dir).expect("the DACL reads"), 1);
        assert_eq!(
            owner_only_entries(&file).expect("the file's DACL reads"),
            1,
            "a file made inside inherits the one entry"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_lock_is_held_until_its_file_closes_and_then_taken_again() {
        let dir = scratch("lock");
        let path = dir.join("lock");
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .expect("lock file")
        };
        let first = open();
        lock_exclusive(&first).expect("locked");
        let (done, finished) = std::sync::mpsc::channel();
        let second = open();
        // Whether the first file was closed when the second lock was
        // taken: the second lock must wait for that.
        let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = std::sync::Arc::clone(&released);
        std::thread::Builder::new()
            .name(SECOND_LOCK.into())
            .spawn(move || {
                let locked = lock_exclusive(&second);
                let _ = done.send((locked.is_ok(), seen.load(Ordering::SeqCst)));
            })
            .expect("start the second locker");
        second_lock_is_waiting();
        released.store(true, Ordering::SeqCst);
        drop(first);
        assert_eq!(
            finished.recv_timeout(std::time::Duration::from_secs(5)),
            Ok((true, true)),
            "the second lock is taken only once the first file closed"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The name of the thread that takes the second lock.
    const SECOND_LOCK: &str = "rho-lock-second";

    /// Returns once the second locker is blocked in flock(2), from
    /// /proc/self/task (the thread's name, then its system call).
    #[cfg(target_os = "linux")]
    fn second_lock_is_waiting() {
        #[cfg(target_arch = "x86_64")]
        const FLOCK: &str = "73";
        #[cfg(target_arch = "aarch64")]
        const FLOCK: &str = "32";
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        const FLOCK: &str = "flock(2) is not known here";
        let waiting = || {
            std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| {
                tasks.flatten().any(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|comm| comm.trim_end() == SECOND_LOCK)
                        && std::fs::read_to_string(task.path().join("syscall"))
                            .is_ok_and(|call| call.split_whitespace().next() == Some(FLOCK))
                })
            })
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !waiting() {
            assert!(
                std::time::Instant::now() < until,
                "the second lock never waited: it was taken while the first was held"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Elsewhere no process table tells where a thread waits: the second
    /// locker gets a moment to reach its lock, and the order it saw (the
    /// first file closed or not) tells whether it waited.
    #[cfg(not(target_os = "linux"))]
    fn second_lock_is_waiting() {
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}
