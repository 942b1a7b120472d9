//! Force Dimension omega, sigma, delta and lambda devices and the Novint Falcon through
//! the Force Dimension SDK's DHD API (`libdhd.so`), polled from palpa's haptic thread as
//! the DHD manual prescribes: `dhdOpenID` (or `dhdOpen` for the first device),
//! `dhdEnableForce(DHD_ON)`, then each tick `dhdGetPosition` (m), `dhdGetButtonMask` and
//! `dhdSetForce` (N) — and, on models with a wrist or a gripper, `dhdGetOrientationFrame`
//! and `dhdGetGripperAngleRad`; errors carry `dhdErrorGetLastStr`. Dropping the device
//! commands zero force and calls `dhdClose`.
//!
//! Device frame: the SDK's, in metres (x toward the user, y right, z up). Its origin is
//! not every model's workspace centre: the sigma.7 and sigma.6+ reach is centred 10 mm
//! toward the user and 20 mm to the handle's side of it ([`model_for`]). Signatures: the
//! SDK's `dhdc.h` (C calling convention on Linux, `char ID` device indices).

use std::ffi::{c_char, c_int, c_uchar, c_uint};

use super::library::LibrarySearch;
use super::{c_text, orientation_from_axes, sdk_functions};
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
        get_orientation_frame = "dhdGetOrientationFrame":
            unsafe extern "C" fn(*mut [f64; 3], c_char) -> c_int,
        get_gripper_angle_rad = "dhdGetGripperAngleRad": unsafe extern "C" fn(*mut f64, c_char) -> c_int,
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

/// What palpa knows of a device model from its `dhdGetSystemType`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DhdModel {
    /// The model's name.
    pub name: &'static str,
    /// Force, stiffness and the reachable box (device frame).
    pub rating: DeviceRating,
    /// Whether it senses the handle's orientation (a wrist).
    pub wrist: bool,
    /// Whether it senses a gripper.
    pub gripper: bool,
}

/// A device's rating, workspace and sensors by its `dhdGetSystemType`.
///
/// Force (N), stiffness (N/m), workspace radius (m), which models sense orientation and
/// a gripper, and the workspace centre are the figures CHAI3D renders each type with
/// (`cDeltaDevice::open`, CHAI3D 3.2 and 3.3 `CDeltaDevices.cpp`), which match Force
/// Dimension's data sheets for force (omega.x 12 N, delta.x 20 N) and Novint's Falcon
/// (CHAI3D's 8 N, below Novint's advertised 2 lbf ≈ 8.9 N). CHAI3D adds an offset to the
/// sigma.7 and sigma.6+ positions, (−10, ±20, 0) mm (+ right-handed, − left-handed), so
/// that their workspace centre reads zero: in the SDK's frame that centre is the
/// offset's negative. The box is the cube inscribed in the sphere of the workspace
/// radius (half-extent r/√3) around that centre. Types not listed (lambda.7 among
/// them) get CHAI3D's default: the omega.3 figures.
pub fn model_for(system_type: i32) -> DhdModel {
    // (name, N, N/m, radius m, centre y mm, wrist, gripper)
    let (name, max_force, max_stiffness, radius, side_mm, wrist, gripper) = match system_type {
        31 | 63 => ("delta.3", 20.0, 5000.0, 0.15, None, false, false),
        61 | 62 | 64 => ("delta.6", 20.0, 5000.0, 0.15, None, true, false),
        32 | 33 => ("omega.3", 12.0, 5000.0, 0.075, None, false, false),
        34 | 36 => ("omega.6", 12.0, 5000.0, 0.075, None, true, false),
        35 | 37 => ("omega.7", 12.0, 5000.0, 0.075, None, true, true),
        102 | 104 | 209 => (
            "sigma.7 (right)",
            12.0,
            4000.0,
            0.075,
            Some(-20.0),
            true,
            true,
        ),
        103 | 105 => (
            "sigma.7 (left)",
            12.0,
            4000.0,
            0.075,
            Some(20.0),
            true,
            true,
        ),
        106 => (
            "sigma.6+ (right)",
            12.0,
            4000.0,
            0.09,
            Some(-20.0),
            true,
            false,
        ),
        107 => (
            "sigma.6+ (left)",
            12.0,
            4000.0,
            0.09,
            Some(20.0),
            true,
            false,
        ),
        60 => ("Falcon", 8.0, 3000.0, 0.04, None, false, false),
        _ => (
            "unlisted type (omega.3 figures)",
            12.0,
            5000.0,
            0.075,
            None,
            false,
            false,
        ),
    };
    let centre = side_mm.map_or(Vec3::zeros(), |y_mm| Vec3::new(0.010, y_mm * 1e-3, 0.0));
    DhdModel {
        name,
        rating: DeviceRating {
            max_force,
            max_stiffness,
            workspace: Some(DeviceWorkspace {
                centre,
                half_extent: Vec3::repeat(radius / 3f64.sqrt()),
            }),
        },
        wrist,
        gripper,
    }
}

