//! Stream recordings (`.palparec`): every message of the visual stream as a client
//! received it, framed so a file cut off at any moment reads back up to its last whole
//! record.
//!
//! Layout (little-endian): the 8 bytes `PALPAREC`, a `u32` format version (2), then per
//! message a record: `u32` length n, `u64` receive time (µs since the Unix epoch), the n
//! message bytes exactly as received (`palpa_protocol::decode_server`), and a `u32`
//! CRC-32 (IEEE) of the length, time and message bytes. Version 1 had no CRC and is still
//! read. A record cut short or failing its CRC ends the reading: it and what follows are
//! the torn tail, reported, not an error.
//!
//! The writer hands each record to a thread of its own, which writes it whole at once
//! and syncs the file to the disk at least every [`SYNC_PERIOD`] (one frame at 30 Hz), so
//! a kill loses at most the records in flight and a power loss at most a frame period.
//! MCAP was considered: palpa's messages are its own bincode, which no MCAP tool decodes,
//! and MCAP's crash-safety comes from chunks (a whole chunk lost) or from unchunked records
//! without a checksum; this framing gives per-record integrity at 8 bytes a record.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use palpa_protocol as wire;

/// First bytes of a recording file.
pub const RECORDING_MAGIC: &[u8; 8] = b"PALPAREC";
/// The format version written.
pub const RECORDING_VERSION: u32 = 2;
/// Longest time a written record waits before it is synced to the disk.
pub const SYNC_PERIOD: Duration = Duration::from_millis(33);
/// Records queued for the writer thread before further ones are dropped (and counted).
const QUEUE: usize = 1024;

#[derive(Default)]
struct Shared {
    failure: Mutex<Option<String>>,
    records: AtomicU64,
    bytes: AtomicU64,
    dropped: AtomicU64,
}

