//! One haptic tick, split in two so the real-time loop and the lock-step loop share it:
//! [`HapticLoop::sense`] reads the device, [`HapticLoop::actuate`] evaluates the local
//! force model, applies safety and writes the force. Neither allocates, locks or blocks.

use super::extrapolate::{cap_stiffness, force_at};
use super::safety::{Health, SafetyFilter, SafetyLimits, SafetyState};
use crate::device::{DeviceError, DeviceSample, HapticDevice, Orientation};
use crate::tissue::{ForceStrategy, LocalForceModel};
use crate::{Mat3, Vec3};

/// Configuration of the haptic loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HapticConfig {
    /// Tick period (s); 1 ms for the 1 kHz loop.
    pub tick_period: f64,
    /// Ticks per model step; 5 for the 200 Hz model.
    pub ticks_per_model_step: u32,
    /// Force between model updates.
    pub strategy: ForceStrategy,
    /// Safety limits.
    pub limits: SafetyLimits,
}

impl HapticConfig {
    /// 1 kHz ticks, 200 Hz model, `local-stiffness`, the given limits. The device
    /// reports scene coordinates (a [`MappedDevice`](crate::device::mapped::MappedDevice)
    /// maps other frames).
    pub fn new(limits: SafetyLimits) -> Self {
        Self {
            tick_period: 1e-3,
            ticks_per_model_step: 5,
            strategy: ForceStrategy::LocalStiffness,
            limits,
        }
    }

    /// Model step period (s).
    pub fn model_period(&self) -> f64 {
        self.tick_period * self.ticks_per_model_step as f64
    }
}

/// The probe as the haptic thread hands it to the model thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeSample {
    /// Loop time of the sample (s).
    pub t: f64,
    /// Probe tip (m, scene frame).
    pub position: Vec3,
    /// Button mask.
    pub buttons: u32,
}

/// What one tick did (telemetry, lock-step output, tests).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TickRecord {
    /// Loop time (s).
    pub t: f64,
    /// Probe tip (m, scene frame); the last good one if the device failed.
    pub probe: Vec3,
    /// Button mask.
    pub buttons: u32,
    /// The stylus's orientation (scene frame), for devices that sense it.
    pub orientation: Option<Orientation>,
    /// The gripper's opening (rad), for devices with a gripper.
    pub gripper: Option<f64>,
    /// Force the strategy asked for (N), before safety.
    pub desired: Vec3,
    /// Force commanded to the device (N).
    pub force: Vec3,
    /// Safety state after this tick.
    pub state: SafetyState,
    /// Whether the local model in use reported contact.
    pub model_in_contact: bool,
    /// Indentation of the probe (m): how far it lies below the undeformed surface where
    /// it entered, by the model in use; 0 out of contact.
    pub depth: f64,
    /// Time since the device last sent a new sample (s).
    pub sample_age: f64,
    /// Time since the model thread last published (s); infinite before the first model.
    pub model_age: f64,
}

/// The haptic loop's state: the device, the model in use, the safety filter.
pub struct HapticLoop<D: HapticDevice> {
    device: D,
    config: HapticConfig,
    safety: SafetyFilter,
    sample: DeviceSample,
    probe: Vec3,
    prev_probe: Vec3,
    probe_finite: bool,
    device_ok: bool,
    last_sequence: u64,
    last_fresh_sample: f64,
    model: LocalForceModel,
    stiffness: Mat3,
    model_finite: bool,
    model_version: u64,
    last_model_update: f64,
    last_tick: Option<f64>,
}

fn model_is_finite(m: &LocalForceModel) -> bool {
    [m.x0, m.f0, m.f_dot, m.contact_point, m.normal]
        .iter()
        .all(|v| v.iter().all(|c| c.is_finite()))
        && m.stiffness.iter().all(|c| c.is_finite())
        && m.t0.is_finite()
}