/// A Force Dimension (or Falcon) device opened through DHD.
pub struct DhdDevice {
    api: DhdApi,
    id: c_char,
    name: String,
    identity: String,
    model: DhdModel,
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
        let model = model_for(system_type);
        Ok(Self {
            api,
            id,
            name: format!("{system_name} (DHD device {id}, {})", model.name),
            // The SDK's serial number call is not in every SDK version palpa loads; the
            // type, the name and the index tell the device apart on one machine.
            identity: format!("dhd:{system_type}:{system_name}:{id}"),
            model,
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
            orientation: self.orientation(),
            gripper: self.gripper(),
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
        self.model.rating
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn identity(&self) -> Option<String> {
        Some(self.identity.clone())
    }
}

impl DhdDevice {
    /// The handle's orientation on a model with a wrist (`dhdGetOrientationFrame`: its
    /// columns are the end effector's axes, x along the handle as CHAI3D reads it).
    fn orientation(&self) -> Option<crate::device::Orientation> {
        if !self.model.wrist {
            return None;
        }
        let mut frame = [[0.0f64; 3]; 3];
        // SAFETY: a 3×3 array of doubles, as `double matrix[3][3]`; `id` is open.
        let status = unsafe { (self.api.get_orientation_frame)(frame.as_mut_ptr(), self.id) };
        let column = |c: usize| Vec3::new(frame[0][c], frame[1][c], frame[2][c]);
        (status >= 0)
            .then(|| orientation_from_axes(column(0), column(1)))
            .flatten()
    }

    /// The gripper's opening angle (rad) on a model with a gripper.
    fn gripper(&self) -> Option<f64> {
        if !self.model.gripper {
            return None;
        }
        let mut angle = f64::NAN;
        // SAFETY: one double; `id` is open.
        let status = unsafe { (self.api.get_gripper_angle_rad)(&mut angle, self.id) };
        (status >= 0 && angle.is_finite()).then_some(angle)
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
        let omega = model_for(33);
        assert_eq!((omega.name, omega.rating.max_force), ("omega.3", 12.0));
        let falcon = model_for(60);
        assert_eq!((falcon.name, falcon.rating.max_force), ("Falcon", 8.0));
        assert_eq!(model_for(63).rating.max_force, 20.0);
        let unknown = model_for(999);
        assert!(unknown.name.contains("unlisted"), "{}", unknown.name);
        assert_eq!(unknown.rating, omega.rating);
        // The box's corner lies on the sphere of the published workspace radius.
        let corner = falcon.rating.workspace.unwrap().half_extent.norm();
        assert!((corner - 0.04).abs() < 1e-12, "{corner}");
    }

    #[test]
    fn sigma_workspaces_are_centred_where_chai3d_puts_them_and_sensors_follow_the_model() {
        // CHAI3D reads p + (−0.01, ±0.02, 0): the centre it shows at zero is minus that.
        for (ty, y) in [
            (104, -0.02),
            (102, -0.02),
            (105, 0.02),
            (106, -0.02),
            (107, 0.02),
        ] {
            let centre = model_for(ty).rating.workspace.unwrap().centre;
            assert_eq!(centre, Vec3::new(0.01, y, 0.0), "type {ty}");
        }
        assert_eq!(
            model_for(33).rating.workspace.unwrap().centre,
            Vec3::zeros()
        );
        let sigma7 = model_for(104);
        assert!(sigma7.wrist && sigma7.gripper);
        let sigma6 = model_for(106);
        assert!(sigma6.wrist && !sigma6.gripper);
        assert!(!model_for(33).wrist && !model_for(60).gripper);
    }
}
