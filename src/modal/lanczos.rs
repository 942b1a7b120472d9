//! Block Lanczos with full reorthogonalisation for the largest eigenpairs of a symmetric
//! positive semi-definite operator given as a block apply (here shift-invert).
//!
//! Written here instead of using faer's matrix-free Krylov–Schur because that solver
//! applies the operator to one vector at a time and reorthogonalises element by element,
//! three times slower on the bunny (docs/benchmarks.md, "eigen solve"): a block of
//! vectors goes through each supernode of the Cholesky factor together, and the
//! reorthogonalisation is a few tall matrix products per block.

use std::time::Instant;

use faer::linalg::matmul::matmul;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, Mat, MatMut, MatRef, Par};

/// Result of [`block_lanczos`]: Ritz values (descending) and vectors.
pub(crate) struct RitzPairs {
    /// Ritz values θ, descending.
    pub theta: Vec<f64>,
    /// Ritz vectors Y, orthonormal, one column per θ.
    pub vectors: Mat<f64>,
    /// A·Y, read off the Lanczos relation A V_m = V_{m+b} H without applying A again:
    /// one step of inverse iteration for free (see [`block_lanczos`]).
    pub applied: Mat<f64>,
    /// ‖A y − θ y‖ of each pair.
    pub residuals: Vec<f64>,
    /// Krylov basis size used.
    pub basis_dim: usize,
    /// Block applications of A (one pair of triangular solves each for shift-invert).
    pub applications: usize,
    /// Wall time spent orthogonalising the basis (s).
    pub orth_seconds: f64,
    /// Gram–Schmidt passes against the whole basis (one per block unless the DGKS test
    /// asked for a second).
    pub full_passes: usize,
}

/// The `nev` largest eigenpairs of the n×n operator `apply` (out = A·rhs, any number of
/// columns). Builds a Krylov basis in blocks of `block` vectors until the residuals of
/// the first `wanted` pairs fall below `tol` × the largest θ or the basis reaches
/// `max_dim` columns; `on_block(solves, converged)` hears of each block with the pairs
/// among the first `wanted` converged so far.
///
/// The relation A V_m = V_{m+b} H holds to round-off (H collects every Gram–Schmidt
/// coefficient and the last block's R), so A·Y = V_{m+b} (H S) for the Ritz vectors
/// Y = V_m S costs one product with the basis instead of another pass through `apply`;
/// [`RitzPairs::applied`] returns it so the caller can refine Y by Rayleigh–Ritz on
/// span(A·Y), i.e. one block inverse-iteration step without a solve.
#[allow(clippy::too_many_arguments)]
pub(crate) fn block_lanczos(
    n: usize,
    nev: usize,
    wanted: usize,
    block: usize,
    (max_dim, tol): (usize, f64),
    apply: &mut dyn FnMut(MatMut<'_, f64>, MatRef<'_, f64>),
    on_block: &mut dyn FnMut(usize, usize),
) -> RitzPairs {
    let b = block.max(1);
    let max_dim = max_dim.min(n.saturating_sub(b)).max(nev + b);
    let mut rng = SplitMix(0x9e37_79b9_7f4a_7c15);
    let mut v = Mat::<f64>::zeros(n, max_dim + b);
    let mut h = Mat::<f64>::zeros(max_dim + b, max_dim);
    // Starting block: random, orthonormalised.
    let mut w = Mat::<f64>::from_fn(n, b, |_, _| rng.next_f64() - 0.5);
    let mut r = Mat::<f64>::zeros(b, b);
    orthonormalize_block(v.as_ref().subcols(0, 0), w.as_mut(), r.as_mut(), &mut rng);
    v.as_mut().subcols_mut(0, b).copy_from(&w);
    let mut m = 0;
    let mut applications = 0;
    let mut orth_seconds = 0.0;
    let mut full_passes = 0;
    loop {
        let vj = v.as_ref().subcols(m, b);
        apply(w.as_mut(), vj);
        applications += 1;
        let t_orth = Instant::now();
        // Gram–Schmidt against the basis; the coefficients are column block m of H. In
        // exact arithmetic A·V_j lies in span(V_{j-1}, V_j, V_{j+1}) (block three-term
        // recurrence), so a first pass against the last two blocks removes the large
        // components and one pass against the whole basis the round-off drift: two
        // streams of the basis through memory instead of four for CGS2. A further full
        // pass runs only if that one removed a sizeable part of a column (DGKS test).
        let basis = v.as_ref().subcols(0, m + b);
        let local = m.saturating_sub(b);
        project_out(
            basis.subcols(local, m + b - local),
            w.as_mut(),
            h.as_mut().submatrix_mut(local, m, m + b - local, b),
        );
        let mut norms = column_norms(w.as_ref());
        for _ in 0..2 {
            project_out(basis, w.as_mut(), h.as_mut().submatrix_mut(0, m, m + b, b));
            full_passes += 1;
            let after = column_norms(w.as_ref());
            let kept = after.iter().zip(&norms).all(|(&a, &n)| a > DGKS * n);
            norms = after;
            if kept {
                break;
            }
        }
        r.fill(0.0);
        orthonormalize_block(basis, w.as_mut(), r.as_mut(), &mut rng);
        h.as_mut().submatrix_mut(m + b, m, b, b).copy_from(&r);
        orth_seconds += t_orth.elapsed().as_secs_f64();
        v.as_mut().subcols_mut(m + b, b).copy_from(&w);
        m += b;
        let full = m + b > max_dim;
        if m < nev + b {
            on_block(applications, 0);
        }
        // Checking costs an m×m eigendecomposition (m ≤ a few hundred), small next to a
        // block solve, so after every block.
        if m >= nev + b {
            let pairs = ritz(&v, &h, m, b, nev, false);
            let scale = pairs.theta.first().copied().unwrap_or(0.0).abs();
            let within = pairs.residuals[..wanted.min(nev)]
                .iter()
                .filter(|&&res| res <= tol * scale)
                .count();
            on_block(applications, within);
            let converged = within == wanted.min(nev);
            if converged || full {
                let mut pairs = ritz(&v, &h, m, b, nev, true);
                pairs.applications = applications;
                pairs.orth_seconds = orth_seconds;
                pairs.full_passes = full_passes;
                return pairs;
            }
        }
    }
}

