//! The real-time runtime: a 1 kHz haptic thread and a 200 Hz model thread joined by
//! wait-free slots (probe down, local force model up), a drop-on-full telemetry queue,
//! and a thread that logs tick statistics once a second.

use super::safety::SafetyState;
use super::stats::TickStats;
use super::step_times::StepTimes;
use super::tick::{HapticConfig, HapticLoop, ProbeSample, TickRecord, ZeroForceGuard};
use super::tick_ring::TickSink;
use crate::device::HapticDevice;
use crate::rt::{
    self, slot, DropCounter, RealtimeMode, RealtimePolicy, ResidentSet, SlotReader, SlotWriter,
};
use crate::tissue::{LocalForceModel, ModelStep};
use crate::Vec3;
use crossbeam::queue::ArrayQueue;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

/// The last part of each haptic period spent spinning instead of sleeping (ns).
const SPIN_NS: u64 = 150_000;
/// Time between reconnect attempts of a failed device (s).
const RECONNECT_INTERVAL: f64 = 0.5;
/// The haptic thread's stack (bytes): the Rust default, set explicitly because the
/// locked headroom below must fit in it.
const HAPTIC_STACK_BYTES: usize = 2 << 20;
/// Stack locked below the haptic thread's prologue frame (bytes): room for the deepest
/// tick (device read and write, extrapolation, safety, the deadline sleep) many times
/// over, so no stack page faults in the loop.
const HAPTIC_STACK_HEADROOM: usize = 128 << 10;

/// How to run the threads.
#[derive(Clone, Copy, Debug)]
pub struct RuntimeConfig {
    /// The haptic loop.
    pub haptic: HapticConfig,
    /// Scheduling of the haptic thread (falls back with one warning). Where it gets
    /// SCHED_FIFO the model thread runs SCHED_FIFO too, below it
    /// ([`rt::thread::MODEL_FIFO_PRIORITY`]).
    pub realtime: RealtimePolicy,
    /// Telemetry queue length (ticks); full means new records are dropped.
    pub telemetry_capacity: usize,
    /// Log tick statistics once a second.
    pub log_stats: bool,
}

/// Shared state readable while the runtime runs.
pub struct RuntimeShared {
    /// Tick statistics of the haptic thread.
    pub stats: TickStats,
    /// Per-tick records (drop on full).
    pub telemetry: ArrayQueue<TickRecord>,
    /// Records dropped because nobody drained the queue.
    pub telemetry_dropped: DropCounter,
    stop: AtomicBool,
    failure: OnceLock<String>,
}

impl RuntimeShared {
    /// What made a thread fail (a panic, named by thread), once one has: the threads
    /// then stop, the haptic thread zeroing the force first.
    pub fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// Records that `thread` failed with `payload` and stops every thread.
    fn fail(&self, thread: &str, payload: &(dyn std::any::Any + Send)) {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        self.fail_because(thread, why);
    }

    /// Records that `thread` failed because of `why` and stops every thread.
    fn fail_because(&self, thread: &str, why: String) {
        let _ = self
            .failure
            .set(format!("the {thread} thread failed: {why}"));
        self.stop.store(true, Ordering::Release);
    }
}

/// Running haptic and model threads.
pub struct HapticRuntime<D: HapticDevice + 'static, M: ModelStep + 'static> {
    shared: Arc<RuntimeShared>,
    haptic: Option<JoinHandle<HapticLoop<D>>>,
    model: Option<JoinHandle<M>>,
    logger: Option<JoinHandle<()>>,
}

impl<D: HapticDevice + 'static, M: ModelStep + 'static> HapticRuntime<D, M> {
    /// Starts the threads; the force ramps in once the first model step arrives.
    pub fn start(device: D, model: M, config: RuntimeConfig) -> std::io::Result<Self> {
        Self::start_recording(device, model, config, None)
    }

