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
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Args;
use palpa_protocol as wire;

use super::precompute::{describe, progress_bar, SceneArgs};
use crate::device::hid::{HidDevice, HidapiTransport};
use crate::device::profile::DeviceProfile;
use crate::device::replay::{ReplayDevice, Trajectory};
use crate::device::sim::SimDevice;
use crate::device::{DeviceError, DeviceRating, DeviceSample, HapticDevice};
use crate::haptic::runtime::{HapticRuntime, RuntimeConfig, RuntimeShared};
use crate::model::{LocalForceModel, ModelStep};
use crate::rt::{self, RealtimePolicy, SlotWriter};
use crate::scene::model::{self, SceneModel};
use crate::scene::visual::SceneVisual;
use crate::scene::workspace::{MappedDevice, Workspace};
use crate::scene::{DeviceKind, Scene};
use crate::stream::{
    control_channel, snapshot_slot, ControlReceiver, ProbeControl, SnapshotWriter, StreamConfig,
    StreamServer, VisualSnapshot,
};
use crate::Vec3;

/// Height of the idle virtual stylus above the top of the mesh (m).
const IDLE_HEIGHT: f64 = 0.01;
/// Control commands buffered between the server and the model thread.
const CONTROL_CAPACITY: usize = 256;
/// SCHED_FIFO priority asked for the haptic thread with `--realtime`.
const HAPTIC_PRIORITY: i32 = 80;

/// Arguments of `palpa serve`.
#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Scene and cache.
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Device: `auto` (a connected HID device a profile matches, else the virtual
    /// stylus), `hid`, `hid:PROFILE.toml`, `sim` (the virtual stylus, moved from the
    /// viewer) or `replay:FILE.csv`; default: the scene's `device.kind`.
    #[arg(long, value_name = "DEVICE", value_parser = DeviceChoice::parse)]
    pub device: Option<DeviceChoice>,
    /// Address and port of the viewer and the stream (port 0: any free port);
    /// default: the scene's `stream.bind` (127.0.0.1:7878).
    #[arg(long, value_name = "ADDR:PORT")]
    pub bind: Option<SocketAddr>,
    /// Run the haptic thread with SCHED_FIFO priority 80 (needs CAP_SYS_NICE or root;
    /// warns and runs normally without). This also locks all of the process's memory
    /// (`mlockall`), several hundred MB to GB, so it is for dedicated haptic machines.
    #[arg(long)]
    pub realtime: bool,
}

/// Which device drives the probe.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceChoice {
    /// A connected HID device a profile matches, else the virtual stylus.
    Auto,
    /// A HID device matched by this profile (else the scene's, else the reference one).
    Hid(Option<PathBuf>),
    /// The virtual stylus, moved by viewers' control messages.
    Sim,
    /// A recorded trajectory (CSV, device frame).
    Replay(PathBuf),
}

impl DeviceChoice {
    /// Parses a `--device` value.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (kind, arg) = spec.split_once(':').unwrap_or((spec, ""));
        match (kind, arg) {
            ("auto", "") => Ok(Self::Auto),
            ("sim", "") => Ok(Self::Sim),
            ("hid", "") => Ok(Self::Hid(None)),
            ("hid", profile) => Ok(Self::Hid(Some(PathBuf::from(profile)))),
            ("replay", file) if !file.is_empty() => Ok(Self::Replay(PathBuf::from(file))),
            _ => Err(format!(
                "unknown device `{spec}`: use auto, hid, hid:PROFILE.toml, sim or replay:FILE.csv"
            )),
        }
    }

    /// The device the scene's `[device]` section asks for (paths resolved against the
    /// scene file).
    pub fn from_scene(scene: &Scene) -> Self {
        let d = &scene.device;
        match d.kind {
            DeviceKind::Auto => Self::Auto,
            DeviceKind::Sim => Self::Sim,
            DeviceKind::Hid => Self::Hid(d.profile.as_deref().map(|p| scene.resolve(p))),
            DeviceKind::Replay => Self::Replay(
                scene.resolve(
                    d.trajectory
                        .as_deref()
                        .expect("validated: a replay device names its trajectory"),
                ),
            ),
        }
    }
}

