//! The rows of a step's constraints and their dense system S f = r, as the modal and
//! condensed backends solve it: each row's direction, owning constraint and unilateral
//! flag; S, r and f; and the solver. Sized once for the most rows a step may have, so a
//! step allocates nothing. Each backend fills S and r its own way (modal rows, K⁻¹
//! blocks).

use crate::Vec3;

use super::constraint::{DenseConstraintSolver, PointConstraint};

/// Scratch and solver for up to `capacity` constraint rows.
#[derive(Clone, Debug)]
pub struct ConstraintRows {
    direction: Vec<Vec3>,
    constraint: Vec<usize>,
    unilateral: Vec<bool>,
    s: Vec<f64>,
    rhs: Vec<f64>,
    f: Vec<f64>,
    solver: DenseConstraintSolver,
}

impl ConstraintRows {
    /// Scratch for at most `capacity` rows.
    pub fn new(capacity: usize) -> Self {
        Self {
            direction: vec![Vec3::zeros(); capacity],
            constraint: vec![0; capacity],
            unilateral: vec![false; capacity],
            s: vec![0.0; capacity * capacity],
            rhs: vec![0.0; capacity],
            f: vec![0.0; capacity],
            solver: DenseConstraintSolver::new(capacity),
        }
    }

    /// The most rows a step may have.
    pub fn capacity(&self) -> usize {
        self.solver.capacity()
    }

    /// Lays out the rows of `constraints` (their directions in order; the caller has
    /// checked they fit) and returns how many there are.
    pub fn lay_out(&mut self, constraints: &[PointConstraint]) -> usize {
        let mut row = 0;
        for (ci, c) in constraints.iter().enumerate() {
            for r in 0..c.rows() {
                self.direction[row] = c.direction(r);
                self.constraint[row] = ci;
                self.unilateral[row] = c.unilateral;
                row += 1;
            }
        }
        row
    }

    /// Direction of row `row` (unit).
    pub fn direction(&self, row: usize) -> Vec3 {
        self.direction[row]
    }

    /// S of `m` rows (m × m, symmetric, so row- and column-major alike) to fill.
    pub fn s_mut(&mut self, m: usize) -> &mut [f64] {
        &mut self.s[..m * m]
    }

    /// r of `m` rows to fill.
    pub fn rhs_mut(&mut self, m: usize) -> &mut [f64] {
        &mut self.rhs[..m]
    }

    /// Solves S f = r for `m` rows (unilateral rows may only push); `refactor` false
    /// reuses the factorisation of the last solve (S unchanged, r new).
    pub fn solve(&mut self, m: usize, refactor: bool) {
        let (s, rhs, unilateral, f) = (
            &self.s[..m * m],
            &self.rhs[..m],
            &self.unilateral[..m],
            &mut self.f[..m],
        );
        if refactor {
            self.solver.solve(m, s, rhs, unilateral, f);
        } else {
            self.solver.resolve(m, s, rhs, unilateral, f);
        }
    }

    /// The force of row `row` after [`Self::solve`] (N along its direction).
    pub fn force(&self, row: usize) -> f64 {
        self.f[row]
    }

    /// Writes the force each of the first `n` constraints applies (N, the sum over its
    /// rows) into `forces[..n]`, from the last solve of `m` rows.
    pub fn constraint_forces(&self, m: usize, n: usize, forces: &mut [Vec3]) {
        forces[..n].fill(Vec3::zeros());
        for i in 0..m {
            let fi = self.f[i];
            if fi != 0.0 {
                forces[self.constraint[i]] += self.direction[i] * fi;
            }
        }
    }
}
