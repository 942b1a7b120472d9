//! `[rates]`, `[force]` and `[safety]`: the loops' rates, the force between model
//! updates, and the haptic loop's safety limits.

use serde::Deserialize;

use super::check::Check;
use super::SceneError;
use crate::tissue::ForceStrategy;

/// Fastest haptic (and model) loop a scene may ask for (Hz): the tick's buffers are
/// sized by the rate, and no haptic device is read faster than 10 kHz.
pub const MAX_HAPTIC_RATE: f64 = 10_000.0;

/// Slowest visual frame rate (Hz).
pub const MIN_VISUAL_RATE: f64 = 1.0;

/// Fastest visual frame rate (Hz): no display shows more.
pub const MAX_VISUAL_RATE: f64 = 240.0;

/// Longest safety timeout, fade or ramp (s).
pub const MAX_SAFETY_TIME: f64 = 60.0;

/// Loop rates (Hz).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rates {
    /// Haptic loop rate (Hz).
    pub haptic: f64,
    /// Model step rate (Hz); must divide the haptic rate.
    pub model: f64,
    /// Visual frame rate (Hz).
    pub visual: f64,
}

impl Default for Rates {
    fn default() -> Self {
        Self {
            haptic: 1000.0,
            model: 200.0,
            visual: 30.0,
        }
    }
}

impl Rates {
    /// Haptic ticks per model step (the checked ratio of the two rates).
    pub fn ticks_per_model_step(&self) -> u32 {
        (self.haptic / self.model).round() as u32
    }
}

/// Force between model updates.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForceSpec {
    /// `hold`, `linear-time` or `local-stiffness`.
    pub strategy: ForceStrategy,
}

impl Default for ForceSpec {
    fn default() -> Self {
        Self {
            strategy: ForceStrategy::LocalStiffness,
        }
    }
}

/// Safety limits; absent values come from the device's rating.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SafetySpec {
    /// Largest force magnitude (N); never above the device's rating.
    pub max_force: Option<f64>,
    /// Largest force change per second (N/s).
    pub max_force_rate: Option<f64>,
    /// Force ramp-in time at start and after a fault (s).
    pub ramp_time: Option<f64>,
    /// Cap on the extrapolation stiffness (N/m); never above the device's rating.
    pub max_stiffness: Option<f64>,
    /// A device sample older than this fades the force (s).
    pub stale_sample_timeout: Option<f64>,
    /// A local force model older than this fades the force (s).
    pub model_timeout: Option<f64>,
    /// Fade time on a soft fault (s).
    pub fade_time: Option<f64>,
    /// Passivity controller's largest added damping (N·s/m); absent: off.
    pub passivity_max_damping: Option<f64>,
}

impl Rates {
    pub(super) fn validate(&self, c: &Check) -> Result<(), SceneError> {
        c.within("rates.haptic", self.haptic, 1.0, MAX_HAPTIC_RATE)?;
        c.within("rates.model", self.model, 1.0, MAX_HAPTIC_RATE)?;
        c.within(
            "rates.visual",
            self.visual,
            MIN_VISUAL_RATE,
            MAX_VISUAL_RATE,
        )?;
        let ratio = self.haptic / self.model;
        if ratio < 1.0 || (ratio - ratio.round()).abs() > 1e-9 * ratio {
            return Err(c.invalid(
                "rates.model",
                format!(
                    "must divide the haptic rate {} Hz a whole number of times, got {} Hz",
                    self.haptic, self.model
                ),
            ));
        }
        Ok(())
    }
}

impl SafetySpec {
    pub(super) fn validate(&self, c: &Check) -> Result<(), SceneError> {
        for (key, v, max) in [
            ("safety.max_force", self.max_force, 1e4),
            ("safety.max_force_rate", self.max_force_rate, 1e9),
            ("safety.max_stiffness", self.max_stiffness, 1e9),
            (
                "safety.stale_sample_timeout",
                self.stale_sample_timeout,
                MAX_SAFETY_TIME,
            ),
            ("safety.model_timeout", self.model_timeout, MAX_SAFETY_TIME),
            ("safety.fade_time", self.fade_time, MAX_SAFETY_TIME),
            (
                "safety.passivity_max_damping",
                self.passivity_max_damping,
                1e6,
            ),
        ] {
            if let Some(v) = v {
                c.positive_at_most(key, v, max)?;
            }
        }
        if let Some(v) = self.ramp_time {
            c.non_negative_at_most("safety.ramp_time", v, MAX_SAFETY_TIME)?;
        }
        Ok(())
    }
}
