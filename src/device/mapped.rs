//! The device workspace mapping: device frame → scene frame for positions, scene frame →
//! device frame for forces, as a device wrapper so the haptic loop sees scene
//! coordinates and every backend (HID, sim, replay) is mapped the same way.

use super::{DeviceError, DeviceRating, DeviceSample, HapticDevice};
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
}

impl<D: HapticDevice> MappedDevice<D> {
    /// Wraps `inner` with `map`.
    pub fn new(inner: D, map: Workspace) -> Self {
        Self { inner, map }
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

    fn name(&self) -> &str {
        self.inner.name()
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
    fn x_then_y_then_z() {
        // 90° about x then 90° about z: device +y → (x) scene +z → (z) still +z.
        let w = Workspace::new(1.0, Vec3::zeros(), [90.0, 0.0, 90.0]);
        let p = w.to_scene(&Vec3::new(0.0, 1.0, 0.0));
        assert!((p - Vec3::new(0.0, 0.0, 1.0)).norm() < 1e-12, "{p}");
        // device +x → (x) +x → (z) +y.
        let q = w.to_scene(&Vec3::new(1.0, 0.0, 0.0));
        assert!((q - Vec3::new(0.0, 1.0, 0.0)).norm() < 1e-12, "{q}");
    }
}
