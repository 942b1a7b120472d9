//! Forward solves of unit right-hand sides along the elimination tree (their Gram
//! products are entries of A⁻¹) and the budgeted back solve that completes full columns.

use faer::reborrow::{Reborrow, ReborrowMut};
use faer::sparse::linalg::cholesky::supernodal::SupernodalLltRef;
use faer::Mat;

use super::{backward_block, forward_block, supernodal, Factor};

/// Forward solves y = L⁻¹ P e of unit right-hand sides, stored only where they can be
/// nonzero: on the supernodes of the elimination-tree path from e's supernode to the
/// root. Gram products of two of them are entries of A⁻¹.
#[derive(Clone, Debug, Default)]
pub struct PathColumns {
    /// Supernodes of the path, ascending (leaf to root).
    supernodes: Vec<usize>,
    /// Row-major values: for each path supernode its columns of L, in order;
    /// `ncols` values per row.
    values: Vec<f64>,
    /// Rows of each path supernode (its column count in L).
    sizes: Vec<usize>,
    ncols: usize,
}

impl PathColumns {
    /// Number of right-hand sides held.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Makes `self` a copy of `other`, reusing `self`'s buffers (no allocation once they
    /// are large enough).
    pub fn copy_from(&mut self, other: &PathColumns) {
        self.supernodes.clone_from(&other.supernodes);
        self.values.clone_from(&other.values);
        self.sizes.clone_from(&other.sizes);
        self.ncols = other.ncols;
    }

    /// Number of stored rows (the path length in columns of L).
    pub fn nrows(&self) -> usize {
        self.sizes.iter().sum()
    }

    /// `out` (row-major `self.ncols()` × `other.ncols()`) = selfᵀ other, over the
    /// supernodes both paths share: A⁻¹ between the two sets of unit right-hand sides.
    pub fn gram(&self, other: &PathColumns, out: &mut [f64]) {
        let (na, nb) = (self.ncols, other.ncols);
        let out = &mut out[..na * nb];
        out.fill(0.0);
        let (mut i, mut j, mut ra, mut rb) = (0, 0, 0, 0);
        while i < self.supernodes.len() && j < other.supernodes.len() {
            let (sa, sb) = (self.supernodes[i], other.supernodes[j]);
            if sa < sb {
                ra += self.sizes[i];
                i += 1;
            } else if sb < sa {
                rb += other.sizes[j];
                j += 1;
            } else {
                let rows = self.sizes[i];
                let ya = &self.values[ra * na..(ra + rows) * na];
                let yb = &other.values[rb * nb..(rb + rows) * nb];
                for (a_row, b_row) in ya.chunks_exact(na).zip(yb.chunks_exact(nb)) {
                    for (a, &x) in a_row.iter().enumerate() {
                        for (o, &y) in out[a * nb..(a + 1) * nb].iter_mut().zip(b_row) {
                            *o += x * y;
                        }
                    }
                }
                ra += rows;
                rb += rows;
                i += 1;
                j += 1;
            }
        }
    }
}

/// Workspace of [`Factor::forward_unit`] and of the back solve
/// ([`Factor::begin_back_solve`], [`Factor::continue_back_solve`]): a dense n × cols
/// block in the factor's order, kept zero between uses outside the rows being solved.
#[derive(Debug)]
pub struct PathWorkspace {
    pub(super) work: Mat<f64>,
    tmp: Mat<f64>,
    mark: Vec<u64>,
    stamp: u64,
    path: Vec<usize>,
    /// Back solve: columns in use and supernodes still to do (from the root down).
    back_cols: usize,
    back_next: usize,
}

impl PathWorkspace {
    /// Most right-hand sides one call takes.
    pub fn max_cols(&self) -> usize {
        self.work.ncols()
    }

    /// Whether the back solve begun last has processed every supernode.
    pub fn back_done(&self) -> bool {
        self.back_next == 0
    }
}

