//! The full FEM's internal forces, energy and consistent tangent at a displacement.

use faer::sparse::{SparseColMat, SymbolicSparseColMat};

use super::problem::NonlinearStatics;
use crate::nonlinear::kinematics::cofactor_differential;
use crate::nonlinear::volume::{element_volumes, VolumeState};
use crate::{Mat3, Vec3};

impl NonlinearStatics {
    /// Internal nodal forces f_int(u) = ∂(Σ V W)/∂u (N) of every node, prescribed ones
    /// included (their negatives are the reactions); `None` if an energy is not finite.
    pub fn internal_forces(&self, u: &[Vec3]) -> Option<Vec<Vec3>> {
        let mut f = vec![Vec3::zeros(); self.rest.len()];
        let state = self.volume_state(u);
        for (e, (tet, el)) in self.tets.iter().zip(&self.elements).enumerate() {
            let def = self.deformation_gradient(e, u);
            self.laws[e].energy_density(&def)?;
            let mut p = self.laws[e].stress(&def) * el.volume;
            if let (Some(volume), Some(state)) = (&self.volume, &state) {
                p += state.cofactor[e] * volume.element_factor(e, tet, state);
            }
            for a in 0..4 {
                f[tet[a]] += p * el.grads[a];
            }
        }
        if let Some(pressure) = &self.pressure {
            pressure.add_forces(u, &mut f);
        }
        f.iter()
            .all(|x| x.iter().all(|c| c.is_finite()))
            .then_some(f)
    }

    /// Each tetrahedron's J and cof F and the nodes' pressures under `u`, when the
    /// large-strain laws' volume is carried by the nodes.
    pub(in crate::nonlinear) fn volume_state(&self, u: &[Vec3]) -> Option<VolumeState> {
        let volume = self.volume.as_ref()?;
        let mut state = VolumeState::default();
        element_volumes(&self.tets, &self.elements, u, &mut state);
        volume.update(&mut state);
        Some(state)
    }

    /// Total potential energy Π = Σ V W(F) − f_ext·u (J); `None` if it is not finite.
    pub fn energy(&self, u: &[Vec3], loads: &[Vec3]) -> Option<f64> {
        let mut w = 0.0;
        for (e, el) in self.elements.iter().enumerate() {
            w += el.volume * self.laws[e].energy_density(&self.deformation_gradient(e, u))?;
        }
        if let Some(pressure) = &self.pressure {
            w += pressure.energy(u);
        }
        if let (Some(volume), Some(state)) = (&self.volume, self.volume_state(u)) {
            w += volume.energy(&state);
        }
        let w = w - loads.iter().zip(u).map(|(f, x)| f.dot(x)).sum::<f64>();
        w.is_finite().then_some(w)
    }

    /// The consistent tangent ∂f_int/∂u (N/m) over all DOFs, prescribed rows and columns
    /// replaced by the identity so the system stays symmetric positive definite.
    pub fn tangent(&self, u: &[Vec3]) -> SparseColMat<usize, f64> {
        let mut values = vec![0.0; self.row_idx.len()];
        let state = self.volume_state(u);
        for (e, (tet, el)) in self.tets.iter().zip(&self.elements).enumerate() {
            let def = self.deformation_gradient(e, u);
            let law = &self.laws[e];
            // The nodes' pressure on this tetrahedron: its share times ∂²J.
            let factor = match (&self.volume, &state) {
                (Some(volume), Some(state)) => volume.element_factor(e, tet, state),
                _ => 0.0,
            };
            for (b, &nb) in tet.iter().enumerate() {
                for c in 0..3 {
                    let mut df = Mat3::zeros();
                    df.set_row(c, &el.grads[b].transpose());
                    let mut dp = law.stress_differential(&def, &df) * el.volume;
                    if factor != 0.0 {
                        dp += cofactor_differential(&def, &df) * factor;
                    }
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
            pressure.for_each_block(|i, j, block| self.add_block(&mut values, i, j, &block));
        }
        if let (Some(volume), Some(state)) = (&self.volume, &state) {
            let mut gradient = Vec::new();
            for a in (0..self.rest.len()).filter(|&a| volume.carries(a)) {
                volume.mean_gradient(a, &self.tets, &self.elements, state, &mut gradient);
                let curvature = state.stiffness[a];
                for &(j, gj) in &gradient {
                    for &(i, gi) in &gradient {
                        self.add_block(&mut values, i, j, &(gi * gj.transpose() * curvature));
                    }
                }
            }
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

    /// Adds the 3 × 3 `block` at block row `i`, block column `j` of the tangent's values.
    fn add_block(&self, values: &mut [f64], i: usize, j: usize, block: &Mat3) {
        let first = self.col_ptr[3 * j];
        let rows = &self.row_idx[first..self.col_ptr[3 * j + 1]];
        let offset = rows.partition_point(|&r| r < 3 * i);
        for c in 0..3 {
            let base = self.col_ptr[3 * j + c] + offset;
            for r in 0..3 {
                values[base + r] += block[(r, c)];
            }
        }
    }
}
