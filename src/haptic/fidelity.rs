//! Fidelity harness (DESIGN §2.5): runs a trajectory twice in lock-step — the model at
//! every tick (truth) and the model every `ticks_per_model_step` ticks with a strategy
//! — and measures how far the rendered force strays from the truth.

use super::lockstep::LockStep;
use super::safety::SafetyLimits;
use super::tick::{HapticConfig, TickRecord};
use crate::device::replay::{ReplayDevice, Trajectory};
use crate::tissue::ForceStrategy;
use crate::tissue::ModelStep;

/// How one strategy compares with the every-tick truth on one trajectory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FidelityReport {
    /// The strategy measured.
    pub strategy: ForceStrategy,
    /// Root-mean-square of |f − f_truth| over all ticks (N).
    pub rms_error: f64,
    /// Largest |f − f_truth| (N).
    pub max_error: f64,
    /// Largest |f_k − f_{k−1}| of the strategy (N).
    pub max_force_step: f64,
    /// Largest |f_k − f_{k−1}| of the truth (N).
    pub truth_max_force_step: f64,
    /// Net work the device did on the user's hand, Σ f_k·(x_{k+1} − x_k) (J); positive
    /// means energy was injected.
    pub energy_injected: f64,
    /// The same for the truth (J).
    pub truth_energy_injected: f64,
    /// Largest |f_truth| (N).
    pub peak_force: f64,
}

fn run<M: ModelStep>(trajectory: &Trajectory, model: M, config: HapticConfig) -> Vec<TickRecord> {
    let ticks = (trajectory.duration() / config.tick_period).floor() as usize + 1;
    let mut lockstep = LockStep::new(ReplayDevice::new(trajectory.clone()), model, config);
    lockstep.run(ticks)
}

fn energy(records: &[TickRecord]) -> f64 {
    records
        .windows(2)
        .map(|w| w[0].force.dot(&(w[1].probe - w[0].probe)))
        .sum()
}

fn max_step(records: &[TickRecord]) -> f64 {
    records
        .windows(2)
        .map(|w| (w[1].force - w[0].force).norm())
        .fold(0.0, f64::max)
}

/// Safety limits wide enough that a comparison measures the force strategy, not the
/// safety layer: 100 N clamp, no practical rate or stiffness cap, 1 ms ramp-in, 1 s
/// watchdogs, no passivity controller.
pub fn measuring_limits() -> SafetyLimits {
    SafetyLimits {
        max_force: 100.0,
        max_force_rate: 1e9,
        ramp_time: 1e-3,
        max_stiffness: 1e9,
        stale_sample_timeout: 1.0,
        model_timeout: 1.0,
        fade_time: 0.01,
        passivity_max_damping: None,
    }
}

/// Compares each strategy in `strategies` with the truth on `trajectory`, using models
/// from `make_model` (a fresh one per run) and `limits` (use generous limits to measure
/// the strategy rather than the safety layer). The model runs every tick for the truth
/// and every `ticks_per_model_step` ticks otherwise.
pub fn compare<M: ModelStep>(
    trajectory: &Trajectory,
    make_model: impl Fn() -> M,
    limits: SafetyLimits,
    ticks_per_model_step: u32,
    strategies: &[ForceStrategy],
) -> Vec<FidelityReport> {
    let mut config = HapticConfig::new(limits);
    config.ticks_per_model_step = 1;
    config.strategy = ForceStrategy::Hold;
    let truth = run(trajectory, make_model(), config);
    let peak_force = truth.iter().map(|r| r.force.norm()).fold(0.0, f64::max);
    let truth_energy = energy(&truth);
    let truth_step = max_step(&truth);
    strategies
        .iter()
        .map(|&strategy| {
            config.ticks_per_model_step = ticks_per_model_step;
            config.strategy = strategy;
            let test = run(trajectory, make_model(), config);
            let errors = truth
                .iter()
                .zip(&test)
                .map(|(a, b)| (a.force - b.force).norm());
            let (sum2, max) = errors.fold((0.0, 0.0f64), |(s, m), e| (s + e * e, m.max(e)));
            FidelityReport {
                strategy,
                rms_error: (sum2 / truth.len() as f64).sqrt(),
                max_error: max,
                max_force_step: max_step(&test),
                truth_max_force_step: truth_step,
                energy_injected: energy(&test),
                truth_energy_injected: truth_energy,
                peak_force,
            }
        })
        .collect()
}

impl std::fmt::Display for FidelityReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>15}: RMS {:.3e} N ({:.3}% of peak {:.3} N), max {:.3e} N, max step {:.3e} N \
             (truth {:.3e} N), energy injected {:+.3e} J (truth {:+.3e} J)",
            self.strategy.name(),
            self.rms_error,
            100.0 * self.rms_error / self.peak_force.max(f64::MIN_POSITIVE),
            self.peak_force,
            self.max_error,
            self.max_force_step,
            self.truth_max_force_step,
            self.energy_injected,
            self.truth_energy_injected
        )
    }
}
