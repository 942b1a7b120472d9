//! Nonlinear corrections computed on a thread beside the model thread.
//!
//! A correction is a residual over every element of the mesh and a solve with K's
//! factor: several model periods. In a replay or the
//! virtual indentation test each step corrects itself, so the result does not depend
//! on timing. A server stepping in real time instead hands the state to this thread
//! (`palpa-corrections`) and keeps stepping in the basis it has; the shape joins the
//! basis at the first step after it is ready ([`super::NonlinearTissue`]). One
//! correction is in flight at a time: the next is taken at the state of the step that
//! finds the thread idle, so the corrections follow the contact as fast as a core
//! computes them.
//!
//! The thread also takes the reduced tangent at each state it is handed, over a mirror
//! of the basis fed with the shapes appended since the last job, the correction's own
//! shape joined to it as the model thread will join it. That tangent is what the model
//! thread's Newton iterations and the haptic stiffness then use: taking it in step was
//! the larger part of a pressing step (docs/benchmarks.md). When the mirror's basis is
//! nearly full, the thread recycles it (`reduced/recycle.rs`) and hands the model thread
//! the new tables to take as they are, so a full basis costs the model thread no pass
//! over it.

use std::thread::JoinHandle;

use crossbeam::channel::{bounded, Receiver, Sender, TryRecvError};

use super::correction::Correction;
use super::cubature::CubatureKeeper;
use super::quadrature::{Active, Quadrature};
use super::reduced::{BasisUpdate, Estimate, Recycled, ReducedStatics, Tangent};
use super::statics::{LinearConstraint, NonlinearError};
use crate::Vec3;

/// A state to correct: its reduced coordinates q (the thread takes the displacement
/// U q over its mirror of the basis), the loads (N per node), the enforced constraints
/// with their multipliers, the active elements, the shapes the thread's mirror of the
/// basis lacks, the tolerance a correction joins the basis above (relative to |q|), and
/// whether to offer a cubature with it.
pub(super) struct CorrectionJob {
    pub(super) q: Vec<f64>,
    pub(super) cubature: bool,
    pub(super) tolerance: f64,
    pub(super) loads: Vec<Vec3>,
    pub(super) constraints: Vec<LinearConstraint>,
    pub(super) active: Active,
    pub(super) basis: BasisUpdate,
    /// Recycle the basis once it holds this many shapes, keeping the first `.1`
    /// (dynamic) and the newest `.2`.
    pub(super) recycle: (usize, usize, usize),
}

/// What the model thread receives for a job.
pub(super) struct CorrectionReply {
    /// The correction of the job's state, or why it could not be computed.
    pub(super) correction: Result<Correction, NonlinearError>,
    /// The job's constraints.
    pub(super) constraints: Vec<LinearConstraint>,
    /// The reduced tangent at the job's q over its basis with the correction joined
    /// (its coordinate 0) and the correction's active elements.
    pub(super) tangent: Tangent,
    /// How the correction joined the mirror, whose basis was the model's when the job
    /// was posted: the model joins it so too while its basis has not changed since.
    pub(super) join: Option<MirroredJoin>,
    /// A cubature of those active elements, offset to their full sum at that q (over
    /// the same basis as the tangent), or `None` while the full sum is cheap enough.
    pub(super) quadrature: Option<Quadrature>,
    /// The basis recycled after the correction joined it, if it was.
    pub(super) recycled: Option<RecycledBasis>,
}

/// A basis the thread recycled: the model thread takes it as it is.
pub(super) struct RecycledBasis {
    /// How the shapes combined.
    pub(super) recycled: Recycled,
    /// U and KU.
    pub(super) tables: (Vec<f64>, Vec<f64>),
    /// The recycled basis's restarts.
    pub(super) restarts: u64,
}

/// A correction as it joined the thread's mirror of the basis.
pub(super) struct MirroredJoin {
    /// The estimate [`ReducedStatics::join_correction`] returned.
    pub(super) estimate: Estimate,
    /// The shapes it added, U's column (m) and KU's (N) of each.
    pub(super) shapes: Vec<(Vec<f64>, Vec<f64>)>,
}

