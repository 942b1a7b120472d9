//! Fill-reducing orderings on the node graph.
//!
//! The stiffness matrix has a 3×3 block per pair of neighbouring nodes, so orderings are
//! computed on the (9× smaller) graph of free nodes and expanded to DOFs, which keeps
//! each node's three DOFs together and lets the supernodal Cholesky form dense blocks.
//!
//! Geometric nested dissection is written here because no maintained Rust crate does it
//! (METIS bindings need a C toolchain and a system library); node coordinates make a
//! simple recursive coordinate bisection effective on 3-D meshes.

use crate::mesh::TetMesh;
use crate::Vec3;

use super::DofMap;

/// Adjacency of free nodes (two nodes are adjacent when they share a tetrahedron),
/// in compressed rows, indices are free-node indices, sorted, self excluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeGraph {
    /// Row start of each free node in `adj` (length n + 1).
    pub offsets: Vec<usize>,
    /// Concatenated neighbour lists.
    pub adj: Vec<usize>,
}

impl NodeGraph {
    /// Number of free nodes.
    pub fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Neighbours of free node `i`, ascending.
    pub fn neighbours(&self, i: usize) -> &[usize] {
        &self.adj[self.offsets[i]..self.offsets[i + 1]]
    }
}

/// The graph of free nodes of `mesh` under `dofs`.
pub fn node_graph(mesh: &TetMesh, dofs: &DofMap) -> NodeGraph {
    let n = dofs.free_nodes().len();
    let mut lists: Vec<Vec<usize>> = vec![Vec::new(); n];
    for tet in &mesh.tets {
        let free = tet.map(|v| dofs.free_node_index(v));
        for a in free.iter().flatten() {
            for b in free.iter().flatten() {
                if a != b {
                    lists[*a].push(*b);
                }
            }
        }
    }
    let mut offsets = Vec::with_capacity(n + 1);
    let mut adj = Vec::new();
    offsets.push(0);
    for mut l in lists {
        l.sort_unstable();
        l.dedup();
        adj.extend_from_slice(&l);
        offsets.push(adj.len());
    }
    NodeGraph { offsets, adj }
}

/// Subsets at most this large are not split further.
const LEAF_SIZE: usize = 8;

/// Geometric nested dissection of the free nodes: split the node set at the median
/// coordinate of its longest bounding-box axis (nodes on that median coordinate go to the
/// upper side, so a grid is cut between two node planes), take as separator the nodes of
/// whichever side that touch the other side, choosing the smaller layer, order both
/// remaining parts recursively and the separator last.
/// Returns the new order as free-node indices (`order[new] = old`).
/// `pos` holds the position of each free node (m).
pub fn nested_dissection(pos: &[Vec3], graph: &NodeGraph) -> Vec<usize> {
    let mut order = Vec::with_capacity(pos.len());
    let mut side = vec![Side::Done; pos.len()];
    let mut all: Vec<usize> = (0..pos.len()).collect();
    dissect(&mut all, pos, graph, &mut side, &mut order);
    order
}

/// Where a node stands during one bisection step.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Outside the set being split (ordered already or in another branch).
    Done,
    Lower,
    Upper,
}

