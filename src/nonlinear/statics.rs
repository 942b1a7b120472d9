//! The full nonlinear static FEM: the equilibrium f_int(u) = f_ext of a hyperelastic
//! tetrahedral mesh with prescribed displacements, by Newton's method with a backtracking
//! line search on the total potential energy Π(u) = Σₑ Vₑ W(Fₑ) − f_ext·u. Each iteration
//! assembles the consistent tangent ∂f_int/∂u into K's block pattern and solves it with
//! the sparse Cholesky [`Factor`] the linear solvers use. It is the ground truth for the
//! runtime nonlinear models and an offline tool.

use faer::sparse::{SparseColMat, SymbolicSparseColMat};
use faer::{Col, Par};

use super::line_search::{backtrack, Trial};
use super::{Hyperelastic, LawKind};
use crate::fem::{Factor, FemError, NodalPressure, TetElement};
use crate::mesh::TetMesh;
use crate::{Mat3, Vec3};

/// Why a nonlinear static solve failed.
#[derive(Debug, thiserror::Error)]
pub enum NonlinearError {
    /// The number of material laws does not match the mesh.
    #[error("{given} material laws for {tets} tetrahedra")]
    LawCount {
        /// Laws given.
        given: usize,
        /// Tetrahedra in the mesh.
        tets: usize,
    },
    /// A nodal array has the wrong length.
    #[error("{what}: {given} entries for {nodes} nodes")]
    NodeCount {
        /// Which array.
        what: &'static str,
        /// Entries given.
        given: usize,
        /// Nodes in the mesh.
        nodes: usize,
    },
    /// The starting displacement already inverts an element.
    #[error("tetrahedron {0} is inverted (det F <= 0) in the starting displacement")]
    Inverted(usize),
    /// No step along the Newton direction lowered the energy without inverting an element.
    #[error("line search failed at iteration {iteration} (residual {residual:e} N)")]
    LineSearch {
        /// Newton iteration (from 0).
        iteration: usize,
        /// Residual norm there (N).
        residual: f64,
    },
    /// Newton did not reach the tolerance.
    #[error("Newton did not converge in {iterations} iterations (residual {residual:e} N, tolerance {tolerance:e} N)")]
    NotConverged {
        /// Iterations run.
        iterations: usize,
        /// Last residual norm (N).
        residual: f64,
        /// Tolerance (N).
        tolerance: f64,
    },
    /// A contact problem is ill-posed or its active set did not settle.
    #[error("{0}")]
    Contact(String),
    /// Nodal-averaged pressure was asked for with a large-strain law.
    #[error("nodal pressure needs the linear law, and tetrahedron {0} has a large-strain law")]
    NodalPressureLaw(usize),
    /// A reduced basis already holds as many shapes as it has room for.
    #[error("the reduced basis is full ({0} shapes)")]
    BasisFull(usize),
    /// The tangent could not be factorised even with regularisation.
    #[error(transparent)]
    Fem(#[from] FemError),
}

/// Newton's stopping rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewtonOptions {
    /// Converged when ‖r‖ ≤ `relative` × (‖f_ext‖ + ‖reactions‖) (dimensionless).
    pub relative: f64,
    /// Iteration limit.
    pub max_iterations: usize,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self {
            relative: 1e-10,
            max_iterations: 50,
        }
    }
}

/// One linear equality constraint on the displacement, cᵀu = value, held by a force
/// λ c on the body.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearConstraint {
    /// (DOF index 3·node + axis, coefficient c_d) pairs (dimensionless weights).
    pub coefficients: Vec<(usize, f64)>,
    /// Target of cᵀu (m).
    pub value: f64,
    /// λ (N): the starting guess on input, the constraint force's magnitude on output.
    pub multiplier: f64,
}

/// How a solve went.
#[derive(Clone, Debug, PartialEq)]
pub struct NewtonReport {
    /// ‖r‖ of the free DOFs before each iteration and at the end (N).
    pub residuals: Vec<f64>,
    /// Step length the line search took in each iteration (1 = full Newton step).
    pub steps: Vec<f64>,
    /// Total potential energy at the solution (J).
    pub energy: f64,
}

