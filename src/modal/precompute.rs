//! The lowest vibration modes of K x = λ M x, mass-normalised (Xᵀ M X = I).
//!
//! Large problems: shift-invert. With M diagonal, y = M^½ x turns the pencil into the
//! standard symmetric problem for A = M^½ (K − σM)⁻¹ M^½, whose largest eigenvalues
//! θ = 1/(λ − σ) belong to the smallest λ. A block Lanczos (the `lanczos` module) finds
//! them; each operator application is one pair of block triangular solves with the
//! sparse Cholesky factor of K − σM. A negative σ keeps K − σM positive definite for
//! free bodies (λ = 0 rigid modes become θ = 1/|σ|). The Ritz vectors are then polished
//! by block inverse iteration with Rayleigh–Ritz, which drives ‖Kx − λMx‖/‖Kx‖ to
//! round-off: the first step comes free from the Lanczos relation (A·Y without a solve),
//! further sweeps, if needed, push all vectors through each triangular solve together.
//!
//! Small problems (the Krylov subspace would not be smaller than the matrix) use faer's
//! dense self-adjoint eigendecomposition of M^-½ K M^-½.

use std::time::Instant;

use faer::reborrow::ReborrowMut;
use faer::{Mat, MatMut, MatRef, Par, Side};
use serde::{Deserialize, Serialize};

use super::lanczos::block_lanczos;
use super::{select_modes, ModeReport, SelectionParams};
use crate::fem::{self, DofMap, Factor, FemError, FemSystem, Fix, MaterialMap, Ordering, Pressure};
use crate::mesh::TetMesh;

/// Why modes could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum ModalError {
    /// Building or factorising the FEM system failed.
    #[error(transparent)]
    Fem(#[from] FemError),
    /// The request is impossible for this system.
    #[error("{0}")]
    Request(String),
    /// The eigensolver did not reach the accuracy it promises.
    #[error("eigensolver did not converge: {0}")]
    NotConverged(String),
}

/// Mass-normalised vibration modes of a mesh: K wᵢ = λᵢ M wᵢ, Wᵀ M W = I.
#[derive(Clone, Debug, PartialEq)]
pub struct ModalBasis {
    /// λᵢ = ωᵢ² (rad²/s²), ascending.
    pub eigenvalues: Vec<f64>,
    /// Mode shapes, 3·n_nodes rows (node v → rows 3v, 3v+1, 3v+2 = x, y, z), one
    /// column per mode, in m·kg^-½; fixed nodes' rows are zero.
    pub shapes: Mat<f64>,
    /// Whether each mode is a rigid-body (zero-frequency) mode.
    pub rigid: Vec<bool>,
}

impl ModalBasis {
    /// Number of modes.
    pub fn n_modes(&self) -> usize {
        self.eigenvalues.len()
    }

    /// Number of mesh nodes covered by the shapes.
    pub fn n_nodes(&self) -> usize {
        self.shapes.nrows() / 3
    }

    /// Natural frequency of mode `i` (Hz): √λ / 2π, negative when round-off left λ < 0.
    pub fn frequency_hz(&self, i: usize) -> f64 {
        let l = self.eigenvalues[i];
        l.signum() * l.abs().sqrt() / (2.0 * std::f64::consts::PI)
    }

