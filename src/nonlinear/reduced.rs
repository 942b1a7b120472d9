//! The reduced nonlinear static model: the displacement u = U q over a small basis of
//! static shapes, solved by Newton's method in the reduced coordinates q.
//!
//! The basis is K-orthonormal (UᵀKU = I, K the small-strain stiffness at rest) and grows
//! from two kinds of shape, each K⁻¹ applied to a force: the constraints' and loads'
//! own shapes K⁻¹c, which make the reduced model exact for linear tissue, and the
//! nonlinear corrections K⁻¹r, r the residual f_int(Uq) − f_ext − Σλc the last reduced
//! solution leaves on the whole mesh. Uᵀr is the reduced residual, zero at a reduced
//! solution, so a correction is K-orthogonal to the basis already, and its energy norm
//! √(rᵀK⁻¹r) against ‖u‖_K = |q| is the error estimate [`ReducedStatics::enrich`]
//! returns: the adaptive solve adds corrections until it is small. Pressed 0.25–6 mm
//! into the 5 mm block made neo-Hookean or Veronda–Westmann γ = 5, 15–19 shapes give
//! the full FEM's force to 0.4 %, and to 0.03 % with the forces summed over a cubature
//! of 36–51 elements (`tests/nonlinear_reduced.rs`; docs/math.md §12).
//!
//! The linear part of the internal forces is exact for free: with UᵀKU = I it is q.
//! Only the *active* elements, those past [`ACTIVE_NONLINEARITY`] at the last
//! enrichment, add their large-strain law's difference from its linearisation.

use std::sync::Arc;

use faer::linalg::matmul::matmul;
use faer::linalg::solvers::{PartialPivLu, Solve};
use faer::sparse::SparseColMat;
use faer::{Accum, Mat, MatRef, Par};

use super::correction::{energy_norm, k_times, Correction, Corrector};
use super::cubature::Cubature;
use super::dynamics::DynamicStep;
use super::line_search::{backtrack, Trial};
use super::quadrature::{Quadrature, TaylorOffset};
use super::statics::{LinearConstraint, NewtonOptions, NewtonReport, NonlinearError};
use super::unit_columns::UnitColumns;
use super::{Hyperelastic, NonlinearStatics};
use crate::fem::Factor;
use crate::{Mat3, Vec3};

/// How far an element's large-strain stress must differ from its linearised one,
/// relative to its shear modulus (‖P − P_lin‖ / μ), for the reduced model to solve it
/// with its large-strain law; the rest keep their linearisation (exact in UᵀKU). On the 5 mm
/// block made Veronda–Westmann γ = 5, pressed beside the lump to 0.25–6 mm by
/// an 11.4 mm patch, the force stays within 0.1 % of the full FEM's at 3e-3 (7,464 of 19,200 elements
/// active at 6 mm), 0.2 % at 1e-2 (5,093), against 0.15 % with the relative cut
/// ‖P − P_lin‖ ≥ 1 % ‖P_lin‖ (13,150).
pub const ACTIVE_NONLINEARITY: f64 = 3e-3;

/// How far a reduced state is from the full model's (energy norms relative to the
/// displacement's, ‖·‖_K / ‖u‖_K; dimensionless).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// What the basis misses of the reduced model's own equilibrium.
    pub basis: f64,
    /// What the linearised (inactive) elements leave out.
    pub cut: f64,
}

/// A basis shape's energy norm, relative to the forces' shape it came from, below which
/// it adds nothing new (already in the span) and is dropped: what it would add moves
/// the state by less, and normalising so small a remainder would magnify round-off
/// into the basis's K-orthonormality.
const NEW_SHAPE: f64 = 1e-6;

/// Most times one dynamic step is solved again for its discrete-gradient correction
/// (`dynamics.rs`): the correction is O(Δ²) and its change from one solve to the next
/// smaller by another O(Δ), so one or two suffice; near rest, where it is round-off,
/// more would only chase the round-off.
const MAX_CORRECTION_SOLVES: usize = 3;

/// A hyperelastic mesh reduced to a basis of static shapes (module docs).
pub struct ReducedStatics {
    statics: Arc<NonlinearStatics>,
    /// K at rest (prescribed DOFs as identity rows), and factorised.
    k: Arc<SparseColMat<usize, f64>>,
    factor: Arc<Factor>,
    /// Each element's small-strain law.
    linear: Arc<[Hyperelastic]>,
    /// Most shapes the basis holds.
    capacity: usize,
    /// Shapes held.
    shapes: usize,
    /// U, DOF-major: the shapes' values at DOF d are `basis[d·capacity ..][..shapes]` (m).
    basis: Vec<f64>,
    /// KU in the same layout (N).
    stiffness: Vec<f64>,
    /// Elements solved with their large-strain law.
    active: Vec<usize>,
    /// What the reduced forces are summed over: the active elements with weight 1, or
    /// a cubature's, with or without its offset.
    quadrature: Quadrature,
    /// Counts the changes of the basis and of the quadrature: the reduced potential
    /// is the same function while it stays.
    revision: u64,
    /// Counts the restarts of the basis: while it stays, shapes are only appended.
    restarts: u64,
    /// K⁻¹ e_d for the DOFs contact patches loaded lately.
    unit_columns: UnitColumns,
}

impl std::fmt::Debug for ReducedStatics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReducedStatics")
            .field("shapes", &self.shapes)
            .field("capacity", &self.capacity)
            .field("active", &self.active.len())
            .field("quadrature", &self.quadrature.elements.len())
            .finish()
    }
}

