//! The haptic and model threads' clock: monotonic time in ns and absolute-deadline
//! sleeps that sleep most of the way and spin the rest.

/// Monotonic time (ns) on the same clock the deadline sleeps use.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the absolute time `deadline_ns` (ns, [`now_ns`] clock) minus `spin_ns`,
/// then spins until the deadline: the kernel's wake-up jitter is absorbed by the spin.
pub fn sleep_until(deadline_ns: u64, spin_ns: u64) {
    let wake = deadline_ns.saturating_sub(spin_ns);
    if now_ns() < wake {
        let ts = libc::timespec {
            tv_sec: (wake / 1_000_000_000) as libc::time_t,
            tv_nsec: (wake % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: valid timespec; TIMER_ABSTIME sleeps to an absolute time and is
        // restarted below on EINTR by the spin loop's check.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
    }
    while now_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}