/// A hyperelastic mesh with prescribed degrees of freedom, ready to solve.
#[derive(Clone, Debug)]
pub struct NonlinearStatics {
    pub(super) tets: Vec<[usize; 4]>,
    pub(super) rest: Vec<Vec3>,
    pub(super) elements: Vec<TetElement>,
    pub(super) laws: Vec<Hyperelastic>,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    /// Position of node a in node b's block column, per tetrahedron and (a, b).
    slot: Vec<[[usize; 4]; 4]>,
    /// Whether each DOF (3·node + axis) is prescribed.
    pub(super) prescribed: Vec<bool>,
    /// The nodes' volumetric energy, when the elements carry only their deviatoric part.
    pressure: Option<NodalPressure>,
}

impl NonlinearStatics {
    /// The problem on `mesh` with one law per tetrahedron; `prescribed[3·v + axis]` marks
    /// the DOFs whose displacement the caller sets (fixed at their value in `u`).
    pub fn new(
        mesh: &TetMesh,
        laws: Vec<Hyperelastic>,
        prescribed: Vec<bool>,
    ) -> Result<Self, NonlinearError> {
        let n = mesh.nodes.len();
        if laws.len() != mesh.tets.len() {
            return Err(NonlinearError::LawCount {
                given: laws.len(),
                tets: mesh.tets.len(),
            });
        }
        if prescribed.len() != 3 * n {
            return Err(NonlinearError::NodeCount {
                what: "prescribed DOF mask (3 per node)",
                given: prescribed.len(),
                nodes: n,
            });
        }
        let elements: Vec<TetElement> = mesh
            .tets
            .iter()
            .map(|t| TetElement::new(t.map(|v| mesh.nodes[v])))
            .collect();
        Ok(Self::with_pattern(mesh, elements, laws, prescribed, None))
    }

    /// The same problem with nodal-averaged pressure ([`NodalPressure`]): each
    /// tetrahedron keeps only its deviatoric energy and the nodes carry the volumetric
    /// one, which removes volumetric locking. Only for the linear law: an error names
    /// the first tetrahedron with a large-strain law.
    pub fn with_nodal_pressure(self, mesh: &TetMesh) -> Result<Self, NonlinearError> {
        if let Some(e) = self.laws.iter().position(|l| l.kind != LawKind::Linear) {
            return Err(NonlinearError::NodalPressureLaw(e));
        }
        let bulk: Vec<f64> = self.laws.iter().map(|l| l.kappa).collect();
        let pressure = NodalPressure::new(mesh, &self.elements, &bulk);
        let deviatoric = self
            .laws
            .iter()
            .map(|l| Hyperelastic {
                lambda: -2.0 * l.mu / 3.0,
                kappa: 0.0,
                ..*l
            })
            .collect();
        Ok(Self::with_pattern(
            mesh,
            self.elements,
            deviatoric,
            self.prescribed,
            Some(pressure),
        ))
    }

    /// Builds the block pattern: the nodes sharing a tetrahedron, and with `pressure`
    /// also those coupled through a node's support.
    fn with_pattern(
        mesh: &TetMesh,
        elements: Vec<TetElement>,
        laws: Vec<Hyperelastic>,
        prescribed: Vec<bool>,
        pressure: Option<NodalPressure>,
    ) -> Self {
        let n = mesh.nodes.len();
        let mut blocks: Vec<Vec<usize>> = match &pressure {
            Some(p) => p.couplings(),
            None => (0..n).map(|v| vec![v]).collect(),
        };
        for tet in &mesh.tets {
            for &a in tet {
                blocks[a].extend_from_slice(tet);
            }
        }
        for list in &mut blocks {
            list.sort_unstable();
            list.dedup();
        }
        let mut col_ptr = Vec::with_capacity(3 * n + 1);
        let mut row_idx = Vec::new();
        col_ptr.push(0);
        for list in &blocks {
            for _ in 0..3 {
                row_idx.extend(list.iter().flat_map(|&i| [3 * i, 3 * i + 1, 3 * i + 2]));
                col_ptr.push(row_idx.len());
            }
        }
        let slot = mesh
            .tets
            .iter()
            .map(|tet| {
                let mut s = [[0; 4]; 4];
                for (b, &nb) in tet.iter().enumerate() {
                    for (a, &na) in tet.iter().enumerate() {
                        s[a][b] = blocks[nb].partition_point(|&r| r < na);
                    }
                }
                s
            })
            .collect();
        Self {
            tets: mesh.tets.clone(),
            rest: mesh.nodes.clone(),
            elements,
            laws,
            col_ptr,
            row_idx,
            slot,
            prescribed,
            pressure,
        }
    }

