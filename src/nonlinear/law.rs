//! Hyperelastic material laws: strain-energy density W(F), the first Piola–Kirchhoff
//! stress P = ∂W/∂F and its differential dP = ∂²W/∂F² : dF.
//!
//! The large-strain laws split W into an isochoric part Ψ(Ī₁), Ī₁ = J^(−2/3) tr(FᵀF), and
//! a volumetric part U(J) = κ/2 (ln J)², so that both reduce to linear elasticity with
//! shear modulus μ and bulk modulus κ at small strain (docs/math.md §8):
//! * neo-Hookean: Ψ = μ/2 (Ī₁ − 3);
//! * Veronda–Westmann (exponential): Ψ = μ/(2γ) (exp(γ(Ī₁ − 3)) − 1), stiffening γ ≥ 0;
//!   γ → 0 gives the neo-Hookean law.

use super::kinematics::Kinematics;
#[cfg(test)]
use super::kinematics::J_FLOOR;
use crate::fem::Material;
use crate::Mat3;

/// Which strain-energy function a material follows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LawKind {
    /// Small-strain linear elasticity, W = μ ε:ε + λ/2 (tr ε)², ε = sym(F − I).
    Linear,
    /// Compressible neo-Hookean (isochoric/volumetric split).
    NeoHookean,
    /// Exponential stiffening in Ī₁ with dimensionless exponent γ ≥ 0.
    VerondaWestmann {
        /// Stiffening exponent γ (dimensionless).
        stiffening: f64,
    },
}

/// A material law with its small-strain moduli.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hyperelastic {
    /// The strain-energy function.
    pub kind: LawKind,
    /// Shear modulus μ (Pa).
    pub mu: f64,
    /// First Lamé parameter λ (Pa).
    pub lambda: f64,
    /// Bulk modulus κ = λ + 2μ/3 (Pa).
    pub kappa: f64,
}

impl Hyperelastic {
    /// The law `kind` whose small-strain response is that of `material` (E, ν).
    pub fn new(kind: LawKind, material: &Material) -> Self {
        let (lambda, mu) = material.lame();
        Self {
            kind,
            mu,
            lambda,
            kappa: lambda + 2.0 * mu / 3.0,
        }
    }

    /// Strain-energy density W(F) (J/m³), finite for every finite F: an inverted
    /// element (J ≤ 0) has the energy of the laws' continuation below
    /// the floor J₀ (`nonlinear/kinematics.rs`), which pushes it back. `None` only where
    /// F or the energy is not finite.
    pub fn energy_density(&self, f: &Mat3) -> Option<f64> {
        let w = match self.kind {
            LawKind::Linear => {
                let e = sym(f - Mat3::identity());
                self.mu * e.component_mul(&e).sum() + 0.5 * self.lambda * e.trace().powi(2)
            }
            _ => {
                let k = Kinematics::new(f);
                let (psi, _, _) = self.isochoric(k.i1_bar);
                psi + 0.5 * self.kappa * k.log_j.powi(2)
            }
        };
        w.is_finite().then_some(w)
    }

    /// [`Hyperelastic::energy_density`] and [`Hyperelastic::stress`] at once (J/m³, Pa),
    /// the kinematics of F computed once; `None` as the energy.
    pub fn energy_and_stress(&self, f: &Mat3) -> Option<(f64, Mat3)> {
        match self.kind {
            LawKind::Linear => Some((self.energy_density(f)?, self.stress(f))),
            _ => {
                let k = Kinematics::new(f);
                let (psi, d1, _) = self.isochoric(k.i1_bar);
                let energy = psi + 0.5 * self.kappa * k.log_j.powi(2);
                let stress = k.a_dev * (2.0 * d1 * k.a) + k.g * (self.kappa * k.log_j);
                energy.is_finite().then_some((energy, stress))
            }
        }
    }

    /// First Piola–Kirchhoff stress P = ∂W/∂F (Pa), for every F (inverted ones through
    /// the continuation below the floor J₀).
    pub fn stress(&self, f: &Mat3) -> Mat3 {
        match self.kind {
            LawKind::Linear => {
                let e = sym(f - Mat3::identity());
                e * (2.0 * self.mu) + Mat3::identity() * (self.lambda * e.trace())
            }
            _ => {
                let k = Kinematics::new(f);
                let (_, d1, _) = self.isochoric(k.i1_bar);
                k.a_dev * (2.0 * d1 * k.a) + k.g * (self.kappa * k.log_j)
            }
        }
    }

    /// The stress differential dP = ∂²W/∂F² : dF (Pa) at F, for a change dF.
    pub fn stress_differential(&self, f: &Mat3, df: &Mat3) -> Mat3 {
        let mut out = [Mat3::zeros()];
        self.stress_differentials(f, std::slice::from_ref(df), &mut out);
        out[0]
    }

