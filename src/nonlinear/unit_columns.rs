//! K⁻¹ e_d for the DOFs a contact patch loads, kept while the patch stays near them.
//!
//! A probe's support is a patch of surface nodes whose weights change with every step
//! of a slide, so each step gives the reduced model three new forces to shape
//! ([`super::ReducedStatics::add_point_shapes`]). Solving them with K's factor costs
//! 12–18 ms on the 5 mm block (three columns through a factor of 5.5 million
//! entries), more than half a sliding step. The patch's nodes change only every few
//! dozen steps, so K⁻¹ of each force is taken instead as the weighted sum of its DOFs'
//! unit columns, solved once for the DOFs not yet held (a few per step) and kept,
//! least recently used dropped beyond [`COLUMN_BYTES`].

use std::collections::HashMap;

use faer::Mat;

use super::statics::NonlinearError;
use crate::fem::Factor;

/// Most unit columns one call solves: a new patch of up to 48 nodes (144 DOFs) is
/// held after a dozen steps, each solving these beside the three forces' remainders
/// in one pass over the factor, instead of one step solving all 144 (120 ms on the 5 mm
/// block).
const NEW_COLUMNS: usize = 12;

/// Memory the held columns may take (bytes): 64 MiB, on the 5 mm block (11,907 DOFs)
/// 700 columns, the three axes of 230 nodes.
const COLUMN_BYTES: usize = 64 << 20;

/// The unit columns held, each with the call that last used it.
#[derive(Default)]
pub(super) struct UnitColumns {
    columns: HashMap<usize, (Vec<f64>, u64)>,
    calls: u64,
}

impl UnitColumns {
    /// K⁻¹ `force` (m) for each sparse force ((DOF, N) pairs, prescribed DOFs left
    /// out) with `factor` (K's, n DOFs). Up to [`NEW_COLUMNS`] of the DOFs' columns not
    /// held yet are solved and kept; the forces' part on DOFs still without one is
    /// solved directly, in the same pass over the factor.
    pub(super) fn solve(
        &mut self,
        factor: &Factor,
        forces: &[Vec<(usize, f64)>],
    ) -> Result<Vec<Vec<f64>>, NonlinearError> {
        let n = factor.n();
        self.calls += 1;
        let mut missing: Vec<usize> = forces
            .iter()
            .flatten()
            .map(|&(d, _)| d)
            .filter(|d| !self.columns.contains_key(d))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let new = missing.len().min(NEW_COLUMNS);
        // Unit columns of the first `new` missing DOFs, then each force's remainder on
        // the DOFs that still have none.
        let remainders = if missing.len() > new { forces.len() } else { 0 };
        let mut rhs = Mat::<f64>::zeros(n, new + remainders);
        for (j, &d) in missing[..new].iter().enumerate() {
            rhs[(d, j)] = 1.0;
        }
        let left = &missing[new..];
        for (i, force) in forces.iter().enumerate().take(remainders) {
            for &(d, w) in force.iter().filter(|(d, _)| left.binary_search(d).is_ok()) {
                rhs[(d, new + i)] += w;
            }
        }
        if rhs.ncols() > 0 {
            factor.solve_in_place(rhs.as_mut())?;
        }
        for (j, &d) in missing[..new].iter().enumerate() {
            let column = rhs.col(j).iter().copied().collect();
            self.columns.insert(d, (column, self.calls));
        }
        let solved = forces
            .iter()
            .enumerate()
            .map(|(i, force)| {
                let mut x: Vec<f64> = if remainders > 0 {
                    rhs.col(new + i).iter().copied().collect()
                } else {
                    vec![0.0; n]
                };
                for &(d, w) in force {
                    if let Some((column, used)) = self.columns.get_mut(&d) {
                        *used = self.calls;
                        for (x, c) in x.iter_mut().zip(column.iter()) {
                            *x += w * c;
                        }
                    }
                }
                x
            })
            .collect();
        self.evict(n);
        Ok(solved)
    }

