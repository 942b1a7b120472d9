//! HID force-feedback devices: a [`DeviceProfile`] over a [`ReportTransport`].
//!
//! The transport is a small trait so the same decoding, sequence-gap detection, force
//! encoding and reconnect logic runs over hidapi ([`HidapiTransport`]) and over an
//! in-memory link ([`MemoryTransport`]) in tests, benchmarks and simulators.

pub use super::profile::MAX_REPORT_LEN;

use super::profile::{profile_hash, DeviceProfile, ReportCodec};
use super::{CalibrationRequest, DeviceError, DeviceRating, DeviceSample, HapticDevice};
use crate::Vec3;
use crossbeam::queue::ArrayQueue;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Most reports drained in one tick; bounds the tick's time if a device floods.
const MAX_DRAIN: usize = 256;

/// A transport failure; any failure is treated as a disconnect.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TransportError(pub String);

/// Moves raw HID reports (byte 0 = report id for numbered reports, as hidapi does).
pub trait ReportTransport: Send {
    /// Reads one report into `buf`, waiting at most `timeout_ms` (0 = poll). `Ok(0)`
    /// when nothing arrived.
    fn read_timeout(&mut self, buf: &mut [u8], timeout_ms: i32) -> Result<usize, TransportError>;
    /// Writes one report.
    fn write(&mut self, report: &[u8]) -> Result<usize, TransportError>;
    /// Tries to reopen the device after a failure.
    fn reopen(&mut self) -> Result<(), TransportError>;
    /// Where the transport is connected (path), for logs.
    fn describe(&self) -> String;
    /// The device's USB serial number, where it has one.
    fn serial(&self) -> Option<String> {
        None
    }
}

/// Counters a HID device keeps (read them between ticks, e.g. for telemetry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HidCounters {
    /// Input reports decoded.
    pub reports: u64,
    /// Reports the device sent that never arrived (gaps in its sequence counter).
    pub lost: u64,
    /// Reports with another report id (ignored).
    pub foreign: u64,
    /// Reports shorter than the profile's input length (ignored).
    pub short: u64,
    /// Force writes whose value saturated the output field's integer range.
    pub saturated_writes: u64,
    /// Times the device disconnected.
    pub disconnects: u64,
}

/// A HID force-feedback device described by a profile.
pub struct HidDevice<T: ReportTransport> {
    transport: T,
    profile: DeviceProfile,
    codec: ReportCodec,
    calibration: Option<CalibrationRequest>,
    name: String,
    in_buf: [u8; MAX_REPORT_LEN],
    out_buf: [u8; MAX_REPORT_LEN],
    sample: DeviceSample,
    last_sequence_raw: Option<u64>,
    last_time_raw: Option<u64>,
    time_counts: u64,
    heartbeat: u64,
    connected: bool,
    counters: HidCounters,
}

impl<T: ReportTransport> HidDevice<T> {
    /// Wraps an open transport.
    pub fn new(transport: T, profile: DeviceProfile) -> Self {
        let name = format!("hid:{} ({})", profile.name, transport.describe());
        Self {
            transport,
            codec: profile.codec(),
            calibration: profile
                .kinematics
                .is_some()
                .then(CalibrationRequest::default),
            profile,
            name,
            in_buf: [0; MAX_REPORT_LEN],
            out_buf: [0; MAX_REPORT_LEN],
            sample: DeviceSample::ORIGIN,
            last_sequence_raw: None,
            last_time_raw: None,
            time_counts: 0,
            heartbeat: 0,
            connected: true,
            counters: HidCounters::default(),
        }
    }

    /// The device's counters (reports, lost reports, saturations, disconnects).
    pub fn counters(&self) -> HidCounters {
        self.counters
    }

    /// The profile in use.
    pub fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    fn disconnect(&mut self, e: TransportError) -> DeviceError {
        if self.connected {
            self.counters.disconnects += 1;
        }
        self.connected = false;
        DeviceError::Disconnected(e.0)
    }

    /// Decodes the report in `in_buf`, advancing the unwrapped sequence and time.
    fn accept_report(&mut self) {
        let d = self.codec.decode_input(&self.in_buf);
        let step = match (d.sequence_raw, self.last_sequence_raw) {
            (Some(now), Some(last)) => {
                let m = self
                    .profile
                    .input
                    .sequence
                    .and_then(|f| f.ty.modulus())
                    .unwrap_or(1 << 32);
                (now + m - last) % m
            }
            _ => 1,
        };
        if step == 0 {
            // A repeated report (same counter): nothing new.
            return;
        }
        self.counters.lost += step - 1;
        self.last_sequence_raw = d.sequence_raw;
        if let (Some(now), Some(f)) = (d.time_raw, self.profile.input.time) {
            let m = f.ty.modulus().unwrap_or(1 << 32);
            let dt = self.last_time_raw.map_or(0, |last| (now + m - last) % m);
            self.time_counts += dt;
            self.last_time_raw = Some(now);
            self.sample.device_time = self.time_counts as f64 * f.scale;
        }
        self.sample.position = d.position;
        self.sample.buttons = d.buttons;
        self.sample.sequence += step;
        self.counters.reports += 1;
    }
}

