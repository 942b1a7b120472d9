//! A device wrapper that remembers the last force commanded (so the server can show
//! what the hand got last) and the newest sample (so viewers see the stylus's pose,
//! buttons and gripper), and zeroes the force when dropped, so no error path leaves a
//! force on.

use super::{
    CalibrationRequest, DeviceError, DeviceRating, DeviceSample, ExternalPacer, HapticDevice,
};
use crate::rt::{slot, SlotReader, SlotWriter};
use crate::Vec3;

/// A device that remembers the last force commanded to it (N, scene frame), so the
/// server can show what the hand got last, and that zeroes its force when dropped: no
/// error path can leave a force on.
pub struct ForceLog<D: HapticDevice> {
    inner: D,
    last: Vec3,
    published: Option<SlotWriter<Vec3>>,
    sampled: Option<SlotWriter<DeviceSample>>,
}

impl<D: HapticDevice> ForceLog<D> {
    /// Wraps `inner`; nothing commanded yet (zero).
    pub fn new(inner: D) -> Self {
        Self {
            inner,
            last: Vec3::zeros(),
            published: None,
            sampled: None,
        }
    }

    /// A wait-free reader of the newest sample the device gave (as the wrapped device
    /// reports it: scene frame behind a workspace mapping), for another thread to show
    /// the stylus's orientation, buttons and gripper.
    pub fn samples(&mut self) -> SlotReader<DeviceSample> {
        let (writer, reader) = slot(DeviceSample::ORIGIN);
        self.sampled = Some(writer);
        reader
    }

    /// The last force commanded (N).
    pub fn last_force(&self) -> Vec3 {
        self.last
    }

    /// A wait-free reader of the force commanded to the device (N, after every safety
    /// limit): what the hand feels, for another thread to show.
    pub fn commanded(&mut self) -> SlotReader<Vec3> {
        let (writer, reader) = slot(self.last);
        self.published = Some(writer);
        reader
    }

    fn log(&mut self, force: Vec3) {
        self.last = force;
        if let Some(w) = &mut self.published {
            w.write(force);
        }
    }
}

impl<D: HapticDevice> HapticDevice for ForceLog<D> {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        let sample = self.inner.read(now)?;
        if let Some(w) = &mut self.sampled {
            w.write(sample);
        }
        Ok(sample)
    }
    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        self.log(force);
        self.inner.write_force(force)
    }
    fn zero_force(&mut self) -> Result<(), DeviceError> {
        self.log(Vec3::zeros());
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
        if let Some(w) = &self.published {
            memory.add(w.storage());
        }
        if let Some(w) = &self.sampled {
            memory.add(w.storage());
        }
        self.inner.resident_memory(memory);
    }
}

impl<D: HapticDevice> Drop for ForceLog<D> {
    fn drop(&mut self) {
        let _ = self.zero_force();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device whose commanded force stays observable after it is dropped.
    struct Observed(std::sync::Arc<std::sync::Mutex<Vec3>>);

    impl HapticDevice for Observed {
        fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
            Ok(DeviceSample {
                device_time: now,
                ..DeviceSample::ORIGIN
            })
        }
        fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
            *self.0.lock().unwrap() = force;
            Ok(())
        }
        fn rating(&self) -> DeviceRating {
            DeviceRating {
                max_force: 1.0,
                max_stiffness: 1.0,
                workspace: None,
            }
        }
        fn name(&self) -> &str {
            "observed"
        }
    }

    #[test]
    fn the_force_log_remembers_the_last_force_and_zeroes_on_drop() {
        let at_device = std::sync::Arc::new(std::sync::Mutex::new(Vec3::zeros()));
        let mut log = ForceLog::new(Observed(at_device.clone()));
        let mut commanded = log.commanded();
        log.write_force(Vec3::new(0.0, 0.0, 1.5)).unwrap();
        assert_eq!(log.last_force(), Vec3::new(0.0, 0.0, 1.5));
        assert_eq!(commanded.read().0, Vec3::new(0.0, 0.0, 1.5));
        log.zero_force().unwrap();
        assert_eq!(log.last_force(), Vec3::zeros());
        log.write_force(Vec3::new(0.2, 0.0, 0.0)).unwrap();
        assert_eq!(*at_device.lock().unwrap(), Vec3::new(0.2, 0.0, 0.0));
        drop(log);
        assert_eq!(
            *at_device.lock().unwrap(),
            Vec3::zeros(),
            "dropping zeroes the force"
        );
    }
}
