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
use faer::sparse::linalg::cholesky::supernodal::SymbolicSupernodalCholesky;
use faer::sparse::linalg::cholesky::{
    factorize_symbolic_cholesky, CholeskySymbolicParams, LltRef, SymbolicCholesky,
    SymbolicCholeskyRaw, SymmetricOrdering,
};
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::SparseColMatRef;
use faer::{Accum, Conj, MatMut, MatRef, Par, Side};

mod paths;
mod two_threads;

pub use paths::{PathColumns, PathWorkspace};
use two_threads::TreeSplit;

use super::{expand_node_permutation, nested_dissection, FemError, FemSystem};

/// Fill-reducing ordering for [`Factor::for_system`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ordering {
    /// [`Ordering::Amd`] below [`AUTO_ND_NODES`] free nodes, otherwise
    /// [`Ordering::NestedDissection`], the faster of the two at each size
    /// (docs/benchmarks.md, "orderings").
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

    /// Factorises `a` again, numerically only: `a` must have the sparsity pattern of the
    /// matrix this factor was made from (e.g. the next Newton iteration's tangent), so the
    /// ordering and symbolic analysis are reused. `context` names the matrix in errors;
    /// on an error the factor's values are unusable until the next successful call.
    pub(crate) fn refactor(
        &mut self,
        a: SparseColMatRef<'_, usize, f64>,
        context: &str,
    ) -> Result<(), FemError> {
        let n = self.n();
        if a.nrows() != n || a.ncols() != n {
            return Err(FemError::Dimension(format!(
                "{context}: matrix is {}×{}, the factor {n}×{n}",
                a.nrows(),
                a.ncols()
            )));
        }
        let mut mem = MemBuffer::try_new(
            self.symbolic
                .factorize_numeric_llt_scratch::<f64>(self.par, Default::default()),
        )
        .map_err(|_| FemError::Sparse(format!("{context}: out of memory")))?;
        self.symbolic
            .factorize_numeric_llt(
                &mut self.values,
                a,
                Side::Lower,
                LltRegularization::default(),
                self.par,
                MemStack::new(&mut mem),
                Default::default(),
            )
            .map_err(|_| FemError::NotPositiveDefinite {
                n,
                context: context.to_string(),
            })?;
        Ok(())
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

/// The supernodal structure ([`Factor::new`] always asks faer for it).
fn supernodal(symbolic: &SymbolicCholesky<usize>) -> &SymbolicSupernodalCholesky<usize> {
    match symbolic.raw() {
        SymbolicCholeskyRaw::Supernodal(s) => s,
        SymbolicCholeskyRaw::Simplicial(_) => {
            unreachable!("the factorisation is forced supernodal")
        }
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
    use faer::Mat;
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
    fn a_refactorisation_solves_the_new_matrix_on_the_old_analysis() {
        let system = block();
        let mut factor = Factor::for_system(&system, 0.0, Ordering::Amd, Par::Seq).unwrap();
        // K − σM has K's pattern (σ < 0 keeps it positive definite); its solve must match
        // a fresh factor of it.
        let sigma = -1e6;
        let shifted = system.shifted(sigma);
        factor.refactor(shifted.as_ref(), "shifted").unwrap();
        let fresh = Factor::for_system(&system, sigma, Ordering::Amd, Par::Seq).unwrap();
        let b = Mat::from_fn(system.n_free(), 2, |i, j| ((i * 2 + j) as f64 * 0.37).cos());
        let (mut x, mut y) = (b.clone(), b.clone());
        factor.solve_in_place(x.as_mut()).unwrap();
        fresh.solve_in_place(y.as_mut()).unwrap();
        assert!((&x - &y).norm_max() <= 1e-10 * y.norm_max());
        // A matrix of another size is refused; a negative definite one is named.
        assert!(matches!(
            factor.refactor(small_matrix().as_ref(), "small"),
            Err(FemError::Dimension(_))
        ));
        let mut negative = system.shifted(0.0);
        negative.val_mut().iter_mut().for_each(|v| *v = -*v);
        assert!(matches!(
            factor.refactor(negative.as_ref(), "negated"),
            Err(FemError::NotPositiveDefinite { .. })
        ));
    }

    fn small_matrix() -> faer::sparse::SparseColMat<usize, f64> {
        faer::sparse::SparseColMat::try_new_from_triplets(
            2,
            2,
            &[
                faer::sparse::Triplet::new(0, 0, 1.0),
                faer::sparse::Triplet::new(1, 1, 1.0),
            ],
        )
        .unwrap()
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