    /// The 3 × n_modes rows of node `node` (x, y, z).
    pub fn node_rows(&self, node: usize) -> MatRef<'_, f64> {
        self.shapes.as_ref().subrows(3 * node, 3)
    }

    /// The basis restricted to modes `keep` (in that order).
    pub fn select(&self, keep: &[usize]) -> ModalBasis {
        ModalBasis {
            eigenvalues: keep.iter().map(|&i| self.eigenvalues[i]).collect(),
            shapes: Mat::from_fn(self.shapes.nrows(), keep.len(), |r, c| {
                self.shapes[(r, keep[c])]
            }),
            rigid: keep.iter().map(|&i| self.rigid[i]).collect(),
        }
    }

    /// The shapes on the free DOFs of `dofs` (n_free × n_modes).
    pub fn free_shapes(&self, dofs: &DofMap) -> Mat<f64> {
        let free = dofs.free_nodes();
        Mat::from_fn(3 * free.len(), self.n_modes(), |d, c| {
            self.shapes[(3 * free[d / 3] + d % 3, c)]
        })
    }

    fn from_free(dofs: &DofMap, x: MatRef<'_, f64>, eigenvalues: Vec<f64>) -> Self {
        let mut shapes = Mat::zeros(3 * dofs.n_nodes(), x.ncols());
        for (j, &v) in dofs.free_nodes().iter().enumerate() {
            for c in 0..x.ncols() {
                for a in 0..3 {
                    shapes[(3 * v + a, c)] = x[(3 * j + a, c)];
                }
            }
        }
        let scale = eigenvalues.iter().fold(0.0f64, |m, l| m.max(l.abs()));
        let rigid = eigenvalues
            .iter()
            .map(|l| l.abs() <= RIGID_RATIO * scale)
            .collect();
        Self {
            eigenvalues,
            shapes,
            rigid,
        }
    }
}

/// |λ| below this fraction of the largest computed |λ| marks a rigid-body mode.
const RIGID_RATIO: f64 = 1e-8;
/// Systems up to this many DOFs use the dense eigensolver.
const DENSE_MAX_DOFS: usize = 600;
/// Extra Ritz vectors carried beyond the requested modes (better convergence of the last).
const GUARD_VECTORS: usize = 8;
/// Target relative residual ‖Kx − λMx‖ / ‖Kx‖ of elastic modes.
const RESIDUAL_TARGET: f64 = 2e-9;
/// Lanczos stops when Ritz residuals fall below this fraction of the largest θ; the
/// polishing sweeps take the vectors the rest of the way.
const LANCZOS_TOLERANCE: f64 = 1e-10;
/// Vectors per block of the block Lanczos (columns per triangular solve).
const LANCZOS_BLOCK: usize = 8;
/// Relative residual above which a warning is logged.
const RESIDUAL_WARN: f64 = 1e-8;
/// Relative residual above which the modes are rejected as unconverged.
const RESIDUAL_FAIL: f64 = 1e-6;
/// Block inverse-iteration sweeps at most.
const MAX_POLISH_SWEEPS: usize = 4;

/// How the eigenpairs were obtained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EigenInfo {
    /// Shift σ (rad²/s²) of the factorised K − σM (0 for the dense path).
    pub shift: f64,
    /// Whether the dense path was used.
    pub dense: bool,
    /// Stored entries of the Cholesky factor (0 for the dense path).
    pub factor_nnz: usize,
    /// Largest relative residual ‖Kx − λMx‖ / ‖Kx‖ over elastic modes.
    pub max_residual: f64,
    /// Block inverse-iteration sweeps applied after Lanczos.
    pub polish_sweeps: usize,
}

/// Wall-clock time of each precompute stage (s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Materials, fixed nodes and assembly of K and M.
    pub assembly: f64,
    /// Symbolic and numeric Cholesky factorisation.
    pub factorisation: f64,
    /// Eigen solve (Lanczos and polishing, or dense EVD).
    pub eigen: f64,
}

/// What the eigen solve for `n_modes` modes of `n` free DOFs holds at once (bytes),
/// besides the sparse factor: dense, the matrix, its eigenvectors and the solver's
/// workspace (3 n²); Lanczos, the Krylov basis and its image (2 n · dim), the projected
/// problem (3 dim²) and the Ritz vectors being polished (3 n · nev); then the basis
/// over the mesh nodes (3 · nodes · modes).
fn eigen_solve_bytes(n: usize, n_modes: usize, dense: bool, nodes: usize) -> f64 {
    let (n, k) = (n as f64, n_modes as f64);
    let basis = 3.0 * nodes as f64 * k;
    let solve = if dense {
        3.0 * n * n
    } else {
        let nev = (k + GUARD_VECTORS as f64).min(n);
        let dim = (6.0 * nev).max(nev + 128.0);
        2.0 * n * dim + 3.0 * dim * dim + 3.0 * n * nev
    };
    8.0 * (basis + solve)
}

