//! The step cost of loads whose columns are still being completed.

use std::sync::Arc;

use faer::{Mat, Par};

use super::{ComplianceColumns, EXACT_PENDING};
use crate::fem::{
    assemble, fixed_nodes, Axis, DofMap, Factor, Fix, Material, MaterialMap, Ordering,
};
use crate::mesh::generate::box_mesh;
use crate::Vec3;

/// However many incomplete nodes a sliding contact left in the cache (here every one of
/// the 121 top nodes, one query each, as the worker fell behind), one `add_field` of the
/// contact's loads makes at most [`EXACT_PENDING`] path passes beside the loads' own,
/// and its field equals a direct solve of K u = F at every node it calls exact (and
/// leaves the incomplete loads out elsewhere). Before the bound it dotted all 121.
#[test]
fn a_field_of_incomplete_loads_costs_bounded_path_passes_and_is_exact_where_it_says() {
    let mesh = box_mesh(Vec3::new(0.06, 0.06, 0.03), [10, 10, 3]).unwrap();
    let materials = MaterialMap::uniform(Material::new(5e3, 0.45, 1000.0).unwrap());
    let per_tet = materials.per_tet(&mesh).unwrap();
    let bottom = Fix::Below {
        axis: Axis::Z,
        dist: 1e-9,
    };
    let fixed = fixed_nodes(&mesh, &[bottom]).unwrap();
    let system = assemble(&mesh, &per_tet, DofMap::new(&fixed).unwrap()).unwrap();
    let factor = Arc::new(Factor::for_system(&system, 0.0, Ordering::default(), Par::Seq).unwrap());
    let mut cols =
        ComplianceColumns::new(factor.clone(), system.dofs.clone(), &system.positions, 1000)
            .unwrap();
    let top: Vec<usize> = (0..mesh.nodes.len())
        .filter(|&v| mesh.nodes[v].z > 0.03 - 1e-9)
        .collect();
    assert_eq!(top.len(), 121);
    for &v in &top {
        cols.cache([v]).unwrap();
    }
    assert_eq!(cols.pending(), top.len());
    let loads: Vec<(usize, Vec3)> = top[top.len() - 3..]
        .iter()
        .map(|&v| (v, Vec3::new(0.01, 0.0, -0.1)))
        .collect();
    let nodes: Vec<usize> = (0..mesh.nodes.len()).collect();
    let mut got = vec![Vec3::zeros(); nodes.len()];
    let before = cols.path_passes();
    cols.add_field(&loads, &nodes, &mut got);
    let passes = cols.path_passes() - before;
    assert!(
        passes <= (EXACT_PENDING + loads.len()) as u64,
        "{passes} path passes for {} incomplete nodes",
        top.len()
    );

    let dofs = &system.dofs;
    let mut u = Mat::<f64>::zeros(factor.n(), 1);
    for &(v, f) in &loads {
        let d = dofs.node_dofs(v).unwrap();
        for a in 0..3 {
            u[(d[a], 0)] += f[a];
        }
    }
    factor.solve_in_place(u.as_mut()).unwrap();
    let want = |v: usize| {
        dofs.node_dofs(v).map_or(Vec3::zeros(), |d| {
            Vec3::new(u[(d[0], 0)], u[(d[1], 0)], u[(d[2], 0)])
        })
    };
    let scale = nodes.iter().map(|&v| want(v).norm()).fold(0.0, f64::max);
    let exact: Vec<usize> = nodes
        .iter()
        .copied()
        .filter(|&v| cols.field_exact_at(v))
        .collect();
    assert_eq!(exact.len(), EXACT_PENDING);
    for &(v, _) in &loads {
        assert!(cols.field_exact_at(v), "a load's own node {v} is exact");
    }
    for (&v, g) in nodes.iter().zip(&got) {
        let expected = if cols.field_exact_at(v) {
            want(v)
        } else {
            Vec3::zeros()
        };
        assert!(
            (g - expected).norm() <= 1e-9 * scale,
            "node {v}: {g:?} against {expected:?}"
        );
    }
}
