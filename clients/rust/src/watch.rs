//! Watching a stream from a terminal or a script (`palpa watch`, `palpa-watch`): prints
//! frame rate, latency, bandwidth and lost frames once a second; optionally records the
//! stream; the exit status says whether the run met its targets.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::{Client, ClientError, Event, Recorder};
use palpa_protocol as wire;

/// What to watch and when to stop (`palpa watch` and `palpa-watch`).
#[derive(clap::Args, Debug, Clone)]
pub struct WatchArgs {
    /// Stream URL: ws://HOST:PORT/ws (or the viewer's http://HOST:PORT/).
    #[arg(default_value = "ws://127.0.0.1:7878/ws")]
    pub url: String,
    /// Stop after this many frames.
    #[arg(long)]
    pub frames: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Exit with status 1 if the mean frame rate was below this (Hz).
    #[arg(long)]
    pub min_rate: Option<f64>,
    /// Record every received message to this file (format: palpa_client::Recorder).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Print only the final summary.
    #[arg(long)]
    pub quiet: bool,
}

/// Watches the stream on a single-threaded runtime of its own and returns the exit
/// status: 0 when the run met its targets, 1 when the mean frame rate was below
/// `--min-rate`, 2 when the connection failed (the error is printed, prefixed with
/// `program`).
pub fn run_blocking(args: &WatchArgs, program: &str) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{program}: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{program}: {e}");
            ExitCode::from(2)
        }
    }
}

