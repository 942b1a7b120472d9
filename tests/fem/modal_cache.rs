//! Modal cache file: exact round trip, and stale or damaged files are named errors.

use palpa::fem::{Axis, Fix, Material, MaterialMap, Pressure};
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
    let data = modal::precompute(
        &mesh,
        &materials,
        &fixes,
        Pressure::Element,
        &params,
        &mut |_| {},
    )
    .unwrap();
    assert!(data.basis.n_modes() > 0);
    let hash =
        modal::precompute_hash(&mesh, &materials, &fixes, Pressure::Element, &params).unwrap();
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
    let new_hash =
        modal::precompute_hash(&mesh, &stiffer, &fixes, Pressure::Element, &params).unwrap();
    let err = ModalCache::decode(&c.encode(), &new_hash).unwrap_err();
    assert!(matches!(err, CacheError::Stale { .. }), "{err}");
    assert!(err.to_string().contains("stale"));
    let other_fix = vec![Fix::Below {
        axis: Axis::Y,
        dist: 0.011,
    }];
    let (_, materials, _, _) = setup();
    let h2 =
        modal::precompute_hash(&mesh, &materials, &other_fix, Pressure::Element, &params).unwrap();
    assert!(matches!(
        ModalCache::decode(&c.encode(), &h2),
        Err(CacheError::Stale { .. })
    ));
    let more_modes = PrecomputeParams {
        n_modes: 13,
        ..params
    };
    let h3 =
        modal::precompute_hash(&mesh, &materials, &fixes, Pressure::Element, &more_modes).unwrap();
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

/// Encodes `c` after `doctor` changed it: the checksum is recomputed, so only the content
/// checks can catch the change.
fn doctored(c: &ModalCache, doctor: impl FnOnce(&mut ModalCache)) -> Vec<u8> {
    let mut c = c.clone();
    doctor(&mut c);
    c.encode()
}

#[test]
fn re_checksummed_caches_with_bad_contents_are_named_errors() {
    let (c, hash) = cache();
    let check = |bytes: Vec<u8>, part: &str| {
        let err = ModalCache::decode(&bytes, &hash).unwrap_err();
        assert!(matches!(err, CacheError::Contents(_)), "{part}: {err}");
        assert!(err.to_string().contains(part), "`{err}` lacks `{part}`");
    };
    // Issue input: a NaN eigenvalue, with a valid checksum, used to load.
    check(
        doctored(&c, |c| c.data.basis.eigenvalues[3] = f64::NAN),
        "eigenvalue 3 is NaN",
    );
    check(
        doctored(&c, |c| c.data.basis.eigenvalues[0] = f64::INFINITY),
        "eigenvalue 0 is inf",
    );
    check(
        doctored(&c, |c| c.data.basis.eigenvalues[1] = -1.0e3),
        "eigenvalue 1 is -1e3 rad²/s², negative",
    );
    check(
        doctored(&c, |c| c.data.basis.shapes[(7, 2)] = f64::NAN),
        "mode 2 shape row 7 is NaN",
    );
    check(
        doctored(&c, |c| {
            c.data.basis.rigid.pop();
        }),
        "rigid-mode flags",
    );
    check(doctored(&c, |c| c.data.n_free_dofs += 3), "free DOFs + 3 ×");
    // Round-off below zero (a rigid mode's λ ≈ −1e−12 · largest) is accepted.
    let tiny = doctored(&c, |c| {
        let largest = c
            .data
            .basis
            .eigenvalues
            .iter()
            .fold(0.0f64, |m, l| m.max(*l));
        c.data.basis.eigenvalues[0] = -1e-12 * largest;
    });
    assert!(ModalCache::decode(&tiny, &hash).is_ok());
}

/// Runs `f` on another thread and fails the test if it takes more than 10 s (a blocking
/// open of a FIFO would never return).
fn within_10_s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("blocked on a FIFO for 10 s")
}

fn mkfifo(path: &std::path::Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn a_fifo_at_the_cache_path_is_refused_without_blocking() {
    // Issue input: a FIFO at the cache path hung `precompute` (in the read, then the write).
    let (c, hash) = cache();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("box.palpa");
    mkfifo(&fifo);
    let path = fifo.clone();
    let err = within_10_s(move || ModalCache::load(&path, &hash).unwrap_err());
    assert!(matches!(err, CacheError::Read(_)), "{err}");
    assert!(
        err.to_string()
            .contains("box.palpa: is a FIFO (named pipe), not a regular file"),
        "{err}"
    );
    // Saving over it renames a new file onto the name: the FIFO is replaced, never
    // opened (so never blocked on), and no temporary is left.
    let (c2, path) = (c.clone(), fifo.clone());
    within_10_s(move || c2.save(&path).unwrap());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().is_file());
    assert_eq!(ModalCache::load(&fifo, &hash).unwrap(), c);
    // A FIFO at the old fixed temporary name is no obstacle: temporaries are random.
    let target = dir.path().join("other.palpa");
    mkfifo(&target.with_extension("tmp"));
    within_10_s(move || c.save(&target).unwrap());
    let left = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(left, 3, "box.palpa, other.palpa and the planted FIFO only");
    // A directory is not a cache either.
    let err = ModalCache::load(dir.path(), &hash).unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
}
