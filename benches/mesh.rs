//! Mesh pipeline speed: reading the bunny, lattice tetrahedralisation of the bunny surface
//! at 2 mm and 1 mm cells, and embedding the bunny surface in the bunny tetrahedra.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use palpa::mesh::embed::Embedding;
use palpa::mesh::lattice::{fill_surface, LatticeOptions};
use palpa::mesh::{self, surface};

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn bench_mesh(c: &mut Criterion) {
    let msh = data("bunny.msh");
    c.bench_function("read bunny.msh (15k tets)", |b| {
        b.iter(|| mesh::load(black_box(&msh)).unwrap())
    });
    let mut s = surface::load_surface(&data("bunny.obj")).unwrap();
    s.scale(0.01);
    let mut group = c.benchmark_group("lattice bunny");
    group.sample_size(10);
    for cell in [0.002, 0.001] {
        group.bench_function(format!("cell {} mm", cell * 1e3), |b| {
            b.iter(|| fill_surface(black_box(&s), cell, LatticeOptions::default()).unwrap())
        });
    }
    group.finish();
    let tets = mesh::load(&msh).unwrap();
    let render = surface::load_surface(&data("bunny.obj")).unwrap();
    c.bench_function("embed 1839 vertices in 15k tets", |b| {
        b.iter(|| Embedding::new(black_box(&tets), &render.vertices, "bunny.obj").unwrap())
    });
}

criterion_group!(benches, bench_mesh);
criterion_main!(benches);
