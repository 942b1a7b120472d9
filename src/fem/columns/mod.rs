//! Columns of the static compliance K⁻¹ for contacted nodes, computed on demand from
//! the sparse Cholesky factor K = Pᵀ L Lᵀ P and kept in a bounded least-recently-used
//! cache. Shared by the condensed backend (the whole response) and the modal backend
//! (the residual field near a contact).
//!
//! A newly contacted node costs one forward solve of its three unit right-hand sides
//! along the elimination tree, y = L⁻¹ P e ([`Factor::forward_unit`]). That is enough
//! for every compliance block among contacted nodes, K⁻¹[u, v] = y_uᵀ y_v, so the step
//! that first touches a node gets its exact force without a pass over all of L. The
//! full columns (how every node moves, for the drawn surface and the displacement
//! bound) need the back solve x = Pᵀ L⁻ᵀ y over all of L; it shares a per-step work
//! budget with the forward solves ([`ComplianceColumns::advance_completion`]): forward
//! solves always run (the force needs them), the back solve gets what they left.
//!
//! Until a node's columns are complete, the displacement field of its load
//! ([`ComplianceColumns::add_field`]) is still exact at the cached nodes the contact
//! used last (the patch the proxy stands on, [`ComplianceColumns::field_exact_at`]):
//! y_uᵀ (Σ_v y_v f_v), one pass over u's path for all such loads together. Other
//! nodes leave it out until completion; far from the contact that field is small, and
//! as the proxy crosses onto a new triangle its new node joins the cache in that step.
//! The nodes a sliding contact left behind are not dotted: at most [`EXACT_PENDING`]
//! path passes per call, so the step's cost does not grow with the worker's backlog.
//!
//! A server running in real time completes the full columns on a worker thread
//! instead ([`ComplianceColumns::complete_in_background`], `background.rs`), which also
//! prepares the nodes around a contact before it reaches them.

mod background;
mod bands;
mod completion;

use std::sync::Arc;

use background::Background;
use bands::{DistanceBands, BANDS};
use faer::Mat;

use super::{DofMap, Factor, PathColumns, PathWorkspace, Support};
use crate::{Mat3, Vec3};

/// Why a compliance column could not be computed.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ColumnError {
    /// The factor and the DOF map describe different systems.
    #[error("the factor has {factor_rows} rows but the DOF map {free_dofs} free DOFs")]
    SizeMismatch {
        /// Rows of the factor.
        factor_rows: usize,
        /// Free DOFs of the map.
        free_dofs: usize,
    },
    /// The rest positions do not match the DOF map's free nodes.
    #[error("{positions} rest positions for {free_nodes} free nodes")]
    PositionsMismatch {
        /// Positions given.
        positions: usize,
        /// Free nodes of the map.
        free_nodes: usize,
    },
    /// A node index outside the mesh.
    #[error("node {node} is outside the mesh ({n_nodes} nodes)")]
    NodeOutOfRange {
        /// The node asked for.
        node: usize,
        /// Nodes in the mesh.
        n_nodes: usize,
    },
    /// The sparse solve failed.
    #[error("compliance column of node {node}: {message}")]
    Solve {
        /// First node of the failed batch.
        node: usize,
        /// The solver's message.
        message: String,
    },
    /// The thread completing columns in the background stopped.
    #[error("{message}")]
    Worker {
        /// What happened to it.
        message: String,
    },
}

/// Nodes forward-solved, or back-solved, together (their columns side by side).
const BATCH: usize = 8;

/// Most cached nodes with incomplete columns that get the exact field of loads still
/// being completed ([`ComplianceColumns::add_field`]), those used last: each costs a
/// pass over its elimination-tree path. A point probe's patch (about 21 nodes) fits;
/// without the limit a sliding contact's backlog of incomplete nodes made the model
/// step 4–10 ms.
pub const EXACT_PENDING: usize = 32;

/// Simulated time (s) of one column-work quantum: the model step at 200 Hz. Work is
/// scheduled by simulated time, not per call, so a model stepped at 1 kHz (the
/// fidelity harness's truth) completes columns at the same simulated moments as one
/// stepped at 200 Hz, and their surfaces, proxies and forces stay comparable.
pub const COMPLETION_PERIOD: f64 = 0.005;