    /// [`Hyperelastic::stress_differential`] for several changes `dfs` at one F, into
    /// `out` (same length; Pa): the kinematics of F are computed once.
    pub fn stress_differentials(&self, f: &Mat3, dfs: &[Mat3], out: &mut [Mat3]) {
        match self.kind {
            LawKind::Linear => {
                for (o, df) in out.iter_mut().zip(dfs) {
                    *o = (df + df.transpose()) * self.mu
                        + Mat3::identity() * (self.lambda * df.trace());
                }
            }
            _ => {
                let k = Kinematics::new(f);
                let (_, d1, d2) = self.isochoric(k.i1_bar);
                let g = k.g;
                for (o, df) in out.iter_mut().zip(dfs) {
                    // dℓ = G:dF; G = F⁻ᵀ above the floor, so dG = −F⁻ᵀ dFᵀ F⁻ᵀ there.
                    let d_log_j = g.dot(df);
                    let d_g = k.d_g(f, df);
                    let d_i1_bar = 2.0 * k.a * k.a_dev.dot(df);
                    let d_a = -2.0 / 3.0 * k.a * d_log_j;
                    let d_a_dev = df - g * (2.0 / 3.0 * f.dot(df)) - d_g * (k.i1 / 3.0);
                    let iso = k.a_dev * (2.0 * d2 * d_i1_bar * k.a)
                        + (k.a_dev * d_a + d_a_dev * k.a) * (2.0 * d1);
                    let vol = g * (self.kappa * d_log_j) + d_g * (self.kappa * k.log_j);
                    *o = iso + vol;
                }
            }
        }
    }

    /// The tangent moduli ∂P/∂F at F as a 9 × 9 matrix (Pa): entry (3a + b, 3c + d) is
    /// ∂P_ab/∂F_cd, so that dP flattened row by row is this times dF flattened so.
    pub fn moduli(&self, f: &Mat3) -> [[f64; 9]; 9] {
        let units: [Mat3; 9] = std::array::from_fn(|l| {
            let mut e = Mat3::zeros();
            e[(l / 3, l % 3)] = 1.0;
            e
        });
        let mut columns = [Mat3::zeros(); 9];
        self.stress_differentials(f, &units, &mut columns);
        std::array::from_fn(|i| std::array::from_fn(|l| columns[l][(i / 3, i % 3)]))
    }

    /// [`Hyperelastic::moduli`] less those of the small-strain law with the same moduli
    /// (Pa): μ(δ_ac δ_bd + δ_ad δ_bc) + λ δ_ab δ_cd, constant in F.
    pub fn moduli_beyond_linear(&self, f: &Mat3) -> [[f64; 9]; 9] {
        let mut c = self.moduli(f);
        for a in 0..3 {
            for b in 0..3 {
                c[3 * a + b][3 * a + b] -= self.mu;
                c[3 * a + b][3 * b + a] -= self.mu;
                c[4 * a][4 * b] -= self.lambda;
            }
        }
        c
    }

    /// The small-strain law with the same moduli (W = μ ε:ε + λ/2 (tr ε)²).
    pub fn linearised(&self) -> Self {
        Self {
            kind: LawKind::Linear,
            ..*self
        }
    }

    /// Ψ(Ī₁) and its first two derivatives in Ī₁ (Pa). The exponential continues as its
    /// second-order Taylor polynomial beyond γ(Ī₁ − 3) = [`STIFFENING_CAP`], so that no
    /// finite F overflows it.
    fn isochoric(&self, i1_bar: f64) -> (f64, f64, f64) {
        let x = i1_bar - 3.0;
        match self.kind {
            LawKind::VerondaWestmann { stiffening: g } if g > 0.0 => {
                let capped = (g * x).min(STIFFENING_CAP);
                let e = capped.exp();
                let (psi, d1, d2) = (
                    0.5 * self.mu / g * (e - 1.0),
                    0.5 * self.mu * e,
                    0.5 * self.mu * g * e,
                );
                let beyond = x - capped / g;
                (
                    psi + d1 * beyond + 0.5 * d2 * beyond * beyond,
                    d1 + d2 * beyond,
                    d2,
                )
            }
            _ => (0.5 * self.mu * x, 0.5 * self.mu, 0.0),
        }
    }
}

/// γ(Ī₁ − 3) beyond which the Veronda–Westmann exponential continues quadratically: a
/// shear stiffening of e²⁰, far past any tissue's, so that only states no equilibrium
/// reaches (a line search's trial, an inverted element) see the continuation.
const STIFFENING_CAP: f64 = 20.0;

