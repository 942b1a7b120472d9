//! Recordings as users make and replay them, through the real binary: a recording
//! replays to the same forces through its own scene copy, wherever it is moved; a
//! recording killed at any moment reads back; a full disk is reported at once and makes
//! serve fail; links and FIFOs in the record and cache directories are never written
//! through.

#[path = "../support/mod.rs"]
mod support;

mod full_disk;
mod killed;
mod links;
mod replay_equality;

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::OnceLock;

/// The binary under test.
pub const BINARY: &str = env!("CARGO_BIN_EXE_palpa");

/// The repository's root (scenes, meshes).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One precompute cache for every test here.
pub fn cache() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Runs `palpa args` to its end with the shared cache.
pub fn palpa(args: &[&str]) -> (ExitStatus, String, String) {
    support::serve::run_to_end(BINARY, args, cache())
}

/// Runs `palpa args`, which must succeed; returns stderr.
pub fn palpa_ok(args: &[&str]) -> String {
    let (status, stdout, stderr) = palpa(args);
    assert!(
        status.success(),
        "palpa {args:?}: {status}\n{stdout}\n{stderr}"
    );
    stderr
}

/// The coarse test block (precomputes in about a second), copied into `dir`.
pub fn coarse_scene(dir: &Path) -> PathBuf {
    let path = dir.join("coarse.toml");
    std::fs::copy(repo().join("tests/data/scenes/coarse_block.toml"), &path).unwrap();
    path
}