/// Default multiply-adds of column solves per [`COMPLETION_PERIOD`]: a few hundred microseconds;
/// a quarter of the back solve of one bunny node (3 columns over its L of 3·10⁶
/// entries), or half of one forward solve (which runs regardless).
pub const DEFAULT_COMPLETION_BUDGET: usize = 1 << 21;

/// One cached node.
#[derive(Clone, Debug, Default)]
struct Entry {
    node: usize,
    last_used: u64,
    /// L⁻¹ P e for the node's x, y, z DOFs on its elimination-tree path (empty for
    /// nodes precomputed by a full solve).
    forward: PathColumns,
    /// Once `complete`: row-major 3·n_nodes × 3, entry (3u + a, b) =
    /// K⁻¹[(u, a), (node, b)] (zero at fixed nodes).
    values: Vec<f64>,
    complete: bool,
    /// Largest Frobenius norm of a 3×3 block of `values`: bounds |u| per unit force
    /// (m/N).
    max_block: f64,
    /// Once `complete`: the largest block of `values` at the nodes beyond each of the
    /// [`DistanceBands`] radii from `node` (m/N).
    beyond: [f64; BANDS],
    /// ‖Y‖_F = √trace K⁻¹[node, node] (√(m/N)), Y = L⁻¹P[e_x e_y e_z]: by
    /// Cauchy–Schwarz ‖K⁻¹[u, node]‖_F ≤ ‖Y_u‖_F ‖Y_node‖_F, the bound of a field
    /// known only at cached nodes.
    norm: f64,
}

/// Bounded cache of K⁻¹ column blocks, keyed by mesh node. Fixed nodes are never
/// cached: their blocks are zero.
pub struct ComplianceColumns {
    factor: Arc<Factor>,
    dofs: DofMap,
    bands: DistanceBands,
    capacity: usize,
    entries: Vec<Entry>,
    /// Index into `entries` of each mesh node's columns (`u32::MAX`: not cached).
    slot: Vec<u32>,
    clock: u64,
    forward_ws: PathWorkspace,
    back_ws: PathWorkspace,
    /// Nodes whose back solve is running in `back_ws`, by column group.
    back_nodes: Vec<usize>,
    /// The next batch for the background worker.
    batch: Vec<usize>,
    /// Nodes a contact may load soon ([`Self::anticipate`]).
    anticipated: Vec<usize>,
    budget: usize,
    /// Simulated time since the last column-work quantum (s).
    since_quantum: f64,
    /// Multiply-adds of forward solves since the last completion call.
    forward_work: usize,
    new_nodes: Vec<usize>,
    new_dofs: Vec<usize>,
    new_paths: Vec<PathColumns>,
    /// Σ y_v f_v over the incomplete loads of an [`Self::add_field`] call, in the
    /// factor's order (n entries, zero between calls).
    load_y: Vec<f64>,
    /// Σ_v q_v Y_v of a [`Self::point_block`]'s incomplete nodes, row-major n × 3 in
    /// the factor's order (zero between calls).
    block_y: Vec<f64>,
    /// The last [`Self::point_block`] query and its answer: a step asks for the contact
    /// support's block twice (the constraint system, then the local force model's
    /// stiffness), and K⁻¹ does not change.
    last_point: Option<(Support, Support, Mat3)>,
    solves: u64,
    /// Passes over a node's elimination-tree path (dots and scatters) so far.
    path_passes: u64,
    /// Incomplete cached nodes used at or after this clock get the exact field of
    /// incomplete loads ([`Self::field_exact_at`]).
    exact_from: u64,
    /// Scratch of [`Self::refresh_exact`].
    recency: Vec<u64>,
    /// The worker completing columns, once [`Self::complete_in_background`] started it.
    background: Option<Background>,
}

impl std::fmt::Debug for ComplianceColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComplianceColumns")
            .field("capacity", &self.capacity)
            .field("cached", &self.entries.len())
            .field("pending", &self.pending())
            .field("solves", &self.solves)
            .field("background", &self.background.is_some())
            .finish()
    }
}

