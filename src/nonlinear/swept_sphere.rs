//! A rigid, frictionless sphere pressed on the full FEM with the runtime's contact
//! formulation ([`SphereContact`]: one row per node at its own gap under the sphere's
//! height field, the pole face's corners lowered as the pole needs), so that `palpa
//! indent --full` and the runtime models solve the same contact problem and differ only
//! in how they solve the tissue.
//!
//! Each round linearises the rows about the current displacement and solves them as
//! an active set: equalities for the active rows (Lagrange multipliers), a violated
//! inactive row joins, else the row pulling hardest leaves; then the rows are
//! linearised again, until the displacement no longer moves (a Newton iteration on the
//! contact, as each runtime step for a held probe is).

use crate::contact::SphereContact;
use crate::tissue::PointConstraint;
use crate::Vec3;

use super::statics::{LinearConstraint, NewtonOptions, NonlinearError, NonlinearStatics};

/// Most solves one press may take (linearisations times active-set changes).
pub const MAX_SWEPT_ROUNDS: usize = 400;

/// The contact of a swept-sphere press, carried from one depth to the next.
#[derive(Clone, Debug, Default)]
pub struct SweptPressState {
    /// Active nodes and their multipliers (N, ≥ 0: the push on the tissue).
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
    /// Surface nodes the sphere may touch.
    pub nodes: &'a [usize],
    /// Centre of the sphere (m).
    pub centre: Vec3,
    /// Unit outward normal the sphere entered along (the rest surface's).
    pub entry: Vec3,
    /// The rest-surface point under the centre: a triangle's nodes and barycentric
    /// weights ([`SphereContact::push_rows`]).
    pub pole: Option<([usize; 3], [f64; 3])>,
}

impl NonlinearStatics {
    /// Presses the sphere of `press` on the tissue: solves for `u` (m, from its value)
    /// under `loads` (N per node) with every row of the sphere's candidates not pushed
    /// past its target, each pushing row on it. `state` is the warm start and
    /// receives this press's active set.
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
        let mut held = press.contact.held_rows(state.active.len());
        let mut active = std::mem::take(&mut state.active);
        let (mut rounds, mut iterations) = (0, 0);
        let mut factor = None;
        let mut candidates = Vec::new();
        let mut rows: Vec<PointConstraint> = Vec::new();
        loop {
            // Linearise the candidates' rows about u.
            let positions: Vec<Vec3> = self.rest.iter().zip(u.iter()).map(|(x, d)| x + d).collect();
            held.clear();
            for &(v, _) in &active {
                held.push(v);
            }
            candidates.clear();
            press.contact.candidates(
                &self.rest,
                press.nodes,
                press.centre,
                press.entry,
                &held,
                &mut candidates,
            );
            candidates.retain(|&v| (0..3).any(|a| !self.prescribed[3 * v + a]));
            rows.clear();
            press.contact.begin_step(candidates.len());
            press.contact.push_rows(
                &positions,
                &candidates,
                press.pole,
                press.centre,
                press.entry,
                usize::MAX,
                &mut rows,
            );
            let start = u.to_vec();
            // The rows' node, push direction (into the tissue) and value of nᵀu.
            let linear: Vec<(usize, Vec3, f64)> = rows
                .iter()
                .filter_map(|r| {
                    let v = *r.support.nodes().first()?;
                    let d = -r.direction(0);
                    Some((v, d, d.dot(&(r.target - self.rest[v]))))
                })
                .collect();
            active.retain(|(v, _)| linear.iter().any(|l| l.0 == *v));
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
                    .map(|&(v, m)| {
                        let (_, d, value) = *linear.iter().find(|l| l.0 == v).expect("a row");
                        LinearConstraint {
                            coefficients: (0..3).map(|a| (3 * v + a, d[a])).collect(),
                            value,
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
                    .filter(|l| !active.iter().any(|a| a.0 == l.0))
                    .map(|&(v, d, value)| (v, value - d.dot(&u[v])))
                    .filter(|&(_, past)| past > 1e-9 * scale)
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                if let Some((v, _)) = violated {
                    active.push((v, 0.0));
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
                let force = active
                    .iter()
                    .map(|&(v, m)| linear.iter().find(|l| l.0 == v).expect("a row").1 * m)
                    .sum();
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
