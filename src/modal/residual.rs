//! Residual flexibility: the static compliance a truncated modal basis misses.
//!
//! For surface node v, R(v) = [K⁻¹]ᵥᵥ − Σᵢ wᵢ(v) wᵢ(v)ᵀ / λᵢ over the kept modes (3×3,
//! m/N). Added at a contact, it makes the static stiffness felt through the modal model
//! equal that of the full FEM model (DESIGN §2.2). [K⁻¹]ᵥᵥ comes from block solves with
//! the Cholesky factor of K: three unit right-hand sides per node, many nodes per solve.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::reborrow::ReborrowMut;
use faer::Mat;
use serde::{Deserialize, Serialize};

use super::{ModalBasis, ModalError};
use crate::fem::{Factor, FemSystem};
use crate::Mat3;

/// Residual-flexibility blocks of a set of nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResidualFlexibility {
    /// Mesh node indices, ascending.
    pub nodes: Vec<usize>,
    /// R(v) for each node (m/N), symmetric; zero for fixed nodes.
    pub blocks: Vec<Mat3>,
}

impl ResidualFlexibility {
    /// The block of mesh node `node`, if it is covered.
    pub fn block(&self, node: usize) -> Option<&Mat3> {
        self.nodes
            .binary_search(&node)
            .ok()
            .map(|i| &self.blocks[i])
    }
}

/// Right-hand-side columns per block solve, at most (memory n × this × 8 bytes).
const MAX_BLOCK_COLUMNS: usize = 384;
/// Memory budget of one right-hand-side block (bytes).
const BLOCK_BYTES: usize = 128 << 20;

/// Residual-flexibility blocks for `nodes` (ascending mesh node indices). `factor` must
/// factorise K itself (σ = 0); `basis` must not contain rigid modes.
/// `progress(done, total)` is called after each block of nodes.
pub fn residual_flexibility(
    system: &FemSystem,
    factor: &Factor,
    basis: &ModalBasis,
    nodes: &[usize],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<ResidualFlexibility, ModalError> {
    if let Some(i) = basis.rigid.iter().position(|&r| r) {
        return Err(ModalError::NotClamped(format!(
            "mode {i} is a rigid-body mode, so K is singular; fix some nodes"
        )));
    }
    let n = system.n_free();
    if factor.n() != n {
        return Err(ModalError::Request(format!(
            "factor has {} rows, system has {n} free DOFs",
            factor.n()
        )));
    }
    if let Some(&bad) = nodes.iter().find(|&&v| v >= system.dofs.n_nodes()) {
        return Err(ModalError::Request(format!(
            "node {bad} out of range (mesh has {} nodes)",
            system.dofs.n_nodes()
        )));
    }
    if let Some(w) = nodes.windows(2).find(|w| w[0] >= w[1]) {
        return Err(ModalError::Request(format!(
            "residual-flexibility nodes must be strictly ascending ({} then {})",
            w[0], w[1]
        )));
    }
    let free: Vec<usize> = nodes
        .iter()
        .copied()
        .filter(|&v| !system.dofs.is_fixed(v))
        .collect();
    let per_block = (BLOCK_BYTES / (8 * 3 * n.max(1))).clamp(1, MAX_BLOCK_COLUMNS / 3);
    let mut mem = MemBuffer::new(factor.solve_scratch(3 * per_block));
    let mut rhs = Mat::<f64>::zeros(n, 3 * per_block);
    let mut direct = Vec::with_capacity(free.len());
    for chunk in free.chunks(per_block) {
        let mut b = rhs.as_mut().subcols_mut(0, 3 * chunk.len());
        b.fill(0.0);
        for (c, &v) in chunk.iter().enumerate() {
            let d = system.dofs.node_dofs(v).expect("free node");
            for a in 0..3 {
                b[(d[a], 3 * c + a)] = 1.0;
            }
        }
        factor.solve_in_place_with_stack(b.rb_mut(), MemStack::new(&mut mem));
        for (c, &v) in chunk.iter().enumerate() {
            let d = system.dofs.node_dofs(v).expect("free node");
            direct.push(Mat3::from_fn(|r, s| b[(d[r], 3 * c + s)]));
        }
        progress(direct.len(), free.len());
    }
    let mut direct = direct.into_iter();
    let blocks = nodes
        .iter()
        .map(|&v| {
            if system.dofs.is_fixed(v) {
                return Mat3::zeros();
            }
            let full = direct.next().expect("one direct block per free node");
            let w = basis.node_rows(v);
            let modal: Mat3 = (0..basis.n_modes())
                .map(|i| {
                    let wi = crate::Vec3::new(w[(0, i)], w[(1, i)], w[(2, i)]);
                    wi * wi.transpose() / basis.eigenvalues[i]
                })
                .sum();
            let r = full - modal;
            (r + r.transpose()) * 0.5
        })
        .collect();
    Ok(ResidualFlexibility {
        nodes: nodes.to_vec(),
        blocks,
    })
}
