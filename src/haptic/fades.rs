//! What the safety filter did to each tick's force, as the user is told it: every tick
//! classified (full force, ramping, a watchdog fade with its reason, a clamp, a rate
//! limit), counted, and each fade (consecutive ticks faded for one reason) kept with
//! its start and the force it took off the hand. The stream, `palpa watch` and the
//! stop summary all read it from here.

use super::safety::{SafetyLimits, SafetyState};
use super::tick::TickRecord;

/// A change of force smaller than this (N) is round-off, not a limit.
const SLACK: f64 = 1e-9;

/// What the safety filter did to one tick's force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForceChange {
    /// The tissue's force, unchanged.
    Normal,
    /// Gain ramping in (start, after a fault), or the start-up's wait for the first
    /// models with the probe in the air ([`FadeLog::add`]).
    Ramping,
    /// Faded: stale device sample.
    StaleSample,
    /// Faded: stalled model thread.
    StalledModel,
    /// Zeroed: device fault.
    DeviceFault,
    /// Zeroed: non-finite value.
    NotFinite,
    /// Magnitude clamped to the limit.
    Clamped,
    /// Change per tick limited.
    RateLimited,
    /// The loop stopped: the zero force commanded at exit (not a fade).
    Stopped,
}

impl ForceChange {
    /// How `r` came out of a filter with `max_force` (N).
    pub fn of(r: &TickRecord, max_force: f64) -> Self {
        match r.state {
            // No model yet: the start-up's wait, not a stall.
            SafetyState::StalledModel if !r.model_age.is_finite() => ForceChange::Ramping,
            SafetyState::StalledModel => ForceChange::StalledModel,
            SafetyState::StaleSample => ForceChange::StaleSample,
            SafetyState::DeviceFault => ForceChange::DeviceFault,
            SafetyState::NotFinite => ForceChange::NotFinite,
            SafetyState::Ramping => ForceChange::Ramping,
            SafetyState::Stopped => ForceChange::Stopped,
            SafetyState::Normal if r.desired.norm() > max_force + SLACK => ForceChange::Clamped,
            SafetyState::Normal if (r.force - r.desired).norm() > SLACK => ForceChange::RateLimited,
            SafetyState::Normal => ForceChange::Normal,
        }
    }

    /// A watchdog fade (stale sample, stalled model, device fault, non-finite value).
    pub fn is_fade(self) -> bool {
        matches!(
            self,
            ForceChange::StaleSample
                | ForceChange::StalledModel
                | ForceChange::DeviceFault
                | ForceChange::NotFinite
        )
    }

    /// The reason as the log and the summary name it.
    pub fn name(self) -> &'static str {
        match self {
            ForceChange::Normal => "normal",
            ForceChange::Ramping => "ramping in",
            ForceChange::StaleSample => "stale device sample",
            ForceChange::StalledModel => "stalled model thread",
            ForceChange::DeviceFault => "device fault",
            ForceChange::NotFinite => "non-finite value",
            ForceChange::Stopped => "stopped",
            ForceChange::Clamped => "force clamped",
            ForceChange::RateLimited => "force rate limited",
        }
    }
}

/// Consecutive ticks faded for one reason.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fade {
    /// Why.
    pub reason: ForceChange,
    /// Loop time of its first tick (s).
    pub start: f64,
    /// Ticks so far.
    pub ticks: u64,
    /// Largest |tissue force| − |commanded force| over its ticks (N).
    pub force_removed: f64,
}

impl Fade {
    /// "stalled model thread at t = 1.234 s for 12 ticks, 0.813 N taken off the hand".
    pub fn describe(&self) -> String {
        format!(
            "{} at t = {:.3} s for {} ticks, {:.3} N taken off the hand",
            self.reason.name(),
            self.start,
            self.ticks,
            self.force_removed
        )
    }
}

/// Ticks counted by what the filter did, per [`ForceChange`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangeCounts {
    /// Ticks ramping in.
    pub ramping: u64,
    /// Ticks faded for a stale sample.
    pub stale_sample: u64,
    /// Ticks faded for a stalled model thread.
    pub stalled_model: u64,
    /// Ticks zeroed for a device fault.
    pub device_fault: u64,
    /// Ticks zeroed for a non-finite value.
    pub not_finite: u64,
    /// Ticks clamped.
    pub clamped: u64,
    /// Ticks rate-limited.
    pub rate_limited: u64,
}

