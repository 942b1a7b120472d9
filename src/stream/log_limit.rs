//! Rate limits for the stream's log lines: a flood of bad or surplus client messages must
//! not become a flood of log lines.
//!
//! Hand-written: a one-second window with a counter is all this needs; a general rate
//! limiter crate (token buckets, clocks, keyed stores) would be more code to trust than
//! the window itself.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One budget of log lines per one-second window.
#[derive(Debug)]
pub(crate) struct LogBudget {
    lines_per_second: u32,
    window: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    used: u32,
    suppressed: u64,
}

/// What a [`LogBudget`] says about one more line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Log it; `suppressed` lines were held back since the last admitted one.
    Log {
        /// Lines held back before this one.
        suppressed: u64,
    },
    /// The window's budget is spent: count it and stay silent.
    Suppress,
}

const WINDOW: Duration = Duration::from_secs(1);

impl LogBudget {
    /// A budget of `lines_per_second` lines per one-second window.
    pub(crate) fn new(lines_per_second: u32) -> Self {
        Self {
            lines_per_second,
            window: Mutex::new(Window {
                start: Instant::now(),
                used: 0,
                suppressed: 0,
            }),
        }
    }

    /// Spends one line of the current window if any is left.
    pub(crate) fn admit(&self) -> Admit {
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now.duration_since(w.start) >= WINDOW {
            w.start = now;
            w.used = 0;
        }
        if w.used < self.lines_per_second {
            w.used += 1;
            Admit::Log {
                suppressed: std::mem::take(&mut w.suppressed),
            }
        } else {
            w.suppressed += 1;
            Admit::Suppress
        }
    }

    /// Spends one line of the current window if any is left, without counting a refused
    /// line as suppressed (the caller's own budget counts it).
    fn try_spend(&self) -> bool {
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now.duration_since(w.start) >= WINDOW {
            w.start = now;
            w.used = 0;
        }
        let room = w.used < self.lines_per_second;
        w.used += u32::from(room);
        room
    }

    /// Returns a line that was admitted here but refused by another budget, so it is
    /// counted as suppressed here and the count is not lost.
    pub(crate) fn refund_as_suppressed(&self, suppressed: u64) {
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        w.suppressed += suppressed + 1;
    }

    /// Takes the count of lines held back and not yet reported.
    pub(crate) fn take_suppressed(&self) -> u64 {
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut w.suppressed)
    }
}

/// Admits a line only if both `local` (one connection's) and `global` (the server's)
/// budgets have room; returns the number of `local`'s lines suppressed before it, or
/// `None`. Every refused line is counted by `local` alone, so each is reported once.
pub(crate) fn admit_both(local: &LogBudget, global: &LogBudget) -> Option<u64> {
    let Admit::Log { suppressed } = local.admit() else {
        return None;
    };
    if global.try_spend() {
        Some(suppressed)
    } else {
        local.refund_as_suppressed(suppressed);
        None
    }
}

/// Logs a warning through the connection's and the server's budgets; an admitted line
/// carries the field `suppressed`: how many of the connection's lines were held back
/// before it.
macro_rules! limited_warn {
    ($local:expr, $global:expr, $($arg:tt)+) => {
        if let Some(suppressed) = $crate::stream::log_limit::admit_both($local, $global) {
            tracing::warn!(suppressed, $($arg)+);
        }
    };
}
pub(crate) use limited_warn;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_admits_its_lines_then_counts_the_rest() {
        let budget = LogBudget::new(3);
        for _ in 0..3 {
            assert_eq!(budget.admit(), Admit::Log { suppressed: 0 });
        }
        for _ in 0..1000 {
            assert_eq!(budget.admit(), Admit::Suppress);
        }
        assert_eq!(budget.take_suppressed(), 1000);
        assert_eq!(budget.take_suppressed(), 0);
    }

    #[test]
    fn a_new_window_reports_what_the_last_one_held_back() {
        let budget = LogBudget::new(1);
        assert_eq!(budget.admit(), Admit::Log { suppressed: 0 });
        assert_eq!(budget.admit(), Admit::Suppress);
        assert_eq!(budget.admit(), Admit::Suppress);
        std::thread::sleep(WINDOW + Duration::from_millis(20));
        assert_eq!(budget.admit(), Admit::Log { suppressed: 2 });
    }

    #[test]
    fn the_global_budget_caps_many_local_ones() {
        let global = LogBudget::new(5);
        let locals: Vec<LogBudget> = (0..100).map(|_| LogBudget::new(5)).collect();
        let admitted = locals
            .iter()
            .filter(|local| admit_both(local, &global).is_some())
            .count();
        assert_eq!(admitted, 5);
        let held: u64 = locals.iter().map(LogBudget::take_suppressed).sum();
        assert_eq!(held, 95, "every refused line is counted by its connection");
        assert_eq!(global.take_suppressed(), 0, "and by nobody else");
    }
}