    /// Starts the threads as [`HapticRuntime::start`] does; with a `recording`, the
    /// haptic thread also pushes every tick's record into it (wait-free, dropped and
    /// counted when full) and, as it stops, one last record of the zero force it
    /// commanded then.
    pub fn start_recording(
        device: D,
        model: M,
        config: RuntimeConfig,
        recording: Option<TickSink>,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(RuntimeShared {
            stats: TickStats::new(),
            telemetry: ArrayQueue::new(config.telemetry_capacity.max(1)),
            telemetry_dropped: DropCounter::default(),
            stop: AtomicBool::new(false),
            failure: OnceLock::new(),
        });
        let (probe_w, probe_r) = slot(ProbeSample {
            t: 0.0,
            position: Vec3::zeros(),
            buttons: 0,
        });
        let (model_w, model_r) = slot(LocalForceModel::NONE);
        let epoch = rt::now_ns();
        let haptic_loop = HapticLoop::new(device, config.haptic);
        let s = shared.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let haptic = std::thread::Builder::new()
            .name("palpa-haptic".into())
            .stack_size(HAPTIC_STACK_BYTES)
            .spawn(move || {
                let ports = Ports {
                    probe_out: probe_w,
                    model_in: model_r,
                    recording,
                };
                haptic_thread(haptic_loop, ports, &s, epoch, config, ready_tx)
            })?;
        // The prologue reports whether the thread may run (`Required` without SCHED_FIFO
        // may not); the loop starts only after that.
        let haptic_priority = match ready_rx.recv() {
            Ok(Err(refused)) => {
                let _ = haptic.join();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    refused,
                ));
            }
            Ok(Ok(priority)) => priority,
            // The haptic thread ended before reporting: `stop` says why.
            Err(_) => None,
        };
        let s = shared.clone();
        let period = model.call_period(config.haptic.model_period());
        let (model_ready_tx, model_ready_rx) = std::sync::mpsc::sync_channel(1);
        let model = std::thread::Builder::new()
            .name("palpa-model".into())
            .spawn(move || {
                let setup = rt::set_up_model_thread(haptic_priority);
                let _ = model_ready_tx.send(());
                match setup {
                    Ok(Some(priority)) => tracing::info!(
                        "model thread: SCHED_FIFO priority {priority}, below the haptic thread's"
                    ),
                    Ok(None) => {}
                    Err(why) => {
                        tracing::warn!("model thread: {why}; it runs on the normal scheduler")
                    }
                }
                let late_ns = (config.haptic.limits.model_timeout * 1e9) as u64;
                model_thread(model, probe_r, model_w, &s, epoch, period, late_ns)
            })?;
        // Returns with the model thread at its scheduling, as the haptic thread: what
        // announces the start (serve's `model: ready`) must not come before it.
        let _ = model_ready_rx.recv();
        let logger = if config.log_stats {
            let s = shared.clone();
            Some(
                std::thread::Builder::new()
                    .name("palpa-stats".into())
                    .spawn(move || log_stats(&s))?,
            )
        } else {
            None
        };
        Ok(Self {
            shared,
            haptic: Some(haptic),
            model: Some(model),
            logger,
        })
    }

    /// Statistics and telemetry (clone the `Arc` to keep them after `stop`).
    pub fn shared(&self) -> &Arc<RuntimeShared> {
        &self.shared
    }

    /// Stops the threads (the haptic thread zeroes the force first) and returns the
    /// haptic loop and the model.
    pub fn stop(mut self) -> (HapticLoop<D>, M) {
        self.shared.stop.store(true, Ordering::Release);
        let haptic = self.haptic.take().expect("joined once").join();
        let model = self.model.take().expect("joined once").join();
        if let Some(l) = self.logger.take() {
            let _ = l.join();
        }
        tracing::info!(
            "haptic loop, whole run: {}",
            self.shared.stats.snapshot().summary()
        );
        match (haptic, model) {
            (Ok(h), Ok(m)) => (h, m),
            (Err(e), _) | (_, Err(e)) => std::panic::resume_unwind(e),
        }
    }
}

