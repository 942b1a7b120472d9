//! A scene's model as viewers see it: the streamed surface (the tetrahedral mesh's
//! boundary, with the modal basis restricted to it for modal scenes) and the visual
//! snapshot of the model after a step — modal coordinates (modal backend), the last
//! step's nodal loads, and the displacement beyond the modes at every surface vertex
//! (the residual field of the loads, or the whole condensed response). The loads'
//! K⁻¹ columns over the surface go to the stream once each, so frames can carry the
//! loads instead of the field.

use super::columns::{column_link, ColumnExporter, ColumnFeed, SurfaceColumn};
use super::frame_model::FrameModel;
use super::scene::StreamScene;
use super::snapshot::{SnapshotDeformation, VisualSnapshot};
use crate::mesh::TetMesh;
use crate::Vec3;

/// Turns the scene's model into visual snapshots for the stream; owns its scratch space,
/// so filling a snapshot allocates only while the snapshot's vectors first grow (and
/// when a loaded node's column is exported).
pub struct SceneVisual {
    /// Mesh node of every streamed surface vertex.
    surface_nodes: Vec<usize>,
    /// Modes per frame (0 without a modal basis).
    mode_count: usize,
    /// Where loaded nodes' columns go, once [`Self::column_feed`] was asked for.
    exporter: Option<ColumnExporter>,
    /// Whether the stream holds each mesh node's column (exported, not forgotten).
    exported: Vec<bool>,
}

impl SceneVisual {
    /// The streamed scene called `name` of `model` on `mesh` (its boundary surface,
    /// with the modal basis for modal models; the caller sets the rates), and the visual
    /// that fills its snapshots.
    pub fn new(name: &str, mesh: &TetMesh, model: &impl FrameModel) -> (StreamScene, Self) {
        let surface = StreamScene::from_mesh_surface(name, mesh);
        let mut scene = surface.scene;
        let nodes = surface.mesh_nodes;
        let k = model.mode_count();
        if k > 0 {
            scene = scene.with_modal_basis(k, |v, j| model.mode_shape(nodes[v], j));
        }
        let visual = Self {
            mode_count: scene.mode_count().unwrap_or(0),
            surface_nodes: nodes,
            exporter: None,
            exported: vec![false; mesh.nodes.len()],
        };
        (scene, visual)
    }

    /// The stream's end of the column link: from now on every loaded node's K⁻¹ column
    /// over the surface is exported once it is complete (again after the stream
    /// forgot it).
    pub fn column_feed(&mut self) -> ColumnFeed {
        let (exporter, feed) = column_link();
        self.exporter = Some(exporter);
        self.exported.fill(false);
        feed
    }

    /// The tissue at rest with the probe at `probe` (m): the stream's first frame.
    pub fn at_rest(&self, probe: Vec3) -> VisualSnapshot {
        VisualSnapshot::at_rest(probe, self.mode_count, self.surface_nodes.len())
    }

    /// Writes the state of `model` after its last step into `snapshot`: scene time `t`
    /// (s), probe tip `probe` (m), force on the user's hand `force` (N), the proxy and
    /// contact from the model, and the deformed surface. Exports the columns of loaded
    /// nodes the stream lacks before the snapshot names them.
    pub fn fill(
        &mut self,
        model: &mut impl FrameModel,
        t: f64,
        probe: Vec3,
        force: Vec3,
        snapshot: &mut VisualSnapshot,
    ) {
        snapshot.time = t;
        snapshot.probe = probe;
        snapshot.proxy = model.proxy().unwrap_or(probe);
        snapshot.force = force;
        let contact = model.contact();
        snapshot.in_contact = contact.is_some();
        snapshot.depth = contact.map_or(0.0, |c| c.0);
        snapshot.normal = contact.map_or(Vec3::zeros(), |c| c.1);
        if !matches!(snapshot.deformation, SnapshotDeformation::Superposed { .. }) {
            snapshot.deformation = SnapshotDeformation::Superposed {
                coordinates: Vec::new(),
                loads: Vec::new(),
                field: Vec::new(),
                field_from_loads: false,
            };
        }
        let SnapshotDeformation::Superposed {
            coordinates,
            loads,
            field,
            field_from_loads,
        } = &mut snapshot.deformation
        else {
            unreachable!("set to superposed above")
        };
        coordinates.resize(self.mode_count, 0.0);
        field.resize(self.surface_nodes.len(), Vec3::zeros());
        model.coordinates(coordinates);
        model.field(&self.surface_nodes, field);
        merge_loads(model.loads(), loads);
        // A load whose columns are still being completed contributes to the field at
        // the cached nodes only (and its modal part stays in q): not its K⁻¹ response.
        *field_from_loads = model.field_from_loads(loads);
        self.export(model, loads);
    }

    /// Exports the complete columns of `loads`' nodes that the stream does not hold,
    /// with their static modal response.
    fn export(&mut self, model: &impl FrameModel, loads: &[(u32, Vec3)]) {
        let Some(exporter) = &self.exporter else {
            return;
        };
        for node in exporter.forgotten() {
            if let Some(held) = self.exported.get_mut(node as usize) {
                *held = false;
            }
        }
        for &(node, _) in loads {
            let n = node as usize;
            if self.exported[n] {
                continue;
            }
            if let Some(entries) = model.complete_column(n, &self.surface_nodes) {
                let column = SurfaceColumn {
                    node,
                    entries,
                    static_modes: model.static_modes(n),
                };
                if !exporter.export(column) {
                    // The stream is gone: stop building columns for it.
                    self.exporter = None;
                    return;
                }
                self.exported[n] = true;
            }
        }
    }
}

/// The nodal loads `from` (node, N) summed per node into `out`, in order of first
/// appearance.
fn merge_loads(from: &[(usize, Vec3)], out: &mut Vec<(u32, Vec3)>) {
    out.clear();
    for &(node, f) in from {
        let node = node as u32;
        match out.iter_mut().find(|(n, _)| *n == node) {
            Some((_, sum)) => *sum += f,
            None => out.push((node, f)),
        }
    }
}
