//! 3D Systems Touch, Touch X and Phantom devices through OpenHaptics HDAPI (`libHD.so`),
//! used as its programmer's guide prescribes for a servo loop: `hdInitDevice`,
//! `hdEnable(HD_FORCE_OUTPUT)`, then an asynchronous scheduler callback that brackets
//! each servo tick in `hdBeginFrame`/`hdEndFrame`. Here that callback runs palpa's
//! haptic tick (see [`ExternalPacer`]): the tick's `read` takes `HD_CURRENT_TRANSFORM`
//! (the stylus's position, mm → m, and orientation) and `HD_CURRENT_BUTTONS`, its
//! `write_force` sets `HD_CURRENT_FORCE` (N). After each frame `hdGetError` is drained:
//! a scheduler error stops the ticks with zero force and is reported with
//! `hdGetErrorString`; any other error is counted, the next frame's force is zero and
//! the loop goes on ([`hd_error`](super::hd_error), as the SDK's examples do). Stop: zero
//! force in a last frame, `hdStopScheduler`, `hdUnschedule`; dropping the device calls
//! `hdDisableDevice`.
//!
//! Device frame: HDAPI's turned a quarter about x so z is up like every other backend's
//! (x right, y away from the user, z up), in metres; forces go back the same way. The
//! stylus's orientation is CHAI3D's reading of the transform (its `hdPhantom` driver):
//! the stylus runs along the end effector's z axis, which becomes the tool's x axis.
//! Constants and signatures: OpenHaptics 3.x `hdDefines.h` and `hdScheduler.h`.

use std::any::Any;
use std::ffi::{c_char, c_int, c_uchar, c_uint, c_ulong, c_ushort, c_void, CString};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::hd_error::{self, FaultCounts};
use super::library::LibrarySearch;
use super::{c_text, orientation_from_axes, sdk_functions};
use crate::device::{
    DeviceError, DeviceRating, DeviceSample, DeviceWorkspace, ExternalPacer, HapticDevice,
};
use crate::{Mat3, Vec3};

/// Where the HDAPI library is looked for. The OpenHaptics for Linux packages install
/// `libHD.so.3.x.y` with a `libHD.so` link into `/usr/lib` (Debian packages) or
/// `/usr/lib64` (the tar installer).
pub const LIBRARY: LibrarySearch = LibrarySearch {
    sdk: "OpenHaptics HDAPI",
    file: "libHD.so",
    env: "PALPA_OPENHAPTICS_LIB",
    dirs: &[
        "/usr/lib",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/opt/OpenHaptics/Developer/3.5-0/lib",
        "/opt/OpenHaptics/Developer/3.4-0/lib",
    ],
};

/// HDAPI's device handle (`HHD`).
type Hhd = c_uint;
/// HDAPI's parameter and capability names (`HDenum`).
type HdEnum = c_uint;
/// A scheduler callback (`HDSchedulerCallback`), returning `HD_CALLBACK_*`.
type HdCallback = unsafe extern "C" fn(*mut c_void) -> c_uint;

/// `HDErrorInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct HdErrorInfo {
    error_code: c_uint,
    internal_error_code: c_int,
    device: Hhd,
}

const HD_SUCCESS: c_uint = 0x0000;
const HD_INVALID_HANDLE: Hhd = 0xFFFF_FFFF;
const HD_CURRENT_BUTTONS: HdEnum = 0x2000;
const HD_CURRENT_TRANSFORM: HdEnum = 0x2052;
const HD_DEVICE_MODEL_TYPE: HdEnum = 0x2501;
const HD_DEVICE_SERIAL_NUMBER: HdEnum = 0x2504;
const HD_USABLE_WORKSPACE_DIMENSIONS: HdEnum = 0x2551;
const HD_NOMINAL_MAX_STIFFNESS: HdEnum = 0x2602;
const HD_NOMINAL_MAX_CONTINUOUS_FORCE: HdEnum = 0x2604;
const HD_CURRENT_FORCE: HdEnum = 0x2700;
const HD_FORCE_OUTPUT: HdEnum = 0x4000;
const HD_CALLBACK_DONE: c_uint = 0;
const HD_CALLBACK_CONTINUE: c_uint = 1;
const HD_WAIT_INFINITE: c_uint = 1;
/// `HD_DEFAULT_SCHEDULER_PRIORITY`: halfway between 0 and `USHRT_MAX`.
const HD_DEFAULT_SCHEDULER_PRIORITY: c_ushort = c_ushort::MAX / 2;
/// HDAPI positions and workspace dimensions are in mm.
const M_PER_MM: f64 = 1e-3;
/// HDAPI's frame (x right, y up, z toward the user) → palpa's device frame (x right,
/// y away from the user, z up): a quarter turn about x.
const HD_TO_DEVICE: Mat3 = Mat3::new(1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0);

