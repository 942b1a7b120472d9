//! The reduced tangent UᵀK_T U a solve starts from and leaves behind, and when a solve
//! keeps it (chord iterations) or takes it afresh.
//!
//! With 64 shapes a tangent costs about 20 times the forces alone, so a solve keeps one
//! while its residual shrinks fast enough ([`CHORD_CONTRACTION`]), and the next solve
//! (the next model step) starts from the last one's, the shapes appended since bordered
//! by their linear stiffness (UᵀKU = I). A tangent from the correction thread is a few
//! steps old: a *patient* solve keeps one while it converges at all.

use super::forces::Work;
use super::model::ReducedStatics;

/// How much a Newton iteration on a kept tangent must shrink the residual for the
/// tangent to be kept for the next; otherwise it is taken afresh at the iterate, as
/// after a line search that had to shorten the step.
const CHORD_CONTRACTION: f64 = 0.1;

/// Most iterations in a row on one tangent. Chord iterations converge linearly; where
/// the relative tolerance has no floor (released to rest: the forces themselves go to
/// zero) only Newton's quadratic convergence reaches the solution.
const CHORD_ITERATIONS: usize = 4;

/// How much an iteration on a kept tangent must shrink the residual for a patient
/// solve ([`Tangent::patient`]) to keep it.
const PATIENT_CONTRACTION: f64 = 0.5;

/// Most iterations in a row on one tangent in a patient solve.
const PATIENT_ITERATIONS: usize = 12;

/// A reduced tangent (module docs).
#[derive(Clone, Debug, Default)]
pub(in crate::nonlinear) struct Tangent {
    /// UᵀK_T U (N/m, row-major r × r).
    pub(in crate::nonlinear) values: Vec<f64>,
    /// r: the basis's first r shapes it was taken over.
    pub(in crate::nonlinear) shapes: usize,
    /// The basis's restarts when it was taken.
    pub(in crate::nonlinear) restarts: u64,
    /// The [`ReducedStatics::revision`] it was taken in (`None`: none taken yet).
    pub(in crate::nonlinear) revision: Option<u64>,
    /// Whether it was taken at the state the last solve ended on.
    pub(in crate::nonlinear) at_solution: bool,
    /// Whether tangents arrive from the correction thread: a solve then keeps one
    /// while it converges at all ([`PATIENT_CONTRACTION`], [`PATIENT_ITERATIONS`])
    /// rather than take one in step.
    pub(in crate::nonlinear) patient: bool,
}

impl Tangent {
    /// Keeps it over the basis's first `r` shapes only (r ≤ its own).
    pub(in crate::nonlinear) fn truncate(&mut self, r: usize) {
        let rt = self.shapes;
        if r >= rt {
            return;
        }
        let mut values = Vec::with_capacity(r * r);
        for i in 0..r {
            values.extend_from_slice(&self.values[i * rt..][..r]);
        }
        self.values = values;
        self.shapes = r;
    }

    /// Extends it to the basis's first `r` shapes (r ≥ its own), the shapes it lacks
    /// bordered by their linear stiffness (UᵀKU = I).
    pub(in crate::nonlinear) fn border(&mut self, r: usize) {
        let rt = self.shapes;
        if r <= rt {
            return;
        }
        let mut values = vec![0.0; r * r];
        for i in 0..r {
            values[i * r + i] = 1.0;
        }
        for i in 0..rt {
            values[i * r..][..rt].copy_from_slice(&self.values[i * rt..][..rt]);
        }
        self.values = values;
        self.shapes = r;
    }

    /// The tangent over a new basis whose shapes are old ones combined by `transform`
    /// (row-major r_old × r_new, orthonormal columns): Tᵀ J T over the shapes it covers.
    pub(in crate::nonlinear) fn transformed(&self, transform: &[f64], r_new: usize) -> Vec<f64> {
        let r0 = self.shapes;
        let t = |i: usize, j: usize| transform[i * r_new + j];
        let mut jt = vec![0.0; r0 * r_new];
        for i in 0..r0 {
            for j in 0..r_new {
                jt[i * r_new + j] = (0..r0).map(|k| self.values[i * r0 + k] * t(k, j)).sum();
            }
        }
        let mut out = vec![0.0; r_new * r_new];
        for a in 0..r_new {
            for b in 0..r_new {
                out[a * r_new + b] = (0..r0).map(|i| t(i, a) * jt[i * r_new + b]).sum();
            }
        }
        out
    }
}

impl ReducedStatics {
    /// Takes `tangent` afresh at q (the state its solve ended on) unless it is that
    /// state's in this basis already.
    pub(in crate::nonlinear) fn refresh_tangent(&self, q: &[f64], tangent: &mut Tangent) {
        if tangent.at_solution && tangent.revision == Some(self.revision) {
            return;
        }
        let patient = tangent.patient;
        *tangent = Tangent {
            at_solution: true,
            patient,
            ..self.tangent_at(q)
        };
    }