fn dissect(
    set: &mut [usize],
    pos: &[Vec3],
    graph: &NodeGraph,
    side: &mut [Side],
    order: &mut Vec<usize>,
) {
    if set.len() <= LEAF_SIZE {
        order.extend_from_slice(set);
        return;
    }
    let mut lo = Vec3::repeat(f64::INFINITY);
    let mut hi = Vec3::repeat(f64::NEG_INFINITY);
    for &i in set.iter() {
        lo = lo.inf(&pos[i]);
        hi = hi.sup(&pos[i]);
    }
    let axis = (hi - lo).imax();
    let coord = |i: usize| pos[i][axis];
    let mid = set.len() / 2;
    set.select_nth_unstable_by(mid, |&a, &b| coord(a).total_cmp(&coord(b)));
    let median = coord(set[mid]);
    // Move every node below the median to the front (select_nth only orders around `mid`).
    let mut n_lower = 0;
    for k in 0..set.len() {
        if coord(set[k]) < median {
            set.swap(n_lower, k);
            n_lower += 1;
        }
    }
    if n_lower == 0 {
        // All of the lower half sits on the median coordinate: split by index instead.
        n_lower = mid;
    }
    for (k, &i) in set.iter().enumerate() {
        side[i] = if k < n_lower {
            Side::Lower
        } else {
            Side::Upper
        };
    }
    let touches = |i: usize, other: Side, side: &[Side]| {
        graph.neighbours(i).iter().any(|&j| side[j] == other)
    };
    let lower_layer = set[..n_lower]
        .iter()
        .filter(|&&i| touches(i, Side::Upper, side))
        .count();
    let upper_layer = set[n_lower..]
        .iter()
        .filter(|&&i| touches(i, Side::Lower, side))
        .count();
    let (cut_side, other) = if lower_layer <= upper_layer {
        (Side::Lower, Side::Upper)
    } else {
        (Side::Upper, Side::Lower)
    };
    // Separator nodes to the back, keeping the lower part in front of the upper part.
    let separator: Vec<usize> = set
        .iter()
        .copied()
        .filter(|&i| side[i] == cut_side && touches(i, other, side))
        .collect();
    let mut kept = 0;
    let mut n_lower_kept = 0;
    for k in 0..set.len() {
        let i = set[k];
        let in_separator = side[i] == cut_side && touches(i, other, side);
        if !in_separator {
            if side[i] == Side::Lower {
                n_lower_kept += 1;
            }
            set.swap(kept, k);
            kept += 1;
        }
    }
    for &i in set.iter() {
        side[i] = Side::Done;
    }
    let (lower, rest) = set[..kept].split_at_mut(n_lower_kept);
    dissect(lower, pos, graph, side, order);
    dissect(rest, pos, graph, side, order);
    order.extend_from_slice(&separator);
}

/// Expands a free-node order (`order[new] = old`) to the DOF order that keeps each node's
/// x, y, z together.
pub fn expand_node_permutation(order: &[usize]) -> Vec<usize> {
    order
        .iter()
        .flat_map(|&j| [3 * j, 3 * j + 1, 3 * j + 2])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::generate::box_mesh;

    #[test]
    fn nested_dissection_is_a_permutation() {
        let mesh = box_mesh(Vec3::new(1.0, 1.0, 1.0), [7, 5, 6]).unwrap();
        let mut fixed = vec![false; mesh.nodes.len()];
        fixed[0] = true;
        let dofs = DofMap::new(&fixed).unwrap();
        let graph = node_graph(&mesh, &dofs);
        let pos: Vec<Vec3> = dofs.free_nodes().iter().map(|&n| mesh.nodes[n]).collect();
        let mut order = nested_dissection(&pos, &graph);
        assert_eq!(order.len(), mesh.nodes.len() - 1);
        order.sort_unstable();
        assert!(order.iter().enumerate().all(|(i, &o)| i == o));
        // Interior Kuhn-box node: 14 neighbours.
        assert!((0..graph.n()).map(|i| graph.neighbours(i).len()).max() == Some(14));
    }

    #[test]
    fn top_separator_of_a_grid_is_one_node_plane() {
        let mesh = box_mesh(Vec3::new(1.0, 1.0, 1.0), [8, 8, 8]).unwrap();
        let dofs = DofMap::new(&vec![false; mesh.nodes.len()]).unwrap();
        let graph = node_graph(&mesh, &dofs);
        let pos: Vec<Vec3> = dofs.free_nodes().iter().map(|&n| mesh.nodes[n]).collect();
        let order = nested_dissection(&pos, &graph);
        // 9 × 9 nodes per plane; the last ones ordered are one plane x = const.
        let top = &order[order.len() - 81..];
        let x = pos[top[0]].x;
        assert!(top.iter().all(|&i| pos[i].x == x));
        assert!(order[..order.len() - 81].iter().all(|&i| pos[i].x != x));
    }
}
