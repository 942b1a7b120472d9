//! The one writer of per-tick CSV files, for `palpa serve --record` (a session's
//! `ticks.csv`), `palpa record` (a device's motion) and `palpa replay --record`.
//!
//! Durability: rows are appended whole (one `write` of every row drained, never a row
//! split across two writes by the writer), the data is synced to the disk at least every
//! [`SYNC_PERIOD`], so after a crash or power loss at any moment the file holds every row
//! older than about [`DRAIN_PERIOD`] + [`SYNC_PERIOD`]; a torn last row (a write cut short
//! by the kill) is what the reader drops. A failed write truncates the file back to its
//! last whole row, is logged at once, and ends the recording: [`RecordingHealth`] says
//! so to whoever watches, and the summary counts only rows that reached the file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::device::replay::{write_row, HEADER_WITH_FORCE};
use crate::haptic::tick_csv::{TickRow, SESSION_HEADER};
use crate::haptic::tick_ring::TickSource;
use crate::haptic::TickRecord;

/// How often the writer thread drains the ring.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(10);
/// Longest time a written row waits before it is synced to the disk.
pub const SYNC_PERIOD: Duration = Duration::from_millis(50);

/// Which columns the rows have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowFormat {
    /// A session's ticks (`t,x,y,z,fx,fy,fz,depth,contact,safety`; scene frame).
    Session,
    /// A device's motion as a trajectory (`t,x,y,z,buttons,fx,fy,fz`; device frame).
    Motion,
}

impl RowFormat {
    fn header(self) -> &'static str {
        match self {
            RowFormat::Session => SESSION_HEADER,
            RowFormat::Motion => HEADER_WITH_FORCE,
        }
    }

    fn write(self, out: &mut Vec<u8>, r: &TickRecord) {
        // Writing into a Vec cannot fail.
        let _ = match self {
            RowFormat::Session => TickRow::of(r).write_with_safety(out, r.state),
            RowFormat::Motion => write_row(out, r.t, r.probe, r.buttons, Some(r.force)),
        };
    }
}

/// A per-tick CSV being appended to: rows reach the file whole, and only rows that did
/// are counted.
pub struct TickWriter {
    file: File,
    path: PathBuf,
    format: RowFormat,
    pending: Vec<u8>,
    pending_rows: u64,
    pending_span: Option<(f64, f64)>,
    committed: u64,
    rows: u64,
    span: Option<(f64, f64)>,
    last_sync: Instant,
    dirty: bool,
}

