//! Columns of the static compliance K⁻¹ for contacted nodes, computed on demand from
//! the sparse Cholesky factor of K (three solves per node) and kept in a bounded
//! least-recently-used cache. Shared by the condensed backend (the whole response) and
//! the modal backend (the residual field near a contact).

use std::sync::Arc;

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::Mat;

use crate::fem::{DofMap, Factor};
use crate::model::ModelError;
use crate::Mat3;

/// One cached node: K⁻¹ columns of its x, y, z DOFs over every mesh node
/// (3·n_nodes rows, node-major, zero at fixed nodes).
#[derive(Clone, Debug)]
struct Entry {
    node: usize,
    last_used: u64,
    /// Row-major 3·n_nodes × 3: entry (3u + a, b) = K⁻¹[(u, a), (node, b)].
    values: Vec<f64>,
    /// Largest Frobenius norm of a 3×3 block: bounds |u| per unit force (m/N).
    max_block: f64,
}

/// Bounded cache of K⁻¹ column blocks, keyed by mesh node.
pub struct ComplianceColumns {
    factor: Arc<Factor>,
    dofs: DofMap,
    capacity: usize,
    entries: Vec<Entry>,
    /// Index into `entries` of each mesh node's columns (`u32::MAX`: not cached).
    slot: Vec<u32>,
    clock: u64,
    rhs: Mat<f64>,
    scratch: MemBuffer,
    solves: u64,
}

impl std::fmt::Debug for ComplianceColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComplianceColumns")
            .field("capacity", &self.capacity)
            .field("cached", &self.entries.len())
            .field("solves", &self.solves)
            .finish()
    }
}

