//! The kinematic quantities of F that the large-strain laws share, defined for every F,
//! inverted ones included (invertible FEM, Irving, Teran & Fedkiw 2004).
//!
//! The laws use J = det F through ℓ = ln J and its gradient G = ∂ℓ/∂F = F⁻ᵀ. Below the
//! floor [`J_FLOOR`] ℓ continues as its tangent line, ℓ = ln J₀ + (J − J₀)/J₀, so that
//! G = cof(F)/J₀ (cof F = J F⁻ᵀ, defined at J ≤ 0 too): the energy stays finite and
//! differentiable (C¹ in F) through J = 0, and its volumetric part κ/2 ℓ² keeps pushing
//! an element back towards J > 0 instead of failing the solve.

use crate::Mat3;

/// J₀: below it ℓ = ln J continues linearly (dimensionless). Far below any equilibrium
/// of near-incompressible tissue; only states on the way to one (a line-search trial, a
/// basis that lacks the shapes a deep press needs) reach it.
pub(crate) const J_FLOOR: f64 = 0.2;

/// The kinematics of one F.
pub(super) struct Kinematics {
    /// I₁ = F:F.
    pub(super) i1: f64,
    /// ℓ: ln J, continued linearly below [`J_FLOOR`].
    pub(super) log_j: f64,
    /// G = ∂ℓ/∂F: F⁻ᵀ, or cof(F)/J₀ below the floor.
    pub(super) g: Mat3,
    /// a = exp(−2ℓ/3) (J^(−2/3) above the floor).
    pub(super) a: f64,
    /// Ī₁ = a I₁.
    pub(super) i1_bar: f64,
    /// ∂Ī₁/∂F = 2 a (F − I₁/3 G); this holds F − I₁/3 G.
    pub(super) a_dev: Mat3,
    /// Whether J is below the floor (G from the cofactor).
    floored: bool,
}

impl Kinematics {
    /// The kinematics of `f`.
    pub(super) fn new(f: &Mat3) -> Self {
        let j = f.determinant();
        let i1 = f.dot(f);
        let (log_j, g, floored) = if j >= J_FLOOR {
            let inverse = f.try_inverse().unwrap_or_else(|| Mat3::repeat(f64::NAN));
            (j.ln(), inverse.transpose(), false)
        } else {
            let log_j = J_FLOOR.ln() + (j - J_FLOOR) / J_FLOOR;
            (log_j, cofactor(f) / J_FLOOR, true)
        };
        // J^(−2/3) as the laws always took it above the floor.
        let a = if floored {
            (-2.0 / 3.0 * log_j).exp()
        } else {
            j.powf(-2.0 / 3.0)
        };
        Self {
            i1,
            log_j,
            g,
            a,
            i1_bar: a * i1,
            a_dev: f - g * (i1 / 3.0),
            floored,
        }
    }

    /// dG for a change `df` of F: −F⁻ᵀ dFᵀ F⁻ᵀ, or d(cof F)/J₀ below the floor.
    pub(super) fn d_g(&self, f: &Mat3, df: &Mat3) -> Mat3 {
        if self.floored {
            cofactor_differential(f, df) / J_FLOOR
        } else {
            -(self.g * df.transpose() * self.g)
        }
    }
}

/// ℓ(J) and its first two derivatives: ln J, continued as its tangent line below
/// [`J_FLOOR`].
pub(super) fn log_floored(j: f64) -> (f64, f64, f64) {
    if j >= J_FLOOR {
        (j.ln(), 1.0 / j, -1.0 / (j * j))
    } else {
        (J_FLOOR.ln() + (j - J_FLOOR) / J_FLOOR, 1.0 / J_FLOOR, 0.0)
    }
}

/// cof F = J F⁻ᵀ: its columns are the cross products of F's other two columns.
pub(super) fn cofactor(f: &Mat3) -> Mat3 {
    let (c0, c1, c2) = (f.column(0), f.column(1), f.column(2));
    Mat3::from_columns(&[c1.cross(&c2), c2.cross(&c0), c0.cross(&c1)])
}

/// d(cof F) for a change `df` of F.
pub(super) fn cofactor_differential(f: &Mat3, df: &Mat3) -> Mat3 {
    let (c0, c1, c2) = (f.column(0), f.column(1), f.column(2));
    let (d0, d1, d2) = (df.column(0), df.column(1), df.column(2));
    Mat3::from_columns(&[
        d1.cross(&c2) + c1.cross(&d2),
        d2.cross(&c0) + c2.cross(&d0),
        d0.cross(&c1) + c0.cross(&d1),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cofactor_is_det_times_the_inverse_transpose() {
        let f = Mat3::new(1.2, 0.1, -0.05, 0.03, 0.85, 0.12, -0.07, 0.02, 1.1);
        let expected = f.try_inverse().unwrap().transpose() * f.determinant();
        assert!((cofactor(&f) - expected).abs().max() < 1e-14);
        let df = Mat3::new(0.3, -0.2, 0.1, 0.5, 0.2, -0.4, 0.1, 0.7, -0.3);
        let h = 1e-6;
        let fd = (cofactor(&(f + df * h)) - cofactor(&(f - df * h))) / (2.0 * h);
        assert!((cofactor_differential(&f, &df) - fd).abs().max() < 1e-9);
    }

    /// ℓ and G are continuous across the floor: G = F⁻ᵀ there either way.
    #[test]
    fn the_continuation_meets_the_logarithm_at_the_floor() {
        let s = J_FLOOR.cbrt();
        let f = Mat3::from_diagonal(&crate::Vec3::new(s, s, s));
        let above = Kinematics::new(&(f * (1.0 + 1e-12)));
        let below = Kinematics::new(&(f * (1.0 - 1e-12)));
        assert!(!above.floored && below.floored);
        assert!((above.log_j - below.log_j).abs() < 1e-10);
        assert!((above.g - below.g).abs().max() < 1e-9);
    }
}
