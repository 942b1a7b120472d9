//! What a run of haptic ticks tells the user afterwards: whether the probe touched the
//! tissue at all, whether it did so while the start-up ramp still scaled the force
//! down, and whether the device's force clamp cut the tissue's force. `palpa replay`
//! reviews every tick; `palpa serve` the ticks it drains from the telemetry queue.

use super::fades::FadeLog;
use super::safety::{SafetyLimits, SafetyState};
use super::tick::TickRecord;

/// A desired force above the clamp by more than this (N) counts as clamped: round-off
/// of a force sitting exactly on the clamp is not a clamp.
const CLAMP_SLACK: f64 = 1e-9;

/// Running review of haptic ticks, in tick order.
#[derive(Clone, Debug)]
pub struct TickReview {
    max_force: f64,
    ramp_time: f64,
    /// Time of the first tick with a model (s): the start-up ramp begins there.
    ramp_start: Option<f64>,
    /// First tick in contact (s).
    first_contact: Option<f64>,
    /// First tick in contact while the gain was still ramping in (s) and the gain then.
    contact_in_ramp: Option<(f64, f64)>,
    /// Largest force commanded to the device (N).
    peak_commanded: f64,
    /// Largest force the tissue model asked for, before safety (N).
    peak_tissue: f64,
    /// Ticks whose tissue force was above the clamp, at any gain: what the clamp would
    /// cut (the fade log counts the full-gain ticks it did cut, as the stream shows
    /// them, one state per tick).
    clamped: u64,
    ticks: u64,
    /// Every tick classified, and each fade with its reason and time: the one count
    /// of the watchdog's fades (this review's note reads it).
    fades: FadeLog,
}

impl TickReview {
    /// A review of ticks run with `limits` (the clamp and the ramp time).
    pub fn new(limits: &SafetyLimits) -> Self {
        Self {
            max_force: limits.max_force,
            ramp_time: limits.ramp_time,
            ramp_start: None,
            first_contact: None,
            contact_in_ramp: None,
            peak_commanded: 0.0,
            peak_tissue: 0.0,
            clamped: 0,
            ticks: 0,
            fades: FadeLog::new(limits),
        }
    }

    /// Adds the next tick.
    pub fn add(&mut self, r: &TickRecord) {
        self.ticks += 1;
        self.fades.add(r);
        if self.ramp_start.is_none() && r.model_age.is_finite() {
            self.ramp_start = Some(r.t - r.model_age);
        }
        if r.model_in_contact && self.first_contact.is_none() {
            self.first_contact = Some(r.t);
        }
        // The start-up ramp: ramping before any fade (a fade ramps in again after).
        let start_up = self.fades.counts().faded() == 0;
        if r.model_in_contact
            && r.state == SafetyState::Ramping
            && start_up
            && self.contact_in_ramp.is_none()
        {
            let since = self.ramp_start.map_or(0.0, |s| r.t - s);
            self.contact_in_ramp = Some((r.t, (since / self.ramp_time).clamp(0.0, 1.0)));
        }
        let desired = r.desired.norm();
        self.peak_commanded = self.peak_commanded.max(r.force.norm());
        self.peak_tissue = self.peak_tissue.max(desired);
        self.clamped += u64::from(desired > self.max_force + CLAMP_SLACK);
    }

    /// The ticks classified by what the safety filter did, with each fade.
    pub fn fades(&self) -> &FadeLog {
        &self.fades
    }

    /// Ticks reviewed.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// When the probe first touched the tissue (s), if it did.
    pub fn first_contact(&self) -> Option<f64> {
        self.first_contact
    }

    /// When the probe first touched the tissue during the start-up ramp (s), and the
    /// ramp's gain then (0–1).
    pub fn contact_in_ramp(&self) -> Option<(f64, f64)> {
        self.contact_in_ramp
    }

    /// Largest force commanded to the device (N), after safety.
    pub fn peak_commanded(&self) -> f64 {
        self.peak_commanded
    }

    /// Largest force the tissue model asked for (N), before safety.
    pub fn peak_tissue(&self) -> f64 {
        self.peak_tissue
    }

    /// Ticks whose tissue force the clamp cut.
    pub fn clamped_ticks(&self) -> u64 {
        self.clamped
    }

    /// "the probe never touched the tissue", when it did not in any reviewed tick.
    pub fn never_touched_note(&self) -> Option<String> {
        (self.ticks > 0 && self.first_contact.is_none())
            .then(|| "the probe never touched the tissue".into())
    }

    /// The warning that the probe touched the tissue during the start-up force ramp,
    /// naming the time and the gain then.
    pub fn ramp_note(&self) -> Option<String> {
        self.contact_in_ramp.map(|(t, gain)| {
            format!(
                "the probe touches the tissue at t = {t:.3} s, during the {:.2} s start-up \
                 force ramp: the force there is scaled to {:.0} % of the tissue's, and to \
                 less than 100 % until the ramp ends (start the trajectory at least {:.2} s \
                 above the tissue to feel every force)",
                self.ramp_time,
                gain * 100.0,
                self.ramp_time
            )
        })
    }

