//! `record`: wraps any device and writes the trajectory it sees (with the forces sent
//! to it) as a CSV that `replay` accepts.
//!
//! The wrapped device only pushes rows into a bounded lock-free queue (dropping, and
//! counting, rows if the writer falls 4 s behind); a writer thread turns them into CSV
//! lines and flushes them at least every 100 ms and on [`Recorder::finish`], so the file
//! is complete up to the last flush even if the process is killed, and complete to the
//! last tick when it is stopped (Ctrl-C included).

use super::replay::{write_row, HEADER_WITH_FORCE};
use super::{
    CalibrationRequest, DeviceError, DeviceRating, DeviceSample, ExternalPacer, HapticDevice,
};
use crate::rt::DropCounter;
use crate::Vec3;
use crossbeam::queue::ArrayQueue;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Rows the queue holds (4 s at 1 kHz).
const QUEUE_ROWS: usize = 4096;

#[derive(Clone, Copy)]
struct Row {
    t: f64,
    position: Vec3,
    buttons: u32,
    force: Vec3,
}

struct Shared {
    rows: ArrayQueue<Row>,
    dropped: DropCounter,
    stop: AtomicBool,
}

/// The writer side of a recording: owns the file and its thread.
pub struct Recorder {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<std::io::Result<u64>>>,
}

/// What a finished recording wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSummary {
    /// Rows written.
    pub rows: u64,
    /// Rows dropped because the writer fell behind.
    pub dropped: u64,
}

/// A device that records every tick of the device it wraps.
pub struct RecordingDevice<D: HapticDevice> {
    inner: D,
    shared: Arc<Shared>,
    pending: Option<DeviceSample>,
    pending_t: f64,
}

impl Recorder {
    /// Creates `path` (header written at once) and starts the writer thread.
    pub fn create(path: &Path) -> std::io::Result<Recorder> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "{HEADER_WITH_FORCE}")?;
        out.flush()?;
        let shared = Arc::new(Shared {
            rows: ArrayQueue::new(QUEUE_ROWS),
            dropped: DropCounter::default(),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let writer = std::thread::Builder::new()
            .name("palpa-record".into())
            .spawn(move || write_rows(&s, out))?;
        Ok(Recorder {
            shared,
            writer: Some(writer),
        })
    }

    /// Wraps `device` so every read + force write becomes one row of this recording.
    pub fn wrap<D: HapticDevice>(&self, device: D) -> RecordingDevice<D> {
        RecordingDevice {
            inner: device,
            shared: self.shared.clone(),
            pending: None,
            pending_t: 0.0,
        }
    }

    /// Writes every queued row, flushes and closes the file.
    pub fn finish(mut self) -> std::io::Result<RecordSummary> {
        self.stop_writer()
    }

    fn stop_writer(&mut self) -> std::io::Result<RecordSummary> {
        self.shared.stop.store(true, Ordering::Release);
        let rows = match self.writer.take() {
            Some(h) => h
                .join()
                .map_err(|_| std::io::Error::other("record writer thread panicked"))??,
            None => 0,
        };
        Ok(RecordSummary {
            rows,
            dropped: self.shared.dropped.get(),
        })
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if self.writer.is_some() {
            if let Err(e) = self.stop_writer() {
                tracing::error!("recording not completed: {e}");
            }
        }
    }
}

fn write_rows(shared: &Shared, mut out: BufWriter<File>) -> std::io::Result<u64> {
    let mut rows = 0;
    let mut last_flush = Instant::now();
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        while let Some(r) = shared.rows.pop() {
            write_row(&mut out, r.t, r.position, r.buttons, Some(r.force))?;
            rows += 1;
        }
        if stopping {
            out.flush()?;
            out.get_ref().sync_data()?;
            return Ok(rows);
        }
        if last_flush.elapsed() >= Duration::from_millis(100) {
            out.flush()?;
            last_flush = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl<D: HapticDevice> RecordingDevice<D> {
    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }
}

impl<D: HapticDevice> HapticDevice for RecordingDevice<D> {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        let s = self.inner.read(now)?;
        self.pending = Some(s);
        self.pending_t = now;
        Ok(s)
    }

    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        let result = self.inner.write_force(force);
        if let Some(s) = self.pending.take() {
            let row = Row {
                t: self.pending_t,
                position: s.position,
                buttons: s.buttons,
                force,
            };
            let finite = s.position.iter().chain(force.iter()).all(|c| c.is_finite());
            if finite && self.shared.rows.push(row).is_err() {
                self.shared.dropped.add();
            }
        }
        result
    }

    fn zero_force(&mut self) -> Result<(), DeviceError> {
        self.inner.zero_force()
    }

    fn reconnect(&mut self) -> Result<bool, DeviceError> {
        self.inner.reconnect()
    }

    fn rating(&self) -> DeviceRating {
        self.inner.rating()
    }

    fn calibration_request(&self) -> Option<CalibrationRequest> {
        self.inner.calibration_request()
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn external_pacer(&mut self) -> Option<Box<dyn ExternalPacer>> {
        self.inner.external_pacer()
    }

    fn resident_memory(&self, memory: &mut crate::rt::ResidentSet) {
        self.inner.resident_memory(memory);
    }
}