/// The lowest `n_modes` modes of `system`. Returns the basis over all mesh nodes, the
/// factor it used (of K itself when `shift == 0`, reusable for static solves), and how
/// they were obtained. Times the factorisation and the eigen solve into `timings`.
pub fn compute_modes(
    system: &FemSystem,
    n_modes: usize,
    ordering: Ordering,
    timings: &mut Timings,
) -> Result<(ModalBasis, Option<Factor>, EigenInfo), ModalError> {
    compute_modes_with_progress(system, n_modes, ordering, timings, &mut |_| {})
}

/// [`compute_modes`], telling `progress` of each Lanczos block solve (with the modes
/// converged so far) and each polishing sweep.
pub fn compute_modes_with_progress(
    system: &FemSystem,
    n_modes: usize,
    ordering: Ordering,
    timings: &mut Timings,
    progress: &mut dyn FnMut(Progress),
) -> Result<(ModalBasis, Option<Factor>, EigenInfo), ModalError> {
    let n = system.n_free();
    if n_modes == 0 || n_modes > n {
        return Err(ModalError::Request(format!(
            "asked for {n_modes} modes, but the system has {n} free DOFs (ask for 1..={n})"
        )));
    }
    let dense = n <= DENSE_MAX_DOFS.max(3 * (n_modes + GUARD_VECTORS));
    crate::budget::check(
        eigen_solve_bytes(n, n_modes, dense, system.dofs.n_nodes()),
        || {
            format!(
                "asking for {n_modes} modes of {n} free DOFs: the {} eigen solve",
                if dense { "dense" } else { "Lanczos" }
            )
        },
    )
    .map_err(ModalError::Request)?;
    if dense {
        let t = Instant::now();
        let (x, lambda) = dense_modes(system, n_modes)?;
        timings.eigen = t.elapsed().as_secs_f64();
        let basis = ModalBasis::from_free(&system.dofs, x.as_ref(), lambda);
        let max_residual = max_relative_residual(system, &basis);
        let info = EigenInfo {
            shift: 0.0,
            dense: true,
            factor_nnz: 0,
            max_residual,
            polish_sweeps: 0,
        };
        return Ok((basis, None, info));
    }
    let par = faer::get_global_parallelism();
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let (factor, shift) = factor_for_modes(system, ordering, par)?;
    timings.factorisation = t.elapsed().as_secs_f64();
    tracing::debug!(
        "factorised {n} DOFs, {} entries in L, {:.3} s wall, {:.3} s CPU",
        factor.nnz_l(),
        timings.factorisation,
        cpu_seconds() - cpu
    );

    let t = Instant::now();
    let cpu = cpu_seconds();
    let nev = (n_modes + GUARD_VECTORS).min(n);
    let sqrt_m: Vec<f64> = system.mass.iter().map(|m| m.sqrt()).collect();
    let (mut solve_wall, mut solve_cpu) = (0.0, 0.0);
    let mut solve_error = None;
    // A = M^½ (K − σM)⁻¹ M^½, applied to a block.
    let mut apply = |mut out: MatMut<'_, f64>, rhs: MatRef<'_, f64>| {
        let (t, cpu) = (Instant::now(), cpu_seconds());
        for c in 0..rhs.ncols() {
            for (i, s) in sqrt_m.iter().enumerate() {
                out[(i, c)] = rhs[(i, c)] * s;
            }
        }
        if let Err(e) = factor.solve_in_place_two_threads(out.rb_mut()) {
            solve_error.get_or_insert(e);
        }
        for c in 0..rhs.ncols() {
            for (i, s) in sqrt_m.iter().enumerate() {
                out[(i, c)] *= s;
            }
        }
        solve_wall += t.elapsed().as_secs_f64();
        solve_cpu += cpu_seconds() - cpu;
    };
    let max_dim = (6 * nev).max(nev + 128);
    let mut on_block = |solves, converged| {
        progress(Progress::Lanczos {
            solves,
            converged,
            wanted: n_modes,
        })
    };
    let pairs = block_lanczos(
        n,
        nev,
        n_modes,
        LANCZOS_BLOCK,
        (max_dim, LANCZOS_TOLERANCE),
        &mut apply,
        &mut on_block,
    );
    if let Some(e) = solve_error {
        return Err(e.into());
    }
    tracing::debug!(
        "block Lanczos: {} block solves of {LANCZOS_BLOCK} ({solve_wall:.3} s wall, \
         {solve_cpu:.3} s CPU), orthogonalisation {:.3} s wall ({} full passes), basis {} \
         vectors, worst Ritz residual {:.2e} (θ₁ = {:.3e}), {:.3} s wall, {:.3} s CPU",
        pairs.applications,
        pairs.orth_seconds,
        pairs.full_passes,
        pairs.basis_dim,
        pairs.residuals.iter().cloned().fold(0.0, f64::max),
        pairs.theta[0],
        t.elapsed().as_secs_f64(),
        cpu_seconds() - cpu,
    );
    // Back to the pencil: x = M^-½ y and (K − σM)⁻¹ M x = M^-½ A y.
    let (mut x, mut ax) = (pairs.vectors, pairs.applied);
    for c in 0..nev {
        for (i, s) in sqrt_m.iter().enumerate() {
            x[(i, c)] /= s;
            ax[(i, c)] /= s;
        }
    }
    // The free inverse-iteration step from the Lanczos relation.
    let (x, lambda) = rayleigh_ritz(system, shift, x.as_ref(), ax.as_ref())?;
    let (x, lambda, sweeps) =
        polish_to_target(system, (&factor, shift), (x, lambda), n_modes, progress)?;
    let (x, lambda) = sort_and_truncate(x, lambda, n_modes);
    timings.eigen = t.elapsed().as_secs_f64();
    tracing::debug!(
        "eigen solve {:.3} s wall, {:.3} s CPU ({sweeps} polishing sweeps)",
        timings.eigen,
        cpu_seconds() - cpu
    );
    let basis = ModalBasis::from_free(&system.dofs, x.as_ref(), lambda);
    let max_residual = max_relative_residual(system, &basis);
    if max_residual > RESIDUAL_WARN {
        tracing::warn!(
            "largest relative eigen-residual {max_residual:.2e} after {sweeps} polishing sweeps"
        );
    }
    if max_residual.is_nan() || max_residual > RESIDUAL_FAIL {
        return Err(ModalError::NotConverged(format!(
            "largest relative residual {max_residual:.2e} after {sweeps} polishing sweeps"
        )));
    }
    let info = EigenInfo {
        shift,
        dense: false,
        factor_nnz: factor.nnz_l(),
        max_residual,
        polish_sweeps: sweeps,
    };
    let factor = (shift == 0.0).then_some(factor);
    Ok((basis, factor, info))
}

