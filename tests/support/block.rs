//! The clamped tissue block the tests share: by default 6 × 6 × 3 cm, 6 × 6 × 3 cells of
//! six tetrahedra, E 5 kPa, ν 0.45, ρ 1000 kg/m³, bottom face (z = 0) fixed; any mesh
//! and materials clamped the same way through [`Block::clamped`].

use std::sync::Arc;

use faer::Par;
use palpa::fem::{
    assemble, fixed_nodes, Axis, ComplianceColumns, DofMap, Factor, FemSystem, Fix, Material,
    MaterialMap, Ordering,
};
use palpa::mesh::generate::box_mesh;
use palpa::mesh::TetMesh;
use palpa::tissue::TissueGeometry;
use palpa::Vec3;

/// Block size (m).
pub const SIZE: Vec3 = Vec3::new(0.06, 0.06, 0.03);

/// The default tissue: E 5 kPa, ν 0.45, ρ 1000 kg/m³.
pub fn tissue() -> Material {
    Material::new(5e3, 0.45, 1000.0).unwrap()
}

/// The fixed bottom face: every node at z ≤ 1 nm.
pub const BOTTOM: Fix = Fix::Below {
    axis: Axis::Z,
    dist: 1e-9,
};

/// A block mesh, its FEM system and its boundary.
pub struct Block {
    pub mesh: TetMesh,
    pub system: FemSystem,
    pub triangles: Vec<[usize; 3]>,
    pub surface_nodes: Vec<usize>,
}

/// Builds the default block.
pub fn block() -> Block {
    Block::clamped(
        box_mesh(SIZE, [6, 6, 3]).unwrap(),
        &MaterialMap::uniform(tissue()),
        BOTTOM,
    )
}

impl Block {
    /// `mesh` of `materials` with the nodes `fix` selects fixed: its FEM system and
    /// boundary.
    pub fn clamped(mesh: TetMesh, materials: &MaterialMap, fix: Fix) -> Block {
        let per_tet = materials.per_tet(&mesh).unwrap();
        let fixed = fixed_nodes(&mesh, &[fix]).unwrap();
        let system = assemble(&mesh, &per_tet, DofMap::new(&fixed).unwrap()).unwrap();
        let b = mesh.boundary();
        Block {
            mesh,
            system,
            triangles: b.triangles,
            surface_nodes: b.nodes,
        }
    }

    /// The block's rest shape and surface, for a backend.
    pub fn geometry(&self) -> TissueGeometry {
        TissueGeometry {
            rest: self.mesh.nodes.clone(),
            triangles: self.triangles.clone(),
            surface_nodes: self.surface_nodes.clone(),
        }
    }

    /// The sparse factor of K.
    pub fn factor(&self) -> Arc<Factor> {
        Arc::new(Factor::for_system(&self.system, 0.0, Ordering::default(), Par::Seq).unwrap())
    }

    /// A K⁻¹ column cache of `cache` nodes over the factor of K.
    pub fn columns(&self, cache: usize) -> ComplianceColumns {
        ComplianceColumns::new(
            self.factor(),
            self.system.dofs.clone(),
            &self.system.positions,
            cache,
        )
        .unwrap()
    }
}
