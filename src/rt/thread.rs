//! Real-time scheduling of the calling thread: SCHED_FIFO, core pinning, and keeping
//! its pages resident.

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