/// Corrects `job`'s state on the thread's `mirror` of the basis: the correction, how
/// it joined the mirror, the tangent (and a cubature) at the state, and the basis
/// recycled when it is nearly full.
fn correct_job(
    mirror: &mut ReducedStatics,
    corrector: &super::correction::Corrector,
    cubatures: &mut CubatureKeeper,
    displacement: &mut Vec<Vec3>,
    job: CorrectionJob,
) -> CorrectionReply {
    mirror.apply(&job.basis);
    mirror.set_active(&job.active);
    displacement.resize(mirror.nodes(), Vec3::zeros());
    mirror.displacement(&job.q, displacement);
    let size = job.q.iter().map(|x| x * x).sum::<f64>().sqrt();
    let correction = corrector.correct(
        displacement,
        &job.loads,
        &job.constraints,
        &job.active,
        size,
    );
    // A full basis recycles on the model thread, which then drops this tangent and
    // joins the correction itself.
    let before = mirror.shapes();
    let join = correction.as_ref().ok().and_then(|c| {
        let estimate = mirror.join_correction(c, job.tolerance).ok()?;
        let shapes = (before..mirror.shapes())
            .map(|j| mirror.shape_columns(j))
            .collect();
        Some(MirroredJoin { estimate, shapes })
    });
    let mut q = job.q;
    q.resize(mirror.shapes(), 0.0);
    let (threshold, keep, newest) = job.recycle;
    let recycled = (join.is_some() && mirror.shapes() >= threshold).then(|| {
        let recycled = mirror.recycle(&mut q, keep, newest);
        RecycledBasis {
            recycled,
            tables: mirror.tables(),
            restarts: mirror.restarts(),
        }
    });
    // A state out of the laws' range (an element the linear law left inverted before
    // it turned large-strain) has forces and a tangent of the laws' continuation, orders
    // of magnitude off: the tangent and the cubature are taken where the model thread
    // restarts from, the state scaled back into range.
    let at = mirror.scaled_into_range(&q);
    let (forces, mut tangent) = mirror.forces_and_tangent_at(&at);
    let quadrature = job
        .cubature
        .then(|| cubatures.quadrature(mirror, &at, &forces, &tangent.values))
        .flatten();
    tangent.restarts = match &recycled {
        Some(r) => r.restarts,
        None => job.basis.restarts(),
    };
    CorrectionReply {
        correction,
        constraints: job.constraints,
        tangent,
        join,
        quadrature,
        recycled,
    }
}

/// The model thread's end of the correction thread.
pub(super) struct CorrectionThread {
    jobs: Option<Sender<CorrectionJob>>,
    replies: Receiver<CorrectionReply>,
    in_flight: bool,
    handle: Option<JoinHandle<()>>,
}

/// Why the correction thread can take no more work.
#[derive(Debug, thiserror::Error)]
#[error("the nonlinear correction thread stopped{0}")]
pub(super) struct Stopped(String);

