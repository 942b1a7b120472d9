//! Completing K⁻¹ columns on a worker thread beside the model thread.
//!
//! The back solve of a newly contacted node's columns is a pass over all of L. In-step
//! completion spreads it over model steps within a work budget, deterministically in
//! simulated time (what replays and the fidelity harness need). A server running in real
//! time can instead hand it to a worker: the model thread keeps the forward solves the
//! force needs and sends them along, and installs full columns as the worker finishes
//! them, so the visual stream gets them as fast as a core can compute them.
//!
//! While no cached node waits, the worker completes nodes the contact may load soon
//! ([`super::ComplianceColumns::anticipate`]), forward solve included, so a probe
//! sliding onto new nodes finds their columns ready.
//!
//! Buffers travel back and forth for reuse: once they have grown, handing a batch over
//! allocates nothing on the model thread.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam::channel::{bounded, Receiver, Sender, TryRecvError, TrySendError};

use super::{fill, ColumnError, DistanceBands, Entry, BATCH};
use crate::fem::{DofMap, Factor, PathColumns};

/// A batch of nodes to complete: `nodes[..count]`, with their forward solves in
/// `forward[..count]` unless `solve_forward`.
struct Request {
    nodes: [usize; BATCH],
    forward: Vec<PathColumns>,
    count: usize,
    solve_forward: bool,
}

/// What the worker sends back.
enum Reply {
    /// One node's full columns.
    Done(Entry),
    /// A request's forward-solve buffers, after its batch.
    Buffers(Vec<PathColumns>),
}

/// The model thread's end of the worker.
pub(super) struct Background {
    requests: Option<Sender<Request>>,
    replies: Receiver<Reply>,
    spare: Sender<Vec<f64>>,
    /// The forward-solve buffers of the next request (`None` while a batch is out).
    forward: Option<Vec<PathColumns>>,
    /// Nodes of the batch in flight not yet received.
    in_flight: Vec<usize>,
    handle: Option<JoinHandle<()>>,
}

impl Background {
    /// Starts the worker thread `palpa-columns` over `factor`, `dofs` and `bands`.
    pub(super) fn start(
        factor: Arc<Factor>,
        dofs: DofMap,
        bands: DistanceBands,
    ) -> Result<Self, ColumnError> {
        let (requests, incoming) = bounded::<Request>(1);
        let (reply, replies) = bounded::<Reply>(BATCH + 1);
        let (spare, spares) = bounded::<Vec<f64>>(2 * BATCH);
        let handle = std::thread::Builder::new()
            .name("palpa-columns".into())
            .spawn(move || {
                raise_share();
                work(&factor, &dofs, &bands, &incoming, &reply, &spares)
            })
            .map_err(|e| ColumnError::Worker {
                message: format!("could not start the column thread: {e}"),
            })?;
        Ok(Self {
            requests: Some(requests),
            replies,
            spare,
            forward: Some(vec![PathColumns::default(); BATCH]),
            in_flight: Vec::with_capacity(BATCH),
            handle: Some(handle),
        })
    }

    /// Whether the worker can take a batch: the last one is done, its buffers back.
    pub(super) fn idle(&self) -> bool {
        self.in_flight.is_empty() && self.forward.is_some()
    }

    /// Hands the idle worker `batch` (its first [`BATCH`] nodes, each with its forward
    /// solve, or `None` for the worker to solve: all or none); nothing if it is busy
    /// or `batch` is empty.
    pub(super) fn send<'a>(
        &mut self,
        batch: impl Iterator<Item = (usize, Option<&'a PathColumns>)>,
    ) -> Result<(), ColumnError> {
        if !self.in_flight.is_empty() {
            return Ok(());
        }
        let Some(mut forward) = self.forward.take() else {
            return Ok(());
        };
        let mut nodes = [0; BATCH];
        let (mut count, mut solve_forward) = (0, false);
        for (node, y) in batch.take(BATCH) {
            nodes[count] = node;
            match y {
                Some(y) => forward[count].copy_from(y),
                None => solve_forward = true,
            }
            count += 1;
        }
        if count == 0 {
            self.forward = Some(forward);
            return Ok(());
        }
        let request = Request {
            nodes,
            forward,
            count,
            solve_forward,
        };
        let sent = match &self.requests {
            Some(tx) => tx.try_send(request),
            None => Err(TrySendError::Disconnected(request)),
        };
        match sent {
            Ok(()) => {
                self.in_flight.extend_from_slice(&nodes[..count]);
                Ok(())
            }
            Err(TrySendError::Full(request)) => {
                self.forward = Some(request.forward);
                Ok(())
            }
            Err(TrySendError::Disconnected(_)) => Err(self.failed()),
        }
    }