    /// Whether the volumetric strain is averaged over the nodes
    /// ([`NonlinearStatics::with_nodal_pressure`]).
    pub fn has_nodal_pressure(&self) -> bool {
        self.pressure.is_some()
    }

    /// Deformation gradient of tetrahedron `e` under nodal displacements `u` (m).
    pub fn deformation_gradient(&self, e: usize, u: &[Vec3]) -> Mat3 {
        let el = &self.elements[e];
        Mat3::identity()
            + (0..4)
                .map(|a| u[self.tets[e][a]] * el.grads[a].transpose())
                .sum::<Mat3>()
    }

    /// Internal nodal forces f_int(u) = ∂(Σ V W)/∂u (N) of every node, prescribed ones
    /// included (their negatives are the reactions); `None` if an element is inverted.
    pub fn internal_forces(&self, u: &[Vec3]) -> Option<Vec<Vec3>> {
        let mut f = vec![Vec3::zeros(); self.rest.len()];
        for (e, (tet, el)) in self.tets.iter().zip(&self.elements).enumerate() {
            let def = self.deformation_gradient(e, u);
            self.laws[e].energy_density(&def)?;
            let p = self.laws[e].stress(&def);
            for a in 0..4 {
                f[tet[a]] += p * el.grads[a] * el.volume;
            }
        }
        if let Some(pressure) = &self.pressure {
            pressure.add_forces(u, &mut f);
        }
        Some(f)
    }

    /// Total potential energy Π = Σ V W(F) − f_ext·u (J); `None` if an element is
    /// inverted.
    pub fn energy(&self, u: &[Vec3], loads: &[Vec3]) -> Option<f64> {
        let mut w = 0.0;
        for (e, el) in self.elements.iter().enumerate() {
            w += el.volume * self.laws[e].energy_density(&self.deformation_gradient(e, u))?;
        }
        if let Some(pressure) = &self.pressure {
            w += pressure.energy(u);
        }
        Some(w - loads.iter().zip(u).map(|(f, x)| f.dot(x)).sum::<f64>())
    }

    /// The consistent tangent ∂f_int/∂u (N/m) over all DOFs, prescribed rows and columns
    /// replaced by the identity so the system stays symmetric positive definite.
    pub fn tangent(&self, u: &[Vec3]) -> SparseColMat<usize, f64> {
        let mut values = vec![0.0; self.row_idx.len()];
        for (e, (tet, el)) in self.tets.iter().zip(&self.elements).enumerate() {
            let def = self.deformation_gradient(e, u);
            let law = &self.laws[e];
            for (b, &nb) in tet.iter().enumerate() {
                for c in 0..3 {
                    let mut df = Mat3::zeros();
                    df.set_row(c, &el.grads[b].transpose());
                    let dp = law.stress_differential(&def, &df) * el.volume;
                    let column = self.col_ptr[3 * nb + c];
                    for a in 0..4 {
                        let block = dp * el.grads[a];
                        let base = column + 3 * self.slot[e][a][b];
                        for r in 0..3 {
                            values[base + r] += block[r];
                        }
                    }
                }
            }
        }
        if let Some(pressure) = &self.pressure {
            pressure.for_each_block(|i, j, block| {
                let first = self.col_ptr[3 * j];
                let rows = &self.row_idx[first..self.col_ptr[3 * j + 1]];
                let offset = rows.partition_point(|&r| r < 3 * i);
                for c in 0..3 {
                    let base = self.col_ptr[3 * j + c] + offset;
                    for r in 0..3 {
                        values[base + r] += block[(r, c)];
                    }
                }
            });
        }
        for (col, window) in self.col_ptr.windows(2).enumerate() {
            let rows = &self.row_idx[window[0]..window[1]];
            for (value, &row) in values[window[0]..window[1]].iter_mut().zip(rows) {
                if self.prescribed[col] || self.prescribed[row] {
                    *value = if row == col { 1.0 } else { 0.0 };
                }
            }
        }
        let n = 3 * self.rest.len();
        let symbolic = SymbolicSparseColMat::new_checked(
            n,
            n,
            self.col_ptr.clone(),
            None,
            self.row_idx.clone(),
        );
        SparseColMat::new(symbolic, values)
    }

