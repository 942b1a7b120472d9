//! The small tissue block the nonlinear module's unit tests press.

use std::sync::Arc;

use super::{Hyperelastic, LawKind, NonlinearStatics, ReducedStatics};
use crate::fem::Material;
use crate::mesh::generate::box_mesh;
use crate::mesh::TetMesh;
use crate::Vec3;

/// A 2 × 2 × 1 cm block of `cells` boxes (6 tetrahedra each), E = 30 kPa, ν = 0.45,
/// ρ = 1000 kg/m³, every element of law `kind`, its base fixed: the mesh, its statics
/// and the top node nearest the centre.
pub(super) fn fixed_base_block(
    cells: [usize; 3],
    kind: LawKind,
) -> (TetMesh, Arc<NonlinearStatics>, usize) {
    let mesh = box_mesh(Vec3::new(0.02, 0.02, 0.01), cells).expect("mesh");
    let material = Material::new(3.0e4, 0.45, 1000.0).expect("material");
    let law = Hyperelastic::new(kind, &material);
    let (lowest, highest) = mesh
        .nodes
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x.z), b.max(x.z)));
    let prescribed = mesh.nodes.iter().flat_map(|x| [x.z == lowest; 3]).collect();
    let statics = Arc::new(
        NonlinearStatics::new(&mesh, vec![law; mesh.tets.len()], prescribed).expect("statics"),
    );
    let centre = mesh.nodes.iter().fold(Vec3::zeros(), |a, x| a + x) / mesh.nodes.len() as f64;
    let top = (0..mesh.nodes.len())
        .filter(|&v| mesh.nodes[v].z == highest)
        .min_by(|&a, &b| {
            let off = |v: usize| (mesh.nodes[v].xy() - centre.xy()).norm();
            off(a).total_cmp(&off(b))
        })
        .expect("a top node");
    (mesh, statics, top)
}

/// [`fixed_base_block`] reduced to three shapes: the responses to unit point loads near
/// the top centre along three axes (N). Also returns the mesh and that top node.
pub(super) fn block_with_three_shapes(
    cells: [usize; 3],
    kind: LawKind,
) -> (TetMesh, ReducedStatics, usize) {
    let (mesh, statics, top) = fixed_base_block(cells, kind);
    let mut reduced = ReducedStatics::new(statics, 8).expect("reduced");
    let n = 3 * mesh.nodes.len();
    for d in [3 * top + 2, 3 * (top - 1), 3 * (top + 1) + 1] {
        let mut force = vec![0.0; n];
        force[d] = 1.0;
        reduced.add_shape(&force).expect("shape");
    }
    (mesh, reduced, top)
}
