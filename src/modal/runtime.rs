//! The modal tissue backend: k exact oscillators, point constraints solved through
//! the small dense system of the modal paper (eqs. 13–16), residual flexibility at the
//! constrained points, and displaced positions on demand.
//!
//! Per step with transitions (Φᵢ, Γᵢ) for the step h, each constraint row i (direction
//! dᵢ at a material point pᵢ with weights w) reads the modes through
//! aᵢ = Σ_v w_v dᵢᵀ W̄_v (a row of W̄ψ) and applies its force through aᵢᵀ (a column of
//! W̄φᵀ, φ = ψ). The row value at the end of the step is affine in the forces f:
//!
//! * position: aᵢ·(Φz)_z + Σⱼ [Σ_m aᵢₘ Γ_z,m aⱼₘ + residual] fⱼ (eq. 15 with the exact
//!   zero-order-hold response Γ_z in place of the seed's S Δt²/2),
//! * velocity: aᵢ·(Φz)_ż + Σⱼ Σ_m aᵢₘ Γ_ż,m aⱼₘ fⱼ (eq. 14),
//! * acceleration: z̈ = g − c ż − λ z at the end of the step (eq. 13).
//!
//! The force that makes every row hit its target is what the probe feels. The rows,
//! S and its factorisation depend only on where and along what the constraints act
//! and on the step, not on the targets or the state: while those stay the same (held
//! or dragged points) a step costs the right-hand side and two triangular solves.
//!
//! **Residual flexibility.** Truncated modes are too stiff under a point load. For
//! position rows the quasi-static displacement of the missing modes,
//! R = K⁻¹ − W̄ Λ⁻¹ W̄ᵀ, is added in series: S gains dᵢᵀ C(pᵢ, pⱼ) dⱼ − Σ_m aᵢₘ aⱼₘ / λ_m
//! with C from the K⁻¹ columns of the constrained nodes (the on-demand column cache
//! shared with the condensed backend). As h grows Γ_z → 1/λ and S → U K⁻¹ Uᵀ: the static
//! stiffness is exactly that of the full FEM model. Displaced positions add the same
//! residual field, rest + W̄ (z − Λ⁻¹ W̄ᵀ F) + K⁻¹ F for the last step's loads F (contact
//! forces and point loads), so the drawn surface follows the probe tip. While a newly
//! contacted node's K⁻¹ columns are being completed, K⁻¹ F of its load is known only at
//! cached nodes (the contact patch); nodes never contacted keep that load's modal part
//! W̄ Λ⁻¹ W̄ᵀ f instead of its residual, so each node sees the modal part it subtracts
//! matched by the K⁻¹ part it adds.
//!
//! **Point loads.** External loads held by [`TissueModel::set_loads`] (force F at a
//! material point l with weights w) act through their modal force g_L = W̄ᵀ(w F), held
//! over every step beside the constraint forces: the free trajectory (z_free, ż_free)
//! already carries it, so every kind of row sees the loads' modal response, and
//! acceleration rows also add g_L to z̈. With residual flexibility, position rows
//! subtract the loads' residual displacement at their point,
//! dᵢ · (C(pᵢ, l) F − aᵢ · Λ⁻¹ g_L), and the loads' nodal forces join the last step's
//! loads (whatever the rows' kind: the residual is quasi-static), so h, the residual
//! field and the pending-load bookkeeping above treat them exactly like constraint
//! forces. Under a constant load the damped model settles on z = Λ⁻¹ g_L = h and the
//! field on K⁻¹ F, the full FEM static response.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use super::oscillator::{ModeTransition, Oscillators};
use super::residual::ResidualColumns;
use crate::fem::{ColumnError, ComplianceColumns, Support, MAX_SUPPORT_NODES};
use crate::tissue::{
    add_point_compliance, push_nodal_loads, validate_step, ConstraintKind, ConstraintRows,
    HeldLoads, ModelError, PointConstraint, PointLoad, TissueGeometry, TissueModel,
};
use crate::{Mat3, Vec3};