    /// Solves f_int(u) = `loads` (N per node) for the free DOFs, starting from `u` (m),
    /// whose prescribed DOFs hold their prescribed values and are left unchanged.
    pub fn solve(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        options: &NewtonOptions,
    ) -> Result<NewtonReport, NonlinearError> {
        self.solve_constrained(u, loads, None, options)
    }

    /// [`NonlinearStatics::solve`] with one linear equality constraint cᵀu = value
    /// (e.g. a probe's weighted patch pressed to a depth) enforced by a Lagrange
    /// multiplier: f_int(u) = loads + λ c, λ returned in `constraint.multiplier`.
    pub fn solve_constrained(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        constraint: Option<&mut LinearConstraint>,
        options: &NewtonOptions,
    ) -> Result<NewtonReport, NonlinearError> {
        match constraint {
            Some(c) => self.solve_with_constraints(u, loads, std::slice::from_mut(c), options),
            None => self.solve_with_constraints(u, loads, &mut [], options),
        }
    }

    /// [`NonlinearStatics::solve`] with linear equality constraints cₖᵀu = valueₖ (e.g. the
    /// nodes a sphere probe holds, each along its normal), enforced by Lagrange
    /// multipliers: f_int(u) = loads + Σₖ λₖ cₖ, each λₖ returned in its constraint's
    /// `multiplier` (its input is the starting guess). Each Newton iteration solves the
    /// tangent against the residual and the k constraint directions together and the
    /// k × k Schur complement for the multipliers' change.
    pub fn solve_with_constraints(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        constraints: &mut [LinearConstraint],
        options: &NewtonOptions,
    ) -> Result<NewtonReport, NonlinearError> {
        self.solve_reusing(u, loads, constraints, options, &mut None)
    }