impl CorrectionThread {
    /// Starts `palpa-corrections` over `mirror` ([`ReducedStatics::mirror`]).
    pub(super) fn start(mut mirror: ReducedStatics) -> Result<Self, Stopped> {
        let corrector = mirror.corrector();
        let mut cubatures = CubatureKeeper::default();
        let mut displacement = Vec::new();
        let (jobs, incoming) = bounded::<CorrectionJob>(1);
        let (reply, replies) = bounded::<CorrectionReply>(1);
        let handle = std::thread::Builder::new()
            .name("palpa-corrections".into())
            .spawn(move || {
                for job in incoming {
                    let done = correct_job(
                        &mut mirror,
                        &corrector,
                        &mut cubatures,
                        &mut displacement,
                        job,
                    );
                    if reply.send(done).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| Stopped(format!(": could not start it: {e}")))?;
        Ok(Self {
            jobs: Some(jobs),
            replies,
            in_flight: false,
            handle: Some(handle),
        })
    }

    /// Whether no correction is being computed: [`CorrectionThread::post`] takes one.
    pub(super) fn idle(&self) -> bool {
        !self.in_flight
    }

    /// Hands `job` over; the thread must be idle.
    pub(super) fn post(&mut self, job: CorrectionJob) -> Result<(), Stopped> {
        debug_assert!(self.idle(), "one correction in flight at a time");
        let jobs = self.jobs.as_ref().ok_or_else(|| Stopped(String::new()))?;
        jobs.send(job).map_err(|_| self.stopped())?;
        self.in_flight = true;
        Ok(())
    }

    /// The finished correction, if one is ready; never blocks.
    pub(super) fn take(&mut self) -> Result<Option<CorrectionReply>, Stopped> {
        if !self.in_flight {
            return Ok(None);
        }
        match self.replies.try_recv() {
            Ok(reply) => {
                self.in_flight = false;
                Ok(Some(reply))
            }
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(self.stopped()),
        }
    }

    /// Waits for the correction in flight, if any, and drops it (its state is gone: the
    /// tissue was reset).
    pub(super) fn discard(&mut self) {
        if self.in_flight {
            self.in_flight = false;
            let _ = self.replies.recv();
        }
    }

    /// The error of a thread that hung up: it panicked (its message was printed).
    fn stopped(&mut self) -> Stopped {
        self.jobs = None;
        match self.handle.take().map(JoinHandle::join) {
            Some(Err(_)) => Stopped(" (it panicked)".into()),
            _ => Stopped(String::new()),
        }
    }
}

impl Drop for CorrectionThread {
    fn drop(&mut self) {
        self.jobs = None;
        // A correction in flight (a residual over the whole mesh and solves with K) can
        // take seconds on a busy machine: the thread is left to finish it and exit on
        // its failed reply, so a stopping server never waits for it. An idle thread
        // ends as its job channel closes.
        if let Some(handle) = self.handle.take() {
            if !self.in_flight {
                let _ = handle.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nonlinear::test_block::fixed_base_block;
    use crate::nonlinear::{LawKind, ReducedStatics};

    /// The thread's correction and tangent are the ones computed in place, to the last
    /// bit, and come back with the constraints they were posted with.
    #[test]
    fn a_correction_and_tangent_on_the_thread_are_the_ones_computed_in_place() {
        // 2 × 2 × 1 cm, 5 mm cells, the base fixed; its top centre pressed 2 mm.
        let (mesh, statics, top) =
            fixed_base_block([4, 4, 2], LawKind::VerondaWestmann { stiffening: 5.0 });
        let mut reduced = ReducedStatics::new(statics, 8).expect("reduced");
        let mut force = vec![0.0; 3 * mesh.nodes.len()];
        force[3 * top + 2] = -1.0;
        reduced.add_shape(&force).expect("shape");
        // q along the shape: the node 2 mm down.
        let mut unit = vec![Vec3::zeros(); mesh.nodes.len()];
        reduced.displacement(&[1.0], &mut unit);
        let q = vec![0.002 / -unit[top].z];
        let loads = vec![Vec3::zeros(); mesh.nodes.len()];
        let constraints = vec![LinearConstraint {
            coefficients: vec![(3 * top + 2, 1.0)],
            value: -0.002,
            multiplier: -q[0] * q[0].signum(),
        }];
        // Two corrections join (the first finds the strained elements, the second
        // their shape): the tangent is then over two shapes and those elements'
        // large-strain laws.
        for _ in 0..2 {
            let correction = reduced
                .correction(&q, &loads, &constraints)
                .expect("in place");
            reduced
                .join_correction(&correction, 0.0)
                .expect("joins the correction");
        }
        assert_eq!(reduced.shapes(), 2);
        let q = vec![q[0], 0.1 * q[0]];
        let here = reduced
            .correction(&q, &loads, &constraints)
            .expect("in place");
        let mut thread = CorrectionThread::start(reduced.mirror()).expect("starts");
        let basis = reduced.basis_update(None);
        let active = reduced.active().clone();
        assert!(thread.take().expect("runs").is_none(), "nothing posted yet");
        thread
            .post(CorrectionJob {
                q: q.clone(),
                cubature: true,
                tolerance: 0.0,
                loads,
                constraints: constraints.clone(),
                active,
                basis,
                recycle: (usize::MAX, 0, 0),
            })
            .expect("posts");
        assert!(!thread.idle());
        let reply = loop {
            if let Some(reply) = thread.take().expect("runs") {
                break reply;
            }
            std::thread::yield_now();
        };
        let there = reply.correction.expect("corrects");
        assert!(thread.idle());
        assert_eq!(reply.constraints, constraints);
        // The thread's tangent is over the basis with the correction joined, as here.
        reduced.join_correction(&here, 0.0).expect("joins");
        assert_eq!(reduced.shapes(), 3);
        let (mut own, mut tangent) = (vec![0.0; 3], vec![0.0; 9]);
        reduced.reduced_forces_and_tangent(&[q[0], q[1], 0.0], &mut own, &mut tangent);
        assert_eq!(reply.tangent.values, tangent);
        assert_eq!(reply.tangent.shapes, 3);
        let linear = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
        assert!(
            tangent
                .iter()
                .zip(linear)
                .any(|(t, l)| (t - l).abs() > 1e-3),
            "the strained elements stiffen the tangent: {tangent:?}"
        );
        assert_eq!(there.solved, here.solved);
        assert_eq!(there.residual, here.residual);
        assert_eq!(there.active, here.active);
        assert!(here.solved.iter().any(|x| *x != 0.0));
        assert!(
            !here.active.is_empty(),
            "a 2 mm press strains some elements"
        );
    }
}
