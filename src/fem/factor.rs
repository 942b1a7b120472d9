//! Sparse Cholesky factorisation shared by the modal precompute (shift-invert, residual
//! flexibility) and the condensed runtime (compliance columns on demand).

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::perm::PermRef;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::sparse::linalg::cholesky::supernodal::{SupernodalLltRef, SymbolicSupernodalCholesky};
use faer::sparse::linalg::cholesky::{
    factorize_symbolic_cholesky, CholeskySymbolicParams, LltRef, SymbolicCholesky,
    SymbolicCholeskyRaw, SymmetricOrdering,
};
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::SparseColMatRef;
use faer::{Accum, Conj, Mat, MatMut, MatRef, Par, Side};

use super::{expand_node_permutation, nested_dissection, FemError, FemSystem};

/// Fill-reducing ordering for [`Factor::for_system`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ordering {
    /// [`Ordering::Amd`] below [`AUTO_ND_NODES`] free nodes, otherwise
    /// [`Ordering::NestedDissection`] (measured: AMD wins on the 3.4k-node bunny, nested
    /// dissection on a 35k-node box; see docs/benchmarks.md).
    #[default]
    Auto,
    /// Approximate minimum degree on the node graph (SuiteSparse AMD as ported by faer),
    /// expanded to DOFs.
    Amd,
    /// Geometric nested dissection from node coordinates, expanded to DOFs.
    NestedDissection,
}

/// Free-node count from which [`Ordering::Auto`] picks nested dissection.
pub const AUTO_ND_NODES: usize = 20_000;

/// A sparse supernodal LLᵀ factor of a symmetric positive definite matrix
/// A = Pᵀ L Lᵀ P (e.g. K or K − σM), solving A X = B for many right-hand sides at once:
/// every supernode's dense block is applied to all columns of B together, so solving
/// 3·k columns costs far less than k separate solves.
///
/// For unit right-hand sides it also solves forward only along the elimination tree
/// ([`Factor::forward_unit`]): K⁻¹[i, j] = (L⁻¹Pe_i)ᵀ(L⁻¹Pe_j), and L⁻¹Pe_i is nonzero
/// only on the supernodes from e_i's up to the root, a small part of L.
#[derive(Debug)]
pub struct Factor {
    symbolic: SymbolicCholesky<usize>,
    values: Vec<f64>,
    par: Par,
    /// Position of each DOF in the factor's order (P e_i = e_{perm_inv[i]}).
    perm_inv: Vec<usize>,
    /// Supernode of each column of L.
    supernode_of: Vec<usize>,
    /// Parent of each supernode in the supernodal elimination tree (`usize::MAX` at a
    /// root); always larger than the child.
    parent: Vec<usize>,
    /// Longest below-diagonal pattern of a supernode (rows of the update scratch).
    max_pattern: usize,
    split: Option<TreeSplit>,
}