impl ReducedStatics {
    /// The reduced model of `statics` with room for `capacity` shapes; factorises K at
    /// rest (on the 5 mm block, 10,584 free DOFs: 0.13 s). Starts with no shapes and
    /// no active element.
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
    /// `capacity` shapes, no shape and no active element yet.
    fn from_parts(parts: Corrector, capacity: usize) -> Self {
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
            active: Vec::new(),
            quadrature: Quadrature::default(),
            revision: 0,
            restarts: 0,
            unit_columns: UnitColumns::default(),
        }
    }

    /// Sums the reduced forces over the cubature's elements with its weights instead of
    /// over the active set, until the next [`ReducedStatics::enrich`].
    pub fn set_cubature(&mut self, cubature: &Cubature) {
        self.quadrature = Quadrature::new(cubature.elements.clone(), &self.statics.tets);
        self.revision += 1;
    }

    /// `cubature` with its [`TaylorOffset`] at q (over the whole basis): the full
    /// sum's reduced forces `forces` (N) and tangent `tangent` (N/m, row-major r × r)
    /// there, as [`ReducedStatics::forces_and_tangent_at`] gives them, less the
    /// cubature's.
    pub(super) fn cubature_at(
        &self,
        cubature: &Cubature,
        q: &[f64],
        forces: &[f64],
        tangent: &[f64],
    ) -> Quadrature {
        let mut quadrature = Quadrature::new(cubature.elements.clone(), &self.statics.tets);
        let r = self.shapes;
        let mut work = Work::new(r, self.nodes());
        let (mut own_forces, mut own_tangent) = (vec![0.0; r], vec![0.0; r * r]);
        self.accumulate(
            q,
            &quadrature,
            &mut work,
            &mut own_forces,
            Some(&mut own_tangent),
            None,
        );
        quadrature.offset = Some(TaylorOffset {
            at: q[..r].to_vec(),
            forces: (0..r).map(|j| forces[j] - own_forces[j]).collect(),
            tangent: (0..r * r).map(|i| tangent[i] - own_tangent[i]).collect(),
        });
        quadrature
    }

    /// Changes so far of the basis and the quadrature: while it stays the same, so is
    /// the reduced potential as a function of the coordinates.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The active elements: those the last [`ReducedStatics::enrich`] found past
    /// [`ACTIVE_NONLINEARITY`].
    pub fn active(&self) -> &[usize] {
        &self.active
    }

    /// Whether the reduced forces are summed over a cubature with its offset: a tangent
    /// then costs about ten passes of the forces, not 20–30.
    pub(super) fn summed_over_cubature(&self) -> bool {
        self.quadrature.offset.is_some()
    }

    /// Elements the reduced forces are summed over now: the active ones, or a
    /// cubature's ([`ReducedStatics::set_cubature`]).
    pub fn quadrature_elements(&self) -> usize {
        self.quadrature.elements.len()
    }

    /// Element `el`'s share of the reduced internal forces beyond its linearisation,
    /// V (P − P_lin) : dF_j for each shape j (N), into `out` (length r), at the nodes'
    /// displacements U q ([`ReducedStatics::displacement`]; m).
    pub(super) fn element_forces(&self, el: usize, displacement: &[Vec3], out: &mut [f64]) {
        let def = self.deformation_from(el, displacement);
        let p = (self.statics.laws[el].stress(&def) - self.linear[el].stress(&def))
            * self.statics.elements[el].volume;
        let r = self.shapes;
        out[..r].fill(0.0);
        self.add_nodal_forces(el, &p, &mut out[..r]);
    }

    /// max |UᵀKU − I| over the basis, with K applied afresh (not the stored KU): how far
    /// round-off has taken the basis from K-orthonormal (dimensionless).
    pub fn orthonormality_error(&self) -> f64 {
        let (r, n) = (self.shapes, self.statics.prescribed.len());
        let column =
            |j: usize| -> Vec<f64> { (0..n).map(|d| self.basis[d * self.capacity + j]).collect() };
        let ku: Vec<Vec<f64>> = (0..r).map(|j| self.k_times(&column(j))).collect();
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

    /// Shapes in the basis.
    pub fn shapes(&self) -> usize {
        self.shapes
    }

    /// Nodes of the mesh.
    pub fn nodes(&self) -> usize {
        self.statics.prescribed.len() / 3
    }

    /// Elements solved with their large-strain law.
    pub fn active_elements(&self) -> usize {
        self.active.len()
    }

    /// Adds the static shape K⁻¹`force` (N per DOF, 3·node + axis; prescribed DOFs
    /// ignored), K-orthonormalised against the basis. Returns its energy norm outside the
    /// span relative to its whole (0 when it was in the span already and is not added;
    /// 1 for a shape K-orthogonal to the basis). An empty force adds nothing. Fails when
    /// the basis is full.
    pub fn add_shape(&mut self, force: &[f64]) -> Result<f64, NonlinearError> {
        let (whole, left) = self.add_load(force)?;
        Ok(if whole > 0.0 { left / whole } else { 0.0 })
    }

    /// [`ReducedStatics::add_shape`] for each of `forces` in turn, solved with K at once
    /// (a solve is bound by reading the factor, so three columns cost little more than
    /// one). The shapes added before a failure stay.
    pub fn add_shapes(&mut self, forces: &[Vec<f64>]) -> Result<(), NonlinearError> {
        let loads = self.free_loads(forces)?;
        let mut solved = loads.clone();
        self.factor.solve_in_place(solved.as_mut())?;
        for j in 0..forces.len() {
            let load: Vec<f64> = loads.col(j).iter().copied().collect();
            self.add_solved_if(&load, solved.col(j).iter().copied().collect(), 0.0)?;
        }
        Ok(())
    }

    /// [`ReducedStatics::add_shapes`] for sparse forces ((DOF, N) pairs; prescribed DOFs
    /// carry none), K⁻¹ of each summed from the unit columns of its DOFs
    /// (`nonlinear/unit_columns.rs`): a contact patch moving across the surface solves with
    /// K only for the DOFs it newly loads.
    pub fn add_point_shapes(&mut self, forces: &[Vec<(usize, f64)>]) -> Result<(), NonlinearError> {
        let n = self.statics.prescribed.len();
        let free: Vec<Vec<(usize, f64)>> = forces
            .iter()
            .map(|force| {
                let mut free = Vec::with_capacity(force.len());
                for &(d, w) in force {
                    check_dof(d, n)?;
                    if !self.statics.prescribed[d] {
                        free.push((d, w));
                    }
                }
                Ok(free)
            })
            .collect::<Result<_, NonlinearError>>()?;
        let solved = self.unit_columns.solve(&self.factor, &free)?;
        for (force, solved) in free.iter().zip(solved) {
            let mut load = vec![0.0; n];
            for &(d, w) in force {
                load[d] += w;
            }
            self.add_solved_if(&load, solved, 0.0)?;
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

    /// [`ReducedStatics::add_shape`]: the energy norms √(fᵀK⁻¹f) of the whole shape and
    /// of its part outside the span before it (0 when not added) (m·√(N/m)).
    fn add_load(&mut self, force: &[f64]) -> Result<(f64, f64), NonlinearError> {
        self.add_load_if(force, 0.0)
    }

    /// [`ReducedStatics::add_load`], adding the shape only if its part outside the span
    /// is above `least` too; returns that part's norm whether added or not.
    fn add_load_if(&mut self, force: &[f64], least: f64) -> Result<(f64, f64), NonlinearError> {
        let load = self.free_loads(&[force.to_vec()])?;
        let mut solved = load.clone();
        self.factor.solve_in_place(solved.as_mut())?;
        let load: Vec<f64> = load.col(0).iter().copied().collect();
        self.add_solved_if(&load, solved.col(0).iter().copied().collect(), least)
    }

    /// [`ReducedStatics::add_load_if`] with the force `load` (zero at the prescribed
    /// DOFs; N) already solved for: `solved` = K⁻¹ `load` (m).
    fn add_solved_if(
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
        // K, not updated alongside: a contact patch sliding by a fraction of a cell adds
        // shapes mostly in the span already, and the updated product lost UᵀKU = I
        // (off by 9 after 200 steps of a 1 cm slide; docs/math.md §12). Each pass takes
        // all r coefficients (KU)ᵀx in one sweep over the DOF-major tables, then x − Uc
        // in another: two contiguous sweeps instead of 2r strided ones (Gram–Schmidt
        // took 9 % of a sliding model step the strided way, 64 shapes).
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
        let load = self.k_times(&shape);
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
        // A cubature's offset is the full sum's over the shapes it was taken over; a
        // new shape (a contact patch moving on) gets the full sum until the next one.
        self.forget_cubature();
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

    /// K x (N) of a displacement x (m per DOF) that is zero on the prescribed DOFs.
    fn k_times(&self, x: &[f64]) -> Vec<f64> {
        k_times(&self.k, x)
    }

    /// Adds each constraint's shape K⁻¹c ([`ReducedStatics::add_shape`]).
    pub fn add_constraint_shapes(
        &mut self,
        constraints: &[LinearConstraint],
    ) -> Result<(), NonlinearError> {
        let n = self.statics.prescribed.len();
        for c in constraints {
            self.add_shape(&constraint_force(c, n)?)?;
        }
        Ok(())
    }

    /// The displacement u = U q of every node (m) into `out`.
    pub fn displacement(&self, q: &[f64], out: &mut [Vec3]) {
        for (v, o) in out.iter_mut().enumerate() {
            *o = self.node_displacement(v, q);
        }
    }

    /// U q (m) at `quadrature`'s nodes into `out` (one entry per node of the mesh;
    /// the others are left as they are).
    fn quadrature_displacement(&self, quadrature: &Quadrature, q: &[f64], out: &mut [Vec3]) {
        for &v in &quadrature.nodes {
            out[v] = self.node_displacement(v, q);
        }
    }

    /// Shape j's displacement at node `v` (m per unit coordinate).
    pub(super) fn shape_at_node(&self, j: usize, v: usize) -> Vec3 {
        Vec3::from_fn(|c, _| self.basis[(3 * v + c) * self.capacity + j])
    }

    /// The displacement of node `v` at q (m).
    pub fn node_displacement(&self, v: usize, q: &[f64]) -> Vec3 {
        Vec3::from_fn(|c, _| self.dof(3 * v + c, q))
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

    /// Replaces the basis after its first `keep` shapes (the dynamic ones) by one
    /// shape, the rest of the displacement U q itself (K-normalised; K-orthogonal to the
    /// kept shapes as every later shape is), and q by its coordinates in it (the kept
    /// ones and one more, |q beyond `keep`|; none more at rest; q may be shorter than
    /// the basis: the missing coordinates are 0): the state is kept exactly while the
    /// room of the other shapes is freed. The active elements stay.
    pub fn restart(&mut self, q: &mut Vec<f64>, keep: usize) {
        // Shapes added since q was last solved have coordinate 0.
        q.resize(self.shapes, 0.0);
        let keep = keep.min(self.shapes);
        self.revision += 1;
        self.restarts += 1;
        // An offset is over the coordinates being replaced.
        self.forget_cubature();
        let norm = size(&q[keep..]);
        if norm == 0.0 {
            self.shapes = keep;
            q.truncate(keep);
            return;
        }
        // UᵀKU = I, so ‖U_s q_s‖_K = |q_s|; the new shape is U_s q_s/|q_s|.
        let n = self.statics.prescribed.len();
        let rest: Vec<f64> = q
            .iter()
            .enumerate()
            .map(|(j, &x)| if j < keep { 0.0 } else { x })
            .collect();
        let u: Vec<f64> = (0..n).map(|d| self.dof(d, &rest) / norm).collect();
        let f = self.k_times(&u);
        for d in 0..n {
            self.basis[d * self.capacity + keep] = u[d];
            self.stiffness[d * self.capacity + keep] = f[d];
        }
        self.shapes = keep + 1;
        q.truncate(keep);
        q.push(norm);
    }

    fn dof(&self, d: usize, q: &[f64]) -> f64 {
        self.dof_of(&self.basis, d, q)
    }

    /// Row d of a DOF-major shape table times q.
    fn dof_of(&self, table: &[f64], d: usize, q: &[f64]) -> f64 {
        let row = &table[d * self.capacity..][..self.shapes];
        row.iter().zip(q).map(|(u, q)| u * q).sum()
    }

    /// The reduced internal forces Uᵀf_int(Uq) (N) into `forces` and the reduced tangent
    /// UᵀK_T U (N/m, row-major r × r) into `tangent`, r = [`ReducedStatics::shapes`] =
    /// `q.len()`: the work of one Newton iteration.
    pub fn reduced_forces_and_tangent(&self, q: &[f64], forces: &mut [f64], tangent: &mut [f64]) {
        let r = self.shapes;
        let (own_forces, own_tangent) = self.forces_and_tangent_at(q);
        forces[..r].copy_from_slice(&own_forces);
        tangent[..r * r].copy_from_slice(&own_tangent.values);
    }

    /// Solves the reduced equilibrium Uᵀ(f_int(Uq) − `loads` − Σₖ λₖ cₖ) = 0 with
    /// cₖᵀUq = valueₖ for q (reduced coordinates, as long as [`ReducedStatics::shapes`];
    /// the start on input) and each constraint's multiplier λₖ (N; its input the start),
    /// by Newton's method with a backtracking line search on the reduced potential
    /// energy. The constraints' shapes must be in the basis. `options.relative` is
    /// relative to the reduced applied forces.
    pub fn solve(
        &self,
        q: &mut [f64],
        loads: &[Vec3],
        constraints: &mut [LinearConstraint],
        options: &NewtonOptions,
    ) -> Result<NewtonReport, NonlinearError> {
        self.solve_step(q, loads, constraints, options, None, None)
            .map(|end| end.report)
    }

    /// Takes `tangent` afresh at q (the state its solve ended on) unless it is that
    /// state's in this basis already.
    pub(super) fn refresh_tangent(&self, q: &[f64], tangent: &mut Tangent) {
        if tangent.at_solution && tangent.revision == Some(self.revision) {
            return;
        }
        let patient = tangent.patient;
        *tangent = Tangent {
            at_solution: true,
            patient,
            ..self.forces_and_tangent_at(q).1
        };
    }

    /// [`ReducedStatics::solve`], or with `dynamic` one dynamic step (`dynamics.rs`):
    /// the dynamic coordinates' rows gain the step's inertial terms, the static ones
    /// stay in equilibrium. Without `tangent`, Newton's method takes the tangent at
    /// every iterate (it converges quadratically); with it, it starts from that tangent
    /// if it is this basis's or its first shapes', keeps a tangent while it converges
    /// ([`CHORD_CONTRACTION`], [`CHORD_ITERATIONS`]) with the KKT matrix's LU factors,
    /// and leaves the last one taken there (not necessarily at the solution: see
    /// [`Tangent::at_solution`]). Returns
    /// the report with Π and ∇Π − Aᵀλ at the solution.
    pub(super) fn solve_step(
        &self,
        q: &mut [f64],
        loads: &[Vec3],
        constraints: &mut [LinearConstraint],
        options: &NewtonOptions,
        mut tangent: Option<&mut Tangent>,
        mut dynamic: Option<&mut DynamicStep>,
    ) -> Result<StepEnd, NonlinearError> {
        let r = self.shapes;
        let m = constraints.len();
        let n = self.statics.prescribed.len();
        if q.len() != r {
            return Err(NonlinearError::NodeCount {
                what: "reduced coordinates (one per shape)",
                given: q.len(),
                nodes: r,
            });
        }
        if loads.len() != n / 3 {
            return Err(NonlinearError::NodeCount {
                what: "loads",
                given: loads.len(),
                nodes: n / 3,
            });
        }
        let k = dynamic.as_ref().map_or(0, |d| d.coordinates());
        if k > r {
            return Err(NonlinearError::NodeCount {
                what: "dynamic coordinates (one per mode)",
                given: k,
                nodes: r,
            });
        }
        // Reduced loads b = Uᵀ f_ext and constraint rows aₖ = Uᵀ cₖ, over the nonzero
        // entries only (a probe's patch is a few dozen DOFs of thousands).
        let mut b = vec![0.0; r];
        for (v, load) in loads.iter().enumerate() {
            for c in (0..3).filter(|&c| load[c] != 0.0 && !self.statics.prescribed[3 * v + c]) {
                let row = &self.basis[(3 * v + c) * self.capacity..][..r];
                for (bj, u) in b.iter_mut().zip(row) {
                    *bj += load[c] * u;
                }
            }
        }
        let mut rows = Vec::with_capacity(m);
        for c in constraints.iter() {
            let mut a = vec![0.0; r];
            for &(d, w) in &c.coefficients {
                check_dof(d, n)?;
                let row = &self.basis[d * self.capacity..][..r];
                for (aj, u) in a.iter_mut().zip(row) {
                    *aj += w * u;
                }
            }
            rows.push(a);
        }
        let mut lambda: Vec<f64> = constraints.iter().map(|c| c.multiplier).collect();
        let applied = |lambda: &[f64]| -> Vec<f64> {
            (0..r)
                .map(|j| b[j] + rows.iter().zip(lambda).map(|(a, l)| a[j] * l).sum::<f64>())
                .collect()
        };
        // Π(q) from the solver's energy Π(q) − (f − b)·q.
        let potential = |energy: f64, f: &[f64], q: &[f64]| -> f64 {
            energy + (0..r).map(|j| (f[j] - b[j]) * q[j]).sum::<f64>()
        };
        let mut work = Work::new(r, n / 3);
        let mut f = applied(&lambda);
        let Some(mut energy) = self.energy_and_gradient(q, &f, &mut work) else {
            self.displacement(q, &mut work.displacement);
            let inverted = self.statics.first_inverted(&work.displacement);
            return Err(NonlinearError::Inverted(inverted));
        };
        let dynamic_scale = dynamic.as_ref().map_or(0.0, |d| d.scale());
        let mut report = NewtonReport {
            residuals: Vec::new(),
            steps: Vec::new(),
            energy,
        };
        let mut trial = vec![0.0; r];
        let mut last_step = f64::INFINITY;
        let mut corrections = 0;
        // Whether work.tangent holds a tangent to start from.
        let mut kept = false;
        if let Some(t) = tangent.as_deref() {
            let rt = t.shapes;
            kept = t.revision.is_some() && t.restarts == self.restarts && rt <= r;
            if kept {
                let mut start = t.clone();
                start.border(r);
                work.tangent.copy_from_slice(&start.values);
            }
        }
        let chord = tangent.is_some();
        let patient = tangent.as_deref().is_some_and(|t| t.patient);
        let (contraction, most_chords) = if patient {
            (PATIENT_CONTRACTION, PATIENT_ITERATIONS)
        } else {
            (CHORD_CONTRACTION, CHORD_ITERATIONS)
        };
        let mut last_norm = f64::INFINITY;
        let mut shortened = false;
        // Iterations since the tangent was last taken.
        let mut chord_iterations = 0;
        // Whether `work.trial_gradient` holds the forces at q (the start, or the last
        // trial taken).
        let mut at_trial = true;
        // The KKT matrix's factors, of the tangent in `work` (dropped when it is taken).
        let mut factored: Option<PartialPivLu<f64>> = None;
        for iteration in 0..=options.max_iterations {
            let keep = kept && (patient || !shortened) && chord_iterations < most_chords;
            if keep && at_trial {
                // The line search's accepted trial is q: its forces are at hand.
                std::mem::swap(&mut work.gradient, &mut work.trial_gradient);
            } else if keep {
                self.gradient_only(q, &mut work);
            } else {
                self.gradient_and_tangent(q, &mut work);
                factored = None;
            }
            at_trial = false;
            let mut residual: Vec<f64> = (0..r).map(|j| work.gradient[j] - f[j]).collect();
            if let Some(step) = dynamic.as_deref() {
                step.add_residual(q, &mut residual);
            }
            let norm = residual.iter().map(|x| x * x).sum::<f64>().sqrt();
            let at_q = !keep;
            kept = chord;
            // The forces the residual balances: the applied ones, the elastic ones (in
            // a dynamic step inertia balances part of them) and the inertial ones.
            let scale = size(&f).max(size(&work.gradient[..r])).max(dynamic_scale);
            report.residuals.push(norm);
            let gaps: Vec<f64> = constraints
                .iter()
                .zip(&rows)
                .map(|(c, a)| c.value - a.iter().zip(q.iter()).map(|(a, q)| a * q).sum::<f64>())
                .collect();
            let on_constraints = constraints
                .iter()
                .zip(&gaps)
                .all(|(c, g)| g.abs() <= options.relative * c.value.abs().max(1e-12));
            let tolerance = options.relative * scale.max(1e-300);
            // Or the last full Newton step moved q by round-off only: the reduced
            // gradient's own round-off (sums of stresses over thousands of elements)
            // can exceed a very tight tolerance.
            let stalled = report.steps.last() == Some(&1.0) && last_step <= 1e-13 * size(q);
            if (norm <= tolerance || stalled) && on_constraints {
                // Solved with the discrete-gradient correction held; the correction
                // itself is taken at solutions only (at an iterate off equilibrium its
                // numerator is not the rule's small remainder, and divided by a small
                // step it would swamp the residual). Changed beyond the tolerance, it
                // is solved again.
                if let Some(step) = dynamic.as_deref_mut() {
                    let at: Vec<f64> = (0..k).map(|j| work.gradient[j] - f[j]).collect();
                    let change =
                        step.update_correction(q, potential(energy, &f, q), &at, tolerance);
                    if change > tolerance
                        && corrections < MAX_CORRECTION_SOLVES
                        && iteration < options.max_iterations
                    {
                        corrections += 1;
                        last_step = f64::INFINITY;
                        continue;
                    }
                }
                report.energy = energy;
                if let Some(t) = tangent.as_deref_mut() {
                    *t = Tangent {
                        values: work.tangent.clone(),
                        shapes: r,
                        restarts: self.restarts,
                        revision: Some(self.revision),
                        at_solution: at_q,
                        patient: t.patient,
                    };
                }
                for (c, l) in constraints.iter_mut().zip(&lambda) {
                    c.multiplier = *l;
                }
                return Ok(StepEnd {
                    report,
                    potential: potential(energy, &f, q),
                    gradient: (0..r).map(|j| work.gradient[j] - f[j]).collect(),
                });
            }
            if iteration == options.max_iterations {
                return Err(NonlinearError::NotConverged {
                    iterations: iteration,
                    residual: norm,
                    tolerance,
                });
            }
            // A kept tangent that no longer converges fast is taken afresh here (the
            // forces again with it: a twentieth of its cost).
            chord_iterations += 1;
            if at_q {
                chord_iterations = 0;
            } else if norm > contraction * last_norm {
                self.gradient_and_tangent(q, &mut work);
                factored = None;
                chord_iterations = 0;
            }
            last_norm = norm;
            // KKT: [J  −A; −Aᵀ 0] [δq; δλ] = [−R; −gap], J the static tangent plus the
            // step's inertia. It changes only with the tangent, so chord iterations
            // solve with the factors they have (a pressed step's solve was 15–20 %
            // factorisations; `cargo bench --bench nonlinear -- model_step`, p50 0.8 →
            // 0.7 ms, docs/benchmarks.md).
            let lu = factored.get_or_insert_with(|| {
                let mut jacobian = work.tangent.clone();
                if let Some(step) = dynamic.as_deref() {
                    step.add_jacobian(&mut jacobian, r);
                }
                Mat::<f64>::from_fn(r + m, r + m, |i, j| match (i < r, j < r) {
                    (true, true) => jacobian[i * r + j],
                    (true, false) => -rows[j - r][i],
                    (false, true) => -rows[i - r][j],
                    (false, false) => 0.0,
                })
                .partial_piv_lu()
            });
            let size = r + m;
            let rhs = Mat::<f64>::from_fn(
                size,
                1,
                |i, _| {
                    if i < r {
                        -residual[i]
                    } else {
                        -gaps[i - r]
                    }
                },
            );
            let step = lu.solve(&rhs);
            if (0..size).any(|i| !step[(i, 0)].is_finite()) {
                return Err(NonlinearError::LineSearch {
                    iteration,
                    residual: norm,
                });
            }
            for (k, l) in lambda.iter_mut().enumerate() {
                *l += step[(r + k, 0)];
            }
            // The energy's forces term −f·q changes with λ; the elastic energy does not.
            let before = std::mem::replace(&mut f, applied(&lambda));
            energy += (0..r).map(|j| (before[j] - f[j]) * q[j]).sum::<f64>();
            let inertia = |at: &[f64]| dynamic.as_deref().map_or(0.0, |d| d.merit(at));
            // The merit's slope at α = 0 under the updated multipliers (the inertial
            // terms do not depend on λ).
            let mut gradient_at: Vec<f64> = (0..r).map(|j| work.gradient[j] - f[j]).collect();
            if let Some(d) = dynamic.as_deref() {
                d.add_residual(q, &mut gradient_at);
            }
            let slope: f64 = (0..r).map(|j| gradient_at[j] * step[(j, 0)]).sum();
            let start_merit = energy + inertia(q);
            let searched = backtrack(start_merit, slope, |at| match at {
                Trial::At(alpha) => {
                    for j in 0..r {
                        trial[j] = q[j] + alpha * step[(j, 0)];
                    }
                    self.energy_and_gradient(&trial, &f, &mut work)
                        .map(|e| e + inertia(&trial))
                }
                Trial::Slope => {
                    let mut along = self.slope_along(&trial, &f, &step, &mut work);
                    if let Some(d) = dynamic.as_deref() {
                        let mut inertial = vec![0.0; r];
                        d.add_residual(&trial, &mut inertial);
                        along += (0..k).map(|j| inertial[j] * step[(j, 0)]).sum::<f64>();
                    }
                    Some(along)
                }
            });
            let Some((alpha, e)) = searched else {
                return Err(NonlinearError::LineSearch {
                    iteration,
                    residual: norm,
                });
            };
            energy = e - inertia(&trial);
            shortened = alpha < 1.0;
            report.steps.push(alpha);
            last_step = alpha * (0..r).map(|j| step[(j, 0)].powi(2)).sum::<f64>().sqrt();
            q.copy_from_slice(&trial);
            at_trial = true;
        }
        unreachable!("the loop returns at max_iterations")
    }

    /// Estimates the reduced state `q`'s error under `loads` and `constraints` (their
    /// multipliers as solved) and grows the model where it falls short:
    /// * the basis: r, the residual of the reduced model's own laws (active elements
    ///   large-strain, the rest linearised) on the whole mesh, gives the estimate
    ///   √(rᵀK⁻¹r) / |q| (the energy norm of the correction K⁻¹r relative to the
    ///   displacement's; 0 at rest); above `tolerance` K⁻¹r joins the basis (append a 0
    ///   to q);
    /// * the cut: the elements whose large-strain stress differs from their linearised
    ///   one by more than [`ACTIVE_NONLINEARITY`] of their shear modulus at q become the
    ///   active ones, and the same norm of what the inactive ones' difference adds to r
    ///   is reported.
    ///
    /// The correction, then its join (`correction`, `join_correction`).
    pub fn enrich(
        &mut self,
        q: &[f64],
        loads: &[Vec3],
        constraints: &[LinearConstraint],
        tolerance: f64,
    ) -> Result<Estimate, NonlinearError> {
        let correction = self.correction(q, loads, constraints)?;
        self.join_correction(&correction, tolerance)
    }

    /// The correction of the state `q` under `loads` and `constraints`
    /// ([`ReducedStatics::enrich`]), without changing the model.
    pub(super) fn correction(
        &self,
        q: &[f64],
        loads: &[Vec3],
        constraints: &[LinearConstraint],
    ) -> Result<Correction, NonlinearError> {
        let mut u = vec![Vec3::zeros(); self.nodes()];
        self.displacement(q, &mut u);
        self.corrector()
            .correct(&u, loads, constraints, &self.active, size(q))
    }

    /// What a correction reads of the model, to compute one on another thread.
    pub(super) fn corrector(&self) -> Corrector {
        Corrector {
            statics: Arc::clone(&self.statics),
            k: Arc::clone(&self.k),
            factor: Arc::clone(&self.factor),
            linear: Arc::clone(&self.linear),
        }
    }

    /// The basis's restarts so far: while they stay, shapes are only appended.
    pub(super) fn restarts(&self) -> u64 {
        self.restarts
    }

    /// A model over the same mesh, K, factor and laws with no shapes yet, nothing
    /// factorised again: the correction thread's copy of the basis
    /// ([`ReducedStatics::basis_update`]).
    pub(super) fn mirror(&self) -> Self {
        Self::from_parts(self.corrector(), self.capacity)
    }

    /// What a mirror holding this basis's first `held.1` shapes as of its `held.0`-th
    /// restart (`None`: nothing) lacks of it now: the shapes appended since, or all of
    /// them after a restart.
    pub(super) fn basis_update(&self, held: Option<(u64, usize)>) -> BasisUpdate {
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

    /// Makes a [`ReducedStatics::mirror`]'s basis (U and KU) the one `update` was taken
    /// of.
    pub(super) fn apply(&mut self, update: &BasisUpdate) {
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

    /// Sums the forces over every active element again if they were summed over a
    /// cubature with its offset, until the next correction joins.
    pub(super) fn forget_cubature(&mut self) {
        if self.summed_over_cubature() {
            self.quadrature = Quadrature::full(&self.active, &self.statics.tets);
            self.revision += 1;
        }
    }

    /// Shape j's columns of U (m) and KU (N).
    pub(super) fn shape_columns(&self, j: usize) -> (Vec<f64>, Vec<f64>) {
        let n = self.statics.prescribed.len();
        let column = |table: &[f64]| (0..n).map(|d| table[d * self.capacity + j]).collect();
        (column(&self.basis), column(&self.stiffness))
    }

    /// Joins a correction as a mirror of this basis joined it
    /// ([`ReducedStatics::join_correction`] there): `active` become the active elements,
    /// summed over `quadrature` (`None`: all of them, weight 1), and `shape` (U's and
    /// KU's columns), if any, is appended. Fails when the basis is full.
    pub(super) fn join_mirrored(
        &mut self,
        active: &[usize],
        shape: Option<(Vec<f64>, Vec<f64>)>,
        quadrature: Option<Quadrature>,
    ) -> Result<(), NonlinearError> {
        if shape.is_some() && self.shapes == self.capacity {
            return Err(NonlinearError::BasisFull(self.capacity));
        }
        if active != self.active.as_slice() {
            self.active = active.to_vec();
        }
        self.quadrature =
            quadrature.unwrap_or_else(|| Quadrature::full(&self.active, &self.statics.tets));
        self.revision += 1;
        if let Some((u, ku)) = shape {
            let j = self.shapes;
            for (d, (u, ku)) in u.iter().zip(&ku).enumerate() {
                self.basis[d * self.capacity + j] = *u;
                self.stiffness[d * self.capacity + j] = *ku;
            }
            self.shapes += 1;
        }
        Ok(())
    }

    /// Sums the reduced forces over `active` (ascending elements, weight 1) from now on.
    pub(super) fn set_active(&mut self, active: &[usize]) {
        if active != self.active.as_slice() {
            self.active = active.to_vec();
            self.quadrature = Quadrature::full(active, &self.statics.tets);
            self.revision += 1;
        }
    }

    /// The reduced internal forces Uᵀf_int(Uq) (N) and tangent UᵀK_T U at q, taken
    /// afresh (not marked as at a solution).
    pub(super) fn forces_and_tangent_at(&self, q: &[f64]) -> (Vec<f64>, Tangent) {
        let r = self.shapes;
        let mut work = Work::new(r, self.nodes());
        self.gradient_and_tangent(q, &mut work);
        let tangent = Tangent {
            values: work.tangent,
            shapes: r,
            restarts: self.restarts,
            revision: Some(self.revision),
            at_solution: false,
            patient: false,
        };
        (work.gradient, tangent)
    }

    /// Joins `correction` to the model ([`ReducedStatics::enrich`]): its strained
    /// elements become the active ones, and its shape joins the basis,
    /// K-orthonormalised against it, if what is new of it is above `tolerance` of the
    /// state's |q|. The basis may have grown since the correction's state: the shape
    /// is still a direction its state missed. Returns the estimate. On
    /// [`NonlinearError::BasisFull`] the active elements have changed already.
    pub(super) fn join_correction(
        &mut self,
        correction: &Correction,
        tolerance: f64,
    ) -> Result<Estimate, NonlinearError> {
        if correction.residual.len() != self.statics.prescribed.len() {
            return Err(NonlinearError::NodeCount {
                what: "correction (3 per node)",
                given: correction.residual.len(),
                nodes: self.nodes(),
            });
        }
        let quadrature = Quadrature::full(&correction.active, &self.statics.tets);
        if quadrature.elements != self.quadrature.elements || self.summed_over_cubature() {
            self.revision += 1;
        }
        self.quadrature = quadrature;
        self.active.clone_from(&correction.active);
        let size = correction.size;
        // What the correction adds outside the span: the dynamic coordinates' residual
        // (their inertia, which the static residual leaves out) is in the span already.
        let (_, left) = self.add_solved_if(
            &correction.residual,
            correction.solved.clone(),
            tolerance * size,
        )?;
        let basis = if size > 0.0 { left / size } else { 0.0 };
        Ok(Estimate {
            basis,
            cut: correction.cut,
        })
    }

    /// Solves to the full model's accuracy: [`ReducedStatics::solve`], then
    /// [`ReducedStatics::enrich`] and again until the basis estimate is at most
    /// `tolerance` and the cut stays as it is (or the basis is full). Returns the last
    /// solve's report and estimate.
    pub fn solve_adaptive(
        &mut self,
        q: &mut Vec<f64>,
        loads: &[Vec3],
        constraints: &mut [LinearConstraint],
        options: &NewtonOptions,
        tolerance: f64,
    ) -> Result<(NewtonReport, Estimate), NonlinearError> {
        // Each round adds a shape or changes the cut; a cut that keeps changing (an
        // element on the threshold) stops after as many rounds as the basis has room.
        for round in 1.. {
            q.resize(self.shapes, 0.0);
            let report = self.solve(q, loads, constraints, options)?;
            let active = self.active.clone();
            let estimate = self.enrich(q, loads, constraints, tolerance)?;
            let settled = estimate.basis <= tolerance && self.active == active;
            if settled || self.shapes == self.capacity || round >= self.capacity {
                return Ok((report, estimate));
            }
        }
        unreachable!("the rounds return")
    }

    /// Deformation gradient of element `el` from the nodes' displacements (m).
    fn deformation_from(&self, el: usize, displacement: &[Vec3]) -> Mat3 {
        let grads = &self.statics.elements[el].grads;
        let mut def = Mat3::identity();
        for (a, &v) in self.statics.tets[el].iter().enumerate() {
            def += displacement[v] * grads[a].transpose();
        }
        def
    }

    /// `out[j] += P : dF_j` in element `el` for the stress `p` (Pa·m³, P times the
    /// volume), through its nodal forces P ∇N_a and U's rows at its nodes.
    fn add_nodal_forces(&self, el: usize, p: &Mat3, out: &mut [f64]) {
        let r = out.len();
        let grads = &self.statics.elements[el].grads;
        for (a, &v) in self.statics.tets[el].iter().enumerate() {
            let force = p * grads[a];
            for c in 0..3 {
                let shapes = &self.basis[(3 * v + c) * self.capacity..][..r];
                for (o, u) in out.iter_mut().zip(shapes) {
                    *o += force[c] * u;
                }
            }
        }
    }

    /// Deformation gradient of element `el` at q, leaving each shape's dF in `df`: row
    /// 3c + k (entry (c, k) of dF) holds the r shapes' values, contiguous.
    fn element_gradient(&self, el: usize, q: &[f64], df: &mut [f64]) -> Mat3 {
        let r = self.shapes;
        let grads = &self.statics.elements[el].grads;
        df[..9 * r].fill(0.0);
        for (a, &v) in self.statics.tets[el].iter().enumerate() {
            for c in 0..3 {
                let shapes = &self.basis[(3 * v + c) * self.capacity..][..r];
                for k in 0..3 {
                    let g = grads[a][k];
                    for (o, u) in df[(3 * c + k) * r..][..r].iter_mut().zip(shapes) {
                        *o += g * u;
                    }
                }
            }
        }
        let mut def = Mat3::identity();
        for i in 0..9 {
            def[(i / 3, i % 3)] += df[i * r..][..r]
                .iter()
                .zip(q)
                .map(|(d, q)| d * q)
                .sum::<f64>();
        }
        def
    }

    /// The slope of the reduced energy along `step` at `trial` under the reduced forces
    /// `f` (J per unit step).
    fn slope_along(&self, trial: &[f64], f: &[f64], step: &Mat<f64>, work: &mut Work) -> f64 {
        let mut at = std::mem::take(&mut work.trial_gradient);
        self.accumulate(trial, &self.quadrature, work, &mut at, None, None);
        let along = (0..trial.len())
            .map(|j| (at[j] - f[j]) * step[(j, 0)])
            .sum();
        work.trial_gradient = at;
        along
    }

    /// The reduced potential energy ½|q|² + Σ V (W − W_lin) − fᵀq (J) at q under the
    /// reduced forces `f`, summed over the quadrature, and Uᵀf_int(Uq) into
    /// `work.trial_gradient`, in one pass: a line search's trial, whose forces the next
    /// iteration starts from when it is taken. `None` if an element is inverted.
    fn energy_and_gradient(&self, q: &[f64], f: &[f64], work: &mut Work) -> Option<f64> {
        let mut e: f64 = q.iter().zip(f).map(|(q, f)| 0.5 * q * q - f * q).sum();
        let mut at = std::mem::take(&mut work.trial_gradient);
        let whole = self.accumulate(q, &self.quadrature, work, &mut at, None, Some(&mut e));
        work.trial_gradient = at;
        whole.then_some(e)
    }

    /// The reduced internal forces Uᵀf_int(Uq) into `work.gradient`.
    fn gradient_only(&self, q: &[f64], work: &mut Work) {
        let mut gradient = std::mem::take(&mut work.gradient);
        self.accumulate(q, &self.quadrature, work, &mut gradient, None, None);
        work.gradient = gradient;
    }

    /// The reduced internal forces Uᵀf_int(Uq) into `work.gradient` and the reduced
    /// tangent UᵀK_T U into `work.tangent` (row-major r × r).
    fn gradient_and_tangent(&self, q: &[f64], work: &mut Work) {
        let mut gradient = std::mem::take(&mut work.gradient);
        let mut tangent = std::mem::take(&mut work.tangent);
        self.accumulate(
            q,
            &self.quadrature,
            work,
            &mut gradient,
            Some(&mut tangent),
            None,
        );
        work.gradient = gradient;
        work.tangent = tangent;
    }

    /// Uᵀf_int(Uq) summed over `quadrature` (with its offset) into `gradient` and, if
    /// given, UᵀK_T U into `tangent` (row-major), and the energy into `energy`; false
    /// if an element is inverted (when the energy is asked for).
    ///
    /// The forces go through the nodes: U q at each of the quadrature's nodes once, each
    /// element's F from its four, its nodal forces P ∇N_a summed per node, and Uᵀ of
    /// those once. A node is in about 20 elements, so that reads U's rows about 20 times
    /// less than per element, which matters for the chord iterations' forces without a
    /// tangent (with them, the model step's p99 2–3× faster: `cargo bench --bench
    /// nonlinear -- model_step`, docs/benchmarks.md).
    ///
    /// An element's share of the tangent is dFᵀ C dF, dF its 9 × r shape gradients and C
    /// its 9 × 9 moduli less the linear ones. The shares are summed [`CHUNK`] elements at
    /// a time as one matrix product, (dF₁; dF₂; …)ᵀ (C₁dF₁; C₂dF₂; …), instead of r²/2
    /// dot products of 3 × 3 matrices per element. With the basis near its 64 shapes
    /// that made the model step 1.4–2× faster (`cargo bench --bench nonlinear --
    /// model_step`, docs/benchmarks.md); at 17 shapes the two cost about the same
    /// (`newton_iteration_default_block`: 25.4–27.5 ms against 23.9–25.8 ms).
    fn accumulate(
        &self,
        q: &[f64],
        quadrature: &Quadrature,
        work: &mut Work,
        gradient: &mut [f64],
        tangent: Option<&mut [f64]>,
        mut energy: Option<&mut f64>,
    ) -> bool {
        let r = self.shapes;
        gradient[..r].copy_from_slice(&q[..r]);
        if r == 0 {
            return true;
        }
        // Elements whose dF and (C − C_lin) dF wait in `work` for the next product.
        let mut filled = 0;
        if tangent.is_some() {
            work.sum.fill(0.0);
        } else {
            self.quadrature_displacement(quadrature, q, &mut work.displacement);
        }
        for &v in &quadrature.nodes {
            work.nodal_forces[v] = Vec3::zeros();
        }
        for &(el, weight) in &quadrature.elements {
            let volume = weight * self.statics.elements[el].volume;
            let law = &self.statics.laws[el];
            let lin = &self.linear[el];
            let slot = 9 * r * filled..9 * r * (filled + 1);
            let def = match tangent {
                Some(_) => self.element_gradient(el, q, &mut work.df[slot.clone()]),
                None => self.deformation_from(el, &work.displacement),
            };
            let p = match energy.as_deref_mut() {
                Some(e) => {
                    let (Some((w, p)), Some((w_lin, p_lin))) =
                        (law.energy_and_stress(&def), lin.energy_and_stress(&def))
                    else {
                        return false;
                    };
                    *e += weight * self.statics.elements[el].volume * (w - w_lin);
                    (p - p_lin) * volume
                }
                None => (law.stress(&def) - lin.stress(&def)) * volume,
            };
            let grads = &self.statics.elements[el].grads;
            for (a, &v) in self.statics.tets[el].iter().enumerate() {
                work.nodal_forces[v] += p * grads[a];
            }
            if tangent.is_none() {
                continue;
            }
            let df = &work.df[slot.clone()];
            let dp = &mut work.dp[slot];
            dp.fill(0.0);
            for (moduli, dp) in law
                .moduli_beyond_linear(&def)
                .iter()
                .zip(dp.chunks_exact_mut(r))
            {
                for (c, df) in moduli.iter().zip(df.chunks_exact(r)) {
                    let c = c * volume;
                    for (o, d) in dp.iter_mut().zip(df) {
                        *o += c * d;
                    }
                }
            }
            filled += 1;
            if filled == CHUNK {
                work.flush(r, filled);
                filled = 0;
            }
        }
        // Uᵀ of the nodal forces, each node's rows of U once (a node is in about 20
        // elements).
        for &v in &quadrature.nodes {
            let force = work.nodal_forces[v];
            for c in 0..3 {
                let shapes = &self.basis[(3 * v + c) * self.capacity..][..r];
                for (g, u) in gradient[..r].iter_mut().zip(shapes) {
                    *g += force[c] * u;
                }
            }
        }
        if let Some(t) = tangent {
            work.flush(r, filled);
            for j in 0..r {
                for k in 0..r {
                    let identity = if j == k { 1.0 } else { 0.0 };
                    t[j * r + k] = identity + 0.5 * (work.sum[(j, k)] + work.sum[(k, j)]);
                }
            }
            if let Some(offset) = &quadrature.offset {
                offset.add_tangent(t, r);
            }
        }
        if let Some(offset) = &quadrature.offset {
            offset.add_forces(q, gradient, energy);
        }
        true
    }
}

/// How much a Newton iteration on a kept tangent must shrink the residual for the
/// tangent to be kept for the next (a chord iteration); otherwise it is taken afresh at
/// the iterate, as after a line search that had to shorten the step. With 64 shapes a
/// tangent costs about 20 times the forces alone (dF, C dF and the 9r² product per
/// element, against two passes over U's rows at its nodes).
const CHORD_CONTRACTION: f64 = 0.1;

/// Most iterations in a row on one tangent. Chord iterations converge linearly; where
/// the relative tolerance has no floor (released to rest: the forces themselves go to
/// zero) only Newton's quadratic convergence reaches the solution.
const CHORD_ITERATIONS: usize = 4;

/// How much an iteration on a kept tangent must shrink the residual for a patient
/// solve ([`Tangent::patient`]) to keep it. A tangent from the correction thread is a
/// few model steps old, and the shapes joined since are bordered by their linear
/// stiffness: its chord iterations converge linearly, each a pass of the forces alone,
/// where a tangent taken in step costs 20–30 of them on the 5 mm block.
const PATIENT_CONTRACTION: f64 = 0.5;

/// Most iterations in a row on one tangent in a patient solve.
const PATIENT_ITERATIONS: usize = 12;

/// Elements whose tangent shares one matrix product sums ([`ReducedStatics::accumulate`]).
const CHUNK: usize = 32;

/// The shapes a basis's mirror lacks ([`ReducedStatics::basis_update`]).
pub(super) struct BasisUpdate {
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
    pub(super) fn restarts(&self) -> u64 {
        self.restarts
    }
}

/// What a reduced solve ends with.
pub(super) struct StepEnd {
    /// How Newton's method went.
    pub report: NewtonReport,
    /// Π at the solution (J).
    pub potential: f64,
    /// ∇Π − Aᵀλ there, per coordinate (√J): zero on the static coordinates, ∇G on the
    /// dynamic ones.
    pub gradient: Vec<f64>,
}

/// The reduced tangent UᵀK_T U a solve starts from and leaves behind: Newton's method
/// keeps a tangent while its steps converge fast enough ([`CHORD_CONTRACTION`]), so the
/// next solve (the step's next active set, the next model step) starts from the last
/// one's, the shapes appended since bordered by their linear stiffness (UᵀKU = I).
#[derive(Clone, Debug, Default)]
pub(super) struct Tangent {
    /// UᵀK_T U (N/m, row-major r × r).
    pub(super) values: Vec<f64>,
    /// r: the basis's first r shapes it was taken over.
    pub(super) shapes: usize,
    /// The basis's restarts when it was taken.
    pub(super) restarts: u64,
    /// The [`ReducedStatics::revision`] it was taken in (`None`: none taken yet).
    pub(super) revision: Option<u64>,
    /// Whether it was taken at the state the last solve ended on.
    pub(super) at_solution: bool,
    /// Whether tangents arrive from the correction thread ([`super::background`]): a
    /// solve then keeps one while it converges at all ([`PATIENT_CONTRACTION`],
    /// [`PATIENT_ITERATIONS`]) rather than take one in step.
    pub(super) patient: bool,
}

impl Tangent {
    /// Keeps it over the basis's first `r` shapes only (r ≤ its own).
    pub(super) fn truncate(&mut self, r: usize) {
        let rt = self.shapes;
        if r >= rt {
            return;
        }
        let mut values = Vec::with_capacity(r * r);
        for i in 0..r {
            values.extend_from_slice(&self.values[i * rt..][..r]);
        }
        self.values = values;
        self.shapes = r;
    }

    /// Extends it to the basis's first `r` shapes (r ≥ its own), the shapes it lacks
    /// bordered by their linear stiffness (UᵀKU = I).
    pub(super) fn border(&mut self, r: usize) {
        let rt = self.shapes;
        if r <= rt {
            return;
        }
        let mut values = vec![0.0; r * r];
        for i in 0..r {
            values[i * r + i] = 1.0;
        }
        for i in 0..rt {
            values[i * r..][..rt].copy_from_slice(&self.values[i * rt..][..rt]);
        }
        self.values = values;
        self.shapes = r;
    }
}

/// Scratch of a reduced solve (r shapes, the mesh's nodes).
struct Work {
    /// The shapes' dF in up to [`CHUNK`] elements, each element's 9 rows of r values
    /// ([`ReducedStatics::element_gradient`]) after the last's: column-major r × 9·CHUNK.
    df: Vec<f64>,
    /// (C − C_lin) dF times the weighted volume in the same layout (N·m: the tangent's
    /// shares are df dpᵀ).
    dp: Vec<f64>,
    /// The tangent's element shares summed so far (r × r, N/m).
    sum: Mat<f64>,
    /// Uᵀf_int at the iterate (N).
    gradient: Vec<f64>,
    /// Uᵀf_int at a line-search trial (N).
    trial_gradient: Vec<f64>,
    /// UᵀK_T U at the iterate (N/m, row-major).
    tangent: Vec<f64>,
    /// U q at the quadrature's nodes (m; one entry per node of the mesh).
    displacement: Vec<Vec3>,
    /// The quadrature's elements' forces beyond linear, summed per node (N).
    nodal_forces: Vec<Vec3>,
}

impl Work {
    fn new(r: usize, nodes: usize) -> Self {
        Self {
            displacement: vec![Vec3::zeros(); nodes],
            nodal_forces: vec![Vec3::zeros(); nodes],
            df: vec![0.0; 9 * r * CHUNK],
            dp: vec![0.0; 9 * r * CHUNK],
            sum: Mat::zeros(r, r),
            gradient: vec![0.0; r],
            trial_gradient: vec![0.0; r],
            tangent: vec![0.0; r * r],
        }
    }

    /// Adds the first `filled` elements' tangent shares to `sum` (r shapes).
    fn flush(&mut self, r: usize, filled: usize) {
        if filled == 0 {
            return;
        }
        let (len, columns) = (9 * r * filled, 9 * filled);
        matmul(
            self.sum.as_mut(),
            Accum::Add,
            MatRef::from_column_major_slice(&self.df[..len], r, columns),
            MatRef::from_column_major_slice(&self.dp[..len], r, columns).transpose(),
            1.0,
            Par::Seq,
        );
    }
}

/// The constraint's force per unit multiplier as a DOF vector (N).
fn constraint_force(c: &LinearConstraint, n: usize) -> Result<Vec<f64>, NonlinearError> {
    let mut force = vec![0.0; n];
    for &(d, w) in &c.coefficients {
        check_dof(d, n)?;
        force[d] += w;
    }
    Ok(force)
}

/// A constraint's DOF index d must lie among the n DOFs.
fn check_dof(d: usize, n: usize) -> Result<(), NonlinearError> {
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

/// |q|.
fn size(q: &[f64]) -> f64 {
    q.iter().map(|x| x * x).sum::<f64>().sqrt()
}
