//! The device workspace mapping: device frame → scene frame for positions, scene frame →
//! device frame for forces, as a device wrapper so the haptic loop sees scene
//! coordinates and every backend (HID, sim, replay) is mapped the same way.

use super::{
    CalibrationRequest, DeviceError, DeviceRating, DeviceSample, DeviceWorkspace, ExternalPacer,
    HapticDevice, Orientation,
};
use crate::{Mat3, Vec3};

/// p_scene = R · (scale · p_device) + offset; f_device = Rᵀ f_scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workspace {
    /// Rotation device → scene.
    pub rotation: Mat3,
    /// Motion scale (scene m per device m).
    pub scale: f64,
    /// Scene position of the device origin (m).
    pub offset: Vec3,
}

impl Workspace {
    /// The identity mapping.
    pub const IDENTITY: Self = Self {
        rotation: Mat3::new(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0),
        scale: 1.0,
        offset: Vec3::new(0.0, 0.0, 0.0),
    };

    /// The mapping with motion `scale` (scene m per device m), scene position of the
    /// device origin `offset` (m), and rotation angles `rotation_deg` about x, then y,
    /// then z (degrees).
    pub fn new(scale: f64, offset: Vec3, rotation_deg: [f64; 3]) -> Self {
        let [rx, ry, rz] = rotation_deg.map(f64::to_radians);
        Self {
            rotation: *nalgebra::Rotation3::from_euler_angles(rx, ry, rz).matrix(),
            scale,
            offset,
        }
    }

    /// The mapping that fits a device's reachable box onto a scene box `lo`–`hi` (m,
    /// scene frame, no rotation): the device's centre goes to the middle of the box's
    /// top face, and one motion scale makes the device's lower half reach the box's
    /// bottom and its width reach the box's sides, so the whole scene is in reach and
    /// the hand rests at the surface.
    pub fn fit(device: &DeviceWorkspace, lo: Vec3, hi: Vec3) -> Self {
        let half = (hi - lo) / 2.0;
        // Target half extents: the box's width, and its full height below the top.
        let target = Vec3::new(half.x, half.y, 2.0 * half.z);
        let scale = (0..3)
            .map(|i| target[i] / device.half_extent[i])
            .fold(0.0, f64::max)
            .clamp(1e-3, 1e3);
        let top_middle = Vec3::new((lo.x + hi.x) / 2.0, (lo.y + hi.y) / 2.0, hi.z);
        Self {
            rotation: Mat3::identity(),
            scale,
            offset: top_middle - device.centre * scale,
        }
    }

    /// Device position (m) → scene position (m).
    pub fn to_scene(&self, p: &Vec3) -> Vec3 {
        self.rotation * (p * self.scale) + self.offset
    }

    /// Scene position (m) → device position (m), the inverse of [`Workspace::to_scene`]:
    /// p_device = Rᵀ (p_scene − offset) / scale (e.g. to move a virtual stylus to a
    /// point a viewer picked in the scene).
    pub fn to_device(&self, p: &Vec3) -> Vec3 {
        self.rotation.transpose() * (p - self.offset) / self.scale
    }

    /// The mapping's rotation as a quaternion (device → scene), for orientations.
    pub fn orientation(&self) -> Orientation {
        Orientation::from_rotation_matrix(&nalgebra::Rotation3::from_matrix(&self.rotation))
    }

    /// Scene force (N) → device force (N). Forces are not scaled: the user feels the
    /// tissue's force, only turned into the device's axes.
    pub fn force_to_device(&self, f: &Vec3) -> Vec3 {
        self.rotation.transpose() * f
    }
}

/// A device seen through a [`Workspace`]: reads come back in scene coordinates, forces
/// go out in device coordinates. Adds no allocation or blocking to the tick.
pub struct MappedDevice<D: HapticDevice> {
    inner: D,
    map: Workspace,
    /// `map.rotation` as a quaternion, once (the tick only multiplies).
    turn: Orientation,
}

impl<D: HapticDevice> MappedDevice<D> {
    /// Wraps `inner` with `map`.
    pub fn new(inner: D, map: Workspace) -> Self {
        Self {
            inner,
            turn: map.orientation(),
            map,
        }
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }
}

