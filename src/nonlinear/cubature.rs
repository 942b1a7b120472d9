//! Optimized cubature for the reduced model (An, Kim & James 2008): a few terms
//! (elements, and with nodal-averaged pressure nodes) with non-negative weights whose
//! weighted share of the reduced internal forces matches the sum over every active term
//! at a set of training states.
//!
//! Greedy selection: the candidate whose force column best correlates with what the
//! chosen ones still miss joins them, the weights are refitted by least squares, and
//! any that turn negative leave again (An, Kim & James §4). Written here rather than
//! taken from the `nnls` crate: that solves one non-negative least-squares problem
//! over all columns (on ndarray), not this incremental selection, and a full
//! Lawson–Hanson over thousands of candidates picks far more of them
//! (docs/benchmarks.md has the counts and times).

use faer::linalg::matmul::matmul;
use faer::linalg::solvers::Solve;
use faer::{Accum, Mat, Par};

use super::quadrature::{Cubature, Quadrature};
use super::reduced::ReducedStatics;

/// A candidate term of a cubature.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Term {
    Element(usize),
    Volume(usize),
}

/// Trains a cubature for `reduced`'s current basis over its active terms at the
/// training states `states` (reduced coordinates, each as long as the basis): at most
/// `max_elements` elements, stopping once the training error is at most `tolerance`.
pub fn train_cubature(
    reduced: &ReducedStatics,
    states: &[Vec<f64>],
    max_elements: usize,
    tolerance: f64,
) -> Cubature {
    let r = reduced.shapes();
    let active = reduced.active();
    let candidates: Vec<Term> = active
        .elements
        .iter()
        .map(|&e| Term::Element(e))
        .chain(active.volumes.iter().map(|&a| Term::Volume(a)))
        .collect();
    let rows = states.len() * r;
    // A: each candidate's reduced forces at each state; b = A·1, the exact sum. Each
    // state's rows are scaled to unit ‖b‖ so shallow states count as much as deep ones.
    let mut a = Mat::<f64>::zeros(rows, candidates.len());
    let mut column = vec![0.0; r];
    let mut displacement = vec![crate::Vec3::zeros(); reduced.nodes()];
    for (s, q) in states.iter().enumerate() {
        reduced.displacement(q, &mut displacement);
        for (c, &term) in candidates.iter().enumerate() {
            match term {
                Term::Element(el) => reduced.element_forces(el, &displacement, &mut column),
                Term::Volume(a) => reduced.volume_forces(a, &displacement, &mut column),
            }
            for (j, f) in column.iter().enumerate() {
                a[(s * r + j, c)] = *f;
            }
        }
    }
    let mut b = Mat::<f64>::from_fn(rows, 1, |i, _| a.row(i).iter().sum());
    for s in 0..states.len() {
        let norm = (0..r)
            .map(|j| b[(s * r + j, 0)].powi(2))
            .sum::<f64>()
            .sqrt();
        if norm > 0.0 {
            for i in s * r..(s + 1) * r {
                b[(i, 0)] /= norm;
                for c in 0..candidates.len() {
                    a[(i, c)] /= norm;
                }
            }
        }
    }
    let b_norm = b.norm_l2();
    let column_norm: Vec<f64> = (0..candidates.len()).map(|c| a.col(c).norm_l2()).collect();
    let mut chosen: Vec<usize> = Vec::new();
    // Each candidate joins at most once (a weight that turned negative does not come
    // back), so the selection ends.
    let mut tried = vec![false; candidates.len()];
    let mut weights: Vec<f64> = Vec::new();
    let mut residual = b.clone();
    let mut error = if b_norm > 0.0 { 1.0 } else { 0.0 };
    while error > tolerance && chosen.len() < max_elements.min(candidates.len()) {
        let best = (0..candidates.len())
            .filter(|&c| column_norm[c] > 0.0 && !tried[c])
            .map(|c| {
                let correlation: f64 = (0..rows).map(|i| a[(i, c)] * residual[(i, 0)]).sum();
                (c, correlation / column_norm[c])
            })
            .max_by(|x, y| x.1.total_cmp(&y.1));
        let Some((best, correlation)) = best else {
            break;
        };
        if correlation <= 0.0 {
            break;
        }
        chosen.push(best);
        tried[best] = true;
        // Least squares on the chosen columns; drop the most negative weight until none is.
        loop {
            let k = chosen.len();
            let selected = Mat::<f64>::from_fn(rows, k, |i, j| a[(i, chosen[j])]);
            // On one core: the correction thread runs beside the model thread, and
            // faer's default would take the other core too (its LU below stays
            // sequential at these sizes).
            let (mut normal, mut rhs) = (Mat::<f64>::zeros(k, k), Mat::<f64>::zeros(k, 1));
            for (out, right) in [
                (normal.as_mut(), selected.as_ref()),
                (rhs.as_mut(), b.as_ref()),
            ] {
                matmul(
                    out,
                    Accum::Replace,
                    selected.transpose(),
                    right,
                    1.0,
                    Par::Seq,
                );
            }
            let fit = normal.partial_piv_lu().solve(&rhs);
            weights = (0..chosen.len()).map(|j| fit[(j, 0)]).collect();
            let most_negative = (0..weights.len())
                .filter(|&j| weights[j] < 0.0 || !weights[j].is_finite())
                .min_by(|&x, &y| weights[x].total_cmp(&weights[y]));
            match most_negative {
                Some(j) => {
                    chosen.remove(j);
                }
                None => break,
            }
        }
        for i in 0..rows {
            residual[(i, 0)] = b[(i, 0)]
                - chosen
                    .iter()
                    .zip(&weights)
                    .map(|(&c, w)| a[(i, c)] * w)
                    .sum::<f64>();
        }
        error = residual.norm_l2() / b_norm;
    }
    let (mut elements, mut volumes) = (Vec::new(), Vec::new());
    for (&c, &w) in chosen.iter().zip(&weights) {
        match candidates[c] {
            Term::Element(e) => elements.push((e, w)),
            Term::Volume(a) => volumes.push((a, w)),
        }
    }
    elements.sort_unstable_by_key(|&(e, _)| e);
    volumes.sort_unstable_by_key(|&(a, _)| a);
    Cubature {
        elements,
        volumes,
        training_error: error,
    }
}