sdk_functions! {
    /// The HDAPI functions palpa calls.
    struct HdApi {
        init_device = "hdInitDevice": unsafe extern "C" fn(*const c_char) -> Hhd,
        disable_device = "hdDisableDevice": unsafe extern "C" fn(Hhd),
        make_current_device = "hdMakeCurrentDevice": unsafe extern "C" fn(Hhd),
        get_error = "hdGetError": unsafe extern "C" fn() -> HdErrorInfo,
        get_error_string = "hdGetErrorString": unsafe extern "C" fn(c_uint) -> *const c_char,
        enable = "hdEnable": unsafe extern "C" fn(HdEnum),
        get_doublev = "hdGetDoublev": unsafe extern "C" fn(HdEnum, *mut f64),
        get_integerv = "hdGetIntegerv": unsafe extern "C" fn(HdEnum, *mut c_int),
        get_string = "hdGetString": unsafe extern "C" fn(HdEnum) -> *const c_char,
        set_doublev = "hdSetDoublev": unsafe extern "C" fn(HdEnum, *const f64),
        begin_frame = "hdBeginFrame": unsafe extern "C" fn(Hhd),
        end_frame = "hdEndFrame": unsafe extern "C" fn(Hhd),
        schedule_asynchronous = "hdScheduleAsynchronous":
            unsafe extern "C" fn(HdCallback, *mut c_void, c_ushort) -> c_ulong,
        start_scheduler = "hdStartScheduler": unsafe extern "C" fn(),
        stop_scheduler = "hdStopScheduler": unsafe extern "C" fn(),
        unschedule = "hdUnschedule": unsafe extern "C" fn(c_ulong),
        wait_for_completion = "hdWaitForCompletion": unsafe extern "C" fn(c_ulong, c_uint) -> c_uchar,
    }
}

/// Most errors taken off HDAPI's error stack after one frame (it is bounded).
const MAX_ERRORS_PER_FRAME: usize = 16;

/// An initialised HDAPI device; dropping it disables the device.
struct HdSession {
    api: HdApi,
    handle: Hhd,
    /// Set by the servo callback between `hdBeginFrame` and `hdEndFrame`: device state
    /// is read and forces are set only inside a frame.
    in_frame: AtomicBool,
    /// A non-scheduler error ended the last frame: this frame's force is zero.
    fault_pending: AtomicBool,
    /// The non-scheduler errors seen, per code.
    faults: FaultCounts,
}

impl HdApi {
    /// The oldest pending HDAPI error, if any (no allocation: safe in a frame).
    fn pending_error(&self) -> Option<HdErrorInfo> {
        // SAFETY: hdGetError takes no arguments and returns the struct by value.
        let e = unsafe { (self.get_error)() };
        (e.error_code != HD_SUCCESS).then_some(e)
    }

    /// `e` as a message: name, code, device-internal code and HDAPI's own text.
    fn describe(&self, e: HdErrorInfo) -> String {
        // SAFETY: hdGetErrorString returns a static string (or null) for any code.
        let text = unsafe { c_text((self.get_error_string)(e.error_code), "") };
        format!(
            "{} (0x{:04x}, device error {}){}{}",
            hd_error::name(e.error_code),
            e.error_code,
            e.internal_error_code,
            if text.is_empty() { "" } else { ": " },
            text
        )
    }
}

impl HdSession {
    /// `Err` naming `call` if HDAPI reported an error since the last check.
    fn check(&self, call: &str) -> Result<(), String> {
        match self.api.pending_error() {
            Some(e) => Err(format!(
                "OpenHaptics: {call} failed: {}",
                self.api.describe(e)
            )),
            None => Ok(()),
        }
    }