/// A column keeping more than this fraction of its norm in a full Gram–Schmidt pass is
/// orthogonal to working precision (Daniel–Gragg–Kaufman–Stewart criterion).
const DGKS: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// Rows from which the basis products are split between two threads.
const TWO_THREAD_ROWS: usize = 8192;

/// w ← w − B (Bᵀ w), adding the coefficients Bᵀ w to `coef`.
///
/// These tall, narrow products stream the whole basis through memory. They are split by
/// rows between two threads by hand (partial Bᵀ w summed after the join): faer's
/// parallel matmul splits them too finely on a loaded machine (docs/benchmarks.md).
fn project_out(basis: MatRef<'_, f64>, w: MatMut<'_, f64>, mut coef: MatMut<'_, f64>) {
    let (n, m, b) = (basis.nrows(), basis.ncols(), w.ncols());
    let mut c = Mat::<f64>::zeros(m, b);
    if n < TWO_THREAD_ROWS {
        matmul(
            c.as_mut(),
            Accum::Replace,
            basis.transpose(),
            w.rb(),
            1.0,
            Par::Seq,
        );
        matmul(w, Accum::Add, basis, c.as_ref(), -1.0, Par::Seq);
        coef += &c;
        return;
    }
    let half = n / 2;
    let (b0, b1) = basis.split_at_row(half);
    let mut c1 = Mat::<f64>::zeros(m, b);
    {
        let (w0, w1) = w.rb().split_at_row(half);
        let c0 = c.as_mut();
        std::thread::scope(|scope| {
            scope.spawn(move || matmul(c0, Accum::Replace, b0.transpose(), w0, 1.0, Par::Seq));
            matmul(
                c1.as_mut(),
                Accum::Replace,
                b1.transpose(),
                w1,
                1.0,
                Par::Seq,
            );
        });
    }
    c += &c1;
    let (w0, w1) = w.split_at_row_mut(half);
    let cr = c.as_ref();
    std::thread::scope(|scope| {
        scope.spawn(move || matmul(w0, Accum::Add, b0, cr, -1.0, Par::Seq));
        matmul(w1, Accum::Add, b1, cr, -1.0, Par::Seq);
    });
    coef += &c;
}

/// dst = lhs · rhs with the rows of `lhs` split between two threads (as in
/// [`project_out`]).
fn matmul_two_threads(mut dst: MatMut<'_, f64>, lhs: MatRef<'_, f64>, rhs: MatRef<'_, f64>) {
    let n = lhs.nrows();
    if n < TWO_THREAD_ROWS {
        matmul(dst, Accum::Replace, lhs, rhs, 1.0, Par::Seq);
        return;
    }
    let half = n / 2;
    let (l0, l1) = lhs.split_at_row(half);
    let (d0, d1) = dst.rb_mut().split_at_row_mut(half);
    std::thread::scope(|scope| {
        scope.spawn(move || matmul(d0, Accum::Replace, l0, rhs, 1.0, Par::Seq));
        matmul(d1, Accum::Replace, l1, rhs, 1.0, Par::Seq);
    });
}

