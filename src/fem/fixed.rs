//! Fixed (Dirichlet) nodes and the numbering of the free degrees of freedom.

use serde::{Deserialize, Serialize};

use super::FemError;
use crate::mesh::TetMesh;
use crate::Vec3;

/// A coordinate axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Axis {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl Axis {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::str::FromStr for Axis {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "x" => Ok(Axis::X),
            "y" => Ok(Axis::Y),
            "z" => Ok(Axis::Z),
            _ => Err(format!("axis must be x, y or z, got {s:?}")),
        }
    }
}

/// A rule selecting nodes to fix (all three displacement components held at zero).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Fix {
    /// Nodes with coordinate `axis` ≤ (minimum over the mesh) + `dist` (m),
    /// e.g. "y ≤ min + 5 mm" for an object resting on a table.
    Below {
        /// Axis to test.
        axis: Axis,
        /// Distance above the lowest node (m), ≥ 0.
        dist: f64,
    },
    /// Nodes inside the axis-aligned box [min, max] (m).
    InBox {
        /// Lower corner (m).
        min: Vec3,
        /// Upper corner (m).
        max: Vec3,
    },
    /// Nodes of any tetrahedron in this region (physical group).
    Region(i32),
    /// Explicit node indices.
    Nodes(Vec<usize>),
}

/// Which nodes the rules fix (their union), one flag per mesh node.
pub fn fixed_nodes(mesh: &TetMesh, rules: &[Fix]) -> Result<Vec<bool>, FemError> {
    let mut fixed = vec![false; mesh.nodes.len()];
    for rule in rules {
        match rule {
            Fix::Below { axis, dist } => {
                if !(dist.is_finite() && *dist >= 0.0) {
                    return Err(FemError::Fix(format!(
                        "distance above the minimum must be finite and >= 0, got {dist}"
                    )));
                }
                let a = axis.index();
                let (lo, _) = mesh.bounds();
                for (f, p) in fixed.iter_mut().zip(&mesh.nodes) {
                    *f |= p[a] <= lo[a] + dist;
                }
            }
            Fix::InBox { min, max } => {
                for (f, p) in fixed.iter_mut().zip(&mesh.nodes) {
                    *f |= (0..3).all(|i| p[i] >= min[i] && p[i] <= max[i]);
                }
            }
            Fix::Region(id) => {
                let mut found = false;
                for (tet, _) in mesh
                    .tets
                    .iter()
                    .zip(&mesh.regions)
                    .filter(|(_, r)| *r == id)
                {
                    found = true;
                    for &n in tet {
                        fixed[n] = true;
                    }
                }
                if !found {
                    return Err(FemError::Fix(format!("no tetrahedron has region id {id}")));
                }
            }
            Fix::Nodes(list) => {
                for &n in list {
                    *fixed.get_mut(n).ok_or_else(|| {
                        FemError::Fix(format!(
                            "node {n} out of range (mesh has {} nodes)",
                            mesh.nodes.len()
                        ))
                    })? = true;
                }
            }
        }
    }
    Ok(fixed)
}

/// Numbering of the free degrees of freedom. Fixed nodes are removed before anything
/// else; free node j (in mesh order among free nodes) owns DOFs 3j, 3j+1, 3j+2 (x, y, z).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DofMap {
    /// Free-node index of each mesh node, `None` when fixed.
    free_index: Vec<Option<usize>>,
    /// Mesh node of each free node.
    free_nodes: Vec<usize>,
}

impl DofMap {
    /// Numbers the free DOFs; an error if every node is fixed.
    pub fn new(fixed: &[bool]) -> Result<Self, FemError> {
        let mut free_nodes = Vec::new();
        let free_index = fixed
            .iter()
            .enumerate()
            .map(|(n, &f)| {
                (!f).then(|| {
                    free_nodes.push(n);
                    free_nodes.len() - 1
                })
            })
            .collect();
        if free_nodes.is_empty() {
            return Err(FemError::AllFixed(fixed.len()));
        }
        Ok(Self {
            free_index,
            free_nodes,
        })
    }