/// Watches the stream, printing once a second (unless quiet) and a summary at the end;
/// `Ok` carries the exit status for the rate target.
pub async fn run(args: &WatchArgs) -> Result<ExitCode, ClientError> {
    let recorder = args.record.as_deref().map(Recorder::create).transpose()?;
    let mut client = Client::connect_recording(&args.url, recorder).await?;
    let modes = client
        .scene
        .modal_basis
        .as_ref()
        .map_or(0, |b| b.mode_count);
    println!(
        "scene \"{}\": {} vertices, {} triangles, {} modes; frames at {} Hz",
        client.hello.scene_name,
        client.scene.rest_positions.len(),
        client.scene.triangles.len(),
        modes,
        client.hello.frame_rate_hz
    );
    let deadline = args
        .seconds
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    let mut next_report = Instant::now() + Duration::from_secs(1);
    let mut first_frame: Option<Instant> = None;
    let mut safety = SafetyWatch::default();
    loop {
        if args.frames.is_some_and(|n| client.stats.frames >= n)
            || deadline.is_some_and(|d| Instant::now() >= d)
        {
            break;
        }
        let wait = deadline.map_or(Duration::from_secs(3600), |d| {
            d.saturating_duration_since(Instant::now())
        });
        let event = match tokio::time::timeout(wait, client.next_event()).await {
            Err(_) => break,
            Ok(event) => event?,
        };
        match event {
            Event::Frame(_) => {
                first_frame.get_or_insert_with(Instant::now);
            }
            Event::HapticStats(s) if !args.quiet => println!(
                "haptic: period p50 {:.3} ms p99 {:.3} ms max {:.3} ms, missed {}",
                s.period_p50_s * 1e3,
                s.period_p99_s * 1e3,
                s.period_max_s * 1e3,
                s.missed_deadlines
            ),
            Event::Safety(report) => safety.update(&report, args.quiet),
            Event::Notice(n) => println!("notice: {}", n.message),
            Event::HapticStats(_) | Event::ControlStatus(_) => {}
        }
        if !args.quiet && Instant::now() >= next_report {
            next_report += Duration::from_secs(1);
            report(&client);
        }
    }
    let stats = &client.stats;
    let span = first_frame.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let mean_rate = if span > 0.0 && stats.frames > 1 {
        (stats.frames - 1) as f64 / span
    } else {
        0.0
    };
    let seconds = stats.started.elapsed().as_secs_f64().max(1e-9);
    let rate = |bytes: u64| bytes as f64 / seconds / 1e3;
    println!(
        "summary: {} frames, {:.1} Hz mean, {} lost, latency p50 {:.1} ms p99 {:.1} ms, median \
         frame {} B",
        stats.frames,
        mean_rate,
        stats.lost,
        stats.latency_quantile(0.5).unwrap_or(f64::NAN) * 1e3,
        stats.latency_quantile(0.99).unwrap_or(f64::NAN) * 1e3,
        stats.median_frame_bytes().unwrap_or(0),
    );
    // Every received byte is in exactly one part, so the parts add up to the whole.
    println!(
        "bandwidth: {:.2} kB/s over {seconds:.1} s = frames {:.2} + one-off columns {:.2} + \
         telemetry {:.2} + the hello and scene {:.2} kB/s ({} B once, on connecting)",
        rate(stats.bytes),
        rate(stats.frame_bytes),
        rate(stats.one_off_bytes),
        rate(stats.telemetry_bytes),
        rate(stats.initial_bytes),
        stats.initial_bytes,
    );
    safety.summary();
    client.close().await.ok();
    if let Some(min) = args.min_rate {
        if mean_rate < min {
            eprintln!("mean frame rate {mean_rate:.1} Hz is below --min-rate {min} Hz");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn report(client: &Client) {
    let s = &client.stats;
    let (frames, one_off) = s.recent_bandwidth();
    println!(
        "{:.1} Hz, latency p50 {:.1} ms p99 {:.1} ms, {:.1} kB/s (frames {:.1} kB/s, last frame {} B; \
         one-off columns {:.1} kB/s), {} frames, {} lost",
        s.frame_rate(Duration::from_secs(1)).unwrap_or(0.0),
        s.latency_quantile(0.5).unwrap_or(f64::NAN) * 1e3,
        s.latency_quantile(0.99).unwrap_or(f64::NAN) * 1e3,
        (frames + one_off) / 1e3,
        frames / 1e3,
        s.frame_sizes.last().copied().unwrap_or(0),
        one_off / 1e3,
        s.frames,
        s.lost
    );
}

/// The newest safety report, and each fade printed once as it is seen.
#[derive(Default)]
struct SafetyWatch {
    latest: Option<wire::SafetyReport>,
}

impl SafetyWatch {
    /// Prints the fades `report` shows that the last one did not (unless `quiet`).
    fn update(&mut self, report: &wire::SafetyReport, quiet: bool) {
        for d in &report.devices {
            let before = self
                .latest
                .as_ref()
                .and_then(|l| l.devices.iter().find(|o| o.device == d.device));
            let seen = before.map_or(0, |b| b.counts.faded());
            let new_fade = d.last_fade != before.and_then(|b| b.last_fade);
            if !quiet && d.counts.faded() > seen && new_fade {
                if let Some(f) = d.last_fade {
                    println!(
                        "fade: device {} at t = {:.3} s: {} ({} ticks so far, {:.3} N taken off)",
                        d.device,
                        f.start_s,
                        reason_name(f.reason),
                        f.ticks,
                        f.force_removed
                    );
                }
            }
        }
        self.latest = Some(report.clone());
    }

    /// Prints each device's counts of faded, clamped and rate-limited ticks.
    fn summary(&self) {
        let Some(report) = &self.latest else {
            return;
        };
        for d in &report.devices {
            let c = &d.counts;
            let largest = d.largest_fade.map_or(String::new(), |f| {
                format!(
                    "; largest fade: {} at t = {:.3} s, {} ticks, {:.3} N taken off",
                    reason_name(f.reason),
                    f.start_s,
                    f.ticks,
                    f.force_removed
                )
            });
            println!(
                "safety: device {}: {} ticks faded (stalled model {}, stale sample {}, device \
                 fault {}, non-finite {}), {} clamped, {} rate-limited{largest}",
                d.device,
                c.faded(),
                c.stalled_model,
                c.stale_sample,
                c.device_fault,
                c.not_finite,
                c.clamped,
                c.rate_limited
            );
        }
    }
}

/// The reason as the log and the viewer name it.
pub fn reason_name(reason: wire::SafetyReason) -> &'static str {
    match reason {
        wire::SafetyReason::Normal => "normal",
        wire::SafetyReason::Ramping => "ramping in",
        wire::SafetyReason::StaleSample => "stale device sample",
        wire::SafetyReason::StalledModel => "stalled model thread",
        wire::SafetyReason::DeviceFault => "device fault",
        wire::SafetyReason::NotFinite => "non-finite value",
        wire::SafetyReason::Clamped => "force clamped",
        wire::SafetyReason::RateLimited => "force rate limited",
    }
}
