//! Safety between the force model and the device (DESIGN §2.6): magnitude and rate
//! clamps, ramp-in, watchdog fades and immediate zeroing, optional passivity observer.
//!
//! Rules, in order, every tick:
//! 1. a hard fault (device error, NaN/inf anywhere) commands exactly zero at once;
//! 2. a soft fault (stale device sample, stalled model) fades the gain to zero over
//!    `fade_time`. A model step that is only late (older than `model_timeout` by at most
//!    [`LATE_MODEL_GRACE`], the probe within [`LATE_MODEL_REACH`] of where the model was
//!    linearised) is no fault: its local stiffness law is a static spring, passive, and
//!    extrapolating it is what the local force model is for;
//! 3. otherwise the gain ramps up to one over `ramp_time` (at start, after a hard fault,
//!    after a fade that reached zero) or back over `fade_time` (after a fade that did
//!    not reach zero: a brief fault costs as many ticks back as it took);
//! 4. the passivity controller (optional) adds the damping that keeps the observed
//!    energy non-negative (Hannaford & Ryu 2002);
//! 5. the magnitude is clamped to `max_force`, and the change per tick to
//!    `max_force_rate · dt` — except a drop to exactly zero (release, fault), which is
//!    always allowed because zero force is always safe.

use super::super::device::DeviceRating;
use crate::Vec3;

/// Safety limits, in SI units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SafetyLimits {
    /// Largest force magnitude ever commanded (N).
    pub max_force: f64,
    /// Largest change of the force vector per second (N/s).
    pub max_force_rate: f64,
    /// Time to ramp the force gain from 0 to 1 at start and after a fault (s).
    pub ramp_time: f64,
    /// Cap on the local stiffness the haptic thread extrapolates with (N/m).
    pub max_stiffness: f64,
    /// A device sample older than this is stale and the force fades (s).
    pub stale_sample_timeout: f64,
    /// A local force model older than this means the model thread stalled (s).
    pub model_timeout: f64,
    /// Time to fade the gain from 1 to 0 on a stale sample or stalled model (s).
    pub fade_time: f64,
    /// Passivity observer/controller, with the largest damping it may add (N·s/m).
    pub passivity_max_damping: Option<f64>,
}

impl SafetyLimits {
    /// Limits for a device with this rating: its rated force and stiffness, 500 N/s,
    /// 0.5 s ramp, 4 ms stale sample, 8 ms stalled model (a 200 Hz model is 3 ms late),
    /// 10 ms fade, no passivity controller: a stale sample or a stalled model is faded
    /// out within 20 ms of the fault.
    pub fn for_device(rating: DeviceRating) -> Self {
        Self {
            max_force: rating.max_force,
            max_force_rate: 500.0,
            ramp_time: 0.5,
            max_stiffness: rating.max_stiffness,
            stale_sample_timeout: 0.004,
            model_timeout: 0.008,
            fade_time: 0.010,
            passivity_max_damping: None,
        }
    }
}

/// How long past `model_timeout` a late local force model is still extrapolated at full
/// gain (s): a dead model thread's force is then gone within `model_timeout` + this +
/// `fade_time` (38 ms with the defaults). A 200 Hz model step on a 2-core machine beside
/// other work is late by more than the 3 ms `model_timeout` leaves it several times a
/// second (docs/benchmarks.md, "Several devices on one tissue").
pub const LATE_MODEL_GRACE: f64 = 0.020;

/// How far the probe may be from where a late model was linearised (m) for it to be
/// extrapolated at full gain; farther, the late model fades as a stalled one.
pub const LATE_MODEL_REACH: f64 = 0.002;

/// What the watchdog knows this tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Health {
    /// The device answered its last read and write.
    pub device_ok: bool,
    /// Every input (probe, model, desired force) is finite.
    pub finite: bool,
    /// Time since the device last sent a new sample (s).
    pub sample_age: f64,
    /// Time since the model thread last published (s).
    pub model_age: f64,
    /// Distance of the probe from where the model in use was linearised (m); infinite
    /// where the force strategy cannot extrapolate in position (`hold`, `linear-time`),
    /// so a late model fades at once.
    pub model_reach: f64,
}

/// Why the force is not at full gain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SafetyState {
    /// Full gain.
    Normal = 0,
    /// Gain ramping up (start, after a fault).
    Ramping = 1,
    /// Stale device sample: fading out.
    StaleSample = 2,
    /// Stalled model thread: fading out.
    StalledModel = 3,
    /// Device error: force zero.
    DeviceFault = 4,
    /// NaN or infinity: force zero.
    NotFinite = 5,
    /// The loop stopped: the zero force commanded at exit (a session's last record).
    Stopped = 6,
}

/// The per-tick safety filter (state: gain, last force, observed energy).
#[derive(Clone, Debug)]
pub struct SafetyFilter {
    limits: SafetyLimits,
    gain: f64,
    last: Vec3,
    state: SafetyState,
    /// The last fade stopped before zero gain: recover over `fade_time`.
    recover_fast: bool,
    /// Energy flowing from the user into the virtual environment (J); negative means
    /// the rendering has generated energy.
    energy: f64,
}

