//! `palpa serve`: the product. A scene (a file, or the embedded tissue block) becomes a
//! tissue model, precomputed once and loaded from the cache afterwards. A device — a
//! connected HID device that a profile matches, the viewer-driven virtual stylus, or a
//! replayed trajectory — drives the 1 kHz haptic thread; the 200 Hz model thread steps
//! the tissue and publishes a visual snapshot at the visual rate; the stream server
//! sends it to viewers, and viewers holding the control token move the virtual stylus
//! and reset the tissue. Ctrl-C (or SIGTERM) zeroes the force, stops the threads and the
//! server, and exits 0; every error zeroes the force and exits non-zero.
//!
//! ```text
//!  viewer ──control──► stream server ──channel──► ServeStep (model thread, 200 Hz)
//!                                                   │ moves the stylus / resets tissue
//!  device (HID | sim | replay) ◄─force─ haptic thread 1 kHz ◄─local force model─┘
//!                                                   │ snapshot at the visual rate
//!  viewers ◄── frames 30 Hz ── publisher ◄──────────┘
//!  haptic statistics: this thread reads the runtime's atomics once a second → viewers
//! ```

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use palpa_protocol as wire;

use crate::cli::precompute::{describe, SceneArgs};
use crate::cli::progress::progress_bar;
use crate::device::check;
use crate::device::choice::{DeviceChoice, OpenedDevice};
use crate::device::force_log::ForceLog;
use crate::device::mapped::MappedDevice;
use crate::device::{CalibrationRequest, HapticDevice};
use crate::haptic::review::TickReview;
use crate::haptic::runtime::{HapticRuntime, RuntimeConfig, RuntimeShared};
use crate::haptic::tick::HapticLoop;
use crate::haptic::tick_ring::{tick_ring, TickSink};
use crate::recording::session_dir::unix_now;
use crate::recording::{
    DeviceRecord, Existing, RecordedBy, RecordingDir, RecordingHealth, SceneInputs, TickFile,
};
use crate::rt::{self, RealtimeMode, RealtimePolicy};
use crate::scene::{self, FORCE_CAP_MARGIN};
use crate::stream::SceneVisual;
mod model_thread;
mod probes;
mod safety;

pub use model_thread::{ServeStep, Stylus, ViewerLink};
pub use probes::{ProbeFollower, ProbeSlots};

use crate::stream::{control_channel, snapshot_slot, ProbeWorkspace, StreamServer};

/// Height of the idle virtual stylus above the top of the mesh (m).
const IDLE_HEIGHT: f64 = 0.01;
/// Control commands buffered between the server and the model thread.
const CONTROL_CAPACITY: usize = 256;
/// Time the clients' tasks get to send the last notice before the server's goodbye.
const NOTICE_GRACE: Duration = Duration::from_millis(100);
/// Seconds of haptic ticks a recording's ring holds while its writer catches up.
const RECORDING_RING_SECONDS: f64 = 4.0;

/// Arguments of `palpa serve`.
#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Scene and cache.
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Device: `auto` (a connected HID device a profile matches, else the virtual
    /// stylus), `hid`, `hid:PROFILE.toml`, `sim` (the virtual stylus, moved from the
    /// viewer), `sim:still|circle|press` (scripted) or `replay:FILE.csv`; default: the
    /// scene's `device.kind`. Repeat for several devices, each with its own haptic loop
    /// and probe.
    #[arg(long = "device", value_name = "DEVICE", value_parser = DeviceChoice::parse)]
    pub devices: Vec<DeviceChoice>,
    /// Address and port of the viewer and the stream (port 0: any free port);
    /// default: the scene's `stream.bind` (127.0.0.1:7878).
    #[arg(long, value_name = "ADDR:PORT")]
    pub bind: Option<SocketAddr>,
    /// Real-time haptic thread: `auto` (default; SCHED_FIFO and the thread's memory
    /// locked where the process may have them — root, CAP_SYS_NICE or RLIMIT_RTPRIO —
    /// else one warning and the normal scheduler; with it, the model thread runs
    /// SCHED_FIFO below it), `required` (refuse to start without SCHED_FIFO) or `off`; a
    /// bare `--realtime` means `auto`. Also `PALPA_REALTIME`.
    #[arg(
        long,
        value_name = "off|auto|required",
        env = "PALPA_REALTIME",
        num_args = 0..=1,
        default_value_t = RealtimeMode::Auto,
        default_missing_value = "auto",
        value_parser = str::parse::<RealtimeMode>
    )]
    pub realtime: RealtimeMode,
    /// Record the session into this directory (created, or empty; one holding a
    /// recording is refused unless `--force`): `ticks.csv` (one row per haptic tick:
    /// t,x,y,z,fx,fy,fz,depth,contact,safety — the probe, m, and the force commanded to
    /// the device after safety, N, both in the scene frame), `stream.palparec` (every
    /// message of the visual stream as a viewer receives it), `scene.toml` with copies of
    /// the files it names, `device.toml` (the device, its workspace mapping and limits)
    /// and `recording.toml`. Complete after Ctrl-C, ending on the zero force the device
    /// got last; readable up to about 60 ms before a crash. A failed write (a full disk)
    /// ends the recording at once, is logged, and makes serve exit with status 1.
    /// `palpa replay DIR` replays it; `palpa recording check DIR` says what is there.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Replace a recording already in the `--record` directory.
    #[arg(long, requires = "record")]
    pub force: bool,
}

