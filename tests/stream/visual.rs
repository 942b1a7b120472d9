//! The visual stream's view of a running scene model: the frames a client decodes,
//! with the residual columns streamed to it, rebuild the model's own displaced surface
//! (modal coordinates, nodal loads times columns, corrections), and a reset returns it
//! to rest.

use palpa::app::scene::build;
use palpa::pipeline::SceneModel;
use palpa::scene::Scene;
use palpa::stream::SceneVisual;
use palpa::stream::{snapshot_slot, FrameEncoder, StreamScene};
use palpa::tissue::ModelStep;
use palpa::Vec3;
use palpa_client::palpa_protocol as wire;

const BLOCK: &str = r#"
    [mesh.box]
    origin = [-0.02, -0.02, -0.02]
    size = [0.04, 0.04, 0.02]
    cells = [4, 4, 2]
    [materials.default]
    young = 30e3
    poisson = 0.3
    density = 1000
    [backend.modal]
    modes = 12
    max_frequency = 5000
"#;

/// Presses a point probe 2 mm into the top face (z = 0) over 20 model steps.
fn press(model: &mut SceneModel) -> Vec3 {
    let mut probe = Vec3::new(0.003, 0.002, 0.001);
    for i in 0..=20 {
        probe.z = 0.001 - 0.003 * i as f64 / 20.0;
        model.step(i as f64 * 5e-3, 5e-3, probe);
    }
    probe
}

/// Surface positions the model itself reports (m): rest + displacements.
fn model_positions(model: &mut SceneModel, nodes: &[usize]) -> Vec<Vec3> {
    let mut d = vec![Vec3::zeros(); nodes.len()];
    model.displacements(nodes, &mut d);
    let rest = model.rest_positions();
    nodes.iter().zip(&d).map(|(&n, d)| rest[n] + d).collect()
}

fn largest_gap(a: &[Vec3], b: &[Vec3]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).norm())
        .fold(0.0, f64::max)
}

#[test]
fn snapshots_reconstruct_the_models_surface_and_reset_returns_to_rest() {
    for backend in ["modal", "condensed"] {
        let text = format!("{BLOCK}\n[backend]\nkind = \"{backend}\"\n");
        let scene = Scene::parse(&text, "test block", std::path::Path::new(".")).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let mut built = build(scene, cache.path(), &mut |_| {}).unwrap();
        let (stream, mut visual) = SceneVisual::new("test block", &built.mesh.mesh, &built.model);
        assert_eq!(stream.mode_count().is_some(), backend == "modal");
        let nodes = StreamScene::from_mesh_surface("", &built.mesh.mesh).mesh_nodes;
        let rest = stream.rest_positions.clone();
        let feed = visual.column_feed();
        let probe = press(&mut built.model);
        let mut snapshot = visual.at_rest(probe);
        let (mut writer, mut reader) = snapshot_slot(snapshot.clone());
        let mut encoder = FrameEncoder::new(Some(feed));
        let init = match stream.scene_init() {
            wire::ServerMessage::SceneInit(init) => init,
            _ => unreachable!(),
        };
        let mut columns = wire::ColumnCache::default();
        let force = Vec3::new(0.0, 0.0, 1.0);
        // Hold the press while the columns of the contacted nodes complete, streaming
        // every step as a client would see it.
        let mut last = None;
        for i in 21..60 {
            built.model.step(i as f64 * 5e-3, 5e-3, probe);
            visual.fill(
                &mut built.model,
                i as f64 * 5e-3,
                probe,
                force,
                &mut snapshot,
            );
            stream.check(&snapshot).unwrap();
            writer.publish(&snapshot);
            let published = encoder.encode_next(&stream, &mut reader).unwrap();
            for bytes in published.columns.iter().map(|(_, b)| b) {
                match wire::decode_server(bytes).unwrap() {
                    wire::ServerMessage::ResidualColumn(c) => columns.insert(c),
                    other => panic!("a column message, got {other:?}"),
                }
            }
            let wire::ServerMessage::Frame(frame) = wire::decode_server(&published.frame).unwrap()
            else {
                panic!("a frame")
            };
            let got = wire::reconstruct_positions(&init, &columns, &frame).unwrap();
            let truth = model_positions(&mut built.model, &nodes);
            let gap = truth
                .iter()
                .zip(&got)
                .map(|(t, g)| (t - Vec3::new(g[0] as f64, g[1] as f64, g[2] as f64)).norm())
                .fold(0.0, f64::max);
            assert!(gap <= 1e-5, "{backend}, step {i}: client off by {gap} m");
            // The stream's own f64 reference is the model's surface.
            let reference = largest_gap(&stream.positions(&snapshot), &truth);
            assert!(
                reference < 1e-12,
                "{backend}: reference off by {reference} m"
            );
            last = Some((frame, truth));
        }
        assert!(snapshot.in_contact && snapshot.force == force);
        let (frame, truth) = last.unwrap();
        let dent = largest_gap(&truth, &rest);
        assert!(
            dent > 1e-3,
            "{backend}: the probe dents the surface ({dent} m)"
        );
        let wire::Deformation::Superposed {
            loads, corrections, ..
        } = &frame.deformation
        else {
            panic!("{backend}: a superposed frame")
        };
        // Once the contacted nodes' columns are complete, the loads carry the field.
        assert!(!loads.is_empty(), "{backend}: loads");
        assert!(
            corrections.is_empty(),
            "{backend}: {} corrections once the columns are complete",
            corrections.len()
        );

        built.model.reset();
        assert!(built.model.contact().is_none());
        visual.fill(&mut built.model, 0.4, probe, Vec3::zeros(), &mut snapshot);
        assert_eq!(stream.positions(&snapshot), rest, "{backend}: at rest");
    }
}
