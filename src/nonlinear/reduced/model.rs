//! The reduced model's state: the mesh and its small-strain stiffness K (factorised),
//! the K-orthonormal basis U (and KU), the active terms and what the forces are summed
//! over.

use std::sync::Arc;

use faer::sparse::SparseColMat;
use faer::Par;

use crate::fem::Factor;
use crate::nonlinear::correction::Corrector;
use crate::nonlinear::quadrature::{Active, Quadrature};
use crate::nonlinear::{Hyperelastic, NonlinearError, NonlinearStatics};
use crate::Vec3;

/// A hyperelastic mesh reduced to a basis of static shapes (`reduced/mod.rs`).
pub struct ReducedStatics {
    pub(super) statics: Arc<NonlinearStatics>,
    /// K at rest (prescribed DOFs as identity rows), and factorised.
    pub(super) k: Arc<SparseColMat<usize, f64>>,
    pub(super) factor: Arc<Factor>,
    /// Each element's small-strain law.
    pub(super) linear: Arc<[Hyperelastic]>,
    /// Most shapes the basis holds.
    pub(super) capacity: usize,
    /// Shapes held.
    pub(super) shapes: usize,
    /// U, DOF-major: the shapes' values at DOF d are `basis[d·capacity ..][..shapes]` (m).
    pub(super) basis: Vec<f64>,
    /// KU in the same layout (N).
    pub(super) stiffness: Vec<f64>,
    /// Terms solved with their large-strain law.
    pub(super) active: Active,
    /// What the reduced forces are summed over: the active terms with weight 1, or a
    /// cubature's, with or without its offset.
    pub(super) quadrature: Quadrature,
    /// Counts the changes of the basis and of the quadrature: the reduced potential
    /// is the same function while it stays.
    pub(super) revision: u64,
    /// Counts the restarts of the basis: while it stays, shapes are only appended.
    pub(super) restarts: u64,
}

impl std::fmt::Debug for ReducedStatics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReducedStatics")
            .field("shapes", &self.shapes)
            .field("capacity", &self.capacity)
            .field("active", &self.active.len())
            .field("quadrature", &self.quadrature.terms())
            .finish()
    }
}

impl ReducedStatics {
    /// The reduced model of `statics` with room for `capacity` shapes; factorises K at
    /// rest. Starts with no shapes and no active term.
    pub fn new(statics: Arc<NonlinearStatics>, capacity: usize) -> Result<Self, NonlinearError> {
        let n = statics.prescribed.len();
        let k = statics.tangent(&vec![Vec3::zeros(); n / 3]);
        let factor = Factor::new(
            k.as_ref(),
            None,
            Par::Seq,
            "reduced model: stiffness at rest",
        )?;
        let linear = statics.laws.iter().map(Hyperelastic::linearised).collect();
        let parts = Corrector {
            statics,
            k: Arc::new(k),
            factor: Arc::new(factor),
            linear,
        };
        Ok(Self::from_parts(parts, capacity))
    }

    /// A model over `parts` (mesh, K, its factor, the small-strain laws) with room for
    /// `capacity` shapes, no shape and no active term yet.
    pub(super) fn from_parts(parts: Corrector, capacity: usize) -> Self {
        let n = parts.statics.prescribed.len();
        Self {
            statics: parts.statics,
            k: parts.k,
            factor: parts.factor,
            linear: parts.linear,
            capacity,
            shapes: 0,
            basis: vec![0.0; n * capacity],
            stiffness: vec![0.0; n * capacity],
            active: Active::default(),
            quadrature: Quadrature::default(),
            revision: 0,
            restarts: 0,
        }
    }

    /// What a correction reads of the model, to compute one on another thread.
    pub(in crate::nonlinear) fn corrector(&self) -> Corrector {
        Corrector {
            statics: Arc::clone(&self.statics),
            k: Arc::clone(&self.k),
            factor: Arc::clone(&self.factor),
            linear: Arc::clone(&self.linear),
        }
    }

    /// A model over the same mesh, K, factor and laws with no shapes yet, nothing
    /// factorised again: the correction thread's copy of the basis.
    pub(in crate::nonlinear) fn mirror(&self) -> Self {
        Self::from_parts(self.corrector(), self.capacity)
    }

    /// Changes so far of the basis and the quadrature: while it stays the same, so is
    /// the reduced potential as a function of the coordinates.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The basis's restarts so far: while they stay, shapes are only appended.
    pub(in crate::nonlinear) fn restarts(&self) -> u64 {
        self.restarts
    }

    /// The active terms: those the last correction found past
    /// [`crate::nonlinear::ACTIVE_NONLINEARITY`].
    pub fn active(&self) -> &Active {
        &self.active
    }

    /// Terms solved with their large-strain law (elements and nodal volumes).
    pub fn active_elements(&self) -> usize {
        self.active.len()
    }

    /// Terms the reduced forces are summed over now: the active ones, or a cubature's.
    pub fn quadrature_elements(&self) -> usize {
        self.quadrature.terms()
    }

    /// Whether the reduced forces are summed over a cubature with its offset.
    pub(in crate::nonlinear) fn summed_over_cubature(&self) -> bool {
        self.quadrature.offset.is_some()
    }

    /// Shapes in the basis.
    pub fn shapes(&self) -> usize {
        self.shapes
    }

    /// Most shapes the basis holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Nodes of the mesh.
    pub fn nodes(&self) -> usize {
        self.statics.prescribed.len() / 3
    }

    /// The mesh and its laws.
    pub(in crate::nonlinear) fn statics(&self) -> &NonlinearStatics {
        &self.statics
    }
}
