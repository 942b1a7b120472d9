//! The clamped tissue block the runtime-backend tests share: 6 × 6 × 3 cm, 6 × 6 × 3
//! cells of six tetrahedra, E 5 kPa, ν 0.45, ρ 1000 kg/m³, bottom face (z = 0) fixed.

use palpa::fem::{assemble, fixed_nodes, Axis, DofMap, FemSystem, Fix, Material, MaterialMap};
use palpa::mesh::generate::box_mesh;
use palpa::mesh::TetMesh;
use palpa::Vec3;

/// Block size (m).
pub const SIZE: Vec3 = Vec3::new(0.06, 0.06, 0.03);

/// The block mesh, its FEM system and its boundary.
pub struct Block {
    pub mesh: TetMesh,
    pub system: FemSystem,
    pub triangles: Vec<[usize; 3]>,
    pub surface_nodes: Vec<usize>,
}

/// Builds the block.
pub fn block() -> Block {
    let mesh = box_mesh(SIZE, [6, 6, 3]).unwrap();
    let materials = MaterialMap::uniform(Material::new(5e3, 0.45, 1000.0).unwrap())
        .per_tet(&mesh)
        .unwrap();
    let fixed = fixed_nodes(
        &mesh,
        &[Fix::Below {
            axis: Axis::Z,
            dist: 1e-9,
        }],
    )
    .unwrap();
    let system = assemble(&mesh, &materials, DofMap::new(&fixed).unwrap()).unwrap();
    let b = mesh.boundary();
    Block {
        mesh,
        system,
        triangles: b.triangles,
        surface_nodes: b.nodes,
    }
}