    fn get_doubles<const N: usize>(&self, name: HdEnum) -> [f64; N] {
        let mut v = [f64::NAN; N];
        // SAFETY: `v` has room for the N doubles HDAPI writes for `name` (one for the
        // nominal ratings, six for the workspace dimensions, three for positions).
        unsafe { (self.api.get_doublev)(name, v.as_mut_ptr()) };
        v
    }

    /// The device's rating: `HD_NOMINAL_MAX_CONTINUOUS_FORCE` (N),
    /// `HD_NOMINAL_MAX_STIFFNESS` (N/mm → N/m) and `HD_USABLE_WORKSPACE_DIMENSIONS`
    /// (min x, y, z then max x, y, z in mm → m).
    fn rating(&self) -> Result<DeviceRating, String> {
        let [max_force] = self.get_doubles::<1>(HD_NOMINAL_MAX_CONTINUOUS_FORCE);
        let [stiffness] = self.get_doubles::<1>(HD_NOMINAL_MAX_STIFFNESS);
        let box_mm = self.get_doubles::<6>(HD_USABLE_WORKSPACE_DIMENSIONS);
        self.check("reading the device's nominal ratings")?;
        let positive = |what: &str, v: f64, unit: &str| {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(format!(
                    "OpenHaptics device reports {what} = {v} {unit}, not a usable rating"
                ))
            }
        };
        let max_force = positive("HD_NOMINAL_MAX_CONTINUOUS_FORCE", max_force, "N")?;
        let max_stiffness = positive("HD_NOMINAL_MAX_STIFFNESS", stiffness, "N/mm")? * 1e3;
        let min = Vec3::new(box_mm[0], box_mm[1], box_mm[2]) * M_PER_MM;
        let max = Vec3::new(box_mm[3], box_mm[4], box_mm[5]) * M_PER_MM;
        let half_extent = (HD_TO_DEVICE * (max - min) / 2.0).abs();
        if !half_extent.iter().all(|h| h.is_finite() && *h > 0.0) {
            return Err(format!(
                "OpenHaptics device reports HD_USABLE_WORKSPACE_DIMENSIONS = {box_mm:?} mm, \
                 not a box (min x, y, z then max x, y, z)"
            ));
        }
        Ok(DeviceRating {
            max_force,
            max_stiffness,
            workspace: Some(DeviceWorkspace {
                centre: HD_TO_DEVICE * (min + max) / 2.0,
                half_extent,
            }),
        })
    }
}

impl Drop for HdSession {
    fn drop(&mut self) {
        // SAFETY: the handle came from hdInitDevice and the scheduler is stopped (the
        // servo's `run` stops it before returning).
        unsafe { (self.api.disable_device)(self.handle) };
    }
}

/// A Touch, Touch X or Phantom driven through HDAPI; its scheduler paces the haptic loop.
pub struct OpenHapticsDevice {
    session: Arc<HdSession>,
    name: String,
    identity: String,
    rating: DeviceRating,
    sample: DeviceSample,
}

impl OpenHapticsDevice {
    /// Loads HDAPI, initialises the device configuration `config` (`None`:
    /// `HD_DEFAULT_DEVICE`), enables force output and reads the rating.
    pub fn open(config: Option<&str>) -> Result<Self, String> {
        let api = HdApi::resolve(LIBRARY.load()?, LIBRARY.sdk)?;
        let shown = config.unwrap_or("HD_DEFAULT_DEVICE");
        let name = config
            .map(CString::new)
            .transpose()
            .map_err(|_| format!("OpenHaptics device name `{shown}` contains a NUL byte"))?;
        // SAFETY: a NUL-terminated name that outlives the call, or null for
        // HD_DEFAULT_DEVICE.
        let handle =
            unsafe { (api.init_device)(name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr())) };
        match (api.pending_error(), handle) {
            (Some(e), _) => {
                let why = api.describe(e);
                return Err(format!("OpenHaptics: hdInitDevice({shown}) failed: {why}"));
            }
            (None, HD_INVALID_HANDLE) => {
                return Err(format!(
                    "OpenHaptics: hdInitDevice({shown}) returned no device and no error"
                ))
            }
            (None, _) => {}
        }
        // From here on, dropping the session disables the device.
        let session = HdSession {
            api,
            handle,
            in_frame: AtomicBool::new(false),
            fault_pending: AtomicBool::new(false),
            faults: FaultCounts::default(),
        };
        // SAFETY: a valid handle; HD_FORCE_OUTPUT is a capability hdEnable accepts.
        unsafe {
            (session.api.make_current_device)(handle);
            (session.api.enable)(HD_FORCE_OUTPUT);
        }
        session.check("hdEnable(HD_FORCE_OUTPUT)")?;
        let rating = session.rating()?;
        // SAFETY: hdGetString returns a string owned by HDAPI, or null.
        let (model, serial) = unsafe {
            (
                c_text(
                    (session.api.get_string)(HD_DEVICE_MODEL_TYPE),
                    "unknown model",
                ),
                c_text((session.api.get_string)(HD_DEVICE_SERIAL_NUMBER), ""),
            )
        };
        // A device without a serial number is known by its configuration name.
        let _ = session.api.pending_error();
        let serial = if serial.is_empty() {
            format!("configuration {shown}")
        } else {
            serial
        };
        Ok(Self {
            session: Arc::new(session),
            name: format!("OpenHaptics {model} ({shown})"),
            identity: format!("openhaptics:{model}:{serial}"),
            rating,
            sample: DeviceSample::ORIGIN,
        })
    }
}