impl ComplianceColumns {
    /// A cache of at most `capacity` nodes (≥ 1) over the factor of K (σ = 0) for the
    /// free DOFs of `dofs`, whose free nodes rest at `positions` (m, free-node order,
    /// as [`super::FemSystem::positions`]). Each completed node costs 72·n_nodes
    /// bytes. One query keeps all the nodes it needs, so the cache may exceed
    /// `capacity` by those.
    pub fn new(
        factor: Arc<Factor>,
        dofs: DofMap,
        positions: &[Vec3],
        capacity: usize,
    ) -> Result<Self, ColumnError> {
        if factor.n() != dofs.n_free() {
            return Err(ColumnError::SizeMismatch {
                factor_rows: factor.n(),
                free_dofs: dofs.n_free(),
            });
        }
        if 3 * positions.len() != dofs.n_free() {
            return Err(ColumnError::PositionsMismatch {
                positions: positions.len(),
                free_nodes: dofs.n_free() / 3,
            });
        }
        let n_nodes = dofs.n_nodes();
        let n = factor.n();
        Ok(Self {
            forward_ws: factor.path_workspace(3 * BATCH),
            back_ws: factor.path_workspace(3 * BATCH),
            factor,
            dofs,
            bands: DistanceBands::new(positions),
            capacity: capacity.max(1),
            entries: Vec::new(),
            slot: vec![u32::MAX; n_nodes],
            clock: 0,
            back_nodes: Vec::with_capacity(BATCH),
            batch: Vec::with_capacity(BATCH),
            anticipated: Vec::new(),
            budget: DEFAULT_COMPLETION_BUDGET,
            since_quantum: 0.0,
            forward_work: 0,
            new_nodes: Vec::with_capacity(BATCH),
            new_dofs: Vec::with_capacity(3 * BATCH),
            new_paths: vec![PathColumns::default(); BATCH],
            load_y: vec![0.0; n],
            block_y: vec![0.0; 3 * n],
            last_point: None,
            solves: 0,
            path_passes: 0,
            exact_from: 0,
            recency: Vec::new(),
            background: None,
        })
    }

    /// Number of mesh nodes.
    pub fn n_nodes(&self) -> usize {
        self.dofs.n_nodes()
    }

    /// The free-DOF numbering.
    pub fn dofs(&self) -> &DofMap {
        &self.dofs
    }

    /// Maximum number of cached nodes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of column solves done so far (3 per node entering the cache), for tests
    /// and stats.
    pub fn solves(&self) -> u64 {
        self.solves
    }

    /// Number of passes over a node's elimination-tree path (its forward solve dotted
    /// with, or scattered into, a dense vector) so far: the step cost of loads whose
    /// columns are still being completed, for tests and benches.
    pub fn path_passes(&self) -> u64 {
        self.path_passes
    }

    /// Sets the column-solve work per [`COMPLETION_PERIOD`] (multiply-adds): the back solve
    /// gets what the step's forward solves left, at least one supernode when they
    /// left anything.
    pub fn set_completion_budget(&mut self, budget: usize) {
        self.budget = budget;
    }

    /// Bound on the displacement of any node per unit force at node `v` (m/N): the
    /// largest block norm of its columns, once complete (0 for a fixed node).
    pub fn column_bound(&self, v: usize) -> Option<f64> {
        if self.dofs.is_fixed(v) {
            return Some(0.0);
        }
        self.find(v)
            .map(|i| &self.entries[i])
            .filter(|e| e.complete)
            .map(|e| e.max_block)
    }

    /// Whether node `node`'s columns are cached (complete or not).
    pub fn is_cached(&self, node: usize) -> bool {
        self.find(node).is_some()
    }

    /// Whether [`Self::add_field`] gives node `node` the exact field of every load
    /// (cached with complete columns, or among the [`EXACT_PENDING`] incomplete nodes
    /// used last); elsewhere loads still being completed are left out.
    pub fn field_exact_at(&self, node: usize) -> bool {
        self.find(node)
            .map(|i| &self.entries[i])
            .is_some_and(|e| e.complete || e.last_used >= self.exact_from)
    }

    /// Whether node `node`'s full columns are known (always for a fixed node).
    pub fn is_complete(&self, node: usize) -> bool {
        self.column_bound(node).is_some()
    }

