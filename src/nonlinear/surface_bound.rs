//! An upper bound on the surface displacement of the reduced model, cheap per step.
//!
//! Taking max |U q| over the surface nodes each step reads all their rows of U, a large
//! part of a pressed model step with the cubature. The bound here takes that maximum
//! now and then, at q₁, and in between adds what q's change can move a surface node by:
//! |U(q − q₁)| ≤ Σⱼ |qⱼ − q₁ⱼ| maxᵥ|Uᵥⱼ|, each shape's largest surface value taken
//! once, when it joins the basis. A pass over the whole surface (at q₀) also keeps the
//! nodes near its maximum as candidates and the largest displacement of the others; the
//! maximum is then taken again over the candidates alone while the others, moved by at
//! most their drift since q₀, stay below it: a sliding contact's dent, not the whole
//! surface, each time q has drifted.

use super::reduced::ReducedStatics;

/// How loose the bound may grow, relative to the maximum it was last taken from,
/// before it is taken again (dimensionless).
const SLACK: f64 = 0.1;

/// The share of a full pass's maximum above which a node is a candidate for the later
/// maxima (dimensionless): the lower, the more candidates and the rarer full passes.
const CANDIDATE_SHARE: f64 = 0.25;

/// The largest surface displacement at a recent state plus how far the state has moved
/// since (m).
#[derive(Clone, Debug, Default)]
pub(super) struct SurfaceBound {
    /// max |U q₁| over the surface nodes (m).
    exact: f64,
    /// q₁ (√J).
    at: Vec<f64>,
    /// q₀, the last full pass's state (√J).
    full_at: Vec<f64>,
    /// The surface nodes above [`CANDIDATE_SHARE`] of the maximum at q₀.
    candidates: Vec<usize>,
    /// max |U q₀| over the other surface nodes (m).
    others: f64,
    /// Full passes over the surface taken.
    full_passes: u64,
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
        let q = &q[..r];
        if !self.at.is_empty() {
            let drift = self.drift(q, &self.at);
            if drift <= SLACK * self.exact {
                return self.exact + drift;
            }
            // The others stay below the candidates' maximum: it is the surface's.
            let others = self.others + self.drift(q, &self.full_at);
            let near = self
                .candidates
                .iter()
                .map(|&v| reduced.node_displacement(v, q).norm())
                .fold(0.0, f64::max);
            if others <= near {
                self.exact = near;
                self.at.clear();
                self.at.extend_from_slice(q);
                return near;
            }
        }
        self.full_pass(reduced, surface, q)
    }

    /// Takes the maximum over the whole surface at q, its candidates and the others'.
    fn full_pass(&mut self, reduced: &ReducedStatics, surface: &[usize], q: &[f64]) -> f64 {
        self.full_passes += 1;
        let sizes: Vec<f64> = surface
            .iter()
            .map(|&v| reduced.node_displacement(v, q).norm())
            .collect();
        self.exact = sizes.iter().copied().fold(0.0, f64::max);
        let threshold = CANDIDATE_SHARE * self.exact;
        self.candidates.clear();
        self.others = 0.0;
        for (&v, &size) in surface.iter().zip(&sizes) {
            if size > threshold {
                self.candidates.push(v);
            } else {
                self.others = self.others.max(size);
            }
        }
        self.at.clear();
        self.at.extend_from_slice(q);
        self.full_at.clone_from(&self.at);
        self.exact
    }

    /// Σⱼ |qⱼ − fromⱼ| maxᵥ|Uᵥⱼ| (m), `from` zero past its end.
    fn drift(&self, q: &[f64], from: &[f64]) -> f64 {
        q.iter()
            .zip(&self.peaks)
            .enumerate()
            .map(|(j, (q, p))| (q - from.get(j).copied().unwrap_or(0.0)).abs() * p)
            .sum()
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
    use crate::nonlinear::test_block::block_with_three_shapes;
    use crate::nonlinear::LawKind;

    /// Along a walk in the coordinates the bound is never below the true largest
    /// surface displacement, and never more than [`SLACK`] above it plus the walk's
    /// last stride; it takes the true maximum again once it has drifted that far.
    #[test]
    fn the_bound_holds_and_stays_within_its_slack() {
        let (mesh, reduced, _) = block_with_three_shapes([4, 4, 2], LawKind::NeoHookean);
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
        // Most were taken over the candidates near the maximum, not the whole surface.
        assert!(
            2 * bound.full_passes < taken as u64,
            "{} full passes of {taken}",
            bound.full_passes
        );
    }
}
