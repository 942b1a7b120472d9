//! Real-time set-up of the calling thread: SCHED_FIFO where the process may have it,
//! 1 ns timer slack, optional core pinning, and its memory locked ([`super::memory`]).

use super::memory::{rlimit, LockedMemory, ResidentSet};
use std::fmt;
use std::str::FromStr;

/// Highest SCHED_FIFO priority palpa asks for: one below the kernel's threaded
/// interrupt handlers, which run at FIFO 50 (`irq/…` threads on PREEMPT_RT and
/// `threadirqs` kernels; `ps -eLo cls,rtprio,comm` lists them). The USB host
/// controller's interrupt that delivers the device's own reports must preempt the
/// haptic thread, never wait behind it; everything else on a desktop runs below.
pub const MAX_FIFO_PRIORITY: i32 = 49;

/// SCHED_FIFO priority of the model thread, the lowest real-time one: above every
/// normal thread (a browser drawing the viewer, a build), below the haptic thread,
/// which preempts it at any moment: beside a browser on the normal scheduler the
/// watchdog faded the force for a stalled model thread (docs/realtime.md).
pub const MODEL_FIFO_PRIORITY: i32 = 1;

/// Where the documentation on allowing real-time scheduling lives.
pub const HOW_TO_ALLOW: &str = "docs/realtime.md";

/// Linux capability numbers (linux/capability.h).
const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_NICE: u32 = 23;

/// Whether a thread asks for real-time scheduling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RealtimeMode {
    /// Normal scheduling, nothing locked (tests that run many servers at once).
    Off,
    /// SCHED_FIFO and locked memory where permitted, else one warning and run anyway.
    #[default]
    Auto,
    /// Like `Auto`, but a thread that cannot have SCHED_FIFO does not start.
    Required,
}

impl FromStr for RealtimeMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(Self::Off),
            "auto" => Ok(Self::Auto),
            "required" => Ok(Self::Required),
            other => Err(format!(
                "unknown real-time mode `{other}`: expected off, auto or required"
            )),
        }
    }
}

impl fmt::Display for RealtimeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Off => "off",
            Self::Auto => "auto",
            Self::Required => "required",
        })
    }
}

/// Real-time scheduling wish for a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealtimePolicy {
    /// Whether to ask for SCHED_FIFO and locked memory.
    pub mode: RealtimeMode,
    /// Core to pin the thread to.
    pub core: Option<usize>,
}

impl RealtimePolicy {
    /// Normal scheduling, no pinning, nothing locked (tests, CI).
    pub const NONE: Self = Self {
        mode: RealtimeMode::Off,
        core: None,
    };
    /// SCHED_FIFO and locked memory where permitted, not pinned (`palpa serve`'s default).
    pub const AUTO: Self = Self {
        mode: RealtimeMode::Auto,
        core: None,
    };
}

/// What the calling thread may ask of the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FifoAllowance {
    /// CAP_SYS_NICE is in the thread's effective set (root has it): any priority.
    pub cap_sys_nice: bool,
    /// RLIMIT_RTPRIO's soft limit: the highest priority without the capability.
    pub rtprio_limit: u64,
}

impl FifoAllowance {
    /// The calling thread's allowance (`/proc/thread-self/status`, `getrlimit`).
    pub fn of_current_thread() -> Self {
        Self {
            cap_sys_nice: has_capability(CAP_SYS_NICE),
            rtprio_limit: rlimit(libc::RLIMIT_RTPRIO),
        }
    }

    /// The SCHED_FIFO priority to ask for (capped at [`MAX_FIFO_PRIORITY`]), `None`
    /// when the thread may not have SCHED_FIFO at all.
    pub fn priority(&self) -> Option<i32> {
        if self.cap_sys_nice {
            Some(MAX_FIFO_PRIORITY)
        } else if self.rtprio_limit > 0 {
            Some(self.rtprio_limit.min(MAX_FIFO_PRIORITY as u64) as i32)
        } else {
            None
        }
    }
}

/// What setting up the thread achieved.
#[derive(Debug)]
pub struct ThreadSetup {
    /// The SCHED_FIFO priority the thread runs at; `None`: the normal scheduler.
    pub fifo_priority: Option<i32>,
    /// The memory locked for the thread (unlocked when this drops).
    pub locked: LockedMemory,
    /// What could not be done, each naming what was missing.
    pub problems: Vec<String>,
}

impl ThreadSetup {
    /// The one warning line for everything that could not be done, with how to allow
    /// it; `None` when everything asked for was granted.
    pub fn warning(&self) -> Option<String> {
        if self.problems.is_empty() {
            return None;
        }
        let scheduler = match self.fifo_priority {
            Some(p) => format!("SCHED_FIFO {p}"),
            None => "the normal scheduler".into(),
        };
        Some(format!(
            "{}; running on {scheduler}. To allow real-time: `setcap cap_sys_nice,cap_ipc_lock+ep` \
             on the binary, or rtprio and memlock in /etc/security/limits.conf, or \
             LimitRTPRIO=/LimitMEMLOCK= in a systemd unit (see {HOW_TO_ALLOW})",
            self.problems.join("; ")
        ))
    }

