//! What the visual stream asks of each backend ([`FrameModel`]): the one place that
//! knows how each backend's displaced surface is carried in frames.

use crate::condensed::CondensedModel;
use crate::fem::ComplianceColumns;
use crate::modal::ModalRuntime;
use crate::nonlinear::NonlinearTissue;
use crate::stream::FrameModel;
use crate::{Mat3, Vec3};

use super::backend::dispatch;
use super::{ContactPipeline, SceneModel};

/// The contact of the first probe and its proxy, the same for every backend.
macro_rules! probe_of_pipeline {
    () => {
        fn proxy(&self) -> Option<Vec3> {
            self.proxy_position()
        }

        fn contact(&self) -> Option<(f64, Vec3)> {
            ContactPipeline::contact(self).map(|c| (c.depth, c.normal))
        }
    };
}

/// Whether every load's K⁻¹ column is complete.
fn complete(columns: &ComplianceColumns, loads: &[(u32, Vec3)]) -> bool {
    loads.iter().all(|&(n, _)| columns.is_complete(n as usize))
}

/// Modal frames carry the modal coordinates; the field is the residual flexibility's,
/// which the loads' columns give once complete.
impl FrameModel for ContactPipeline<ModalRuntime> {
    probe_of_pipeline!();

    fn mode_count(&self) -> usize {
        self.model().n_modes()
    }

    fn mode_shape(&self, node: usize, mode: usize) -> Vec3 {
        let m = self.model();
        Vec3::new(
            m.mode_row(node, 0)[mode],
            m.mode_row(node, 1)[mode],
            m.mode_row(node, 2)[mode],
        )
    }

    fn static_modes(&self, node: usize) -> Vec<Vec3> {
        let m = self.model();
        let inverse = m.inverse_eigenvalues().iter().enumerate();
        inverse
            .map(|(j, il)| self.mode_shape(node, j) * *il)
            .collect()
    }

    fn coordinates(&self, out: &mut [f64]) {
        self.model().visual_coordinates(out);
    }

    fn field(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        self.model_mut().residual_displacements(nodes, out);
    }

    fn loads(&self) -> &[(usize, Vec3)] {
        self.model().last_loads()
    }

    fn field_from_loads(&self, loads: &[(u32, Vec3)]) -> bool {
        self.model()
            .columns_ref()
            .is_none_or(|c| complete(c, loads))
    }

    fn complete_column(&self, node: usize, surface: &[usize]) -> Option<Vec<(u32, Mat3)>> {
        self.model().columns_ref()?.complete_column(node, surface)
    }
}

/// Condensed frames carry the whole static response, which the loads' columns give.
impl FrameModel for ContactPipeline<CondensedModel> {
    probe_of_pipeline!();

    fn field(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        crate::tissue::TissueModel::displacements(self.model_mut(), nodes, out);
    }

    fn loads(&self) -> &[(usize, Vec3)] {
        self.model().last_loads()
    }

    fn field_from_loads(&self, loads: &[(u32, Vec3)]) -> bool {
        complete(self.model().columns_ref(), loads)
    }

    fn complete_column(&self, node: usize, surface: &[usize]) -> Option<Vec<(u32, Mat3)>> {
        self.model().columns_ref().complete_column(node, surface)
    }
}

/// A large-strain field is no superposition of columns: frames carry it whole.
impl FrameModel for ContactPipeline<NonlinearTissue> {
    probe_of_pipeline!();

    fn field(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        crate::tissue::TissueModel::displacements(self.model_mut(), nodes, out);
    }

    fn loads(&self) -> &[(usize, Vec3)] {
        self.model().last_loads()
    }
}

impl FrameModel for SceneModel {
    fn mode_count(&self) -> usize {
        dispatch!(self, s => s.mode_count())
    }
    fn mode_shape(&self, node: usize, mode: usize) -> Vec3 {
        dispatch!(self, s => s.mode_shape(node, mode))
    }
    fn static_modes(&self, node: usize) -> Vec<Vec3> {
        dispatch!(self, s => s.static_modes(node))
    }
    fn proxy(&self) -> Option<Vec3> {
        dispatch!(self, s => FrameModel::proxy(&**s))
    }
    fn contact(&self) -> Option<(f64, Vec3)> {
        dispatch!(self, s => FrameModel::contact(&**s))
    }
    fn coordinates(&self, out: &mut [f64]) {
        dispatch!(self, s => s.coordinates(out))
    }
    fn field(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        dispatch!(self, s => s.field(nodes, out))
    }
    fn loads(&self) -> &[(usize, Vec3)] {
        dispatch!(self, s => FrameModel::loads(&**s))
    }
    fn field_from_loads(&self, loads: &[(u32, Vec3)]) -> bool {
        dispatch!(self, s => s.field_from_loads(loads))
    }
    fn complete_column(&self, node: usize, surface: &[usize]) -> Option<Vec<(u32, Mat3)>> {
        dispatch!(self, s => s.complete_column(node, surface))
    }
}
