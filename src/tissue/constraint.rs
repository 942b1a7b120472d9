//! Point constraints on the tissue surface and the small dense system that enforces
//! them (modal paper eqs. 13–16; the condensed backend solves the same shape).
//!
//! A constraint prescribes, at the end of the step, the position, velocity or
//! acceleration of a material point along one direction (a frictionless contact: the
//! outward normal) or all three. The material point is a [`Support`]: a barycentric
//! point of one surface triangle, or a contact patch of surface nodes under a probe's
//! footprint. The force that enforces it acts through the same weights along the same
//! directions, so every backend reduces a set of constraints to S f = r with S
//! (rows × rows) symmetric positive semi-definite: S = U C Uᵀ for the point-to-point
//! response C over the step.

use std::cmp::Ordering::Greater;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt_pivoting;
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place, solve_upper_triangular_in_place,
};
use faer::reborrow::ReborrowMut;
use faer::{MatMut, MatRef, Par};

use crate::fem::Support;
use crate::Vec3;

use super::error::ModelError;

/// What a constraint prescribes at the end of the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstraintKind {
    /// Position of the material point (m).
    Position,
    /// Velocity of the material point (m/s).
    Velocity,
    /// Acceleration of the material point (m/s²).
    Acceleration,
}

/// Which directions of the material point a constraint fixes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Directions {
    /// Only the component along this unit vector (one row): frictionless contact.
    Along(Vec3),
    /// All three components (three rows): a held or dragged point.
    All,
}

/// A constraint on one material point of the surface.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointConstraint {
    /// The material point: nodes and weights that measure its motion and carry its force.
    pub support: Support,
    /// Position, velocity or acceleration constraint.
    pub kind: ConstraintKind,
    /// Constrained directions.
    pub directions: Directions,
    /// Prescribed value (m, m/s or m/s² by `kind`, scene frame); only its components
    /// along the constrained directions matter.
    pub target: Vec3,
    /// Unilateral: the constraint may only push the surface inward (against the
    /// direction of `Along(n)`, n the outward normal); if holding it would need a
    /// pull, it is released for the step and its force is zero.
    pub unilateral: bool,
}

impl PointConstraint {
    /// A frictionless probe contact: the point's position along the outward normal
    /// `normal` must reach `target` (the probe tip); released rather than pulling.
    pub fn contact(nodes: [usize; 3], weights: [f64; 3], normal: Vec3, target: Vec3) -> Self {
        Self::contact_on(Support::triangle(nodes, weights), normal, target)
    }

    /// A frictionless probe contact at any support (a contact patch): its position
    /// along the outward normal `normal` must reach `target`; released rather than
    /// pulling.
    pub fn contact_on(support: Support, normal: Vec3, target: Vec3) -> Self {
        Self {
            support,
            kind: ConstraintKind::Position,
            directions: Directions::Along(normal),
            target,
            unilateral: true,
        }
    }

    /// A bilateral position constraint holding the point at `target` in all directions.
    pub fn hold(nodes: [usize; 3], weights: [f64; 3], target: Vec3) -> Self {
        Self::hold_on(Support::triangle(nodes, weights), target)
    }

    /// A bilateral position constraint holding the material point `support` at
    /// `target` in all directions.
    pub fn hold_on(support: Support, target: Vec3) -> Self {
        Self {
            support,
            kind: ConstraintKind::Position,
            directions: Directions::All,
            target,
            unilateral: false,
        }
    }

    /// Number of scalar rows (1 or 3).
    pub fn rows(&self) -> usize {
        match self.directions {
            Directions::Along(_) => 1,
            Directions::All => 3,
        }
    }

    /// Unit direction of row `r` (< [`Self::rows`]).
    pub fn direction(&self, r: usize) -> Vec3 {
        match self.directions {
            Directions::Along(n) => n,
            Directions::All => Vec3::ith(r, 1.0),
        }
    }

    /// Whether every number in the constraint is finite (the caller checks the node
    /// indices against its mesh).
    pub fn is_finite(&self) -> bool {
        self.support.is_finite()
            && self.target.iter().all(|x| x.is_finite())
            && match self.directions {
                Directions::Along(n) => n.iter().all(|x| x.is_finite()) && n.norm() > 0.0,
                Directions::All => true,
            }
    }
}