    /// Drops the least recently used columns beyond [`COLUMN_BYTES`], never one this
    /// call used.
    fn evict(&mut self, n: usize) {
        let most = (COLUMN_BYTES / (8 * n.max(1))).max(1);
        if self.columns.len() <= most {
            return;
        }
        let mut by_age: Vec<(u64, usize)> = self
            .columns
            .iter()
            .filter(|(_, (_, used))| *used < self.calls)
            .map(|(&d, (_, used))| (*used, d))
            .collect();
        by_age.sort_unstable();
        let excess = self.columns.len() - most;
        for (_, d) in by_age.into_iter().take(excess) {
            self.columns.remove(&d);
        }
    }

    /// Columns held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.columns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::sparse::{SparseColMat, Triplet};
    use faer::Par;

    /// A 1-D chain of springs, its first DOF fixed by an identity row.
    fn chain(n: usize) -> (SparseColMat<usize, f64>, Factor) {
        let mut triplets = vec![Triplet::new(0, 0, 1.0)];
        for i in 1..n {
            let diagonal = if i + 1 < n { 2.0 } else { 1.0 };
            triplets.push(Triplet::new(i, i, diagonal));
            if i > 1 {
                triplets.push(Triplet::new(i, i - 1, -1.0));
                triplets.push(Triplet::new(i - 1, i, -1.0));
            }
        }
        let k = SparseColMat::try_new_from_triplets(n, n, &triplets).unwrap();
        let factor = Factor::new(k.as_ref(), None, Par::Seq, "chain").unwrap();
        (k, factor)
    }

    /// Summed from held unit columns, K⁻¹f is the direct solve's to round-off, and the
    /// columns of the DOFs no longer loaded are the ones dropped.
    #[test]
    fn a_patch_force_from_unit_columns_is_the_direct_solve() {
        let n = 40;
        let (_, factor) = chain(n);
        let mut held = UnitColumns::default();
        for (start, weights) in [
            (5, [0.2, 0.5, 0.3]),
            (6, [0.1, 0.6, 0.3]),
            (6, [0.3, 0.3, 0.4]),
        ] {
            let force: Vec<(usize, f64)> = weights
                .iter()
                .enumerate()
                .map(|(i, &w)| (start + i, w))
                .collect();
            let solved = held.solve(&factor, std::slice::from_ref(&force)).unwrap();
            let mut direct = Mat::<f64>::zeros(n, 1);
            for &(d, w) in &force {
                direct[(d, 0)] = w;
            }
            factor.solve_in_place(direct.as_mut()).unwrap();
            for (i, x) in solved[0].iter().enumerate() {
                assert!((x - direct[(i, 0)]).abs() <= 1e-12 * direct.norm_max());
            }
        }
        assert_eq!(held.len(), 4, "DOFs 5 to 8");
        // Beyond the budget the least recently used go first.
        held.evict(COLUMN_BYTES / 8 / 2);
        assert_eq!(held.len(), 3);
        assert!(!held.columns.contains_key(&5), "DOF 5 was loaded first");
        // A force on more DOFs than one call solves columns for: the rest is solved
        // directly, and the next call takes the next columns.
        let wide: Vec<(usize, f64)> = (10..30).map(|d| (d, 0.05)).collect();
        let mut direct = Mat::<f64>::zeros(n, 1);
        for &(d, w) in &wide {
            direct[(d, 0)] = w;
        }
        factor.solve_in_place(direct.as_mut()).unwrap();
        for round in 1..=2 {
            let solved = held.solve(&factor, std::slice::from_ref(&wide)).unwrap();
            for (i, x) in solved[0].iter().enumerate() {
                assert!((x - direct[(i, 0)]).abs() <= 1e-12 * direct.norm_max());
            }
            assert_eq!(held.len(), 3 + (round * NEW_COLUMNS).min(20));
        }
    }
}