/// The device as the haptic thread drives it: scene coordinates, force logged.
type ServeDevice = ForceLog<MappedDevice<Box<dyn HapticDevice>>>;

/// Drains a haptic thread's telemetry into `review`: returns how many ticks had their
/// force clamped.
fn drain_telemetry(shared: &RuntimeShared, review: &mut TickReview) -> u64 {
    let mut clamped = 0;
    while let Some(r) = shared.telemetry.pop() {
        clamped += u64::from(r.force != r.desired);
        review.add(&r);
    }
    clamped
}

/// The haptic statistics message for the ticks since the last report.
fn haptic_stats(
    shared: &RuntimeShared,
    previous: &mut crate::haptic::stats::StatsSnapshot,
    clamped: u64,
) -> wire::HapticStats {
    let now = shared.stats.snapshot();
    let window = now.since(previous);
    *previous = now;
    let s = |ns: u64| ns as f64 * 1e-9;
    wire::HapticStats {
        ticks: window.ticks,
        period_p50_s: s(window.period.quantile_ns(0.5)),
        period_p99_s: s(window.period.quantile_ns(0.99)),
        period_max_s: s(window.period.max_ns),
        compute_p99_s: s(window.compute.quantile_ns(0.99)),
        missed_deadlines: window.missed,
        clamped_forces: clamped,
    }
}

/// The calibration step of encoder devices: each line on stdin (Enter) makes the pose
/// the device is held in its calibration pose. The thread ends with stdin.
fn listen_for_calibration(request: CalibrationRequest) {
    println!("calibration: hold the arm in its calibration pose and press Enter (any time)");
    let spawned = std::thread::Builder::new()
        .name("palpa-calibrate".into())
        .spawn(move || {
            for line in std::io::stdin().lines() {
                if line.is_err() {
                    break;
                }
                request.request();
                println!("calibration: this pose is now the calibration pose");
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("no calibration from the terminal: {e}");
    }
}

/// One device's haptic loop and model thread: the first steps the tissue with every
/// probe, the others hand their probe to it.
enum Runtime {
    Tissue(HapticRuntime<ServeDevice, ServeStep>),
    Follower(HapticRuntime<ServeDevice, ProbeFollower>),
}

impl Runtime {
    fn shared(&self) -> &std::sync::Arc<RuntimeShared> {
        match self {
            Runtime::Tissue(r) => r.shared(),
            Runtime::Follower(r) => r.shared(),
        }
    }

    /// Stops the threads (zero force first); the first device's step comes back for
    /// the final frame.
    fn stop(self) -> (HapticLoop<ServeDevice>, Option<ServeStep>) {
        match self {
            Runtime::Tissue(r) => {
                let (haptic, step) = r.stop();
                (haptic, Some(step))
            }
            Runtime::Follower(r) => (r.stop().0, None),
        }
    }
}

/// One device with its threads.
struct Hand {
    runtime: Runtime,
    label: String,
    /// The review of its ticks (from the telemetry queue).
    review: TickReview,
    /// Its recorded ticks, with `--record`.
    ticks: Option<TickFile>,
}

/// The address a local viewer reaches the server at (loopback for a wildcard bind).
fn local_address(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        let loopback = match addr.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        };
        SocketAddr::new(loopback, addr.port())
    } else {
        addr
    }
}