impl<D: HapticDevice + 'static, M: ModelStep + 'static> Drop for HapticRuntime<D, M> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(h) = self.haptic.take() {
            let _ = h.join();
        }
        if let Some(m) = self.model.take() {
            let _ = m.join();
        }
        if let Some(l) = self.logger.take() {
            let _ = l.join();
        }
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

/// What the haptic thread hands on and takes in every tick.
struct Ports {
    probe_out: SlotWriter<ProbeSample>,
    model_in: SlotReader<LocalForceModel>,
    recording: Option<TickSink>,
}

fn haptic_thread<D: HapticDevice>(
    mut haptic: HapticLoop<D>,
    mut ports: Ports,
    shared: &RuntimeShared,
    epoch: u64,
    config: RuntimeConfig,
    ready: std::sync::mpsc::SyncSender<Result<Option<i32>, String>>,
) -> HapticLoop<D> {
    // Everything the loop below touches: this thread's stack (the loop state lives in
    // this frame), the hand-off slots, the statistics and the device's own memory.
    let mut resident = ResidentSet::new();
    let stack = resident.add_current_stack(HAPTIC_STACK_HEADROOM);
    resident.add_value(shared);
    resident.add(ports.probe_out.storage());
    resident.add(ports.model_in.storage());
    haptic.device().resident_memory(&mut resident);
    let _locked = match rt::set_up_current_thread(config.realtime, &resident) {
        Ok(mut setup) => {
            if config.realtime.mode != RealtimeMode::Off {
                if let Err(e) = stack {
                    setup.problems.push(format!("stack not locked: {e}"));
                }
                tracing::info!("haptic thread: {}", setup.summary());
            }
            if let Some(warning) = setup.warning() {
                tracing::warn!("haptic thread: {warning}");
            }
            let _ = ready.send(Ok(setup.fifo_priority));
            setup.locked
        }
        Err(refused) => {
            let _ = ready.send(Err(refused));
            let _ = haptic.device_mut().zero_force();
            return haptic;
        }
    };
    let period = (config.haptic.tick_period * 1e9).round() as u64;
    let mut last_record = None;
    // A panic unwinds through the guard, which zeroes the force, and stops the runtime.
    let run = catch_unwind(AssertUnwindSafe(|| {
        let mut guard = ZeroForceGuard(&mut haptic);
        let mut pacing = Pacing {
            epoch,
            period,
            deadline: epoch + period,
            previous_wake: None,
            last_reconnect: f64::NEG_INFINITY,
            last_record: &mut last_record,
        };
        match guard.device_mut().external_pacer() {
            None => {
                while !shared.stop.load(Ordering::Relaxed) {
                    rt::sleep_until(pacing.deadline, SPIN_NS);
                    haptic_tick(&mut guard, &mut ports, shared, &mut pacing);
                }
            }
            // The device's servo clock calls the same tick on its own thread; this
            // thread waits in `run` until the ticks end. Each call is on time by
            // definition, so its deadline is its wake-up.
            Some(mut pacer) => {
                let ticks = pacer.run(&mut || {
                    pacing.deadline = rt::now_ns();
                    haptic_tick(&mut guard, &mut ports, shared, &mut pacing);
                    !shared.stop.load(Ordering::Relaxed)
                });
                if let Err(e) = ticks {
                    shared.fail_because("haptic", e.to_string());
                }
            }
        }
    }));
    if let Err(payload) = run {
        shared.fail("haptic", payload.as_ref());
    }
    // The guard has zeroed the force: the recording ends on that command, marked so.
    if let (Some(sink), Some(last)) = (ports.recording.as_mut(), last_record) {
        sink.push(TickRecord {
            t: seconds(rt::now_ns() - epoch),
            force: Vec3::zeros(),
            state: SafetyState::Stopped,
            ..last
        });
    }
    haptic
}