    /// K⁻¹[u, node] (m/N) for the entries `(i, u)` of `nodes` whose block is not zero,
    /// as `(i, block)`, once `node`'s full columns are complete; `None` before (or for a
    /// node not cached). A fixed node's column is empty.
    pub fn complete_column(&self, node: usize, nodes: &[usize]) -> Option<Vec<(u32, Mat3)>> {
        if self.dofs.is_fixed(node) {
            return Some(Vec::new());
        }
        let e = self
            .find(node)
            .map(|i| &self.entries[i])
            .filter(|e| e.complete)?;
        Some(
            (0..)
                .zip(nodes)
                .map(|(i, &u)| (i, block_of(&e.values, u)))
                .filter(|(_, b)| *b != Mat3::zeros())
                .collect(),
        )
    }

    /// Number of cached nodes whose full columns are still being completed.
    pub fn pending(&self) -> usize {
        self.entries.iter().filter(|e| !e.complete).count()
    }

    fn find(&self, v: usize) -> Option<usize> {
        self.slot
            .get(v)
            .copied()
            .filter(|&s| s != u32::MAX)
            .map(|s| s as usize)
    }

    /// Makes sure `nodes` are cached with full columns, computing missing ones with
    /// one block solve of 3 columns per node (the whole surface at load time for
    /// small meshes). Raises the capacity if `nodes` alone exceed it.
    pub fn precompute(&mut self, nodes: &[usize]) -> Result<(), ColumnError> {
        for &v in nodes {
            self.check_node(v)?;
        }
        let missing: Vec<usize> = nodes
            .iter()
            .copied()
            .filter(|&v| !self.dofs.is_fixed(v) && !self.is_complete(v))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        self.capacity = self.capacity.max(nodes.len());
        self.clock += 1;
        let n = self.factor.n();
        const CHUNK: usize = 128;
        for chunk in missing.chunks(CHUNK) {
            let mut rhs = Mat::<f64>::zeros(n, 3 * chunk.len());
            for (c, &v) in chunk.iter().enumerate() {
                if let Some(d) = self.dofs.node_dofs(v) {
                    for b in 0..3 {
                        rhs[(d[b], 3 * c + b)] = 1.0;
                    }
                }
            }
            self.factor
                .solve_in_place(rhs.as_mut())
                .map_err(|e| ColumnError::Solve {
                    node: chunk[0],
                    message: e.to_string(),
                })?;
            self.solves += 3 * chunk.len() as u64;
            for (c, &v) in chunk.iter().enumerate() {
                let i = match self.find(v) {
                    Some(i) => i,
                    None => self.insert(v, &mut PathColumns::default()),
                };
                self.entries[i].last_used = self.clock;
                fill(&self.dofs, &self.bands, &mut self.entries[i], |row, b| {
                    rhs[(row, 3 * c + b)]
                });
            }
        }
        Ok(())
    }

    /// The 3×3 block K⁻¹[u, v] (m/N): displacement of node `u` per unit force at node
    /// `v`, forward-solving and caching the nodes if needed. Zero if either is fixed.
    pub fn block(&mut self, u: usize, v: usize) -> Result<Mat3, ColumnError> {
        self.clock += 1;
        self.ensure([u, v])?;
        Ok(self.pair_block(u, v))
    }

    /// Caches the free nodes of `nodes` (forward-solving the new ones together), marked
    /// as just used, so that [`Self::add_field`] includes loads at them. Never evicts
    /// one of `nodes` for another.
    pub fn cache(&mut self, nodes: impl IntoIterator<Item = usize>) -> Result<(), ColumnError> {
        self.clock += 1;
        self.ensure(nodes)
    }

