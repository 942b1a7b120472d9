//! Modal cache file: exact round trip, and stale or damaged files are named errors.

use palpa::fem::{Axis, Fix, Material, MaterialMap};
use palpa::mesh::generate::box_mesh;
use palpa::modal::{self, CacheError, ModalCache, PrecomputeParams};
use palpa::Vec3;

fn setup() -> (
    palpa::mesh::TetMesh,
    MaterialMap,
    Vec<Fix>,
    PrecomputeParams,
) {
    let mesh = box_mesh(Vec3::new(0.03, 0.05, 0.02), [3, 5, 2]).unwrap();
    let materials = MaterialMap::uniform(Material::new(5.0e4, 0.3, 1000.0).unwrap());
    let fixes = vec![Fix::Below {
        axis: Axis::Y,
        dist: 1e-9,
    }];
    let params = PrecomputeParams {
        n_modes: 12,
        ..Default::default()
    };
    (mesh, materials, fixes, params)
}

fn cache() -> (ModalCache, [u8; 32]) {
    let (mesh, materials, fixes, params) = setup();
    let data = modal::precompute(&mesh, &materials, &fixes, &params, &mut |_| {}).unwrap();
    assert!(data.residual.is_some() && data.basis.n_modes() > 0);
    let hash = modal::precompute_hash(&mesh, &materials, &fixes, &params).unwrap();
    (
        ModalCache {
            input_hash: hash,
            data,
        },
        hash,
    )
}

#[test]
fn round_trip_is_exact_through_a_file() {
    let (c, hash) = cache();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("box.palpa");
    c.save(&path).unwrap();
    let back = ModalCache::load(&path, &hash).unwrap();
    assert_eq!(back, c);
    assert_eq!(back.data.basis.shapes, c.data.basis.shapes);
}

#[test]
fn changed_inputs_make_the_cache_stale() {
    let (c, _) = cache();
    let (mesh, _, fixes, params) = setup();
    let stiffer = MaterialMap::uniform(Material::new(6.0e4, 0.3, 1000.0).unwrap());
    let new_hash = modal::precompute_hash(&mesh, &stiffer, &fixes, &params).unwrap();
    let err = ModalCache::decode(&c.encode(), &new_hash).unwrap_err();
    assert!(matches!(err, CacheError::Stale { .. }), "{err}");
    assert!(err.to_string().contains("stale"));
    let other_fix = vec![Fix::Below {
        axis: Axis::Y,
        dist: 0.011,
    }];
    let (_, materials, _, _) = setup();
    let h2 = modal::precompute_hash(&mesh, &materials, &other_fix, &params).unwrap();
    assert!(matches!(
        ModalCache::decode(&c.encode(), &h2),
        Err(CacheError::Stale { .. })
    ));
    let more_modes = PrecomputeParams {
        n_modes: 13,
        ..params
    };
    let h3 = modal::precompute_hash(&mesh, &materials, &fixes, &more_modes).unwrap();
    assert!(matches!(
        ModalCache::decode(&c.encode(), &h3),
        Err(CacheError::Stale { .. })
    ));
}

#[test]
fn damaged_files_are_named_errors() {
    let (c, hash) = cache();
    let bytes = c.encode();
    // Every flipped byte after the magic and version is caught by the checksum.
    for at in [12, 50, 80, 100, bytes.len() / 2, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        let err = ModalCache::decode(&bad, &hash).unwrap_err();
        assert!(
            matches!(err, CacheError::Checksum | CacheError::Truncated { .. }),
            "byte {at}: {err}"
        );
    }
    let mut bad = bytes.clone();
    bad[bytes.len() / 2] ^= 1;
    assert!(matches!(
        ModalCache::decode(&bad, &hash),
        Err(CacheError::Checksum)
    ));
    for len in [0, 5, 11, 40, 90, bytes.len() - 1] {
        let err = ModalCache::decode(&bytes[..len], &hash).unwrap_err();
        assert!(
            matches!(err, CacheError::Truncated { .. }),
            "length {len}: {err}"
        );
    }
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert!(matches!(
        ModalCache::decode(&bad, &hash),
        Err(CacheError::NotACache)
    ));
    let mut bad = bytes.clone();
    bad[8] = 99;
    let err = ModalCache::decode(&bad, &hash).unwrap_err();
    assert!(err.to_string().contains("version 99"), "{err}");
    let missing =
        ModalCache::load(std::path::Path::new("/nonexistent/x.palpa"), &hash).unwrap_err();
    assert!(missing.to_string().contains("/nonexistent/x.palpa"));
}
