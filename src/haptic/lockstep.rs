//! Deterministic lock-step mode: the haptic tick and the model step on one thread with a
//! virtual clock (tick k at t = k·dt, a model step every `ticks_per_model_step` ticks).
//! Replay, tests and offline tools use it; the same inputs give bit-identical forces.

use super::tick::{HapticConfig, HapticLoop, TickRecord};
use crate::device::HapticDevice;
use crate::tissue::{LocalForceModel, ModelStep};

/// A haptic loop and a model stepped together on the calling thread.
pub struct LockStep<D: HapticDevice, M: ModelStep> {
    haptic: HapticLoop<D>,
    model: M,
    local: LocalForceModel,
    version: u64,
    tick: u64,
    last_probe: Option<crate::Vec3>,
}

impl<D: HapticDevice, M: ModelStep> LockStep<D, M> {
    /// Lock-step over `device` and `model` at tick 0.
    pub fn new(device: D, model: M, config: HapticConfig) -> Self {
        Self {
            haptic: HapticLoop::new(device, config),
            model,
            local: LocalForceModel::NONE,
            version: 0,
            tick: 0,
            last_probe: None,
        }
    }

    /// Virtual time of the next tick (s).
    pub fn time(&self) -> f64 {
        self.tick as f64 * self.haptic.config().tick_period
    }

    /// The haptic loop (device, safety state).
    pub fn haptic(&self) -> &HapticLoop<D> {
        &self.haptic
    }

    /// The haptic loop, mutably (e.g. to inject a device fault between ticks).
    pub fn haptic_mut(&mut self) -> &mut HapticLoop<D> {
        &mut self.haptic
    }

    /// The model.
    pub fn model_mut(&mut self) -> &mut M {
        &mut self.model
    }

    /// Runs one tick: sense; on every `ticks_per_model_step`-th tick a model step at
    /// the newest good probe (its result is used from this tick on, as the real-time
    /// model thread's would be from the next tick after it finished; like that thread,
    /// it keeps stepping with the last good probe while the device is failing); actuate.
    pub fn step(&mut self) -> TickRecord {
        let cfg = *self.haptic.config();
        let t = self.time();
        if let Some(p) = self.haptic.sense(t) {
            self.last_probe = Some(p.position);
        }
        if self.tick % cfg.ticks_per_model_step as u64 == 0 {
            if let Some(p) = self.last_probe {
                self.local = self.model.step(t, cfg.model_period(), p);
                self.version += 1;
            }
        }
        if self.haptic.device_failed() {
            self.haptic.try_reconnect(t);
        }
        let record = self.haptic.actuate(t, &self.local, self.version);
        self.tick += 1;
        record
    }

    /// Runs `ticks` ticks and returns their records.
    pub fn run(&mut self, ticks: usize) -> Vec<TickRecord> {
        (0..ticks).map(|_| self.step()).collect()
    }

    /// Zeroes the force and gives the device and model back.
    pub fn finish(mut self) -> (D, M) {
        self.haptic.zero_force();
        (self.haptic.into_device(), self.model)
    }
}