    /// Adds the displacement field of nodal loads `loads` (node, N) at mesh nodes
    /// `nodes` to `out` (m): K⁻¹[u, v] f at every node u for loads whose columns are
    /// complete, and at the nodes u [`Self::field_exact_at`] for loads still being
    /// completed (from u's full columns, or y_uᵀ Σ_v y_v f_v over those loads' forward
    /// solves, at most [`EXACT_PENDING`] path passes). Other nodes get nothing from an
    /// incomplete load, nor does any node from a load whose node is not cached. Never
    /// solves.
    pub fn add_field(&mut self, loads: &[(usize, Vec3)], nodes: &[usize], out: &mut [Vec3]) {
        let mut incomplete = false;
        for &(v, f) in loads {
            match self.find(v).map(|i| &self.entries[i]) {
                Some(e) if e.complete => {
                    for (o, &u) in out.iter_mut().zip(nodes) {
                        *o += block_of(&e.values, u) * f;
                    }
                }
                Some(_) => incomplete = true,
                None => {}
            }
        }
        if !incomplete {
            return;
        }
        let (entries, slot, factor) = (&self.entries, &self.slot, &self.factor);
        let exact_from = self.exact_from;
        let pending = loads.iter().filter_map(|&(v, f)| {
            let i = *slot.get(v)?;
            let e = entries.get(i as usize)?;
            (!e.complete && f != Vec3::zeros()).then_some((e, f))
        });
        let mut scattered = false;
        for (o, &u) in out.iter_mut().zip(nodes) {
            let Some(eu) = self.find(u).map(|i| &entries[i]) else {
                continue;
            };
            if !eu.complete && eu.last_used < exact_from {
                continue;
            }
            if eu.complete {
                for (ev, f) in pending.clone() {
                    *o += block_of(&eu.values, ev.node).transpose() * f;
                }
            } else {
                if !scattered {
                    for (ev, f) in pending.clone() {
                        factor.path_scatter(&ev.forward, f.as_slice(), &mut self.load_y);
                        self.path_passes += 1;
                    }
                    scattered = true;
                }
                let mut x = [0.0; 3];
                factor.path_dot(&eu.forward, &self.load_y, &mut x);
                self.path_passes += 1;
                *o += Vec3::from(x);
            }
        }
        if scattered {
            for (ev, _) in pending {
                factor.path_clear(&ev.forward, &mut self.load_y);
            }
        }
    }

    /// Bound on |[`Self::add_field`]| of `loads` at any node (m): Σ |f| · (largest
    /// block of v's columns) over complete loads, plus Σ |f| ‖Y_v‖_F · max over cached
    /// u of ‖Y_u‖_F over loads still being completed.
    pub fn field_bound(&self, loads: &[(usize, Vec3)]) -> f64 {
        self.bound_with(loads, |e| e.max_block)
    }

    /// Bound on |[`Self::add_field`]| of `loads` (m) at the nodes resting at least
    /// `distance` (m) from `point`: as [`Self::field_bound`], with each complete load's
    /// largest block taken only over the nodes that far from `point`, hence at least
    /// `distance` − |x_v − point| from its node v.
    pub fn field_bound_beyond(&self, loads: &[(usize, Vec3)], point: &Vec3, distance: f64) -> f64 {
        let Self { bands, dofs, .. } = self;
        self.bound_with(loads, |e| {
            let free = dofs.free_node_index(e.node).expect("free nodes only");
            let apart = distance - (bands.position(free) - point).norm();
            bands.block_beyond(&e.beyond, e.max_block, apart)
        })
    }

    /// Σ |f| · `block(v)` over complete loads plus the bound of the loads still being
    /// completed (see [`Self::field_bound`]).
    fn bound_with(&self, loads: &[(usize, Vec3)], block: impl Fn(&Entry) -> f64) -> f64 {
        let (mut complete, mut pending) = (0.0, 0.0);
        for &(v, f) in loads {
            match self.find(v).map(|i| &self.entries[i]) {
                Some(e) if e.complete => complete += f.norm() * block(e),
                Some(e) => pending += f.norm() * e.norm,
                None => {}
            }
        }
        if pending > 0.0 {
            complete + pending * self.entries.iter().map(|e| e.norm).fold(0.0, f64::max)
        } else {
            complete
        }
    }

    /// Compliance between two material points (m/N): the displacement of point `p`
    /// per unit force at point `q`, Σ_v Σ_u p_u q_v K⁻¹[u, v] over their weighted nodes.
    /// New nodes cost one joint forward solve; their full columns are completed later by
    /// [`Self::advance_completion`].
    pub fn point_block(&mut self, p: &Support, q: &Support) -> Result<Mat3, ColumnError> {
        if let Some((lp, lq, c)) = &self.last_point {
            if lp == p && lq == q {
                return Ok(*c);
            }
        }
        self.clock += 1;
        let loaded = |(v, w): (usize, f64)| (w != 0.0).then_some(v);
        self.ensure(p.iter().chain(q.iter()).filter_map(loaded))?;
        let mut c = Mat3::zeros();
        let mut forward_pairs = false;
        for (v, wv) in q.iter().filter(|&(_, w)| w != 0.0) {
            for (u, wu) in p.iter().filter(|&(_, w)| w != 0.0) {
                match self.known_block(u, v) {
                    Some(b) => c += b * (wu * wv),
                    None => forward_pairs = true,
                }
            }
        }
        if forward_pairs {
            c += self.forward_block(p, q);
        }
        self.last_point = Some((*p, *q, c));
        Ok(c)
    }