/// Polishing sweeps of `(x, λ)` with `(factor, shift)` until the first `n_modes`
/// relative residuals reach [`RESIDUAL_TARGET`] or [`MAX_POLISH_SWEEPS`] ran; returns
/// the pairs and the sweeps run.
fn polish_to_target(
    system: &FemSystem,
    (factor, shift): (&Factor, f64),
    (mut x, mut lambda): (Mat<f64>, Vec<f64>),
    n_modes: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Mat<f64>, Vec<f64>, usize), ModalError> {
    let mut sweeps = 0;
    loop {
        let r = relative_residuals(system, x.as_ref(), &lambda, n_modes);
        let worst = r.iter().cloned().fold(0.0, f64::max);
        if worst <= RESIDUAL_TARGET || sweeps == MAX_POLISH_SWEEPS {
            return Ok((x, lambda, sweeps));
        }
        tracing::debug!("polishing sweep {sweeps}: worst residual {worst:.2e}");
        progress(Progress::Polishing {
            sweep: sweeps + 1,
            of: MAX_POLISH_SWEEPS,
        });
        (x, lambda) = polish(system, factor, shift, x.as_ref())?;
        sweeps += 1;
    }
}

/// Factorises K if the body is held in place (positive definite), otherwise K − σM with
/// σ < 0 a small fraction of the lowest elastic eigenvalue's scale.
fn factor_for_modes(
    system: &FemSystem,
    ordering: Ordering,
    par: Par,
) -> Result<(Factor, f64), ModalError> {
    if system.dofs.n_fixed_nodes() > 0 {
        match Factor::for_system(system, 0.0, ordering, par) {
            Ok(f) => return Ok((f, 0.0)),
            Err(FemError::NotPositiveDefinite { .. }) => {
                tracing::info!("fixed nodes do not hold the body in place; using a negative shift");
            }
            Err(e) => return Err(e.into()),
        }
    }
    let shift = -free_shift_scale(system);
    Ok((Factor::for_system(system, shift, ordering, par)?, shift))
}