impl ChangeCounts {
    /// Ticks the watchdog faded or zeroed.
    pub fn faded(&self) -> u64 {
        self.stale_sample + self.stalled_model + self.device_fault + self.not_finite
    }

    fn add(&mut self, change: ForceChange) {
        match change {
            ForceChange::Normal | ForceChange::Stopped => {}
            ForceChange::Ramping => self.ramping += 1,
            ForceChange::StaleSample => self.stale_sample += 1,
            ForceChange::StalledModel => self.stalled_model += 1,
            ForceChange::DeviceFault => self.device_fault += 1,
            ForceChange::NotFinite => self.not_finite += 1,
            ForceChange::Clamped => self.clamped += 1,
            ForceChange::RateLimited => self.rate_limited += 1,
        }
    }
}

/// The running log of one device's ticks.
#[derive(Clone, Debug)]
pub struct FadeLog {
    max_force: f64,
    counts: ChangeCounts,
    state: ForceChange,
    time: f64,
    last: Option<Fade>,
    largest: Option<Fade>,
    /// Whether the last tick belonged to `last`.
    in_fade: bool,
    /// Whether a model has reported contact yet.
    touched: bool,
}

impl FadeLog {
    /// A log of ticks from a filter with these `limits`.
    pub fn new(limits: &SafetyLimits) -> Self {
        Self {
            max_force: limits.max_force,
            counts: ChangeCounts::default(),
            state: ForceChange::Ramping,
            time: 0.0,
            last: None,
            largest: None,
            in_fade: false,
            touched: false,
        }
    }

    /// Adds the next tick.
    ///
    /// Until a model first reports contact, a late model that took no force off the
    /// hand (none asked for, none commanded) is the start-up's, not a fade: the first
    /// tissue steps are slow (caches, columns, the worker starting), the probe is in
    /// the air and the hand feels nothing either way; the gain it lowered ramps in
    /// again, shown as ramping. Any force taken off, and any stall once the probe has
    /// touched, is a fade.
    pub fn add(&mut self, r: &TickRecord) {
        self.touched |= r.model_in_contact;
        let change = match ForceChange::of(r, self.max_force) {
            ForceChange::StalledModel
                if !self.touched && r.desired.norm() <= SLACK && r.force.norm() <= SLACK =>
            {
                ForceChange::Ramping
            }
            change => change,
        };
        self.counts.add(change);
        self.state = change;
        self.time = r.t;
        if !change.is_fade() {
            self.in_fade = false;
            return;
        }
        let removed = (r.desired.norm() - r.force.norm()).max(0.0);
        match self.last.as_mut() {
            Some(f) if self.in_fade && f.reason == change => {
                f.ticks += 1;
                f.force_removed = f.force_removed.max(removed);
            }
            _ => {
                self.last = Some(Fade {
                    reason: change,
                    start: r.t,
                    ticks: 1,
                    force_removed: removed,
                })
            }
        }
        self.in_fade = true;
        let last = self.last.expect("set above");
        let larger = self.largest.is_none_or(|l| {
            (last.force_removed, last.ticks) > (l.force_removed, l.ticks) || l.start == last.start
        });
        if larger {
            self.largest = Some(last);
        }
    }

    /// Counts since the start.
    pub fn counts(&self) -> &ChangeCounts {
        &self.counts
    }

    /// What the newest tick's force went through.
    pub fn state(&self) -> ForceChange {
        self.state
    }

    /// Loop time of the newest tick (s).
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The latest fade (going on while [`FadeLog::state`] is a fade).
    pub fn last_fade(&self) -> Option<Fade> {
        self.last
    }

