//! The console rho runs in, on Windows: its control events mapped to the
//! stop signals rho's Unix handling knows, its input in raw mode for the
//! shell's line editor, its output told to interpret the escape
//! sequences rho writes (virtual terminal processing), and its width.
//!
//! The mapping is plain data, compiled and tested everywhere; the calls
//! are Windows-only. Ctrl-C and Ctrl-Break both stop rho as SIGINT does
//! (exit 130): both are the keyboard's interrupt there. Closing the
//! console window is the terminal going away, SIGHUP (exit 129); logoff
//! and shutdown are the system asking processes to end, SIGTERM (143).

/// A console control event (`CTRL_*_EVENT`).
pub type ConsoleEvent = u32;

/// Ctrl-C pressed in the console.
pub const CTRL_C: ConsoleEvent = 0;
/// Ctrl-Break pressed (or sent with `GenerateConsoleCtrlEvent`).
pub const CTRL_BREAK: ConsoleEvent = 1;
/// The console window is closing.
pub const CTRL_CLOSE: ConsoleEvent = 2;
/// The user is logging off (services only).
pub const CTRL_LOGOFF: ConsoleEvent = 5;
/// The system is shutting down (services only).
pub const CTRL_SHUTDOWN: ConsoleEvent = 6;

/// The Unix signal number whose stop a console event stands for (its
/// exit code is 128 + it), or `None` for an event rho does not handle.
pub fn stop_signal(event: ConsoleEvent) -> Option<i32> {
    match event {
        CTRL_C | CTRL_BREAK => Some(2),
        CTRL_CLOSE => Some(1),
        CTRL_LOGOFF | CTRL_SHUTDOWN => Some(15),
        _ => None,
    }
}

/// What a stop signal was on a Windows console, for rho's closing line.
pub fn stop_name(signal: i32) -> Option<&'static str> {
    match signal {
        2 => Some("Ctrl-C"),
        1 => Some("the console closing"),
        15 => Some("logoff or shutdown"),
        _ => None,
    }
}

#[cfg(windows)]
pub use windows::{RawInput, columns, enable_virtual_terminal_output, on_stop_event};

#[cfg(windows)]
#[allow(unsafe_code)]
mod windows {
    use std::io;
    use std::sync::OnceLock;
    use std::time::Duration;

    use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::System::Console::{
        CONSOLE_MODE, CONSOLE_SCREEN_BUFFER_INFO, ENABLE_ECHO_INPUT, ENABLE_LINE_INPUT,
        ENABLE_PROCESSED_INPUT, ENABLE_VIRTUAL_TERMINAL_INPUT, ENABLE_VIRTUAL_TERMINAL_PROCESSING,
        GetConsoleMode, GetConsoleScreenBufferInfo, GetStdHandle, STD_ERROR_HANDLE, STD_HANDLE,
        STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, SetConsoleCtrlHandler, SetConsoleMode,
    };

    use super::{CTRL_CLOSE, CTRL_LOGOFF, CTRL_SHUTDOWN, stop_signal};

    /// The callback [`on_stop_event`] installed.
    type OnStop = Box<dyn Fn(i32) + Send + Sync>;
    static ON_STOP: OnceLock<OnStop> = OnceLock::new();

    /// How long the handler of a closing console holds the process up so
    /// the orderly shutdown can finish: Windows ends it 5 s after the
    /// event anyway.
    const CLOSE_HOLD: Duration = Duration::from_millis(4500);

    unsafe extern "system" fn handler(event: u32) -> windows_sys::core::BOOL {
        let (Some(signal), Some(on_stop)) = (stop_signal(event), ON_STOP.get()) else {
            return 0;
        };
        on_stop(signal);
        if matches!(event, CTRL_CLOSE | CTRL_LOGOFF | CTRL_SHUTDOWN) {
            // Returning lets Windows end the process at once; the main
            // thread exits (with its code) while this one waits.
            std::thread::sleep(CLOSE_HOLD);
        }
        1
    }

