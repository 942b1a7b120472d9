//! A scene's model as viewers see it: the streamed surface (the tetrahedral mesh's
//! boundary, with the modal basis restricted to it for modal scenes) and the visual
//! snapshot of the model after a step — modal coordinates plus the residual corrections
//! that are large enough to see (modal backend), or every surface vertex's position
//! (condensed backend).

use super::model::{BuiltScene, SceneModel};
use crate::model::TissueModel;
use crate::stream::{SnapshotDeformation, StreamScene, VisualSnapshot};
use crate::Vec3;

/// Residual corrections smaller than this are not streamed (m): a tenth of a pixel when
/// a 10 cm scene fills 1000 pixels.
pub const VISIBLE_DISPLACEMENT: f64 = 1e-5;

/// Turns the scene's model into visual snapshots for the stream; owns its scratch space,
/// so filling a snapshot allocates only while the snapshot's vectors first grow.
pub struct SceneVisual {
    /// Mesh node of every streamed surface vertex.
    surface_nodes: Vec<usize>,
    /// Modes per frame (modal scenes).
    mode_count: Option<usize>,
    /// Rest position of every surface vertex (m).
    rest: Vec<Vec3>,
    /// Scratch per surface vertex (m): its displacement (condensed) or the residual part
    /// of it that the modes do not carry (modal).
    displacement: Vec<Vec3>,
}

impl SceneVisual {
    /// The streamed scene of `built` (named after the scene, with the scene's model and
    /// haptic rates) and the visual that fills its snapshots.
    pub fn new(built: &BuiltScene) -> (StreamScene, Self) {
        let name = built
            .scene
            .name
            .clone()
            .unwrap_or_else(|| built.scene.source.clone());
        let surface = StreamScene::from_mesh_surface(&name, &built.mesh.mesh);
        let mut scene = surface.scene;
        scene.model_rate_hz = built.scene.rates.model;
        scene.haptic_rate_hz = built.scene.rates.haptic;
        let nodes = surface.mesh_nodes;
        if let SceneModel::Modal(sim) = &built.model {
            let runtime = sim.model();
            let k = runtime.n_modes();
            scene = scene.with_modal_basis(k, |v, j| {
                let n = nodes[v];
                Vec3::new(
                    runtime.mode_row(n, 0)[j],
                    runtime.mode_row(n, 1)[j],
                    runtime.mode_row(n, 2)[j],
                )
            });
        }
        let visual = Self {
            mode_count: scene.mode_count(),
            rest: scene.rest_positions.clone(),
            displacement: vec![Vec3::zeros(); nodes.len()],
            surface_nodes: nodes,
        };
        (scene, visual)
    }

    /// The tissue at rest with the probe at `probe` (m): the stream's first frame.
    pub fn at_rest(&self, probe: Vec3) -> VisualSnapshot {
        VisualSnapshot::at_rest(probe, self.mode_count, &self.rest)
    }

    /// Writes the state of `model` after its last step into `snapshot`: scene time `t`
    /// (s), probe tip `probe` (m), force on the user's hand `force` (N), the proxy and
    /// contact from the model, and the deformed surface.
    pub fn fill(
        &mut self,
        model: &mut SceneModel,
        t: f64,
        probe: Vec3,
        force: Vec3,
        snapshot: &mut VisualSnapshot,
    ) {
        snapshot.time = t;
        snapshot.probe = probe;
        snapshot.proxy = model.proxy_position().unwrap_or(probe);
        snapshot.force = force;
        snapshot.in_contact = model.contact().is_some();
        match model {
            SceneModel::Modal(sim) => {
                let k = self.mode_count.unwrap_or(0);
                if !matches!(snapshot.deformation, SnapshotDeformation::Modal { .. }) {
                    snapshot.deformation = SnapshotDeformation::Modal {
                        coordinates: Vec::new(),
                        corrections: Vec::new(),
                    };
                }
                let SnapshotDeformation::Modal {
                    coordinates,
                    corrections,
                } = &mut snapshot.deformation
                else {
                    unreachable!("set to modal above")
                };
                coordinates.resize(k, 0.0);
                sim.model().visual_coordinates(coordinates);
                // What the modes do not carry is the residual field near the contact.
                sim.model_mut()
                    .residual_displacements(&self.surface_nodes, &mut self.displacement);
                corrections.clear();
                corrections.extend(
                    (0..)
                        .zip(&self.displacement)
                        .filter(|(_, r)| r.norm() > VISIBLE_DISPLACEMENT)
                        .map(|(v, r)| (v, *r)),
                );
            }
            SceneModel::Condensed(sim) => {
                sim.model_mut()
                    .displacements(&self.surface_nodes, &mut self.displacement);
                if !matches!(snapshot.deformation, SnapshotDeformation::Positions(_)) {
                    snapshot.deformation = SnapshotDeformation::Positions(Vec::new());
                }
                let SnapshotDeformation::Positions(positions) = &mut snapshot.deformation else {
                    unreachable!("set to positions above")
                };
                positions.clear();
                positions.extend(self.rest.iter().zip(&self.displacement).map(|(r, d)| r + d));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelStep;
    use crate::scene::Scene;

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
            let mut built = super::super::model::build(scene, cache.path(), &mut |_| {}).unwrap();
            let (stream, mut visual) = SceneVisual::new(&built);
            assert_eq!(stream.mode_count().is_some(), backend == "modal");
            let nodes = visual.surface_nodes.clone();
            let probe = press(&mut built.model);
            let mut snapshot = visual.at_rest(probe);
            let force = Vec3::new(0.0, 0.0, 1.0);
            visual.fill(&mut built.model, 0.1, probe, force, &mut snapshot);
            stream.check(&snapshot).unwrap();
            assert!(snapshot.in_contact && snapshot.force == force);

            let truth = model_positions(&mut built.model, &nodes);
            let dent = largest_gap(&truth, &visual.rest);
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
            assert_eq!(
                stream.positions(&snapshot),
                visual.rest,
                "{backend}: at rest"
            );
        }
    }
}