impl Shared {
    fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Writes a stream recording (see the module's documentation).
pub struct Recorder {
    path: PathBuf,
    queue: Option<SyncSender<Vec<u8>>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What a finished stream recording holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecorderSummary {
    /// Records in the file.
    pub records: u64,
    /// Records dropped because the writer fell behind.
    pub dropped: u64,
    /// Why the recording ended early (a write failed), if it did.
    pub failure: Option<String>,
}

impl Recorder {
    /// Creates the new file `path` (an existing file, link or FIFO there is an error:
    /// `O_CREAT | O_EXCL`, which never follows a link) and writes the header.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Self::start(file, path)
    }

    /// Starts the recording in `file`, new and empty (created by the caller, at `path`).
    pub fn start(mut file: File, path: &Path) -> std::io::Result<Self> {
        let mut header = RECORDING_MAGIC.to_vec();
        header.extend_from_slice(&RECORDING_VERSION.to_le_bytes());
        file.write_all(&header)?;
        file.sync_data()?;
        let shared = Arc::new(Shared::default());
        let (queue, records) = std::sync::mpsc::sync_channel(QUEUE);
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("palpa-record-stream".into())
            .spawn(move || write_records(file, header.len() as u64, &records, &s))?;
        Ok(Self {
            path: path.to_path_buf(),
            queue: Some(queue),
            shared,
            thread: Some(thread),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the recording failed, once a write failed.
    pub fn failure(&self) -> Option<String> {
        self.shared.failure()
    }

    /// Queues one received message (with the time now); an error once the writer failed.
    pub fn write(&mut self, message: &[u8]) -> std::io::Result<()> {
        if let Some(failure) = self.shared.failure() {
            return Err(std::io::Error::other(failure));
        }
        let record = frame(crate::unix_now_us(), message);
        match self.queue.as_ref().map(|q| q.try_send(record)) {
            Some(Ok(())) => Ok(()),
            Some(Err(TrySendError::Full(_))) => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            _ => Err(std::io::Error::other(self.shared.failure().unwrap_or_else(
                || format!("{}: the recording's writer stopped", self.path.display()),
            ))),
        }
    }

    /// Waits until every queued record is written (a no-op kept for callers that flushed
    /// the old buffered writer; [`Recorder::finish`] ends the recording).
    pub fn flush(&mut self) -> std::io::Result<()> {
        match self.shared.failure() {
            Some(f) => Err(std::io::Error::other(f)),
            None => Ok(()),
        }
    }

    /// Writes what is queued, syncs, closes and says what the file holds.
    pub fn finish(mut self) -> RecorderSummary {
        self.stop()
    }

    fn stop(&mut self) -> RecorderSummary {
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                let mut f = self
                    .shared
                    .failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                f.get_or_insert_with(|| "the stream writer thread panicked".into());
            }
        }
        RecorderSummary {
            records: self.shared.records.load(Ordering::Relaxed),
            dropped: self.shared.dropped.load(Ordering::Relaxed),
            failure: self.shared.failure(),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One record's bytes.
fn frame(t_us: u64, message: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(16 + message.len());
    r.extend_from_slice(&(message.len() as u32).to_le_bytes());
    r.extend_from_slice(&t_us.to_le_bytes());
    r.extend_from_slice(message);
    let crc = crc32fast::hash(&r);
    r.extend_from_slice(&crc.to_le_bytes());
    r
}

fn write_records(mut file: File, mut committed: u64, records: &Receiver<Vec<u8>>, s: &Shared) {
    let mut last_sync = Instant::now();
    let mut dirty = false;
    let fail = |file: &File, committed: u64, what: String| {
        tracing_free_log(&what);
        let _ = file.set_len(committed);
        *s.failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(what);
    };
    loop {
        let record = match records.recv_timeout(SYNC_PERIOD) {
            Ok(r) => Some(r),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if let Some(r) = record {
            if let Err(e) = file.write_all(&r) {
                return fail(&file, committed, e.to_string());
            }
            committed += r.len() as u64;
            s.records.fetch_add(1, Ordering::Relaxed);
            s.bytes.store(committed, Ordering::Relaxed);
            dirty = true;
        }
        if dirty && last_sync.elapsed() >= SYNC_PERIOD {
            if let Err(e) = file.sync_data() {
                return fail(&file, committed, e.to_string());
            }
            dirty = false;
            last_sync = Instant::now();
        }
    }
    if let Err(e) = file.sync_data() {
        fail(&file, committed, e.to_string());
    }
}

/// The stream client has no logger of its own: a failure goes to stderr at once.
fn tracing_free_log(what: &str) {
    eprintln!("error: stream recording: {what}");
}

/// Where and why a recording stops being readable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Offset of the first byte not read.
    pub offset: usize,
    /// Bytes from there to the end of the file.
    pub bytes: usize,
    /// What is wrong there (cut short, or a CRC mismatch).
    pub reason: String,
}

/// A recording read back: its whole records, and the torn tail if it has one.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamRecording {
    /// Format version of the file.
    pub version: u32,
    /// (receive time µs, message) per whole record.
    pub messages: Vec<(u64, wire::ServerMessage)>,
    /// What follows the last whole record, if anything does (a recording cut off by a
    /// crash or a full disk).
    pub torn: Option<TornTail>,
}

impl std::ops::Deref for StreamRecording {
    type Target = [(u64, wire::ServerMessage)];
    fn deref(&self) -> &Self::Target {
        &self.messages
    }
}

/// Reads a recording written by [`Recorder`] up to its last whole record; an error only
/// when the file is not a recording or a whole record does not decode.
pub fn read_recording(bytes: &[u8]) -> Result<StreamRecording, String> {
    let mut header = RECORDING_MAGIC.to_vec();
    header.extend_from_slice(&RECORDING_VERSION.to_le_bytes());
    if bytes.len() < header.len() && header.starts_with(bytes) {
        // Created, and stopped before its header was written whole.
        return Ok(StreamRecording {
            version: RECORDING_VERSION,
            messages: Vec::new(),
            torn: (!bytes.is_empty()).then(|| TornTail {
                offset: 0,
                bytes: bytes.len(),
                reason: "the header cut short".into(),
            }),
        });
    }
    let rest = bytes
        .strip_prefix(RECORDING_MAGIC.as_slice())
        .ok_or("not a palpa recording (missing PALPAREC header)")?;
    let (version, mut rest) = rest.split_at_checked(4).ok_or("truncated header")?;
    let version = u32::from_le_bytes(version.try_into().expect("4 bytes"));
    if !(1..=RECORDING_VERSION).contains(&version) {
        return Err(format!("unsupported recording version {version}"));
    }
    let mut messages = Vec::new();
    let mut torn = None;
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        match next_record(rest, version) {
            Ok((t, message, tail)) => {
                let decoded = wire::decode_server(message)
                    .map_err(|e| format!("record at byte {offset}: {e}"))?;
                messages.push((t, decoded));
                rest = tail;
            }
            Err(reason) => {
                torn = Some(TornTail {
                    offset,
                    bytes: rest.len(),
                    reason,
                });
                break;
            }
        }
    }
    Ok(StreamRecording {
        version,
        messages,
        torn,
    })
}

/// The record at the start of `rest`: (time, message, what follows), or why it is not
/// whole.
fn next_record(rest: &[u8], version: u32) -> Result<(u64, &[u8], &[u8]), String> {
    let cut = |need: usize| format!("a record cut short ({} of {need} bytes)", rest.len());
    let (n, t) = if version == 1 {
        let head = rest.get(..12).ok_or_else(|| cut(12))?;
        (
            u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) as usize,
            u64::from_le_bytes(head[..8].try_into().expect("8 bytes")),
        )
    } else {
        let head = rest.get(..12).ok_or_else(|| cut(16))?;
        (
            u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize,
            u64::from_le_bytes(head[4..12].try_into().expect("8 bytes")),
        )
    };
    let trailer = if version == 1 { 0 } else { 4 };
    let whole = 12usize.saturating_add(n).saturating_add(trailer);
    let record = rest.get(..whole).ok_or_else(|| cut(whole))?;
    if version > 1 {
        let stored = u32::from_le_bytes(record[whole - 4..].try_into().expect("4 bytes"));
        if crc32fast::hash(&record[..whole - 4]) != stored {
            return Err("a record whose CRC does not match".into());
        }
    }
    Ok((t, &record[12..12 + n], &rest[whole..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(k: u64) -> Vec<u8> {
        wire::encode_server(&wire::ServerMessage::HapticStats(wire::HapticStats {
            ticks: k,
            period_p50_s: 1e-3,
            period_p99_s: 1e-3,
            period_max_s: 1e-3,
            compute_p99_s: 1e-5,
            missed_deadlines: 0,
            clamped_forces: 0,
        }))
    }

    #[test]
    fn a_recording_cut_anywhere_reads_up_to_its_last_whole_record() {
        let dir = std::env::temp_dir().join(format!("palparec-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let mut r = Recorder::create(&dir).unwrap();
        for k in 0..5 {
            r.write(&message(k)).unwrap();
        }
        let summary = r.finish();
        assert_eq!((summary.records, summary.failure), (5, None));
        let bytes = std::fs::read(&dir).unwrap();
        assert!(
            Recorder::create(&dir).is_err(),
            "an existing file is refused"
        );
        std::fs::remove_file(&dir).unwrap();
        for cut in 0..12 {
            let read = read_recording(&bytes[..cut]).unwrap();
            assert_eq!(
                (read.len(), read.torn.is_some()),
                (0, cut > 0),
                "cut at {cut}"
            );
        }
        assert!(read_recording(b"PALPA").is_ok() && read_recording(b"NOTPALPA").is_err());
        let whole = read_recording(&bytes).unwrap();
        assert_eq!((whole.len(), whole.torn.clone()), (5, None));
        let record = (bytes.len() - 12) / 5;
        for cut in 12..bytes.len() {
            let read = read_recording(&bytes[..cut]).unwrap();
            let complete = (cut - 12) / record;
            assert_eq!(read.len(), complete, "cut at {cut}");
            assert_eq!(
                read.torn.is_some(),
                (cut - 12) % record != 0,
                "cut at {cut}"
            );
        }
        let mut flipped = bytes.clone();
        flipped[12 + record + 20] ^= 1;
        let read = read_recording(&flipped).unwrap();
        assert_eq!(read.len(), 1);
        assert!(read.torn.unwrap().reason.contains("CRC"));
    }
}
