//! The reduced internal forces Uᵀf_int(Uq), their tangent UᵀK_T U and the reduced
//! energy, summed over a quadrature: the linear part is q itself (UᵀKU = I), and each
//! term adds its large-strain law's difference from its linearisation.
//!
//! The forces go through the nodes: U q at each of the quadrature's nodes once, each
//! element's F from its four, its nodal forces P ∇N_a summed per node, and Uᵀ of those
//! once (a node is in about 20 elements). A nodal volume term (nodal-averaged pressure,
//! `volume.rs`) reads its elements' J: its pressure acts on them as a stress α cof F − β I.
//!
//! An element's share of the tangent is dFᵀ C dF, dF its 9 × r shape gradients and C its
//! 9 × 9 moduli less the linear ones (plus its volume terms' α ∂²J); the shares are
//! summed [`CHUNK`] elements at a time as one matrix product,
//! (dF₁; dF₂; …)ᵀ (C₁dF₁; C₂dF₂; …). A volume term adds its own rank-one parts,
//! U'' dJ̄ dJ̄ᵀ − Vκ̄ dθ̄ dθ̄ᵀ.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};

use super::model::ReducedStatics;
use crate::nonlinear::kinematics::{cofactor, J_FLOOR};
use crate::nonlinear::quadrature::Quadrature;
use crate::nonlinear::volume::det_hessian;
use crate::{Mat3, Vec3};

/// Elements whose tangent shares one matrix product sums.
const CHUNK: usize = 32;

/// One evaluated element's kinematics.
#[derive(Clone, Copy, Debug, Default)]
struct ElementState {
    f: Mat3,
    cofactor: Mat3,
    j: f64,
    /// tr F − 3: the linear volumetric strain.
    trace: f64,
}

/// Scratch of a reduced solve (r shapes, the mesh's nodes).
pub(super) struct Work {
    /// The shapes' dF in up to [`CHUNK`] elements, each element's 9 rows of r values
    /// after the last's: column-major r × 9·CHUNK.
    df: Vec<f64>,
    /// The moduli times dF in the same layout (N·m: the tangent's shares are df dpᵀ).
    dp: Vec<f64>,
    /// The tangent's element shares summed so far (r × r, N/m).
    sum: Mat<f64>,
    /// Uᵀf_int at the iterate (N).
    pub(super) gradient: Vec<f64>,
    /// Uᵀf_int at a line-search trial (N).
    pub(super) trial_gradient: Vec<f64>,
    /// UᵀK_T U at the iterate (N/m, row-major).
    pub(super) tangent: Vec<f64>,
    /// U q at the quadrature's nodes (m; one entry per node of the mesh).
    pub(super) displacement: Vec<Vec3>,
    /// The quadrature's terms' forces beyond linear, summed per node (N).
    nodal_forces: Vec<Vec3>,
    /// The evaluated elements' kinematics.
    elements: Vec<ElementState>,
    /// Per evaluated element, its volume terms' coefficients of cof F (N·m) and of I
    /// (N·m) in its stress times volume.
    alpha: Vec<f64>,
    beta: Vec<f64>,
    /// Per volume term, its weighted ∂²U/∂J̄² and Vκ̄ (N·m).
    curvature: Vec<(f64, f64)>,
    /// Per evaluated element (tangent with volume terms): cof F : dF_j, then tr dF_j.
    volume_rows: Vec<f64>,
}

impl Work {
    pub(super) fn new(r: usize, nodes: usize) -> Self {
        Self {
            displacement: vec![Vec3::zeros(); nodes],
            nodal_forces: vec![Vec3::zeros(); nodes],
            df: vec![0.0; 9 * r * CHUNK],
            dp: vec![0.0; 9 * r * CHUNK],
            sum: Mat::zeros(r, r),
            gradient: vec![0.0; r],
            trial_gradient: vec![0.0; r],
            tangent: vec![0.0; r * r],
            elements: Vec::new(),
            alpha: Vec::new(),
            beta: Vec::new(),
            curvature: Vec::new(),
            volume_rows: Vec::new(),
        }
    }

