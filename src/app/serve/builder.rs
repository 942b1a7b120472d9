//! `Serve::builder(scene).devices(..).stream(..).record(..).start()`: what `palpa
//! serve` runs, as a library call.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::device::choice::DeviceChoice;
use crate::modal::Progress;
use crate::recording::{Existing, RecordedBy, RecordingDir, RecordingHealth, SceneInputs};
use crate::rt::RealtimeMode;
use crate::scene::{self, Scene};
use crate::stream::{control_channel, snapshot_slot, ProbeWorkspace, SceneVisual};

use super::super::config::{device_choice, stream_config, stream_regions};
use super::control::ControlRouter;
use super::devices::{configure, open_devices};
use super::handle::{serve_viewers, start_stream, ServeHandle};
use super::hands::{start_hands, HandsSetup};
use super::summary::{model_summary, Started};

/// Height of the idle virtual stylus above the top of the mesh (m).
const IDLE_HEIGHT: f64 = 0.01;
/// Control commands buffered between the server and the model thread.
const CONTROL_CAPACITY: usize = 256;

/// A scene to serve: the tissue on its model thread, a haptic thread per device, the
/// viewer and its WebSocket stream, and optionally a recording.
pub struct Serve;

impl Serve {
    /// Starts describing how to serve `scene`.
    pub fn builder(scene: Scene) -> ServeBuilder {
        ServeBuilder {
            scene,
            cache_dir: scene::cache_dir(None),
            devices: Vec::new(),
            bind: None,
            record: None,
            realtime: RealtimeMode::Auto,
            progress: None,
            on_viewer: None,
            stop: None,
        }
    }
}

/// How to serve a scene; [`ServeBuilder::start`] starts it.
pub struct ServeBuilder {
    scene: Scene,
    cache_dir: PathBuf,
    devices: Vec<DeviceChoice>,
    bind: Option<SocketAddr>,
    record: Option<(PathBuf, SceneInputs, Existing)>,
    realtime: RealtimeMode,
    progress: Option<Box<dyn FnMut(Progress)>>,
    on_viewer: Option<OnViewer>,
    stop: Option<fn() -> &'static AtomicBool>,
}

/// What [`ServeBuilder::start`] returns when its stop flag turned true while the tissue
/// was being prepared: nothing started, no force was commanded.
pub const STOPPED_WHILE_PREPARING: &str = "stopped while the tissue was being prepared";

/// What hears of the start once the viewer is served ([`ServeBuilder::on_viewer`]).
type OnViewer = Box<dyn FnMut(&Started)>;

impl ServeBuilder {
    /// Where the precompute is cached (default: [`scene::cache_dir`]).
    pub fn cache_dir(mut self, dir: &Path) -> Self {
        self.cache_dir = dir.to_path_buf();
        self
    }

    /// The devices, each with its own haptic loop and probe on the one tissue (default:
    /// the scene's `[device]`).
    pub fn devices(mut self, devices: Vec<DeviceChoice>) -> Self {
        self.devices = devices;
        self
    }

    /// Where the viewer and stream listen (default: the scene's `stream.bind`).
    pub fn stream(mut self, bind: Option<SocketAddr>) -> Self {
        self.bind = bind;
        self
    }

    /// Records the session into `dir` (created, or empty; one holding a recording is
    /// replaced or refused as `existing` says) with its own copy of the scene and the
    /// files it names (`scene`, read with the scene: [`SceneInputs::load`]).
    pub fn record(mut self, dir: PathBuf, scene: SceneInputs, existing: Existing) -> Self {
        self.record = Some((dir, scene, existing));
        self
    }

    /// Real-time scheduling of the haptic (and model) thread (default: `auto`).
    pub fn realtime(mut self, mode: RealtimeMode) -> Self {
        self.realtime = mode;
        self
    }