/// A device that remembers the last force commanded to it (N, scene frame), so the
/// server can show what the hand got last, and that zeroes its force when dropped: no
/// error path can leave a force on.
pub struct ForceLog<D: HapticDevice> {
    inner: D,
    last: Vec3,
}

impl<D: HapticDevice> ForceLog<D> {
    /// Wraps `inner`; nothing commanded yet (zero).
    pub fn new(inner: D) -> Self {
        Self {
            inner,
            last: Vec3::zeros(),
        }
    }

    /// The last force commanded (N).
    pub fn last_force(&self) -> Vec3 {
        self.last
    }
}

impl<D: HapticDevice> HapticDevice for ForceLog<D> {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        self.inner.read(now)
    }
    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        self.last = force;
        self.inner.write_force(force)
    }
    fn zero_force(&mut self) -> Result<(), DeviceError> {
        self.last = Vec3::zeros();
        self.inner.zero_force()
    }
    fn reconnect(&mut self) -> Result<bool, DeviceError> {
        self.inner.reconnect()
    }
    fn rating(&self) -> DeviceRating {
        self.inner.rating()
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
}

impl<D: HapticDevice> Drop for ForceLog<D> {
    fn drop(&mut self) {
        let _ = self.zero_force();
    }
}

/// The device as the haptic thread drives it: scene coordinates, force logged.
type ServeDevice = ForceLog<MappedDevice<Box<dyn HapticDevice>>>;

/// The virtual stylus's input: positions a viewer picked (scene frame) go to the device
/// frame through the workspace mapping.
struct Stylus {
    input: SlotWriter<(Vec3, u32)>,
    map: Workspace,
    /// Where it rests when released (m, scene frame).
    idle: Vec3,
}

impl Stylus {
    fn move_to(&mut self, scene_position: &Vec3) {
        self.input.write((self.map.to_device(scene_position), 0));
    }
}

/// An opened device and what it is, for the console.
struct OpenedDevice {
    device: Box<dyn HapticDevice>,
    stylus_input: Option<SlotWriter<(Vec3, u32)>>,
    description: String,
}

fn open_hid(profile: &DeviceProfile) -> Result<Box<dyn HapticDevice>, DeviceError> {
    let transport = HidapiTransport::open(profile)?;
    Ok(Box::new(HidDevice::new(transport, profile.clone())))
}

/// The profile for a HID device: the given file, else the scene's, else the reference.
fn hid_profile(path: Option<&PathBuf>, scene: &Scene) -> Result<DeviceProfile, String> {
    let scene_profile = scene.device.profile.as_deref().map(|p| scene.resolve(p));
    match path.or(scene_profile.as_ref()) {
        Some(p) => DeviceProfile::load(p).map_err(|e| e.to_string()),
        None => Ok(DeviceProfile::reference()),
    }
}

fn virtual_stylus(why: &str) -> OpenedDevice {
    let (device, input) = SimDevice::external(Vec3::zeros());
    OpenedDevice {
        device: Box::new(device),
        stylus_input: Some(input),
        description: format!("virtual stylus, moved from the viewer ({why})"),
    }
}

fn open_device(choice: &DeviceChoice, scene: &Scene) -> Result<OpenedDevice, String> {
    match choice {
        DeviceChoice::Sim => Ok(virtual_stylus("device sim")),
        DeviceChoice::Replay(path) => {
            let trajectory = Trajectory::load(path).map_err(|e| e.to_string())?;
            let description = format!(
                "replay of {} ({:.1} s, then holds its last sample)",
                path.display(),
                trajectory.duration()
            );
            Ok(OpenedDevice {
                device: Box::new(ReplayDevice::new(trajectory)),
                stylus_input: None,
                description,
            })
        }
        DeviceChoice::Hid(path) => {
            let profile = hid_profile(path.as_ref(), scene)?;
            let device = open_hid(&profile)
                .map_err(|e| format!("HID device with profile `{}`: {e}", profile.name))?;
            let description = format!("HID device `{}` (profile {})", device.name(), profile.name);
            Ok(OpenedDevice {
                device,
                stylus_input: None,
                description,
            })
        }
        DeviceChoice::Auto => {
            let mut profiles = vec![DeviceProfile::reference()];
            if scene.device.profile.is_some() {
                profiles.insert(0, hid_profile(None, scene)?);
            }
            let mut misses = Vec::new();
            for profile in &profiles {
                match open_hid(profile) {
                    Ok(device) => {
                        let description =
                            format!("HID device `{}` (profile {})", device.name(), profile.name);
                        return Ok(OpenedDevice {
                            device,
                            stylus_input: None,
                            description,
                        });
                    }
                    Err(e) => misses.push(format!("{}: {e}", profile.name)),
                }
            }
            tracing::debug!("no HID device: {}", misses.join("; "));
            Ok(virtual_stylus("no HID device matches a profile"))
        }
    }
}

