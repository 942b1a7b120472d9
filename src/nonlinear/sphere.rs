//! A rigid, frictionless sphere pressed on the full nonlinear FEM: the reference a
//! sphere probe's runtime force is checked against, and what makes the indentation
//! force mesh-independent enough for a convergence study.
//!
//! Every free surface node must end outside the sphere. The nodes that touch it form
//! an active set, each held on the sphere by one linear row along the sphere's normal
//! through the node, d = (x − c)/|x − c|: dᵀu = R − dᵀ(p − c), by a Lagrange multiplier
//! λ (N, the push on the tissue along d, so λ ≥ 0). The set and the normals are found
//! by the primal active-set loop: solve with the set as equalities; add every node
//! left inside the sphere; else drop the row pulling hardest; else move each row's
//! normal to its node's new position, until none moves.

use crate::Vec3;

use super::statics::{LinearConstraint, NewtonOptions, NonlinearError, NonlinearStatics};

/// Most active-set rounds (solves) one press may take.
pub const MAX_SPHERE_ROUNDS: usize = 200;

/// A node counts as inside the sphere when it is deeper than this fraction of the
/// radius (dimensionless): far below the mesh size, far above round-off.
const PENETRATION: f64 = 1e-7;

/// A row's normal counts as settled when it turns by less than this (rad).
const NORMAL_SETTLED: f64 = 1e-9;

/// A rigid sphere (m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigidSphere {
    /// Centre (m).
    pub centre: Vec3,
    /// Radius (m).
    pub radius: f64,
}

/// One node's contact row: the node and the sphere normal it is held along.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphereRow {
    /// Mesh node.
    pub node: usize,
    /// Unit sphere normal through the node, from the centre out (dimensionless).
    pub normal: Vec3,
    /// Push on the tissue along `normal` (N, ≥ 0 at a solution).
    pub multiplier: f64,
}

/// The contact state of a sphere press, carried from one depth to the next.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SphereContactState {
    /// The active rows.
    pub rows: Vec<SphereRow>,
    /// Active-set rounds (solves) taken by the last press.
    pub rounds: usize,
    /// Newton iterations over those rounds.
    pub iterations: usize,
}

impl SphereContactState {
    /// The total force the sphere puts on the tissue (N).
    pub fn force_on_tissue(&self) -> Vec3 {
        self.rows.iter().map(|r| r.normal * r.multiplier).sum()
    }
}

impl NonlinearStatics {
    /// Presses a rigid frictionless `sphere` on the tissue: solves for `u` (m, from its value) with every node of `candidates`
    /// (surface nodes; fully prescribed ones are skipped) outside the sphere, under
    /// `loads` (N per node). `state` holds the active rows of the last press (the warm
    /// start) and receives this one's.
    pub fn press_sphere(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        sphere: RigidSphere,
        candidates: &[usize],
        state: &mut SphereContactState,
        options: &NewtonOptions,
    ) -> Result<(), NonlinearError> {
        let RigidSphere { centre, radius } = sphere;
        if !(radius.is_finite() && radius > 0.0 && centre.iter().all(|x| x.is_finite())) {
            return Err(NonlinearError::Contact(format!(
                "a sphere of radius {radius} m at {centre:?} m: radius must be positive and \
                 finite, the centre finite"
            )));
        }
        let n = self.rest.len();
        if let Some(&v) = candidates.iter().find(|&&v| v >= n) {
            return Err(NonlinearError::Contact(format!(
                "sphere contact candidate node {v}: the mesh has {n} nodes"
            )));
        }
        let free = |v: usize| (0..3).any(|a| !self.prescribed[3 * v + a]);
        let candidates: Vec<usize> = candidates.iter().copied().filter(|&v| free(v)).collect();
        let mut rows = std::mem::take(&mut state.rows);
        rows.retain(|r| candidates.contains(&r.node));
        let (mut rounds, mut iterations) = (0, 0);
        let mut factor = None;
        loop {
            if rounds == MAX_SPHERE_ROUNDS {
                return Err(NonlinearError::Contact(format!(
                    "the sphere's contact set did not settle in {MAX_SPHERE_ROUNDS} rounds \
                     ({} rows active)",
                    rows.len()
                )));
            }
            rounds += 1;
            let mut trial = u.to_vec();
            let mut constraints: Vec<LinearConstraint> = rows
                .iter()
                .map(|r| LinearConstraint {
                    coefficients: (0..3).map(|a| (3 * r.node + a, r.normal[a])).collect(),
                    value: radius - r.normal.dot(&(self.rest[r.node] - centre)),
                    multiplier: r.multiplier,
                })
                .collect();
            let report =
                self.solve_reusing(&mut trial, loads, &mut constraints, options, &mut factor)?;
            iterations += report.steps.len();
            u.copy_from_slice(&trial);
            for (r, c) in rows.iter_mut().zip(&constraints) {
                r.multiplier = c.multiplier;
            }
            let position = |v: usize| self.rest[v] + u[v];
            // Every node left inside the sphere joins the set.
            let inside: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&v| {
                    (position(v) - centre).norm() < radius * (1.0 - PENETRATION)
                        && !rows.iter().any(|r| r.node == v)
                })
                .collect();
            if !inside.is_empty() {
                rows.extend(inside.into_iter().map(|v| SphereRow {
                    node: v,
                    normal: unit_or(position(v) - centre, -Vec3::z()),
                    multiplier: 0.0,
                }));
                continue;
            }
            // Else the row pulling hardest is let go.
            let pulling = rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.multiplier < 0.0)
                .min_by(|a, b| a.1.multiplier.total_cmp(&b.1.multiplier))
                .map(|(i, _)| i);
            if let Some(i) = pulling {
                rows.swap_remove(i);
                continue;
            }
            // Else each row's normal follows its node over the sphere.
            let mut turned = 0.0f64;
            for r in &mut rows {
                let normal = unit_or(position(r.node) - centre, r.normal);
                turned = turned.max((normal - r.normal).norm());
                r.normal = normal;
            }
            if turned <= NORMAL_SETTLED {
                *state = SphereContactState {
                    rows,
                    rounds,
                    iterations,
                };
                return Ok(());
            }
        }
    }
}

/// `v` normalised, or `fallback` where it has no length.
fn unit_or(v: Vec3, fallback: Vec3) -> Vec3 {
    let len = v.norm();
    if len > 0.0 {
        v / len
    } else {
        fallback
    }
}