    /// Hears of the precompute's stages.
    pub fn progress(mut self, progress: impl FnMut(Progress) + 'static) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }

    /// Hears what started as soon as the viewer is served, before the tissue is ready:
    /// the modal backend's factor of K may still be building then, and
    /// [`ServeBuilder::start`] returns once it is (the hands start then).
    pub fn on_viewer(mut self, on_viewer: impl FnMut(&Started) + 'static) -> Self {
        self.on_viewer = Some(Box::new(on_viewer));
        self
    }

    /// Gives up waiting for the tissue once the flag `stop` returns turns true (asked
    /// for after [`Self::on_viewer`]'s callback, which may install it): the start then
    /// fails with [`STOPPED_WHILE_PREPARING`] before any hand starts.
    pub fn stop_when(mut self, stop: fn() -> &'static AtomicBool) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Opens the devices, builds the scene, starts the threads, the stream server and
    /// the recording; every error is a message for the user, with the force zero.
    pub fn start(mut self) -> Result<ServeHandle, String> {
        let scene = &self.scene;
        let choices = match self.devices.is_empty() {
            true => vec![device_choice(scene)],
            false => self.devices.clone(),
        };
        let bind = self.bind.unwrap_or_else(|| scene.stream.bind_addr());
        // The [stream] settings (token strength, origins, hosts) fail before the devices
        // open and the precompute runs.
        stream_config(scene, bind, None)?;
        // The port is taken now, before any model work: a busy port is the first error.
        let listening = super::handle::listen(bind)?;
        let name = scene.name.clone().unwrap_or_else(|| scene.source.clone());
        let scene_profile = scene.device.profile.as_deref().map(|p| scene.resolve(p));
        let opened = open_devices(&choices, scene_profile.as_deref())?;
        let session = match &self.record {
            Some((dir, inputs, existing)) => Some(RecordingDir::create(
                dir,
                inputs,
                opened.len(),
                true,
                RecordedBy::Serve,
                *existing,
            )?),
            None => None,
        };
        let health = Arc::new(RecordingHealth::default());
        let mut progress = self.progress.take();
        let mut on_progress = |p: Progress| {
            if let Some(f) = progress.as_mut() {
                f(p)
            }
        };
        let mut built = crate::app::scene::build(self.scene, &self.cache_dir, &mut on_progress)
            .map_err(|e| e.to_string())?;
        let count = opened.len();
        if count > 1 {
            built.model = built.model.with_probes(count);
        }
        // In real time the K⁻¹ columns (or the nonlinear corrections) are computed on
        // their own thread, so the model steps keep the model rate.
        built
            .model
            .work_in_background()
            .map_err(|e| e.to_string())?;
        let (mut stream_scene, mut visual) =
            SceneVisual::new(&name, &built.mesh.mesh, &built.model);
        let column_feed = visual.column_feed();
        stream_scene.model_rate_hz = built.scene.rates.model;
        stream_scene.haptic_rate_hz = built.scene.rates.haptic;
        stream_scene.up = built.scene.view.up.vector();
        stream_scene.regions = stream_regions(&built)?;
        let model = model_summary(&built.mesh.mesh, &stream_scene, &built.model);

        let idle = built.above_the_middle(IDLE_HEIGHT);
        let (snapshots, snapshot_reader) = snapshot_slot(visual.at_rest(idle));
        let (control_tx, control) = control_channel(CONTROL_CAPACITY);
        let (min, max) = built.model.workspace();
        let workspace = Some(ProbeWorkspace { min, max });
        let stream_config = stream_config(&built.scene, bind, workspace)?;
        let shifts = choices.iter().map(DeviceChoice::scene_shift);
        let mut configured: Vec<_> = opened
            .into_iter()
            .zip(shifts)
            .enumerate()
            .map(|(i, o)| configure(&mut built, o, (i, count), self.realtime, idle))
            .collect();
        let devices = configured.iter().map(|d| d.summary.clone()).collect();
        let calibration = configured.iter_mut().filter_map(|d| d.calibration.take());
        let calibration = calibration.collect();
        let stylus = configured.first_mut().and_then(|d| d.stylus.take());
        let (router, resets) = ControlRouter::new(stylus);
        let router = router
            .spawn(control)
            .map_err(|e| format!("cannot start the control thread: {e}"))?;
        let stream = (
            stream_config,
            stream_scene,
            snapshot_reader,
            control_tx,
            column_feed,
        );
        // Viewers see the tissue at rest (and "preparing the tissue" until the haptic
        // statistics arrive) while the model finishes on its own thread.
        let viewers = serve_viewers(listening, stream)?;
        let started = Started {
            precompute: built.precompute,
            model,
            devices,
            viewer_url: viewers.viewer_url(),
            remote_viewer_urls: viewers.remote_viewer_urls(),
        };
        if let Some(on_viewer) = self.on_viewer.as_mut() {
            on_viewer(&started);
        }
        // The hands start on a ready model: a device's clock, its script and the
        // recording begin there, so a replay meets the same tissue at the same time.
        let ready = match self.stop {
            Some(stop) => built.model.wait_ready_unless(stop()),
            None => built.model.wait_ready().map(|()| true),
        };
        if !ready.map_err(|e| format!("cannot prepare the tissue: {e}"))? {
            return Err(STOPPED_WHILE_PREPARING.into());
        }
        let hands = start_hands(HandsSetup {
            devices: configured,
            model: built.model,
            rates: built.scene.rates.clone(),
            visual,
            snapshots,
            resets,
            idle,
            session: session.as_ref().map(|dir| (dir, &health)),
        })?;
        start_stream(
            viewers,
            hands,
            router,
            (session, health),
            calibration,
            started,
        )
    }
}