impl PointConstraint {
    /// Rest position of the constrained material point (m).
    pub fn rest_point(&self, rest: &[Vec3]) -> Vec3 {
        self.support.rest_point(rest)
    }
}

/// Checks one step's input as every backend needs it: a positive finite `dt` (s), room
/// for one force per constraint, finite constraints on nodes of a mesh of `n_nodes`, one
/// constraint kind for the whole step, and at most `capacity` rows. Returns the number
/// of rows.
pub fn validate_step(
    dt: f64,
    constraints: &[PointConstraint],
    forces: &[Vec3],
    n_nodes: usize,
    capacity: usize,
) -> Result<usize, ModelError> {
    if !(dt > 0.0 && dt.is_finite()) {
        return Err(ModelError::InvalidStep(dt));
    }
    if forces.len() < constraints.len() {
        return Err(ModelError::BadConstraint {
            index: forces.len(),
            msg: format!(
                "{} constraints but room for {} forces",
                constraints.len(),
                forces.len()
            ),
        });
    }
    let mut m = 0;
    for (i, c) in constraints.iter().enumerate() {
        if !c.is_finite() {
            return Err(ModelError::BadConstraint {
                index: i,
                msg: "non-finite weight, target or direction".into(),
            });
        }
        if let Some(&v) = c.support.nodes().iter().find(|&&v| v >= n_nodes) {
            return Err(ModelError::BadConstraint {
                index: i,
                msg: format!("node {v} is not in the mesh of {n_nodes} nodes"),
            });
        }
        if c.kind != constraints[0].kind {
            return Err(ModelError::BadConstraint {
                index: i,
                msg: format!(
                    "{:?} mixed with {:?} in one step",
                    c.kind, constraints[0].kind
                ),
            });
        }
        m += c.rows();
    }
    if m > capacity {
        return Err(ModelError::TooManyConstraints {
            given: m,
            limit: capacity,
        });
    }
    Ok(m)
}

/// Refuses a step whose constraints are not position constraints (checked by
/// [`validate_step`] to be of one kind), for a static model named `model`.
pub fn require_positions(constraints: &[PointConstraint], model: &str) -> Result<(), ModelError> {
    match constraints.first() {
        Some(c) if c.kind != ConstraintKind::Position => Err(ModelError::BadConstraint {
            index: 0,
            msg: format!(
                "the {model} takes position constraints only, not {:?}",
                c.kind
            ),
        }),
        _ => Ok(()),
    }
}

/// Appends the nodal loads (node, N) that the constraint forces put on the mesh: each
/// constraint's force split over its support's nodes by their weights.
pub fn push_nodal_loads(
    constraints: &[PointConstraint],
    forces: &[Vec3],
    loads: &mut Vec<(usize, Vec3)>,
) {
    for (c, f) in constraints.iter().zip(forces) {
        if *f != Vec3::zeros() {
            for (v, w) in c.support.iter() {
                if w != 0.0 {
                    loads.push((v, f * w));
                }
            }
        }
    }
}

/// Adds dᵢᵀ C(pᵢ, pⱼ) dⱼ to every row pair of the row-major `m`×`m` system `s`, where
/// rows are the constraints' rows in order and `block(a, b)` gives the 3×3 compliance
/// between the points of constraints a and b (m/N). Each point pair's block is
/// computed once, not once per row pair.
pub fn add_point_compliance(
    constraints: &[PointConstraint],
    m: usize,
    s: &mut [f64],
    mut block: impl FnMut(&PointConstraint, &PointConstraint) -> Result<crate::Mat3, ModelError>,
) -> Result<(), ModelError> {
    let mut ra = 0;
    for (a, ca) in constraints.iter().enumerate() {
        let mut rb = 0;
        for cb in &constraints[..=a] {
            let c = block(ca, cb)?;
            for i in 0..ca.rows() {
                let ci = c.transpose() * ca.direction(i);
                for j in 0..cb.rows() {
                    let (row, col) = (ra + i, rb + j);
                    if col > row {
                        continue;
                    }
                    let v = ci.dot(&cb.direction(j));
                    s[row * m + col] += v;
                    if row != col {
                        s[col * m + row] += v;
                    }
                }
            }
            rb += cb.rows();
        }
        ra += ca.rows();
    }
    Ok(())
}