/// Runtime settings of the modal backend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModalParams {
    /// Rayleigh stiffness-proportional damping α₁ (s).
    pub alpha1: f64,
    /// Rayleigh mass-proportional damping α₂ (1/s).
    pub alpha2: f64,
    /// Fixed model step the transitions are precomputed for (s).
    pub dt: f64,
    /// Largest number of constraint rows in one step (3 per held point, 1 per contact),
    /// and of point loads held at once.
    pub max_rows: usize,
}

impl Default for ModalParams {
    fn default() -> Self {
        Self {
            alpha1: 1e-3,
            alpha2: 2.0,
            dt: 5e-3,
            max_rows: 192,
        }
    }
}

/// The modal tissue model.
pub struct ModalRuntime {
    geometry: TissueGeometry,
    k: usize,
    /// W̄, row-major 3·n_nodes × k: row 3v + axis holds mode values of node v.
    w_bar: Vec<f64>,
    /// 1/λ for elastic modes, 0 for rigid ones (they have no static compliance).
    inv_lambda: Vec<f64>,
    osc: Oscillators,
    residual: Option<ResidualColumns>,
    /// Nodal forces of the last step's constraints and point loads (node, N), for the
    /// residual field (empty without residual flexibility).
    loads: Vec<(usize, Vec3)>,
    /// The external point loads held from step to step.
    point_loads: HeldLoads,
    /// W̄ᵀ F of the held point loads: their modal force (N per unit modal coordinate,
    /// k entries), held over every step.
    g_load: Vec<f64>,
    /// Λ⁻¹ W̄ᵀ F of the held point loads: their static modal coordinates (k entries).
    h_load: Vec<f64>,
    /// Λ⁻¹ W̄ᵀ F of `loads`: the modal part the residual field subtracts.
    h: Vec<f64>,
    trans: Vec<ModeTransition>,
    z_free: Vec<f64>,
    /// Scratch: z − h for displacements.
    z_eff: Vec<f64>,
    /// Scratch: Λ⁻¹ W̄ᵀ F of the loads whose K⁻¹ columns are still being completed.
    h_pending: Vec<f64>,
    /// Scratch: z − h + `h_pending`, for nodes that get no residual from those loads.
    z_eff_far: Vec<f64>,
    /// Largest displacement norm of each mode over the surface nodes (m per unit z).
    mode_max: Vec<f64>,
    zd_free: Vec<f64>,
    g: Vec<f64>,
    resp: Vec<f64>,
    /// resp − Λ⁻¹ for position rows with residual flexibility, else resp.
    resp_eff: Vec<f64>,
    rows: Vec<f64>,
    /// Rows scaled by `resp_eff`, for S = scaled · rowsᵀ.
    rows_scaled: Vec<f64>,
    /// The constraints (targets aside) and step that `rows`, `s` and the solver's
    /// factorisation were built for.
    system_for: Vec<PointConstraint>,
    system_dt: f64,
    /// Row layout, S, r, f and the solver of the constraint system.
    system: ConstraintRows,
}

impl ModalRuntime {
    /// Builds the runtime from the rest shape and surface, the modes (λ in 1/s², mass-normalised shapes with
    /// 3·n_nodes rows, fixed rows zero) and, for residual flexibility, a K⁻¹ column
    /// cache (needs a clamped body: every λ > 0).
    pub fn new(
        geometry: TissueGeometry,
        lambda: &[f64],
        shapes: MatRef<'_, f64>,
        params: ModalParams,
        residual: Option<ComplianceColumns>,
    ) -> Result<Self, ModelError> {
        let residual = residual.map(ResidualColumns::from);
        Self::with_residual(geometry, lambda, shapes, params, residual)
    }