    /// K⁻¹[u, v] from the full columns of either node (zero if either is not cached);
    /// `None` when both are still incomplete.
    fn known_block(&self, u: usize, v: usize) -> Option<Mat3> {
        let (Some(iu), Some(iv)) = (self.find(u), self.find(v)) else {
            return Some(Mat3::zeros());
        };
        let (eu, ev) = (&self.entries[iu], &self.entries[iv]);
        if ev.complete {
            Some(block_of(&ev.values, u))
        } else if eu.complete {
            Some(block_of(&eu.values, v).transpose())
        } else {
            None
        }
    }

    /// Σ_u Σ_v p_u q_v y_uᵀ y_v over the incomplete cached nodes of `p` and `q`, as
    /// (Σ_u p_u y_u)ᵀ (Σ_v q_v y_v): one pass over each node's path per axis instead
    /// of one per pair: pair by pair, a sphere's patches' grams dominated a modal step
    /// (docs/benchmarks.md, "sphere grams").
    fn forward_block(&mut self, p: &Support, q: &Support) -> Mat3 {
        let Self {
            entries,
            slot,
            factor,
            block_y,
            path_passes,
            ..
        } = self;
        // All three axes in one pass over each path: the model step's profile on a
        // sliding contact over fresh nodes had a pass per axis at 15 % of the step.
        for (ev, wv) in incomplete_of(entries, slot, q) {
            factor.path_add_block(&ev.forward, wv, block_y);
            *path_passes += 1;
        }
        let mut c = [0.0; 9];
        for (eu, wu) in incomplete_of(entries, slot, p) {
            factor.path_gram_block(&eu.forward, wu, block_y, &mut c);
            *path_passes += 1;
        }
        for (ev, _) in incomplete_of(entries, slot, q) {
            factor.path_clear_block(&ev.forward, block_y);
        }
        Mat3::from_row_slice(&c)
    }

    /// K⁻¹[u, v] for nodes made present by [`Self::ensure`]: from full columns of
    /// either node (K⁻¹ is symmetric) or from the two forward solves.
    fn pair_block(&self, u: usize, v: usize) -> Mat3 {
        let (Some(iu), Some(iv)) = (self.find(u), self.find(v)) else {
            return Mat3::zeros();
        };
        let (eu, ev) = (&self.entries[iu], &self.entries[iv]);
        if ev.complete {
            block_of(&ev.values, u)
        } else if eu.complete {
            block_of(&eu.values, v).transpose()
        } else {
            let mut g = [0.0; 9];
            eu.forward.gram(&ev.forward, &mut g);
            Mat3::from_row_slice(&g)
        }
    }

    /// Makes every free node of `nodes` present in the cache, stamped with the current
    /// clock, forward-solving the missing ones together.
    fn ensure(&mut self, nodes: impl IntoIterator<Item = usize>) -> Result<(), ColumnError> {
        self.new_nodes.clear();
        for v in nodes {
            self.check_node(v)?;
            if self.dofs.is_fixed(v) {
                continue;
            }
            match self.find(v) {
                Some(i) => self.entries[i].last_used = self.clock,
                None if !self.new_nodes.contains(&v) => {
                    if self.new_nodes.len() == BATCH {
                        self.forward_new()?;
                    }
                    self.new_nodes.push(v);
                }
                None => {}
            }
        }
        self.forward_new()?;
        self.refresh_exact();
        Ok(())
    }

    /// Moves [`Self::exact_from`] to the clock of the [`EXACT_PENDING`]-th most recently
    /// used incomplete node (0 while there are no more than that).
    fn refresh_exact(&mut self) {
        self.recency.clear();
        let incomplete = self.entries.iter().filter(|e| !e.complete);
        self.recency.extend(incomplete.map(|e| e.last_used));
        self.exact_from = match self.recency.len().checked_sub(EXACT_PENDING) {
            Some(k) if k > 0 => *self.recency.select_nth_unstable(k).1,
            _ => 0,
        };
    }