impl ComplianceColumns {
    /// A cache of at most `capacity` nodes (≥ 1) over the factor of K (σ = 0) for the
    /// free DOFs of `dofs`. Each cached node costs 72·n_nodes bytes.
    pub fn new(factor: Arc<Factor>, dofs: DofMap, capacity: usize) -> Result<Self, ModelError> {
        if factor.n() != dofs.n_free() {
            return Err(ModelError::Column {
                node: usize::MAX,
                msg: format!(
                    "factor has {} rows, the DOF map {} free DOFs",
                    factor.n(),
                    dofs.n_free()
                ),
            });
        }
        let n = factor.n();
        let n_nodes = dofs.n_nodes();
        let scratch = MemBuffer::new(factor.solve_scratch(3));
        Ok(Self {
            factor,
            dofs,
            capacity: capacity.max(1),
            entries: Vec::new(),
            slot: vec![u32::MAX; n_nodes],
            clock: 0,
            rhs: Mat::zeros(n, 3),
            scratch,
            solves: 0,
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

    /// Number of column solves done so far (3 per node computed), for tests and stats.
    pub fn solves(&self) -> u64 {
        self.solves
    }

    /// Bound on the displacement of any node per unit force at node `v` (m/N): the
    /// largest block norm of its columns, if cached.
    pub fn column_bound(&self, v: usize) -> Option<f64> {
        self.find(v).map(|i| &self.entries[i]).map(|e| e.max_block)
    }

    /// Whether node `node`'s columns are cached.
    pub fn is_cached(&self, node: usize) -> bool {
        self.find(node).is_some()
    }

    fn find(&self, v: usize) -> Option<usize> {
        self.slot
            .get(v)
            .copied()
            .filter(|&s| s != u32::MAX)
            .map(|s| s as usize)
    }

    /// Makes sure `nodes` are cached, computing missing ones with one block solve of
    /// 3 columns per missing node (the whole surface at load time for small meshes).
    /// Raises the capacity if `nodes` alone exceed it.
    pub fn precompute(&mut self, nodes: &[usize]) -> Result<(), ModelError> {
        let missing: Vec<usize> = nodes
            .iter()
            .copied()
            .filter(|&v| !self.is_cached(v))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        self.capacity = self.capacity.max(nodes.len());
        let n = self.factor.n();
        const BLOCK: usize = 128;
        for chunk in missing.chunks(BLOCK) {
            let mut rhs = Mat::<f64>::zeros(n, 3 * chunk.len());
            for (c, &v) in chunk.iter().enumerate() {
                self.check_node(v)?;
                if let Some(d) = self.dofs.node_dofs(v) {
                    for b in 0..3 {
                        rhs[(d[b], 3 * c + b)] = 1.0;
                    }
                }
            }
            self.factor
                .solve_in_place(rhs.as_mut())
                .map_err(|e| ModelError::Column {
                    node: chunk[0],
                    msg: e.to_string(),
                })?;
            self.solves += 3 * chunk.len() as u64;
            for (c, &v) in chunk.iter().enumerate() {
                let values = self.scatter(v, |row, b| rhs[(row, 3 * c + b)]);
                self.insert(v, values);
            }
        }
        Ok(())
    }

    /// The 3×3 block K⁻¹[u, v] (m/N): displacement of node `u` per unit force at node
    /// `v`, computing and caching node `v`'s columns if needed. Zero if either is fixed.
    pub fn block(&mut self, u: usize, v: usize) -> Result<Mat3, ModelError> {
        let i = self.entry(v)?;
        Ok(block_of(&self.entries[i].values, u))
    }

    /// Makes sure node `v` is cached and returns its slot (valid until the next call
    /// that may evict).
    fn entry(&mut self, v: usize) -> Result<usize, ModelError> {
        self.clock += 1;
        if let Some(i) = self.find(v) {
            self.entries[i].last_used = self.clock;
            return Ok(i);
        }
        self.check_node(v)?;
        self.rhs.fill(0.0);
        if let Some(d) = self.dofs.node_dofs(v) {
            for (b, &dof) in d.iter().enumerate() {
                self.rhs[(dof, b)] = 1.0;
            }
            self.factor
                .solve_in_place_with_stack(self.rhs.as_mut(), MemStack::new(&mut self.scratch));
            self.solves += 3;
        }
        let rhs = std::mem::replace(&mut self.rhs, Mat::new());
        let values = self.scatter(v, |row, b| rhs[(row, b)]);
        self.rhs = rhs;
        Ok(self.insert(v, values))
    }

    /// Runs `visit(u, K⁻¹[u, v])` over the mesh nodes `nodes`, with node `v`'s columns
    /// computed if needed (one cache look-up for all of them).
    pub fn for_each_block(
        &mut self,
        v: usize,
        nodes: &[usize],
        mut visit: impl FnMut(usize, &Mat3),
    ) -> Result<(), ModelError> {
        let i = self.entry(v)?;
        let values = &self.entries[i].values;
        for (k, &u) in nodes.iter().enumerate() {
            visit(k, &block_of(values, u));
        }
        Ok(())
    }

    /// Compliance between two material points (m/N): the displacement of point p
    /// (weights `pw` over nodes `pn`) per unit force at point q (`qw` over `qn`),
    /// Σ_v Σ_u pw_u qw_v K⁻¹[u, v].
    pub fn point_block(
        &mut self,
        pn: &[usize; 3],
        pw: &[f64; 3],
        qn: &[usize; 3],
        qw: &[f64; 3],
    ) -> Result<Mat3, ModelError> {
        let mut c = Mat3::zeros();
        for (&v, &wv) in qn.iter().zip(qw) {
            if wv == 0.0 {
                continue;
            }
            let i = self.entry(v)?;
            let values = &self.entries[i].values;
            for (&u, &wu) in pn.iter().zip(pw) {
                if wu != 0.0 {
                    c += block_of(values, u) * (wu * wv);
                }
            }
        }
        Ok(c)
    }

    fn check_node(&self, v: usize) -> Result<(), ModelError> {
        if v >= self.dofs.n_nodes() {
            return Err(ModelError::Column {
                node: v,
                msg: format!("mesh has {} nodes", self.dofs.n_nodes()),
            });
        }
        Ok(())
    }

    /// Full-node layout of node `v`'s three solved columns (`col(free_row, b)`), in
    /// the evicted entry's buffer when the cache is full.
    fn scatter(&mut self, v: usize, col: impl Fn(usize, usize) -> f64) -> Vec<f64> {
        let mut values = if self.entries.len() >= self.capacity {
            let lru = (0..self.entries.len())
                .min_by_key(|&i| self.entries[i].last_used)
                .unwrap_or(0);
            let gone = self.entries.swap_remove(lru);
            self.slot[gone.node] = u32::MAX;
            if let Some(moved) = self.entries.get(lru) {
                self.slot[moved.node] = lru as u32;
            }
            gone.values
        } else {
            vec![0.0; 9 * self.dofs.n_nodes()]
        };
        values.fill(0.0);
        if self.dofs.node_dofs(v).is_some() {
            for (j, &u) in self.dofs.free_nodes().iter().enumerate() {
                for a in 0..3 {
                    for b in 0..3 {
                        values[(3 * u + a) * 3 + b] = col(3 * j + a, b);
                    }
                }
            }
        }
        values
    }

    fn insert(&mut self, node: usize, values: Vec<f64>) -> usize {
        let max_block = values
            .chunks_exact(9)
            .map(|b| b.iter().map(|x| x * x).sum::<f64>())
            .fold(0.0, f64::max)
            .sqrt();
        self.entries.push(Entry {
            node,
            last_used: self.clock,
            values,
            max_block,
        });
        self.slot[node] = (self.entries.len() - 1) as u32;
        self.entries.len() - 1
    }
}

fn block_of(values: &[f64], u: usize) -> Mat3 {
    let r = &values[9 * u..9 * u + 9];
    Mat3::new(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8])
}