    /// [`Self::new`] with the K⁻¹ column cache possibly still being built
    /// ([`ResidualColumns::building`]): the first step waits for it.
    pub fn with_residual(
        geometry: TissueGeometry,
        lambda: &[f64],
        shapes: MatRef<'_, f64>,
        params: ModalParams,
        residual: Option<ResidualColumns>,
    ) -> Result<Self, ModelError> {
        let n = geometry.rest.len();
        let k = lambda.len();
        if k == 0 {
            return Err(ModelError::Setup(
                "the modal basis has no modes: nothing would move".into(),
            ));
        }
        if shapes.nrows() != 3 * n || shapes.ncols() != k {
            return Err(ModelError::BadConstraint {
                index: 0,
                msg: format!(
                    "mode shapes are {}×{}, expected {}×{k}",
                    shapes.nrows(),
                    shapes.ncols(),
                    3 * n
                ),
            });
        }
        if !(params.dt > 0.0 && params.dt.is_finite()) {
            return Err(ModelError::InvalidStep(params.dt));
        }
        let scale = lambda.iter().fold(0.0f64, |m, l| m.max(l.abs()));
        let rigid = |l: f64| l.abs() <= 1e-8 * scale;
        if residual.is_some() && lambda.iter().any(|&l| rigid(l)) {
            return Err(ModelError::Setup(
                "residual flexibility needs a clamped body, but a rigid-body mode is present"
                    .into(),
            ));
        }
        let mut w_bar = vec![0.0; 3 * n * k];
        for r in 0..3 * n {
            for m in 0..k {
                w_bar[r * k + m] = shapes[(r, m)];
            }
        }
        let mut mode_max = vec![0.0f64; k];
        for &v in &geometry.surface_nodes {
            for (m, mm) in mode_max.iter_mut().enumerate() {
                let u = Vec3::new(
                    shapes[(3 * v, m)],
                    shapes[(3 * v + 1, m)],
                    shapes[(3 * v + 2, m)],
                );
                *mm = mm.max(u.norm());
            }
        }
        let lambda_clamped: Vec<f64> = lambda.iter().map(|&l| l.max(0.0)).collect();
        let inv_lambda = lambda
            .iter()
            .map(|&l| if rigid(l) { 0.0 } else { 1.0 / l })
            .collect();
        let rows = params.max_rows;
        Ok(Self {
            geometry,
            k,
            w_bar,
            inv_lambda,
            osc: Oscillators::new(&lambda_clamped, params.alpha1, params.alpha2, params.dt),
            residual,
            // Each constraint row and each load on at most MAX_SUPPORT_NODES nodes.
            loads: Vec::with_capacity(2 * rows * MAX_SUPPORT_NODES),
            point_loads: HeldLoads::new(rows),
            g_load: vec![0.0; k],
            h_load: vec![0.0; k],
            h: vec![0.0; k],
            trans: vec![ModeTransition::new(0.0, 0.0, params.dt); k],
            z_free: vec![0.0; k],
            z_eff: vec![0.0; k],
            h_pending: vec![0.0; k],
            z_eff_far: vec![0.0; k],
            mode_max,
            zd_free: vec![0.0; k],
            g: vec![0.0; k],
            resp: vec![0.0; k],
            resp_eff: vec![0.0; k],
            rows: vec![0.0; rows * k],
            rows_scaled: vec![0.0; rows * k],
            system_for: Vec::with_capacity(rows),
            system_dt: f64::NAN,
            system: ConstraintRows::new(rows),
        })
    }

    /// Number of modes k.
    pub fn n_modes(&self) -> usize {
        self.k
    }

    /// The modal oscillators (state z, ż).
    pub fn oscillators(&self) -> &Oscillators {
        &self.osc
    }

    /// Sets the modal state directly (initial conditions); the held point loads stay and
    /// act from the next step.
    pub fn set_state(&mut self, z: &[f64], zd: &[f64]) {
        self.osc.set_state(z, zd);
        self.loads.clear();
        self.h.fill(0.0);
    }