/// |σ| for free bodies: 1% of mean(Kᵢᵢ/Mᵢᵢ) / n_nodes^⅔. Kᵢᵢ/Mᵢᵢ ~ c²/h² (c wave speed,
/// h element size) and n_nodes^⅔ ~ (L/h)², so this is ~1% of (c/L)², below the lowest
/// elastic eigenvalue of compact and moderately slender bodies. Any σ < 0 keeps K − σM
/// positive definite; its size only affects convergence speed.
fn free_shift_scale(system: &FemSystem) -> f64 {
    let k = system.k.as_ref();
    let mut sum = 0.0;
    for j in 0..system.n_free() {
        let rows = k.row_idx_of_col_raw(j);
        let vals = k.val_of_col(j);
        let p = rows
            .iter()
            .position(|&r| r == j)
            .expect("K stores its diagonal");
        sum += vals[p] / system.mass[j];
    }
    let mean = sum / system.n_free() as f64;
    let nodes = (system.n_free() / 3) as f64;
    1e-2 * mean / nodes.powf(2.0 / 3.0)
}

/// One sweep of block inverse iteration Y = (K − σM)⁻¹ M X followed by Rayleigh–Ritz on
/// span(Y).
fn polish(
    system: &FemSystem,
    factor: &Factor,
    shift: f64,
    x: MatRef<'_, f64>,
) -> Result<(Mat<f64>, Vec<f64>), ModalError> {
    let mut y = Mat::from_fn(x.nrows(), x.ncols(), |i, c| system.mass[i] * x[(i, c)]);
    factor.solve_in_place_two_threads(y.as_mut())?;
    rayleigh_ritz(system, shift, x, y.as_ref())
}

