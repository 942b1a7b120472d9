//! The rest shape every backend is built on: every node's rest position and the
//! outward surface that contact is computed against.

use crate::mesh::TetMesh;
use crate::Vec3;

/// Rest positions of all mesh nodes (m), the outward surface triangles (node indices)
/// and the sorted surface nodes.
#[derive(Clone, Debug)]
pub struct TissueGeometry {
    /// Rest positions (m).
    pub rest: Vec<Vec3>,
    /// Outward surface triangles (mesh node indices).
    pub triangles: Vec<[usize; 3]>,
    /// Sorted mesh nodes on the surface.
    pub surface_nodes: Vec<usize>,
}

impl TissueGeometry {
    /// The rest shape and boundary surface of `mesh`.
    pub fn from_mesh(mesh: &TetMesh) -> Self {
        let boundary = mesh.boundary();
        Self {
            rest: mesh.nodes.clone(),
            triangles: boundary.triangles,
            surface_nodes: boundary.nodes,
        }
    }
}