    /// The K⁻¹ column cache, if residual flexibility is on, waiting for it to be built
    /// (`None` too if its build failed: the next step reports why).
    pub fn columns(&mut self) -> Option<&mut ComplianceColumns> {
        self.residual.as_mut()?.wait().ok()
    }

    /// The K⁻¹ column cache, read-only, if residual flexibility is on and it is built.
    pub fn columns_ref(&self) -> Option<&ComplianceColumns> {
        self.residual.as_ref()?.ready()
    }

    /// Waits for the K⁻¹ column cache to be built (K factorised), if residual flexibility
    /// is on; an error if its build failed.
    pub fn wait_for_columns(&mut self) -> Result<(), ModelError> {
        match self.residual.as_mut() {
            Some(residual) => residual.wait().map(|_| ()),
            None => Ok(()),
        }
    }

    /// Completes K⁻¹ columns on a worker thread
    /// ([`ComplianceColumns::complete_in_background`]), once they are built.
    pub fn complete_columns_in_background(&mut self) -> Result<(), ColumnError> {
        self.residual
            .as_mut()
            .map_or(Ok(()), ResidualColumns::complete_in_background)
    }

    /// 1/λ per mode (s², 0 for a rigid mode): the static modal response per unit modal
    /// force.
    pub fn inverse_eigenvalues(&self) -> &[f64] {
        &self.inv_lambda
    }

    /// Nodal forces of the last step's constraints and point loads (node, N) whose
    /// K⁻¹ response is the residual field (empty without residual flexibility).
    pub fn last_loads(&self) -> &[(usize, Vec3)] {
        &self.loads
    }

    /// Modal coordinates q of the displaced shape, into `out` (length k): z − Λ⁻¹W̄ᵀF,
    /// the modal part that [`TissueModel::displacements`] sums; with residual
    /// flexibility the displaced surface is rest + W̄ q + the residual field of the last
    /// step's loads (contact forces and point loads). Loads whose K⁻¹ columns are still
    /// being completed stay in q (their residual is known at cached nodes only), so
    /// nodes never contacted need no correction from them.
    pub fn visual_coordinates(&self, out: &mut [f64]) {
        for ((o, z), h) in out.iter_mut().zip(self.osc.z()).zip(&self.h) {
            *o = z - h;
        }
        self.add_pending_modal(out);
    }

    /// What rest + W̄ q (q from [`Self::visual_coordinates`]) misses of
    /// [`TissueModel::displacements`] at mesh nodes `nodes`, into `out` (m): the residual
    /// field of the last step's loads (contact forces and point loads; zero without
    /// residual flexibility). The visual stream sends it as per-vertex corrections;
    /// computing it directly spares rebuilding every vertex's modal displacement only to
    /// subtract it again.
    pub fn residual_displacements(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        out.fill(Vec3::zeros());
        let pending = self.refresh_pending_modal();
        // Loads exist only after a step, which waited for the columns.
        let Some(cache) = self.residual.as_mut().and_then(ResidualColumns::poll) else {
            return;
        };
        if pending {
            // At cached nodes the exact field of a pending load replaces its modal
            // part, which q still carries.
            for (o, &v) in out.iter_mut().zip(nodes) {
                if cache.field_exact_at(v) {
                    *o -= node_modal(&self.w_bar, self.k, v, &self.h_pending);
                }
            }
        }
        cache.add_field(&self.loads, nodes, out);
    }

    /// Recomputes `h_pending` (Λ⁻¹W̄ᵀf of the loads still being completed); returns
    /// whether there are any.
    fn refresh_pending_modal(&mut self) -> bool {
        let mut h_pending = std::mem::take(&mut self.h_pending);
        h_pending.fill(0.0);
        let pending = self.add_pending_modal(&mut h_pending);
        self.h_pending = h_pending;
        pending
    }

