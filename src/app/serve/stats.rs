//! The haptic threads' telemetry: reviewed for the user, and summed into the statistics
//! viewers get once a second.

use palpa_protocol as wire;

use crate::haptic::review::TickReview;
use crate::haptic::runtime::RuntimeShared;
use crate::haptic::stats::StatsSnapshot;

/// Drains a haptic thread's telemetry into `review`: returns how many ticks had their
/// force clamped.
pub(super) fn drain_telemetry(shared: &RuntimeShared, review: &mut TickReview) -> u64 {
    let mut clamped = 0;
    while let Some(r) = shared.telemetry.pop() {
        clamped += u64::from(r.force != r.desired);
        review.add(&r);
    }
    clamped
}

/// The haptic statistics message for the ticks since `previous`, `clamped` of them
/// with their force clamped.
pub(super) fn haptic_stats(
    shared: &RuntimeShared,
    previous: &mut StatsSnapshot,
    clamped: u64,
) -> wire::HapticStats {
    let now = shared.stats.snapshot();
    let window = now.since(previous);
    *previous = now;
    let s = |ns: u64| ns as f64 * 1e-9;
    wire::HapticStats {
        ticks: window.ticks,
        period_p50_s: s(window.period.quantile_ns(0.5)),
        period_p99_s: s(window.period.quantile_ns(0.99)),
        period_max_s: s(window.period.max_ns),
        compute_p99_s: s(window.compute.quantile_ns(0.99)),
        missed_deadlines: window.missed,
        clamped_forces: clamped,
    }
}
