//! The real tissue models streamed over real loopback sockets: the default block is
//! pressed 6 mm deep, slid across the lump and released while WebSocket clients watch
//! (one of them joins during the slide). Every frame a client rebuilds — modal
//! coordinates, nodal loads times the residual columns the server sent it, corrections
//! — must equal the model's own displaced surface at that frame's time to 1e-5 m, on
//! both backends; frames under contact must carry loads instead of per-vertex
//! corrections.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use palpa::model::{ModelStep, TissueModel};
use palpa::scene::{build, BackendKind, Scene};
use palpa::session::{SceneModel, SceneVisual};
use palpa::stream::{snapshot_slot, StreamConfig, StreamScene, StreamServer};
use palpa::Vec3;
use palpa_client::palpa_protocol as wire;
use palpa_client::Client;

const DEFAULT: &str = include_str!("../scenes/default.toml");

/// Model step (s), as `serve` runs the default scene.
const DT: f64 = 0.005;

/// The model's surface (m) after each published snapshot, by scene time bits.
type Truth = Arc<Mutex<HashMap<u64, Vec<Vec3>>>>;

/// Probe tip (m) at scene time `t` (s): in 6 mm deep at x = −3 cm over 0.5 s, slide to
/// x = +3 cm over the lump (centred under x = 0) in 2 s, lift out in 0.3 s, rest.
fn probe_at(t: f64) -> Vec3 {
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

/// What one client saw.
#[derive(Debug, Default)]
struct Seen {
    frames: usize,
    in_contact: usize,
    with_loads: usize,
    corrections_in_contact: Vec<usize>,
    columns: usize,
    max_error_m: f64,
}

/// Watches until `stop`, comparing every frame with the model's surface at its time.
async fn watch(url: String, truth: Truth, stop: Arc<AtomicBool>) -> Seen {
    let mut client = Client::connect(&url).await.expect("connect");
    let mut seen = Seen::default();
    while !stop.load(Ordering::Relaxed) {
        let Ok(Ok(frame)) =
            tokio::time::timeout(Duration::from_millis(200), client.next_frame()).await
        else {
            continue;
        };
        let got = client
            .positions(&frame)
            .expect("the frame fits the held columns");
        let expected = truth
            .lock()
            .unwrap()
            .get(&frame.scene_time.to_bits())
            .cloned()
            .unwrap_or_else(|| panic!("no model surface at t = {}", frame.scene_time));
        for (g, e) in got.iter().zip(&expected) {
            let d = Vec3::new(g[0] as f64, g[1] as f64, g[2] as f64) - e;
            seen.max_error_m = seen.max_error_m.max(d.norm());
        }
        seen.frames += 1;
        if let wire::Deformation::Superposed {
            loads, corrections, ..
        } = &frame.deformation
        {
            if frame.in_contact {
                seen.in_contact += 1;
                seen.corrections_in_contact.push(corrections.len());
                seen.with_loads += usize::from(!loads.is_empty());
            }
        }
    }
    seen.columns = client.columns.len();
    seen
}

/// The surface vertices at rest (m).
fn stream_scene_rest(model: &SceneModel, nodes: &[usize]) -> Vec<Vec3> {
    nodes.iter().map(|&n| model.rest_positions()[n]).collect()
}

async fn press_slide_release(backend: BackendKind) {
    let cache = tempfile::tempdir().unwrap();
    let mut scene = Scene::parse(DEFAULT, "default", Path::new(".")).unwrap();
    scene.backend.kind = backend;
    let mut built = build(scene, cache.path(), &mut |_| {}).unwrap();
    let (stream_scene, mut visual) = SceneVisual::new("default", &built.mesh.mesh, &built.model);
    let nodes = StreamScene::from_mesh_surface("", &built.mesh.mesh).mesh_nodes;
    let feed = visual.column_feed();
    let (mut writer, reader) = snapshot_slot(visual.at_rest(probe_at(0.0)));
    let config = StreamConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..StreamConfig::default()
    };
    let server = StreamServer::start_with_columns(config, stream_scene, reader, None, Some(feed))
        .await
        .unwrap();
    let url = format!("ws://{}/ws", server.local_addr());
    let truth: Truth = Arc::default();
    // The first frame: the tissue at rest at t = 0.
    let rest_surface = stream_scene_rest(&built.model, &nodes);
    truth.lock().unwrap().insert(0f64.to_bits(), rest_surface);
    let stop = Arc::new(AtomicBool::new(false));
    let early: Vec<_> = (0..3)
        .map(|_| tokio::spawn(watch(url.clone(), truth.clone(), stop.clone())))
        .collect();
    // Let the clients connect before the model moves.
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The model thread: 200 Hz in real time, a snapshot (and the model's own surface
    // for it) every step, so the 30 Hz publisher picks whichever is newest.
    let model_truth = truth.clone();
    let model = std::thread::spawn(move || {
        let start = Instant::now();
        let mut snapshot = visual.at_rest(probe_at(0.0));
        let mut displacement = vec![Vec3::zeros(); nodes.len()];
        let steps = (3.2 / DT) as usize;
        for i in 1..=steps {
            let t = i as f64 * DT;
            let probe = probe_at(t);
            built.model.step(t, DT, probe);
            visual.fill(&mut built.model, t, probe, Vec3::zeros(), &mut snapshot);
            match &mut built.model {
                SceneModel::Modal(s) => s.model_mut().displacements(&nodes, &mut displacement),
                SceneModel::Condensed(s) => s.model_mut().displacements(&nodes, &mut displacement),
            }
            let rest = built.model.rest_positions();
            let surface = nodes
                .iter()
                .zip(&displacement)
                .map(|(&n, d)| rest[n] + d)
                .collect();
            model_truth.lock().unwrap().insert(t.to_bits(), surface);
            writer.publish(&snapshot);
            let next = start + Duration::from_secs_f64(t);
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
    });
    // A late joiner: connects in the middle of the slide.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let late = tokio::spawn(watch(url.clone(), truth.clone(), stop.clone()));
    tokio::task::spawn_blocking(move || model.join().unwrap())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for w in early {
        all.push(("early", w.await.unwrap()));
    }
    all.push(("late joiner", late.await.unwrap()));
    for (who, seen) in &all {
        let mut corrections = seen.corrections_in_contact.clone();
        corrections.sort_unstable();
        let median = corrections.get(corrections.len() / 2).copied().unwrap_or(0);
        println!(
            "{backend:?} {who}: {} frames, {} in contact ({} with loads, median {median} \
             corrections), {} columns held, max error {:.2e} m",
            seen.frames, seen.in_contact, seen.with_loads, seen.columns, seen.max_error_m
        );
        assert!(seen.frames >= 20, "{who}: {} frames", seen.frames);
        assert!(
            seen.in_contact >= 10,
            "{who}: {} frames in contact",
            seen.in_contact
        );
        assert!(
            seen.max_error_m <= 1e-5,
            "{backend:?} {who}: rebuilt surface off by {} m",
            seen.max_error_m
        );
        // Under contact the loads carry the residual field: most frames need no
        // per-vertex correction at all (the frames right after a node is first
        // contacted do, until its column is complete and sent).
        assert!(
            seen.with_loads * 10 >= seen.in_contact * 9,
            "{who}: {} of {} contact frames carry loads",
            seen.with_loads,
            seen.in_contact
        );
        assert!(
            median <= 16,
            "{who}: median {median} corrections under contact"
        );
        assert!(seen.columns > 0, "{who}: was sent residual columns");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modal_press_slide_release_rebuilds_the_models_surface_over_sockets() {
    press_slide_release(BackendKind::Modal).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn condensed_press_slide_release_rebuilds_the_models_surface_over_sockets() {
    press_slide_release(BackendKind::Condensed).await;
}