    /// Adds Λ⁻¹W̄ᵀf of the last step's loads whose K⁻¹ columns are still being
    /// completed to `out` (length k); returns whether there were any.
    fn add_pending_modal(&self, out: &mut [f64]) -> bool {
        let Some(cache) = self.columns_ref() else {
            return false;
        };
        let k = self.k;
        let mut pending = false;
        for &(v, f) in self.loads.iter().filter(|(v, _)| !cache.is_complete(*v)) {
            pending = true;
            for axis in 0..3 {
                let r = 3 * v + axis;
                let row = &self.w_bar[r * k..(r + 1) * k];
                for ((o, w), il) in out.iter_mut().zip(row).zip(&self.inv_lambda) {
                    *o += w * f[axis] * il;
                }
            }
        }
        pending
    }

    /// Mode values of one node's `axis` (0 = x, 1 = y, 2 = z), one per mode (m per unit
    /// modal coordinate): row 3·node + axis of W̄.
    #[inline]
    pub fn mode_row(&self, node: usize, axis: usize) -> &[f64] {
        let r = 3 * node + axis;
        &self.w_bar[r * self.k..(r + 1) * self.k]
    }

    /// aᵢ = Σ_v w_v dᵀ W̄_v over the support's nodes into `out` (length k).
    fn point_row(w_bar: &[f64], k: usize, support: &Support, d: &Vec3, out: &mut [f64]) {
        out.fill(0.0);
        for (v, w) in support.iter() {
            for axis in 0..3 {
                let c = w * d[axis];
                if c != 0.0 {
                    let r = 3 * v + axis;
                    for (o, x) in out.iter_mut().zip(&w_bar[r * k..(r + 1) * k]) {
                        *o += c * x;
                    }
                }
            }
        }
    }
}

impl ModalRuntime {
    /// The modal part of the displacement bound (m): Σ_m (largest |W̄_u,m| over surface
    /// nodes) · |z − h|_m, plus for loads still being completed their modal part,
    /// which nodes outside the cache keep.
    fn modal_bound(&self) -> f64 {
        let k = self.k;
        let mut modal: f64 = (0..k)
            .map(|m| self.mode_max[m] * (self.osc.z()[m] - self.h[m]).abs())
            .sum();
        let Some(cache) = self.columns_ref() else {
            return modal;
        };
        for &(v, f) in self.loads.iter().filter(|(v, _)| !cache.is_complete(*v)) {
            let (rx, rest) = self.w_bar[3 * v * k..3 * (v + 1) * k].split_at(k);
            let (ry, rz) = rest.split_at(k);
            modal += (0..k)
                .map(|m| {
                    let wf = rx[m] * f.x + ry[m] * f.y + rz[m] * f.z;
                    self.mode_max[m] * (wf * self.inv_lambda[m]).abs()
                })
                .sum::<f64>();
        }
        modal
    }

    /// Builds the rows aᵢ, their directions and S = A diag(resp − [Λ⁻¹]) Aᵀ (+ the
    /// residual compliance blocks for position rows) for `m` rows of `constraints`;
    /// `resp` must hold this step's per-mode response.
    fn build_system(
        &mut self,
        m: usize,
        constraints: &[PointConstraint],
    ) -> Result<(), ModelError> {
        let k = self.k;
        self.system.lay_out(constraints);
        let mut row = 0;
        for c in constraints {
            for _ in 0..c.rows() {
                let d = self.system.direction(row);
                Self::point_row(
                    &self.w_bar,
                    k,
                    &c.support,
                    &d,
                    &mut self.rows[row * k..(row + 1) * k],
                );
                row += 1;
            }
        }
        let with_residual =
            constraints[0].kind == ConstraintKind::Position && self.residual.is_some();
        for (q, r) in self.resp_eff.iter_mut().enumerate() {
            *r = if with_residual {
                self.resp[q] - self.inv_lambda[q]
            } else {
                self.resp[q]
            };
        }
        for (scaled, a) in self.rows_scaled[..m * k]
            .chunks_exact_mut(k)
            .zip(self.rows[..m * k].chunks_exact(k))
        {
            for ((x, &y), &r) in scaled.iter_mut().zip(a).zip(&self.resp_eff) {
                *x = y * r;
            }
        }
        // S is symmetric: its row-major storage is also column-major.
        matmul(
            MatMut::from_column_major_slice_mut(self.system.s_mut(m), m, m),
            Accum::Replace,
            MatRef::from_row_major_slice(&self.rows_scaled[..m * k], m, k),
            MatRef::from_row_major_slice(&self.rows[..m * k], m, k).transpose(),
            1.0,
            Par::Seq,
        );
        if with_residual {
            let cache = self.residual.as_mut().expect("checked above").wait()?;
            add_point_compliance(constraints, m, self.system.s_mut(m), |a, b| {
                Ok(cache.point_block(&a.support, &b.support)?)
            })?;
        }
        Ok(())
    }
}