/// The haptic thread's clock between ticks, and its last tick's record.
struct Pacing<'a> {
    epoch: u64,
    period: u64,
    deadline: u64,
    previous_wake: Option<u64>,
    last_reconnect: f64,
    last_record: &'a mut Option<TickRecord>,
}

/// One haptic tick at its deadline: sense, hand the probe down, actuate with the newest
/// force model, telemetry and statistics, then (between ticks) a reconnect attempt of a
/// failed device. The self-paced loop and a device's own servo clock both run this.
fn haptic_tick<D: HapticDevice>(
    haptic: &mut HapticLoop<D>,
    ports: &mut Ports,
    shared: &RuntimeShared,
    pacing: &mut Pacing,
) {
    let wake = rt::now_ns();
    let t = seconds(wake - pacing.epoch);
    if let Some(p) = haptic.sense(t) {
        ports.probe_out.write(p);
    }
    let (model, version) = ports.model_in.read();
    let record = haptic.actuate(t, &model, version);
    if shared.telemetry.push(record).is_err() {
        shared.telemetry_dropped.add();
    }
    if let Some(sink) = ports.recording.as_mut() {
        sink.push(record);
    }
    *pacing.last_record = Some(record);
    let done = rt::now_ns();
    // The first tick has no period (the thread started at an arbitrary time).
    if let Some(previous) = pacing.previous_wake {
        shared.stats.record(
            wake - previous,
            wake.saturating_sub(pacing.deadline),
            done - wake,
        );
    }
    pacing.previous_wake = Some(wake);
    pacing.deadline += pacing.period;
    if done > pacing.deadline {
        let behind = (done - pacing.deadline) / pacing.period + 1;
        pacing.deadline += behind * pacing.period;
        shared.stats.record_skipped(behind);
    }
    // Reconnecting may block for milliseconds: it runs between ticks, with the
    // force already zero, never inside one.
    if haptic.device_failed() && t - pacing.last_reconnect >= RECONNECT_INTERVAL {
        pacing.last_reconnect = t;
        if haptic.try_reconnect(t) {
            tracing::info!("device {} reconnected", haptic.device().name());
        }
    }
}

fn model_thread<M: ModelStep>(
    mut model: M,
    mut probe_in: SlotReader<ProbeSample>,
    mut model_out: SlotWriter<LocalForceModel>,
    shared: &RuntimeShared,
    epoch: u64,
    period_s: f64,
    late_ns: u64,
) -> M {
    let period = (period_s * 1e9).round() as u64;
    let mut deadline = epoch + period;
    let mut times = StepTimes::new();
    let run = catch_unwind(AssertUnwindSafe(|| {
        while !shared.stop.load(Ordering::Relaxed) {
            rt::sleep_until(deadline, 0);
            let (probe, version) = probe_in.read();
            if version > 0 {
                let wake = rt::now_ns();
                let t = seconds(wake - epoch);
                let published = model.step_if_new(t, period_s, probe.position).map(|next| {
                    model_out.write(next);
                    rt::now_ns()
                });
                let done = published.unwrap_or_else(rt::now_ns);
                times.record(wake.saturating_sub(deadline), done - wake, published);
            }
            deadline += period;
            let now = rt::now_ns();
            if now > deadline {
                deadline += ((now - deadline) / period + 1) * period;
            }
        }
    }));
    if let Err(payload) = run {
        // The haptic thread sees the stop flag within a tick and zeroes the force.
        shared.fail("model", payload.as_ref());
    }
    tracing::info!("model thread, whole run: {}", times.summary(late_ns));
    model
}

fn log_stats(shared: &RuntimeShared) {
    let mut previous = shared.stats.snapshot();
    let mut waited = Duration::ZERO;
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
        if waited >= Duration::from_secs(1) {
            waited = Duration::ZERO;
            let now = shared.stats.snapshot();
            tracing::info!(
                "haptic loop: {}; telemetry dropped {}",
                now.since(&previous).summary(),
                shared.telemetry_dropped.get()
            );
            previous = now;
        }
    }
}
