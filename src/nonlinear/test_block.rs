//! The small tissue block the nonlinear module's unit tests press.

use std::sync::Arc;

use super::{Hyperelastic, LawKind, NonlinearStatics};
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
