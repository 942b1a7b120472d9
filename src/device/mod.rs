//! Haptic devices: the [`HapticDevice`] trait and its backends.
//!
//! * [`hid`] — any HID force-feedback device described by a [`profile::DeviceProfile`]
//!   (TOML), over hidapi or an in-memory transport;
//! * [`haply`] — a Haply Inverse3 through Haply's local Inverse Service (WebSocket);
//! * [`sim`] — a virtual stylus following a scripted motion or external input;
//! * [`replay`] — a recorded trajectory CSV;
//! * (`palpa record` writes what a device does: the `recording` module);
//! * [`mapped`] and [`force_log`] — decorators: the workspace mapping into the scene,
//!   and remembering (and zeroing on drop) the commanded force;
//! * [`backends`] — which backends this machine can use;
//! * [`choice`] — the one `--device` parser, and opening what it names;
//! * [`kinematics`] — joint encoders to tip position and tip force to motor currents
//!   for capstan (WoodenHaptics) and delta arms;
//! * [`check`] — `palpa devices check`: the guided first-power-on test, and the record
//!   of which devices passed it;
//! * [`sdk`] — vendor SDKs loaded at run time: OpenHaptics HDAPI (whose scheduler paces
//!   the haptic loop, see [`ExternalPacer`]) and the Force Dimension SDK.
//!
//! Every backend works in device SI units (m, N, s) after its own scaling and axis
//! mapping; the haptic loop maps the device frame to the scene.

pub mod backends;
pub mod check;
pub mod choice;
pub mod force_log;
pub mod haply;
pub mod hid;
pub mod kinematics;
pub mod mapped;
pub mod profile;
pub mod replay;
pub mod sdk;
pub mod sim;

use crate::rt::ResidentSet;
use crate::Vec3;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A rotation: the stylus's orientation, from the tool frame to the device frame.
///
/// The tool frame is CHAI3D's: the stylus runs along the tool's +x axis, from the tip
/// towards the hand; +z is the tool's up when the stylus lies pointing away from the user.
pub type Orientation = nalgebra::UnitQuaternion<f64>;

/// The newest state the device reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceSample {
    /// Stylus tip position (m, device frame after the profile's axis mapping).
    pub position: Vec3,
    /// Button bit mask (bit 0 = primary button).
    pub buttons: u32,
    /// Device time stamp (s) — the device's own clock, not the host's.
    pub device_time: f64,
    /// Sample sequence number; unchanged between two reads means no new sample.
    pub sequence: u64,
    /// The stylus's orientation ([`Orientation`], device frame); `None` for a device
    /// that senses only the tip's position.
    pub orientation: Option<Orientation>,
    /// The gripper's opening (rad, 0 closed); `None` for a device without a gripper.
    pub gripper: Option<f64>,
}

impl DeviceSample {
    /// A sample at the origin with no buttons, before the device reported anything.
    pub const ORIGIN: Self = Self {
        position: Vec3::new(0.0, 0.0, 0.0),
        buttons: 0,
        device_time: 0.0,
        sequence: 0,
        orientation: None,
        gripper: None,
    };
}

/// What a device is rated for; the safety layer never commands more.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceRating {
    /// Largest continuous force the device may render (N).
    pub max_force: f64,
    /// Largest stiffness the device renders stably (N/m).
    pub max_stiffness: f64,
    /// The box the stylus tip reaches (device frame); `None` for virtual devices,
    /// whose positions are already scene positions.
    pub workspace: Option<DeviceWorkspace>,
}

/// An axis-aligned box of the device frame the stylus tip reaches comfortably.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceWorkspace {
    /// Centre of the box (m, device frame).
    pub centre: Vec3,
    /// Half the box's size along each device axis (m, each > 0).
    pub half_extent: Vec3,
}

/// A request, from any thread, that a device take the pose it is held in as its
/// calibration pose (the calibration step of encoder devices). The device polls it in
/// its next read: one atomic load per tick.
#[derive(Clone, Debug, Default)]
pub struct CalibrationRequest(Arc<AtomicBool>);

