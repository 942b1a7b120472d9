//! The interface every tissue backend (modal, condensed, nonlinear) implements: what
//! the model thread needs from a tissue model each 5 ms step.

use crate::fem::Support;
use crate::{Mat3, Vec3};

use super::constraint::PointConstraint;
use super::error::ModelError;
use super::geometry::TissueGeometry;
use super::load::PointLoad;

/// A tissue model the model thread can drive: advance under point constraints and
/// external point loads, report the constraint forces, the local static compliance,
/// and the displaced surface.
pub trait TissueModel: Send {
    /// The rest shape and the surface contact is computed against.
    fn geometry(&self) -> &TissueGeometry;

    /// Rest positions of all mesh nodes (m).
    fn rest_positions(&self) -> &[Vec3] {
        &self.geometry().rest
    }

    /// Outward surface triangles (mesh node indices) that contact is computed against.
    fn surface_triangles(&self) -> &[[usize; 3]] {
        &self.geometry().triangles
    }

    /// Sorted mesh nodes on the surface.
    fn surface_nodes(&self) -> &[usize] {
        &self.geometry().surface_nodes
    }

    /// Advances the tissue by `dt` (s) under the held point loads ([`Self::set_loads`])
    /// with `constraints` enforced at the end of the step, and writes into `forces[i]` the force constraint i applies to the tissue
    /// (N; zero if released or unenforceable). `forces` must be at least as long as
    /// `constraints`.
    fn advance(
        &mut self,
        dt: f64,
        constraints: &[PointConstraint],
        forces: &mut [Vec3],
    ) -> Result<(), ModelError>;

    /// Holds the external point loads `loads` on the tissue from the next
    /// [`Self::advance`] on, until they are set again (an empty slice removes them;
    /// [`Self::reset`] clears them). Each step solves its constraints with the loads
    /// acting (the constraint forces are those that hold the targets under the loads),
    /// and the displaced field includes them. Checks finite forces and weights, nodes in
    /// the mesh and at most the capacity the backend was built with; on an error the
    /// held loads stay as they were. Allocation-free.
    fn set_loads(&mut self, loads: &[PointLoad]) -> Result<(), ModelError>;

    /// Most constraint rows one step takes.
    fn constraint_capacity(&self) -> usize;

    /// Static compliance between two material points (triangle points, nodes or
    /// contact patches): the 3×3 block dx_a = C f_b of how point `a` moves under a
    /// force on point `b`, each through its support's weights (m/N). Zero for a point
    /// on fixed nodes.
    fn compliance_between(&mut self, a: &Support, b: &Support) -> Result<Mat3, ModelError>;

    /// Static compliance at one material point ([`Self::compliance_between`] with
    /// itself, m/N).
    fn point_compliance(&mut self, support: &Support) -> Result<Mat3, ModelError> {
        self.compliance_between(support, support)
    }

    /// An upper bound on the current displacement magnitude of any surface node (m),
    /// cheap to evaluate: contact inflates the rest-shape BVH by it, so only the
    /// triangles near the probe need their current positions each step.
    fn displacement_bound(&self) -> f64;

    /// An upper bound (m) on the current displacement of the surface nodes resting at
    /// least `distance` (m) from `point`, at most [`Self::displacement_bound`]: contact
    /// refreshes only the nodes a probe's loads can bring within its reach. Default:
    /// the bound over every node.
    fn displacement_bound_beyond(&self, _point: &Vec3, _distance: f64) -> f64 {
        self.displacement_bound()
    }

    /// Current displacements (m) of mesh nodes `nodes` into `out` (same length); the
    /// displaced position is rest + displacement.
    fn displacements(&mut self, nodes: &[usize], out: &mut [Vec3]);

    /// Whether [`Self::anticipate`] does anything (a backend completing compliance
    /// columns in the background): the caller skips finding the nodes otherwise.
    /// Default: no.
    fn anticipates(&self) -> bool {
        false
    }

    /// Mesh nodes near a contact, which it may load within the next steps: a backend
    /// that completes compliance columns in the background may prepare theirs while its
    /// worker is idle. Changes nothing the model computes. Default: nothing.
    fn anticipate(&mut self, _nodes: &[usize]) {}

    /// Puts the tissue back at rest: zero displacement and velocity, no loads (neither
    /// the last step's constraint forces nor the held point loads; a viewer's "reset
    /// tissue").
    fn reset(&mut self);
}
