//! Random bytes from the operating system, for what must not be guessed
//! (a login's PKCE verifier and state): the kernel's getrandom on Linux,
//! `/dev/urandom` on the other Unixes (macOS: rustix has no getrandom
//! there), `BCryptGenRandom` with the system-preferred generator on
//! Windows.

use std::io;

/// Fills some of `buf` from the OS generator, returning how many bytes it
/// filled (callers loop until all are).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn fill(buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::rand::getrandom(
        buf,
        rustix::rand::GetRandomFlags::empty(),
    )?)
}

/// Fills some of `buf` from the OS generator, returning how many bytes it
/// filled (callers loop until all are).
#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
pub fn fill(buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read as _;
    std::fs::File::open("/dev/urandom")?.read(buf)
}

/// Fills some of `buf` from the OS generator, returning how many bytes it
/// filled (callers loop until all are).
#[cfg(windows)]
#[allow(unsafe_code)]
pub fn fill(buf: &mut [u8]) -> io::Result<usize> {
    use windows_sys::Win32::Security::Cryptography::{
        BCRYPT_USE_SYSTEM_PREFERRED_RNG, BCryptGenRandom,
    };
    let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
    // SAFETY: the pointer and length describe (a prefix of) `buf`, which
    // is writable and outlives the call; a null algorithm handle is what
    // BCRYPT_USE_SYSTEM_PREFERRED_RNG asks for.
    let status = unsafe {
        BCryptGenRandom(
            std::ptr::null_mut(),
            buf.as_mut_ptr(),
            len,
            BCRYPT_USE_SYSTEM_PREFERRED_RNG,
        )
    };
    if status < 0 {
        return Err(io::Error::other(format!(
            "BCryptGenRandom failed with status {status:#x}"
        )));
    }
    Ok(len as usize)
}

/// Fills all of `buf` from the OS generator.
pub fn fill_all(buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        filled += fill(&mut buf[filled..])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_gives_bytes_that_differ_between_calls() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        let n = fill(&mut a).expect("the OS gives random bytes");
        assert!(n > 0 && n <= 32);
        fill(&mut b).expect("the OS gives random bytes");
        assert_ne!(a[..n], b[..n], "two draws of 32 bytes do not collide");
    }
}
