//! Running the check's tick: in real time at 1 kHz (on the device's own servo clock
//! where its SDK has one, as `serve` runs its haptic tick), or in virtual time for tests
//! against stand-ins that answer every report at once. And the terminal as the
//! [`Operator`]: prompts printed by a thread of their own, Enter read by another.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam::queue::ArrayQueue;

use super::engine::{CheckLoop, Operator};
use super::findings::{Finding, Outcome};
use super::plan::Prompt;
use crate::device::{DeviceError, HapticDevice};
use crate::rt;

/// How the check's ticks are paced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    /// 1 kHz of wall-clock time (or the SDK's servo clock), until `stop` is set.
    RealTime,
    /// `dt` s of virtual time per tick, at most `limit` s (a stand-in answers at once).
    Virtual {
        /// Time per tick (s).
        dt: f64,
        /// Longest check (s of virtual time).
        limit: f64,
    },
}

/// The tick period of the real-time check (ns): 1 kHz, as `serve`'s haptic loop.
const PERIOD_NS: u64 = 1_000_000;
/// The last part of each period spent spinning instead of sleeping (ns).
const SPIN_NS: u64 = 150_000;

/// Runs `check` on `device` (device frame) until it ends, `stop` is set or `pacing`'s
/// limit passes; the force is zero when this returns. Returns the outcome.
pub fn run(
    check: &mut CheckLoop,
    device: &mut dyn HapticDevice,
    operator: &mut dyn Operator,
    pacing: Pacing,
    stop: &AtomicBool,
) -> Outcome {
    let ran = match pacing {
        Pacing::Virtual { dt, limit } => {
            let mut k = 0u64;
            loop {
                let t = k as f64 * dt;
                if t > limit || stop.load(Ordering::Relaxed) || !check.tick(t, device, operator) {
                    break;
                }
                k += 1;
            }
            Ok(())
        }
        Pacing::RealTime => run_realtime(check, device, operator, stop),
    };
    let _ = device.zero_force();
    let mut outcome = check.outcome();
    match ran {
        Err(_) => outcome.findings.push(Finding::DeviceLost {
            step: check.plan().steps[0],
        }),
        Ok(()) if !check.finished() && !outcome.findings.iter().any(Finding::fails) => {
            outcome.findings.push(Finding::Interrupted)
        }
        Ok(()) => {}
    }
    outcome
}

fn run_realtime(
    check: &mut CheckLoop,
    device: &mut dyn HapticDevice,
    operator: &mut dyn Operator,
    stop: &AtomicBool,
) -> Result<(), DeviceError> {
    let epoch = rt::now_ns();
    let seconds = |ns: u64| (ns - epoch) as f64 * 1e-9;
    if let Some(mut pacer) = device.external_pacer() {
        return pacer.run(&mut || {
            !stop.load(Ordering::Relaxed) && check.tick(seconds(rt::now_ns()), device, operator)
        });
    }
    let mut deadline = epoch + PERIOD_NS;
    while !stop.load(Ordering::Relaxed) {
        rt::sleep_until(deadline, SPIN_NS);
        if !check.tick(seconds(rt::now_ns()), device, operator) {
            break;
        }
        deadline += PERIOD_NS;
        let now = rt::now_ns();
        if now > deadline {
            deadline = now + PERIOD_NS;
        }
    }
    Ok(())
}

/// The terminal as the check's [`Operator`]: prompts go through a bounded queue (the
/// tick never waits) to a printing thread; Enter on stdin sets a flag the tick reads.
pub struct TerminalOperator {
    prompts: Arc<ArrayQueue<Prompt>>,
    entered: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    printer: Option<JoinHandle<()>>,
}

impl TerminalOperator {
    /// Starts the printing thread and the stdin reader.
    pub fn start() -> std::io::Result<Self> {
        let prompts = Arc::new(ArrayQueue::<Prompt>::new(64));
        let entered = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (queue, finished) = (prompts.clone(), done.clone());
        let printer = std::thread::Builder::new()
            .name("palpa-check-prompts".into())
            .spawn(move || loop {
                let last = finished.load(Ordering::Acquire);
                while let Some(p) = queue.pop() {
                    println!("check: {}", p.text());
                    let _ = std::io::stdout().flush();
                }
                if last {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            })?;
        let flag = entered.clone();
        // The reader blocks on stdin; it ends with the process (or at end of input).
        std::thread::Builder::new()
            .name("palpa-check-enter".into())
            .spawn(move || {
                for line in std::io::stdin().lines() {
                    if line.is_err() {
                        break;
                    }
                    flag.store(true, Ordering::Release);
                }
            })?;
        Ok(Self {
            prompts,
            entered,
            done,
            printer: Some(printer),
        })
    }

    /// Prints what is still queued and stops the printing thread.
    pub fn finish(mut self) {
        self.stop_printer();
    }

    fn stop_printer(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(p) = self.printer.take() {
            let _ = p.join();
        }
    }
}

impl Drop for TerminalOperator {
    fn drop(&mut self) {
        self.stop_printer();
    }
}

impl Operator for TerminalOperator {
    fn show(&mut self, prompt: Prompt) {
        // A full queue drops the newest prompt rather than wait in the tick.
        let _ = self.prompts.push(prompt);
    }

    fn confirmed(&mut self) -> bool {
        self.entered.load(Ordering::Relaxed) && self.entered.swap(false, Ordering::AcqRel)
    }
}