    /// Whether every element the last evaluation summed has det F at least the laws'
    /// floor J₀ (see [`ReducedStatics::in_range`]).
    pub(super) fn evaluated_in_range(&self) -> bool {
        self.elements.iter().all(|e| e.j >= J_FLOOR)
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

impl ReducedStatics {
    /// Element `el`'s share of the reduced internal forces beyond its linearisation,
    /// V (P − P_lin) : dF_j for each shape j (N), into `out` (length r), at the nodes'
    /// displacements `displacement` (U q; m).
    pub(in crate::nonlinear) fn element_forces(
        &self,
        el: usize,
        displacement: &[Vec3],
        out: &mut [f64],
    ) {
        let def = self.deformation_from(el, displacement);
        let p = (self.statics.laws[el].stress(&def) - self.linear[el].stress(&def))
            * self.statics.elements[el].volume;
        let r = self.shapes;
        out[..r].fill(0.0);
        self.add_element_nodal(el, &p, &mut out[..r]);
    }

    /// Node `a`'s volume term's share of the reduced internal forces beyond linear (N)
    /// into `out` (length r), at the nodes' displacements `displacement` (m).
    pub(in crate::nonlinear) fn volume_forces(
        &self,
        a: usize,
        displacement: &[Vec3],
        out: &mut [f64],
    ) {
        let r = self.shapes;
        out[..r].fill(0.0);
        let Some(volume) = &self.statics.volume else {
            return;
        };
        let states: Vec<(usize, f64, Mat3)> = volume
            .around(a)
            .iter()
            .map(|&(e, w)| (e, w, self.deformation_from(e, displacement)))
            .collect();
        let mean: f64 = states.iter().map(|(_, w, f)| w * f.determinant()).sum();
        let theta: f64 = states.iter().map(|(_, w, f)| w * (f.trace() - 3.0)).sum();
        let (p1, _) = volume.node_pressure(a, mean);
        let linear = volume.node_stiffness(a) * theta;
        for (e, w, f) in states {
            let p = cofactor(&f) * (w * p1) - Mat3::identity() * (w * linear);
            self.add_element_nodal(e, &p, &mut out[..r]);
        }
    }

    /// The reduced internal forces Uᵀf_int(Uq) (N) into `forces` and the reduced tangent
    /// UᵀK_T U (N/m, row-major r × r) into `tangent`, r = [`ReducedStatics::shapes`] =
    /// `q.len()`: the work of one Newton iteration.
    pub fn reduced_forces_and_tangent(&self, q: &[f64], forces: &mut [f64], tangent: &mut [f64]) {
        let r = self.shapes;
        let mut work = Work::new(r, self.nodes());
        self.gradient_and_tangent(q, &mut work);
        forces[..r].copy_from_slice(&work.gradient);
        tangent[..r * r].copy_from_slice(&work.tangent);
    }

    /// Deformation gradient of element `el` from the nodes' displacements (m).
    pub(super) fn deformation_from(&self, el: usize, displacement: &[Vec3]) -> Mat3 {
        let grads = &self.statics.elements[el].grads;
        let mut def = Mat3::identity();
        for (a, &v) in self.statics.tets[el].iter().enumerate() {
            def += displacement[v] * grads[a].transpose();
        }
        def
    }

    /// `out[j] += P : dF_j` in element `el` for the stress `p` (Pa·m³, P times the
    /// volume), through its nodal forces P ∇N_a and U's rows at its nodes.
    fn add_element_nodal(&self, el: usize, p: &Mat3, out: &mut [f64]) {
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

    /// Each shape's dF in element `el` into `df`: row 3c + k (entry (c, k) of dF) holds
    /// the r shapes' values, contiguous.
    fn shape_gradients(&self, el: usize, df: &mut [f64]) {
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
    }

    /// The reduced potential energy ½|q|² + Σ (terms beyond linear) − fᵀq (J) at q under
    /// the reduced forces `f`, summed over the quadrature, and Uᵀf_int(Uq) into
    /// `work.trial_gradient`, in one pass. `None` if an energy is not finite.
    pub(super) fn energy_and_gradient(&self, q: &[f64], f: &[f64], work: &mut Work) -> Option<f64> {
        let mut e: f64 = q.iter().zip(f).map(|(q, f)| 0.5 * q * q - f * q).sum();
        let mut at = std::mem::take(&mut work.trial_gradient);
        let whole = self.accumulate(q, &self.quadrature, work, &mut at, None, Some(&mut e));
        work.trial_gradient = at;
        (whole && e.is_finite()).then_some(e)
    }

    /// Uᵀf_int(Uq) (N) if every term's energy is finite at q (no active element
    /// inverted or past its law's range): a state a solve can start from.
    pub(in crate::nonlinear) fn internal_if_finite(&self, q: &[f64]) -> Option<Vec<f64>> {
        let mut work = Work::new(self.shapes, self.nodes());
        let f = vec![0.0; self.shapes];
        self.energy_and_gradient(q, &f, &mut work)?;
        Some(work.trial_gradient)
    }

    /// The smallest det F over the mesh's elements at q, and its element: the trace of
    /// a step (`tissue/step.rs`) says how near inversion a state is.
    pub(in crate::nonlinear) fn min_det(&self, q: &[f64]) -> (f64, usize) {
        let mut u = vec![Vec3::zeros(); self.nodes()];
        self.displacement(q, &mut u);
        (0..self.statics.tets.len())
            .map(|el| (self.deformation_from(el, &u).determinant(), el))
            .fold((f64::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a })
    }

    /// Whether every element's det F at q is at least the laws' floor J₀
    /// (`nonlinear/kinematics.rs`): below it the large-strain laws are their
    /// continuation, whose energy grows exponentially with the inversion, so that forces,
    /// tangents and cubatures taken there are no guide to the tissue's.
    pub(in crate::nonlinear) fn in_range(&self, q: &[f64]) -> bool {
        self.min_det(q).0 >= J_FLOOR
    }

    /// q with its coordinates scaled back (halves, at most four times, then zero) until
    /// it is in range ([`Self::in_range`]).
    pub(in crate::nonlinear) fn scaled_into_range(&self, q: &[f64]) -> Vec<f64> {
        let mut scaled = q.to_vec();
        for _ in 0..4 {
            if self.in_range(&scaled) {
                return scaled;
            }
            scaled.iter_mut().for_each(|x| *x *= 0.5);
        }
        if self.in_range(&scaled) {
            scaled
        } else {
            vec![0.0; q.len()]
        }
    }

    /// The reduced internal forces Uᵀf_int(Uq) into `work.gradient`.
    pub(super) fn gradient_only(&self, q: &[f64], work: &mut Work) {
        let mut gradient = std::mem::take(&mut work.gradient);
        self.accumulate(q, &self.quadrature, work, &mut gradient, None, None);
        work.gradient = gradient;
    }

    /// The reduced internal forces into `work.gradient` and the reduced tangent
    /// UᵀK_T U into `work.tangent` (row-major r × r).
    pub(super) fn gradient_and_tangent(&self, q: &[f64], work: &mut Work) {
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

    /// The slope of the reduced energy along `step` at `trial` under the reduced forces
    /// `f` (J per unit step).
    pub(super) fn slope_along(
        &self,
        trial: &[f64],
        f: &[f64],
        step: &[f64],
        work: &mut Work,
    ) -> f64 {
        let mut at = std::mem::take(&mut work.trial_gradient);
        self.accumulate(trial, &self.quadrature, work, &mut at, None, None);
        let along = (0..trial.len()).map(|j| (at[j] - f[j]) * step[j]).sum();
        work.trial_gradient = at;
        along
    }

    /// Uᵀf_int(Uq) summed over `quadrature` (with its offset) into `gradient` and, if
    /// given, UᵀK_T U into `tangent` (row-major), and the energy into `energy`; false
    /// if an energy is not finite (when the energy is asked for).
    pub(super) fn accumulate(
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
        for &v in &quadrature.nodes {
            work.displacement[v] = self.node_displacement(v, q);
            work.nodal_forces[v] = Vec3::zeros();
        }
        self.evaluate_elements(quadrature, work);
        if !self.volume_terms(quadrature, work, energy.as_deref_mut()) {
            return false;
        }
        if !self.element_terms(quadrature, work, tangent.is_some(), energy.as_deref_mut()) {
            return false;
        }
        // Uᵀ of the nodal forces, each node's rows of U once.
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
            for j in 0..r {
                for k in 0..r {
                    let identity = if j == k { 1.0 } else { 0.0 };
                    t[j * r + k] = identity + 0.5 * (work.sum[(j, k)] + work.sum[(k, j)]);
                }
            }
            self.volume_tangent(quadrature, work, t);
            if let Some(offset) = &quadrature.offset {
                offset.add_tangent(t, r);
            }
        }
        if let Some(offset) = &quadrature.offset {
            offset.add_forces(q, gradient, energy);
        }
        true
    }

    /// F, cof F, J and tr F − 3 of every evaluated element, from `work.displacement`.
    fn evaluate_elements(&self, quadrature: &Quadrature, work: &mut Work) {
        work.elements.clear();
        for &(el, _) in &quadrature.evaluated {
            let f = self.deformation_from(el, &work.displacement);
            work.elements.push(ElementState {
                f,
                cofactor: cofactor(&f),
                j: f.determinant(),
                trace: f.trace() - 3.0,
            });
        }
    }

    /// The volume terms: each node's J̄ and linear θ̄ from its elements, its pressure
    /// spread over them as α (on cof F) and β (on I), and its energy beyond linear into
    /// `energy`; false if one is not finite.
    fn volume_terms(
        &self,
        quadrature: &Quadrature,
        work: &mut Work,
        energy: Option<&mut f64>,
    ) -> bool {
        let m = quadrature.evaluated.len();
        work.alpha.clear();
        work.alpha.resize(m, 0.0);
        work.beta.clear();
        work.beta.resize(m, 0.0);
        work.curvature.clear();
        let Some(volume) = &self.statics.volume else {
            return true;
        };
        let mut total = 0.0;
        for (&(a, weight), around) in quadrature.volumes.iter().zip(&quadrature.around) {
            let mean: f64 = around.iter().map(|&(k, w)| w * work.elements[k].j).sum();
            let theta: f64 = around
                .iter()
                .map(|&(k, w)| w * work.elements[k].trace)
                .sum();
            let (p1, p2) = volume.node_pressure(a, mean);
            let kv = volume.node_stiffness(a);
            total += weight * (volume.node_energy(a, mean) - 0.5 * kv * theta * theta);
            for &(k, w) in around {
                work.alpha[k] += weight * w * p1;
                work.beta[k] += weight * w * kv * theta;
            }
            work.curvature.push((weight * p2, weight * kv));
        }
        if let Some(e) = energy {
            *e += total;
        }
        total.is_finite()
    }

    /// The element terms and the volume terms' stresses: nodal forces into
    /// `work.nodal_forces`, energy into `energy`, and with `tangent` the moduli products
    /// into `work.sum` (and cof F : dF, tr dF for the volume terms); false if an energy
    /// is not finite.
    fn element_terms(
        &self,
        quadrature: &Quadrature,
        work: &mut Work,
        tangent: bool,
        mut energy: Option<&mut f64>,
    ) -> bool {
        let r = self.shapes;
        let volumes = !quadrature.volumes.is_empty();
        if tangent {
            work.sum = Mat::zeros(r, r);
            if volumes {
                work.volume_rows.clear();
                work.volume_rows
                    .resize(2 * r * quadrature.evaluated.len(), 0.0);
            }
        }
        let mut filled = 0;
        for (k, &(el, weight)) in quadrature.evaluated.iter().enumerate() {
            let state = work.elements[k];
            let volume = self.statics.elements[el].volume;
            let mut p = Mat3::identity() * -work.beta[k] + state.cofactor * work.alpha[k];
            if weight > 0.0 {
                let (law, lin) = (&self.statics.laws[el], &self.linear[el]);
                let stress = match energy.as_deref_mut() {
                    Some(e) => {
                        let (Some((w, s)), Some((w_lin, s_lin))) = (
                            law.energy_and_stress(&state.f),
                            lin.energy_and_stress(&state.f),
                        ) else {
                            return false;
                        };
                        *e += weight * volume * (w - w_lin);
                        s - s_lin
                    }
                    None => law.stress(&state.f) - lin.stress(&state.f),
                };
                p += stress * (weight * volume);
            }
            let grads = &self.statics.elements[el].grads;
            for (a, &v) in self.statics.tets[el].iter().enumerate() {
                work.nodal_forces[v] += p * grads[a];
            }
            if !tangent {
                continue;
            }
            let slot = 9 * r * filled..9 * r * (filled + 1);
            self.shape_gradients(el, &mut work.df[slot.clone()]);
            if volumes {
                let rows = &mut work.volume_rows[2 * r * k..][..2 * r];
                let df = &work.df[slot.clone()];
                for i in 0..9 {
                    let (c, d) = (i / 3, i % 3);
                    let cof = state.cofactor[(c, d)];
                    let diagonal = c == d;
                    for (j, x) in df[i * r..][..r].iter().enumerate() {
                        rows[j] += cof * x;
                        if diagonal {
                            rows[r + j] += x;
                        }
                    }
                }
            }
            let moduli = self.element_moduli(el, weight * volume, work.alpha[k], &state.f);
            let (df, dp) = (&work.df[slot.clone()], &mut work.dp[slot]);
            dp.fill(0.0);
            for (row, dp) in moduli.iter().zip(dp.chunks_exact_mut(r)) {
                for (c, df) in row.iter().zip(df.chunks_exact(r)) {
                    if *c != 0.0 {
                        for (o, d) in dp.iter_mut().zip(df) {
                            *o += c * d;
                        }
                    }
                }
            }
            filled += 1;
            if filled == CHUNK {
                work.flush(r, filled);
                filled = 0;
            }
        }
        if tangent {
            work.flush(r, filled);
        }
        true
    }

    /// An element's 9 × 9 tangent moduli beyond linear times `scale` (its weighted
    /// volume, m³), plus `alpha` ∂²J (its volume terms' share, N·m).
    fn element_moduli(&self, el: usize, scale: f64, alpha: f64, f: &Mat3) -> [[f64; 9]; 9] {
        let mut moduli = if scale > 0.0 {
            let mut c = self.statics.laws[el].moduli_beyond_linear(f);
            for row in &mut c {
                for x in row.iter_mut() {
                    *x *= scale;
                }
            }
            c
        } else {
            [[0.0; 9]; 9]
        };
        if alpha != 0.0 {
            let h = det_hessian(f);
            for (row, h) in moduli.iter_mut().zip(&h) {
                for (x, h) in row.iter_mut().zip(h) {
                    *x += alpha * h;
                }
            }
        }
        moduli
    }

    /// Adds each volume term's rank-one parts U'' dJ̄ dJ̄ᵀ − Vκ̄ dθ̄ dθ̄ᵀ to `tangent`.
    fn volume_tangent(&self, quadrature: &Quadrature, work: &Work, tangent: &mut [f64]) {
        let r = self.shapes;
        let (mut dj, mut dtheta) = (vec![0.0; r], vec![0.0; r]);
        for (around, &(p2, kv)) in quadrature.around.iter().zip(&work.curvature) {
            dj.fill(0.0);
            dtheta.fill(0.0);
            for &(k, w) in around {
                let rows = &work.volume_rows[2 * r * k..][..2 * r];
                for j in 0..r {
                    dj[j] += w * rows[j];
                    dtheta[j] += w * rows[r + j];
                }
            }
            for a in 0..r {
                for b in 0..r {
                    tangent[a * r + b] += p2 * dj[a] * dj[b] - kv * dtheta[a] * dtheta[b];
                }
            }
        }
    }
}