    /// Calls `on_stop` with the stop signal of each console control event
    /// ([`super::stop_signal`]), on the thread Windows starts for it. Once
    /// per process; later calls keep the first callback.
    pub fn on_stop_event(on_stop: impl Fn(i32) + Send + Sync + 'static) -> io::Result<()> {
        if ON_STOP.set(Box::new(on_stop)).is_err() {
            return Ok(());
        }
        // SAFETY: `handler` is a plain function valid for the whole
        // process; it only reads a OnceLock and calls a Sync callback.
        if unsafe { SetConsoleCtrlHandler(Some(handler), 1) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn std_handle(which: STD_HANDLE) -> io::Result<HANDLE> {
        // SAFETY: GetStdHandle takes a constant and returns a borrowed
        // handle (not to be closed), or INVALID_HANDLE_VALUE / null.
        let handle = unsafe { GetStdHandle(which) };
        if handle == INVALID_HANDLE_VALUE || handle.is_null() {
            return Err(io::Error::other("no console handle"));
        }
        Ok(handle)
    }

    fn mode(handle: HANDLE) -> io::Result<CONSOLE_MODE> {
        let mut mode: CONSOLE_MODE = 0;
        // SAFETY: `mode` is a valid out pointer for the call.
        if unsafe { GetConsoleMode(handle, &raw mut mode) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(mode)
    }

    fn set_mode(handle: HANDLE, mode: CONSOLE_MODE) -> io::Result<()> {
        // SAFETY: plain call on a console handle GetStdHandle returned.
        if unsafe { SetConsoleMode(handle, mode) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Has the console interpret the escape sequences rho writes on
    /// stdout and stderr (colours, a call's progress line, the shell's
    /// redraws) rather than print them. An error when neither is a console
    /// (a pipe, a file): then nothing is to be done.
    pub fn enable_virtual_terminal_output() -> io::Result<()> {
        let mut result = Err(io::Error::other("no console"));
        for which in [STD_OUTPUT_HANDLE, STD_ERROR_HANDLE] {
            let enabled = std_handle(which)
                .and_then(|h| set_mode(h, mode(h)? | ENABLE_VIRTUAL_TERMINAL_PROCESSING));
            if result.is_err() {
                result = enabled;
            }
        }
        result
    }

    /// How many columns the console window shows (its visible width,
    /// not the wider screen buffer behind it), or `None` when stdout is
    /// not a console.
    pub fn columns() -> Option<u16> {
        let output = std_handle(STD_OUTPUT_HANDLE).ok()?;
        let mut info = CONSOLE_SCREEN_BUFFER_INFO::default();
        // SAFETY: `info` is a valid out pointer for the call, on a console
        // handle GetStdHandle returned.
        if unsafe { GetConsoleScreenBufferInfo(output, &raw mut info) } == 0 {
            return None;
        }
        let width = i32::from(info.srWindow.Right) - i32::from(info.srWindow.Left) + 1;
        u16::try_from(width).ok().filter(|&w| w > 0)
    }

    /// The console's input in raw mode for the shell's line editor: no
    /// echo, no line buffering, Ctrl-C a key rather than an event, and
    /// keys as the escape sequences a Unix terminal sends (virtual
    /// terminal input), which the editor decodes. The mode before is put
    /// back on drop.
    #[derive(Debug)]
    pub struct RawInput {
        saved: CONSOLE_MODE,
    }

    impl RawInput {
        /// Puts the console's input in raw mode, and its output in
        /// virtual terminal mode.
        pub fn enter() -> io::Result<RawInput> {
            let input = std_handle(STD_INPUT_HANDLE)?;
            let saved = mode(input)?;
            let raw = (saved & !(ENABLE_ECHO_INPUT | ENABLE_LINE_INPUT | ENABLE_PROCESSED_INPUT))
                | ENABLE_VIRTUAL_TERMINAL_INPUT;
            set_mode(input, raw)?;
            let _ = enable_virtual_terminal_output();
            Ok(RawInput { saved })
        }
    }

    impl Drop for RawInput {
        fn drop(&mut self) {
            if let Ok(input) = std_handle(STD_INPUT_HANDLE) {
                let _ = set_mode(input, self.saved);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_c_and_ctrl_break_stop_as_sigint_with_exit_130() {
        assert_eq!(stop_signal(CTRL_C), Some(2));
        assert_eq!(stop_signal(CTRL_BREAK), Some(2));
        assert_eq!(stop_name(2), Some("Ctrl-C"));
    }

    #[test]
    fn closing_the_console_stops_as_sighup_and_logoff_as_sigterm() {
        assert_eq!(stop_signal(CTRL_CLOSE), Some(1));
        assert_eq!(stop_signal(CTRL_LOGOFF), Some(15));
        assert_eq!(stop_signal(CTRL_SHUTDOWN), Some(15));
    }

    #[test]
    fn unknown_console_events_are_not_handled() {
        assert_eq!(stop_signal(3), None);
        assert_eq!(stop_signal(99), None);
        assert_eq!(stop_name(9), None);
    }
}