    /// Which clamp cut the force, in how many ticks, and the tissue's own peak, when
    /// the clamp cut it at all.
    pub fn clamp_note(&self) -> Option<String> {
        (self.clamped > 0).then(|| {
            format!(
                "the device's force clamp of {:.3} N (its rated force, or the scene's \
                 [safety] max_force if lower) cut the force in {} ticks: the tissue pushed \
                 up to {:.3} N, the device was commanded at most {:.3} N",
                self.max_force, self.clamped, self.peak_tissue, self.peak_commanded
            )
        })
    }

    /// How many ticks the watchdog faded or zeroed the force in, and why, and the
    /// largest fade and when, when it did.
    pub fn fade_note(&self) -> Option<String> {
        let c = self.fades.counts();
        let (stalled, stale, fault) = (
            c.stalled_model,
            c.stale_sample,
            c.device_fault + c.not_finite,
        );
        let largest = self.fades.largest_fade().map_or(String::new(), |f| {
            format!("; the largest: {}", f.describe())
        });
        (stalled + stale + fault > 0).then(|| {
            format!(
                "the safety watchdog faded or zeroed the force in {} ticks (model thread \
                 stalled: {stalled}, device sample stale: {stale}, device fault or \
                 non-finite value: {fault}), ramping it in again after each{largest}",
                stalled + stale + fault
            )
        })
    }

    /// Everything the user should be told: [`TickReview::never_touched_note`],
    /// [`TickReview::ramp_note`], [`TickReview::clamp_note`],
    /// [`TickReview::fade_note`], those that apply.
    pub fn notes(&self) -> Vec<String> {
        [
            self.never_touched_note(),
            self.ramp_note(),
            self.clamp_note(),
            self.fade_note(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceRating;
    use crate::Vec3;

    fn record(t: f64, contact: bool, state: SafetyState, desired: f64, force: f64) -> TickRecord {
        TickRecord {
            t,
            probe: Vec3::zeros(),
            buttons: 0,
            orientation: None,
            gripper: None,
            desired: Vec3::new(0.0, 0.0, desired),
            force: Vec3::new(0.0, 0.0, force),
            state,
            model_in_contact: contact,
            depth: 0.0,
            sample_age: 0.0,
            model_age: if t >= 0.1 { t - 0.1 } else { f64::INFINITY },
        }
    }

    fn limits() -> SafetyLimits {
        SafetyLimits::for_device(DeviceRating {
            max_force: 8.0,
            max_stiffness: 3000.0,
            workspace: None,
        })
    }

    #[test]
    fn a_run_that_never_touches_says_so_and_nothing_else() {
        let mut review = TickReview::new(&limits());
        for k in 0..100 {
            review.add(&record(
                k as f64 * 1e-3,
                false,
                SafetyState::Ramping,
                0.0,
                0.0,
            ));
        }
        assert_eq!(review.notes(), vec!["the probe never touched the tissue"]);
    }

    /// The ticks before the first model are the start-up's wait: not a stalled model
    /// thread, and the ramp after them is still the start-up ramp. A model that goes
    /// quiet later is a stall.
    #[test]
    fn waiting_for_the_first_model_is_no_stall_but_a_late_model_is() {
        let mut review = TickReview::new(&limits());
        for k in 0..5 {
            review.add(&record(
                k as f64 * 1e-3,
                false,
                SafetyState::StalledModel,
                0.0,
                0.0,
            ));
        }
        review.add(&record(0.35, true, SafetyState::Ramping, 2.0, 1.0));
        assert_eq!(review.fade_note(), None);
        assert_eq!(review.contact_in_ramp().map(|(t, _)| t), Some(0.35));
        review.add(&record(0.9, true, SafetyState::StalledModel, 2.0, 1.0));
        let note = review.fade_note().expect("a stall later is reported");
        assert!(
            note.contains("in 1 ticks (model thread stalled: 1,"),
            "{note}"
        );
    }

    #[test]
    fn contact_during_the_ramp_names_its_time_and_gain_and_the_clamp_its_force() {
        let mut review = TickReview::new(&limits());
        review.add(&record(0.05, false, SafetyState::Ramping, 0.0, 0.0));
        // The model arrived at 0.1 s: at 0.35 s the 0.5 s ramp is at half gain.
        review.add(&record(0.35, true, SafetyState::Ramping, 2.0, 1.0));
        review.add(&record(0.7, true, SafetyState::Normal, 10.74, 8.0));
        let (t, gain) = review.contact_in_ramp().expect("contact in the ramp");
        assert_eq!(t, 0.35);
        assert!((gain - 0.5).abs() < 1e-12, "gain {gain}");
        assert_eq!(review.clamped_ticks(), 1);
        let notes = review.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("t = 0.350 s") && notes[0].contains("50 %"));
        assert!(notes[1].contains("8.000 N") && notes[1].contains("10.740 N"));
    }
}
