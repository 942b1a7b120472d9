//! Integration tests of the mesh module: readers against each other and against the bunny,
//! bad input, generators, the lattice tetrahedraliser and render-surface embedding.

use std::path::{Path, PathBuf};

use palpa::mesh::{self, MeshError, TetMesh};
use palpa::Vec3;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn bunny() -> TetMesh {
    mesh::load(&data("bunny.msh")).unwrap()
}

#[test]
fn bunny_msh_reads_with_closed_outward_boundary() {
    let m = bunny();
    assert_eq!(m.nodes.len(), 3401);
    assert_eq!(m.tets.len(), 14976);
    assert!(m.regions.iter().all(|&r| r == 0));
    let b = m.boundary();
    assert!(b.is_closed());
    let enclosed = b.enclosed_volume(&m.nodes);
    let volume = m.volume();
    assert!(enclosed > 0.0);
    assert!((enclosed - volume).abs() < 1e-9 * volume, "{enclosed} vs {volume}");
    assert_eq!(b.nodes.len(), 1839);
}
