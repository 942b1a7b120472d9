//! The K-orthonormal basis: shapes K⁻¹f joined by Gram–Schmidt in the K inner product,
//! the displacement U q, reduced rows Uᵀc, and the basis's copy on the correction thread
//! (its mirror), kept in step by appending the shapes the model gained since.

use faer::Mat;

use super::model::ReducedStatics;
use crate::nonlinear::correction::{energy_norm, k_times};
use crate::nonlinear::{LinearConstraint, NonlinearError};
use crate::Vec3;

/// A basis shape's energy norm, relative to the forces' shape it came from, below which
/// it adds nothing new (already in the span) and is dropped: what it would add moves
/// the state by less, and normalising so small a remainder would magnify round-off
/// into the basis's K-orthonormality.
const NEW_SHAPE: f64 = 1e-6;

/// The shapes a basis's mirror lacks ([`ReducedStatics::basis_update`]).
pub(in crate::nonlinear) struct BasisUpdate {
    /// The basis's restarts when it was taken.
    restarts: u64,
    /// The first shape it carries: the mirror keeps those before it.
    from: usize,
    /// The basis's shapes then.
    shapes: usize,
    /// Shapes `from..shapes` of U (m), then of KU (N), each DOF-major.
    columns: Vec<f64>,
}

impl BasisUpdate {
    /// The basis's restarts when it was taken: a mirror's tangent is over the model's
    /// basis while they stay the same.
    pub(in crate::nonlinear) fn restarts(&self) -> u64 {
        self.restarts
    }
}

impl ReducedStatics {
    /// Adds the static shape K⁻¹`force` (N per DOF, 3·node + axis; prescribed DOFs
    /// ignored), K-orthonormalised against the basis. Returns its energy norm outside the
    /// span relative to its whole (0 when it was in the span already and is not added;
    /// 1 for a shape K-orthogonal to the basis). An empty force adds nothing. Fails when
    /// the basis is full.
    pub fn add_shape(&mut self, force: &[f64]) -> Result<f64, NonlinearError> {
        let load = self.free_loads(&[force.to_vec()])?;
        let mut solved = load.clone();
        self.factor.solve_in_place(solved.as_mut())?;
        let load: Vec<f64> = load.col(0).iter().copied().collect();
        let (whole, left) =
            self.add_solved_if(&load, solved.col(0).iter().copied().collect(), 0.0)?;
        Ok(if whole > 0.0 { left / whole } else { 0.0 })
    }

    /// Adds each constraint's shape K⁻¹c ([`ReducedStatics::add_shape`]).
    pub fn add_constraint_shapes(
        &mut self,
        constraints: &[LinearConstraint],
    ) -> Result<(), NonlinearError> {
        let n = self.statics.prescribed.len();
        for c in constraints {
            let mut force = vec![0.0; n];
            for &(d, w) in &c.coefficients {
                check_dof(d, n)?;
                force[d] += w;
            }
            self.add_shape(&force)?;
        }
        Ok(())
    }

    /// `forces` (N per DOF) as the columns of one matrix, zero at the prescribed DOFs.
    fn free_loads(&self, forces: &[Vec<f64>]) -> Result<Mat<f64>, NonlinearError> {
        let n = self.statics.prescribed.len();
        let mut loads = Mat::<f64>::zeros(n, forces.len());
        for (j, force) in forces.iter().enumerate() {
            if force.len() != n {
                return Err(NonlinearError::NodeCount {
                    what: "shape force (3 per node)",
                    given: force.len(),
                    nodes: n / 3,
                });
            }
            for d in (0..n).filter(|&d| !self.statics.prescribed[d]) {
                loads[(d, j)] = force[d];
            }
        }
        Ok(loads)
    }