impl<T: ReportTransport> HapticDevice for HidDevice<T> {
    fn read(&mut self, _now: f64) -> Result<DeviceSample, DeviceError> {
        if !self.connected {
            return Err(DeviceError::Disconnected("not connected".into()));
        }
        let id = self.profile.input.report_id;
        let len = self.profile.input.length;
        for _ in 0..MAX_DRAIN {
            let n = match self.transport.read_timeout(&mut self.in_buf, 0) {
                Ok(n) => n,
                Err(e) => return Err(self.disconnect(e)),
            };
            if n == 0 {
                break;
            }
            if id != 0 && self.in_buf[0] != id {
                self.counters.foreign += 1;
            } else if n < len {
                self.counters.short += 1;
            } else {
                self.accept_report();
            }
        }
        if self
            .calibration
            .as_ref()
            .is_some_and(CalibrationRequest::take)
        {
            if let Some(position) = self.codec.calibrate() {
                self.sample.position = position;
            }
        }
        Ok(self.sample)
    }

    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        if !self.connected {
            return Err(DeviceError::Disconnected("not connected".into()));
        }
        let force = self.profile.rated_force(force);
        self.heartbeat = self.heartbeat.wrapping_add(1);
        let (len, saturated) = self
            .codec
            .encode_output(&mut self.out_buf, force, self.heartbeat);
        if saturated {
            self.counters.saturated_writes += 1;
        }
        match self.transport.write(&self.out_buf[..len]) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.disconnect(e)),
        }
    }

    fn reconnect(&mut self) -> Result<bool, DeviceError> {
        if self.connected {
            return Ok(true);
        }
        match self.transport.reopen() {
            Ok(()) => {
                self.connected = true;
                self.last_sequence_raw = None;
                self.last_time_raw = None;
                self.zero_force()?;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    fn rating(&self) -> DeviceRating {
        self.profile.device_rating()
    }

    fn calibration_request(&self) -> Option<CalibrationRequest> {
        self.calibration.clone()
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// The profile's name and the hash of its values, and the USB serial number where
    /// the device has one: a changed profile is a device to check again.
    fn identity(&self) -> Option<String> {
        let serial = self
            .transport
            .serial()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "no-serial".into());
        Some(format!(
            "hid:{}:{}:{serial}",
            self.profile.name,
            profile_hash(&self.profile)
        ))
    }

    fn joint_angles(&self) -> Option<[f64; 3]> {
        self.codec.joint_angles()
    }
}

/// A report on the in-memory link.
#[derive(Clone, Copy)]
struct Report {
    len: usize,
    bytes: [u8; MAX_REPORT_LEN],
}

/// The shared state of an in-memory link: bounded lock-free queues both ways.
struct MemoryLink {
    to_host: ArrayQueue<Report>,
    to_device: ArrayQueue<Report>,
    plugged: AtomicBool,
}

/// The host end of an in-memory HID link (what [`HidDevice`] reads and writes).
/// Allocation-free and lock-free, so it also stands in for a device in benchmarks.
pub struct MemoryTransport {
    link: Arc<MemoryLink>,
}

/// The device (firmware) end of an in-memory HID link.
#[derive(Clone)]
pub struct MemoryPeer {
    link: Arc<MemoryLink>,
}

impl MemoryTransport {
    /// A connected pair holding at most `capacity` reports per direction (the oldest
    /// is dropped when full, as a HID input queue does).
    pub fn pair(capacity: usize) -> (MemoryTransport, MemoryPeer) {
        let link = Arc::new(MemoryLink {
            to_host: ArrayQueue::new(capacity),
            to_device: ArrayQueue::new(capacity),
            plugged: AtomicBool::new(true),
        });
        (MemoryTransport { link: link.clone() }, MemoryPeer { link })
    }
}

impl ReportTransport for MemoryTransport {
    fn read_timeout(&mut self, buf: &mut [u8], _timeout_ms: i32) -> Result<usize, TransportError> {
        if !self.link.plugged.load(Ordering::Acquire) {
            return Err(TransportError("in-memory device unplugged".into()));
        }
        match self.link.to_host.pop() {
            Some(r) => {
                let n = r.len.min(buf.len());
                buf[..n].copy_from_slice(&r.bytes[..n]);
                Ok(n)
            }
            None => Ok(0),
        }
    }

    fn write(&mut self, report: &[u8]) -> Result<usize, TransportError> {
        if !self.link.plugged.load(Ordering::Acquire) {
            return Err(TransportError("in-memory device unplugged".into()));
        }
        let mut r = Report {
            len: report.len().min(MAX_REPORT_LEN),
            bytes: [0; MAX_REPORT_LEN],
        };
        r.bytes[..r.len].copy_from_slice(&report[..r.len]);
        self.link.to_device.force_push(r);
        Ok(r.len)
    }

    fn reopen(&mut self) -> Result<(), TransportError> {
        if self.link.plugged.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(TransportError("in-memory device unplugged".into()))
        }
    }

    fn describe(&self) -> String {
        "in-memory".into()
    }
}

impl MemoryPeer {
    /// Sends an input report to the host (drops the oldest if the queue is full).
    pub fn send(&self, report: &[u8]) {
        let mut r = Report {
            len: report.len().min(MAX_REPORT_LEN),
            bytes: [0; MAX_REPORT_LEN],
        };
        r.bytes[..r.len].copy_from_slice(&report[..r.len]);
        self.link.to_host.force_push(r);
    }

    /// Takes the oldest output report the host wrote, copying it into `buf`; returns
    /// its length.
    pub fn receive(&self, buf: &mut [u8]) -> Option<usize> {
        self.link.to_device.pop().map(|r| {
            buf[..r.len].copy_from_slice(&r.bytes[..r.len]);
            r.len
        })
    }

    /// Takes every pending output report and returns the newest (its length).
    pub fn receive_newest(&self, buf: &mut [u8]) -> Option<usize> {
        let mut newest = None;
        while let Some(n) = self.receive(buf) {
            newest = Some(n);
        }
        newest
    }

    /// Simulates unplugging (`false`) or plugging back in (`true`).
    pub fn set_plugged(&self, plugged: bool) {
        if !plugged {
            while self.link.to_host.pop().is_some() {}
        }
        self.link.plugged.store(plugged, Ordering::Release);
    }
}

/// hidapi as a [`ReportTransport`]; reopens by the profile's match on failure.
pub struct HidapiTransport {
    api: hidapi::HidApi,
    profile: DeviceProfile,
    device: Option<hidapi::HidDevice>,
    path: String,
    serial: Option<String>,
}

impl HidapiTransport {
    /// Opens the first HID device the profile matches.
    pub fn open(profile: &DeviceProfile) -> Result<Self, DeviceError> {
        let api = hidapi::HidApi::new().map_err(|e| DeviceError::Open(e.to_string()))?;
        let mut t = Self {
            api,
            profile: profile.clone(),
            device: None,
            path: String::new(),
            serial: None,
        };
        t.reopen().map_err(|e| DeviceError::Open(e.0))?;
        Ok(t)
    }
}

impl ReportTransport for HidapiTransport {
    fn read_timeout(&mut self, buf: &mut [u8], timeout_ms: i32) -> Result<usize, TransportError> {
        let dev = self
            .device
            .as_ref()
            .ok_or_else(|| TransportError("closed".into()))?;
        dev.read_timeout(buf, timeout_ms).map_err(|e| {
            self.device = None;
            TransportError(e.to_string())
        })
    }

    fn write(&mut self, report: &[u8]) -> Result<usize, TransportError> {
        let dev = self
            .device
            .as_ref()
            .ok_or_else(|| TransportError("closed".into()))?;
        dev.write(report).map_err(|e| {
            self.device = None;
            TransportError(e.to_string())
        })
    }

    fn reopen(&mut self) -> Result<(), TransportError> {
        self.device = None;
        self.api
            .refresh_devices()
            .map_err(|e| TransportError(e.to_string()))?;
        let found = self
            .api
            .device_list()
            .find(|d| {
                self.profile.matches(
                    d.vendor_id(),
                    d.product_id(),
                    d.usage_page(),
                    &d.path().to_string_lossy(),
                )
            })
            .map(|d| (d.path().to_owned(), d.serial_number().map(str::to_owned)));
        let (path, serial): (CString, Option<String>) = found.ok_or_else(|| {
            TransportError(format!(
                "no HID device matches profile `{}`",
                self.profile.name
            ))
        })?;
        let dev = self
            .api
            .open_path(&path)
            .map_err(|e| TransportError(format!("{}: {e}", path.to_string_lossy())))?;
        dev.set_blocking_mode(false)
            .map_err(|e| TransportError(e.to_string()))?;
        self.path = path.to_string_lossy().into_owned();
        self.serial = serial;
        self.device = Some(dev);
        Ok(())
    }

    fn describe(&self) -> String {
        self.path.clone()
    }

    fn serial(&self) -> Option<String> {
        self.serial.clone()
    }
}
