//! Force Dimension omega, sigma, delta and lambda devices and the Novint Falcon through
//! the Force Dimension SDK's DHD API (`libdhd.so`), polled from palpa's haptic thread as
//! the DHD manual prescribes: `dhdOpenID` (or `dhdOpen` for the first device),
//! `dhdEnableForce(DHD_ON)`, then each tick `dhdGetPosition` (m), `dhdGetButtonMask` and
//! `dhdSetForce` (N); errors carry `dhdErrorGetLastStr`. Dropping the device commands
//! zero force and calls `dhdClose`.
//!
//! Device frame: the SDK's, in metres, origin at the workspace centre (x toward the
//! user, y right, z up). Signatures: the SDK's `dhdc.h` (C calling convention on Linux,
//! `char ID` device indices).

use std::ffi::{c_char, c_int, c_uchar, c_uint};

use super::library::LibrarySearch;
use super::{c_text, sdk_functions};
use crate::device::{DeviceError, DeviceRating, DeviceSample, DeviceWorkspace, HapticDevice};
use crate::Vec3;

/// Where the DHD library is looked for. The SDK ships as an archive with no installer
/// (`lib/release/lin-x86_64-gcc/libdhd.so.3.x.y` inside it); these are where users
/// usually copy it.
pub const LIBRARY: LibrarySearch = LibrarySearch {
    sdk: "Force Dimension DHD",
    file: "libdhd.so",
    env: "PALPA_DHD_LIB",
    dirs: &[
        "/usr/local/lib",
        "/usr/lib",
        "/usr/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/opt/forcedimension/lib",
    ],
};

/// `DHD_ON`.
const DHD_ON: c_uchar = 1;

sdk_functions! {
    /// The DHD functions palpa calls.
    struct DhdApi {
        open_first = "dhdOpen": unsafe extern "C" fn() -> c_int,
        open_id = "dhdOpenID": unsafe extern "C" fn(c_char) -> c_int,
        close = "dhdClose": unsafe extern "C" fn(c_char) -> c_int,
        enable_force = "dhdEnableForce": unsafe extern "C" fn(c_uchar, c_char) -> c_int,
        get_position = "dhdGetPosition":
            unsafe extern "C" fn(*mut f64, *mut f64, *mut f64, c_char) -> c_int,
        get_button_mask = "dhdGetButtonMask": unsafe extern "C" fn(c_char) -> c_uint,
        set_force = "dhdSetForce": unsafe extern "C" fn(f64, f64, f64, c_char) -> c_int,
        get_system_type = "dhdGetSystemType": unsafe extern "C" fn(c_char) -> c_int,
        get_system_name = "dhdGetSystemName": unsafe extern "C" fn(c_char) -> *const c_char,
        error_get_last_str = "dhdErrorGetLastStr": unsafe extern "C" fn() -> *const c_char,
    }
}

impl DhdApi {
    /// The SDK's text for its last error on this thread.
    fn last_error(&self) -> String {
        // SAFETY: dhdErrorGetLastStr returns a static string (or null).
        unsafe { c_text((self.error_get_last_str)(), "no error text") }
    }
}

/// A device's rating and model by its `dhdGetSystemType`.
///
/// Force (N), stiffness (N/m) and workspace radius (m) are the figures CHAI3D renders
/// each type with (`cDeltaDevice::open`, CHAI3D 3.x `CDeltaDevices.cpp`), which match
/// Force Dimension's data sheets for force (omega.x 12 N, delta.x 20 N) and Novint's
/// Falcon (CHAI3D's 8 N, below Novint's advertised 2 lbf ≈ 8.9 N). The box is the cube
/// inscribed in that sphere (half-extent r/√3), centred on the SDK's origin. Types not
/// listed (lambda.7 among them) get CHAI3D's default: the omega.3 figures.
pub fn rating_for(system_type: i32) -> (&'static str, DeviceRating) {
    let (model, max_force, max_stiffness, radius) = match system_type {
        31 | 63 => ("delta.3", 20.0, 5000.0, 0.15),
        61 | 62 | 64 => ("delta.6", 20.0, 5000.0, 0.15),
        32 | 33 => ("omega.3", 12.0, 5000.0, 0.075),
        34 | 36 => ("omega.6", 12.0, 5000.0, 0.075),
        35 | 37 => ("omega.7", 12.0, 5000.0, 0.075),
        102..=105 => ("sigma.7", 12.0, 4000.0, 0.075),
        106 | 107 => ("sigma.6+", 12.0, 4000.0, 0.09),
        60 => ("Falcon", 8.0, 3000.0, 0.04),
        _ => ("unlisted type (omega.3 figures)", 12.0, 5000.0, 0.075),
    };
    let half = radius / 3f64.sqrt();
    (
        model,
        DeviceRating {
            max_force,
            max_stiffness,
            workspace: Some(DeviceWorkspace {
                centre: Vec3::zeros(),
                half_extent: Vec3::repeat(half),
            }),
        },
    )
}