    /// One line for the log: scheduler and locked memory.
    pub fn summary(&self) -> String {
        let kib = |b: usize| b.div_ceil(1024);
        format!(
            "{}, {} KiB locked ({} KiB stack, {} KiB state and buffers)",
            match self.fifo_priority {
                Some(p) => format!("SCHED_FIFO priority {p}"),
                None => "normal scheduler".into(),
            },
            kib(self.locked.bytes()),
            kib(self.locked.stack_bytes),
            kib(self.locked.data_bytes)
        )
    }
}

/// Sets up the calling thread for `policy`: pins it, locks `resident` (with `Off`,
/// nothing), sets 1 ns timer slack and asks for SCHED_FIFO at the priority the
/// process may have. Everything that cannot be done is collected for one warning; the
/// only error is `Required` without SCHED_FIFO (nothing is left locked then).
pub fn set_up_current_thread(
    policy: RealtimePolicy,
    resident: &ResidentSet,
) -> Result<ThreadSetup, String> {
    let mut setup = ThreadSetup {
        fifo_priority: None,
        locked: LockedMemory::default(),
        problems: Vec::new(),
    };
    if let Some(core) = policy.core {
        if let Err(e) = pin_to_core(core) {
            setup.problems.push(format!("pin to core {core}: {e}"));
        }
    }
    if policy.mode == RealtimeMode::Off {
        return Ok(setup);
    }
    // Wake-ups from clock_nanosleep as close to the deadline as the timer allows: the
    // default slack of normal threads is 50 µs (real-time threads have none).
    // SAFETY: PR_SET_TIMERSLACK takes an integer (ns) and affects this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
    let allowance = FifoAllowance::of_current_thread();
    let fifo = match allowance.priority() {
        None => Err(format!(
            "SCHED_FIFO not permitted (no CAP_SYS_NICE, RLIMIT_RTPRIO {})",
            allowance.rtprio_limit
        )),
        Some(priority) => set_fifo(priority)
            .map(|()| priority)
            .map_err(|e| format!("SCHED_FIFO priority {priority}: {e}")),
    };
    match fifo {
        Ok(priority) => setup.fifo_priority = Some(priority),
        Err(why) if policy.mode == RealtimeMode::Required => {
            return Err(format!(
                "real-time scheduling is required but {why}; see {HOW_TO_ALLOW}"
            ))
        }
        Err(why) => setup.problems.push(why),
    }
    let (locked, failure) = resident.lock();
    setup.locked = locked;
    if let Some(why) = failure {
        let why = if has_capability(CAP_IPC_LOCK) {
            why
        } else {
            format!("{why} without CAP_IPC_LOCK")
        };
        setup.problems.push(why);
    }
    Ok(setup)
}

/// Raises the calling thread, the model thread, to SCHED_FIFO [`MODEL_FIFO_PRIORITY`]
/// when the haptic thread runs SCHED_FIFO at `haptic_priority` above it; `Ok(None)`
/// when it does not (the model thread must never hold off the haptic thread, so with
/// the haptic thread on the normal scheduler, or at priority 1 itself, the model thread
/// stays normal too). The error names what the kernel refused.
pub fn set_up_model_thread(haptic_priority: Option<i32>) -> Result<Option<i32>, String> {
    match haptic_priority {
        Some(p) if p > MODEL_FIFO_PRIORITY => set_fifo(MODEL_FIFO_PRIORITY)
            .map(|()| Some(MODEL_FIFO_PRIORITY))
            .map_err(|e| format!("SCHED_FIFO priority {MODEL_FIFO_PRIORITY}: {e}")),
        _ => Ok(None),
    }
}

