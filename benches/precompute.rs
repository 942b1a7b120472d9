//! Offline precompute: modes of bunny.msh, a box, and the default block with element and
//! nodal pressure.
//!
//! The 32×32×32 box (104k free DOFs) takes tens of seconds per run, too long for
//! criterion's 10 samples; it is measured with `/usr/bin/time -v palpa modes box:32x32x32`
//! (see docs/benchmarks.md). `box_16` tracks the same pipeline at 1/8 the size.

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use faer::Par;
use palpa::fem::{self, Axis, DofMap, Factor, Fix, Material, MaterialMap, Ordering, Pressure};
use palpa::mesh::{generate::box_mesh, TetMesh};
use palpa::modal::{self, PrecomputeParams};
use palpa::Vec3;

fn bunny() -> TetMesh {
    let mut mesh = palpa::mesh::load(Path::new("tests/data/bunny.msh")).expect("bunny.msh");
    mesh.scale(0.01);
    mesh
}

fn tissue() -> MaterialMap {
    MaterialMap::uniform(Material::new(5.0e4, 0.45, 1000.0).expect("valid material"))
}

fn modes_only() -> PrecomputeParams {
    PrecomputeParams {
        n_modes: 40,
        ..Default::default()
    }
}

/// Assembly + factorisation + eigen solve for 40 modes (target ≤ 1 s).
fn bunny_40_modes(c: &mut Criterion) {
    let mesh = bunny();
    let fixes = [Fix::Below {
        axis: Axis::Y,
        dist: 0.005,
    }];
    let mut g = c.benchmark_group("precompute");
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    g.bench_function("bunny_40_modes", |b| {
        b.iter(|| {
            modal::precompute(
                &mesh,
                &tissue(),
                &fixes,
                Pressure::Element,
                &modes_only(),
                &mut |_| {},
            )
            .unwrap()
        })
    });
    let cube = box_mesh(Vec3::new(0.1, 0.1, 0.1), [16, 16, 16]).unwrap();
    let face = [Fix::Below {
        axis: Axis::Y,
        dist: 1e-4,
    }];
    g.measurement_time(Duration::from_secs(40));
    g.bench_function("box_16_40_modes", |b| {
        b.iter(|| {
            modal::precompute(
                &cube,
                &tissue(),
                &face,
                Pressure::Element,
                &modes_only(),
                &mut |_| {},
            )
            .unwrap()
        })
    });
    g.finish();
}

/// The default block's mesh (20×20×8 cells, 10,584 free DOFs): assembly and 40 modes with
/// element and with nodal-averaged pressure, the denser K's cost.
fn pressure_40_modes(c: &mut Criterion) {
    let mesh = box_mesh(Vec3::new(0.1, 0.1, 0.04), [20, 20, 8]).unwrap();
    let per_tet = tissue().per_tet(&mesh).unwrap();
    let fixed = fem::fixed_nodes(
        &mesh,
        &[Fix::Below {
            axis: Axis::Z,
            dist: 1e-9,
        }],
    )
    .unwrap();
    let mut g = c.benchmark_group("precompute");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for (name, pressure) in [("element", Pressure::Element), ("nodal", Pressure::Nodal)] {
        let assemble =
            || fem::assemble_with(&mesh, &per_tet, DofMap::new(&fixed).unwrap(), pressure).unwrap();
        let system = assemble();
        let factor = Factor::for_system(&system, 0.0, Ordering::Auto, Par::Seq).unwrap();
        println!(
            "{name} pressure: K has {} nonzeros, its Cholesky factor L {}",
            system.k.compute_nnz(),
            factor.nnz_l()
        );
        g.bench_function(format!("default_block_40_modes_{name}_pressure"), |b| {
            b.iter(|| modal::precompute_assembled(&assemble(), &modes_only(), &mut |_| {}).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bunny_40_modes, pressure_40_modes);
criterion_main!(benches);