impl Factor {
    /// Factorises `a` (both triangles stored, only the lower one is read) in the DOF
    /// order `order` (`order[new] = old`; `None` → AMD on the matrix). `context` names
    /// the matrix in errors. `par` is used for the factorisation and the solves.
    pub fn new(
        a: SparseColMatRef<'_, usize, f64>,
        order: Option<&[usize]>,
        par: Par,
        context: &str,
    ) -> Result<Self, FemError> {
        let n = a.nrows();
        if a.ncols() != n {
            return Err(FemError::Dimension(format!(
                "{context}: matrix is {}×{}, not square",
                n,
                a.ncols()
            )));
        }
        let inverse;
        let ordering = match order {
            None => SymmetricOrdering::Amd,
            Some(fwd) => {
                if fwd.len() != n {
                    return Err(FemError::Dimension(format!(
                        "{context}: ordering has {} entries for {n} DOFs",
                        fwd.len()
                    )));
                }
                let mut inv = vec![usize::MAX; n];
                for (new, &old) in fwd.iter().enumerate() {
                    if old >= n || inv[old] != usize::MAX {
                        return Err(FemError::Dimension(format!(
                            "{context}: ordering is not a permutation (entry {new} = {old})"
                        )));
                    }
                    inv[old] = new;
                }
                inverse = inv;
                SymmetricOrdering::Custom(PermRef::new_checked(fwd, &inverse, n))
            }
        };
        // Always supernodal: elasticity couples 3 DOFs a node, so supernodes are dense
        // anyway, and the elimination-tree solves below walk supernodes.
        let symbolic = factorize_symbolic_cholesky(
            a.symbolic(),
            Side::Lower,
            ordering,
            CholeskySymbolicParams {
                supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SUPERNODAL,
                ..Default::default()
            },
        )
        .map_err(|e| FemError::Sparse(format!("{context}: symbolic factorisation: {e:?}")))?;
        let mut values = vec![0.0; symbolic.len_val()];
        let mut mem = MemBuffer::try_new(
            symbolic.factorize_numeric_llt_scratch::<f64>(par, Default::default()),
        )
        .map_err(|_| FemError::Sparse(format!("{context}: out of memory")))?;
        symbolic
            .factorize_numeric_llt(
                &mut values,
                a,
                Side::Lower,
                LltRegularization::default(),
                par,
                MemStack::new(&mut mem),
                Default::default(),
            )
            .map_err(|_| FemError::NotPositiveDefinite {
                n,
                context: context.to_string(),
            })?;
        let perm_inv = match symbolic.perm() {
            Some(p) => p.arrays().1.to_vec(),
            None => (0..n).collect(),
        };
        let sn = supernodal(&symbolic);
        let ns = sn.n_supernodes();
        let mut supernode_of = vec![0; n];
        let mut parent = vec![usize::MAX; ns];
        let mut max_pattern = 0;
        for (s, p) in parent.iter_mut().enumerate() {
            let (begin, end) = (sn.supernode_begin()[s], sn.supernode_end()[s]);
            supernode_of[begin..end].fill(s);
            let pattern = sn.supernode(s).pattern();
            max_pattern = max_pattern.max(pattern.len());
            // The parent is the supernode of the first row below the diagonal block.
            if let Some(&first) = pattern.first() {
                *p = first;
            }
        }
        for p in parent.iter_mut().filter(|p| **p != usize::MAX) {
            *p = supernode_of[*p];
        }
        let split = TreeSplit::new(sn, &parent);
        Ok(Self {
            symbolic,
            values,
            par,
            perm_inv,
            supernode_of,
            parent,
            max_pattern,
            split,
        })
    }

    /// Factorises K − σM of `system` (σ in rad²/s²; σ = 0 gives K) with `ordering`.
    pub fn for_system(
        system: &FemSystem,
        sigma: f64,
        ordering: Ordering,
        par: Par,
    ) -> Result<Self, FemError> {
        let a = system.shifted(sigma);
        let ordering = match ordering {
            Ordering::Auto if system.graph.n() < AUTO_ND_NODES => Ordering::Amd,
            Ordering::Auto => Ordering::NestedDissection,
            other => other,
        };
        let order = match ordering {
            Ordering::Auto | Ordering::Amd => node_amd(system)?,
            Ordering::NestedDissection => {
                expand_node_permutation(&nested_dissection(&system.positions, &system.graph))
            }
        };
        let context = if sigma == 0.0 {
            "stiffness K".to_string()
        } else {
            format!("shifted stiffness K - ({sigma:e})·M")
        };
        Self::new(a.as_ref(), Some(&order), par, &context)
    }

    /// Dimension of the factorised matrix.
    pub fn n(&self) -> usize {
        self.symbolic.nrows()
    }

    /// Stored entries of L (a measure of fill; memory is 8 bytes each).
    pub fn nnz_l(&self) -> usize {
        self.values.len()
    }

    /// Workspace needed by [`Factor::solve_in_place_with_stack`] for `ncols` columns.
    pub fn solve_scratch(&self, ncols: usize) -> StackReq {
        self.symbolic.solve_in_place_scratch::<f64>(ncols, self.par)
    }

    /// Overwrites `rhs` (n × k) with A⁻¹ rhs using caller-provided workspace (no
    /// allocation; size from [`Factor::solve_scratch`]).
    pub fn solve_in_place_with_stack(&self, rhs: MatMut<'_, f64>, stack: &mut MemStack) {
        LltRef::new(&self.symbolic, &self.values).solve_in_place_with_conj(
            Conj::No,
            rhs,
            self.par,
            stack,
        );
    }

