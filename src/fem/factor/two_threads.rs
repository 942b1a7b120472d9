//! The two-thread block solve: the two halves of the supernodal elimination tree below
//! the top separators are independent, so each thread streams its half of L.

use faer::reborrow::{Reborrow, ReborrowMut};
use faer::sparse::linalg::cholesky::supernodal::{SupernodalLltRef, SymbolicSupernodalCholesky};
use faer::{Mat, MatMut, MatRef};

use super::{backward_block, forward_block, supernodal, Factor, FemError};

impl Factor {
    /// Overwrites `rhs` (n × k) with A⁻¹ rhs on two threads: the two halves of the
    /// supernodal elimination tree below the top separators are independent, so each
    /// thread streams its half of L once forward and once backward (the top separators
    /// are solved by the calling thread in between). Allocates its n × k workspace;
    /// meant for offline block solves (shift-invert Lanczos), where one pass over a
    /// factor of ~1 GB is memory bound and a single thread cannot use both cores' share
    /// of bandwidth. Falls back to [`Factor::solve_in_place`] when the tree does not
    /// split (a chain).
    ///
    /// Written here because faer's supernodal solve walks the supernodes one after the
    /// other and only parallelises inside each dense block, too fine-grained to help for
    /// 8–32 right-hand sides (docs/benchmarks.md, "two-thread solve").
    pub fn solve_in_place_two_threads(&self, mut rhs: MatMut<'_, f64>) -> Result<(), FemError> {
        let Some(split) = &self.split else {
            return self.solve_in_place(rhs);
        };
        let sn = supernodal(&self.symbolic);
        let n = self.n();
        if rhs.nrows() != n {
            return self.solve_in_place(rhs);
        }
        let k = rhs.ncols();
        let llt = SupernodalLltRef::new(sn, &self.values);
        let mut x = Mat::<f64>::zeros(n, k);
        match self.symbolic.perm() {
            Some(perm) => {
                let fwd = perm.arrays().0;
                for j in 0..k {
                    for (i, &f) in fwd.iter().enumerate() {
                        x[(i, j)] = rhs[(f, j)];
                    }
                }
            }
            None => x.copy_from(&rhs),
        }
        let begin = sn.supernode_begin();
        let (mid_col, top_col) = (begin[split.mid], begin[split.top]);
        {
            let (mut xa, rest) = x.as_mut().split_at_row_mut(mid_col);
            let (mut xb, mut xt) = rest.split_at_row_mut(top_col - mid_col);
            // The second half's updates of the top rows go to its own buffer.
            let mut xt_b = Mat::<f64>::zeros(n - top_col, k);
            let (xa_f, xt_f) = (xa.rb_mut(), xt.rb_mut());
            std::thread::scope(|scope| {
                scope.spawn(move || forward(llt, 0..split.mid, xa_f, 0, xt_f, top_col));
                forward(
                    llt,
                    split.mid..split.top,
                    xb.rb_mut(),
                    mid_col,
                    xt_b.as_mut(),
                    top_col,
                );
            });
            xt += &xt_b;
            let mut none = Mat::<f64>::zeros(0, k);
            let n_super = sn.n_supernodes();
            forward(
                llt,
                split.top..n_super,
                xt.rb_mut(),
                top_col,
                none.as_mut(),
                n,
            );
            backward(
                llt,
                split.top..n_super,
                xt.rb_mut(),
                top_col,
                none.as_ref(),
                n,
            );
            let xt = xt.rb();
            std::thread::scope(|scope| {
                scope.spawn(move || backward(llt, 0..split.mid, xa, 0, xt, top_col));
                backward(llt, split.mid..split.top, xb, mid_col, xt, top_col);
            });
        }
        match self.symbolic.perm() {
            Some(perm) => {
                let inv = perm.arrays().1;
                for j in 0..k {
                    for (i, &v) in inv.iter().enumerate() {
                        rhs[(i, j)] = x[(v, j)];
                    }
                }
            }
            None => rhs.copy_from(&x),
        }
        Ok(())
    }
}

/// Supernodes `[0, mid)` and `[mid, top)` of a supernodal factor form two groups of
/// subtrees with no ancestor in the other group, so their forward and backward solves
/// touch disjoint rows apart from the rows of the top supernodes `[top, end)`, which
/// are all ancestors of both groups.
#[derive(Clone, Copy, Debug)]
pub(super) struct TreeSplit {
    pub(super) mid: usize,
    pub(super) top: usize,
}