impl<D: HapticDevice> HapticLoop<D> {
    /// A loop over `device` at loop time 0, force ramping in.
    pub fn new(device: D, config: HapticConfig) -> Self {
        Self {
            device,
            safety: SafetyFilter::new(config.limits),
            config,
            sample: DeviceSample::ORIGIN,
            probe: Vec3::zeros(),
            prev_probe: Vec3::zeros(),
            probe_finite: true,
            device_ok: true,
            last_sequence: u64::MAX,
            last_fresh_sample: 0.0,
            model: LocalForceModel::NONE,
            stiffness: Mat3::zeros(),
            model_finite: true,
            model_version: 0,
            last_model_update: 0.0,
            last_tick: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HapticConfig {
        &self.config
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The device, mutably (between ticks).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    /// Gives the device back.
    pub fn into_device(self) -> D {
        self.device
    }

    /// The safety filter (for its state and observed energy).
    pub fn safety(&self) -> &SafetyFilter {
        &self.safety
    }

    /// Whether the device failed and needs [`HapticLoop::try_reconnect`].
    pub fn device_failed(&self) -> bool {
        !self.device_ok
    }

    /// First half of a tick at loop time `t` (s): reads the newest device sample and
    /// returns the probe for the model thread (`None` if the device failed or the
    /// sample is not finite — the model never sees a bad probe).
    pub fn sense(&mut self, t: f64) -> Option<ProbeSample> {
        if !self.device_ok {
            return None;
        }
        match self.device.read(t) {
            Ok(s) => {
                self.sample = s;
                if s.sequence != self.last_sequence {
                    self.last_sequence = s.sequence;
                    self.last_fresh_sample = t;
                }
                let p = s.position;
                self.probe_finite = p.iter().all(|c| c.is_finite());
                if self.probe_finite {
                    self.prev_probe = self.probe;
                    self.probe = p;
                    return Some(ProbeSample {
                        t,
                        position: p,
                        buttons: s.buttons,
                    });
                }
                None
            }
            Err(_) => {
                self.device_ok = false;
                None
            }
        }
    }

    /// Second half of a tick at loop time `t` (s): takes the newest local force model
    /// (`version` changes whenever the model thread published a new one), computes the
    /// safe force and writes it to the device.
    pub fn actuate(&mut self, t: f64, model: &LocalForceModel, version: u64) -> TickRecord {
        if version != self.model_version {
            self.model_version = version;
            self.model = *model;
            self.model_finite = model_is_finite(model);
            self.stiffness = cap_stiffness(&model.stiffness, self.config.limits.max_stiffness);
            self.last_model_update = t;
        }
        // Elapsed loop time, so ramps and fades keep their duration in wall time even
        // when a real-time tick was skipped (bounded so a long stall is one step).
        let dt = self
            .last_tick
            .map_or(self.config.tick_period, |last| (t - last).clamp(0.0, 0.1));
        self.last_tick = Some(t);
        let finite = self.probe_finite && self.model_finite;
        let desired = if finite {
            force_at(
                self.config.strategy,
                &self.model,
                &self.stiffness,
                t,
                self.probe,
            )
        } else {
            Vec3::zeros()
        };
        let velocity = if dt > 0.0 {
            (self.probe - self.prev_probe) / dt
        } else {
            Vec3::zeros()
        };
        let health = Health {
            device_ok: self.device_ok,
            finite,
            sample_age: t - self.last_fresh_sample,
            // No model yet counts as a stalled model: the force ramps in from the first
            // model, not from start-up.
            model_age: if self.model_version == 0 {
                f64::INFINITY
            } else {
                t - self.last_model_update
            },
            model_reach: match self.config.strategy {
                ForceStrategy::LocalStiffness => (self.probe - self.model.x0).norm(),
                ForceStrategy::Hold | ForceStrategy::LinearTime => f64::INFINITY,
            },
        };
        let mut force = self.safety.apply(dt, desired, velocity, health);
        let mut state = self.safety.state();
        if self.device_ok {
            match self.device.write_force(force) {
                Ok(()) => {}
                // The device refused this command but stays usable (an SDK's force or
                // velocity error): zero now, ramp in again, as the SDKs' examples do.
                Err(DeviceError::Transient(_)) => {
                    force = Vec3::zeros();
                    self.safety.reset();
                    state = SafetyState::DeviceFault;
                }
                Err(_) => {
                    self.device_ok = false;
                    force = Vec3::zeros();
                    self.safety.reset();
                    state = self.safety.state();
                }
            }
        }
        TickRecord {
            t,
            probe: self.probe,
            buttons: self.sample.buttons,
            orientation: self.sample.orientation,
            gripper: self.sample.gripper,
            desired,
            force,
            state,
            model_in_contact: self.model.in_contact,
            depth: self.model.entry.map_or(0.0, |e| e.depth(&self.probe)),
            sample_age: health.sample_age,
            model_age: health.model_age,
        }
    }

    /// Tries once to reopen a failed device (call outside the tick; force stays zero
    /// and ramps in once the device is back). Returns whether the device is usable.
    pub fn try_reconnect(&mut self, t: f64) -> bool {
        if self.device_ok {
            return true;
        }
        if let Ok(true) = self.device.reconnect() {
            self.device_ok = true;
            self.last_sequence = u64::MAX;
            self.last_fresh_sample = t;
            self.safety.reset();
        }
        self.device_ok
    }

    /// Commands zero force (shutdown, error paths); errors are ignored because there is
    /// nothing safer left to do.
    pub fn zero_force(&mut self) {
        self.safety.reset();
        let _ = self.device.zero_force();
    }
}

/// Zeroes the device's force when dropped — on return, on `?`, and on panic unwinding.
pub struct ZeroForceGuard<'a, D: HapticDevice>(pub &'a mut HapticLoop<D>);

impl<D: HapticDevice> Drop for ZeroForceGuard<'_, D> {
    fn drop(&mut self) {
        self.0.zero_force();
    }
}

impl<D: HapticDevice> std::ops::Deref for ZeroForceGuard<'_, D> {
    type Target = HapticLoop<D>;
    fn deref(&self) -> &HapticLoop<D> {
        self.0
    }
}

impl<D: HapticDevice> std::ops::DerefMut for ZeroForceGuard<'_, D> {
    fn deref_mut(&mut self) -> &mut HapticLoop<D> {
        self.0
    }
}