    /// The fade that took the most force off the hand (the longest among equals).
    pub fn largest_fade(&self) -> Option<Fade> {
        self.largest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceRating;
    use crate::Vec3;

    fn tick(t: f64, state: SafetyState, desired: f64, force: f64) -> TickRecord {
        TickRecord {
            t,
            probe: Vec3::zeros(),
            buttons: 0,
            orientation: None,
            gripper: None,
            desired: Vec3::new(0.0, 0.0, desired),
            force: Vec3::new(0.0, 0.0, force),
            state,
            model_in_contact: true,
            depth: 0.0,
            sample_age: 0.0,
            model_age: 0.001,
        }
    }

    fn log() -> FadeLog {
        FadeLog::new(&SafetyLimits::for_device(DeviceRating {
            max_force: 4.0,
            max_stiffness: 3000.0,
            workspace: None,
        }))
    }

    #[test]
    fn ticks_are_classified_and_each_fade_keeps_its_start_and_the_force_it_took() {
        let mut log = log();
        log.add(&tick(0.0, SafetyState::Normal, 2.0, 2.0));
        log.add(&tick(0.001, SafetyState::Normal, 5.0, 4.0));
        log.add(&tick(0.002, SafetyState::Normal, 3.0, 2.5));
        assert_eq!(log.state(), ForceChange::RateLimited);
        // A short fade taking 1 N off, then a longer one taking 2.5 N.
        log.add(&tick(0.003, SafetyState::StalledModel, 3.0, 2.0));
        log.add(&tick(0.004, SafetyState::Ramping, 3.0, 2.2));
        for k in 0..4 {
            log.add(&tick(
                0.005 + k as f64 * 1e-3,
                SafetyState::StaleSample,
                3.0,
                0.5,
            ));
        }
        log.add(&tick(0.009, SafetyState::NotFinite, 3.0, 0.0));
        let c = *log.counts();
        assert_eq!((c.clamped, c.rate_limited, c.ramping), (1, 1, 1));
        assert_eq!((c.stalled_model, c.stale_sample, c.not_finite), (1, 4, 1));
        assert_eq!(c.faded(), 6);
        let last = log.last_fade().unwrap();
        assert_eq!((last.reason, last.ticks), (ForceChange::NotFinite, 1));
        assert_eq!(last.force_removed, 3.0, "the zeroed tick took all 3 N");
        let largest = log.largest_fade().unwrap();
        assert_eq!(largest.reason, ForceChange::NotFinite);
        let stale = Fade {
            reason: ForceChange::StaleSample,
            start: 0.005,
            ticks: 4,
            force_removed: 2.5,
        };
        assert!(largest.force_removed > stale.force_removed);
        assert!(largest
            .describe()
            .starts_with("non-finite value at t = 0.009 s"));
    }

    /// A model late before the probe first touched, with no force to take off, is the
    /// start-up's; the same with force asked for, or after the first contact, is a fade.
    #[test]
    fn a_late_first_model_with_the_probe_in_the_air_is_no_fade_but_any_force_taken_is() {
        let mut log = log();
        let mut air = tick(0.01, SafetyState::StalledModel, 0.0, 0.0);
        air.model_in_contact = false;
        log.add(&air);
        assert_eq!(log.counts().faded(), 0);
        assert_eq!(log.state(), ForceChange::Ramping);
        let mut pressing = tick(0.02, SafetyState::StalledModel, 0.3, 0.1);
        pressing.model_in_contact = false;
        log.add(&pressing);
        assert_eq!(log.counts().stalled_model, 1, "0.2 N taken off the hand");
        log.add(&tick(0.03, SafetyState::Normal, 1.0, 1.0));
        air.t = 0.5;
        log.add(&air);
        assert_eq!(
            log.counts().stalled_model,
            2,
            "a stall after the first contact"
        );
        assert_eq!(log.last_fade().unwrap().start, 0.5);
    }

    #[test]
    fn waiting_for_the_first_model_is_no_fade() {
        let mut log = log();
        let mut r = tick(0.0, SafetyState::StalledModel, 0.0, 0.0);
        r.model_age = f64::INFINITY;
        log.add(&r);
        assert_eq!(log.counts().faded(), 0);
        assert_eq!(log.state(), ForceChange::Ramping);
        assert_eq!(log.last_fade(), None);
    }
}
