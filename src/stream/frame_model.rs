//! What a visual frame needs from the tissue model, asked through one trait so the
//! stream knows no backend.

use crate::{Mat3, Vec3};

/// The tissue model as the visual stream sees it after a step.
pub trait FrameModel {
    /// Modes the frames carry (0: the model has no modal basis).
    fn mode_count(&self) -> usize {
        0
    }

    /// Displacement of mesh node `node` per unit coordinate of mode `mode` (m).
    fn mode_shape(&self, _node: usize, _mode: usize) -> Vec3 {
        Vec3::zeros()
    }

    /// Per mode j, φ_j(node) / λ_j: the static modal coordinates per unit force at mesh
    /// node `node`; empty without a modal basis.
    fn static_modes(&self, _node: usize) -> Vec<Vec3> {
        Vec::new()
    }

    /// The proxy (god-object) after the last step (m), once placed.
    fn proxy(&self) -> Option<Vec3>;

    /// The first probe's contact at the last step: its indentation (m) and the outward
    /// normal.
    fn contact(&self) -> Option<(f64, Vec3)>;

    /// The modal coordinates of the displaced surface, as many as [`Self::mode_count`].
    fn coordinates(&self, _out: &mut [f64]) {}

    /// The displacement the modes do not carry (m) at mesh nodes `nodes`, into `out`.
    fn field(&mut self, nodes: &[usize], out: &mut [Vec3]);

    /// The last step's nodal loads (mesh node, N), a node possibly more than once.
    fn loads(&self) -> &[(usize, Vec3)];

    /// Whether [`Self::field`] is `loads` (mesh node, N) times their complete K⁻¹
    /// columns, so a frame may carry the loads instead of the field.
    fn field_from_loads(&self, _loads: &[(u32, Vec3)]) -> bool {
        false
    }

    /// K⁻¹[u, node] (m/N) for the entries `(i, u)` of `surface` whose block is not zero,
    /// once `node`'s column is complete.
    fn complete_column(&self, _node: usize, _surface: &[usize]) -> Option<Vec<(u32, Mat3)>> {
        None
    }
}