/// Records the visual stream as a viewer receives it through `recorder` until the
/// server shuts down (or a write fails: reported to `health` at once); returns the
/// number of frames and what the file holds.
async fn record_stream(
    url: String,
    recorder: palpa_client::Recorder,
    health: Arc<RecordingHealth>,
) -> Result<(u64, palpa_client::RecorderSummary), String> {
    let path = recorder.path().to_path_buf();
    let mut client = palpa_client::Client::connect_recording(&url, Some(recorder))
        .await
        .map_err(|e| format!("recording the stream from {url}: {e}"))?;
    let mut frames = 0;
    // The stream ends with the server's shutdown message (an error to the client).
    loop {
        if health.failure().is_some() {
            break;
        }
        match client.next_frame().await {
            Ok(_) => frames += 1,
            Err(palpa_client::ClientError::Record(e)) => {
                health.fail(format!("{}: {e}", path.display()));
                break;
            }
            Err(_) => break,
        }
    }
    let summary = client
        .take_recorder()
        .map(palpa_client::Recorder::finish)
        .ok_or("the stream recording was not kept")?;
    Ok((frames, summary))
}

/// Opens every device (a wrong one fails before a long precompute) and makes sure none
/// holds a force from before.
fn open_devices(
    choices: &[DeviceChoice],
    scene_profile: Option<&std::path::Path>,
) -> Result<Vec<OpenedDevice>, String> {
    let mut hands = Vec::with_capacity(choices.len());
    for (i, choice) in choices.iter().enumerate() {
        let mut opened = choice.open(scene_profile)?;
        if i > 0 && opened.stylus.is_some() {
            return Err(format!(
                "device {}: the viewer moves one virtual stylus, the first device's; give a \
                 second device that moves by itself (hid, a scripted sim:…, replay:…)",
                i + 1
            ));
        }
        opened
            .device
            .zero_force()
            .map_err(|e| format!("device {}: {e}", opened.device.name()))?;
        if let Some(warning) = check::unchecked_warning(&*opened.device, &choice.spec()) {
            eprintln!("warning: {warning}");
        }
        hands.push(opened);
    }
    Ok(hands)
}

