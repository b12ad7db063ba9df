//! A transcript file for the tests that read a transcript back and for
//! `scripts/record-transcripts`: every session's lines appended as the
//! drivers produce them (each line names its session). The same sink as
//! the `rho` CLI's `--record FILE`, which lives in a binary and so cannot
//! be shared; the core defines the format and the sink's contract
//! (`rho_proto_core::host::TranscriptSink`).

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
    /// Creates (or truncates) the transcript file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            file: Mutex::new(BufWriter::new(File::create(path)?)),
        })
    }
}

impl TranscriptSink for TranscriptFile {
    /// Appends lines under one lock, so sessions never interleave within
    /// a batch; a write failure is reported on stderr once per
    /// batch, never fatal to the session being recorded.
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
            // The test that reads the transcript back then fails on what is
            // missing; this says why.
            eprintln!("could not write the transcript: {e}");
        }
    }
}