impl TickWriter {
    /// Starts the CSV in `file` (new and empty, at `path`): the `preamble` lines (each
    /// written as a `#` comment) and the header, written and synced at once.
    pub fn start(
        file: File,
        path: &Path,
        format: RowFormat,
        preamble: &[String],
    ) -> std::io::Result<Self> {
        let mut w = Self {
            file,
            path: path.to_path_buf(),
            format,
            pending: Vec::with_capacity(64 * 1024),
            pending_rows: 0,
            pending_span: None,
            committed: 0,
            rows: 0,
            span: None,
            last_sync: Instant::now(),
            dirty: false,
        };
        for line in preamble {
            writeln!(w.pending, "# {line}")?;
        }
        writeln!(w.pending, "{}", format.header())?;
        w.commit()?;
        w.sync()?;
        Ok(w)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds one tick's row (written at the next [`TickWriter::commit`]).
    pub fn push(&mut self, r: &TickRecord) {
        self.format.write(&mut self.pending, r);
        self.pending_rows += 1;
        self.pending_span = Some((self.pending_span.map_or(r.t, |s| s.0), r.t));
    }

    /// Writes the rows added since the last commit in one piece. On an error the file is
    /// cut back to its last whole row and the rows are not counted.
    pub fn commit(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.file.write_all(&self.pending) {
            // Best effort: a disk that refused the write may refuse this too; the reader
            // drops a torn last row either way.
            let _ = self.file.set_len(self.committed);
            self.pending.clear();
            return Err(e);
        }
        self.committed += self.pending.len() as u64;
        self.rows += self.pending_rows;
        if let Some((a, b)) = self.pending_span.take() {
            self.span = Some((self.span.map_or(a, |s| s.0), b));
        }
        self.pending.clear();
        self.pending_rows = 0;
        self.dirty = true;
        Ok(())
    }

    /// Syncs the written rows to the disk.
    pub fn sync(&mut self) -> std::io::Result<()> {
        if self.dirty {
            self.file.sync_data()?;
            self.dirty = false;
        }
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Syncs if the last sync is [`SYNC_PERIOD`] old.
    pub fn sync_if_due(&mut self) -> std::io::Result<()> {
        if self.last_sync.elapsed() >= SYNC_PERIOD {
            self.sync()?;
        }
        Ok(())
    }

    /// Rows in the file.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Loop time of the first and last row in the file (s).
    pub fn span(&self) -> Option<(f64, f64)> {
        self.span
    }
}

/// What a finished per-tick file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct TickFileSummary {
    /// Rows in the file.
    pub rows: u64,
    /// Ticks dropped because the writer fell behind the haptic thread (the ring was
    /// full); none is the normal case.
    pub dropped: u64,
    /// Loop time of the first and the last row in the file (s).
    pub span: Option<(f64, f64)>,
    /// Why the recording ended early (a write failed), if it did.
    pub failure: Option<String>,
}

/// Whether a recording is still being written, for whoever watches it (serve's main
/// loop): the first failure, set once by the writer the moment it happens.
#[derive(Debug, Default)]
pub struct RecordingHealth {
    failure: OnceLock<String>,
}

impl RecordingHealth {
    /// The failure that ended the recording, if one did.
    pub fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// Records `message` as the failure (the first one wins) and logs it.
    pub fn fail(&self, message: String) {
        tracing::error!("recording ended: {message}");
        let _ = self.failure.set(message);
    }
}

/// A per-tick file written by a thread of its own from a haptic thread's tick ring.
pub struct TickFile {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    health: Arc<RecordingHealth>,
    rows: Arc<AtomicU64>,
    writer: JoinHandle<TickFileSummary>,
}

/// Nice value of the tick writer where allowed: a larger share than normal threads.
const WRITER_NICE: i32 = -10;

impl TickFile {
    /// Starts the thread writing what `source` receives through `writer`; a failure is
    /// reported to `health`.
    pub fn start(
        writer: TickWriter,
        source: TickSource,
        health: Arc<RecordingHealth>,
    ) -> std::io::Result<Self> {
        let path = writer.path().to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let rows = Arc::new(AtomicU64::new(0));
        let (s, h, r) = (stop.clone(), health.clone(), rows.clone());
        let writer = std::thread::Builder::new()
            .name("palpa-record".into())
            .spawn(move || {
                // Under load a normal-share writer drained late: a kill lost more than
                // the 100 ms of ticks a recording promises (docs/benchmarks.md).
                crate::rt::raise_thread_share(WRITER_NICE);
                write_ticks(source, writer, &s, &h, &r)
            })?;
        Ok(Self {
            path,
            stop,
            health,
            rows,
            writer,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recording's health (its failure, once one happened).
    pub fn health(&self) -> &Arc<RecordingHealth> {
        &self.health
    }

    /// Rows in the file so far.
    pub fn rows(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }

    /// Writes what is left in the ring (call after the haptic thread stopped, so its
    /// zero-force record is there), syncs the file and says what it holds.
    pub fn finish(self) -> TickFileSummary {
        self.stop.store(true, Ordering::Release);
        self.writer.join().unwrap_or_else(|_| {
            let failure = "the recording's writer thread panicked".to_string();
            self.health
                .fail(format!("{}: {failure}", self.path.display()));
            TickFileSummary {
                rows: self.rows.load(Ordering::Relaxed),
                dropped: 0,
                span: None,
                failure: Some(failure),
            }
        })
    }
}

fn write_ticks(
    mut source: TickSource,
    mut out: TickWriter,
    stop: &AtomicBool,
    health: &RecordingHealth,
    rows: &AtomicU64,
) -> TickFileSummary {
    let failure = loop {
        // Read before draining: once the haptic thread is gone or a stop is asked, this
        // drain is the last and gets everything.
        let last = stop.load(Ordering::Acquire) || source.writer_gone();
        // Another file of the recording failed: the recording as a whole ends.
        if let Some(failure) = health.failure() {
            let _ = out.sync();
            break Some(format!(
                "stopped with the rest of the recording ({failure})"
            ));
        }
        while let Some(record) = source.pop() {
            out.push(&record);
        }
        let written = out
            .commit()
            .and_then(|()| if last { out.sync() } else { out.sync_if_due() });
        rows.store(out.rows(), Ordering::Relaxed);
        if let Err(e) = written {
            let message = format!("{}: {e}", out.path().display());
            health.fail(message.clone());
            break Some(message);
        }
        if last {
            break None;
        }
        std::thread::sleep(DRAIN_PERIOD);
    };
    TickFileSummary {
        rows: out.rows(),
        dropped: source.dropped(),
        span: out.span(),
        failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::haptic::tick_ring::tick_ring;
    use crate::haptic::SafetyState;
    use crate::Vec3;

    fn record(t: f64) -> TickRecord {
        TickRecord {
            t,
            probe: Vec3::new(0.01, 0.0, -0.002),
            buttons: 0,
            orientation: None,
            gripper: None,
            desired: Vec3::new(0.0, 0.0, 1.0),
            force: Vec3::new(0.0, 0.0, t),
            state: SafetyState::Normal,
            model_in_contact: true,
            depth: 0.002,
            sample_age: 0.0,
            model_age: 0.0,
        }
    }

    #[test]
    fn every_pushed_tick_becomes_a_row_and_a_full_ring_counts_its_drops() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ticks.csv");
        let file = std::fs::File::create(&path).unwrap();
        let writer = TickWriter::start(file, &path, RowFormat::Session, &[]).unwrap();
        let (mut sink, source) = tick_ring(8);
        // More than the ring holds before the writer starts: 2 dropped.
        for k in 0..10 {
            sink.push(record(k as f64 * 1e-3));
        }
        let health = Arc::new(RecordingHealth::default());
        let file = TickFile::start(writer, source, health.clone()).unwrap();
        // The writer drains the ring (within 10 s even on a loaded machine).
        let deadline = Instant::now() + Duration::from_secs(10);
        while sink.free_slots() < 8 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        for k in 10..18 {
            sink.push(record(k as f64 * 1e-3));
        }
        drop(sink);
        let summary = file.finish();
        assert_eq!(summary.dropped, 2);
        assert_eq!(summary.rows, 16);
        assert_eq!(summary.span, Some((0.0, 0.017)));
        assert_eq!(summary.failure, None);
        assert_eq!(health.failure(), None);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], SESSION_HEADER);
        assert_eq!(lines.len(), 17);
        assert_eq!(
            lines[16],
            "0.017,0.01,0,-0.002,0,0,0.017,0.002,1,normal,0,,,,,"
        );
    }

    #[test]
    fn a_failed_write_ends_the_recording_at_once_and_counts_only_whole_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ticks.csv");
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = TickWriter::start(file, &path, RowFormat::Session, &[]).unwrap();
        writer.push(&record(0.001));
        writer.commit().unwrap();
        // The file's descriptor now writes to /dev/full: ENOSPC, as a full disk.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        writer.file = full;
        let (mut sink, source) = tick_ring(8);
        sink.push(record(0.002));
        let health = Arc::new(RecordingHealth::default());
        let file = TickFile::start(writer, source, health.clone()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while health.failure().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            health
                .failure()
                .is_some_and(|f| f.contains("No space left")),
            "{:?}",
            health.failure()
        );
        let summary = file.finish();
        assert_eq!(summary.rows, 1, "the failed row is not counted");
        assert!(summary.failure.is_some());
    }
}