fn pin_to_core(core: usize) -> Result<(), std::io::Error> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; pid 0 = this thread.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn set_fifo(priority: i32) -> Result<(), std::io::Error> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: valid sched_param; pid 0 = this thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether capability `cap` is in the calling thread's effective set
/// (`CapEff` of `/proc/thread-self/status`; capabilities are per thread).
fn has_capability(cap: u32) -> bool {
    std::fs::read_to_string("/proc/thread-self/status")
        .ok()
        .and_then(|status| {
            let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .is_some_and(|effective| effective & (1 << cap) != 0)
}

/// Sets the calling thread's nice value to `nice` (negative: a larger CPU share) where
/// allowed (root or CAP_SYS_NICE); whether it was set. For helper threads the hand
/// depends on but that must never preempt the real-time ones (columns, the tick writer).
#[cfg(target_os = "linux")]
pub fn raise_thread_share(nice: i32) -> bool {
    // SAFETY: gettid and setpriority take no pointers; on Linux PRIO_PROCESS with a
    // thread id sets that thread's nice value only.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0
    }
}

/// Elsewhere threads keep the normal share.
#[cfg(not(target_os = "linux"))]
pub fn raise_thread_share(_nice: i32) -> bool {
    false
}

/// The calling thread's scheduling policy and priority.
pub fn current_scheduling() -> (i32, i32) {
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 = this thread; valid out-pointer.
    let policy = unsafe {
        libc::sched_getparam(0, &mut param);
        libc::sched_getscheduler(0)
    };
    (policy, param.sched_priority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_follows_the_capability_then_the_rtprio_limit_capped_below_irq_threads() {
        let p = |cap_sys_nice, rtprio_limit| {
            FifoAllowance {
                cap_sys_nice,
                rtprio_limit,
            }
            .priority()
        };
        assert_eq!(p(true, 0), Some(49));
        assert_eq!(p(true, 10), Some(49));
        assert_eq!(p(false, 0), None);
        assert_eq!(p(false, 20), Some(20));
        assert_eq!(p(false, 95), Some(49));
        assert_eq!(p(false, libc::RLIM_INFINITY), Some(49));
    }

    #[test]
    fn modes_parse_and_print_and_bad_ones_are_named() {
        for mode in [
            RealtimeMode::Off,
            RealtimeMode::Auto,
            RealtimeMode::Required,
        ] {
            assert_eq!(mode.to_string().parse::<RealtimeMode>(), Ok(mode));
        }
        let err = "fast".parse::<RealtimeMode>().unwrap_err();
        assert!(
            err.contains("`fast`") && err.contains("off, auto or required"),
            "{err}"
        );
    }

    /// The calling thread's timer slack (ns).
    fn timer_slack() -> i32 {
        // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the slack.
        unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) }
    }

    /// Drops CAP_SYS_NICE from the calling thread's effective set (capabilities are per
    /// thread on Linux; the rest of the process keeps it).
    fn drop_cap_sys_nice() {
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const VERSION_3: u32 = 0x2008_0522;
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data::default(); 2];
        // SAFETY: capget/capset with the v3 header and two data words, as the ABI says.
        unsafe {
            assert_eq!(
                libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()),
                0
            );
            data[0].effective &= !(1 << CAP_SYS_NICE);
            assert_eq!(libc::syscall(libc::SYS_capset, &header, data.as_ptr()), 0);
        }
    }

    #[test]
    fn without_permission_auto_runs_normally_with_a_warning_and_required_refuses() {
        std::thread::spawn(|| {
            drop_cap_sys_nice();
            let allowance = FifoAllowance::of_current_thread();
            assert!(!allowance.cap_sys_nice);
            if allowance.rtprio_limit > 0 {
                return; // RLIMIT_RTPRIO grants FIFO anyway: nothing to refuse here.
            }
            let resident = ResidentSet::new();
            let required = RealtimePolicy {
                mode: RealtimeMode::Required,
                core: None,
            };
            let err = set_up_current_thread(required, &resident).unwrap_err();
            assert!(
                err.contains("CAP_SYS_NICE")
                    && err.contains("RLIMIT_RTPRIO 0")
                    && err.contains(HOW_TO_ALLOW),
                "{err}"
            );
            let setup = set_up_current_thread(RealtimePolicy::AUTO, &resident).unwrap();
            assert_eq!(setup.fifo_priority, None);
            assert_eq!(current_scheduling().0, libc::SCHED_OTHER);
            assert_eq!(timer_slack(), 1);
            let warning = setup.warning().expect("one warning");
            assert!(!warning.contains('\n'), "{warning}");
            assert!(
                warning.contains("SCHED_FIFO not permitted")
                    && warning.contains("normal scheduler")
                    && warning.contains(HOW_TO_ALLOW),
                "{warning}"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn with_permission_the_thread_runs_fifo_at_the_allowed_priority() {
        std::thread::spawn(|| {
            let allowance = FifoAllowance::of_current_thread();
            let Some(expected) = allowance.priority() else {
                return; // not permitted on this machine: covered by the test above
            };
            let setup = set_up_current_thread(RealtimePolicy::AUTO, &ResidentSet::new()).unwrap();
            if setup.fifo_priority.is_none() {
                // Permitted by capability or limit but refused by the kernel (e.g. a
                // cgroup without real-time budget): it must say so.
                assert!(setup.warning().unwrap().contains("SCHED_FIFO priority"));
                return;
            }
            assert_eq!(setup.fifo_priority, Some(expected));
            assert_eq!(current_scheduling(), (libc::SCHED_FIFO, expected));
            // The kernel gives real-time threads no slack (older kernels keep our 1 ns).
            assert!(timer_slack() <= 1);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn off_changes_nothing() {
        std::thread::spawn(|| {
            let before = current_scheduling();
            let setup = set_up_current_thread(RealtimePolicy::NONE, &ResidentSet::new()).unwrap();
            assert_eq!(setup.fifo_priority, None);
            assert!(setup.warning().is_none());
            assert_eq!(current_scheduling(), before);
        })
        .join()
        .unwrap();
    }
}
