//! Real-time plumbing for the haptic and model threads: a monotonic clock in ns,
//! absolute-deadline sleeps (sleep most of the way, spin the rest), SCHED_FIFO and core
//! pinning, and a Ctrl-C flag. Linux only (libc), like the hidraw backend.

use std::sync::atomic::{AtomicBool, Ordering};

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

/// Real-time scheduling wish for a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealtimePolicy {
    /// SCHED_FIFO priority (1–99); `None` keeps the normal scheduler.
    pub fifo_priority: Option<i32>,
    /// Core to pin the thread to.
    pub core: Option<usize>,
}

impl RealtimePolicy {
    /// Normal scheduling, no pinning (tests, CI).
    pub const NONE: Self = Self {
        fifo_priority: None,
        core: None,
    };
}

/// Applies `policy` to the calling thread. Returns what could not be done (for one
/// warning); the thread runs on regardless.
pub fn apply_to_current_thread(policy: RealtimePolicy) -> Result<(), String> {
    let mut problems = Vec::new();
    if let Some(core) = policy.core {
        // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; pid 0 = this thread.
        let r = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(core, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if r != 0 {
            problems.push(format!(
                "pin to core {core}: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    if let Some(priority) = policy.fifo_priority {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: valid sched_param; pid 0 = this thread.
        let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        if r != 0 {
            problems.push(format!(
                "SCHED_FIFO priority {priority}: {}",
                std::io::Error::last_os_error()
            ));
        } else {
            // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer (ns).
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
            // Keep every page resident so the real-time thread never waits on a fault.
            // SAFETY: plain syscall on this process.
            if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
                problems.push(format!("mlockall: {}", std::io::Error::last_os_error()));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs a SIGINT/SIGTERM handler that only sets a flag (async-signal-safe), and
/// returns the flag: loops poll it and shut down cleanly, zeroing the force.
pub fn interrupt_flag() -> &'static AtomicBool {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
    &INTERRUPTED
}
