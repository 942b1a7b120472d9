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

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Args;
use palpa_protocol as wire;

use super::precompute::{describe, SceneArgs};
use super::progress::progress_bar;
use crate::device::choice::DeviceChoice;
use crate::device::force_log::ForceLog;
use crate::device::mapped::MappedDevice;
use crate::device::HapticDevice;
use crate::haptic::runtime::{HapticRuntime, RuntimeConfig, RuntimeShared};
use crate::rt::{self, RealtimeMode, RealtimePolicy};
use crate::scene;
use crate::session::{SceneVisual, ServeStep, Stylus, ViewerLink};
use crate::stream::{control_channel, snapshot_slot, ProbeWorkspace, StreamServer};

/// Height of the idle virtual stylus above the top of the mesh (m).
const IDLE_HEIGHT: f64 = 0.01;
/// Control commands buffered between the server and the model thread.
const CONTROL_CAPACITY: usize = 256;

/// Arguments of `palpa serve`.
#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Scene and cache.
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Device: `auto` (a connected HID device a profile matches, else the virtual
    /// stylus), `hid`, `hid:PROFILE.toml`, `sim` (the virtual stylus, moved from the
    /// viewer), `sim:still|circle|press` (scripted) or `replay:FILE.csv`; default: the
    /// scene's `device.kind`.
    #[arg(long, value_name = "DEVICE", value_parser = DeviceChoice::parse)]
    pub device: Option<DeviceChoice>,
    /// Address and port of the viewer and the stream (port 0: any free port);
    /// default: the scene's `stream.bind` (127.0.0.1:7878).
    #[arg(long, value_name = "ADDR:PORT")]
    pub bind: Option<SocketAddr>,
    /// Real-time haptic thread: `auto` (default; SCHED_FIFO and the thread's memory
    /// locked where the process may have them — root, CAP_SYS_NICE or RLIMIT_RTPRIO —
    /// else one warning and the normal scheduler), `required` (refuse to start without
    /// SCHED_FIFO) or `off`; a bare `--realtime` means `auto`. Also `PALPA_REALTIME`.
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
}

/// The device as the haptic thread drives it: scene coordinates, force logged.
type ServeDevice = ForceLog<MappedDevice<Box<dyn HapticDevice>>>;

/// The haptic statistics message for the ticks since the last report.
fn haptic_stats(
    shared: &RuntimeShared,
    previous: &mut crate::haptic::stats::StatsSnapshot,
) -> wire::HapticStats {
    let now = shared.stats.snapshot();
    let window = now.since(previous);
    *previous = now;
    let mut clamped = 0;
    while let Some(r) = shared.telemetry.pop() {
        clamped += u64::from(r.force != r.desired);
    }
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

/// Runs `palpa serve` until Ctrl-C; errors are messages for the user (the force is zero
/// by then).
pub fn run(args: &ServeArgs) -> Result<(), String> {
    let scene = args.scene.load()?;
    let choice = args.device.clone().unwrap_or_else(|| scene.device_choice());
    let bind = args.bind.unwrap_or_else(|| scene.stream.bind_addr());
    // Open the device first (a wrong device fails before a long precompute) and make
    // sure it holds no force from before.
    let scene_profile = scene.device.profile.as_deref().map(|p| scene.resolve(p));
    let opened = choice.open(scene_profile.as_deref())?;
    let map = scene.device.workspace.mapping();
    let mut device: ServeDevice = ForceLog::new(MappedDevice::new(opened.device, map));
    device
        .zero_force()
        .map_err(|e| format!("device {}: {e}", device.name()))?;

    let name = scene.name.clone().unwrap_or_else(|| scene.source.clone());
    println!("palpa serve: scene \"{name}\" ({})", scene.source);
    let (bar, mut on_progress) = progress_bar("building the scene");
    let built = scene::build(scene, &args.scene.cache_dir(), &mut on_progress);
    bar.finish_and_clear();
    let mut built = built.map_err(|e| e.to_string())?;
    println!("model: {}", describe(&built.precompute));
    let (mut stream_scene, visual) = SceneVisual::new(&name, &built.mesh.mesh, &built.model);
    stream_scene.model_rate_hz = built.scene.rates.model;
    stream_scene.haptic_rate_hz = built.scene.rates.haptic;
    println!(
        "model: {} nodes, {} tetrahedra, {} surface vertices, {}",
        built.mesh.mesh.nodes.len(),
        built.mesh.mesh.tets.len(),
        stream_scene.rest_positions.len(),
        match stream_scene.mode_count() {
            Some(k) => format!("{k} modes"),
            None => "condensed backend".into(),
        }
    );
    println!("device: {}", opened.description);

    let idle = built.above_the_middle(IDLE_HEIGHT);
    let stylus = opened.stylus.map(|input| Stylus::new(input, map, idle));
    let (snapshot_writer, snapshot_reader) = snapshot_slot(visual.at_rest(idle));
    let (control_tx, control_rx) = control_channel(CONTROL_CAPACITY);
    let haptic = built.attach_device(device.rating());
    let scene = &built.scene;
    let (min, max) = built.model.workspace();
    let stream_config = scene.stream_config(bind, Some(ProbeWorkspace { min, max }));
    let runtime_config = RuntimeConfig {
        haptic,
        realtime: RealtimePolicy {
            mode: args.realtime,
            core: None,
        },
        telemetry_capacity: 2 * scene.rates.haptic as usize,
        log_stats: false,
    };
    let link = ViewerLink {
        snapshots: snapshot_writer,
        control: control_rx,
        commanded: device.commanded(),
    };
    let step = ServeStep::new(built.model, visual, link, stylus, scene.rates.visual, idle);

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let interrupted = rt::stop_flag();
    tokio.block_on(async move {
        let server = StreamServer::start(
            stream_config,
            stream_scene,
            snapshot_reader,
            Some(control_tx),
        )
        .await
        .map_err(|e| format!("cannot serve the viewer on {bind}: {e}"))?;
        let runtime = match HapticRuntime::start(device, step, runtime_config) {
            Ok(r) => r,
            Err(e) => {
                server.shutdown().await;
                return Err(format!("cannot start the haptic and model threads: {e}"));
            }
        };
        println!("viewer: {}", server.viewer_url());
        println!(
            "control token: {}",
            server.control_token().expect("control is enabled")
        );
        println!("press Ctrl-C to stop (the force goes to zero first)");

        let shared = runtime.shared().clone();
        let mut previous = shared.stats.snapshot();
        let mut poll = tokio::time::interval(Duration::from_millis(50));
        let mut polls = 0u32;
        while !interrupted.load(Ordering::SeqCst)
            && shared.failure().is_none()
            && server.failure().is_none()
        {
            poll.tick().await;
            polls += 1;
            if polls % 20 == 0 {
                let stats = haptic_stats(&shared, &mut previous);
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

        // The haptic thread writes zero force as it stops, before anything else ends.
        let (haptic, mut step) = runtime.stop();
        let last = haptic.device().last_force();
        eprintln!("stopping: haptic and model threads stopped, force on the device zeroed");
        if let Some(failure) = shared
            .failure()
            .map(str::to_owned)
            .or(server.failure().map(str::to_owned))
        {
            server.shutdown().await;
            drop(haptic);
            return Err(format!(
                "{failure}; palpa stopped with zero force on the device"
            ));
        }
        step.publish_final(last);
        server.shutdown().await;
        drop(haptic);
        println!(
            "stopped: last force commanded to the device: {} {} {} N",
            last.x, last.y, last.z
        );
        Ok(())
    })
}