/// The model thread's step: obey viewers' commands, step the tissue, publish what
/// viewers see at the visual rate.
struct ServeStep {
    model: SceneModel,
    visual: SceneVisual,
    snapshot: VisualSnapshot,
    snapshots: SnapshotWriter,
    control: ControlReceiver,
    stylus: Option<Stylus>,
    visual_period: f64,
    next_visual: f64,
    warned_no_stylus: bool,
}

impl ServeStep {
    fn obey(&mut self, command: ProbeControl) {
        match (command, self.stylus.as_mut()) {
            (ProbeControl::MoveTo(p), Some(stylus)) => stylus.move_to(&p),
            (ProbeControl::Release, Some(stylus)) => {
                let idle = stylus.idle;
                stylus.move_to(&idle);
            }
            (ProbeControl::ResetTissue, _) => self.model.reset(),
            (ProbeControl::MoveTo(_) | ProbeControl::Release, None) => {
                if !self.warned_no_stylus {
                    self.warned_no_stylus = true;
                    tracing::warn!("a viewer moves the probe, but the device is not the virtual stylus; ignored");
                }
            }
        }
    }

    /// Publishes the state of the last step with `force` (N) as the force on the hand.
    fn publish(&mut self, t: f64, probe: Vec3, force: Vec3) {
        self.visual
            .fill(&mut self.model, t, probe, force, &mut self.snapshot);
        self.snapshots.publish(&self.snapshot);
    }
}

impl ModelStep for ServeStep {
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        while let Ok(command) = self.control.try_recv() {
            self.obey(command);
        }
        let out = self.model.step(t, dt, probe);
        if t >= self.next_visual {
            self.next_visual = (self.next_visual + self.visual_period).max(t);
            self.publish(t, probe, out.f0);
        }
        out
    }
}