/// Rayleigh–Ritz for K x = λ M x on span(Y), Y = (K − σM)⁻¹ M X. The reduced pencil uses
/// Yᵀ(K − σM)Y = Yᵀ M X, which has no cancellation, so rigid modes keep λ ≈ 0 to
/// round-off relative to σ. Returns M-orthonormal Ritz vectors and their λ.
fn rayleigh_ritz(
    system: &FemSystem,
    shift: f64,
    x: MatRef<'_, f64>,
    y: MatRef<'_, f64>,
) -> Result<(Mat<f64>, Vec<f64>), ModalError> {
    let (n, k) = (x.nrows(), x.ncols());
    let mx = Mat::from_fn(n, k, |i, c| system.mass[i] * x[(i, c)]);
    let my = Mat::from_fn(n, k, |i, c| system.mass[i] * y[(i, c)]);
    let a_r = y.transpose() * &mx;
    let m_r = y.transpose() * &my;
    let a_r = nalgebra::DMatrix::from_fn(k, k, |i, j| 0.5 * (a_r[(i, j)] + a_r[(j, i)]));
    let m_r = nalgebra::DMatrix::from_fn(k, k, |i, j| 0.5 * (m_r[(i, j)] + m_r[(j, i)]));
    let chol = nalgebra::Cholesky::new(m_r)
        .ok_or_else(|| ModalError::NotConverged("Ritz vectors became linearly dependent".into()))?;
    let l = chol.l();
    // C = L⁻¹ A_r L⁻ᵀ, eigenvectors V, Ritz vectors Y L⁻ᵀ V.
    let linv_a = l
        .solve_lower_triangular(&a_r)
        .expect("Cholesky factor is invertible");
    let c = l
        .solve_lower_triangular(&linv_a.transpose())
        .expect("Cholesky factor is invertible");
    let c = (&c + c.transpose()) * 0.5;
    let eig = nalgebra::SymmetricEigen::new(c);
    let coeff = l
        .transpose()
        .solve_upper_triangular(&eig.eigenvectors)
        .expect("Cholesky factor is invertible");
    let coeff = Mat::from_fn(k, k, |i, j| coeff[(i, j)]);
    let x_new = y * &coeff;
    let lambda = eig.eigenvalues.iter().map(|mu| shift + mu).collect();
    Ok((x_new, lambda))
}

/// CPU time of the whole process (s, all threads): with other work on the machine it
/// shows the cost of a stage better than wall time does.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc == 0 {
        ts.tv_sec as f64 + 1e-9 * ts.tv_nsec as f64
    } else {
        0.0
    }
}

fn sort_and_truncate(x: Mat<f64>, lambda: Vec<f64>, k: usize) -> (Mat<f64>, Vec<f64>) {
    let mut idx: Vec<usize> = (0..lambda.len()).collect();
    idx.sort_by(|&a, &b| lambda[a].total_cmp(&lambda[b]));
    idx.truncate(k);
    let x = Mat::from_fn(x.nrows(), k, |i, c| x[(i, idx[c])]);
    (x, idx.iter().map(|&i| lambda[i]).collect())
}

/// ‖K xᵢ − λᵢ M xᵢ‖ / ‖K xᵢ‖ for the `k` lowest-λ columns (in column order).
fn relative_residuals(
    system: &FemSystem,
    x: MatRef<'_, f64>,
    lambda: &[f64],
    k: usize,
) -> Vec<f64> {
    let kx = system.k_times(x);
    let scale = lambda.iter().fold(0.0f64, |m, l| m.max(l.abs()));
    let mut order: Vec<usize> = (0..lambda.len()).collect();
    order.sort_by(|&a, &b| lambda[a].total_cmp(&lambda[b]));
    order
        .into_iter()
        .take(k)
        .map(|c| {
            let mut num = 0.0;
            let mut den = 0.0;
            for i in 0..x.nrows() {
                let r = kx[(i, c)] - lambda[c] * system.mass[i] * x[(i, c)];
                num += r * r;
                den += kx[(i, c)] * kx[(i, c)];
            }
            if lambda[c].abs() <= RIGID_RATIO * scale {
                // Rigid mode: K x ≈ 0, judge against the size of K x for a unit-λ mode.
                let mx: f64 = (0..x.nrows())
                    .map(|i| (system.mass[i] * x[(i, c)]).powi(2))
                    .sum();
                num.sqrt() / (scale * mx.sqrt())
            } else {
                num.sqrt() / den.sqrt()
            }
        })
        .collect()
}

/// Largest relative residual over the modes of `basis` (see [`EigenInfo::max_residual`]).
pub fn max_relative_residual(system: &FemSystem, basis: &ModalBasis) -> f64 {
    let x = basis.free_shapes(&system.dofs);
    relative_residuals(system, x.as_ref(), &basis.eigenvalues, basis.n_modes())
        .into_iter()
        .fold(0.0, f64::max)
}

