//! HDAPI's error codes (`hdDefines.h`) and what palpa does with each, as the SDK's
//! utility library and examples do (`hduIsSchedulerError` and `hduIsForceError` in
//! `hduError.cpp`; the examples end their servo callback only on a scheduler error):
//! a scheduler error — communication, timer, priority, scheduler full — stops the servo
//! loop; any other error is counted and that device frame's force is zeroed, and the
//! loop goes on ("typical handling of a force error involves resetting contact").

use std::ffi::c_uint;
use std::sync::atomic::{AtomicU64, Ordering};

/// Every error code `hdDefines.h` defines, with its name.
const CODES: [(c_uint, &str); 21] = [
    (0x0100, "HD_INVALID_ENUM"),
    (0x0101, "HD_INVALID_VALUE"),
    (0x0102, "HD_INVALID_OPERATION"),
    (0x0103, "HD_INVALID_INPUT_TYPE"),
    (0x0104, "HD_BAD_HANDLE"),
    (0x0200, "HD_WARM_MOTORS"),
    (0x0201, "HD_EXCEEDED_MAX_FORCE"),
    (0x0202, "HD_EXCEEDED_MAX_FORCE_IMPULSE"),
    (0x0203, "HD_EXCEEDED_MAX_VELOCITY"),
    (0x0204, "HD_FORCE_ERROR"),
    (0x0300, "HD_DEVICE_FAULT"),
    (0x0301, "HD_DEVICE_ALREADY_INITIATED"),
    (0x0302, "HD_COMM_ERROR"),
    (0x0303, "HD_COMM_CONFIG_ERROR"),
    (0x0304, "HD_TIMER_ERROR"),
    (0x0400, "HD_ILLEGAL_BEGIN"),
    (0x0401, "HD_ILLEGAL_END"),
    (0x0402, "HD_FRAME_ERROR"),
    (0x0500, "HD_INVALID_PRIORITY"),
    (0x0501, "HD_SCHEDULER_FULL"),
    (0x0600, "HD_INVALID_LICENSE"),
];

/// The name `hdDefines.h` gives `code`.
pub fn name(code: c_uint) -> &'static str {
    CODES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("unknown HDAPI error", |(_, n)| n)
}

/// `hduIsSchedulerError`: a communication, timing or scheduler error that prevents
/// the servo loop from running; the only kind that stops palpa.
pub fn is_scheduler_error(code: c_uint) -> bool {
    matches!(code, 0x0302 | 0x0303 | 0x0304 | 0x0500 | 0x0501)
}

/// `hduIsForceError`: a force or velocity limit the device enforced this frame.
pub fn is_force_error(code: c_uint) -> bool {
    matches!(code, 0x0200 | 0x0201 | 0x0203 | 0x0204)
}

/// Non-scheduler errors seen while running, counted per code: the servo thread adds
/// (one atomic add, no allocation), the main thread reads between ticks.
pub struct FaultCounts {
    /// One counter per entry of [`CODES`], then one for codes not listed.
    counts: [AtomicU64; CODES.len() + 1],
}

impl Default for FaultCounts {
    fn default() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl FaultCounts {
    /// Counts one error `code`.
    pub fn add(&self, code: c_uint) {
        let i = CODES
            .iter()
            .position(|(c, _)| *c == code)
            .unwrap_or(CODES.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
    }

    /// How many errors were counted in all.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// `HD_EXCEEDED_MAX_VELOCITY ×2, HD_FORCE_ERROR ×1`, or `None` when none was seen.
    pub fn summary(&self) -> Option<String> {
        let parts: Vec<String> = self
            .counts
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let n = c.load(Ordering::Relaxed);
                let name = CODES.get(i).map_or("unknown HDAPI error", |(_, n)| n);
                (n > 0).then(|| format!("{name} ×{n}"))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_sdks_scheduler_errors_stop_and_the_rest_are_counted_by_name() {
        let stopping: Vec<&str> = CODES
            .iter()
            .filter(|(c, _)| is_scheduler_error(*c))
            .map(|(_, n)| *n)
            .collect();
        assert_eq!(
            stopping,
            [
                "HD_COMM_ERROR",
                "HD_COMM_CONFIG_ERROR",
                "HD_TIMER_ERROR",
                "HD_INVALID_PRIORITY",
                "HD_SCHEDULER_FULL"
            ]
        );
        assert!(is_force_error(0x0203) && !is_force_error(0x0202) && !is_force_error(0x0302));
        let counts = FaultCounts::default();
        assert_eq!(counts.summary(), None);
        counts.add(0x0203);
        counts.add(0x0203);
        counts.add(0x0999);
        assert_eq!(
            counts.summary().as_deref(),
            Some("HD_EXCEEDED_MAX_VELOCITY ×2, unknown HDAPI error ×1")
        );
        assert_eq!(counts.total(), 3);
        assert_eq!(name(0x0300), "HD_DEVICE_FAULT");
    }
}
