use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use faer::Par;
use palpa::condensed::ComplianceColumns;
use palpa::fem::{assemble, fixed_nodes, Axis, DofMap, Factor, Fix, Material, MaterialMap, Ordering};
use palpa::modal::{compute_modes, ModalParams, ModalRuntime, Timings};
use palpa::model::{PointConstraint, TissueModel};
use palpa::Vec3;
fn main() {
    let mut mesh = palpa::mesh::load(Path::new("tests/data/bunny.msh")).unwrap();
    mesh.scale(0.01);
    let materials = MaterialMap::uniform(Material::new(50e3, 0.45, 1000.0).unwrap()).per_tet(&mesh).unwrap();
    let fixed = fixed_nodes(&mesh, &[Fix::Below { axis: Axis::Y, dist: 0.005 }]).unwrap();
    let system = assemble(&mesh, &materials, DofMap::new(&fixed).unwrap()).unwrap();
    let (basis, _, _) = compute_modes(&system, 40, Ordering::default(), &mut Timings::default()).unwrap();
    let factor = Arc::new(Factor::for_system(&system, 0.0, Ordering::default(), Par::Seq).unwrap());
    let b = mesh.boundary();
    let columns = ComplianceColumns::new(factor, system.dofs.clone(), 256).unwrap();
    let mut model = ModalRuntime::new(mesh.nodes.clone(), b.triangles.clone(), b.nodes.clone(), &basis.eigenvalues, basis.shapes.as_ref(), ModalParams { max_rows: 192, ..ModalParams::default() }, Some(columns)).unwrap();
    let step = b.triangles.len() / 80;
    let holds: Vec<PointConstraint> = (0..b.triangles.len()).step_by(step).map(|t| b.triangles[t])
        .filter(|tri| tri.iter().all(|&v| !system.dofs.is_fixed(v))).take(64)
        .map(|tri| { let p = (mesh.nodes[tri[0]] + mesh.nodes[tri[1]] + mesh.nodes[tri[2]]) / 3.0;
            PointConstraint::hold(tri, [1.0 / 3.0; 3], p + Vec3::new(0.0, -5e-4, 0.0)) }).collect();
    let mut f = vec![Vec3::zeros(); 64];
    model.advance(5e-3, &holds, &mut f).unwrap();
    model.columns().unwrap().complete_all();
    let n = 300;
    let t = Instant::now();
    for _ in 0..n { model.advance(5e-3, &holds, &mut f).unwrap(); }
    println!("steady {:.1} us", t.elapsed().as_secs_f64() * 1e6 / n as f64);
    let mut other = holds.clone();
    for h in other.iter_mut() { h.weights = [0.5, 0.25, 0.25]; }
    model.advance(5e-3, &other, &mut f).unwrap();
    model.columns().unwrap().complete_all();
    let n = 60;
    let t = Instant::now();
    for i in 0..n { model.advance(5e-3, if i % 2 == 0 { &holds } else { &other }, &mut f).unwrap(); }
    println!("changing set {:.1} us", t.elapsed().as_secs_f64() * 1e6 / n as f64);
}