impl TreeSplit {
    /// Splits below the chain of single-child supernodes at the root, balancing the
    /// entries of L between the two groups; `None` if the tree does not branch or the
    /// supernodes are not in an order where subtrees are contiguous. `parent` is the
    /// supernodal elimination tree (`usize::MAX` at a root).
    pub(super) fn new(sn: &SymbolicSupernodalCholesky<usize>, parent: &[usize]) -> Option<Self> {
        let n_super = sn.n_supernodes();
        let col_ptr_val = sn.col_ptr_for_val();
        let mut children = vec![Vec::new(); n_super];
        let mut roots = Vec::new();
        for (s, &p) in parent.iter().enumerate() {
            if p == usize::MAX {
                roots.push(s);
            } else {
                children[p].push(s);
            }
        }
        let mut top = n_super;
        let mut candidates = roots;
        while candidates.len() == 1 {
            top = candidates[0];
            candidates = std::mem::take(&mut children[top]);
        }
        candidates.sort_unstable();
        // Supernode entries of L, prefix-summed: the work of a contiguous range.
        let mut work = vec![0usize; n_super + 1];
        for s in 0..n_super {
            work[s + 1] = work[s] + (col_ptr_val[s + 1] - col_ptr_val[s]);
        }
        let total = work[top];
        let mid = candidates
            .iter()
            .map(|&c| c + 1)
            .filter(|&m| m < top)
            .min_by_key(|&m| work[m].abs_diff(total - work[m]))?;
        // Every supernode's parent must lie in its own group or on top.
        let group = |s: usize| {
            if s < mid {
                0
            } else if s < top {
                1
            } else {
                2
            }
        };
        let separable = parent.iter().enumerate().all(|(s, &p)| {
            if p == usize::MAX {
                group(s) == 2 || top == n_super
            } else {
                group(p) == group(s) || group(p) == 2
            }
        });
        (separable && mid > 0).then_some(Self { mid, top })
    }
}

/// Forward substitution L x = b over `supers`. `own` holds the rows from `own_start`
/// (the supernodes' own columns), `upper` the rows from `upper_start` on (ancestors in
/// another group of the tree); updates go to whichever holds the row.
fn forward(
    llt: SupernodalLltRef<'_, usize, f64>,
    supers: std::ops::Range<usize>,
    mut own: MatMut<'_, f64>,
    own_start: usize,
    mut upper: MatMut<'_, f64>,
    upper_start: usize,
) {
    let k = own.ncols();
    let mut tmp = Mat::<f64>::zeros(0, k);
    for s in supers {
        let node = llt.supernode(s);
        let ls = node.val();
        let size = ls.ncols();
        let (l_top, l_bot) = ls.split_at_row(size);
        let pattern = node.pattern();
        tmp.resize_with(pattern.len(), k, |_, _| 0.0);
        let x_top = own.rb_mut().subrows_mut(node.start() - own_start, size);
        forward_block(l_top, l_bot, x_top, tmp.as_mut());
        let split = pattern.partition_point(|&i| i < upper_start);
        for j in 0..k {
            for (idx, &i) in pattern[..split].iter().enumerate() {
                own[(i - own_start, j)] -= tmp[(idx, j)];
            }
            for (idx, &i) in pattern[split..].iter().enumerate() {
                upper[(i - upper_start, j)] -= tmp[(split + idx, j)];
            }
        }
    }
}

/// Back substitution Lᵀ x = y over `supers` in reverse, reading solved ancestor rows
/// from `own` or `upper` (as in [`forward`]).
fn backward(
    llt: SupernodalLltRef<'_, usize, f64>,
    supers: std::ops::Range<usize>,
    mut own: MatMut<'_, f64>,
    own_start: usize,
    upper: MatRef<'_, f64>,
    upper_start: usize,
) {
    let k = own.ncols();
    let mut tmp = Mat::<f64>::zeros(0, k);
    for s in supers.rev() {
        let node = llt.supernode(s);
        let ls = node.val();
        let size = ls.ncols();
        let (l_top, l_bot) = ls.split_at_row(size);
        let pattern = node.pattern();
        tmp.resize_with(pattern.len(), k, |_, _| 0.0);
        let split = pattern.partition_point(|&i| i < upper_start);
        for j in 0..k {
            for (idx, &i) in pattern[..split].iter().enumerate() {
                tmp[(idx, j)] = own[(i - own_start, j)];
            }
            for (idx, &i) in pattern[split..].iter().enumerate() {
                tmp[(split + idx, j)] = upper[(i - upper_start, j)];
            }
        }
        let x_top = own.rb_mut().subrows_mut(node.start() - own_start, size);
        backward_block(l_top, l_bot, x_top, tmp.as_ref());
    }
}