    /// Adds the shape `solved` = K⁻¹ `load` (m; `load` zero at the prescribed DOFs, N),
    /// K-orthonormalised against the basis, if its part outside the span is above
    /// `least` and above [`NEW_SHAPE`] of its whole. Returns the energy norms √(fᵀK⁻¹f)
    /// of the whole shape and of its part outside the span (0 when not added by
    /// [`NEW_SHAPE`]) (m·√(N/m)).
    pub(super) fn add_solved_if(
        &mut self,
        load: &[f64],
        solved: Vec<f64>,
        least: f64,
    ) -> Result<(f64, f64), NonlinearError> {
        let n = self.statics.prescribed.len();
        let whole = energy_norm(&solved, load);
        if whole == 0.0 {
            return Ok((0.0, 0.0));
        }
        // Classical Gram–Schmidt in the K inner product, twice (the second pass removes
        // what round-off left of the first). K times what is left is taken afresh from
        // K, not updated alongside, which loses UᵀKU = I over many joins. Each pass takes
        // all r coefficients (KU)ᵀx in one sweep over the DOF-major tables, then x − Uc
        // in another.
        let mut shape = solved;
        let r = self.shapes;
        let mut c = vec![0.0; r];
        for _ in 0..2 {
            c.fill(0.0);
            for (d, &x) in shape.iter().enumerate().filter(|(_, &x)| x != 0.0) {
                let row = &self.stiffness[d * self.capacity..][..r];
                for (c, k) in c.iter_mut().zip(row) {
                    *c += x * k;
                }
            }
            for (d, x) in shape.iter_mut().enumerate() {
                let row = &self.basis[d * self.capacity..][..r];
                *x -= row.iter().zip(&c).map(|(u, c)| u * c).sum::<f64>();
            }
        }
        let load = k_times(&self.k, &shape);
        let left = energy_norm(&shape, &load);
        if left <= NEW_SHAPE * whole {
            return Ok((whole, 0.0));
        }
        if left <= least {
            return Ok((whole, left));
        }
        if self.shapes == self.capacity {
            return Err(NonlinearError::BasisFull(self.capacity));
        }
        let j = self.shapes;
        for d in 0..n {
            self.basis[d * self.capacity + j] = shape[d] / left;
            self.stiffness[d * self.capacity + j] = load[d] / left;
        }
        self.shapes += 1;
        self.revision += 1;
        // A cubature's offset covers the shapes it was taken over; beyond them it is
        // bordered by their linear stiffness until the next one.
        Ok((whole, left))
    }

    /// UᵀWU over the first `k` shapes for a diagonal W given per DOF (`weights`, e.g.
    /// the lumped mass in kg: the reduced mass in s²; row-major k × k).
    pub fn gram(&self, weights: &[f64], k: usize) -> Vec<f64> {
        let k = k.min(self.shapes);
        let mut out = vec![0.0; k * k];
        for (d, &w) in weights.iter().enumerate().filter(|(_, &w)| w != 0.0) {
            let row = &self.basis[d * self.capacity..][..k];
            for i in 0..k {
                for j in 0..k {
                    out[i * k + j] += w * row[i] * row[j];
                }
            }
        }
        out
    }

    /// The displacement u = U q of every node (m) into `out`.
    pub fn displacement(&self, q: &[f64], out: &mut [Vec3]) {
        for (v, o) in out.iter_mut().enumerate() {
            *o = self.node_displacement(v, q);
        }
    }

    /// Shape j's displacement at node `v` (m per unit coordinate).
    pub(in crate::nonlinear) fn shape_at_node(&self, j: usize, v: usize) -> Vec3 {
        Vec3::from_fn(|c, _| self.basis[(3 * v + c) * self.capacity + j])
    }

    /// The displacement of node `v` at q (m).
    pub fn node_displacement(&self, v: usize, q: &[f64]) -> Vec3 {
        Vec3::from_fn(|c, _| self.dof(3 * v + c, q))
    }

    /// U's row at DOF d over the shapes held (m per unit coordinate).
    pub(super) fn row(&self, d: usize) -> &[f64] {
        &self.basis[d * self.capacity..][..self.shapes]
    }

    /// Uᵀc of a force c given as (DOF, N) pairs, into `out` (length
    /// [`ReducedStatics::shapes`]): the reduced row of a constraint or load.
    pub fn project(&self, force: &[(usize, f64)], out: &mut [f64]) {
        let r = self.shapes;
        out[..r].fill(0.0);
        for &(d, w) in force {
            let row = &self.basis[d * self.capacity..][..r];
            for (o, u) in out.iter_mut().zip(row) {
                *o += w * u;
            }
        }
    }

