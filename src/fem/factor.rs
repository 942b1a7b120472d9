//! Sparse Cholesky factorisation shared by the modal precompute (shift-invert, residual
//! flexibility) and the condensed runtime (compliance columns on demand).

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::perm::PermRef;
use faer::sparse::linalg::cholesky::{
    factorize_symbolic_cholesky, CholeskySymbolicParams, LltRef, SymbolicCholesky,
    SymmetricOrdering,
};
use faer::sparse::SparseColMatRef;
use faer::{Conj, MatMut, Par, Side};

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

/// A sparse LLᵀ factor of a symmetric positive definite matrix A (e.g. K or K − σM),
/// solving A X = B for many right-hand sides at once: every supernode's dense block
/// is applied to all columns of B together, so solving 3·k columns costs far less than
/// k separate solves.
#[derive(Debug)]
pub struct Factor {
    symbolic: SymbolicCholesky<usize>,
    values: Vec<f64>,
    par: Par,
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
        let symbolic = factorize_symbolic_cholesky(
            a.symbolic(),
            Side::Lower,
            ordering,
            CholeskySymbolicParams::default(),
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
        Ok(Self {
            symbolic,
            values,
            par,
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