    /// The next completed node's columns, if one is ready.
    pub(super) fn receive(&mut self) -> Result<Option<Entry>, ColumnError> {
        loop {
            match self.replies.try_recv() {
                Ok(Reply::Done(entry)) => {
                    self.in_flight.retain(|&v| v != entry.node);
                    return Ok(Some(entry));
                }
                Ok(Reply::Buffers(forward)) => self.forward = Some(forward),
                Err(TryRecvError::Empty) => return Ok(None),
                Err(TryRecvError::Disconnected) => return Err(self.failed()),
            }
        }
    }

    /// Gives a column buffer back for the worker to reuse (dropped if it has enough).
    pub(super) fn recycle(&self, buffer: Vec<f64>) {
        if buffer.capacity() > 0 {
            let _ = self.spare.try_send(buffer);
        }
    }

    /// The error of a worker that stopped: its panic message, if it panicked.
    fn failed(&mut self) -> ColumnError {
        self.requests = None;
        let message = match self.handle.take().map(JoinHandle::join) {
            Some(Err(panic)) => panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "it panicked".into()),
            _ => "it stopped".into(),
        };
        ColumnError::Worker {
            message: format!("the column thread failed: {message}"),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Closing the request channel ends the worker's loop after its current batch.
        self.requests = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// The worker's loop: back solve each requested batch, send each node's full columns
/// and then the batch's buffers, until the model thread hangs up.
fn work(
    factor: &Factor,
    dofs: &DofMap,
    bands: &DistanceBands,
    incoming: &Receiver<Request>,
    reply: &Sender<Reply>,
    spares: &Receiver<Vec<f64>>,
) {
    // The worker keeps the caller's priority: lowered to nice 19 it starved on a busy
    // machine and frames fell back to corrections (docs/benchmarks.md, "column worker").
    let mut ws = factor.path_workspace(3 * BATCH);
    let mut forward_ws = factor.path_workspace(3 * BATCH);
    let mut node_dofs = Vec::with_capacity(3 * BATCH);
    while let Ok(mut request) = incoming.recv() {
        let count = request.count;
        if request.solve_forward {
            node_dofs.clear();
            for &v in &request.nodes[..count] {
                node_dofs.extend_from_slice(&dofs.node_dofs(v).expect("free nodes only"));
            }
            let out = &mut request.forward[..count];
            factor.forward_unit(&node_dofs, 3, &mut forward_ws, out);
        }
        factor.begin_back_solve(request.forward[..count].iter(), &mut ws);
        factor.continue_back_solve(&mut ws, usize::MAX);
        for (c, &node) in request.nodes[..count].iter().enumerate() {
            let mut entry = Entry {
                node,
                values: spares.try_recv().unwrap_or_default(),
                ..Entry::default()
            };
            fill(dofs, bands, &mut entry, |row, b| {
                factor.back_solution(&ws, row, 3 * c + b)
            });
            if reply.send(Reply::Done(entry)).is_err() {
                return;
            }
        }
        if reply.send(Reply::Buffers(request.forward)).is_err() {
            return;
        }
    }
}

/// Nice value of the worker thread where the process may lower it (root or
/// CAP_SYS_NICE): about nine times a normal thread's CPU share. Beside one busy loop per
/// core the worker at nice 0 got a fraction of a core, a sliding contact's nodes stayed
/// incomplete for seconds, and the real-time model thread paid a pass over each one's
/// elimination-tree path every step instead (docs/benchmarks.md, issue 39).
const WORKER_NICE: i32 = -10;

/// Lowers the calling thread's nice value to [`WORKER_NICE`] if allowed; else it stays
/// on the normal share (no error: the columns still complete, only later).
fn raise_share() {
    if !crate::rt::raise_thread_share(WORKER_NICE) {
        tracing::debug!("palpa-columns: nice {WORKER_NICE} not allowed; normal share");
    }
}