    /// U's row at DOF d times q (m).
    pub(super) fn dof(&self, d: usize, q: &[f64]) -> f64 {
        let row = &self.basis[d * self.capacity..][..self.shapes];
        row.iter().zip(q).map(|(u, q)| u * q).sum()
    }

    /// max |UᵀKU − I| over the basis, with K applied afresh (not the stored KU): how far
    /// round-off has taken the basis from K-orthonormal (dimensionless).
    pub fn orthonormality_error(&self) -> f64 {
        let (r, n) = (self.shapes, self.statics.prescribed.len());
        let column =
            |j: usize| -> Vec<f64> { (0..n).map(|d| self.basis[d * self.capacity + j]).collect() };
        let ku: Vec<Vec<f64>> = (0..r).map(|j| k_times(&self.k, &column(j))).collect();
        let mut worst: f64 = 0.0;
        for i in 0..r {
            let ui = column(i);
            for (j, kuj) in ku.iter().enumerate() {
                let v: f64 = ui.iter().zip(kuj).map(|(a, b)| a * b).sum();
                worst = worst.max((v - if i == j { 1.0 } else { 0.0 }).abs());
            }
        }
        worst
    }

    /// What a mirror holding this basis's first `held.1` shapes as of its `held.0`-th
    /// restart (`None`: nothing) lacks of it now: the shapes appended since, or all of
    /// them after a restart.
    pub(in crate::nonlinear) fn basis_update(&self, held: Option<(u64, usize)>) -> BasisUpdate {
        let from = match held {
            Some((restarts, shapes)) if restarts == self.restarts && shapes <= self.shapes => {
                shapes
            }
            _ => 0,
        };
        let n = self.statics.prescribed.len();
        let width = self.shapes - from;
        let mut columns = Vec::with_capacity(2 * n * width);
        for table in [&self.basis, &self.stiffness] {
            for d in 0..n {
                columns.extend_from_slice(&table[d * self.capacity..][from..self.shapes]);
            }
        }
        BasisUpdate {
            restarts: self.restarts,
            from,
            shapes: self.shapes,
            columns,
        }
    }

    /// Makes a mirror's basis (U and KU) the one `update` was taken of.
    pub(in crate::nonlinear) fn apply(&mut self, update: &BasisUpdate) {
        let n = self.statics.prescribed.len();
        let width = update.shapes - update.from;
        if width > 0 {
            let (basis, stiffness) = update.columns.split_at(n * width);
            for (table, columns) in [(&mut self.basis, basis), (&mut self.stiffness, stiffness)] {
                for (d, values) in columns.chunks_exact(width).enumerate() {
                    table[d * self.capacity..][update.from..update.shapes].copy_from_slice(values);
                }
            }
        }
        self.shapes = update.shapes;
        self.restarts = update.restarts;
        self.revision += 1;
    }

    /// Shape j's columns of U (m) and KU (N).
    pub(in crate::nonlinear) fn shape_columns(&self, j: usize) -> (Vec<f64>, Vec<f64>) {
        let n = self.statics.prescribed.len();
        let column = |table: &[f64]| (0..n).map(|d| table[d * self.capacity + j]).collect();
        (column(&self.basis), column(&self.stiffness))
    }

    /// Appends a shape already K-orthonormal to the basis (U's and KU's columns, as a
    /// mirror of this basis joined it). Fails when the basis is full.
    pub(in crate::nonlinear) fn append_shape(
        &mut self,
        (u, ku): (Vec<f64>, Vec<f64>),
    ) -> Result<(), NonlinearError> {
        if self.shapes == self.capacity {
            return Err(NonlinearError::BasisFull(self.capacity));
        }
        let j = self.shapes;
        for (d, (u, ku)) in u.iter().zip(&ku).enumerate() {
            self.basis[d * self.capacity + j] = *u;
            self.stiffness[d * self.capacity + j] = *ku;
        }
        self.shapes += 1;
        self.revision += 1;
        Ok(())
    }
}

/// A constraint's DOF index d must lie among the n DOFs.
pub(super) fn check_dof(d: usize, n: usize) -> Result<(), NonlinearError> {
    if d < n {
        Ok(())
    } else {
        Err(NonlinearError::NodeCount {
            what: "constraint DOF index (3 per node)",
            given: d,
            nodes: n / 3,
        })
    }
}
