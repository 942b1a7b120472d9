//! The real default scene (at 5 mm cells) streamed by a real server: a model thread
//! steps it in real time along a scripted press, slide across the lump and release,
//! publishing a snapshot every step and recording the model's own displaced surface for
//! it, so tests can check what clients rebuild. Shared by `stream_model_e2e` and
//! `stream_browser`.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use palpa::app::scene::build;
use palpa::pipeline::SceneModel;
use palpa::scene::{BackendKind, Scene};
use palpa::stream::SceneVisual;
use palpa::stream::{
    snapshot_slot, SnapshotDeformation, SnapshotWriter, StreamConfig, StreamScene, StreamServer,
};
use palpa::tissue::ModelStep;
use palpa::Vec3;

const DEFAULT: &str = include_str!("../../scenes/default.toml");

/// Model step (s), as `serve` runs the default scene.
pub const DT: f64 = 0.005;

/// Scene time (s) the script runs for.
pub const DURATION: f64 = 3.2;

/// The model's surface (m) after each published snapshot, by scene time in µs
/// ([`time_key`]).
pub type Truth = Arc<Mutex<HashMap<i64, Vec<Vec3>>>>;

/// The scene times ([`time_key`]) of the snapshots whose loads' K⁻¹ columns were all
/// complete: the frames that can carry loads instead of per-vertex corrections.
pub type Complete = Arc<Mutex<HashSet<i64>>>;

/// The key of scene time `t` (s) in [`Truth`]: whole microseconds, so a time that went
/// through JSON finds its entry.
pub fn time_key(t: f64) -> i64 {
    (t * 1e6).round() as i64
}

/// Probe tip (m) at scene time `t` (s): in 6 mm deep at x = −3 cm over 0.5 s, slide to
/// x = +3 cm over the lump (centred under x = 0) in 2 s, lift out in 0.3 s, rest.
pub fn probe_at(t: f64) -> Vec3 {
    let depth = 0.006;
    let (x0, x1) = (-0.03, 0.03);
    if t < 0.5 {
        Vec3::new(x0, 0.0, 0.004 - (0.004 + depth) * t / 0.5)
    } else if t < 2.5 {
        Vec3::new(x0 + (x1 - x0) * (t - 0.5) / 2.0, 0.0, -depth)
    } else if t < 2.8 {
        Vec3::new(x1, 0.0, -depth + (depth + 0.004) * (t - 2.5) / 0.3)
    } else {
        Vec3::new(x1, 0.0, 0.004)
    }
}

/// A server streaming the default scene on `backend`, ready to run the script.
pub struct ModelStream {
    /// The running server (loopback, ephemeral port).
    pub server: StreamServer,
    /// The model's surface for every published snapshot.
    pub truth: Truth,
    /// The snapshots whose columns were complete.
    pub complete: Complete,
    model: Option<(SceneModel, SceneVisual, SnapshotWriter, Vec<usize>)>,
}

impl ModelStream {
    /// Builds the default scene on `backend` (cache in `cache`) and starts a server with
    /// its residual columns; the tissue rests until [`Self::run_script`].
    pub async fn start(backend: BackendKind, cache: &Path) -> Self {
        // 5 mm cells instead of 3.33: what clients rebuild and which frames carry loads
        // do not depend on the resolution, and the model builds in a fraction of the time.
        let coarser = DEFAULT.replace("fine = 0.0033333333", "fine = 0.005");
        assert_ne!(coarser, DEFAULT, "the default scene's cell size moved");
        let mut scene = Scene::parse(&coarser, "default", Path::new(".")).unwrap();
        scene.backend.kind = backend;
        let mut built = build(scene, cache, &mut |_| {}).unwrap();
        // As `serve` runs it: columns complete on their own thread.
        built.model.work_in_background().unwrap();
        let (stream_scene, mut visual) =
            SceneVisual::new("default", &built.mesh.mesh, &built.model);
        let nodes = StreamScene::from_mesh_surface("", &built.mesh.mesh).mesh_nodes;
        let feed = visual.column_feed();
        let (writer, reader) = snapshot_slot(visual.at_rest(probe_at(0.0)));
        let config = StreamConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            ..StreamConfig::default()
        };
        let server =
            StreamServer::start_with_columns(config, stream_scene, reader, None, Some(feed))
                .await
                .unwrap();
        let truth: Truth = Arc::default();
        // The first frame: the tissue at rest at t = 0.
        let rest: Vec<Vec3> = nodes
            .iter()
            .map(|&n| built.model.rest_positions()[n])
            .collect();
        truth.lock().unwrap().insert(time_key(0.0), rest);
        Self {
            server,
            truth,
            complete: Complete::default(),
            model: Some((built.model, visual, writer, nodes)),
        }
    }

    /// The model thread: steps the script at 200 Hz in real time, a snapshot (and the
    /// model's own surface for it) every step, so the 30 Hz publisher picks whichever
    /// is newest. Call once.
    pub fn run_script(&mut self) -> JoinHandle<()> {
        self.spawn_script(None)
    }

    /// As [`Self::run_script`], but every `every` steps the script holds at that step's
    /// time (s), sent on the returned channel, until the test sends on `resume` (or drops
    /// it): a client that falls behind real time is still met at every hold.
    pub fn run_script_with_holds(
        &mut self,
        every: usize,
    ) -> (
        JoinHandle<()>,
        tokio::sync::mpsc::UnboundedReceiver<f64>,
        std::sync::mpsc::Sender<()>,
    ) {
        let (held, holds) = tokio::sync::mpsc::unbounded_channel();
        let (resume, resumed) = std::sync::mpsc::channel();
        let thread = self.spawn_script(Some(Hold {
            every,
            held,
            resumed,
        }));
        (thread, holds, resume)
    }

    fn spawn_script(&mut self, hold: Option<Hold>) -> JoinHandle<()> {
        let (mut model, mut visual, mut writer, nodes) =
            self.model.take().expect("the script runs once");
        let truth = self.truth.clone();
        let complete = self.complete.clone();
        std::thread::spawn(move || {
            let mut start = Instant::now();
            let mut snapshot = visual.at_rest(probe_at(0.0));
            let mut displacement = vec![Vec3::zeros(); nodes.len()];
            let steps = (DURATION / DT) as usize;
            for i in 1..=steps {
                let t = i as f64 * DT;
                let probe = probe_at(t);
                model.step(t, DT, probe);
                visual.fill(&mut model, t, probe, Vec3::zeros(), &mut snapshot);
                model.displacements(&nodes, &mut displacement);
                let rest = model.rest_positions();
                let surface = nodes
                    .iter()
                    .zip(&displacement)
                    .map(|(&n, d)| rest[n] + d)
                    .collect();
                truth.lock().unwrap().insert(time_key(t), surface);
                if let SnapshotDeformation::Superposed {
                    field_from_loads: true,
                    ..
                } = snapshot.deformation
                {
                    complete.lock().unwrap().insert(time_key(t));
                }
                writer.publish(&snapshot);
                if let Some(hold) = hold.as_ref().filter(|h| i % h.every == 0) {
                    let held_since = Instant::now();
                    if hold.held.send(t).is_ok() {
                        let _ = hold.resumed.recv();
                    }
                    // Real time resumes where it stopped.
                    start += held_since.elapsed();
                }
                let next = start + Duration::from_secs_f64(t);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        })
    }
}

/// Where a script holds for its client: every `every` steps.
struct Hold {
    every: usize,
    held: tokio::sync::mpsc::UnboundedSender<f64>,
    resumed: std::sync::mpsc::Receiver<()>,
}
