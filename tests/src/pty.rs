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
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
    pub fn record(self) -> (Screen, std::fs::File) {
        let text = Arc::new(Mutex::new(String::new()));
        let into = Arc::clone(&text);
        let mut master = std::fs::File::from(self.master);
        let keyboard = master.try_clone().expect("dup the pty master");
        let reader = std::thread::spawn(move || {
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
        (
            Screen {
                text,
                reader: Some(reader),
            },
            keyboard,
        )
    }
}

/// What rho drew on a [`Pty`], as [`Pty::record`] collects it.
pub struct Screen {
    text: Arc<Mutex<String>>,
    /// The thread reading the master side; it ends when the terminal
    /// closes.
    reader: Option<JoinHandle<()>>,
}

impl Screen {
    /// Everything drawn so far.
    pub fn text(&self) -> String {
        self.text.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Everything drawn, once the terminal has closed (every holder of
    /// its slave side, rho last, has exited) and the reader has taken in
    /// its last bytes: `Ok` with the whole screen. Waits up to `within`
    /// for that, so something that still holds the terminal fails the
    /// test instead of hanging it: `Err` with what was drawn so far.
    pub fn closed(&mut self, within: Duration) -> Result<String, String> {
        let until = Instant::now() + within;
        while self.reader.as_ref().is_some_and(|r| !r.is_finished()) {
            if Instant::now() >= until {
                return Err(self.text());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the screen reader panicked");
        }
        Ok(self.text())
    }
}