    /// [`NonlinearStatics::solve_with_constraints`] keeping the tangent's factorisation
    /// in `factor` for the next call: where every law is linear the tangent is K, so
    /// one factorisation serves every solve (a sphere press's active-set rounds).
    pub(super) fn solve_reusing(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        constraints: &mut [LinearConstraint],
        options: &NewtonOptions,
        factor: &mut Option<Factor>,
    ) -> Result<NewtonReport, NonlinearError> {
        let n = self.rest.len();
        for (what, len) in [("displacement", u.len()), ("loads", loads.len())] {
            if len != n {
                return Err(NonlinearError::NodeCount {
                    what,
                    given: len,
                    nodes: n,
                });
            }
        }
        let k = constraints.len();
        // The constraints' directions over the free DOFs (N per unit multiplier), as the
        // columns of C.
        let mut c = faer::Mat::<f64>::zeros(3 * n, k);
        for (j, constraint) in constraints.iter().enumerate() {
            for &(d, w) in &constraint.coefficients {
                if d >= 3 * n {
                    return Err(NonlinearError::NodeCount {
                        what: "constraint DOF index (3 per node)",
                        given: d,
                        nodes: n,
                    });
                }
                if !self.prescribed[d] {
                    c[(d, j)] += w;
                }
            }
        }
        // C's columns as (free DOF, weight) lists: each touches a few DOFs, so Cᵀx, the
        // Schur complement CᵀZ and the loads λC are short sums over those, not dense
        // products over every DOF (k × 3n × k flops for CᵀZ: 6·10¹⁰ for the 500 rows of a
        // 1 cm sphere on an 80 k-DOF mesh).
        let columns: Vec<Vec<(usize, f64)>> = constraints
            .iter()
            .enumerate()
            .map(|(j, constraint)| {
                let mut dofs: Vec<usize> =
                    constraint.coefficients.iter().map(|&(d, _)| d).collect();
                dofs.sort_unstable();
                dofs.dedup();
                dofs.into_iter()
                    .filter(|&d| c[(d, j)] != 0.0)
                    .map(|d| (d, c[(d, j)]))
                    .collect()
            })
            .collect();
        let ct = |j: usize, x: &dyn Fn(usize) -> f64| -> f64 {
            columns[j].iter().map(|&(d, w)| w * x(d)).sum()
        };
        let effective = |lambda: &[f64]| -> Vec<Vec3> {
            let mut f = loads.to_vec();
            for (column, &l) in columns.iter().zip(lambda) {
                for &(d, w) in column {
                    f[d / 3][d % 3] += w * l;
                }
            }
            f
        };
        let gaps = |u: &[Vec3]| -> Vec<f64> {
            (0..k)
                .map(|j| constraints[j].value - ct(j, &|d| u[d / 3][d % 3]))
                .collect()
        };
        let mut lambda: Vec<f64> = constraints.iter().map(|k| k.multiplier).collect();
        let mut applied = effective(&lambda);
        let mut energy = self
            .energy(u, &applied)
            .ok_or_else(|| NonlinearError::Inverted(self.first_inverted(u)))?;
        let mut report = NewtonReport {
            residuals: Vec::new(),
            steps: Vec::new(),
            energy,
        };
        let mut trial = u.to_vec();
        for iteration in 0..=options.max_iterations {
            let f_int = self.internal_forces(u).expect("checked by the energy");
            let (residual, scale) = self.residual(&f_int, &applied);
            let gap = gaps(u);
            let norm = residual.norm_l2();
            report.residuals.push(norm);
            let tolerance = options.relative * scale;
            let on_constraints = constraints
                .iter()
                .zip(&gap)
                .all(|(k, g)| g.abs() <= options.relative * k.value.abs().max(1e-12));
            if norm <= tolerance && on_constraints {
                report.energy = energy;
                for (k, l) in constraints.iter_mut().zip(&lambda) {
                    k.multiplier = *l;
                }
                return Ok(report);
            }
            if iteration == options.max_iterations {
                return Err(NonlinearError::NotConverged {
                    iterations: iteration,
                    residual: norm,
                    tolerance,
                });
            }
            let factor = self.factor_tangent(u, factor)?;
            let mut step = -residual.clone();
            factor.solve_in_place(step.as_mat_mut())?;
            if k > 0 {
                // δ = δ₀ + Z Δλ with Z = K⁻¹C, Δλ from Cᵀ(u + δ) = values:
                // (CᵀZ) Δλ = gap − Cᵀδ₀.
                let mut z = c.clone();
                factor.solve_in_place(z.as_mut())?;
                let schur = faer::Mat::<f64>::from_fn(k, k, |i, j| ct(i, &|d| z[(d, j)]));
                let rhs = faer::Col::<f64>::from_fn(k, |j| gap[j] - ct(j, &|d| step[d]));
                let dlambda = faer::linalg::solvers::Solve::solve(&schur.partial_piv_lu(), &rhs);
                step += &z * &dlambda;
                for (l, d) in lambda.iter_mut().zip(dlambda.iter()) {
                    *l += d;
                }
                applied = effective(&lambda);
                energy = self.energy(u, &applied).expect("checked above");
            }
            let (residual, _) = self.residual(&f_int, &applied);
            let slope = residual.transpose() * &step;
            let searched = backtrack(energy, slope, |at| match at {
                Trial::At(alpha) => {
                    for (v, t) in trial.iter_mut().enumerate() {
                        *t =
                            u[v] + Vec3::new(step[3 * v], step[3 * v + 1], step[3 * v + 2]) * alpha;
                    }
                    self.energy(&trial, &applied)
                }
                Trial::Slope => self.slope_along(&trial, &applied, &step),
            });
            let Some((alpha, e)) = searched else {
                return Err(NonlinearError::LineSearch {
                    iteration,
                    residual: norm,
                });
            };
            energy = e;
            report.steps.push(alpha);
            u.copy_from_slice(&trial);
        }
        unreachable!("the loop returns at max_iterations")
    }

