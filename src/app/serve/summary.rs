//! What a started `serve` tells the user: the model, the devices, the viewer.

use crate::mesh::TetMesh;
use crate::pipeline::SceneModel;
use crate::scene::PrecomputeOutcome;
use crate::stream::StreamScene;

use super::devices::DeviceSummary;

/// The served model, for the user.
#[derive(Clone, Debug)]
pub struct ModelSummary {
    /// Mesh nodes.
    pub nodes: usize,
    /// Tetrahedra.
    pub tets: usize,
    /// Vertices of the streamed surface.
    pub surface_vertices: usize,
    /// Modes the frames carry (modal scenes).
    pub modes: Option<usize>,
    /// The backend's name.
    pub backend: &'static str,
}

/// What started, for the user.
#[derive(Clone, Debug)]
pub struct Started {
    /// The precompute: loaded from the cache or computed.
    pub precompute: PrecomputeOutcome,
    /// The model.
    pub model: ModelSummary,
    /// Every device, in order.
    pub devices: Vec<DeviceSummary>,
    /// The viewer's address on this machine, with the control token.
    pub viewer_url: String,
    /// Its addresses other machines can open (the interfaces' addresses when serving
    /// on 0.0.0.0 or ::).
    pub remote_viewer_urls: Vec<String>,
}

impl std::fmt::Display for Started {
    /// The lines `palpa serve` prints once it runs: the model, each device's workspace
    /// and force limits, and the viewer's address (the one place the token appears).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "model: {}", self.precompute)?;
        let several = self.devices.len() > 1;
        if several {
            writeln!(
                f,
                "{} devices palpate one tissue: their contacts are solved together (the \
                 viewer draws device 1's probe)",
                self.devices.len()
            )?;
        }
        let m = &self.model;
        let kind = m
            .modes
            .map_or(format!("{} backend", m.backend), |k| format!("{k} modes"));
        let (nodes, tets, vertices) = (m.nodes, m.tets, m.surface_vertices);
        writeln!(
            f,
            "model: {nodes} nodes, {tets} tetrahedra, {vertices} surface vertices, {kind}"
        )?;
        for (i, d) in self.devices.iter().enumerate() {
            match several {
                true => writeln!(f, "device {}: {}", i + 1, d.description)?,
                false => writeln!(f, "device: {}", d.description)?,
            }
            writeln!(f, "workspace: {}", d.workspace)?;
            writeln!(f, "force: {}", d.force)?;
        }
        for url in &self.remote_viewer_urls {
            writeln!(f, "viewer from other machines: {url}")?;
        }
        writeln!(f, "viewer: {}", self.viewer_url)?;
        writeln!(
            f,
            "        (this address moves the probe; without its ?token=… it is read-only \
             and can be shared)"
        )
    }
}

/// The served model's sizes and kind.
pub(super) fn model_summary(
    mesh: &TetMesh,
    stream: &StreamScene,
    model: &SceneModel,
) -> ModelSummary {
    ModelSummary {
        nodes: mesh.nodes.len(),
        tets: mesh.tets.len(),
        surface_vertices: stream.rest_positions.len(),
        modes: stream.mode_count(),
        backend: model.backend_name(),
    }
}

/// What the served model gave up to keep the force on the hand (the large-strain
/// backend's degraded steps, counted with their reasons), for the stop summary.
pub(super) fn model_note(model: &SceneModel) -> Option<String> {
    match model {
        SceneModel::Nonlinear(s) => s.model().health().summary(),
        _ => None,
    }
}