impl<D: HapticDevice> HapticDevice for MappedDevice<D> {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        let mut s = self.inner.read(now)?;
        s.position = self.map.to_scene(&s.position);
        s.orientation = s.orientation.map(|q| self.turn * q);
        Ok(s)
    }

    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        self.inner.write_force(self.map.force_to_device(&force))
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

    fn identity(&self) -> Option<String> {
        self.inner.identity()
    }

    fn joint_angles(&self) -> Option<[f64; 3]> {
        self.inner.joint_angles()
    }

    fn fault_summary(&self) -> Option<String> {
        self.inner.fault_summary()
    }

    fn external_pacer(&mut self) -> Option<Box<dyn ExternalPacer>> {
        self.inner.external_pacer()
    }

    fn resident_memory(&self, memory: &mut crate::rt::ResidentSet) {
        self.inner.resident_memory(memory);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_order_and_inverse_force_map() {
        // 90° about z: device +x is scene +y.
        let w = Workspace::new(2.0, Vec3::new(0.0, 0.0, 0.1), [0.0, 0.0, 90.0]);
        let p = w.to_scene(&Vec3::new(0.01, 0.0, 0.0));
        assert!((p - Vec3::new(0.0, 0.02, 0.1)).norm() < 1e-15);
        assert!((w.to_device(&p) - Vec3::new(0.01, 0.0, 0.0)).norm() < 1e-15);
        // A scene force along +y pushes the device along its +x.
        let f = w.force_to_device(&Vec3::new(0.0, 1.0, 0.0));
        assert!((f - Vec3::new(1.0, 0.0, 0.0)).norm() < 1e-15);
        // Power is frame independent: f_scene · v_scene = scale · f_device · v_device.
        let v_dev = Vec3::new(0.3, -0.2, 0.5);
        let v_scene = w.rotation * v_dev * w.scale;
        let f_scene = Vec3::new(1.0, 2.0, -3.0);
        let lhs = f_scene.dot(&v_scene);
        let rhs = w.scale * w.force_to_device(&f_scene).dot(&v_dev);
        assert!((lhs - rhs).abs() < 1e-12);
    }

    #[test]
    fn an_orientation_turns_with_the_workspace() {
        // 90° about z: the stylus along device +x lies along scene +y.
        let w = Workspace::new(1.0, Vec3::zeros(), [0.0, 0.0, 90.0]);
        let stylus = w.orientation() * Orientation::identity() * Vec3::x();
        assert!((stylus - Vec3::y()).norm() < 1e-12, "{stylus}");
        assert!((w.orientation().to_rotation_matrix().matrix() - w.rotation).norm() < 1e-12);
    }

    #[test]
    fn x_then_y_then_z() {
        // 90° about x then 90° about z: device +y → (x) scene +z → (z) still +z.
        let w = Workspace::new(1.0, Vec3::zeros(), [90.0, 0.0, 90.0]);
        let p = w.to_scene(&Vec3::new(0.0, 1.0, 0.0));
        assert!((p - Vec3::new(0.0, 0.0, 1.0)).norm() < 1e-12, "{p}");
        // device +x → (x) +x → (z) +y.
        let q = w.to_scene(&Vec3::new(1.0, 0.0, 0.0));
        assert!((q - Vec3::new(0.0, 1.0, 0.0)).norm() < 1e-12, "{q}");
    }

    #[test]
    fn a_fitted_workspace_reaches_the_whole_scene_and_rests_at_its_top() {
        let device = DeviceWorkspace {
            centre: Vec3::new(0.0, 0.01, 0.02),
            half_extent: Vec3::new(0.06, 0.05, 0.04),
        };
        for (lo, hi) in [
            (Vec3::new(-0.04, -0.03, -0.02), Vec3::new(0.04, 0.03, 0.0)),
            (Vec3::new(0.1, 0.2, 0.3), Vec3::new(0.5, 0.25, 0.32)),
            (Vec3::new(-0.01, -0.01, -0.2), Vec3::new(0.01, 0.01, 0.0)),
        ] {
            let w = Workspace::fit(&device, lo, hi);
            let top_middle = Vec3::new((lo.x + hi.x) / 2.0, (lo.y + hi.y) / 2.0, hi.z);
            assert!((w.to_scene(&device.centre) - top_middle).norm() < 1e-12);
            let mut tight = false;
            for corner in 0..8 {
                let pick = |bit: usize, axis: usize| {
                    if corner >> bit & 1 == 1 {
                        hi[axis]
                    } else {
                        lo[axis]
                    }
                };
                let p = Vec3::new(pick(0, 0), pick(1, 1), pick(2, 2));
                let d = (w.to_device(&p) - device.centre).abs();
                for axis in 0..3 {
                    assert!(
                        d[axis] <= device.half_extent[axis] * (1.0 + 1e-12),
                        "{p} out of reach"
                    );
                    tight |= (d[axis] - device.half_extent[axis]).abs() < 1e-12;
                }
            }
            assert!(tight, "the scale is the smallest that reaches every corner");
        }
    }
}
