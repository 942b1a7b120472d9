//! A real-time run of the haptic runtime: 1 kHz haptic thread and 200 Hz model thread
//! with the sim device circling 3 mm deep in the Hertz tissue, for the "Haptic loop"
//! numbers in docs/benchmarks.md.
//!
//! `cargo run --release --example haptic_realtime -- [SECONDS] [--fifo]`
//! (`--fifo` asks for SCHED_FIFO on core 1, at the priority `palpa::rt::thread` allows,
//! and locks the haptic thread's memory; without permission it refuses to start; `--no-log` turns the once-a-second statistics log off). Ctrl-C stops
//! early with the force zeroed.

use palpa::device::sim::{Script, SimDevice};
use palpa::device::HapticDevice;
use palpa::haptic::analytic::HertzHalfSpace;
use palpa::haptic::runtime::{HapticRuntime, RuntimeConfig};
use palpa::haptic::{HapticConfig, SafetyLimits};
use palpa::rt::{stop_flag, RealtimeMode, RealtimePolicy};
use palpa::Vec3;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: f64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(60.0);
    let fifo = args.iter().any(|a| a == "--fifo");
    let log_stats = !args.iter().any(|a| a == "--no-log");
    let device = SimDevice::new(Script::Circle {
        center: Vec3::new(0.0, 0.0, -0.003),
        radius: 0.02,
        period: 4.0,
    });
    let config = RuntimeConfig {
        haptic: HapticConfig::new(SafetyLimits::for_device(device.rating())),
        realtime: if fifo {
            RealtimePolicy {
                mode: RealtimeMode::Required,
                core: Some(1),
            }
        } else {
            RealtimePolicy::NONE
        },
        telemetry_capacity: 4096,
        log_stats,
    };
    let interrupted = stop_flag();
    let runtime = match HapticRuntime::start(device, HertzHalfSpace::default_scene(), config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("haptic_realtime: cannot start the haptic thread: {e}");
            std::process::exit(1);
        }
    };
    let shared = runtime.shared().clone();
    let start = Instant::now();
    let mut peak = 0.0f64;
    while start.elapsed().as_secs_f64() < seconds && !interrupted.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        while let Some(r) = shared.telemetry.pop() {
            peak = peak.max(r.force.norm());
        }
    }
    let (haptic, _) = runtime.stop();
    let s = shared.stats.snapshot();
    let us = |ns: u64| ns as f64 / 1e3;
    // Period error |period − 1 ms| quantiles from the 1 µs period bins.
    let mut errors: Vec<(u64, u64)> = s
        .period
        .bins
        .iter()
        .enumerate()
        .map(|(i, &c)| ((i as i64 * 1000 + 500 - 1_000_000).unsigned_abs(), c))
        .collect();
    errors.sort_unstable();
    let error_q = |q: f64| {
        let rank = (q * s.ticks as f64).ceil() as u64;
        let mut seen = 0;
        errors
            .iter()
            .find(|(_, c)| {
                seen += c;
                seen >= rank
            })
            .map_or(0, |(e, _)| *e)
    };
    println!(
        "{:.1} s, {} ticks, {} telemetry dropped",
        start.elapsed().as_secs_f64(),
        s.ticks,
        shared.telemetry_dropped.get()
    );
    println!(
        "period p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, max {:.0} µs",
        us(s.period.quantile_ns(0.5)),
        us(s.period.quantile_ns(0.99)),
        us(s.period.quantile_ns(0.999)),
        us(s.period.max_ns)
    );
    println!(
        "period error p99 {}{:.1} µs, missed (> 1.5 ms) {} = {:.4}%, skipped deadlines {}",
        if error_q(0.99) >= 3_999_000 {
            ">= "
        } else {
            ""
        },
        us(error_q(0.99)),
        s.missed,
        100.0 * s.missed as f64 / s.ticks.max(1) as f64,
        s.skipped
    );
    println!(
        "compute p50 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs; lateness p99 {:.0} µs",
        us(s.compute.quantile_ns(0.5)),
        us(s.compute.quantile_ns(0.999)),
        us(s.compute.max_ns),
        us(s.lateness.quantile_ns(0.99))
    );
    println!(
        "peak force {peak:.3} N, force after stop {:?}",
        haptic.device().last_force()
    );
}