    /// Overwrites `rhs` (n × k) with A⁻¹ rhs; an error if it has the wrong row count.
    pub fn solve_in_place(&self, rhs: MatMut<'_, f64>) -> Result<(), FemError> {
        if rhs.nrows() != self.n() {
            return Err(FemError::Dimension(format!(
                "right-hand side has {} rows, factor has {}",
                rhs.nrows(),
                self.n()
            )));
        }
        let mut mem = MemBuffer::new(self.solve_scratch(rhs.ncols()));
        self.solve_in_place_with_stack(rhs, MemStack::new(&mut mem));
        Ok(())
    }
}

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
    work: Mat<f64>,
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

/// The supernodal structure ([`Factor::new`] always asks faer for it).
fn supernodal(symbolic: &SymbolicCholesky<usize>) -> &SymbolicSupernodalCholesky<usize> {
    match symbolic.raw() {
        SymbolicCholeskyRaw::Supernodal(s) => s,
        SymbolicCholeskyRaw::Simplicial(_) => {
            unreachable!("the factorisation is forced supernodal")
        }
    }
}

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
    /// other and only parallelises inside each dense block, which for 8–32 right-hand
    /// sides is too fine-grained to help (measured: no faster than sequential, and
    /// slower when other processes load the cores).
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
struct TreeSplit {
    mid: usize,
    top: usize,
}

