//! A virtual stylus: follows a scripted motion, or positions written from outside (the
//! viewer's mouse) through a wait-free slot. The force it is sent is kept for display.

use super::{DeviceError, DeviceRating, DeviceSample, HapticDevice};
use crate::rt::{slot, SlotReader, SlotWriter};
use crate::Vec3;
use std::f64::consts::TAU;

/// Where the virtual stylus goes.
pub enum Script {
    /// Stays at a point (m).
    Still(Vec3),
    /// Circles in a horizontal plane: centre (m), radius (m), period (s).
    Circle {
        /// Centre (m).
        center: Vec3,
        /// Radius (m).
        radius: f64,
        /// Period (s).
        period: f64,
    },
    /// Presses down and up with a raised cosine: from `top` (m) down by `depth` (m) and
    /// back, once per `period` (s).
    Press {
        /// Highest point (m).
        top: Vec3,
        /// Travel downwards (m).
        depth: f64,
        /// Period (s).
        period: f64,
    },
    /// Positions and buttons written by someone else (see [`SimDevice::external`]).
    External(SlotReader<(Vec3, u32)>),
}

impl Script {
    fn at(&mut self, t: f64) -> (Vec3, u32) {
        match self {
            Script::Still(p) => (*p, 0),
            Script::Circle {
                center,
                radius,
                period,
            } => {
                let a = TAU * t / *period;
                (*center + Vec3::new(a.cos(), a.sin(), 0.0) * *radius, 0)
            }
            Script::Press { top, depth, period } => {
                let s = 0.5 * (1.0 - (TAU * t / *period).cos());
                (*top - Vec3::z() * (*depth * s), 0)
            }
            Script::External(r) => r.read().0,
        }
    }
}

/// A virtual stylus device.
pub struct SimDevice {
    script: Script,
    sequence: u64,
    last_force: Vec3,
    rating: DeviceRating,
    name: String,
}

impl SimDevice {
    /// A stylus following `script`, rated 8 N and 3000 N/m like a desktop device.
    pub fn new(script: Script) -> Self {
        Self {
            script,
            sequence: 0,
            last_force: Vec3::zeros(),
            rating: DeviceRating {
                max_force: 8.0,
                max_stiffness: 3000.0,
                workspace: None,
            },
            name: "sim".into(),
        }
    }

    /// A stylus driven from outside, starting at `start` (m): write `(position,
    /// buttons)` into the returned writer at any rate, from any one thread.
    pub fn external(start: Vec3) -> (Self, SlotWriter<(Vec3, u32)>) {
        let (w, r) = slot((start, 0));
        (Self::new(Script::External(r)), w)
    }

    /// The last force written (N).
    pub fn last_force(&self) -> Vec3 {
        self.last_force
    }
}

impl HapticDevice for SimDevice {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        let (position, buttons) = self.script.at(now);
        self.sequence += 1;
        Ok(DeviceSample {
            position,
            buttons,
            device_time: now,
            sequence: self.sequence,
            orientation: None,
            gripper: None,
        })
    }

    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        self.last_force = force;
        Ok(())
    }

    fn rating(&self) -> DeviceRating {
        self.rating
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_input_moves_the_stylus_and_scripts_follow_time() {
        let (mut dev, mut input) = SimDevice::external(Vec3::new(0.0, 0.0, 0.01));
        assert_eq!(dev.read(0.0).unwrap().position, Vec3::new(0.0, 0.0, 0.01));
        input.write((Vec3::new(0.01, 0.02, -0.003), 1));
        let s = dev.read(0.001).unwrap();
        assert_eq!(
            (s.position, s.buttons, s.sequence),
            (Vec3::new(0.01, 0.02, -0.003), 1, 2)
        );

        let mut press = SimDevice::new(Script::Press {
            top: Vec3::new(0.0, 0.0, 0.01),
            depth: 0.02,
            period: 2.0,
        });
        assert!(
            (press.read(1.0).unwrap().position.z + 0.01).abs() < 1e-15,
            "bottom at half period"
        );
        let mut circle = SimDevice::new(Script::Circle {
            center: Vec3::zeros(),
            radius: 0.02,
            period: 4.0,
        });
        assert!((circle.read(1.0).unwrap().position - Vec3::new(0.0, 0.02, 0.0)).norm() < 1e-15);
        press.write_force(Vec3::new(0.0, 0.0, 1.0)).unwrap();
        assert_eq!(press.last_force(), Vec3::new(0.0, 0.0, 1.0));
    }
}
