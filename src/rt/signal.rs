//! Stop requests from the operating system: SIGINT (Ctrl-C), SIGTERM and SIGHUP set one
//! flag that the loops poll, so every exit path zeroes the force before the process
//! ends. Registered through `signal-hook`, whose handlers only store to the flag
//! (async-signal-safe).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// Signals that ask palpa to stop cleanly.
pub const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The process-wide stop flag, set by SIGINT, SIGTERM or SIGHUP. The first call
/// installs the handlers; a signal that could not be registered is logged once and
/// keeps its default action.
pub fn stop_flag() -> &'static AtomicBool {
    STOP.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in STOP_SIGNALS {
            if let Err(e) = signal_hook::flag::register(signal, flag.clone()) {
                tracing::warn!("cannot handle signal {signal}: {e}; it stops palpa abruptly");
            }
        }
        flag
    })
}