    /// Forward-solves the nodes in `new_nodes` and caches them (incomplete).
    fn forward_new(&mut self) -> Result<(), ColumnError> {
        if self.new_nodes.is_empty() {
            return Ok(());
        }
        self.new_dofs.clear();
        for &v in &self.new_nodes {
            let d = self.dofs.node_dofs(v).expect("fixed nodes are skipped");
            self.new_dofs.extend_from_slice(&d);
        }
        let g = self.new_nodes.len();
        self.forward_work += self.factor.forward_unit(
            &self.new_dofs,
            3,
            &mut self.forward_ws,
            &mut self.new_paths[..g],
        );
        self.solves += 3 * g as u64;
        for k in 0..g {
            let mut forward = std::mem::take(&mut self.new_paths[k]);
            let mut yy = [0.0; 9];
            forward.gram(&forward, &mut yy);
            let i = self.insert(self.new_nodes[k], &mut forward);
            self.entries[i].norm = (yy[0] + yy[4] + yy[8]).sqrt();
            // The evicted node's buffers, reused by the next forward solve.
            self.new_paths[k] = forward;
        }
        self.new_nodes.clear();
        Ok(())
    }

    fn check_node(&self, v: usize) -> Result<(), ColumnError> {
        if v >= self.dofs.n_nodes() {
            return Err(ColumnError::NodeOutOfRange {
                node: v,
                n_nodes: self.dofs.n_nodes(),
            });
        }
        Ok(())
    }

    /// Caches node `node` with forward solution `forward` (incomplete; swapped with
    /// the evicted entry's buffer), evicting the least recently used node not stamped
    /// with the current clock when full. Returns its slot.
    fn insert(&mut self, node: usize, forward: &mut PathColumns) -> usize {
        let mut entry = Entry::default();
        if self.entries.len() >= self.capacity {
            let lru = (0..self.entries.len())
                .filter(|&i| self.entries[i].last_used < self.clock)
                .min_by_key(|&i| self.entries[i].last_used);
            if let Some(lru) = lru {
                entry = self.entries.swap_remove(lru);
                self.slot[entry.node] = u32::MAX;
                if let Some(moved) = self.entries.get(lru) {
                    self.slot[moved.node] = lru as u32;
                }
            }
        }
        entry.node = node;
        entry.last_used = self.clock;
        std::mem::swap(&mut entry.forward, forward);
        entry.complete = false;
        entry.max_block = 0.0;
        entry.beyond = [0.0; BANDS];
        entry.norm = 0.0;
        self.entries.push(entry);
        self.slot[node] = (self.entries.len() - 1) as u32;
        self.entries.len() - 1
    }
}

/// The cached, still incomplete nodes of `support` with nonzero weight, and their
/// weights.
fn incomplete_of<'a>(
    entries: &'a [Entry],
    slot: &'a [u32],
    support: &'a Support,
) -> impl Iterator<Item = (&'a Entry, f64)> + 'a {
    support.iter().filter_map(|(v, w)| {
        let e = entries.get(*slot.get(v)? as usize)?;
        (w != 0.0 && !e.complete).then_some((e, w))
    })
}

/// Writes `e`'s full columns in node layout from `col(free_dof, b)` and marks it
/// complete.
fn fill(dofs: &DofMap, bands: &DistanceBands, e: &mut Entry, col: impl Fn(usize, usize) -> f64) {
    e.values.clear();
    e.values.resize(9 * dofs.n_nodes(), 0.0);
    for (j, &u) in dofs.free_nodes().iter().enumerate() {
        for a in 0..3 {
            for b in 0..3 {
                e.values[(3 * u + a) * 3 + b] = col(3 * j + a, b);
            }
        }
    }
    e.max_block = e
        .values
        .chunks_exact(9)
        .map(|b| b.iter().map(|x| x * x).sum::<f64>())
        .fold(0.0, f64::max)
        .sqrt();
    let free = dofs.free_node_index(e.node).expect("free nodes only");
    e.beyond = bands.far_blocks(dofs, &e.values, bands.position(free));
    e.norm = block_of(&e.values, e.node).trace().sqrt();
    e.complete = true;
}

fn block_of(values: &[f64], u: usize) -> Mat3 {
    let r = &values[9 * u..9 * u + 9];
    Mat3::new(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8])
}

#[cfg(test)]
mod tests;