    /// Number of mesh nodes.
    pub fn n_nodes(&self) -> usize {
        self.free_index.len()
    }

    /// Number of free DOFs (3 × free nodes).
    pub fn n_free(&self) -> usize {
        3 * self.free_nodes.len()
    }

    /// Number of fixed nodes.
    pub fn n_fixed_nodes(&self) -> usize {
        self.free_index.len() - self.free_nodes.len()
    }

    /// Whether mesh node `node` is fixed.
    pub fn is_fixed(&self, node: usize) -> bool {
        self.free_index[node].is_none()
    }

    /// Mesh nodes that are free, in DOF order.
    pub fn free_nodes(&self) -> &[usize] {
        &self.free_nodes
    }

    /// Free-node index of mesh node `node` (`None` when fixed).
    pub fn free_node_index(&self, node: usize) -> Option<usize> {
        self.free_index[node]
    }

    /// Free-DOF index of component `axis` (0 = x, 1 = y, 2 = z) of mesh node `node`,
    /// `None` when the node is fixed.
    pub fn dof(&self, node: usize, axis: usize) -> Option<usize> {
        self.free_index[node].map(|j| 3 * j + axis)
    }

    /// The three free-DOF indices (x, y, z) of mesh node `node`, `None` when fixed.
    pub fn node_dofs(&self, node: usize) -> Option<[usize; 3]> {
        self.free_index[node].map(|j| [3 * j, 3 * j + 1, 3 * j + 2])
    }

    /// Fixed mesh nodes, ascending.
    pub fn fixed_nodes(&self) -> Vec<usize> {
        (0..self.n_nodes()).filter(|&n| self.is_fixed(n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::generate::box_mesh;

    #[test]
    fn rules_select_the_right_nodes() {
        let mesh = box_mesh(Vec3::new(1.0, 2.0, 1.0), [2, 4, 2]).unwrap();
        let below = fixed_nodes(
            &mesh,
            &[Fix::Below {
                axis: Axis::Y,
                dist: 0.6,
            }],
        )
        .unwrap();
        // Layers y = 0 and y = 0.5 of a 3×5×3 grid.
        assert_eq!(below.iter().filter(|&&f| f).count(), 18);
        let boxed = fixed_nodes(
            &mesh,
            &[Fix::InBox {
                min: Vec3::new(-1.0, 1.9, -1.0),
                max: Vec3::new(2.0, 3.0, 0.1),
            }],
        )
        .unwrap();
        assert_eq!(boxed.iter().filter(|&&f| f).count(), 3);
        let listed = fixed_nodes(&mesh, &[Fix::Nodes(vec![4, 7])]).unwrap();
        assert!(listed[4] && listed[7] && listed.iter().filter(|&&f| f).count() == 2);
        assert!(fixed_nodes(&mesh, &[Fix::Nodes(vec![999])])
            .unwrap_err()
            .to_string()
            .contains("999"));
        assert!(fixed_nodes(&mesh, &[Fix::Region(5)])
            .unwrap_err()
            .to_string()
            .contains("5"));
        let all_region = fixed_nodes(&mesh, &[Fix::Region(0)]).unwrap();
        assert!(all_region.iter().all(|&f| f));
    }

    #[test]
    fn dof_map_skips_fixed_nodes() {
        let map = DofMap::new(&[false, true, false]).unwrap();
        assert_eq!(map.n_free(), 6);
        assert_eq!(map.dof(2, 1), Some(4));
        assert_eq!(map.node_dofs(1), None);
        assert_eq!(map.free_nodes(), &[0, 2]);
        assert!(matches!(
            DofMap::new(&[true, true]),
            Err(FemError::AllFixed(2))
        ));
    }
}
