//! Where `--record FILE` transcripts go: one file per run, every session's
//! lines appended as the drivers produce them (each line names its
//! session). Shared by both executors.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A transcript file shared by every session of a run.
#[derive(Clone, Debug)]
pub struct TranscriptSink {
    file: Arc<Mutex<BufWriter<File>>>,
}

impl TranscriptSink {
    /// Creates (or truncates) the transcript file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            file: Arc::new(Mutex::new(BufWriter::new(File::create(path)?))),
        })
    }

    /// Appends lines; a write failure is logged once per batch, never
    /// fatal to the session being recorded.
    pub fn write(&self, lines: Vec<String>) {
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
