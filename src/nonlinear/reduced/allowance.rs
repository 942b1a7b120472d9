//! What a degraded step may push with. A step that does not end on a converged state
//! of its own (a frozen tangent at the deadline, or held on the last good state)
//! predicts its rows' forces from one linearisation, which can be far from any state the
//! tissue reached: a tangent of a deeper state applied to a state scaled back toward
//! rest, or the forces of an iterate the line search hardly left. Its pushing is limited
//! to the last good step's plus what the linearisation's own stiffness gives for moving
//! the rows from where the last good state has them to their targets: the hand never
//! gets more than the last good state and its stiffness allow, however bad the
//! linearisation's right-hand side.

use nalgebra::{DMatrix, DVector};

use super::model::ReducedStatics;
use super::newton::Linearised;
use super::rows::ReducedRows;

/// How much stiffer than the linearisation's tangent the tissue may grow over the
/// rows' change: a stiffening law's force runs ahead of its tangent's prediction, and a
/// degraded step that came close to converging must keep its force.
const STIFFENING_MARGIN: f64 = 2.0;

impl ReducedStatics {
    /// The most the rows with a multiplier in `rows` may push in all (N, Σ|λᵢ|):
    /// `good_force` (the last good step's Σ|λ|) plus [`STIFFENING_MARGIN`] |S⁻¹ g|₁ over
    /// those rows, with
    /// S = A T⁻¹ Aᵀ + R for `tangent` T (row-major r × r) and gᵢ row i's target less
    /// where its point is at `good` (the last good q, zero-padded to r) without the
    /// rows' forces.
    pub(in crate::nonlinear) fn degraded_allowance(
        &self,
        tangent: &[f64],
        rows: &ReducedRows,
        good: &[f64],
        good_force: f64,
    ) -> f64 {
        let (r, m) = (self.shapes(), rows.len());
        let active: Vec<usize> = (0..m).filter(|&i| rows.multipliers[i] != 0.0).collect();
        let finite = tangent.iter().all(|x| x.is_finite());
        if active.is_empty() || tangent.len() != r * r || !finite {
            return good_force;
        }
        let factors = Linearised::new(tangent, rows, r);
        let mut q = good.to_vec();
        q.resize(r, 0.0);
        let unloaded = vec![0.0; m];
        let n = active.len();
        let s = DMatrix::from_fn(n, n, |a, b| factors.schur[active[a] * m + active[b]]);
        let gap = DVector::from_iterator(
            n,
            active
                .iter()
                .map(|&i| rows.values[i] - rows.position(i, &q, &unloaded)),
        );
        let change = match s.clone().cholesky() {
            Some(llt) => Some(llt.solve(&gap)),
            None => s.lu().solve(&gap),
        };
        match change {
            Some(x) if x.iter().all(|v| v.is_finite()) => {
                good_force + STIFFENING_MARGIN * x.iter().map(|v| v.abs()).sum::<f64>()
            }
            _ => good_force,
        }
    }
}

impl ReducedRows {
    /// Scales the multipliers down, all by one factor (so the rows keep their share),
    /// until they push at most `allowance` (N) in all; a non-finite multiplier pushes
    /// nothing. Returns the factor (1: unchanged).
    pub fn limit_pushing(&mut self, allowance: f64) -> f64 {
        for l in self.multipliers.iter_mut().filter(|l| !l.is_finite()) {
            *l = 0.0;
        }
        let total: f64 = self.multipliers.iter().map(|l| l.abs()).sum();
        if total <= allowance.max(0.0) {
            return 1.0;
        }
        let factor = allowance.max(0.0) / total;
        for l in &mut self.multipliers {
            *l *= factor;
        }
        factor
    }
}

#[cfg(test)]
mod tests {
    use crate::nonlinear::test_block::block_with_three_shapes;
    use crate::nonlinear::{LawKind, LinearConstraint, NewtonOptions, ReducedRows};
    use crate::Vec3;

    /// A press 1 mm into Veronda–Westmann tissue, then a degraded step to 1.5 mm whose
    /// linearisation starts from forces far off the state (an iterate the line search
    /// hardly left): unbounded, its force is hundreds of times a converged solve's at
    /// 1.5 mm; limited, it is within the converged force's range, and a degraded step
    /// from consistent forces is left as it is.
    #[test]
    fn a_degraded_steps_force_is_bounded_by_the_last_good_state() {
        let kind = LawKind::VerondaWestmann { stiffening: 5.0 };
        let (mesh, reduced, top) = block_with_three_shapes([4, 4, 2], kind);
        let r = reduced.shapes();
        let loads = vec![Vec3::zeros(); mesh.nodes.len()];
        let options = NewtonOptions {
            relative: 1e-10,
            max_iterations: 50,
        };
        let press = |depth: f64, q: &mut Vec<f64>| {
            let mut c = [LinearConstraint {
                coefficients: vec![(3 * top + 2, 1.0)],
                value: -depth,
                multiplier: 0.0,
            }];
            reduced.solve(q, &loads, &mut c, &options).expect("solve");
            c[0].multiplier
        };
        let mut good = vec![0.0; r];
        let good_force = press(1e-3, &mut good).abs();
        let converged = press(1.5e-3, &mut good.clone()).abs();
        assert!(converged > good_force, "{converged} vs {good_force} N");

        let (mut internal, tangent) = reduced.forces_and_tangent_at(&good);
        internal.truncate(r);
        let constraint = LinearConstraint {
            coefficients: vec![(3 * top + 2, 1.0)],
            value: -1.5e-3,
            multiplier: -good_force,
        };
        let mut rows = ReducedRows::of_constraints(&reduced, &[constraint]).expect("rows");
        rows.unilateral[0] = true;
        let pushed = |rows: &ReducedRows| rows.multipliers.iter().map(|l| l.abs()).sum::<f64>();
        let allowance_for = |rows: &ReducedRows| {
            reduced.degraded_allowance(&tangent.values, rows, &good, good_force)
        };

        // Consistent: the frozen step from the good state is within the allowance.
        reduced.frozen_step(&good, &internal, &tangent.values, &mut rows);
        let consistent = pushed(&rows);
        let allowance = allowance_for(&rows);
        assert!(
            (consistent - converged).abs() <= 0.2 * converged,
            "frozen {consistent} vs converged {converged} N"
        );
        assert_eq!(
            rows.limit_pushing(allowance),
            1.0,
            "{consistent} > {allowance} N"
        );

        // Off the state: forces of a far deeper iterate at the good q.
        let far: Vec<f64> = internal.iter().map(|f| 1e3 * f).collect();
        reduced.frozen_step(&good, &far, &tangent.values, &mut rows);
        let raw = pushed(&rows);
        assert!(
            raw > 100.0 * converged,
            "raw {raw} vs converged {converged} N"
        );
        let allowance = allowance_for(&rows);
        rows.limit_pushing(allowance);
        let limited = pushed(&rows);
        assert!(
            limited <= allowance * (1.0 + 1e-12) && limited <= 2.5 * converged,
            "limited {limited} N (allowance {allowance}, converged {converged} N)"
        );
        assert!(
            limited >= good_force,
            "{limited} below the good {good_force} N"
        );
    }
}