fn dense_modes(system: &FemSystem, k: usize) -> Result<(Mat<f64>, Vec<f64>), ModalError> {
    let n = system.n_free();
    let inv_sqrt: Vec<f64> = system.mass.iter().map(|m| 1.0 / m.sqrt()).collect();
    let mut a = Mat::<f64>::zeros(n, n);
    let kr = system.k.as_ref();
    for j in 0..n {
        for (&i, &v) in kr.row_idx_of_col_raw(j).iter().zip(kr.val_of_col(j)) {
            a[(i, j)] = v * inv_sqrt[i] * inv_sqrt[j];
        }
    }
    let evd = a
        .self_adjoint_eigen(Side::Lower)
        .map_err(|e| ModalError::NotConverged(format!("dense eigensolver: {e:?}")))?;
    let s = evd.S().column_vector();
    let u = evd.U();
    let x = Mat::from_fn(n, k, |i, c| u[(i, c)] * inv_sqrt[i]);
    Ok((x, (0..k).map(|c| s[c]).collect()))
}

/// Everything the precompute needs besides the mesh, materials and fixed nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrecomputeParams {
    /// Modes to compute before selection.
    pub n_modes: usize,
    /// Which modes to keep, and damping.
    pub selection: SelectionParams,
    /// Fill-reducing ordering of the sparse factor.
    #[serde(with = "ordering_serde")]
    pub ordering: Ordering,
}

impl Default for PrecomputeParams {
    fn default() -> Self {
        Self {
            n_modes: 40,
            selection: SelectionParams::default(),
            ordering: Ordering::default(),
        }
    }
}

mod ordering_serde {
    use crate::fem::Ordering;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(o: &Ordering, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match o {
            Ordering::Auto => "auto",
            Ordering::Amd => "amd",
            Ordering::NestedDissection => "nested-dissection",
        })
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Ordering, D::Error> {
        match String::deserialize(d)?.as_str() {
            "auto" => Ok(Ordering::Auto),
            "amd" => Ok(Ordering::Amd),
            "nested-dissection" => Ok(Ordering::NestedDissection),
            other => Err(serde::de::Error::custom(format!(
                "unknown ordering {other:?}"
            ))),
        }
    }
}

/// The result of the offline precompute: what the modal runtime loads.
#[derive(Clone, Debug, PartialEq)]
pub struct Precomputed {
    /// The kept modes.
    pub basis: ModalBasis,
    /// Every computed mode with its frequency, damping and fate.
    pub reports: Vec<ModeReport>,
    /// How the eigenpairs were obtained.
    pub eigen: EigenInfo,
    /// Free DOFs of the system.
    pub n_free_dofs: usize,
    /// Fixed nodes.
    pub n_fixed_nodes: usize,
    /// Stage times (s); informational, not part of the cache's identity.
    pub timings: Timings,
}

/// Where [`precompute`] is, for progress displays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Resolving materials and fixed nodes, assembling K and M.
    Assembling,
    /// Factorising and solving the eigenproblem.
    SolvingModes,
    /// A block Lanczos solve done: `solves` so far; `converged` of the `wanted` lowest
    /// modes within tolerance (counted once the basis holds them all).
    Lanczos {
        /// Block solves so far.
        solves: usize,
        /// Modes within the Lanczos tolerance.
        converged: usize,
        /// Modes asked for.
        wanted: usize,
    },
    /// Polishing sweep `sweep` (from 1) of at most `of` is running.
    Polishing {
        /// This sweep.
        sweep: usize,
        /// The most sweeps run.
        of: usize,
    },
}

