//! Optimized cubature for the reduced model (An, Kim & James 2008): a few elements with
//! non-negative weights whose weighted share of the reduced internal forces matches the
//! sum over every active element at a set of training states.
//!
//! Greedy selection: the candidate whose force column best correlates with what the
//! chosen ones still miss joins them, the weights are refitted by least squares, and
//! any that turn negative leave again (An, Kim & James §4). Written here rather than
//! taken from the `nnls` crate: that solves one non-negative least-squares problem
//! over all columns (on ndarray), not this incremental selection, and a full
//! Lawson–Hanson over 6,000–11,000 candidate elements picks far more of them. On the
//! default block pressed to 6 mm (neo-Hookean and Veronda–Westmann γ = 5, 15–19 shapes,
//! 24 training states) 36–51 elements of 6,118–11,064 active fit the training forces to
//! 1e-3 and give the full FEM's force over 0.25–6 mm to 0.03 %
//! (`tests/nonlinear_reduced.rs`), and a Newton iteration's reduced forces and tangent
//! cost 62 µs instead of 15 ms (`cargo bench --bench nonlinear -- nonlinear_reduced`).

use faer::linalg::solvers::Solve;
use faer::Mat;

use super::reduced::ReducedStatics;

/// A cubature: elements and their weights (dimensionless, ≥ 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Cubature {
    /// (element, weight) pairs.
    pub elements: Vec<(usize, f64)>,
    /// ‖b − A w‖ / ‖b‖ over the training states, each state's forces scaled to unit
    /// norm (dimensionless).
    pub training_error: f64,
}

/// Trains a cubature for `reduced`'s current basis over its active elements at the
/// training states `states` (reduced coordinates, each as long as the basis): at most
/// `max_elements` elements, stopping once the training error is at most `tolerance`.
pub fn train_cubature(
    reduced: &ReducedStatics,
    states: &[Vec<f64>],
    max_elements: usize,
    tolerance: f64,
) -> Cubature {
    let r = reduced.shapes();
    let candidates = reduced.active();
    let rows = states.len() * r;
    // A: each candidate's reduced forces at each state; b = A·1, the exact sum. Each
    // state's rows are scaled to unit ‖b‖ so shallow states count as much as deep ones.
    let mut a = Mat::<f64>::zeros(rows, candidates.len());
    let mut column = vec![0.0; r];
    let mut displacement = vec![crate::Vec3::zeros(); reduced.nodes()];
    for (s, q) in states.iter().enumerate() {
        reduced.displacement(q, &mut displacement);
        for (c, &el) in candidates.iter().enumerate() {
            reduced.element_forces(el, &displacement, &mut column);
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
            let selected = Mat::<f64>::from_fn(rows, chosen.len(), |i, j| a[(i, chosen[j])]);
            let normal = selected.transpose() * &selected;
            let rhs = selected.transpose() * &b;
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
    Cubature {
        elements: chosen
            .iter()
            .zip(&weights)
            .map(|(&c, &w)| (candidates[c], w))
            .collect(),
        training_error: error,
    }
}
