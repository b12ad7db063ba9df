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
        Self::sized(200, 50)
    }

    /// Opens a new pseudo-terminal pair `columns` wide and `rows` high,
    /// for tests that check the same screen at two widths.
    pub fn sized(columns: u16, rows: u16) -> Self {
        use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("openpt");
        grantpt(&master).expect("grantpt");
        unlockpt(&master).expect("unlockpt");
        // A wide terminal, so a test's long line is drawn whole rather
        // than scrolled sideways (a fresh pty reports no size at all).
        let size = rustix::termios::Winsize {
            ws_row: rows,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&master, size).expect("set the window size");
        let name = ptsname(&master, Vec::new()).expect("ptsname");
        let slave = PathBuf::from(name.to_string_lossy().into_owned());
        Self { master, slave }
    }

    /// Stops the terminal itself from echoing what is typed and from
    /// turning `\n` into `\r\n` (`stty -echo -onlcr`), so that every byte
    /// read back is one rho wrote: for tests that look for raw CRs.
    pub fn rho_bytes_only(self) -> Self {
        use rustix::termios::{LocalModes, OptionalActions, OutputModes, tcgetattr, tcsetattr};
        let mut modes = tcgetattr(&self.master).expect("tcgetattr");
        modes.output_modes.remove(OutputModes::ONLCR);
        modes.local_modes.remove(LocalModes::ECHO);
        tcsetattr(&self.master, OptionalActions::Now, &modes).expect("tcsetattr");
        self
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

/// Runs `command` (rho, its stdio not yet set) on a fresh terminal
/// `columns` wide (its echo and CR insertion off, so every byte seen is
/// rho's), typing each answer once its prompt has appeared that many
/// times; returns the exit code and everything the terminal showed. A
/// prompt that never comes or a rho that never ends fails the test within
/// 30 and 60 seconds.
pub fn run_on_terminal(
    mut command: std::process::Command,
    answers: &[(&str, &str)],
    columns: u16,
) -> (Option<i32>, String) {
    use std::io::Write;
    let pty = Pty::sized(columns, 50).rho_bytes_only();
    command
        .stdin(pty.slave())
        .stdout(pty.slave())
        .stderr(pty.slave());
    let mut child = command.spawn().expect("start rho");
    // The command holds this process's copies of the slave side: the
    // terminal closes only once they are gone too.
    drop(command);
    let (mut screen, mut keyboard) = pty.record();
    let mut seen: Vec<&str> = Vec::new();
    for (prompt, answer) in answers {
        seen.push(prompt);
        let want = seen.iter().filter(|p| *p == prompt).count();
        let until = Instant::now() + Duration::from_secs(30);
        while screen.text().matches(prompt).count() < want {
            if Instant::now() > until {
                let _ = child.kill();
                panic!(
                    "no prompt {prompt:?} (#{want}) within 30 s; the terminal showed:\n{}",
                    screen.text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        keyboard
            .write_all(format!("{answer}\n").as_bytes())
            .expect("type an answer");
    }
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!(
                "rho did not finish within 60 s; the terminal showed:\n{}",
                screen.text()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(keyboard);
    let shown = screen
        .closed(Duration::from_secs(10))
        .unwrap_or_else(|partial| partial);
    (status.code(), shown)
}

/// Resizes the terminal whose master side is `keyboard` (what
/// [`Pty::record`] returned) to `columns` by `rows`, as a person dragging
/// the window does.
pub fn resize(keyboard: &std::fs::File, columns: u16, rows: u16) {
    let size = rustix::termios::Winsize {
        ws_row: rows,
        ws_col: columns,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(keyboard, size).expect("resize the terminal");
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

/// The first control character in `screen` that rho's own drawing does not
/// account for, with its byte offset: any C1 control, bidirectional
/// override or isolate, or C0 control other than LF, TAB and BS; an ESC
/// that does not start one of the sequences rho itself writes (erase
/// below `ESC[J`, cursor home `ESC[H` (Ctrl-L), erase line `ESC[2K`, reverse video `ESC[7m` and its
/// reset `ESC[0m`, colours `ESC[<n>m` from the log writer, cursor up,
/// down and right `ESC[<n>A` / `ESC[<n>B` / `ESC[<n>C`); a CR not followed by LF, another CR,
/// one of those sequences or the end. A server's payload (`ESC]0;…BEL`,
/// `ESC[2J`, `CR ESC[K`, U+009B, U+202E) always trips it.
pub fn foreign_control(screen: &str) -> Option<(usize, char)> {
    let bytes = screen.as_bytes();
    let own_sequence = |at: usize| -> Option<usize> {
        let rest = screen.get(at..)?.strip_prefix("\x1b[")?;
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let end = rest[digits..].chars().next()?;
        let ok = match end {
            'J' | 'H' => digits == 0,
            'K' => &rest[..digits] == "2",
            'A' | 'B' | 'C' | 'm' => digits > 0,
            _ => false,
        };
        ok.then_some(2 + digits + 1)
    };
    let mut at = 0;
    while let Some(c) = screen[at..].chars().next() {
        match c {
            '\x1b' => match own_sequence(at) {
                Some(len) => {
                    at += len;
                    continue;
                }
                None => return Some((at, c)),
            },
            '\r' => {
                let next = bytes.get(at + 1).copied();
                let fine =
                    matches!(next, None | Some(b'\n' | b'\r')) || own_sequence(at + 1).is_some();
                if !fine {
                    return Some((at, c));
                }
            }
            '\n' | '\t' | '\u{8}' => {}
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => return Some((at, c)),
            '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}' => {
                return Some((at, c));
            }
            _ => {}
        }
        at += c.len_utf8();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::foreign_control;

    #[test]
    fn rhos_own_drawing_passes_and_every_payload_is_caught() {
        let own = "\r\x1b[2Krho> /mcp\x1b[J\r\n  \x1b[7m/mcp \x1b[0m\x1b[1A\r\x1b[9C\x1b[33mWARN\x1b[0m\r\x1b[2K\x1b[1B\x1b[J\x1b[1A\r";
        assert_eq!(foreign_control(own), None);
        for payload in [
            "\x1b]0;pwned\x07",
            "\x1b[2J",
            "\r\x1b[K",
            "\u{9b}31m",
            "a\u{202e}b",
            "\x07",
        ] {
            assert!(
                foreign_control(&format!("{own}{payload}")).is_some(),
                "{payload:?}"
            );
        }
    }
}