impl HapticDevice for OpenHapticsDevice {
    /// Inside a servo frame: the stylus's transform and the buttons. Outside one (before
    /// the scheduler runs): the last sample.
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        if self.session.in_frame.load(Ordering::Relaxed) {
            // Column-major 4×4: the end effector's axes, then its position (mm).
            let m = self.session.get_doubles::<16>(HD_CURRENT_TRANSFORM);
            let column = |c: usize| HD_TO_DEVICE * Vec3::new(m[4 * c], m[4 * c + 1], m[4 * c + 2]);
            let mut buttons: c_int = 0;
            // SAFETY: HD_CURRENT_BUTTONS writes one int.
            unsafe { (self.session.api.get_integerv)(HD_CURRENT_BUTTONS, &mut buttons) };
            self.sample = DeviceSample {
                position: column(3) * M_PER_MM,
                buttons: buttons as u32,
                device_time: now,
                sequence: self.sample.sequence + 1,
                // The stylus runs along the end effector's z (CHAI3D's tool x), with its
                // x as the tool's y.
                orientation: orientation_from_axes(column(2), column(0)),
                gripper: None,
            };
        }
        Ok(self.sample)
    }

    /// Inside a servo frame: sets `HD_CURRENT_FORCE`, or zero force (and a
    /// [`DeviceError::Transient`]) in the frame after a non-scheduler error. Outside a
    /// frame nothing reaches the device (the servo zeroes the force in its last frame).
    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        if !self.session.in_frame.load(Ordering::Relaxed) {
            return Ok(());
        }
        let faulted = self.session.fault_pending.swap(false, Ordering::Relaxed);
        let f = if faulted {
            Vec3::zeros()
        } else {
            HD_TO_DEVICE.tr_mul(&force)
        };
        let f = [f.x, f.y, f.z];
        // SAFETY: HD_CURRENT_FORCE reads three doubles.
        unsafe { (self.session.api.set_doublev)(HD_CURRENT_FORCE, f.as_ptr()) };
        if faulted {
            Err(DeviceError::Transient(
                "HDAPI reported an error: this frame's force is zero",
            ))
        } else {
            Ok(())
        }
    }

    fn identity(&self) -> Option<String> {
        Some(self.identity.clone())
    }

    fn fault_summary(&self) -> Option<String> {
        self.session.faults.summary().map(|counts| {
            format!("HDAPI errors handled by zeroing one frame's force and going on: {counts}")
        })
    }

    fn rating(&self) -> DeviceRating {
        self.rating
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn external_pacer(&mut self) -> Option<Box<dyn ExternalPacer>> {
        Some(Box::new(HdServo {
            session: self.session.clone(),
        }))
    }
}

/// HDAPI's scheduler as the haptic loop's clock.
struct HdServo {
    session: Arc<HdSession>,
}

/// What the servo callback works on; lives on the waiting thread's stack during `run`.
struct ServoFrame<'a> {
    session: &'a HdSession,
    tick: &'a mut (dyn FnMut() -> bool + Send),
    /// The first HDAPI error seen after a frame.
    error: Option<HdErrorInfo>,
    /// A panic of the tick, re-raised on the waiting thread.
    panic: Option<Box<dyn Any + Send>>,
}