impl Factor {
    /// A workspace for up to `max_cols` right-hand sides at once (8·n·max_cols bytes
    /// plus scratch).
    pub fn path_workspace(&self, max_cols: usize) -> PathWorkspace {
        PathWorkspace {
            work: Mat::zeros(self.n(), max_cols),
            tmp: Mat::zeros(self.max_pattern, max_cols),
            mark: vec![0; self.parent.len()],
            stamp: 0,
            path: Vec::with_capacity(self.parent.len()),
            back_cols: 0,
            back_next: 0,
        }
    }

    fn lower(&self) -> SupernodalLltRef<'_, usize, f64> {
        SupernodalLltRef::new(supernodal(&self.symbolic), &self.values)
    }

    /// Appends the supernodes on the path of permuted column `p` that are not marked
    /// with the current stamp yet.
    fn walk(&self, p: usize, mark: &mut [u64], stamp: u64, path: &mut Vec<usize>) {
        let mut s = self.supernode_of[p];
        while s != usize::MAX && mark[s] != stamp {
            mark[s] = stamp;
            path.push(s);
            s = self.parent[s];
        }
    }

    /// Solves L Y = P E forward for the unit right-hand sides E = [e_d for d in `dofs`]
    /// (DOF indices < n, at most `ws.max_cols()`), touching only the supernodes on
    /// their elimination-tree paths, and stores group g (columns g·`group` ..
    /// (g+1)·`group`, e.g. the 3 DOFs of a node) in `out[g]` on its own path.
    /// The union of all paths is solved at once, so groups share the reads of L.
    /// Returns the multiply-adds spent.
    ///
    /// Hand-written over faer's supernode blocks: faer's supernodal solves
    /// (`l_solve_with_conj`, `solve_in_place_with_conj`) visit every supernode, which for
    /// one node's three columns costs a full pass over L; the dense work per supernode
    /// is faer's triangular solve and matmul.
    ///
    /// # Panics
    /// If `dofs.len()` is not `group · out.len()`, exceeds the workspace, or a DOF is
    /// out of range (caller bugs).
    pub fn forward_unit(
        &self,
        dofs: &[usize],
        group: usize,
        ws: &mut PathWorkspace,
        out: &mut [PathColumns],
    ) -> usize {
        let k = dofs.len();
        assert!(k == group * out.len() && k <= ws.max_cols());
        ws.stamp += 1;
        ws.path.clear();
        for (j, &d) in dofs.iter().enumerate() {
            let p = self.perm_inv[d];
            ws.work[(p, j)] = 1.0;
            self.walk(p, &mut ws.mark, ws.stamp, &mut ws.path);
        }
        ws.path.sort_unstable();
        let l = self.lower();
        let mut spent = 0;
        for &s in &ws.path {
            let node = l.supernode(s);
            let (start, pattern) = (node.start(), node.pattern());
            let (top, bottom) = node.val().split_at_row(node.val().ncols());
            let size = top.nrows();
            let x = ws.work.as_mut().submatrix_mut(start, 0, size, k);
            let mut tmp = ws.tmp.as_mut().submatrix_mut(0, 0, pattern.len(), k);
            forward_block(top, bottom, x, tmp.rb_mut());
            for j in 0..k {
                for (idx, &i) in pattern.iter().enumerate() {
                    ws.work[(i, j)] -= tmp[(idx, j)];
                }
            }
            spent += (size + pattern.len()) * size * k;
        }
        let sn = supernodal(&self.symbolic);
        for (g, y) in out.iter_mut().enumerate() {
            ws.stamp += 1;
            y.supernodes.clear();
            for &d in &dofs[g * group..(g + 1) * group] {
                self.walk(self.perm_inv[d], &mut ws.mark, ws.stamp, &mut y.supernodes);
            }
            y.supernodes.sort_unstable();
            y.ncols = group;
            y.sizes.clear();
            y.values.clear();
            for &s in &y.supernodes {
                let (begin, end) = (sn.supernode_begin()[s], sn.supernode_end()[s]);
                y.sizes.push(end - begin);
                for i in begin..end {
                    for c in 0..group {
                        y.values.push(ws.work[(i, g * group + c)]);
                    }
                }
            }
        }
        for &s in &ws.path {
            let (begin, end) = (sn.supernode_begin()[s], sn.supernode_end()[s]);
            ws.work
                .as_mut()
                .submatrix_mut(begin, 0, end - begin, k)
                .fill(0.0);
        }
        spent
    }

    /// Begins the back solve X = Pᵀ L⁻ᵀ Y of forward solutions `ys` (their columns
    /// side by side, at most `ws.max_cols()`; iterated twice): together with [`Factor::forward_unit`]
    /// the full columns A⁻¹ e. Advance it with [`Factor::continue_back_solve`].
    ///
    /// # Panics
    /// If the columns exceed the workspace.
    pub fn begin_back_solve<'a>(
        &self,
        ys: impl Iterator<Item = &'a PathColumns> + Clone,
        ws: &mut PathWorkspace,
    ) {
        let cols: usize = ys.clone().map(|y| y.ncols).sum();
        assert!(cols <= ws.max_cols());
        ws.work.as_mut().subcols_mut(0, ws.back_cols).fill(0.0);
        let sn = supernodal(&self.symbolic);
        let mut c0 = 0;
        for y in ys {
            let mut r = 0;
            for (&s, &size) in y.supernodes.iter().zip(&y.sizes) {
                let begin = sn.supernode_begin()[s];
                for i in 0..size {
                    for c in 0..y.ncols {
                        ws.work[(begin + i, c0 + c)] = y.values[(r + i) * y.ncols + c];
                    }
                }
                r += size;
            }
            c0 += y.ncols;
        }
        ws.back_cols = cols;
        ws.back_next = self.parent.len();
    }

    /// Continues the back solve begun with [`Factor::begin_back_solve`], from the
    /// root down, until about `budget` multiply-adds are spent (at least one
    /// supernode, nothing once complete). Returns the multiply-adds spent; once
    /// [`PathWorkspace::back_done`], the solution is read with
    /// [`Factor::back_solution`]. Splitting the pass over L lets a caller with a
    /// deadline spread it over several steps.
    pub fn continue_back_solve(&self, ws: &mut PathWorkspace, budget: usize) -> usize {
        let k = ws.back_cols;
        let l = self.lower();
        let mut spent = 0;
        while ws.back_next > 0 && (spent == 0 || spent < budget) {
            ws.back_next -= 1;
            let node = l.supernode(ws.back_next);
            let (start, pattern) = (node.start(), node.pattern());
            let (top, bottom) = node.val().split_at_row(node.val().ncols());
            let size = top.nrows();
            let mut tmp = ws.tmp.as_mut().submatrix_mut(0, 0, pattern.len(), k);
            for j in 0..k {
                for (idx, &i) in pattern.iter().enumerate() {
                    tmp[(idx, j)] = ws.work[(i, j)];
                }
            }
            let x = ws.work.as_mut().submatrix_mut(start, 0, size, k);
            backward_block(top, bottom, x, tmp.rb());
            spent += (size + pattern.len()) * size * k.max(1);
        }
        spent
    }

    /// Entry (`dof`, column `j`) of a completed back solve: A⁻¹ at that DOF.
    pub fn back_solution(&self, ws: &PathWorkspace, dof: usize, j: usize) -> f64 {
        ws.work[(self.perm_inv[dof], j)]
    }

    /// `dense` += Y c over the rows of `y`'s path, with `dense` an n-vector in the
    /// factor's order and c one coefficient per column of `y`: accumulates L⁻¹P F for
    /// a load F = Σ e c on several nodes, so [`Factor::path_dot`] then gives A⁻¹F at a
    /// node for the cost of one pass over its path instead of one gram per load.
    ///
    /// # Panics
    /// If `c` has fewer than `y.ncols()` entries or `dense` fewer than n (caller bugs).
    pub fn path_scatter(&self, y: &PathColumns, c: &[f64], dense: &mut [f64]) {
        let c = &c[..y.ncols];
        self.for_path_segments(y, |begin, values| {
            let rows = values.len() / c.len().max(1);
            for (d, v) in dense[begin..begin + rows]
                .iter_mut()
                .zip(values.chunks_exact(c.len()))
            {
                *d += v.iter().zip(c).map(|(v, c)| v * c).sum::<f64>();
            }
        });
    }

    /// `out` (`y.ncols()` entries) = Yᵀ `dense` over `y`'s path: with `dense` = L⁻¹P F
    /// from [`Factor::path_scatter`], the A⁻¹ F at `y`'s unit right-hand sides.
    ///
    /// # Panics
    /// As [`Factor::path_scatter`].
    pub fn path_dot(&self, y: &PathColumns, dense: &[f64], out: &mut [f64]) {
        let out = &mut out[..y.ncols];
        out.fill(0.0);
        self.for_path_segments(y, |begin, values| {
            let rows = values.len() / out.len().max(1);
            for (d, v) in dense[begin..begin + rows]
                .iter()
                .zip(values.chunks_exact(out.len()))
            {
                for (o, v) in out.iter_mut().zip(v) {
                    *o += v * d;
                }
            }
        });
    }

    /// Zeroes `dense` on `y`'s path rows (undoes [`Factor::path_scatter`] without a
    /// pass over all n).
    pub fn path_clear(&self, y: &PathColumns, dense: &mut [f64]) {
        let sn = supernodal(&self.symbolic);
        for (&s, &size) in y.supernodes.iter().zip(&y.sizes) {
            let begin = sn.supernode_begin()[s];
            dense[begin..begin + size].fill(0.0);
        }
    }

    /// `dense` (row-major n × `y.ncols()`, rows in the factor's order) += w Y over the
    /// rows of `y`'s path: the weighted sum of several nodes' forward solves, every
    /// column in one pass over the path (three [`Factor::path_scatter`]s read it
    /// three times).
    ///
    /// # Panics
    /// If `dense` is shorter than n · `y.ncols()` (a caller bug).
    pub fn path_add_block(&self, y: &PathColumns, w: f64, dense: &mut [f64]) {
        let k = y.ncols;
        self.for_path_segments(y, |begin, values| {
            let rows = &mut dense[begin * k..begin * k + values.len()];
            for (d, v) in rows.iter_mut().zip(values) {
                *d += w * v;
            }
        });
    }

    /// `out` (row-major `y.ncols()` × `y.ncols()`) += w Yᵀ D over the rows of `y`'s path,
    /// D from [`Factor::path_add_block`]: with D = Σ_v w_v Y_v, the block Σ_v w w_v
    /// A⁻¹[y's DOFs, v's DOFs] in one pass.
    ///
    /// # Panics
    /// As [`Factor::path_add_block`], or if `out` is shorter than `y.ncols()`².
    pub fn path_gram_block(&self, y: &PathColumns, w: f64, dense: &[f64], out: &mut [f64]) {
        let k = y.ncols;
        let out = &mut out[..k * k];
        self.for_path_segments(y, |begin, values| {
            let rows = &dense[begin * k..begin * k + values.len()];
            for (yr, dr) in values.chunks_exact(k).zip(rows.chunks_exact(k)) {
                for (a, &ya) in yr.iter().enumerate() {
                    for (o, &d) in out[a * k..(a + 1) * k].iter_mut().zip(dr) {
                        *o += w * ya * d;
                    }
                }
            }
        });
    }

    /// Zeroes the rows of `y`'s path in `dense` (row-major n × `y.ncols()`): undoes
    /// [`Factor::path_add_block`].
    pub fn path_clear_block(&self, y: &PathColumns, dense: &mut [f64]) {
        let (sn, k) = (supernodal(&self.symbolic), y.ncols);
        for (&s, &size) in y.supernodes.iter().zip(&y.sizes) {
            let begin = sn.supernode_begin()[s];
            dense[begin * k..(begin + size) * k].fill(0.0);
        }
    }

    /// Calls `visit(first row in the factor's order, row-major values)` for each
    /// supernode of `y`'s path.
    fn for_path_segments(&self, y: &PathColumns, mut visit: impl FnMut(usize, &[f64])) {
        let sn = supernodal(&self.symbolic);
        let mut r = 0;
        for (&s, &size) in y.supernodes.iter().zip(&y.sizes) {
            visit(
                sn.supernode_begin()[s],
                &y.values[r * y.ncols..(r + size) * y.ncols],
            );
            r += size;
        }
    }
}
