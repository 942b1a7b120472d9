//! Safety properties under arbitrary inputs (proptest), and the passivity observer on a
//! stiff wall rendered with a zero-order hold — the textbook case of a sampled-data
//! rendering generating energy.

use palpa::device::replay::{ReplayDevice, Trajectory, TrajectorySample};
use palpa::haptic::safety::Health;
use palpa::haptic::{
    ForceStrategy, HapticConfig, LockStep, SafetyFilter, SafetyLimits, TickRecord,
};
use palpa::tissue::{LocalForceModel, ModelStep};
use palpa::{Mat3, Vec3};
use proptest::prelude::*;

fn limits() -> SafetyLimits {
    SafetyLimits {
        max_force: 4.0,
        max_force_rate: 800.0,
        ramp_time: 0.02,
        max_stiffness: 2000.0,
        stale_sample_timeout: 0.004,
        model_timeout: 0.008,
        fade_time: 0.01,
        passivity_max_damping: None,
    }
}

fn component() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => -20.0..20.0f64,
        1 => Just(0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
    ]
}

fn tick_input() -> impl Strategy<Value = (Vec3, bool, f64, f64, f64)> {
    (
        (component(), component(), component()).prop_map(|(x, y, z)| Vec3::new(x, y, z)),
        prop::bool::weighted(0.95),
        prop_oneof![9 => Just(0.0), 1 => 0.0..0.05f64],
        prop_oneof![9 => Just(0.0), 1 => 0.0..0.05f64],
        prop_oneof![8 => 0.0..0.003f64, 1 => Just(f64::INFINITY)],
    )
}

proptest! {
    /// Whatever the force model asks for and whatever the watchdog reports, the output is
    /// finite, within the clamp, changes by at most rate·dt per tick (or drops to zero),
    /// and is exactly zero on a hard fault.
    #[test]
    fn safety_output_is_always_bounded(inputs in prop::collection::vec(tick_input(), 1..400)) {
        let l = limits();
        let mut s = SafetyFilter::new(l);
        let dt = 1e-3;
        let mut prev = Vec3::zeros();
        for (desired, device_ok, sample_age, model_age, model_reach) in inputs {
            let health = Health { device_ok, finite: true, sample_age, model_age, model_reach };
            let f = s.apply(dt, desired, Vec3::zeros(), health);
            prop_assert!(f.iter().all(|c| c.is_finite()));
            prop_assert!(f.norm() <= l.max_force * (1.0 + 1e-12));
            prop_assert!(f == Vec3::zeros() || (f - prev).norm() <= l.max_force_rate * dt * (1.0 + 1e-12));
            if !device_ok || !desired.iter().all(|c| c.is_finite()) {
                prop_assert_eq!(f, Vec3::zeros());
            }
            prev = f;
        }
    }
}

/// A rigid-backed linear spring wall z < 0: f = k·(−z) ẑ, K = −k ẑẑᵀ (exact).
struct SpringWall {
    k: f64,
}

impl ModelStep for SpringWall {
    fn step(&mut self, t: f64, _dt: f64, probe: Vec3) -> LocalForceModel {
        let d = -probe.z;
        LocalForceModel {
            in_contact: d > 0.0,
            t0: t,
            x0: probe,
            f0: Vec3::new(0.0, 0.0, self.k * d.max(0.0)),
            f_dot: Vec3::zeros(),
            stiffness: Mat3::from_diagonal(&Vec3::new(0.0, 0.0, -self.k)),
            contact_point: Vec3::new(probe.x, probe.y, 0.0),
            normal: Vec3::z(),
            entry: None,
        }
    }
}

/// Five fast pushes 3 mm into the wall (4 Hz), sampled at 1 kHz.
fn pushes() -> Trajectory {
    let samples = (0..=1250)
        .map(|k| {
            let t = k as f64 * 1e-3;
            let z = 0.001 - 0.004 * (0.5 - 0.5 * (std::f64::consts::TAU * 4.0 * t).cos());
            TrajectorySample {
                t,
                position: Vec3::new(0.0, 0.0, z),
                buttons: 0,
                force: None,
            }
        })
        .collect();
    Trajectory::new(samples, "pushes").unwrap()
}

fn render(passivity: Option<f64>) -> (Vec<TickRecord>, f64) {
    let mut l = limits();
    l.max_force_rate = 1e6;
    l.ramp_time = 1e-3;
    l.passivity_max_damping = passivity;
    let mut config = HapticConfig::new(l);
    config.strategy = ForceStrategy::Hold;
    config.ticks_per_model_step = 10;
    let traj = pushes();
    let mut rig = LockStep::new(ReplayDevice::new(traj), SpringWall { k: 1500.0 }, config);
    let mut records = Vec::new();
    let mut min_observed = f64::INFINITY;
    for _ in 0..1250 {
        records.push(rig.step());
        min_observed = min_observed.min(rig.haptic().safety().observed_energy());
    }
    (records, min_observed)
}

/// Work the device did on the hand, Σ f_k·(x_k − x_{k−1}) (J; positive = injected).
fn work_on_hand(records: &[TickRecord]) -> f64 {
    records
        .windows(2)
        .map(|w| w[1].force.dot(&(w[1].probe - w[0].probe)))
        .sum()
}

#[test]
fn passivity_controller_removes_the_energy_a_zero_order_hold_injects() {
    let (plain, _) = render(None);
    let injected = work_on_hand(&plain);
    assert!(
        injected > 1e-4,
        "a 100 Hz hold on a 1500 N/m wall injects energy: {injected} J"
    );

    let (controlled, min_observed) = render(Some(1e4));
    assert!(
        min_observed >= -1e-12,
        "observed energy stays non-negative: {min_observed}"
    );
    let injected_pc = work_on_hand(&controlled);
    assert!(
        injected_pc <= 1e-9,
        "passive with the controller: {injected_pc} J"
    );
    // Still a wall: the controller only adds damping while energy is owed.
    let peak = |r: &[TickRecord]| r.iter().map(|r| r.force.z).fold(0.0, f64::max);
    assert!(peak(&controlled) > 0.5 * peak(&plain));
}