impl ServoFrame<'_> {
    /// One servo frame: the tick inside `hdBeginFrame`/`hdEndFrame`, then HDAPI's error
    /// stack. Once the tick says stop (or failed), the frame commands zero force and the
    /// callback ends; after a scheduler error one more frame commands zero force and
    /// then the callback ends; any other error zeroes the next frame's force only.
    fn run_once(&mut self) -> c_uint {
        let s = self.session;
        // SAFETY: a valid handle, on HDAPI's scheduler thread.
        unsafe { (s.api.begin_frame)(s.handle) };
        s.in_frame.store(true, Ordering::Relaxed);
        let go_on = self.error.is_none()
            && match catch_unwind(AssertUnwindSafe(|| (self.tick)())) {
                Ok(go_on) => go_on,
                Err(payload) => {
                    self.panic = Some(payload);
                    false
                }
            };
        // A tick that did not write (or a fault the write did not see) still gets zero.
        if !go_on || s.fault_pending.swap(false, Ordering::Relaxed) {
            let zero = [0.0f64; 3];
            // SAFETY: HD_CURRENT_FORCE reads three doubles; we are inside the frame.
            unsafe { (s.api.set_doublev)(HD_CURRENT_FORCE, zero.as_ptr()) };
        }
        s.in_frame.store(false, Ordering::Relaxed);
        // SAFETY: closes the frame opened above.
        unsafe { (s.api.end_frame)(s.handle) };
        for _ in 0..MAX_ERRORS_PER_FRAME {
            let Some(e) = s.api.pending_error() else {
                break;
            };
            if hd_error::is_scheduler_error(e.error_code) {
                self.error.get_or_insert(e);
            } else {
                s.faults.add(e.error_code);
                s.fault_pending.store(true, Ordering::Relaxed);
            }
        }
        // A scheduler error seen now ends the callback after one more (zero) frame.
        if go_on {
            HD_CALLBACK_CONTINUE
        } else {
            HD_CALLBACK_DONE
        }
    }
}

/// The `HDSchedulerCallback` palpa schedules.
unsafe extern "C" fn servo_callback(data: *mut c_void) -> c_uint {
    // SAFETY: `data` is the `ServoFrame` that `HdServo::run` passed to
    // hdScheduleAsynchronous. `run` does not return (so the frame stays alive) until
    // hdWaitForCompletion reports this callback done and the scheduler is stopped, and
    // the waiting thread does not touch the frame meanwhile: this thread has it alone.
    let frame = unsafe { &mut *data.cast::<ServoFrame>() };
    frame.run_once()
}

impl ExternalPacer for HdServo {
    fn run(&mut self, tick: &mut (dyn FnMut() -> bool + Send)) -> Result<(), DeviceError> {
        let s = &*self.session;
        let mut frame = ServoFrame {
            session: s,
            tick,
            error: None,
            panic: None,
        };
        let data: *mut ServoFrame = &mut frame;
        // SAFETY: see `servo_callback`: `frame` outlives every call of the callback.
        let handle = unsafe {
            (s.api.schedule_asynchronous)(
                servo_callback,
                data.cast(),
                HD_DEFAULT_SCHEDULER_PRIORITY,
            )
        };
        if let Some(e) = s.api.pending_error() {
            return Err(DeviceError::Disconnected(format!(
                "OpenHaptics: hdScheduleAsynchronous failed: {}",
                s.api.describe(e)
            )));
        }
        // SAFETY: plain HDAPI calls with the handle it returned; hdWaitForCompletion
        // blocks until the callback returned HD_CALLBACK_DONE.
        let start_error = unsafe {
            (s.api.start_scheduler)();
            let start_error = s.api.pending_error();
            if start_error.is_none() {
                (s.api.wait_for_completion)(handle, HD_WAIT_INFINITE);
            }
            (s.api.stop_scheduler)();
            (s.api.unschedule)(handle);
            start_error
        };
        if let Some(payload) = frame.panic.take() {
            resume_unwind(payload);
        }
        match (start_error, frame.error) {
            (Some(e), _) => Err(DeviceError::Disconnected(format!(
                "OpenHaptics: hdStartScheduler failed: {}",
                s.api.describe(e)
            ))),
            (None, Some(e)) => Err(DeviceError::Disconnected(format!(
                "OpenHaptics servo frame failed: {}",
                s.api.describe(e)
            ))),
            (None, None) => Ok(()),
        }
    }
}
