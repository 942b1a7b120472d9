//! The constant-strain linear tetrahedron.

use nalgebra::SMatrix;

use super::Material;
use crate::{Mat3, Vec3};

/// Degrees of freedom of one tetrahedron: 4 nodes × (x, y, z).
pub const ELEMENT_DOFS: usize = 12;

/// Geometry of one linear tetrahedron: its volume and the (constant) gradients of its
/// four shape functions, from which strain and stiffness follow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TetElement {
    /// Volume (m³), positive for a positively oriented tetrahedron.
    pub volume: f64,
    /// ∇Nₐ for a = 0..4 (1/m); they sum to zero.
    pub grads: [Vec3; 4],
}

impl TetElement {
    /// The element with corners `x` (m). Degenerate corners give non-finite gradients;
    /// meshes reaching FEM are validated by [`TetMesh::new`](crate::mesh::TetMesh::new).
    pub fn new(x: [Vec3; 4]) -> Self {
        let d = Mat3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]);
        let volume = d.determinant() / 6.0;
        // Rows of D⁻¹ are ∇N₁, ∇N₂, ∇N₃ (N = barycentric coordinates).
        let inv = d.try_inverse().unwrap_or_else(|| Mat3::repeat(f64::NAN));
        let g1 = inv.row(0).transpose();
        let g2 = inv.row(1).transpose();
        let g3 = inv.row(2).transpose();
        Self {
            volume,
            grads: [-(g1 + g2 + g3), g1, g2, g3],
        }
    }

    /// Small-strain tensor ε = sym(∇u) for nodal displacements `u` (m).
    pub fn strain(&self, u: &[Vec3; 4]) -> Mat3 {
        let grad_u: Mat3 = (0..4).map(|a| u[a] * self.grads[a].transpose()).sum();
        (grad_u + grad_u.transpose()) * 0.5
    }

    /// The 12×12 element stiffness (N/m), DOF order (node 0 x, y, z, node 1 x, …):
    /// K_ab = V (λ ∇Nₐ ∇Nᵦᵀ + μ ∇Nᵦ ∇Nₐᵀ + μ (∇Nₐ·∇Nᵦ) I).
    pub fn stiffness(&self, material: &Material) -> SMatrix<f64, ELEMENT_DOFS, ELEMENT_DOFS> {
        let (lambda, mu) = material.lame();
        self.stiffness_lame(lambda, mu)
    }

    /// The deviatoric part of [`TetElement::stiffness`] (N/m): the same with bulk
    /// modulus κ = λ + 2μ/3 set to 0, for [`NodalPressure`](super::NodalPressure) to
    /// carry the volumetric part.
    pub fn deviatoric_stiffness(
        &self,
        material: &Material,
    ) -> SMatrix<f64, ELEMENT_DOFS, ELEMENT_DOFS> {
        let (_, mu) = material.lame();
        self.stiffness_lame(-2.0 * mu / 3.0, mu)
    }

    fn stiffness_lame(&self, lambda: f64, mu: f64) -> SMatrix<f64, ELEMENT_DOFS, ELEMENT_DOFS> {
        let mut k = SMatrix::<f64, ELEMENT_DOFS, ELEMENT_DOFS>::zeros();
        for a in 0..4 {
            for b in 0..4 {
                let ga = self.grads[a];
                let gb = self.grads[b];
                let block = (ga * gb.transpose() * lambda
                    + gb * ga.transpose() * mu
                    + Mat3::identity() * (mu * ga.dot(&gb)))
                    * self.volume;
                k.fixed_view_mut::<3, 3>(3 * a, 3 * b).copy_from(&block);
            }
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skewed() -> [Vec3; 4] {
        [
            Vec3::new(0.1, -0.2, 0.05),
            Vec3::new(1.3, 0.1, -0.1),
            Vec3::new(0.2, 0.9, 0.3),
            Vec3::new(0.4, 0.3, 1.1),
        ]
    }

    fn material() -> Material {
        Material::new(5.0e4, 0.3, 1000.0).unwrap()
    }

    #[test]
    fn stiffness_is_symmetric_psd_with_six_rigid_modes() {
        let el = TetElement::new(skewed());
        assert!(el.volume > 0.0);
        let k = el.stiffness(&material());
        assert!((k - k.transpose()).abs().max() <= 1e-12 * k.abs().max());
        let eig = nalgebra::SymmetricEigen::new(k).eigenvalues;
        let max = eig.max();
        let zero = eig.iter().filter(|&&l| l.abs() < 1e-10 * max).count();
        assert_eq!(zero, 6, "eigenvalues {eig}");
        assert!(eig.iter().all(|&l| l > -1e-10 * max), "eigenvalues {eig}");
    }

    #[test]
    fn rigid_motions_give_no_force() {
        let x = skewed();
        let k = TetElement::new(x).stiffness(&material());
        let w = Vec3::new(0.3, -0.7, 0.2);
        let t = Vec3::new(1.0, 2.0, -0.5);
        let u = SMatrix::<f64, 12, 1>::from_iterator(x.iter().flat_map(|p| {
            let d = t + w.cross(p);
            [d.x, d.y, d.z]
        }));
        assert!((k * u).norm() < 1e-10 * k.norm() * u.norm());
    }

    #[test]
    fn linear_field_gives_its_strain_and_the_right_energy() {
        let x = skewed();
        let el = TetElement::new(x);
        let a = Mat3::new(0.01, 0.002, -0.003, 0.004, -0.02, 0.001, 0.0, 0.005, 0.015);
        let u = x.map(|p| a * p + Vec3::new(0.1, 0.2, 0.3));
        let eps = el.strain(&u);
        let expected = (a + a.transpose()) * 0.5;
        assert!((eps - expected).abs().max() < 1e-14);
        // Strain energy ½uᵀKu = V (μ ε:ε + λ/2 tr(ε)²).
        let m = material();
        let (lambda, mu) = m.lame();
        let uv = SMatrix::<f64, 12, 1>::from_iterator(u.iter().flat_map(|d| [d.x, d.y, d.z]));
        let energy = 0.5 * (uv.transpose() * el.stiffness(&m) * uv)[0];
        let exact =
            el.volume * (mu * eps.component_mul(&eps).sum() + 0.5 * lambda * eps.trace().powi(2));
        assert!((energy - exact).abs() < 1e-10 * exact);
    }
}