/// Whether two constraints act at the same material point along the same directions
/// with the same kind (targets may differ): they give the same rows of S.
fn same_place(a: &PointConstraint, b: &PointConstraint) -> bool {
    a.support == b.support
        && a.kind == b.kind
        && a.directions == b.directions
        && a.unilateral == b.unilateral
}

impl TissueModel for ModalRuntime {
    fn geometry(&self) -> &TissueGeometry {
        &self.geometry
    }

    fn advance(
        &mut self,
        dt: f64,
        constraints: &[PointConstraint],
        forces: &mut [Vec3],
    ) -> Result<(), ModelError> {
        let m = validate_step(
            dt,
            constraints,
            forces,
            self.geometry.rest.len(),
            self.system.capacity(),
        )?;
        let k = self.k;
        self.osc.transitions(dt, &mut self.trans);
        let (z, zd) = (self.osc.z(), self.osc.zd());
        // The free trajectory: no constraint force, the held point loads acting.
        for i in 0..k {
            (self.z_free[i], self.zd_free[i]) = self.trans[i].apply(z[i], zd[i], self.g_load[i]);
        }
        self.g.copy_from_slice(&self.g_load);
        self.loads.clear();
        if m > 0 {
            let kind = constraints[0].kind;
            let lambda = self.osc.lambda();
            let damping = self.osc.damping();
            // Per-mode response of the constrained quantity to a held unit modal force,
            // and the free (unforced) value of that quantity.
            for i in 0..k {
                let tr = &self.trans[i];
                self.resp[i] = match kind {
                    ConstraintKind::Position => tr.gamma[0],
                    ConstraintKind::Velocity => tr.gamma[1],
                    ConstraintKind::Acceleration => {
                        1.0 - damping[i] * tr.gamma[1] - lambda[i] * tr.gamma[0]
                    }
                };
            }
            // S, the rows and the factorisation depend only on where and along what
            // the constraints act and on the step: reused while those stay the same.
            let same_system = self.system_dt == dt
                && self.system_for.len() == constraints.len()
                && self
                    .system_for
                    .iter()
                    .zip(constraints)
                    .all(|(a, b)| same_place(a, b));
            if !same_system {
                self.system_for.clear();
                self.build_system(m, constraints)?;
                self.system_for.extend_from_slice(constraints);
                self.system_dt = dt;
            }
            let (lambda, damping) = (self.osc.lambda(), self.osc.damping());
            // Position rows with residual flexibility also see the point loads' residual
            // displacement R F = K⁻¹ F − W̄ Λ⁻¹ W̄ᵀ F (the modal part is in z_free).
            let mut load_residual = match self.residual.as_mut() {
                Some(r) if kind == ConstraintKind::Position && !self.point_loads.is_empty() => {
                    Some(r.wait()?)
                }
                _ => None,
            };
            let mut row = 0;
            for c in constraints {
                let rest_point = c.rest_point(&self.geometry.rest);
                let u_loads = match load_residual.as_deref_mut() {
                    Some(cache) => self.point_loads.displacement_at(cache, &c.support)?,
                    None => Vec3::zeros(),
                };
                for _ in 0..c.rows() {
                    let d = self.system.direction(row);
                    let a = &self.rows[row * k..(row + 1) * k];
                    self.system.rhs_mut(m)[row] = match kind {
                        ConstraintKind::Position => {
                            let residual_loads = if load_residual.is_some() {
                                d.dot(&u_loads) - dot(a, &self.h_load)
                            } else {
                                0.0
                            };
                            d.dot(&(c.target - rest_point)) - dot(a, &self.z_free) - residual_loads
                        }
                        ConstraintKind::Velocity => d.dot(&c.target) - dot(a, &self.zd_free),
                        ConstraintKind::Acceleration => {
                            // z̈ = g − c ż − λ z at the end of the step, the loads in g.
                            let acc: f64 = (0..k)
                                .map(|i| {
                                    a[i] * (self.g_load[i]
                                        - damping[i] * self.zd_free[i]
                                        - lambda[i] * self.z_free[i])
                                })
                                .sum();
                            d.dot(&c.target) - acc
                        }
                    };
                    row += 1;
                }
            }
            self.system.solve(m, !same_system);
            self.system.constraint_forces(m, constraints.len(), forces);
            for i in 0..m {
                let fi = self.system.force(i);
                if fi != 0.0 {
                    for (g, a) in self.g.iter_mut().zip(&self.rows[i * k..(i + 1) * k]) {
                        *g += a * fi;
                    }
                }
            }
            if kind == ConstraintKind::Position && self.residual.is_some() {
                push_nodal_loads(constraints, forces, &mut self.loads);
            }
        }
        // The point loads' residual field is quasi-static: it joins whatever the rows
        // were (velocity and acceleration rows do not see it, as they do not see the
        // constraint forces' residual).
        if let Some(residual) = self.residual.as_mut() {
            // The first step waits for K's factor, so no force is published without it.
            let cache = residual.wait()?;
            self.point_loads.cache_columns(cache)?;
            self.loads.extend_from_slice(self.point_loads.nodal());
        }
        self.osc.step_with(&self.trans, &self.g);
        self.h.fill(0.0);
        if let Some(residual) = self.residual.as_mut() {
            residual.wait()?.advance_completion(dt)?;
        }
        for li in 0..self.loads.len() {
            let (v, f) = self.loads[li];
            for axis in 0..3 {
                if f[axis] != 0.0 {
                    let r = 3 * v + axis;
                    for q in 0..k {
                        self.h[q] += self.w_bar[r * k + q] * f[axis] * self.inv_lambda[q];
                    }
                }
            }
        }
        Ok(())
    }