/// Runs `palpa serve` until Ctrl-C; errors are messages for the user (the force is zero
/// by then).
pub fn run(args: &ServeArgs) -> Result<(), String> {
    let (scene, inputs) = match &args.record {
        Some(_) => {
            let (scene, inputs) = SceneInputs::load(args.scene.scene.as_deref())?;
            (scene, Some(inputs))
        }
        None => (args.scene.load()?, None),
    };
    let choices = if args.devices.is_empty() {
        vec![scene.device_choice()]
    } else {
        args.devices.clone()
    };
    let bind = args.bind.unwrap_or_else(|| scene.stream.bind_addr());
    let scene_profile = scene.device.profile.as_deref().map(|p| scene.resolve(p));
    let opened = open_devices(&choices, scene_profile.as_deref())?;
    let existing = if args.force {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let session = match (&args.record, &inputs) {
        (Some(dir), Some(inputs)) => Some(RecordingDir::create(
            dir,
            inputs,
            opened.len(),
            true,
            RecordedBy::Serve,
            existing,
        )?),
        _ => None,
    };
    let health = Arc::new(RecordingHealth::default());

    let name = scene.name.clone().unwrap_or_else(|| scene.source.clone());
    println!("palpa serve: scene \"{name}\" ({})", scene.source);
    let build = |scene: scene::Scene, what: &str| {
        let (bar, mut on_progress) = progress_bar(what);
        let built = scene::build(scene, &args.scene.cache_dir(), &mut on_progress);
        bar.finish_and_clear();
        built.map_err(|e| e.to_string())
    };
    let mut built = build(scene, "building the scene")?;
    println!("model: {}", describe(&built.precompute));
    let several = opened.len() > 1;
    if several {
        built.model = built.model.with_probes(opened.len());
        println!(
            "{} devices palpate one tissue: their contacts are solved together (the viewer \
             draws device 1's probe)",
            opened.len()
        );
    }
    // In real time the K⁻¹ columns of newly touched nodes (or the nonlinear model's
    // corrections) are computed on their own thread, so the model steps keep the model
    // rate and the model catches up as fast as a core allows.
    built
        .model
        .work_in_background()
        .map_err(|e| e.to_string())?;
    let probes = ProbeSlots::new(opened.len());
    let (mut stream_scene, mut visual) = SceneVisual::new(&name, &built.mesh.mesh, &built.model);
    let column_feed = visual.column_feed();
    stream_scene.model_rate_hz = built.scene.rates.model;
    stream_scene.haptic_rate_hz = built.scene.rates.haptic;
    stream_scene.up = built.scene.view.up.vector();
    stream_scene.regions = built.material_regions().map_err(|e| e.to_string())?;
    println!(
        "model: {} nodes, {} tetrahedra, {} surface vertices, {}",
        built.mesh.mesh.nodes.len(),
        built.mesh.mesh.tets.len(),
        stream_scene.rest_positions.len(),
        match stream_scene.mode_count() {
            Some(k) => format!("{k} modes"),
            None => format!("{} backend", built.model.backend_name()),
        }
    );

    let idle = built.above_the_middle(IDLE_HEIGHT);
    let (snapshot_writer, snapshot_reader) = snapshot_slot(visual.at_rest(idle));
    let (control_tx, control_rx) = control_channel(CONTROL_CAPACITY);
    let (min, max) = built.model.workspace();
    let stream_config = built
        .scene
        .stream_config(bind, Some(ProbeWorkspace { min, max }));
    let mut link = Some((snapshot_writer, control_rx, visual));
    let mut hands = Vec::with_capacity(opened.len());
    let mut configured = Vec::with_capacity(opened.len());
    for (i, hand) in opened.into_iter().enumerate() {
        let label = if several {
            format!("device {} ({})", i + 1, hand.device.name())
        } else {
            "the device".into()
        };
        if several {
            println!("device {}: {}", i + 1, hand.description);
        } else {
            println!("device: {}", hand.description);
        }
        if let Some(request) = hand.device.calibration_request() {
            listen_for_calibration(request);
        }
        let rating = hand.device.rating();
        let (map, how) = built.device_mapping(&rating);
        println!("workspace: {how}");
        let haptic = built.attach_device(rating);
        let clamp = format!(
            "force: at most {:.3} N on the hand (the device is rated {:.3} N{}); the \
             tissue model is held below {:.3} N, so the model's force may exceed what the \
             hand gets",
            haptic.limits.max_force,
            rating.max_force,
            if haptic.limits.max_force < rating.max_force {
                ", lowered by the scene's [safety] max_force"
            } else {
                ""
            },
            FORCE_CAP_MARGIN * haptic.limits.max_force
        );
        println!("{clamp}");
        let record = session.as_ref().map(|_| {
            DeviceRecord::new(
                &hand.description,
                hand.device.name(),
                &rating,
                (&map, &how),
                &haptic,
            )
        });
        let profile = hand.profile_toml.clone();
        let device: ServeDevice = ForceLog::new(MappedDevice::new(hand.device, map));
        let stylus = hand.stylus.map(|input| Stylus::new(input, map, idle));
        let runtime_config = RuntimeConfig {
            haptic,
            realtime: RealtimePolicy {
                mode: args.realtime,
                core: None,
            },
            telemetry_capacity: 2 * built.scene.rates.haptic as usize,
            log_stats: false,
        };
        configured.push((
            device,
            stylus,
            runtime_config,
            label,
            record.zip(Some(profile)),
        ));
    }
    // The first device's model thread steps the tissue with every probe; the viewers
    // see and steer it.
    let rates = built.scene.rates.clone();
    let mut model = Some(built.model);
    for (i, (mut device, stylus, runtime_config, label, record)) in
        configured.into_iter().enumerate()
    {
        let (sink, ticks) = match (&session, record) {
            (Some(dir), Some((mut record, profile))) => {
                // The haptic clock starts as the runtime does, just below.
                record.clock_start_unix_s = Some(unix_now());
                dir.write_device(i, &record, profile.as_deref())?;
                let (sink, source) =
                    tick_ring((RECORDING_RING_SECONDS * rates.haptic).ceil() as usize);
                let writer = dir.ticks(i)?;
                let file = TickFile::start(writer, source, health.clone())
                    .map_err(|e| format!("cannot start the recording's writer: {e}"))?;
                (Some(sink), Some(file))
            }
            _ => (None, None),
        };
        let start = |device, step, sink: Option<TickSink>| {
            HapticRuntime::start_recording(device, step, runtime_config, sink)
        };
        let runtime = match (model.take(), link.take()) {
            (Some(model), Some((snapshots, control, visual))) => {
                let link = ViewerLink {
                    snapshots,
                    control,
                    commanded: device.commanded(),
                    samples: Some(device.samples()),
                };
                let step = ServeStep::new(model, visual, link, stylus, rates.visual, idle)
                    .with_probes(probes.clone());
                start(device, step, sink).map(Runtime::Tissue)
            }
            _ => HapticRuntime::start_recording(device, probes.follower(i), runtime_config, sink)
                .map(Runtime::Follower),
        }
        .map_err(|e| format!("cannot start the haptic and model threads: {e}"))?;
        hands.push(Hand {
            runtime,
            label,
            review: TickReview::new(&runtime_config.haptic.limits),
            ticks,
        });
    }

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let interrupted = rt::stop_flag();
    tokio.block_on(async move {
        let server = match StreamServer::start_with_columns(
            stream_config,
            stream_scene,
            snapshot_reader,
            Some(control_tx),
            Some(column_feed),
        )
        .await
        {
            Ok(server) => server,
            Err(e) => {
                // Dropping the runtimes stops their threads, zeroing every force.
                drop(hands);
                return Err(format!("cannot serve the viewer on {bind}: {e}"));
            }
        };
        // The token appears once: in the address that gives control.
        let viewer = server.viewer_url();
        println!("viewer: {viewer}");
        println!(
            "        (this address moves the probe; without its ?token=… it is read-only and \
             can be shared)"
        );
        let stream_recording = match &session {
            Some(dir) => {
                let url = format!("ws://{}/ws", local_address(server.local_addr()));
                let (file, path) = dir.stream_file()?;
                let recorder = palpa_client::Recorder::start(file, &path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Some((
                    path,
                    tokio::spawn(record_stream(url, recorder, health.clone())),
                ))
            }
            None => None,
        };
        println!("press Ctrl-C to stop (the force goes to zero first)");

        let shared: Vec<_> = hands.iter().map(|h| h.runtime.shared().clone()).collect();
        let mut previous = shared[0].stats.snapshot();
        let mut poll = tokio::time::interval(Duration::from_millis(50));
        let mut polls = 0u32;
        let mut warned_ramp = vec![false; hands.len()];
        let mut told_recording_failed = false;
        let mut clamped = 0;
        let mut last_report = None;
        let failure = |shared: &[std::sync::Arc<RuntimeShared>]| {
            shared.iter().find_map(|s| s.failure().map(str::to_owned))
        };
        while !interrupted.load(Ordering::SeqCst)
            && failure(&shared).is_none()
            && server.failure().is_none()
        {
            poll.tick().await;
            polls += 1;
            if let (Some(failure), false) = (health.failure(), told_recording_failed) {
                told_recording_failed = true;
                eprintln!(
                    "error: the recording ended: {failure}; the session goes on unrecorded \
                     and palpa will exit with status 1"
                );
                server.publish_notice(&wire::Notice {
                    kind: wire::NoticeKind::RecordingFailed,
                    message: format!(
                        "the recording ended: {failure}; the session goes on unrecorded"
                    ),
                });
            }
            // Every device's ticks are reviewed each poll, so a fade reaches the viewers
            // within 50 ms of the tick.
            for (other, hand) in shared[1..].iter().zip(&mut hands[1..]) {
                drain_telemetry(other, &mut hand.review);
            }
            clamped += drain_telemetry(&shared[0], &mut hands[0].review);
            let report = safety::safety_report(hands.iter().map(|h| h.review.fades()));
            if Some(&report) != last_report.as_ref() {
                server.publish_safety(&report);
                last_report = Some(report);
            }
            if polls % 20 == 0 {
                let stats = haptic_stats(&shared[0], &mut previous, std::mem::take(&mut clamped));
                for (hand, warned) in hands.iter().zip(&mut warned_ramp) {
                    if let (Some(note), false) = (hand.review.ramp_note(), *warned) {
                        *warned = true;
                        tracing::warn!("{}: {note}", hand.label);
                    }
                }
                if polls % 200 == 0 {
                    tracing::info!(
                        "haptic loop: {} ticks/s, period p99 {:.0} µs, missed {}; {} viewers",
                        stats.ticks,
                        stats.period_p99_s * 1e6,
                        stats.missed_deadlines,
                        server.client_count()
                    );
                }
                server.publish_haptic_stats(&stats);
            }
        }

        // Every haptic thread writes zero force as it stops, before anything else ends.
        let mut stopped = Vec::with_capacity(hands.len());
        for hand in hands {
            let (haptic, step) = hand.runtime.stop();
            stopped.push((hand.label, haptic, step, hand.review, hand.ticks));
        }
        eprintln!("stopping: haptic and model threads stopped, force on the device zeroed");
        let mut last_forces = Vec::with_capacity(stopped.len());
        let mut recorded = Vec::new();
        for (i, (label, haptic, step, mut review, ticks)) in stopped.into_iter().enumerate() {
            let last = haptic.device().last_force();
            // What the device handled without stopping (an SDK's force errors).
            if let Some(faults) = haptic.device().fault_summary() {
                println!("{label}: {faults}");
            }
            if let Some(mut step) = step {
                step.publish_final(last);
            }
            drop(haptic);
            drain_telemetry(&shared[i], &mut review);
            if let Some(ticks) = ticks {
                let path = ticks.path().to_path_buf();
                recorded.push((path, ticks.finish()));
            }
            last_forces.push((label, last, review));
        }
        let failed = failure(&shared).or(server.failure().map(str::to_owned));
        if let (Some(dir), None) = (&session, health.failure()) {
            server.publish_notice(&wire::Notice {
                kind: wire::NoticeKind::RecordingEnded,
                message: format!(
                    "the recording in {} ended: the server stops",
                    dir.path().display()
                ),
            });
            // The clients' tasks forward it before the goodbye.
            tokio::time::sleep(NOTICE_GRACE).await;
        }
        server.shutdown().await;
        if let Some((path, task)) = stream_recording {
            match tokio::time::timeout(Duration::from_secs(5), task).await {
                Ok(Ok(Ok((frames, s)))) => match s.failure.or(health
                    .failure()
                    .map(|f| format!("stopped with the rest of the recording ({f})")))
                {
                    None => println!(
                        "recorded: {} ({frames} frames; {} records, {} dropped)",
                        path.display(),
                        s.records,
                        s.dropped
                    ),
                    Some(e) => {
                        if health.failure().is_none() {
                            health.fail(format!("{}: {e}", path.display()));
                        }
                        eprintln!(
                            "error: {}: recording ended early ({e}); the file holds the {} \
                             records before it",
                            path.display(),
                            s.records
                        );
                    }
                },
                Ok(Ok(Err(e))) => health.fail(e),
                _ => health.fail(format!(
                    "{}: the stream recording did not end",
                    path.display()
                )),
            }
        }
        for (path, s) in recorded {
            let span = s.span.map_or(String::new(), |(a, b)| {
                format!(
                    ", t = {a:.3} to {b:.3} s, {:.0} rows/s",
                    (s.rows.max(1) - 1) as f64 / (b - a).max(1e-9)
                )
            });
            match &s.failure {
                None => println!(
                    "recorded: {} ({} rows{span}; {} ticks dropped)",
                    path.display(),
                    s.rows,
                    s.dropped
                ),
                Some(e) => eprintln!(
                    "error: {}: recording ended early ({e}); the file holds the {} rows{span} \
                     before it",
                    path.display(),
                    s.rows
                ),
            }
        }
        if let Some(failure) = failed {
            return Err(format!(
                "{failure}; palpa stopped with zero force on the device"
            ));
        }
        for (label, last, review) in last_forces {
            if several {
                println!(
                    "{label}: largest force commanded {:.3} N",
                    review.peak_commanded()
                );
            }
            // The ramp was warned about as it happened.
            for note in [
                review.never_touched_note(),
                review.clamp_note(),
                review.fade_note(),
            ]
            .into_iter()
            .flatten()
            {
                println!("{label}: {note}");
            }
            println!(
                "stopped: last force commanded to {label}: {} {} {} N",
                last.x, last.y, last.z
            );
        }
        match (&session, health.failure()) {
            (Some(dir), Some(failure)) => Err(format!(
                "the recording in {} ended early: {failure}",
                dir.path().display()
            )),
            _ => Ok(()),
        }
    })
}