impl CalibrationRequest {
    /// Asks for a calibration at the device's next read.
    pub fn request(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether a calibration was asked for since the last call (clears it).
    pub fn take(&self) -> bool {
        // A plain load in the usual case: the haptic tick polls this every millisecond.
        self.0.load(Ordering::Relaxed) && self.0.swap(false, Ordering::AcqRel)
    }
}

/// Why a device call failed.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The device is gone (unplugged, closed, or the transport failed); force is off.
    #[error("device disconnected: {0}")]
    Disconnected(String),
    /// The device refused this one command and stays usable (an SDK's force or velocity
    /// error): the force is zero for this tick and ramps in again. No allocation: the
    /// reason is static.
    #[error("device fault: {0}")]
    Transient(&'static str),
    /// The device could not be opened or found.
    #[error("cannot open device: {0}")]
    Open(String),
}

/// A force-feedback device as the haptic thread sees it.
///
/// `read` and `write_force` are called once per haptic tick (1 kHz) and must not
/// allocate or block; `reconnect` is called outside the tick while the loop holds the
/// force at zero.
pub trait HapticDevice: Send {
    /// Returns the newest sample, draining anything older. `now` is the haptic loop's
    /// clock (s); devices with their own clock ignore it, scripted and replayed devices
    /// sample their motion at it (which makes lock-step runs deterministic).
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError>;

    /// Commands `force` (N, device frame) until the next write.
    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError>;

    /// Commands zero force. Called on shutdown and on every error path.
    fn zero_force(&mut self) -> Result<(), DeviceError> {
        self.write_force(Vec3::zeros())
    }

    /// Tries once to reopen a disconnected device; `Ok(true)` when it is back.
    fn reconnect(&mut self) -> Result<bool, DeviceError> {
        Ok(false)
    }

    /// What the device is rated for.
    fn rating(&self) -> DeviceRating;

    /// The handle that asks this device to recalibrate; `None` for devices that need
    /// no calibration step (positions already absolute).
    fn calibration_request(&self) -> Option<CalibrationRequest> {
        None
    }

    /// Human-readable name for logs.
    fn name(&self) -> &str;

    /// Who this physical device is, for the record of first-power-on checks
    /// (`palpa devices check`): a serial number where the device reports one, else what
    /// identifies its configuration (a profile's hash); `None` for virtual devices.
    fn identity(&self) -> Option<String> {
        None
    }

    /// Joint angles of an arm whose encoders palpa reads (rad, as the profile's
    /// kinematics counts them); `None` for devices that report a tip position.
    fn joint_angles(&self) -> Option<[f64; 3]> {
        None
    }

    /// What went wrong but was handled while running (e.g. SDK errors that zeroed one
    /// frame's force), for the stop summary; `None` when nothing did. Called between
    /// ticks.
    fn fault_summary(&self) -> Option<String> {
        None
    }

    /// The device's own servo clock, when its SDK owns the loop (a scheduler that calls
    /// back once per device tick) instead of being polled at palpa's pace. Called once
    /// by the haptic thread before its first tick; `None` (the default): palpa paces.
    fn external_pacer(&mut self) -> Option<Box<dyn ExternalPacer>> {
        None
    }

    /// Adds the memory `read` and `write_force` touch outside the device value itself
    /// (heap buffers, boxed parts), so the haptic thread can lock it resident.
    fn resident_memory(&self, _memory: &mut ResidentSet) {}
}

/// A device-owned servo clock: runs the haptic loop's tick on the SDK's servo thread,
/// once per device tick, with the device's `read` and `write_force` valid inside it.
pub trait ExternalPacer: Send {
    /// Calls `tick` once per device tick until it returns `false`, then commands zero
    /// force and returns once the SDK will not call `tick` again; the caller blocks
    /// meanwhile. A device error stops the ticks, zeroes the force and is returned.
    fn run(&mut self, tick: &mut (dyn FnMut() -> bool + Send)) -> Result<(), DeviceError>;
}

impl<D: HapticDevice + ?Sized> HapticDevice for Box<D> {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        (**self).read(now)
    }
    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        (**self).write_force(force)
    }
    fn zero_force(&mut self) -> Result<(), DeviceError> {
        (**self).zero_force()
    }
    fn reconnect(&mut self) -> Result<bool, DeviceError> {
        (**self).reconnect()
    }
    fn rating(&self) -> DeviceRating {
        (**self).rating()
    }
    fn calibration_request(&self) -> Option<CalibrationRequest> {
        (**self).calibration_request()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
    fn identity(&self) -> Option<String> {
        (**self).identity()
    }
    fn joint_angles(&self) -> Option<[f64; 3]> {
        (**self).joint_angles()
    }
    fn fault_summary(&self) -> Option<String> {
        (**self).fault_summary()
    }
    fn external_pacer(&mut self) -> Option<Box<dyn ExternalPacer>> {
        (**self).external_pacer()
    }
    fn resident_memory(&self, memory: &mut ResidentSet) {
        memory.add_value(&**self);
        (**self).resident_memory(memory);
    }
}