fn column_norms(w: MatRef<'_, f64>) -> Vec<f64> {
    (0..w.ncols()).map(|c| w.col(c).norm_l2()).collect()
}

/// Ritz pairs of the basis v[:, ..m]; vectors only when `vectors`.
fn ritz(v: &Mat<f64>, h: &Mat<f64>, m: usize, b: usize, nev: usize, vectors: bool) -> RitzPairs {
    let t = Mat::<f64>::from_fn(m, m, |i, j| 0.5 * (h[(i, j)] + h[(j, i)]));
    let evd = t
        .self_adjoint_eigen(faer::Side::Lower)
        .expect("EVD of a small symmetric matrix");
    let s = evd.S().column_vector();
    let u = evd.U();
    // Ascending from faer; take the largest nev, descending.
    let idx: Vec<usize> = (0..m).rev().take(nev).collect();
    let theta = idx.iter().map(|&i| s[i]).collect();
    let beta = h.as_ref().submatrix(m, m - b, b, b);
    let residuals = idx
        .iter()
        .map(|&i| {
            let tail = u.submatrix(m - b, i, b, 1);
            (beta * tail).norm_l2()
        })
        .collect();
    let (vectors, applied) = if vectors {
        // [S | H S] over the basis V_{m+b} (S padded with b zero rows): Y and A·Y in one
        // product.
        let mut coef = Mat::<f64>::zeros(m + b, 2 * nev);
        for (c, &i) in idx.iter().enumerate() {
            for r in 0..m {
                coef[(r, c)] = u[(r, i)];
            }
        }
        let s = coef.as_ref().submatrix(0, 0, m, nev).to_owned();
        let hs = h.as_ref().submatrix(0, 0, m + b, m) * &s;
        coef.as_mut().subcols_mut(nev, nev).copy_from(&hs);
        let mut both = Mat::<f64>::zeros(v.nrows(), 2 * nev);
        matmul_two_threads(both.as_mut(), v.as_ref().subcols(0, m + b), coef.as_ref());
        (
            both.as_ref().subcols(0, nev).to_owned(),
            both.as_ref().subcols(nev, nev).to_owned(),
        )
    } else {
        (Mat::zeros(0, 0), Mat::zeros(0, 0))
    };
    RitzPairs {
        theta,
        vectors,
        applied,
        residuals,
        basis_dim: m,
        applications: 0,
        orth_seconds: 0.0,
        full_passes: 0,
    }
}

/// Orthonormalises the columns of `w` (already orthogonal to `basis`) in place with
/// CGS2, writing w_in = w_out · r. A column that vanishes (the Krylov space became
/// invariant) is replaced by a random vector orthogonal to everything, with r's column
/// zero, so the iteration continues on a fresh direction.
fn orthonormalize_block(
    basis: MatRef<'_, f64>,
    mut w: MatMut<'_, f64>,
    mut r: MatMut<'_, f64>,
    rng: &mut SplitMix,
) {
    let (n, b) = (w.nrows(), w.ncols());
    for c in 0..b {
        let original = w.as_ref().col(c).norm_l2();
        for _ in 0..2 {
            for q in 0..c {
                let d = w.as_ref().col(q).transpose() * w.as_ref().col(c);
                for i in 0..n {
                    let wq = w[(i, q)];
                    w[(i, c)] -= d * wq;
                }
                r[(q, c)] += d;
            }
        }
        let mut norm = w.as_ref().col(c).norm_l2();
        // Also catches NaN (a norm that is not greater).
        if norm.partial_cmp(&(1e-10 * original)) != Some(std::cmp::Ordering::Greater) {
            for q in 0..c {
                r[(q, c)] = 0.0;
            }
            for i in 0..n {
                w[(i, c)] = rng.next_f64() - 0.5;
            }
            for _ in 0..2 {
                let col = w.as_ref().subcols(c, 1);
                let coef = basis.transpose() * col;
                matmul(
                    w.rb_mut().subcols_mut(c, 1),
                    Accum::Add,
                    basis,
                    coef.as_ref(),
                    -1.0,
                    Par::Seq,
                );
                for q in 0..c {
                    let d = w.as_ref().col(q).transpose() * w.as_ref().col(c);
                    for i in 0..n {
                        let wq = w[(i, q)];
                        w[(i, c)] -= d * wq;
                    }
                }
            }
            norm = w.as_ref().col(c).norm_l2();
            r[(c, c)] = 0.0;
        } else {
            r[(c, c)] = norm;
        }
        for i in 0..n {
            w[(i, c)] /= norm;
        }
    }
}

/// SplitMix64: a tiny deterministic generator for starting vectors (reproducible runs).
struct SplitMix(u64);

impl SplitMix {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}
