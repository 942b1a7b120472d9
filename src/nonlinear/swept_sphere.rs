//! A rigid, frictionless sphere pressed on the full FEM with the runtime's contact
//! formulation ([`SphereContact`]: one row on the Hertz pressure profile sampled in the
//! sphere's frame), so that `palpa indent --full` and the runtime models solve the same
//! contact problem and differ only in how they solve the tissue.
//!
//! Each round linearises the rows about the current displacement and solves them as
//! an active set: equalities for the active rows (Lagrange multipliers), a violated
//! inactive row joins, else the row pulling hardest leaves; then the rows are
//! linearised again, until the displacement no longer moves (a Newton iteration on the
//! contact, as each runtime step for a held probe is).

use crate::contact::{SphereContact, SurfaceBvh};
use crate::tissue::PointConstraint;
use crate::Vec3;

use super::statics::{LinearConstraint, NewtonOptions, NonlinearError, NonlinearStatics};

/// Most solves one press may take (linearisations times active-set changes).
pub const MAX_SWEPT_ROUNDS: usize = 400;

/// The contact of a swept-sphere press, carried from one depth to the next.
#[derive(Clone, Debug, Default)]
pub struct SweptPressState {
    /// Active rows (by their order in the sphere's rows) and their multipliers (N, ≥ 0:
    /// the push on the tissue).
    pub active: Vec<(usize, f64)>,
    /// Force on the tissue (N).
    pub force: Vec3,
    /// Solves taken by the last press.
    pub rounds: usize,
    /// Newton iterations over those solves.
    pub iterations: usize,
}

/// Where and how the sphere presses.
pub struct SweptSphere<'a> {
    /// The rows' builder over the model's surface.
    pub contact: &'a mut SphereContact,
    /// The model's surface.
    pub bvh: &'a SurfaceBvh,
    /// Centre of the sphere (m).
    pub centre: Vec3,
    /// Unit outward normal the sphere entered along (the rest surface's).
    pub entry: Vec3,
    /// The rest-surface point under the centre: a triangle's nodes and barycentric
    /// weights ([`SphereContact::push_rows`]).
    pub pole: ([usize; 3], [f64; 3]),
}

/// A linearised row: its support (node, weight), push direction into the tissue and
/// the largest value of dᵀu at its support (m).
type Row = (Vec<(usize, f64)>, Vec3, f64);

impl NonlinearStatics {
    /// Presses the sphere of `press` on the tissue: solves for `u` (m, from its value)
    /// under `loads` (N per node) with every row of the sphere not pushed past its
    /// target, each pushing row on it. `state` is the warm start and receives this
    /// press's active set.
    pub fn press_swept_sphere(
        &self,
        u: &mut [Vec3],
        loads: &[Vec3],
        press: SweptSphere,
        state: &mut SweptPressState,
        options: &NewtonOptions,
    ) -> Result<(), NonlinearError> {
        let n = self.rest.len();
        if u.len() != n {
            return Err(NonlinearError::NodeCount {
                what: "displacement",
                given: u.len(),
                nodes: n,
            });
        }
        let scale = press.contact.radius().max(f64::MIN_POSITIVE);
        let mut active = std::mem::take(&mut state.active);
        let (mut rounds, mut iterations) = (0, 0);
        let mut factor = None;
        let mut rows: Vec<PointConstraint> = Vec::new();
        loop {
            // Linearise the rows about u.
            let positions: Vec<Vec3> = self.rest.iter().zip(u.iter()).map(|(x, d)| x + d).collect();
            rows.clear();
            press.contact.push_rows(
                press.bvh,
                &self.rest,
                &positions,
                press.pole,
                press.centre,
                press.entry,
                usize::MAX,
                &mut rows,
            );
            let start = u.to_vec();
            // The rows' free support, push direction (into the tissue) and value of dᵀu.
            let linear: Vec<Row> = rows
                .iter()
                .map(|r| {
                    let support: Vec<(usize, f64)> = r
                        .support
                        .iter()
                        .filter(|&(v, _)| (0..3).any(|a| !self.prescribed[3 * v + a]))
                        .collect();
                    let d = -r.direction(0);
                    let value = d.dot(&(r.target - r.support.rest_point(&self.rest)));
                    (support, d, value)
                })
                .collect();
            let pushed = |(support, d, _): &Row, u: &[Vec3]| {
                support.iter().map(|&(v, w)| d.dot(&u[v]) * w).sum::<f64>()
            };
            active.retain(|&(k, _)| k < linear.len() && !linear[k].0.is_empty());
            // The active set on this linearisation.
            loop {
                if rounds == MAX_SWEPT_ROUNDS {
                    return Err(NonlinearError::Contact(format!(
                        "the sphere's contact did not settle in {MAX_SWEPT_ROUNDS} solves ({} \
                         rows active)",
                        active.len()
                    )));
                }
                rounds += 1;
                let mut constraints: Vec<LinearConstraint> = active
                    .iter()
                    .map(|&(k, m)| {
                        let (support, d, value) = &linear[k];
                        LinearConstraint {
                            coefficients: support
                                .iter()
                                .flat_map(|&(v, w)| (0..3).map(move |a| (3 * v + a, d[a] * w)))
                                .collect(),
                            value: *value,
                            multiplier: m,
                        }
                    })
                    .collect();
                let mut trial = start.clone();
                let report =
                    self.solve_reusing(&mut trial, loads, &mut constraints, options, &mut factor)?;
                iterations += report.steps.len();
                u.copy_from_slice(&trial);
                for (a, c) in active.iter_mut().zip(&constraints) {
                    a.1 = c.multiplier;
                }
                // The inactive row pushed furthest past its target joins ...
                let violated = linear
                    .iter()
                    .enumerate()
                    .filter(|(k, l)| !l.0.is_empty() && !active.iter().any(|a| a.0 == *k))
                    .map(|(k, l)| (k, l.2 - pushed(l, u)))
                    .filter(|&(_, past)| past > 1e-9 * scale)
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                if let Some((k, _)) = violated {
                    active.push((k, 0.0));
                    continue;
                }
                // ... else the row pulling hardest leaves.
                let pulling = active
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| a.1 < 0.0)
                    .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
                    .map(|(i, _)| i);
                match pulling {
                    Some(i) => {
                        active.swap_remove(i);
                    }
                    None => break,
                }
            }
            let moved = u
                .iter()
                .zip(&start)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max);
            if moved <= 1e-10 * scale {
                let force = active.iter().map(|&(k, m)| linear[k].1 * m).sum();
                *state = SweptPressState {
                    active,
                    force,
                    rounds,
                    iterations,
                };
                return Ok(());
            }
        }
    }
}
