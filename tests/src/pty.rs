//! A pseudo-terminal for the CLI tests that need rho to see a person's
//! terminal (a form, the shell's line editor): the master side stays with
//! the test, which reads the screen off it and types on it; the slave side
//! becomes rho's stdio. Made with openpt(3) directly rather than
//! `script(1)`, so the child is rho itself and its pid is known.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

/// A pseudo-terminal: the master for the test, the slave for rho.
pub struct Pty {
    master: OwnedFd,
    slave: PathBuf,
}

impl Pty {
    /// Opens a new pseudo-terminal pair, 200 columns by 50 rows.
    pub fn open() -> Self {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        // A wide terminal, so a test's long line is drawn whole rather
        // than scrolled sideways (a fresh pty reports no size at all).
        let size = rustix::termios::Winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&master, size).expect("set the window size");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave = PathBuf::from(name.to_string_lossy().into_owned());
        Self { master, slave }
    }

    /// A fresh descriptor of the slave side, for one of rho's stdio.
    pub fn slave(&self) -> Stdio {
        use rustix::fs::{Mode, OFlags, open};
        let fd = open(&self.slave, OFlags::RDWR | OFlags::NOCTTY, Mode::empty()).expect("open pts");
        Stdio::from(fd)
    }

    /// Collects everything rho writes to the terminal, on a thread; the
    /// file returned types on it.
    pub fn record(self) -> (Arc<Mutex<String>>, std::fs::File) {
        let screen = Arc::new(Mutex::new(String::new()));
        let into = Arc::clone(&screen);
        let mut master = std::fs::File::from(self.master);
        let keyboard = master.try_clone().expect("dup the pty master");
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once rho, the last holder of the slave, has exited.
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                into.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_str(&text);
            }
        });
        (screen, keyboard)
    }
}
