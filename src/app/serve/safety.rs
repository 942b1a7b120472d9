//! Every device's safety state as the stream carries it: the review of its ticks
//! ([`FadeLog`]) turned into the wire's [`wire::SafetyReport`].

use palpa_protocol as wire;

use crate::haptic::fades::{ChangeCounts, Fade, FadeLog, ForceChange};

/// The wire's reason for `change`.
fn reason(change: ForceChange) -> wire::SafetyReason {
    match change {
        // The stop's zero force is no fade: the wire has no state for it.
        ForceChange::Normal | ForceChange::Stopped => wire::SafetyReason::Normal,
        ForceChange::Ramping => wire::SafetyReason::Ramping,
        ForceChange::StaleSample => wire::SafetyReason::StaleSample,
        ForceChange::StalledModel => wire::SafetyReason::StalledModel,
        ForceChange::DeviceFault => wire::SafetyReason::DeviceFault,
        ForceChange::NotFinite => wire::SafetyReason::NotFinite,
        ForceChange::Clamped => wire::SafetyReason::Clamped,
        ForceChange::RateLimited => wire::SafetyReason::RateLimited,
    }
}

fn fade(f: Fade) -> wire::Fade {
    wire::Fade {
        reason: reason(f.reason),
        start_s: f.start,
        ticks: f.ticks,
        force_removed: f.force_removed,
    }
}

fn counts(c: &ChangeCounts) -> wire::SafetyCounts {
    wire::SafetyCounts {
        ramping: c.ramping,
        stale_sample: c.stale_sample,
        stalled_model: c.stalled_model,
        device_fault: c.device_fault,
        not_finite: c.not_finite,
        clamped: c.clamped,
        rate_limited: c.rate_limited,
    }
}

/// The report of every device's log, device 1 first.
pub fn safety_report<'a>(logs: impl Iterator<Item = &'a FadeLog>) -> wire::SafetyReport {
    wire::SafetyReport {
        devices: logs
            .enumerate()
            .map(|(i, log)| wire::DeviceSafety {
                device: i as u32 + 1,
                time_s: log.time(),
                state: reason(log.state()),
                counts: counts(log.counts()),
                last_fade: log.last_fade().map(fade),
                largest_fade: log.largest_fade().map(fade),
            })
            .collect(),
    }
}