/// Where the virtual stylus rests (m, scene frame): above the middle of the mesh's top.
fn idle_position(built: &model::BuiltScene) -> Vec3 {
    let nodes = &built.mesh.mesh.nodes;
    let (mut lo, mut hi) = (nodes[0], nodes[0]);
    for p in nodes {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    let mid = (lo + hi) / 2.0;
    Vec3::new(mid.x, mid.y, hi.z + IDLE_HEIGHT)
}

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
    let choice = args
        .device
        .clone()
        .unwrap_or_else(|| DeviceChoice::from_scene(&scene));
    let bind = args.bind.unwrap_or_else(|| scene.stream.bind_addr());
    // Open the device first (a wrong device fails before a long precompute) and make
    // sure it holds no force from before.
    let opened = open_device(&choice, &scene)?;
    let map = Workspace::from_spec(&scene.device.workspace);
    let mut device: ServeDevice = ForceLog::new(MappedDevice::new(opened.device, map));
    device
        .zero_force()
        .map_err(|e| format!("device {}: {e}", device.name()))?;

    let name = scene.name.clone().unwrap_or_else(|| scene.source.clone());
    println!("palpa serve: scene \"{name}\" ({})", scene.source);
    let (bar, mut on_progress) = progress_bar("building the scene");
    let built = model::build(scene, &args.scene.cache_dir(), &mut on_progress);
    bar.finish_and_clear();
    let built = built.map_err(|e| e.to_string())?;
    println!("model: {}", describe(&built.precompute));
    let (stream_scene, visual) = SceneVisual::new(&built);
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

    let idle = idle_position(&built);
    let stylus = opened.stylus_input.map(|input| {
        let mut s = Stylus { input, map, idle };
        s.move_to(&idle);
        s
    });
    let (snapshot_writer, snapshot_reader) = snapshot_slot(visual.at_rest(idle));
    let (control_tx, control_rx) = control_channel(CONTROL_CAPACITY);
    let scene = &built.scene;
    let stream_config = StreamConfig {
        bind,
        frame_rate_hz: scene.rates.visual,
        max_clients: scene.stream.max_clients,
        control_token: scene.stream.token.clone(),
        ..StreamConfig::default()
    };
    let runtime_config = RuntimeConfig {
        haptic: built.haptic_config(device.rating()),
        realtime: if args.realtime {
            RealtimePolicy {
                fifo_priority: Some(HAPTIC_PRIORITY),
                core: None,
            }
        } else {
            RealtimePolicy::NONE
        },
        telemetry_capacity: 2 * scene.rates.haptic as usize,
        log_stats: false,
    };
    let step = ServeStep {
        snapshot: visual.at_rest(idle),
        visual,
        visual_period: 1.0 / scene.rates.visual,
        next_visual: 0.0,
        model: built.model,
        snapshots: snapshot_writer,
        control: control_rx,
        stylus,
        warned_no_stylus: false,
    };

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
        while !interrupted.load(Ordering::SeqCst) {
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
        let (t, probe) = (step.snapshot.time, step.snapshot.probe);
        step.publish(t, probe, last);
        server.shutdown().await;
        drop(haptic);
        println!(
            "stopped: last force commanded to the device: {} {} {} N",
            last.x, last.y, last.z
        );
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_choices_parse_and_unknown_ones_are_named() {
        assert_eq!(DeviceChoice::parse("auto"), Ok(DeviceChoice::Auto));
        assert_eq!(DeviceChoice::parse("sim"), Ok(DeviceChoice::Sim));
        assert_eq!(DeviceChoice::parse("hid"), Ok(DeviceChoice::Hid(None)));
        assert_eq!(
            DeviceChoice::parse("hid:my.toml"),
            Ok(DeviceChoice::Hid(Some("my.toml".into())))
        );
        assert_eq!(
            DeviceChoice::parse("replay:a.csv"),
            Ok(DeviceChoice::Replay("a.csv".into()))
        );
        for bad in ["", "replay", "replay:", "sim:circle", "joystick"] {
            let e = DeviceChoice::parse(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
    }

    /// A device whose commanded force stays observable after it is dropped.
    struct Observed(std::sync::Arc<std::sync::Mutex<Vec3>>);

    impl HapticDevice for Observed {
        fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
            Ok(DeviceSample {
                device_time: now,
                ..DeviceSample::ORIGIN
            })
        }
        fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
            *self.0.lock().unwrap() = force;
            Ok(())
        }
        fn rating(&self) -> DeviceRating {
            DeviceRating {
                max_force: 1.0,
                max_stiffness: 1.0,
            }
        }
        fn name(&self) -> &str {
            "observed"
        }
    }

    #[test]
    fn the_force_log_remembers_the_last_force_and_zeroes_on_drop() {
        let at_device = std::sync::Arc::new(std::sync::Mutex::new(Vec3::zeros()));
        let mut log = ForceLog::new(Observed(at_device.clone()));
        log.write_force(Vec3::new(0.0, 0.0, 1.5)).unwrap();
        assert_eq!(log.last_force(), Vec3::new(0.0, 0.0, 1.5));
        log.zero_force().unwrap();
        assert_eq!(log.last_force(), Vec3::zeros());
        log.write_force(Vec3::new(0.2, 0.0, 0.0)).unwrap();
        assert_eq!(*at_device.lock().unwrap(), Vec3::new(0.2, 0.0, 0.0));
        drop(log);
        assert_eq!(
            *at_device.lock().unwrap(),
            Vec3::zeros(),
            "dropping zeroes the force"
        );
    }
}