impl TreeSplit {
    /// Splits below the chain of single-child supernodes at the root, balancing the
    /// entries of L between the two groups; `None` if the tree does not branch or the
    /// supernodes are not in an order where subtrees are contiguous. `parent` is the
    /// supernodal elimination tree (`usize::MAX` at a root).
    fn new(sn: &SymbolicSupernodalCholesky<usize>, parent: &[usize]) -> Option<Self> {
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

/// Forward step of one supernode with diagonal block `l_top` and below-diagonal rows
/// `l_bot`: solves l_top x = b in place in `x` and writes l_bot x, the update its
/// pattern's rows receive, into `update`. Shared by every supernodal solve here.
fn forward_block(
    l_top: MatRef<'_, f64>,
    l_bot: MatRef<'_, f64>,
    mut x: MatMut<'_, f64>,
    update: MatMut<'_, f64>,
) {
    solve_lower_triangular_in_place(l_top, x.rb_mut(), Par::Seq);
    matmul(update, Accum::Replace, l_bot, x.rb(), 1.0, Par::Seq);
}

/// Backward step of one supernode: x ← l_top⁻ᵀ (x − l_botᵀ y), with `y` the already
/// solved rows of its pattern.
fn backward_block(
    l_top: MatRef<'_, f64>,
    l_bot: MatRef<'_, f64>,
    mut x: MatMut<'_, f64>,
    y: MatRef<'_, f64>,
) {
    matmul(x.rb_mut(), Accum::Add, l_bot.transpose(), y, -1.0, Par::Seq);
    solve_upper_triangular_in_place(l_top.transpose(), x, Par::Seq);
}

/// AMD on the node graph, expanded to DOFs.
fn node_amd(system: &FemSystem) -> Result<Vec<usize>, FemError> {
    let g = &system.graph;
    let n = g.n();
    // Pattern with the diagonal, as AMD expects a matrix.
    let mut col_ptr = Vec::with_capacity(n + 1);
    let mut rows = Vec::with_capacity(g.adj.len() + n);
    col_ptr.push(0);
    for j in 0..n {
        let nb = g.neighbours(j);
        let at = nb.partition_point(|&i| i < j);
        rows.extend_from_slice(&nb[..at]);
        rows.push(j);
        rows.extend_from_slice(&nb[at..]);
        col_ptr.push(rows.len());
    }
    let pattern = faer::sparse::SymbolicSparseColMatRef::new_checked(n, n, &col_ptr, None, &rows);
    let mut fwd = vec![0usize; n];
    let mut inv = vec![0usize; n];
    let mut mem = MemBuffer::try_new(faer::sparse::linalg::amd::order_scratch::<usize>(
        n,
        rows.len(),
    ))
    .map_err(|_| FemError::Sparse("AMD ordering: out of memory".into()))?;
    faer::sparse::linalg::amd::order(
        &mut fwd,
        &mut inv,
        pattern,
        Default::default(),
        MemStack::new(&mut mem),
    )
    .map_err(|e| FemError::Sparse(format!("AMD ordering: {e:?}")))?;
    Ok(expand_node_permutation(&fwd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::{self, assemble, fixed_nodes, Axis, DofMap, Fix, Material, MaterialMap};
    use crate::mesh::generate::box_mesh;
    use crate::Vec3;
    use nalgebra::DMatrix;

    /// A 4 × 4 × 2 cm block of 5 × 5 × 3 cells, bottom fixed: 324 free DOFs.
    fn block() -> FemSystem {
        let mesh = box_mesh(Vec3::new(0.04, 0.04, 0.02), [5, 5, 3]).unwrap();
        let materials = MaterialMap::uniform(Material::new(5e3, 0.45, 1000.0).unwrap())
            .per_tet(&mesh)
            .unwrap();
        let fixed = fixed_nodes(
            &mesh,
            &[Fix::Below {
                axis: Axis::Z,
                dist: 1e-9,
            }],
        )
        .unwrap();
        assemble(&mesh, &materials, DofMap::new(&fixed).unwrap()).unwrap()
    }

    /// Independent reference: the dense K (from K·I) inverted by nalgebra's Cholesky.
    fn dense_inverse(system: &FemSystem) -> DMatrix<f64> {
        let n = system.n_free();
        let mut k = Mat::<f64>::zeros(n, n);
        system.apply_k(k.as_mut(), Mat::<f64>::identity(n, n).as_ref());
        DMatrix::from_fn(n, n, |i, j| k[(i, j)])
            .cholesky()
            .expect("K is SPD")
            .inverse()
    }

    #[test]
    fn forward_paths_give_the_entries_of_the_inverse() {
        let system = block();
        let kinv = dense_inverse(&system);
        let scale = kinv.amax();
        for ordering in [Ordering::Amd, Ordering::NestedDissection] {
            let factor = Factor::for_system(&system, 0.0, ordering, Par::Seq).unwrap();
            let mut ws = factor.path_workspace(9);
            // Three nodes solved together, then one alone (a different union of paths).
            let nodes = [0, system.dofs.n_free() / 6 - 1, 7];
            let dofs: Vec<usize> = nodes.iter().flat_map(|&j| 3 * j..3 * j + 3).collect();
            let mut paths = vec![PathColumns::default(); 3];
            factor.forward_unit(&dofs, 3, &mut ws, &mut paths);
            let mut alone = [PathColumns::default()];
            factor.forward_unit(&dofs[3..6], 3, &mut ws, &mut alone);
            let mut g = [0.0; 9];
            for (a, pa) in paths.iter().chain(&alone).enumerate() {
                // `alone` holds the middle node again.
                let node = if a == 3 { 1 } else { a };
                let da = &dofs[3 * node..3 * node + 3];
                for (b, pb) in paths.iter().enumerate() {
                    pa.gram(pb, &mut g);
                    for i in 0..3 {
                        for j in 0..3 {
                            let want = kinv[(da[i], dofs[3 * b + j])];
                            assert!(
                                (g[3 * i + j] - want).abs() <= 1e-10 * scale,
                                "{ordering:?} ({a}, {b}) [{i}, {j}]: {} vs {want}",
                                g[3 * i + j]
                            );
                        }
                    }
                }
            }
            // Sparse: a path is part of L's columns, not all of them.
            assert!(paths.iter().any(|p| p.nrows() < factor.n() / 2));
            // The workspace is left zero for the next call.
            assert!(ws.work.col_iter().all(|c| c.iter().all(|&x| x == 0.0)));
        }
    }

    #[test]
    fn scattered_paths_give_the_inverse_applied_to_a_load() {
        let system = block();
        let kinv = dense_inverse(&system);
        let factor = Factor::for_system(&system, 0.0, Ordering::Amd, Par::Seq).unwrap();
        let mut ws = factor.path_workspace(9);
        let nodes = [3, system.dofs.n_free() / 3 - 2, 40];
        let dofs: Vec<usize> = nodes.iter().flat_map(|&j| 3 * j..3 * j + 3).collect();
        let mut paths = vec![PathColumns::default(); 3];
        factor.forward_unit(&dofs, 3, &mut ws, &mut paths);
        // A load on the first two nodes, read at all three.
        let loads = [[0.3, -1.2, 2.0], [-0.7, 0.4, 1.1]];
        let mut dense = vec![0.0; factor.n()];
        for (y, c) in paths.iter().zip(&loads) {
            factor.path_scatter(y, c, &mut dense);
        }
        let load = |dof: usize| {
            (0..2)
                .flat_map(|l| (0..3).map(move |b| (l, b)))
                .map(|(l, b)| kinv[(dof, dofs[3 * l + b])] * loads[l][b])
                .sum::<f64>()
        };
        let scale = kinv.amax();
        let mut got = [0.0; 3];
        for (a, y) in paths.iter().enumerate() {
            factor.path_dot(y, &dense, &mut got);
            for i in 0..3 {
                let want = load(dofs[3 * a + i]);
                assert!((got[i] - want).abs() <= 1e-10 * scale, "node {a} [{i}]");
            }
        }
        for y in &paths {
            factor.path_clear(y, &mut dense);
        }
        assert!(dense.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn back_solve_in_slices_gives_the_full_columns() {
        let system = block();
        let kinv = dense_inverse(&system);
        let scale = kinv.amax();
        let factor = Factor::for_system(&system, 0.0, Ordering::Amd, Par::Seq).unwrap();
        let mut ws = factor.path_workspace(6);
        let dofs = [30, 31, 32, 90, 91, 92];
        let mut paths = vec![PathColumns::default(); 2];
        factor.forward_unit(&dofs, 3, &mut ws, &mut paths);
        let mut back = factor.path_workspace(6);
        // Twice, to check that a second solve starts from a clean workspace.
        for _ in 0..2 {
            factor.begin_back_solve(paths.iter(), &mut back);
            let mut calls = 0;
            while !back.back_done() {
                assert!(factor.continue_back_solve(&mut back, 1) > 0);
                calls += 1;
            }
            assert!(calls > 1);
            for (c, &d) in dofs.iter().enumerate() {
                for row in 0..factor.n() {
                    let got = factor.back_solution(&back, row, c);
                    assert!((got - kinv[(row, d)]).abs() <= 1e-10 * scale);
                }
            }
        }
    }

    #[test]
    fn two_thread_solve_matches_the_sparse_system() {
        let mesh = box_mesh(Vec3::new(0.04, 0.04, 0.04), [8, 8, 8]).unwrap();
        let material = Material::new(5.0e4, 0.45, 1000.0).unwrap();
        let per_tet = MaterialMap::uniform(material).per_tet(&mesh).unwrap();
        let fix = [Fix::Below {
            axis: Axis::Y,
            dist: 1e-9,
        }];
        let fixed = fem::fixed_nodes(&mesh, &fix).unwrap();
        let sys = fem::assemble(&mesh, &per_tet, DofMap::new(&fixed).unwrap()).unwrap();
        let factor = Factor::for_system(&sys, 0.0, Ordering::NestedDissection, Par::Seq).unwrap();
        let split = factor
            .split
            .expect("nested dissection gives a branching tree");
        assert!(0 < split.mid && split.mid < split.top);
        let b = Mat::from_fn(sys.n_free(), 5, |i, j| ((i * 5 + j) as f64 * 0.61).sin());
        let mut x = b.clone();
        factor.solve_in_place_two_threads(x.as_mut()).unwrap();
        let r = sys.k_times(x.as_ref()) - &b;
        assert!(r.norm_l2() < 1e-10 * b.norm_l2());
        let mut x_seq = b.clone();
        factor.solve_in_place(x_seq.as_mut()).unwrap();
        assert!((&x - &x_seq).norm_max() <= 1e-12 * x_seq.norm_max());
        assert!(factor
            .solve_in_place_two_threads(Mat::zeros(3, 1).as_mut())
            .is_err());
    }
}