    fn set_loads(&mut self, loads: &[PointLoad]) -> Result<(), ModelError> {
        self.point_loads.set(loads, self.geometry.rest.len())?;
        let k = self.k;
        self.g_load.fill(0.0);
        for &(v, f) in self.point_loads.nodal() {
            for axis in 0..3 {
                if f[axis] != 0.0 {
                    let r = 3 * v + axis;
                    for (g, w) in self.g_load.iter_mut().zip(&self.w_bar[r * k..(r + 1) * k]) {
                        *g += w * f[axis];
                    }
                }
            }
        }
        for ((h, g), il) in self
            .h_load
            .iter_mut()
            .zip(&self.g_load)
            .zip(&self.inv_lambda)
        {
            *h = g * il;
        }
        Ok(())
    }

    fn constraint_capacity(&self) -> usize {
        self.system.capacity()
    }

    fn compliance_between(&mut self, a: &Support, b: &Support) -> Result<Mat3, ModelError> {
        if let Some(residual) = self.residual.as_mut() {
            return Ok(residual.wait()?.point_block(a, b)?);
        }
        // Modal static compliance Σ_m (U_a wₘ)(U_b wₘ)ᵀ / λₘ.
        let mode_at = |s: &Support, q: usize| {
            let mut u = Vec3::zeros();
            for (v, w) in s.iter() {
                for axis in 0..3 {
                    u[axis] += w * self.mode_row(v, axis)[q];
                }
            }
            u
        };
        let mut c = Mat3::zeros();
        for q in 0..self.k {
            c += mode_at(a, q) * mode_at(b, q).transpose() * self.inv_lambda[q];
        }
        Ok(c)
    }