    /// The reduced tangent UᵀK_T U at q, taken afresh (not marked as at a solution).
    pub(in crate::nonlinear) fn tangent_at(&self, q: &[f64]) -> Tangent {
        self.forces_and_tangent_at(q).1
    }

    /// The reduced internal forces Uᵀf_int(Uq) (N) and tangent UᵀK_T U at q, taken
    /// afresh (not marked as at a solution).
    pub(in crate::nonlinear) fn forces_and_tangent_at(&self, q: &[f64]) -> (Vec<f64>, Tangent) {
        let r = self.shapes;
        let mut work = Work::new(r, self.nodes());
        self.gradient_and_tangent(q, &mut work);
        let tangent = Tangent {
            values: work.tangent,
            shapes: r,
            restarts: self.restarts,
            revision: Some(self.revision),
            at_solution: false,
            patient: false,
        };
        (work.gradient, tangent)
    }
}

/// When one solve keeps its tangent or takes it afresh (module docs).
pub(super) struct SolveTangent<'a> {
    /// The caller's tangent: the start, and where the last one taken is left.
    kept: Option<&'a mut Tangent>,
    patient: bool,
    /// Whether the work's tangent may be kept at the next iteration.
    keepable: bool,
    contraction: f64,
    most: usize,
    chord_iterations: usize,
    last_norm: f64,
    shortened: bool,
    /// Whether the work's tangent was taken at this iteration's q.
    at_q: bool,
    /// The start tangent, bordered to the basis, until the first iteration takes it.
    start: Option<Vec<f64>>,
}

impl<'a> SolveTangent<'a> {
    pub(super) fn new(kept: Option<&'a mut Tangent>, model: &ReducedStatics, r: usize) -> Self {
        let patient = kept.as_deref().is_some_and(|t| t.patient);
        let start = kept.as_deref().and_then(|t| {
            let usable = t.revision.is_some() && t.restarts == model.restarts && t.shapes <= r;
            usable.then(|| {
                let mut s = t.clone();
                s.border(r);
                s.values
            })
        });
        let (contraction, most) = if patient {
            (PATIENT_CONTRACTION, PATIENT_ITERATIONS)
        } else {
            (CHORD_CONTRACTION, CHORD_ITERATIONS)
        };
        Self {
            keepable: start.is_some(),
            kept,
            patient,
            contraction,
            most,
            chord_iterations: 0,
            last_norm: f64::INFINITY,
            shortened: false,
            at_q: false,
            start,
        }
    }

    /// The forces at q into `work.gradient` (from the trial the line search took when
    /// `at_trial`), and the tangent into `work.tangent` unless the last one is kept;
    /// returns whether a tangent was taken.
    pub(super) fn forces_at(
        &mut self,
        model: &ReducedStatics,
        q: &[f64],
        work: &mut Work,
        at_trial: bool,
    ) -> bool {
        let keep =
            self.keepable && (self.patient || !self.shortened) && self.chord_iterations < self.most;
        let first = self.start.take();
        if keep && at_trial {
            std::mem::swap(&mut work.gradient, &mut work.trial_gradient);
        } else if keep {
            model.gradient_only(q, work);
        } else {
            model.gradient_and_tangent(q, work);
        }
        if let Some(values) = first.filter(|_| keep) {
            work.tangent = values;
        }
        self.at_q = !keep;
        self.keepable = self.kept.is_some();
        !keep
    }

    /// After an iteration's residual `norm`: whether the kept tangent stalls (converges
    /// too slowly) and is to be taken afresh at q.
    pub(super) fn stalls(&mut self, norm: f64) -> bool {
        self.chord_iterations += 1;
        let stall = if self.at_q {
            self.chord_iterations = 0;
            false
        } else if norm > self.contraction * self.last_norm {
            self.chord_iterations = 0;
            true
        } else {
            false
        };
        self.last_norm = norm;
        stall
    }

    /// Whether the line search had to shorten the last step.
    pub(super) fn shortened(&mut self, shortened: bool) {
        self.shortened = shortened;
    }

    /// Leaves the work's tangent (`values`, over r shapes) with the caller.
    pub(super) fn finish(&mut self, model: &ReducedStatics, values: &[f64], r: usize) {
        if let Some(t) = self.kept.as_deref_mut() {
            *t = Tangent {
                values: values.to_vec(),
                shapes: r,
                restarts: model.restarts,
                revision: Some(model.revision),
                at_solution: self.at_q,
                patient: t.patient,
            };
        }
    }
}