    /// Free-DOF residual f_int − f_ext (zero on prescribed DOFs) and the force scale
    /// ‖f_ext‖ + ‖reactions‖ (N) its tolerance is relative to.
    fn residual(&self, f_int: &[Vec3], loads: &[Vec3]) -> (Col<f64>, f64) {
        let mut r = Col::zeros(3 * f_int.len());
        let (mut ext, mut reaction) = (0.0, 0.0);
        for (v, (fi, fe)) in f_int.iter().zip(loads).enumerate() {
            for c in 0..3 {
                let d = 3 * v + c;
                if self.prescribed[d] {
                    reaction += fi[c] * fi[c];
                } else {
                    r[d] = fi[c] - fe[c];
                    ext += fe[c] * fe[c];
                }
            }
        }
        (r, ext.sqrt() + reaction.sqrt())
    }

    /// Factorises the tangent at `u` into `cached` (the ordering and symbolic analysis
    /// of the first call are reused: every tangent has K's pattern; on the 5 mm block,
    /// 10,584 DOFs, `palpa indent --full` of a Veronda–Westmann γ = 5 curve, 21
    /// iterations, took 4.00 s with a fresh AMD and symbolic analysis per iteration and
    /// 3.28 s reusing them, medians of 3); where it is not positive definite (an unstable
    /// state), the diagonal is raised until it is (a damped Newton step).
    fn factor_tangent<'a>(
        &self,
        u: &[Vec3],
        cached: &'a mut Option<Factor>,
    ) -> Result<&'a Factor, NonlinearError> {
        let constant = self.laws.iter().all(|l| l.kind == LawKind::Linear);
        if constant && cached.is_some() {
            return Ok(cached.as_ref().expect("checked"));
        }
        let mut k = self.tangent(u);
        let mean_diag = {
            let mut sum = 0.0;
            for (col, window) in self.col_ptr.windows(2).enumerate() {
                let rows = &self.row_idx[window[0]..window[1]];
                let p = window[0] + rows.partition_point(|&r| r < col);
                sum += k.val()[p];
            }
            sum / (3 * self.rest.len()) as f64
        };
        let mut shift = 0.0;
        loop {
            let context = "nonlinear tangent";
            let done = match cached {
                Some(factor) => factor.refactor(k.as_ref(), context),
                None => Factor::new(k.as_ref(), None, Par::Seq, context).map(|f| {
                    *cached = Some(f);
                }),
            };
            match done {
                Ok(()) => return Ok(cached.as_ref().expect("factorised above")),
                Err(FemError::NotPositiveDefinite { .. }) if shift < mean_diag => {
                    let add = if shift == 0.0 {
                        1e-8 * mean_diag
                    } else {
                        9.0 * shift
                    };
                    shift += add;
                    let (col_ptr, row_idx) = (&self.col_ptr, &self.row_idx);
                    let values = k.val_mut();
                    for (col, window) in col_ptr.windows(2).enumerate() {
                        let rows = &row_idx[window[0]..window[1]];
                        values[window[0] + rows.partition_point(|&r| r < col)] += add;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The slope δ·r of Π along `step` at `trial` under `loads` (J per unit step);
    /// `None` if an element is inverted there.
    fn slope_along(&self, trial: &[Vec3], loads: &[Vec3], step: &Col<f64>) -> Option<f64> {
        let f_int = self.internal_forces(trial)?;
        let (r, _) = self.residual(&f_int, loads);
        Some((0..r.nrows()).map(|d| r[d] * step[d]).sum())
    }

    /// The first tetrahedron inverted (det F ≤ 0) under `u` (0 if none).
    pub(super) fn first_inverted(&self, u: &[Vec3]) -> usize {
        (0..self.tets.len())
            .find(|&e| {
                self.laws[e]
                    .energy_density(&self.deformation_gradient(e, u))
                    .is_none()
            })
            .unwrap_or(0)
    }
}