/// Solves S f = r for the constraint forces with preallocated storage: a
/// rank-revealing (diagonally pivoted) Cholesky factorisation of the symmetric
/// positive semi-definite S (faer's blocked `llt_pivoting`). Rows whose pivot falls
/// below 1e-12 of the largest diagonal are dependent on the others (or constrain a
/// fixed node) and get zero force: a generalised inverse that equals S⁻¹ whenever S is
/// nonsingular, at a third of the cost of an SVD pseudo-inverse (the paper's choice).
/// Unilateral rows make it a linear complementarity problem (many simultaneous
/// contacts, Baraff's formulation): each ends either enforced with a pushing force or
/// released with zero force and its point not past its target. An active set solves
/// it: it starts from the bilateral rows and the unilateral rows that start past their
/// target, releases rows that would pull, enforces released rows the others push past
/// their target, and re-solves until neither happens (S symmetric positive
/// semi-definite: a few passes in practice, bounded). The factorisation is kept, so a
/// step whose S and active set did not change ([`DenseConstraintSolver::resolve`])
/// costs two triangular solves.
pub struct DenseConstraintSolver {
    capacity: usize,
    /// Column-major n × n: the active part of S, then its pivoted factor L.
    work: Vec<f64>,
    /// Rows of S in the held factorisation, in order.
    rows: Vec<usize>,
    pivot: Vec<usize>,
    pivot_inv: Vec<usize>,
    active: Vec<bool>,
    /// Active set and row count of the held factorisation (`None`: none held).
    factored: Vec<bool>,
    factored_m: Option<usize>,
    rank: usize,
    y: Vec<f64>,
    stack: MemBuffer,
}

impl std::fmt::Debug for DenseConstraintSolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseConstraintSolver")
            .field("capacity", &self.capacity)
            .field("rank", &self.rank)
            .finish()
    }
}

impl Clone for DenseConstraintSolver {
    fn clone(&self) -> Self {
        Self::new(self.capacity)
    }
}

