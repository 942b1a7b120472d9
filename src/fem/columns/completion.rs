//! Completing the cached nodes' full K⁻¹ columns: in step, within a budget of back-solve
//! work per simulated period, or on a worker thread beside the model thread.

use super::background::Background;
use super::{fill, ColumnError, ComplianceColumns, Entry, BATCH, COMPLETION_PERIOD};
use crate::fem::PathColumns;

impl ComplianceColumns {
    /// Ends a model step of `dt` seconds and returns whether every cached node is
    /// complete. In step (the default): for every [`COMPLETION_PERIOD`] of simulated time
    /// completed, spends what that period's forward solves left of the budget on back
    /// solves of cached nodes whose full columns are not known yet, most recently used
    /// first, `BATCH` nodes at a time. In the background
    /// ([`Self::complete_in_background`]): installs the columns the worker finished and
    /// hands it the next batch, whatever the simulated time. Fails only if the worker
    /// stopped.
    pub fn advance_completion(&mut self, dt: f64) -> Result<bool, ColumnError> {
        if self.background.is_some() {
            return self.exchange_with_worker();
        }
        self.since_quantum += dt;
        // Relative slack so five 1 ms steps make one 5 ms period despite round-off.
        while self.since_quantum >= COMPLETION_PERIOD * (1.0 - 1e-9) {
            self.since_quantum = (self.since_quantum - COMPLETION_PERIOD).max(0.0);
            let left = self.budget.saturating_sub(self.forward_work);
            self.forward_work = 0;
            if self.complete_within(left) {
                self.since_quantum = 0.0;
                return Ok(true);
            }
        }
        Ok(self.entries.iter().all(|e| e.complete))
    }

    /// From now on completes columns on a worker thread (`palpa-columns`) instead of
    /// within the model step's budget: as fast as a core allows, but at moments that
    /// depend on the machine. Until a column completes, nodes not yet contacted lack
    /// its load's field, so the drawn surface (and, through the positions of such nodes
    /// near the probe, the contact geometry) may differ slightly from a replay's. For a
    /// server running in real time; replays and tests that compare runs keep the
    /// default. Forward solves of the nodes a step touches stay on the caller's thread.
    pub fn complete_in_background(&mut self) -> Result<(), ColumnError> {
        if self.background.is_none() {
            self.background = Some(Background::start(
                self.factor.clone(),
                self.dofs.clone(),
                self.bands.clone(),
            )?);
        }
        Ok(())
    }

    /// Whether columns are completed by a worker thread.
    pub fn completes_in_background(&self) -> bool {
        self.background.is_some()
    }

    /// Notes `nodes` as likely to be loaded soon: in the background, the worker computes
    /// their full columns whenever no cached node waits for its own. Ignored in step.
    pub fn anticipate(&mut self, nodes: &[usize]) {
        if self.background.is_some() {
            self.anticipated.clear();
            self.anticipated.extend_from_slice(nodes);
        }
    }

    /// Installs what the worker finished and, if it is idle, sends it the most recently
    /// used incomplete nodes, or else anticipated nodes not cached yet. Returns whether
    /// every cached node is complete.
    fn exchange_with_worker(&mut self) -> Result<bool, ColumnError> {
        let Some(mut worker) = self.background.take() else {
            return Ok(self.entries.iter().all(|e| e.complete));
        };
        let exchanged = self.exchange(&mut worker);
        self.background = Some(worker);
        exchanged?;
        Ok(self.entries.iter().all(|e| e.complete))
    }

    fn exchange(&mut self, worker: &mut Background) -> Result<(), ColumnError> {
        while let Some(mut done) = worker.receive()? {
            let i = match self.find(done.node) {
                Some(i) if self.entries[i].complete => {
                    // Completed in step meanwhile.
                    worker.recycle(done.values);
                    continue;
                }
                Some(i) => i,
                // An anticipated node, or one evicted meanwhile: cached complete.
                None if done.node < self.slot.len() => {
                    self.insert(done.node, &mut PathColumns::default())
                }
                None => continue,
            };
            let e = &mut self.entries[i];
            std::mem::swap(&mut e.values, &mut done.values);
            e.max_block = done.max_block;
            e.beyond = done.beyond;
            e.norm = done.norm;
            e.complete = true;
            worker.recycle(done.values);
        }
        if !worker.idle() {
            return Ok(());
        }
        self.batch.clear();
        most_recent_incomplete(&self.entries, &mut self.batch);
        if !self.batch.is_empty() {
            let (entries, slot) = (&self.entries, &self.slot);
            let forward = |v: usize| &entries[slot[v] as usize].forward;
            return worker.send(self.batch.iter().map(|&v| (v, Some(forward(v)))));
        }
        for &v in &self.anticipated {
            if self.batch.len() == BATCH {
                break;
            }
            let known = v >= self.slot.len() || self.dofs.is_fixed(v) || self.find(v).is_some();
            if !known && !self.batch.contains(&v) {
                self.batch.push(v);
            }
        }
        worker.send(self.batch.iter().map(|&v| (v, None)))
    }

    /// Completes every cached node's full columns now.
    pub fn complete_all(&mut self) {
        self.complete_within(usize::MAX);
    }

    fn complete_within(&mut self, budget: usize) -> bool {
        let mut left = budget;
        loop {
            if self.back_nodes.is_empty() {
                if left == 0 || self.entries.iter().all(|e| e.complete) {
                    return self.entries.iter().all(|e| e.complete);
                }
                most_recent_incomplete(&self.entries, &mut self.back_nodes);
                let (entries, slot) = (&self.entries, &self.slot);
                let ys = self
                    .back_nodes
                    .iter()
                    .map(|&v| &entries[slot[v] as usize].forward);
                self.factor.begin_back_solve(ys, &mut self.back_ws);
            } else if left == 0 {
                return false;
            }
            let spent = self.factor.continue_back_solve(&mut self.back_ws, left);
            left = left.saturating_sub(spent);
            if !self.back_ws.back_done() {
                return false;
            }
            let nodes = std::mem::take(&mut self.back_nodes);
            for (c, &v) in nodes.iter().enumerate() {
                // The node may have been evicted (and perhaps re-added) meanwhile; its
                // columns are the same either way.
                if let Some(i) = self.find(v).filter(|&i| !self.entries[i].complete) {
                    let (factor, ws) = (&self.factor, &self.back_ws);
                    fill(&self.dofs, &self.bands, &mut self.entries[i], |row, b| {
                        factor.back_solution(ws, row, 3 * c + b)
                    });
                }
            }
            self.back_nodes = nodes;
            self.back_nodes.clear();
        }
    }
}

/// Fills `batch` up to [`BATCH`] nodes with the most recently used incomplete entries
/// not in it yet (those of the current contact first), without allocating.
fn most_recent_incomplete(entries: &[Entry], batch: &mut Vec<usize>) {
    while batch.len() < BATCH {
        let next = entries
            .iter()
            .filter(|e| !e.complete && !batch.contains(&e.node))
            .max_by_key(|e| e.last_used);
        match next {
            Some(e) => batch.push(e.node),
            None => break,
        }
    }
}
