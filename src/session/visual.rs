//! A scene's model as viewers see it: the streamed surface (the tetrahedral mesh's
//! boundary, with the modal basis restricted to it for modal scenes) and the visual
//! snapshot of the model after a step — modal coordinates plus the residual corrections
//! that are large enough to see (modal backend), or every surface vertex's position
//! (condensed backend).

use super::SceneModel;
use crate::mesh::TetMesh;
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
    /// The streamed scene called `name` of `model` on `mesh` (its boundary surface,
    /// with the modal basis for modal models; the caller sets the rates), and the visual
    /// that fills its snapshots.
    pub fn new(name: &str, mesh: &TetMesh, model: &SceneModel) -> (StreamScene, Self) {
        let surface = StreamScene::from_mesh_surface(name, mesh);
        let mut scene = surface.scene;
        let nodes = surface.mesh_nodes;
        if let SceneModel::Modal(sim) = model {
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
        let contact = model.contact();
        snapshot.in_contact = contact.is_some();
        snapshot.depth = contact.map_or(0.0, |c| c.depth);
        snapshot.normal = contact.map_or(Vec3::zeros(), |c| c.normal);
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