/// A Force Dimension (or Falcon) device opened through DHD.
pub struct DhdDevice {
    api: DhdApi,
    id: c_char,
    name: String,
    rating: DeviceRating,
    sequence: u64,
}

impl DhdDevice {
    /// Loads DHD, opens device `index` (`None`: the first one found), enables forces and
    /// takes the rating of its type.
    pub fn open(index: Option<u8>) -> Result<Self, String> {
        let api = DhdApi::resolve(LIBRARY.load()?, LIBRARY.sdk)?;
        let (call, id) = match index {
            // SAFETY: plain DHD calls; the index is below 128 (checked by the parser).
            Some(i) => (format!("dhdOpenID({i})"), unsafe {
                (api.open_id)(i as c_char)
            }),
            None => ("dhdOpen()".to_owned(), unsafe { (api.open_first)() }),
        };
        if id < 0 {
            return Err(format!(
                "Force Dimension: {call} failed: {}",
                api.last_error()
            ));
        }
        let id = id as c_char;
        // SAFETY: `id` is the device dhdOpen* returned.
        let (system_type, system_name) = unsafe {
            (
                (api.get_system_type)(id),
                c_text((api.get_system_name)(id), "unnamed device"),
            )
        };
        // SAFETY: as above.
        if unsafe { (api.enable_force)(DHD_ON, id) } < 0 {
            let why = api.last_error();
            // SAFETY: closes the device opened above.
            unsafe { (api.close)(id) };
            return Err(format!(
                "Force Dimension: dhdEnableForce(DHD_ON) on {system_name} failed: {why}"
            ));
        }
        let (model, rating) = rating_for(system_type);
        Ok(Self {
            api,
            id,
            name: format!("{system_name} (DHD device {id}, {model})"),
            rating,
            sequence: 0,
        })
    }
}

impl HapticDevice for DhdDevice {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        let mut p = [0.0f64; 3];
        // SAFETY: three valid pointers to doubles; `id` is open.
        let status = unsafe { (self.api.get_position)(&mut p[0], &mut p[1], &mut p[2], self.id) };
        if status < 0 {
            let why = self.api.last_error();
            // The haptic loop stops writing to a failed device: zero its force now, in
            // case only the position read failed.
            // SAFETY: as above.
            unsafe { (self.api.set_force)(0.0, 0.0, 0.0, self.id) };
            return Err(DeviceError::Disconnected(format!("dhdGetPosition: {why}")));
        }
        // SAFETY: as above.
        let buttons = unsafe { (self.api.get_button_mask)(self.id) };
        self.sequence += 1;
        Ok(DeviceSample {
            position: Vec3::from(p),
            buttons,
            device_time: now,
            sequence: self.sequence,
        })
    }

    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        // SAFETY: `id` is open. A positive status (DHD_MOTOR_SATURATED) is not an error.
        let status = unsafe { (self.api.set_force)(force.x, force.y, force.z, self.id) };
        if status < 0 {
            let why = self.api.last_error();
            // SAFETY: as above; a last attempt at zero force on the failing device.
            unsafe { (self.api.set_force)(0.0, 0.0, 0.0, self.id) };
            return Err(DeviceError::Disconnected(format!("dhdSetForce: {why}")));
        }
        Ok(())
    }

    fn rating(&self) -> DeviceRating {
        self.rating
    }

    fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for DhdDevice {
    fn drop(&mut self) {
        // SAFETY: `id` is open; after dhdClose it is not used again.
        unsafe {
            (self.api.set_force)(0.0, 0.0, 0.0, self.id);
            (self.api.close)(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratings_follow_the_device_type_and_stay_inside_the_sphere() {
        let (model, omega) = rating_for(33);
        assert_eq!((model, omega.max_force), ("omega.3", 12.0));
        let (model, falcon) = rating_for(60);
        assert_eq!((model, falcon.max_force), ("Falcon", 8.0));
        assert_eq!(rating_for(63).1.max_force, 20.0);
        let (unknown, default) = rating_for(999);
        assert!(unknown.contains("unlisted"), "{unknown}");
        assert_eq!(default, omega);
        // The box's corner lies on the sphere of the published workspace radius.
        let corner = falcon.workspace.unwrap().half_extent.norm();
        assert!((corner - 0.04).abs() < 1e-12, "{corner}");
    }
}
