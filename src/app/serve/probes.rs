//! Several devices on one tissue: each device keeps its own haptic thread and model
//! thread, but only the first device's model thread steps the tissue, with every
//! probe's newest position, so all contacts are solved in one constraint system. The
//! other model threads hand their probe in and take their local force model out
//! through [`ProbeSlots`] (a mutex between model threads, never touched by a haptic
//! thread).

use std::sync::{Arc, Mutex, PoisonError};

use crate::tissue::{LocalForceModel, ModelStep, MAX_PROBES};
use crate::Vec3;

/// Per probe: its newest position (m; non-finite until its device reports one) and the
/// local force model of the last tissue step; and how many tissue steps there were.
#[derive(Debug)]
struct Slots {
    probes: [Vec3; MAX_PROBES],
    models: [LocalForceModel; MAX_PROBES],
    steps: u64,
}

/// The exchange between the model thread that steps the tissue (probe 0) and the
/// model threads of the other devices (probes 1, 2, …).
#[derive(Clone, Debug)]
pub struct ProbeSlots {
    count: usize,
    slots: Arc<Mutex<Slots>>,
}

impl ProbeSlots {
    /// Slots for `count` probes (clamped to 1 ..= [`MAX_PROBES`]).
    pub fn new(count: usize) -> Self {
        Self {
            count: count.clamp(1, MAX_PROBES),
            slots: Arc::new(Mutex::new(Slots {
                probes: [Vec3::repeat(f64::NAN); MAX_PROBES],
                models: [LocalForceModel::NONE; MAX_PROBES],
                steps: 0,
            })),
        }
    }

    /// Number of probes.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The model step of probe `index` (≥ 1) for its device's model thread.
    pub fn follower(&self, index: usize) -> ProbeFollower {
        ProbeFollower {
            index: index.clamp(1, self.count - 1),
            slots: self.clone(),
            seen: 0,
        }
    }

    /// Steps `model` with `probe` as probe 0 and the newest positions of the others,
    /// stores the others' local force models, and returns probe 0's.
    pub fn step_all<M: ModelStep>(
        &self,
        model: &mut M,
        t: f64,
        dt: f64,
        probe: Vec3,
    ) -> LocalForceModel {
        let mut probes = [Vec3::repeat(f64::NAN); MAX_PROBES];
        {
            let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            probes[..self.count].copy_from_slice(&slots.probes[..self.count]);
        }
        probes[0] = probe;
        let mut out = [LocalForceModel::NONE; MAX_PROBES];
        model.step_probes(t, dt, &probes[..self.count], &mut out[..self.count]);
        // A device that has not reported a position yet gets no force model: the
        // tissue's answer for a NaN probe was NaN, which zeroed that device's force
        // (45 non-finite ticks at every start of `serve` with two devices).
        for (o, p) in out[..self.count].iter_mut().zip(&probes) {
            if !p.iter().all(|c| c.is_finite()) {
                *o = LocalForceModel::NONE;
            }
        }
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.models[..self.count].copy_from_slice(&out[..self.count]);
        slots.steps += 1;
        out[0]
    }
}

/// A further device's model step: its probe goes to the tissue's model thread, and it
/// extrapolates from the local force model of that thread's newest step. Its model
/// thread publishes a model only after a new tissue step
/// ([`ModelStep::step_if_new`]): republishing the last one every period hid a stalled
/// tissue step from this device's watchdog.
#[derive(Clone, Debug)]
pub struct ProbeFollower {
    index: usize,
    slots: ProbeSlots,
    /// The tissue steps whose model this follower has handed out.
    seen: u64,
}

impl ModelStep for ProbeFollower {
    fn step(&mut self, _t: f64, _dt: f64, probe: Vec3) -> LocalForceModel {
        let mut slots = self
            .slots
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slots.probes[self.index] = probe;
        self.seen = slots.steps;
        slots.models[self.index]
    }

    fn step_if_new(&mut self, t: f64, dt: f64, probe: Vec3) -> Option<LocalForceModel> {
        let seen = self.seen;
        let model = self.step(t, dt, probe);
        (self.seen != seen).then_some(model)
    }

    /// Five times per model period (every haptic tick at 200 Hz / 1 kHz), so a new
    /// tissue step reaches this device within a millisecond: polled once per period at
    /// its own phase, a step that ended just after the poll reached it 10 ms after the
    /// one before, past the watchdog's 8 ms.
    fn call_period(&self, model_period: f64) -> f64 {
        model_period / 5.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model that reports each probe's position as its force, to see the exchange.
    struct Echo;

    impl ModelStep for Echo {
        fn step(&mut self, t: f64, _dt: f64, probe: Vec3) -> LocalForceModel {
            LocalForceModel {
                t0: t,
                f0: probe,
                ..LocalForceModel::NONE
            }
        }

        fn step_probes(&mut self, t: f64, dt: f64, probes: &[Vec3], out: &mut [LocalForceModel]) {
            for (p, o) in probes.iter().zip(out) {
                *o = self.step(t, dt, *p);
            }
        }
    }

    #[test]
    fn followers_hand_in_probes_and_take_out_their_models() {
        let slots = ProbeSlots::new(3);
        let (mut b, mut c) = (slots.follower(1), slots.follower(2));
        // Before the tissue steps with them, the followers feel nothing.
        assert_eq!(b.step(0.0, 5e-3, Vec3::x()).f0, Vec3::zeros());
        c.step(0.0, 5e-3, Vec3::y());
        let a = slots.step_all(&mut Echo, 0.005, 5e-3, Vec3::z());
        assert_eq!(a.f0, Vec3::z());
        assert_eq!(b.step(0.01, 5e-3, Vec3::x() * 2.0).f0, Vec3::x());
        assert_eq!(c.step(0.01, 5e-3, Vec3::y()).f0, Vec3::y());
        assert_eq!(ProbeSlots::new(99).count(), MAX_PROBES);
    }

    /// A device that has not reported yet gets the empty model, never the tissue's
    /// answer for its NaN position (which zeroed its force as non-finite).
    #[test]
    fn a_follower_that_never_reported_gets_no_force_model_not_a_nan_one() {
        let slots = ProbeSlots::new(2);
        slots.step_all(&mut Echo, 0.005, 5e-3, Vec3::z());
        let mut b = slots.follower(1);
        assert_eq!(b.step(0.01, 5e-3, Vec3::x()), LocalForceModel::NONE);
    }

    /// A follower hands out a model once per tissue step: between two steps of the
    /// tissue it has nothing new, so its haptic thread sees the model age.
    #[test]
    fn a_follower_has_a_new_model_only_after_a_tissue_step() {
        let slots = ProbeSlots::new(2);
        let mut b = slots.follower(1);
        assert_eq!(b.step_if_new(0.0, 5e-3, Vec3::x()), None);
        slots.step_all(&mut Echo, 0.005, 5e-3, Vec3::z());
        let first = b.step_if_new(0.005, 5e-3, Vec3::x()).expect("a new step");
        assert_eq!(first.f0, Vec3::x());
        assert_eq!(b.step_if_new(0.01, 5e-3, Vec3::x()), None);
        assert_eq!(b.step_if_new(0.015, 5e-3, Vec3::x()), None);
        slots.step_all(&mut Echo, 0.02, 5e-3, Vec3::z());
        assert!(b.step_if_new(0.02, 5e-3, Vec3::y()).is_some());
    }
}