impl SafetyState {
    /// The state's name in files and messages: `normal`, `ramping`, `stale-sample`,
    /// `stalled-model`, `device-fault`, `not-finite`, `stopped`.
    pub fn name(self) -> &'static str {
        match self {
            SafetyState::Normal => "normal",
            SafetyState::Ramping => "ramping",
            SafetyState::StaleSample => "stale-sample",
            SafetyState::StalledModel => "stalled-model",
            SafetyState::DeviceFault => "device-fault",
            SafetyState::NotFinite => "not-finite",
            SafetyState::Stopped => "stopped",
        }
    }
}

impl SafetyFilter {
    /// A filter at zero gain (it ramps in).
    pub fn new(limits: SafetyLimits) -> Self {
        Self {
            limits,
            gain: 0.0,
            last: Vec3::zeros(),
            state: SafetyState::Ramping,
            recover_fast: false,
            energy: 0.0,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &SafetyLimits {
        &self.limits
    }

    /// Current gain (0..1).
    pub fn gain(&self) -> f64 {
        self.gain
    }

    /// Current state.
    pub fn state(&self) -> SafetyState {
        self.state
    }

    /// Energy the passivity observer has seen flow into the environment (J).
    pub fn observed_energy(&self) -> f64 {
        self.energy
    }

    /// The force to command this tick (N), from the `desired` force, the probe velocity
    /// (m/s, for the passivity observer), the watchdog's `health`, and the tick `dt` (s).
    pub fn apply(&mut self, dt: f64, desired: Vec3, velocity: Vec3, health: Health) -> Vec3 {
        let l = &self.limits;
        let finite = health.finite
            && desired.iter().all(|v| v.is_finite())
            && velocity.iter().all(|v| v.is_finite());
        if !health.device_ok || !finite {
            self.state = if health.device_ok {
                SafetyState::NotFinite
            } else {
                SafetyState::DeviceFault
            };
            self.gain = 0.0;
            self.recover_fast = false;
            self.last = Vec3::zeros();
            return self.last;
        }
        let late_but_valid = health.model_age <= l.model_timeout + LATE_MODEL_GRACE
            && health.model_reach <= LATE_MODEL_REACH;
        let stalled = health.model_age > l.model_timeout && !late_but_valid;
        if health.sample_age > l.stale_sample_timeout || stalled {
            self.state = if health.sample_age > l.stale_sample_timeout {
                SafetyState::StaleSample
            } else {
                SafetyState::StalledModel
            };
            // Snap round-off to exactly zero so the fade ends on time.
            self.gain -= dt / l.fade_time;
            if self.gain < 1e-9 {
                self.gain = 0.0;
            }
            self.recover_fast = self.gain > 0.0;
        } else {
            let ramp = if self.recover_fast {
                l.fade_time
            } else {
                l.ramp_time
            };
            self.gain = (self.gain + dt / ramp).min(1.0);
            self.recover_fast &= self.gain < 1.0;
            self.state = if self.gain < 1.0 {
                SafetyState::Ramping
            } else {
                SafetyState::Normal
            };
        }
        let mut f = desired * self.gain;

        if let Some(max_damping) = l.passivity_max_damping {
            let v2 = velocity.norm_squared();
            let predicted = self.energy - f.dot(&velocity) * dt;
            if predicted < 0.0 && v2 > 0.0 {
                let alpha = (-predicted / (v2 * dt)).min(max_damping);
                f -= velocity * alpha;
            }
        }

        let norm = f.norm();
        if norm > l.max_force {
            f *= l.max_force / norm;
        }
        if f != Vec3::zeros() {
            let step = f - self.last;
            let max_step = l.max_force_rate * dt;
            let s = step.norm();
            if s > max_step {
                f = self.last + step * (max_step / s);
            }
        }
        if self.limits.passivity_max_damping.is_some() {
            self.energy -= f.dot(&velocity) * dt;
        }
        self.last = f;
        f
    }

    /// Forces zero output now (shutdown); the next `apply` ramps in again.
    pub fn reset(&mut self) {
        self.gain = 0.0;
        self.last = Vec3::zeros();
        self.state = SafetyState::Ramping;
        self.recover_fast = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SafetyLimits {
        SafetyLimits {
            max_force: 5.0,
            max_force_rate: 1000.0,
            ramp_time: 0.1,
            max_stiffness: 1000.0,
            stale_sample_timeout: 0.004,
            model_timeout: 0.01,
            fade_time: 0.01,
            passivity_max_damping: None,
        }
    }

    const OK: Health = Health {
        device_ok: true,
        finite: true,
        sample_age: 0.0,
        model_age: 0.0,
        model_reach: 0.0,
    };

    #[test]
    fn ramps_in_then_clamps_magnitude_and_rate() {
        let mut s = SafetyFilter::new(limits());
        let dt = 1e-3;
        let want = Vec3::new(0.0, 0.0, 3.0);
        let f1 = s.apply(dt, want, Vec3::zeros(), OK);
        assert!(
            (f1.z - 3.0 * 0.01).abs() < 1e-12,
            "gain after one tick of a 0.1 s ramp"
        );
        for _ in 0..200 {
            s.apply(dt, want, Vec3::zeros(), OK);
        }
        assert_eq!(s.state(), SafetyState::Normal);
        // A jump to 100 N: clamped to 5 N in magnitude, approached at 1 N per tick.
        let f = s.apply(dt, Vec3::new(0.0, 0.0, 100.0), Vec3::zeros(), OK);
        assert!((f.z - 4.0).abs() < 1e-12);
        let f = s.apply(dt, Vec3::new(0.0, 0.0, 100.0), Vec3::zeros(), OK);
        assert!((f.z - 5.0).abs() < 1e-12);
        // Release to zero is immediate.
        assert_eq!(s.apply(dt, Vec3::zeros(), Vec3::zeros(), OK), Vec3::zeros());
    }

    #[test]
    fn nan_zeroes_at_once_and_stale_fades() {
        let mut s = SafetyFilter::new(limits());
        let dt = 1e-3;
        let want = Vec3::new(0.0, 0.0, 2.0);
        for _ in 0..200 {
            s.apply(dt, want, Vec3::zeros(), OK);
        }
        let nan = Vec3::new(f64::NAN, 0.0, 0.0);
        assert_eq!(s.apply(dt, nan, Vec3::zeros(), OK), Vec3::zeros());
        assert_eq!(s.state(), SafetyState::NotFinite);
        for _ in 0..200 {
            s.apply(dt, want, Vec3::zeros(), OK);
        }
        let stale = Health {
            sample_age: 0.005,
            ..OK
        };
        let mut n = 0;
        while s.apply(dt, want, Vec3::zeros(), stale) != Vec3::zeros() {
            n += 1;
            assert!(n < 20);
        }
        assert_eq!(n, 9, "gain falls 0.1 per tick over a 10 ms fade");
    }

    /// Up to `LATE_MODEL_GRACE` past its timeout a model near its linearisation point
    /// keeps full force; far from it, or past the grace, it fades as a stalled one.
    #[test]
    fn a_late_model_is_extrapolated_whole_only_near_where_it_was_linearised() {
        let dt = 1e-3;
        let want = Vec3::new(0.0, 0.0, 2.0);
        let l = limits();
        let settled = || {
            let mut s = SafetyFilter::new(l);
            for _ in 0..200 {
                s.apply(dt, want, Vec3::zeros(), OK);
            }
            s
        };
        let late = |age: f64, reach: f64| Health {
            model_age: age,
            model_reach: reach,
            ..OK
        };
        let mut s = settled();
        let within = l.model_timeout + LATE_MODEL_GRACE;
        assert_eq!(s.apply(dt, want, Vec3::zeros(), late(within, 0.0)), want);
        assert_eq!(s.state(), SafetyState::Normal);
        let f = s.apply(dt, want, Vec3::zeros(), late(within + dt, 0.0));
        assert!((f.z - 1.8).abs() < 1e-9, "one tick of the fade: {f}");
        assert_eq!(s.state(), SafetyState::StalledModel);
        let mut s = settled();
        let far = LATE_MODEL_REACH * 1.5;
        s.apply(dt, want, Vec3::zeros(), late(l.model_timeout + dt, far));
        assert_eq!(s.state(), SafetyState::StalledModel);
    }

    /// A fade cut short recovers at the rate it fell; one that reached zero ramps in
    /// over the whole `ramp_time`.
    #[test]
    fn a_brief_fade_recovers_as_fast_as_it_fell() {
        let dt = 1e-3;
        let want = Vec3::new(0.0, 0.0, 1.0);
        let mut s = SafetyFilter::new(limits());
        for _ in 0..200 {
            s.apply(dt, want, Vec3::zeros(), OK);
        }
        let stale = Health {
            sample_age: 0.005,
            ..OK
        };
        for _ in 0..3 {
            s.apply(dt, want, Vec3::zeros(), stale);
        }
        assert!((s.gain() - 0.7).abs() < 1e-9);
        let back = (0..10)
            .position(|_| s.apply(dt, want, Vec3::zeros(), OK) == want)
            .expect("back to full within the fade time");
        assert!(back <= 3, "3 ticks down, {} up", back + 1);
        while s.apply(dt, want, Vec3::zeros(), stale) != Vec3::zeros() {}
        s.apply(dt, want, Vec3::zeros(), OK);
        assert!((s.gain() - dt / limits().ramp_time).abs() < 1e-12);
    }

    #[test]
    fn passivity_controller_dissipates_generated_energy() {
        let mut l = limits();
        l.passivity_max_damping = Some(1e6);
        l.ramp_time = 1e-3;
        let mut s = SafetyFilter::new(l);
        let dt = 1e-3;
        // An active "environment": force along the velocity (generates energy).
        let v = Vec3::new(0.0, 0.0, 0.1);
        for _ in 0..100 {
            s.apply(dt, Vec3::new(0.0, 0.0, 1.0), v, OK);
            assert!(s.observed_energy() >= -1e-12);
        }
    }
}
