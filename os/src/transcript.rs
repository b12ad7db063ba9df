//! A transcript file: where the CLI's `--record FILE` transcripts go, and
//! the one the tests read back. One file per run, every session's lines
//! appended as the drivers produce them (each line names its session). The
//! core defines the format and the sink's contract
//! (`rho_proto_core::host::TranscriptSink`); this is the file, kept here
//! (file IO, no decisions) so the CLI binary and the tests share it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use rho_proto_core::host::TranscriptSink;

/// A transcript file shared by every session of a run.
#[derive(Debug)]
pub struct TranscriptFile {
    file: Mutex<BufWriter<File>>,
}

impl TranscriptFile {
    /// Creates (or truncates) the transcript file, owner-only (0600) when
    /// it is new: it holds a whole session, the server's words included.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        Ok(Self {
            file: Mutex::new(BufWriter::new(options.open(path)?)),
        })
    }
}

impl TranscriptSink for TranscriptFile {
    /// Appends lines under one lock, so sessions never interleave within
    /// a batch; a write failure is logged once per batch, never fatal to
    /// the session being recorded.
    fn write(&self, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        let mut file = match self.file.lock() {
            Ok(file) => file,
            Err(poisoned) => poisoned.into_inner(),
        };
        let written = lines.iter().try_for_each(|line| writeln!(file, "{line}"));
        if let Err(e) = written.and_then(|()| file.flush()) {
            tracing::warn!("could not write the transcript: {e}");
        }
    }
}
