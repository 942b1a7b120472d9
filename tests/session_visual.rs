//! The visual stream's view of a running scene model: snapshots reconstruct the
//! model's own displaced surface (modal coordinates plus visible residual corrections,
//! or positions), and a reset returns it to rest.

use palpa::model::{ModelStep, TissueModel};
use palpa::scene::build;
use palpa::scene::Scene;
use palpa::session::{SceneModel, SceneVisual, VISIBLE_DISPLACEMENT};
use palpa::stream::{SnapshotDeformation, StreamScene, VisualSnapshot};
use palpa::Vec3;

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
    match model {
        SceneModel::Modal(s) => s.model_mut().displacements(nodes, &mut d),
        SceneModel::Condensed(s) => s.model_mut().displacements(nodes, &mut d),
    }
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
        let probe = press(&mut built.model);
        let mut snapshot = visual.at_rest(probe);
        let force = Vec3::new(0.0, 0.0, 1.0);
        visual.fill(&mut built.model, 0.1, probe, force, &mut snapshot);
        stream.check(&snapshot).unwrap();
        assert!(snapshot.in_contact && snapshot.force == force);

        let truth = model_positions(&mut built.model, &nodes);
        let dent = largest_gap(&truth, &rest);
        assert!(
            dent > 1e-3,
            "{backend}: the probe dents the surface ({dent} m)"
        );
        let streamed = stream.positions(&snapshot);
        let gap = largest_gap(&streamed, &truth);
        if let SnapshotDeformation::Modal {
            coordinates,
            corrections,
        } = &snapshot.deformation
        {
            // Corrections below VISIBLE_DISPLACEMENT are dropped, nothing else.
            assert!(gap <= VISIBLE_DISPLACEMENT, "{backend}: {gap} m");
            assert!(!corrections.is_empty(), "residual flexibility shows");
            let modal_only = SnapshotDeformation::Modal {
                coordinates: coordinates.clone(),
                corrections: Vec::new(),
            };
            let without = VisualSnapshot {
                deformation: modal_only,
                ..snapshot.clone()
            };
            let gap_without = largest_gap(&stream.positions(&without), &truth);
            assert!(gap_without > 10.0 * VISIBLE_DISPLACEMENT, "{gap_without} m");
        } else {
            assert_eq!(gap, 0.0, "{backend}: positions are streamed exactly");
        }

        built.model.reset();
        assert!(built.model.contact().is_none());
        visual.fill(&mut built.model, 0.2, probe, Vec3::zeros(), &mut snapshot);
        assert_eq!(stream.positions(&snapshot), rest, "{backend}: at rest");
    }
}