    /// The modes' bound (`modal_bound`) plus the residual's [`ComplianceColumns::field_bound`].
    fn displacement_bound(&self) -> f64 {
        self.modal_bound()
            + self
                .columns_ref()
                .map_or(0.0, |cache| cache.field_bound(&self.loads))
    }

    /// The modal part of [`Self::displacement_bound`] with the residual's
    /// [`ComplianceColumns::field_bound_beyond`].
    fn displacement_bound_beyond(&self, point: &Vec3, distance: f64) -> f64 {
        self.modal_bound()
            + self.columns_ref().map_or(0.0, |cache| {
                cache.field_bound_beyond(&self.loads, point, distance)
            })
    }

    fn anticipates(&self) -> bool {
        self.residual
            .as_ref()
            .is_some_and(ResidualColumns::completes_in_background)
    }

    fn anticipate(&mut self, nodes: &[usize]) {
        if let Some(columns) = self.residual.as_mut().and_then(ResidualColumns::poll) {
            columns.anticipate(nodes);
        }
    }

    fn reset(&mut self) {
        self.z_free.fill(0.0);
        self.osc.set_state(&self.z_free, &self.z_free);
        self.loads.clear();
        self.h.fill(0.0);
        self.point_loads.clear();
        self.g_load.fill(0.0);
        self.h_load.fill(0.0);
    }

    fn displacements(&mut self, nodes: &[usize], out: &mut [Vec3]) {
        let k = self.k;
        // z − Λ⁻¹W̄ᵀF once, then three contiguous dot products per node.
        for ((e, z), h) in self.z_eff.iter_mut().zip(self.osc.z()).zip(&self.h) {
            *e = z - h;
        }
        // Loads still being completed add their residual at cached nodes only; the
        // other nodes keep their modal part.
        let pending = self.refresh_pending_modal();
        for ((e, z), p) in self
            .z_eff_far
            .iter_mut()
            .zip(&self.z_eff)
            .zip(&self.h_pending)
        {
            *e = z + p;
        }
        for (o, &v) in out.iter_mut().zip(nodes) {
            let near = !pending || self.columns_ref().is_some_and(|c| c.field_exact_at(v));
            let z_eff = if near { &self.z_eff } else { &self.z_eff_far };
            *o = node_modal(&self.w_bar, k, v, z_eff);
        }
        // Loads exist only after a step, which waited for the columns.
        if let Some(cache) = self.residual.as_mut().and_then(ResidualColumns::poll) {
            cache.add_field(&self.loads, nodes, out);
        }
    }
}

/// W̄_v c: the displacement of node `v` (m) for modal coefficients `c` (length `k`),
/// over the node's three rows of the vertex-major W̄.
#[inline]
fn node_modal(w_bar: &[f64], k: usize, v: usize, c: &[f64]) -> Vec3 {
    let rows = &w_bar[3 * v * k..3 * (v + 1) * k];
    let (rx, rest) = rows.split_at(k);
    let (ry, rz) = rest.split_at(k);
    let c = &c[..k];
    // One pass over c for all three rows.
    let (mut x, mut y, mut z) = (0.0, 0.0, 0.0);
    for q in 0..k {
        x += rx[q] * c[q];
        y += ry[q] * c[q];
        z += rz[q] * c[q];
    }
    Vec3::new(x, y, z)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
