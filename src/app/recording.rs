//! A recorded session on disk (`palpa serve --record DIR`): `ticks.csv`, one row per
//! haptic tick with its safety state ([`tick_csv`](crate::haptic::tick_csv)), written by a thread of its own from the
//! haptic thread's [`TickSource`], and the inputs the session ran with, copied. The
//! haptic thread never touches the file: it pushes records into a wait-free ring and
//! the writer drains it every 10 ms, flushing at least every 100 ms, so the file is
//! complete up to the last flush even if the process is killed, and to the haptic
//! thread's last (zero-force) record when it is stopped.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::haptic::tick_csv::{TickRow, SESSION_HEADER};
use crate::haptic::tick_ring::TickSource;

/// How often the writer drains the ring.
const DRAIN_PERIOD: Duration = Duration::from_millis(10);
/// Longest time rows stay in the writer's buffer before they reach the file.
const FLUSH_PERIOD: Duration = Duration::from_millis(100);

/// One device's `ticks.csv` being written.
pub struct TickFile {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    writer: JoinHandle<std::io::Result<TickFileSummary>>,
}

/// What a finished `ticks.csv` holds.
#[derive(Clone, Debug, PartialEq)]
pub struct TickFileSummary {
    /// Rows written.
    pub rows: u64,
    /// Ticks dropped because the writer fell behind the haptic thread (the ring was
    /// full); none is the normal case.
    pub dropped: u64,
    /// Loop time of the first and the last row (s).
    pub span: Option<(f64, f64)>,
}

impl TickFile {
    /// Creates `path` with the header and starts the thread writing what `source`
    /// receives.
    pub fn create(path: &Path, source: TickSource) -> std::io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "{SESSION_HEADER}")?;
        out.flush()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let writer = std::thread::Builder::new()
            .name("palpa-record".into())
            .spawn(move || write_ticks(source, out, &s))?;
        Ok(Self {
            path: path.to_path_buf(),
            stop,
            writer,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes what is left in the ring (call after the haptic thread stopped, so its
    /// zero-force record is there), flushes and syncs the file.
    pub fn finish(self) -> std::io::Result<TickFileSummary> {
        self.stop.store(true, Ordering::Release);
        self.writer
            .join()
            .map_err(|_| std::io::Error::other("the recording's writer thread panicked"))?
    }
}

fn write_ticks(
    mut source: TickSource,
    mut out: BufWriter<File>,
    stop: &AtomicBool,
) -> std::io::Result<TickFileSummary> {
    let mut rows = 0;
    let mut span: Option<(f64, f64)> = None;
    let mut last_flush = Instant::now();
    loop {
        // Read before draining: once the haptic thread is gone or a stop is asked, this
        // drain is the last and gets everything.
        let last = stop.load(Ordering::Acquire) || source.writer_gone();
        while let Some(record) = source.pop() {
            TickRow::of(&record).write_with_safety(&mut out, record.state)?;
            rows += 1;
            span = Some((span.map_or(record.t, |s| s.0), record.t));
        }
        if last {
            out.flush()?;
            out.get_ref().sync_data()?;
            return Ok(TickFileSummary {
                rows,
                dropped: source.dropped(),
                span,
            });
        }
        if last_flush.elapsed() >= FLUSH_PERIOD {
            out.flush()?;
            last_flush = Instant::now();
        }
        std::thread::sleep(DRAIN_PERIOD);
    }
}

/// A session directory: creates it (and its parents) and writes the copies of the
/// session's inputs into it.
pub struct SessionDir {
    dir: PathBuf,
}

impl SessionDir {
    /// Creates `dir`; an existing `ticks.csv` in it is an error, so no recording is
    /// overwritten.
    pub fn create(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let ticks = dir.join("ticks.csv");
        if ticks.exists() {
            return Err(format!(
                "{}: a recording is already there; give another directory",
                ticks.display()
            ));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The `ticks.csv` of device `index` (0: `ticks.csv`; further devices:
    /// `ticks-2.csv`, …).
    pub fn ticks_path(&self, index: usize) -> PathBuf {
        match index {
            0 => self.dir.join("ticks.csv"),
            i => self.dir.join(format!("ticks-{}.csv", i + 1)),
        }
    }

    /// Writes `text` to the file `name` in the directory.
    pub fn write(&self, name: &str, text: &str) -> Result<PathBuf, String> {
        let path = self.dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::haptic::tick_ring::tick_ring;
    use crate::haptic::{SafetyState, TickRecord};
    use crate::Vec3;

    fn record(t: f64) -> TickRecord {
        TickRecord {
            t,
            probe: Vec3::new(0.01, 0.0, -0.002),
            buttons: 0,
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
        let session = SessionDir::create(&dir.path().join("a/b")).unwrap();
        let (mut sink, source) = tick_ring(8);
        // More than the ring holds before the writer starts: 2 dropped.
        for k in 0..10 {
            sink.push(record(k as f64 * 1e-3));
        }
        let file = TickFile::create(&session.ticks_path(0), source).unwrap();
        // The writer drains the ring (within 10 s even on a loaded machine).
        let deadline = Instant::now() + Duration::from_secs(10);
        while sink.free_slots() < 8 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        for k in 10..18 {
            sink.push(record(k as f64 * 1e-3));
        }
        drop(sink);
        let summary = file.finish().unwrap();
        assert_eq!(summary.dropped, 2);
        assert_eq!(summary.rows, 16);
        assert_eq!(summary.span, Some((0.0, 0.017)));
        let text = std::fs::read_to_string(session.ticks_path(0)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], SESSION_HEADER);
        assert_eq!(lines.len(), 17);
        assert_eq!(lines[16], "0.017,0.01,0,-0.002,0,0,0.017,0.002,1,normal");
        assert!(
            SessionDir::create(&dir.path().join("a/b")).is_err(),
            "an existing recording is not overwritten"
        );
    }
}