fn sym(m: Mat3) -> Mat3 {
    (m + m.transpose()) * 0.5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_and_stress_at_once_are_each_alone() {
        let f = Mat3::new(1.2, 0.1, -0.05, 0.02, 0.9, 0.08, -0.1, 0.03, 1.05);
        let material = Material::new(3.0e4, 0.45, 1000.0).unwrap();
        for kind in [
            LawKind::Linear,
            LawKind::NeoHookean,
            LawKind::VerondaWestmann { stiffening: 5.0 },
        ] {
            let law = Hyperelastic::new(kind, &material);
            let (w, p) = law.energy_and_stress(&f).expect("J > 0");
            assert_eq!(Some(w), law.energy_density(&f), "{kind:?}");
            assert_eq!(p, law.stress(&f), "{kind:?}");
        }
        let inverted = Mat3::new(-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0);
        let law = Hyperelastic::new(LawKind::NeoHookean, &material);
        let (w, p) = law.energy_and_stress(&inverted).expect("finite");
        assert_eq!(
            (Some(w), p),
            (law.energy_density(&inverted), law.stress(&inverted))
        );
        assert_eq!(law.energy_and_stress(&Mat3::repeat(f64::NAN)), None);
    }

    #[test]
    fn the_moduli_map_a_change_of_f_to_the_stress_differential() {
        let f = Mat3::new(1.2, 0.1, -0.05, 0.02, 0.9, 0.08, -0.1, 0.03, 1.05);
        let df = Mat3::new(0.3, -0.2, 0.1, 0.05, 0.4, -0.15, 0.2, 0.1, -0.25);
        for law in laws() {
            let c = law.moduli(&f);
            let expected = law.stress_differential(&f, &df);
            for i in 0..9 {
                let got: f64 = (0..9).map(|l| c[i][l] * df[(l / 3, l % 3)]).sum();
                let want = expected[(i / 3, i % 3)];
                assert!(
                    (got - want).abs() <= 1e-12 * law.mu.max(want.abs()),
                    "{law:?}: {got} vs {want}"
                );
            }
            let beyond = law.moduli_beyond_linear(&f);
            let linear = law.linearised().moduli(&f);
            for i in 0..9 {
                for l in 0..9 {
                    let want = c[i][l] - linear[i][l];
                    assert!(
                        (beyond[i][l] - want).abs() <= 1e-12 * law.mu,
                        "{law:?} ({i}, {l})"
                    );
                }
            }
        }
    }

    fn laws() -> Vec<Hyperelastic> {
        let m = Material::new(3.0e4, 0.45, 1000.0).unwrap();
        [
            LawKind::Linear,
            LawKind::NeoHookean,
            LawKind::VerondaWestmann { stiffening: 5.0 },
        ]
        .into_iter()
        .map(|k| Hyperelastic::new(k, &m))
        .collect()
    }

    fn deformed() -> Mat3 {
        Mat3::new(1.2, 0.1, -0.05, 0.03, 0.85, 0.12, -0.07, 0.02, 1.1)
    }

    /// Central differences of W give P, and of P give dP, to truncation error.
    #[test]
    fn stress_and_its_differential_are_the_derivatives_of_the_energy() {
        let f = deformed();
        let h = 1e-6;
        for law in laws() {
            let p = law.stress(&f);
            let dp = law.stress_differential(
                &f,
                &Mat3::new(0.3, -0.2, 0.1, 0.5, 0.2, -0.4, 0.1, 0.7, -0.3),
            );
            let mut p_fd = Mat3::zeros();
            for i in 0..9 {
                let mut e = Mat3::zeros();
                e[i] = h;
                let (wp, wm) = (
                    law.energy_density(&(f + e)).unwrap(),
                    law.energy_density(&(f - e)).unwrap(),
                );
                p_fd[i] = (wp - wm) / (2.0 * h);
            }
            assert!(
                (p - p_fd).abs().max() < 1e-6 * p.abs().max(),
                "{:?}: {p} vs {p_fd}",
                law.kind
            );
            let df = Mat3::new(0.3, -0.2, 0.1, 0.5, 0.2, -0.4, 0.1, 0.7, -0.3);
            let dp_fd = (law.stress(&(f + df * h)) - law.stress(&(f - df * h))) / (2.0 * h);
            assert!(
                (dp - dp_fd).abs().max() < 1e-6 * dp.abs().max(),
                "{:?}: {dp} vs {dp_fd}",
                law.kind
            );
        }
    }

    /// At F = I every law has zero stress and the linear-elastic tangent.
    #[test]
    fn every_law_is_linear_elasticity_at_small_strain() {
        let laws = laws();
        let df = Mat3::new(0.3, -0.2, 0.1, 0.5, 0.2, -0.4, 0.1, 0.7, -0.3);
        let linear = laws[0].stress_differential(&Mat3::identity(), &df);
        for law in &laws {
            assert!(law.stress(&Mat3::identity()).abs().max() < 1e-9);
            let dp = law.stress_differential(&Mat3::identity(), &df);
            assert!(
                (dp - linear).abs().max() < 1e-9 * linear.abs().max(),
                "{:?}",
                law.kind
            );
        }
    }

    /// A small stiffening exponent approaches neo-Hookean; a larger one stiffens.
    #[test]
    fn the_exponential_law_tends_to_neo_hookean_and_stiffens_with_its_exponent() {
        let m = Material::new(3.0e4, 0.3, 1000.0).unwrap();
        let f = deformed();
        let nh = Hyperelastic::new(LawKind::NeoHookean, &m).stress(&f);
        let vw = |g| Hyperelastic::new(LawKind::VerondaWestmann { stiffening: g }, &m).stress(&f);
        assert!((vw(1e-9) - nh).abs().max() < 1e-6 * nh.abs().max());
        assert!(vw(5.0).norm() > vw(1.0).norm() && vw(1.0).norm() > nh.norm());
    }

    /// An inverted element has a finite energy, and its stress and the stress
    /// differential are still the energy's derivatives (central differences), so a
    /// Newton solve that strays into inversion is pushed back rather than stopped.
    #[test]
    fn inverted_elements_have_a_finite_energy_and_its_derivatives() {
        let inverted = [
            Mat3::from_diagonal(&crate::Vec3::new(1.0, 1.0, -0.5)),
            Mat3::new(0.3, 0.4, -0.2, 0.1, 0.05, 0.3, -0.2, 0.1, 0.1),
            Mat3::from_diagonal(&crate::Vec3::new(1.0, 1.0, 0.0)),
        ];
        let h = 1e-7;
        for law in &laws()[1..] {
            for f in &inverted {
                let w = law.energy_density(f).expect("finite");
                assert!(w > law.energy_density(&Mat3::identity()).unwrap());
                let p = law.stress(f);
                for i in 0..9 {
                    let mut e = Mat3::zeros();
                    e[i] = h;
                    let fd = (law.energy_density(&(f + e)).unwrap()
                        - law.energy_density(&(f - e)).unwrap())
                        / (2.0 * h);
                    assert!(
                        (fd - p[i]).abs() <= 1e-5 * p.abs().max(),
                        "{:?} at {f}: ∂W/∂F[{i}] {fd} against P {}",
                        law.kind,
                        p[i]
                    );
                }
                let df = Mat3::new(0.3, -0.2, 0.1, 0.5, 0.2, -0.4, 0.1, 0.7, -0.3);
                let dp = law.stress_differential(f, &df);
                let dp_fd = (law.stress(&(f + df * h)) - law.stress(&(f - df * h))) / (2.0 * h);
                assert!(
                    (dp - dp_fd).abs().max() < 1e-5 * dp.abs().max(),
                    "{:?} at {f}: {dp} vs {dp_fd}",
                    law.kind
                );
            }
            // Pressed flat from J = 1 to J = −0.5 along one axis, the volumetric
            // continuation resists all the way: the stress along the axis stays
            // compressive.
            for s in [0.9, J_FLOOR, 0.0, -0.5] {
                let f = Mat3::from_diagonal(&crate::Vec3::new(1.0, 1.0, s));
                assert!(law.stress(&f)[(2, 2)] < 0.0, "{:?} at J = {s}", law.kind);
            }
        }
    }

    /// Far past any tissue's stiffening the exponential law stays finite, and its
    /// continuation is the exponential's second-order Taylor polynomial.
    #[test]
    fn the_exponential_law_stays_finite_under_extreme_shear() {
        let m = Material::new(3.0e4, 0.45, 1000.0).unwrap();
        let law = Hyperelastic::new(LawKind::VerondaWestmann { stiffening: 5.0 }, &m);
        let mut f = Mat3::identity();
        f[(0, 1)] = 40.0;
        let w = law.energy_density(&f).expect("finite");
        assert!(w.is_finite() && w > 0.0);
        assert!(law.stress(&f).iter().all(|x| x.is_finite()));
        let x_cap = STIFFENING_CAP / 5.0;
        let (psi, d1, d2) = law.isochoric(3.0 + x_cap);
        let (psi2, d1b, _) = law.isochoric(3.0 + x_cap + 0.1);
        assert!((psi2 - (psi + 0.1 * d1 + 0.005 * d2)).abs() < 1e-9 * psi2);
        assert!((d1b - (d1 + 0.1 * d2)).abs() < 1e-9 * d1b);
    }
}