/// Mesh + materials + fixed nodes, with the volumetric strain evaluated as `pressure`
/// says → kept modes and their reports.
pub fn precompute(
    mesh: &TetMesh,
    materials: &MaterialMap,
    fixes: &[Fix],
    pressure: Pressure,
    params: &PrecomputeParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<Precomputed, ModalError> {
    progress(Progress::Assembling);
    let t = Instant::now();
    let per_tet = materials.per_tet(mesh)?;
    let fixed = fem::fixed_nodes(mesh, fixes)?;
    let system = fem::assemble_with(mesh, &per_tet, DofMap::new(&fixed)?, pressure)?;
    let assembly = t.elapsed().as_secs_f64();
    let mut pre = precompute_assembled(&system, params, progress)?;
    pre.timings.assembly = assembly;
    Ok(pre)
}

/// The same from `system`, already assembled. Residual flexibility is not precomputed:
/// the runtime takes it from K⁻¹ columns of the contacted nodes
/// ([`ComplianceColumns`](crate::fem::ComplianceColumns)), exact and on demand.
pub fn precompute_assembled(
    system: &FemSystem,
    params: &PrecomputeParams,
    progress: &mut dyn FnMut(Progress),
) -> Result<Precomputed, ModalError> {
    let mut timings = Timings::default();
    progress(Progress::SolvingModes);
    let (n_modes, ordering) = (params.n_modes, params.ordering);
    let (all, _, eigen) =
        compute_modes_with_progress(system, n_modes, ordering, &mut timings, progress)?;
    let reports = select_modes(&all, &params.selection);
    let keep: Vec<usize> = reports
        .iter()
        .filter(|r| r.fate.kept())
        .map(|r| r.index)
        .collect();
    let basis = all.select(&keep);
    Ok(Precomputed {
        basis,
        reports,
        eigen,
        n_free_dofs: system.n_free(),
        n_fixed_nodes: system.dofs.n_fixed_nodes(),
        timings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::{Axis, Material};
    use crate::mesh::generate::box_mesh;
    use crate::Vec3;

    #[test]
    fn the_lanczos_solve_reports_each_block_and_its_modes_converging_one_by_one() {
        // 972 free DOFs: above the dense solve's limit, so block Lanczos runs.
        let mesh = box_mesh(Vec3::new(0.04, 0.04, 0.02), [8, 8, 4]).unwrap();
        let material = Material::new(3.0e3, 0.45, 1000.0).unwrap();
        let per_tet = MaterialMap::uniform(material).per_tet(&mesh).unwrap();
        let fix = Fix::Below {
            axis: Axis::Z,
            dist: 1e-9,
        };
        let fixed = fem::fixed_nodes(&mesh, &[fix]).unwrap();
        let dofs = DofMap::new(&fixed).unwrap();
        let system = fem::assemble_with(&mesh, &per_tet, dofs, Pressure::Element).unwrap();
        assert!(system.n_free() > DENSE_MAX_DOFS);
        let wanted = 20;
        let mut events = Vec::new();
        let mut timings = Timings::default();
        let (basis, _, info) = compute_modes_with_progress(
            &system,
            wanted,
            Ordering::default(),
            &mut timings,
            &mut |p| events.push(p),
        )
        .unwrap();
        assert!(!info.dense);
        let lanczos: Vec<(usize, usize)> = events
            .iter()
            .filter_map(|p| match *p {
                Progress::Lanczos {
                    solves,
                    converged,
                    wanted: w,
                } => {
                    assert_eq!(w, wanted);
                    Some((solves, converged))
                }
                _ => None,
            })
            .collect();
        println!(
            "{lanczos:?}, then {} other events",
            events.len() - lanczos.len()
        );
        // One event per block solve, in order, ending with every mode converged.
        assert!(lanczos.iter().enumerate().all(|(i, &(s, _))| s == i + 1));
        assert_eq!(lanczos.last().unwrap().1, wanted);
        // The bar moves inside the stage: counts between none and all of them.
        let between = lanczos.iter().filter(|&&(_, c)| 0 < c && c < wanted);
        assert!(between.count() >= 1, "{lanczos:?}");
        let polishing = events
            .iter()
            .filter(|p| matches!(p, Progress::Polishing { .. }));
        assert_eq!(polishing.count(), info.polish_sweeps);
        assert_eq!(basis.eigenvalues.len(), wanted);
    }
}