impl DenseConstraintSolver {
    /// A solver for up to `capacity` rows.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            work: vec![0.0; capacity * capacity],
            rows: vec![0; capacity],
            pivot: vec![0; capacity],
            pivot_inv: vec![0; capacity],
            active: vec![false; capacity],
            factored: vec![false; capacity],
            factored_m: None,
            rank: 0,
            y: vec![0.0; capacity],
            stack: MemBuffer::new(
                llt_pivoting::factor::cholesky_in_place_scratch::<usize, f64>(
                    capacity,
                    Par::Seq,
                    Default::default(),
                ),
            ),
        }
    }

    /// Largest number of rows this solver takes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Solves the `m`-row system `s` (row-major m × m) f = `r`, writing `f`. Rows with
    /// `unilateral[i]` must end with f ≤ 0 (force on the tissue along the row's
    /// outward normal: pushing in) and, when released (f = 0), with (S f)ᵢ ≤ rᵢ (the
    /// point not pushed past its target); the others are bilateral. Returns the number
    /// of rows left unenforced. Panics if `m` exceeds the capacity (a caller bug:
    /// backends size the solver from their constraint limit).
    pub fn solve(
        &mut self,
        m: usize,
        s: &[f64],
        r: &[f64],
        unilateral: &[bool],
        f: &mut [f64],
    ) -> usize {
        self.factored_m = None;
        self.resolve(m, s, r, unilateral, f)
    }

    /// As [`Self::solve`], for the same `m` and `s` as the previous call (only `r`
    /// changed): reuses the held factorisation when the active set matches.
    pub fn resolve(
        &mut self,
        m: usize,
        s: &[f64],
        r: &[f64],
        unilateral: &[bool],
        f: &mut [f64],
    ) -> usize {
        assert!(
            m <= self.capacity,
            "{m} constraint rows exceed the solver capacity {}",
            self.capacity
        );
        let scale = r[..m].iter().fold(0.0f64, |a, x| a.max(x.abs()));
        // A released row counts as pushed past its target only beyond round-off of the
        // largest right-hand side.
        let tol = 1e-10 * scale;
        for i in 0..m {
            self.active[i] = !unilateral[i] || r[i] < 0.0;
        }
        // Each pass flips the one row that is most wrong: an enforced row that pulls is
        // released, else a released row pushed furthest past its target is enforced
        // (flipping one row at a time, not all, keeps a nearly dependent pair from
        // alternating). The bound ends degenerate cycles with the last solution.
        for _ in 0..4 * m + 16 {
            if self.factored_m != Some(m) || self.factored[..m] != self.active[..m] {
                self.factor_active(m, s);
            }
            self.substitute(m, r, f);
            let mut worst: Option<(usize, f64)> = None;
            for i in 0..m {
                if self.active[i] && unilateral[i] && f[i] > 0.0 {
                    let pull = f[i] * s[i * m + i].max(f64::MIN_POSITIVE).sqrt();
                    if worst.is_none_or(|(_, w)| pull > w) {
                        worst = Some((i, pull));
                    }
                }
            }
            if worst.is_none() {
                for i in 0..m {
                    if !self.active[i] && unilateral[i] {
                        let pushed: f64 = (0..m).map(|j| s[i * m + j] * f[j]).sum::<f64>() - r[i];
                        if pushed > tol && worst.is_none_or(|(_, w)| pushed > w) {
                            worst = Some((i, pushed));
                        }
                    }
                }
            }
            match worst {
                Some((i, _)) => self.active[i] = !self.active[i],
                None => break,
            }
        }
        let mut unenforced = 0;
        for i in 0..m {
            if unilateral[i] && f[i] > 0.0 {
                f[i] = 0.0;
            }
            if !self.active[i] {
                unenforced += 1;
            }
        }
        unenforced
    }

    /// Factorises the active rows of `s` with diagonal pivoting, keeping the pivots
    /// above 1e-12 of the largest diagonal (negative rounding noise on a diagonal
    /// counts as zero; NaN anywhere gives rank 0: zero force).
    fn factor_active(&mut self, m: usize, s: &[f64]) {
        let mut n = 0;
        for i in 0..m {
            if self.active[i] {
                self.rows[n] = i;
                n += 1;
            }
        }
        self.factored[..m].copy_from_slice(&self.active[..m]);
        self.factored_m = Some(m);
        let a = &mut self.work[..n * n];
        for (jj, &j) in self.rows[..n].iter().enumerate() {
            for (ii, &i) in self.rows[..n].iter().enumerate() {
                a[jj * n + ii] = s[i * m + j];
            }
        }
        let mut max_diag = 0.0f64;
        for i in 0..n {
            let d = &mut a[i * n + i];
            *d = d.max(0.0);
            max_diag = max_diag.max(*d);
        }
        self.rank = 0;
        if !(max_diag > 0.0 && max_diag.is_finite()) {
            return;
        }
        let tol = 1e-12 * max_diag;
        let mat = MatMut::from_column_major_slice_mut(a, n, n);
        let Ok((info, _)) = llt_pivoting::factor::cholesky_in_place(
            mat,
            &mut self.pivot[..n],
            &mut self.pivot_inv[..n],
            Par::Seq,
            MemStack::new(&mut self.stack),
            Default::default(),
        ) else {
            return;
        };
        // Pivots come out non-increasing: cut at the first one below tolerance.
        self.rank = (0..info.rank)
            .find(|&j| (a[j * n + j] * a[j * n + j]).partial_cmp(&tol) != Some(Greater))
            .unwrap_or(info.rank);
    }

    /// f = the held factorisation's generalised inverse applied to `r`.
    fn substitute(&mut self, m: usize, r: &[f64], f: &mut [f64]) {
        f[..m].fill(0.0);
        let Some(fm) = self.factored_m else { return };
        debug_assert_eq!(fm, m);
        let n = self.factored[..m].iter().filter(|&&a| a).count();
        let rank = self.rank;
        let y = &mut self.y[..rank];
        for (i, yi) in y.iter_mut().enumerate() {
            *yi = r[self.rows[self.pivot[i]]];
        }
        let l = MatRef::from_column_major_slice(&self.work[..n * n], n, n);
        let l = l.submatrix(0, 0, rank, rank);
        let mut yv = MatMut::from_column_major_slice_mut(y, rank, 1);
        solve_lower_triangular_in_place(l, yv.rb_mut(), Par::Seq);
        solve_upper_triangular_in_place(l.transpose(), yv.rb_mut(), Par::Seq);
        for i in 0..rank {
            f[self.rows[self.pivot[i]]] = self.y[i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonsingular_system_is_solved_exactly() {
        let s = [4.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0];
        let f_true = [0.3, -1.2, 2.0];
        let r: Vec<f64> = (0..3)
            .map(|i| (0..3).map(|j| s[i * 3 + j] * f_true[j]).sum())
            .collect();
        let mut solver = DenseConstraintSolver::new(4);
        let mut f = [0.0; 3];
        assert_eq!(solver.solve(3, &s, &r, &[false; 3], &mut f), 0);
        for i in 0..3 {
            assert!((f[i] - f_true[i]).abs() < 1e-14);
        }
    }

    #[test]
    fn pivoting_matches_a_direct_solve() {
        // Diagonal grows down the rows, so every step pivots.
        let n = 6;
        let mut s = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                s[i * n + j] =
                    1.0 / (1.0 + (i as f64 - j as f64).abs()) + if i == j { i as f64 } else { 0.0 };
            }
        }
        let f_true: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        let r: Vec<f64> = (0..n)
            .map(|i| (0..n).map(|j| s[i * n + j] * f_true[j]).sum())
            .collect();
        let mut f = vec![0.0; n];
        DenseConstraintSolver::new(n).solve(n, &s, &r, &[false; 6], &mut f);
        for i in 0..n {
            assert!((f[i] - f_true[i]).abs() < 1e-13, "{f:?}");
        }
    }

    #[test]
    fn dependent_and_fixed_rows_get_zero_force() {
        // Row 1 duplicates row 0; row 2 constrains a fixed node (all zero).
        let s = [2.0, 2.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0];
        let r = [1.0, 1.0, 5.0];
        let mut f = [9.0; 3];
        DenseConstraintSolver::new(3).solve(3, &s, &r, &[false; 3], &mut f);
        assert!((f[0] + f[1] - 0.5).abs() < 1e-15 && f[2] == 0.0, "{f:?}");
    }

    #[test]
    fn pulling_unilateral_row_is_released() {
        let s = [1.0, 0.5, 0.5, 1.0];
        let r = [-1.0, 1.0];
        let mut f = [0.0; 2];
        let unenforced = DenseConstraintSolver::new(2).solve(2, &s, &r, &[true, true], &mut f);
        assert_eq!(unenforced, 1);
        assert_eq!(f, [-1.0, 0.0]);
    }

    #[test]
    fn released_rows_pushed_past_their_target_are_enforced() {
        // Row 1 starts clear of its target (r = 0.2 > 0), but pushing row 0 in lifts
        // row 1's point (negative coupling, the bulge beside a dent) 0.5 past it: the
        // complementarity solution enforces both.
        let s = [1.0, -0.5, -0.5, 1.0];
        let r = [-1.0, 0.2];
        let mut f = [0.0; 2];
        let unenforced = DenseConstraintSolver::new(2).solve(2, &s, &r, &[true, true], &mut f);
        assert_eq!(unenforced, 0);
        let det = 1.0 - 0.25;
        let expect = [(-1.0 + 0.5 * 0.2) / det, (0.2 - 0.5) / det];
        assert!((f[0] - expect[0]).abs() < 1e-14 && (f[1] - expect[1]).abs() < 1e-14);
    }

    #[test]
    fn complementarity_holds_on_a_random_contact_set() {
        // A Hilbert-like SPD system with mixed targets: every row ends either pushing
        // with its target met, or released, not pulling and not pushed past it.
        let n = 12;
        let mut s = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                s[i * n + j] = 1.0 / (1.0 + i as f64 + j as f64) + if i == j { 0.05 } else { 0.0 };
            }
        }
        let r: Vec<f64> = (0..n)
            .map(|i| ((i as f64) * 1.7).sin() * 0.3 - 0.1)
            .collect();
        let mut f = vec![0.0; n];
        DenseConstraintSolver::new(n).solve(n, &s, &r, &[true; 12], &mut f);
        for i in 0..n {
            let w: f64 = (0..n).map(|j| s[i * n + j] * f[j]).sum::<f64>() - r[i];
            assert!(f[i] <= 0.0, "row {i} pulls: {f:?}");
            assert!(w <= 1e-12, "row {i} pushed past its target by {w}");
            assert!((f[i] * w).abs() < 1e-12, "row {i}: f {} and gap {w}", f[i]);
        }
        assert!(f.iter().any(|&x| x < 0.0) && f.contains(&0.0));
    }
}
