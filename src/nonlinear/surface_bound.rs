//! An upper bound on the surface displacement of the reduced model, cheap per step.
//!
//! Taking max |U q| over the surface nodes each step reads all their rows of U, a large
//! part of a pressed model step with the cubature. The bound here takes that maximum
//! now and then, at q₀, and in between adds what q's change can move a surface node by:
//! |U(q − q₀)| ≤ Σⱼ |qⱼ − q₀ⱼ| maxᵥ|Uᵥⱼ|, each shape's largest surface value taken
//! once, when it joins the basis.

use super::reduced::ReducedStatics;

/// How loose the bound may grow, relative to the maximum it was last taken from,
/// before it is taken again (dimensionless).
const SLACK: f64 = 0.1;

/// The largest surface displacement at a recent state plus how far the state has moved
/// since (m).
#[derive(Clone, Debug, Default)]
pub(super) struct SurfaceBound {
    /// max |U q₀| over the surface nodes (m).
    exact: f64,
    /// q₀ (√J).
    at: Vec<f64>,
    /// Each shape's largest surface displacement per unit coordinate (m/√J).
    peaks: Vec<f64>,
    /// The basis's restarts the peaks are of.
    restarts: u64,
}

impl SurfaceBound {
    /// The bound at q (m) for `reduced`'s basis over `surface` (node indices).
    pub(super) fn at(&mut self, reduced: &ReducedStatics, surface: &[usize], q: &[f64]) -> f64 {
        if reduced.restarts() != self.restarts {
            *self = Self {
                restarts: reduced.restarts(),
                ..Self::default()
            };
        }
        let r = reduced.shapes().min(q.len());
        self.peaks.truncate(r);
        for j in self.peaks.len()..r {
            let peak = surface
                .iter()
                .map(|&v| reduced.shape_at_node(j, v).norm())
                .fold(0.0, f64::max);
            self.peaks.push(peak);
        }
        let drift: f64 = (0..r)
            .map(|j| (q[j] - self.at.get(j).copied().unwrap_or(0.0)).abs() * self.peaks[j])
            .sum();
        if self.at.is_empty() || drift > SLACK * self.exact {
            self.exact = surface
                .iter()
                .map(|&v| reduced.node_displacement(v, q).norm())
                .fold(0.0, f64::max);
            self.at = q[..r].to_vec();
            return self.exact;
        }
        self.exact + drift
    }

    /// Σⱼ |xⱼ| maxᵥ|Uᵥⱼ|: a bound on |U x| over the surface (m) for coordinates `x`,
    /// from the peaks of the shapes [`SurfaceBound::at`] has seen.
    pub(super) fn peak_sum(&self, x: &[f64]) -> f64 {
        x.iter().zip(&self.peaks).map(|(x, p)| x.abs() * p).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nonlinear::test_block::fixed_base_block;
    use crate::nonlinear::LawKind;

    /// Along a walk in the coordinates the bound is never below the true largest
    /// surface displacement, and never more than [`SLACK`] above it plus the walk's
    /// last stride; it takes the true maximum again once it has drifted that far.
    #[test]
    fn the_bound_holds_and_stays_within_its_slack() {
        let (mesh, statics, top) = fixed_base_block([4, 4, 2], LawKind::NeoHookean);
        let mut reduced = ReducedStatics::new(statics, 8).expect("reduced");
        let n = 3 * mesh.nodes.len();
        // Three point loads near the top centre, along three axes: three shapes.
        for d in [3 * top + 2, 3 * (top - 1), 3 * (top + 1) + 1] {
            let mut force = vec![0.0; n];
            force[d] = 1.0;
            reduced.add_shape(&force).expect("shape");
        }
        assert_eq!(reduced.shapes(), 3);
        let surface: Vec<usize> = (0..mesh.nodes.len()).collect();
        let truth = |q: &[f64]| {
            surface
                .iter()
                .map(|&v| reduced.node_displacement(v, q).norm())
                .fold(0.0, f64::max)
        };
        let mut bound = SurfaceBound::default();
        let mut taken = 0;
        for i in 0..200 {
            let t = i as f64 * 0.05;
            let q = [t.sin(), 0.5 * (1.3 * t).cos(), 0.2 * t];
            let (b, exact) = (bound.at(&reduced, &surface, &q), truth(&q));
            assert!(
                b >= exact * (1.0 - 1e-12),
                "step {i}: bound {b} below {exact}"
            );
            assert!(
                b <= exact * (1.0 + 3.0 * SLACK),
                "step {i}: bound {b} far above {exact}"
            );
            taken += usize::from(b == exact);
        }
        assert!(
            (5..150).contains(&taken),
            "the maximum was taken {taken} times in 200"
        );
    }
}