/// Recent corrected states a [`CubatureKeeper`] trains on, besides the one at hand.
const RECENT_STATES: usize = 4;

/// The cubature's error at a corrected state, |full − cubature| over the full sum's
/// forces beyond linear (dimensionless), above which it is trained again.
const RETRAIN: f64 = 0.05;

/// The training error a cubature is grown to (dimensionless; [`train_cubature`]). Its
/// offset ([`super::quadrature::TaylorOffset`]) takes out the error at each corrected
/// state, so only the error in the forces' change between corrections is left.
const TRAINING_TOLERANCE: f64 = 1e-2;

/// Active elements per cubature element below which the full sum is kept: a cubature
/// saves little there and its training costs a pass per state over every element.
const WORTHWHILE: usize = 8;

/// The cubature the correction thread hands the model thread with each correction
/// (`background.rs`): trained over the state corrected and a few before it,
/// offset to the full sum at each corrected state ([`super::quadrature::TaylorOffset`]),
/// and trained again when its error at one exceeds [`RETRAIN`] or the basis restarts.
#[derive(Default)]
pub(super) struct CubatureKeeper {
    cubature: Option<Cubature>,
    /// Recent corrected states since the basis last restarted.
    states: Vec<Vec<f64>>,
    restarts: u64,
}

impl CubatureKeeper {
    /// The quadrature for `mirror`'s basis at q, given the full sum's reduced forces
    /// (N) and tangent (N/m, row-major) there, or `None` while the full sum is cheap
    /// enough (few active elements).
    pub(super) fn quadrature(
        &mut self,
        mirror: &ReducedStatics,
        q: &[f64],
        forces: &[f64],
        tangent: &[f64],
    ) -> Option<Quadrature> {
        if mirror.restarts() != self.restarts {
            self.restarts = mirror.restarts();
            self.states.clear();
            self.cubature = None;
        }
        let r = mirror.shapes();
        let most = 2 * r;
        if mirror.active().len() < WORTHWHILE * most {
            return None;
        }
        if let Some(cubature) = &self.cubature {
            let quadrature = mirror.cubature_at(cubature, q, forces, tangent);
            let beyond: f64 = (0..r)
                .map(|j| (forces[j] - q[j]).powi(2))
                .sum::<f64>()
                .sqrt();
            let error = quadrature
                .offset
                .as_ref()
                .map_or(0.0, |o| o.forces.iter().map(|a| a * a).sum::<f64>().sqrt());
            if error <= RETRAIN * beyond {
                self.remember(q);
                return Some(quadrature);
            }
        }
        let mut states: Vec<Vec<f64>> = self
            .states
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.resize(r, 0.0);
                s
            })
            .collect();
        states.extend([0.5, 1.0, 1.25].map(|scale| q.iter().map(|x| scale * x).collect()));
        // Only states in the laws' range: the continuation's forces there are orders of
        // magnitude off, and a cubature fitted to them is off everywhere.
        states.retain(|s| mirror.in_range(s));
        if states.is_empty() {
            self.cubature = None;
            return None;
        }
        let cubature = train_cubature(mirror, &states, most, TRAINING_TOLERANCE);
        tracing::debug!(
            target: "palpa::nonlinear::trace",
            "cubature trained over {} states: {} elements",
            states.len(),
            cubature.elements.len()
        );
        self.remember(q);
        if cubature.elements.is_empty() && cubature.volumes.is_empty() {
            self.cubature = None;
            return None;
        }
        let quadrature = mirror.cubature_at(&cubature, q, forces, tangent);
        self.cubature = Some(cubature);
        Some(quadrature)
    }

    /// Keeps q among the [`RECENT_STATES`] last.
    fn remember(&mut self, q: &[f64]) {
        if self.states.len() == RECENT_STATES {
            self.states.remove(0);
        }
        self.states.push(q.to_vec());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nonlinear::statics::LinearConstraint;
    use crate::nonlinear::test_block::fixed_base_block;
    use crate::nonlinear::LawKind;
    use crate::Vec3;

    /// A 2 × 2 × 1 cm Veronda–Westmann (γ = 5) block, base fixed, its top centre
    /// pressed 3 mm, with its correction shapes joined: the reduced model and q.
    fn pressed() -> (ReducedStatics, Vec<f64>) {
        let (mesh, statics, top) =
            fixed_base_block([8, 8, 4], LawKind::VerondaWestmann { stiffening: 5.0 });
        let mut reduced = ReducedStatics::new(statics, 16).expect("reduced");
        let mut constraints = vec![LinearConstraint {
            coefficients: vec![(3 * top + 2, 1.0)],
            value: -0.003,
            multiplier: 0.0,
        }];
        reduced.add_constraint_shapes(&constraints).expect("shape");
        let loads = vec![Vec3::zeros(); mesh.nodes.len()];
        let mut q = vec![0.0; reduced.shapes()];
        for _ in 0..4 {
            q.resize(reduced.shapes(), 0.0);
            reduced
                .solve(
                    &mut q,
                    &loads,
                    &mut constraints,
                    &crate::nonlinear::NewtonOptions::default(),
                )
                .expect("solves");
            reduced
                .enrich(&q, &loads, &constraints, 0.0)
                .expect("enriches");
        }
        q.resize(reduced.shapes(), 0.0);
        (reduced, q)
    }

    /// |a − b| over the forces beyond linear (a − q).
    fn misfit(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// With its offset, a cubature's forces and tangent at the state it was offset at
    /// are the full sum's, and its error elsewhere falls with the square of the
    /// distance: the offset takes out the error's constant and linear parts.
    #[test]
    fn an_offset_cubature_is_exact_at_its_state_and_second_order_near_it() {
        let (mut reduced, q) = pressed();
        let r = reduced.shapes();
        assert!(
            r >= 3 && reduced.active_elements() > 50,
            "{r} shapes, {} active",
            reduced.active_elements()
        );
        let states: Vec<Vec<f64>> = [0.5, 1.0]
            .iter()
            .map(|s| q.iter().map(|x| s * x).collect())
            .collect();
        // Few elements on purpose: the bare cubature is off by percents.
        let cubature = train_cubature(&reduced, &states, 4, 0.0);
        let (forces, tangent) = reduced.forces_and_tangent_at(&q);
        // Away from q along a direction off the training states.
        let direction: Vec<f64> = (0..r)
            .map(|j| if j % 2 == 0 { 1.0 } else { -0.5 } * q[0])
            .collect();
        let along =
            |t: f64| -> Vec<f64> { q.iter().zip(&direction).map(|(q, d)| q + t * d).collect() };
        let full: Vec<Vec<f64>> = [0.0, 0.005, 0.01]
            .iter()
            .map(|&t| reduced.forces_and_tangent_at(&along(t)).0)
            .collect();
        let quadrature = reduced.cubature_at(&cubature, &q, &forces, &tangent.values);
        let active = reduced.active().clone();
        reduced
            .join_mirrored(&active, Vec::new(), Some(quadrature))
            .expect("joins");
        let cubature_at = |t: f64| reduced.forces_and_tangent_at(&along(t));
        let (at_q, tangent_at_q) = cubature_at(0.0);
        let scale = misfit(&forces, &q);
        assert!(
            misfit(&at_q, &forces) < 1e-12 * scale,
            "{at_q:?} {forces:?}"
        );
        let worst = tangent_at_q
            .values
            .iter()
            .zip(&tangent.values)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-10, "tangent off by {worst}");
        let (near, far) = (
            misfit(&cubature_at(0.005).0, &full[1]),
            misfit(&cubature_at(0.01).0, &full[2]),
        );
        eprintln!(
            "offset cubature of {} terms: error {near:.3e} at t = 0.005, {far:.3e} at \
             0.01 (forces beyond linear {scale:.3e})",
            cubature.elements.len() + cubature.volumes.len()
        );
        assert!(
            far > 1e-9 * scale,
            "the bare cubature is inexact, so is this away from q"
        );
        assert!(
            (3.0..5.0).contains(&(far / near)),
            "error ratio {} for twice the distance",
            far / near
        );
    }
}
