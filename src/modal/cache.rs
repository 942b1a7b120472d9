//! The modal cache file: a precompute result stamped with the hash of its inputs.
//!
//! Layout (little-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 8  | magic `PALPAMOD` |
//! | 4  | format version (u32) |
//! | 32 | blake3 checksum of everything after it |
//! | 32 | blake3 hash of the inputs ([`input_hash`]) |
//! | 8  | payload length (u64) |
//! | …  | payload: bincode 2.0.1 (serde, standard config) |
//!
//! Loading checks magic, version, length, checksum and the input hash, then the contents
//! themselves (sizes consistent, every number finite, eigenvalues not negative beyond
//! round-off), so a stale, damaged or doctored file is an error that says which, never a
//! wrong basis. Only regular files are read or written: a FIFO or device at the cache
//! path is refused rather than blocking.

use std::path::Path;

use faer::Mat;
use serde::{Deserialize, Serialize};

use super::{EigenInfo, ModalBasis, ModeReport, PrecomputeParams, Precomputed, Timings};
use crate::fem::{self, FemError, Fix, Material, MaterialMap, Pressure};
use crate::mesh::TetMesh;

const MAGIC: &[u8; 8] = b"PALPAMOD";
/// Current cache format version; bump on any payload change.
pub const FORMAT_VERSION: u32 = 2;
const HEADER_LEN: usize = 8 + 4 + 32 + 32 + 8;
/// Most negative eigenvalue accepted, as a fraction of the largest |λ|: rigid-body modes
/// come out of the eigensolver as ±round-off around 0.
const NEGATIVE_EIGENVALUE_RATIO: f64 = 1e-6;

/// Why a cache file could not be used. The caller may recompute.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The cache file.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The file does not start with the palpa modal-cache magic.
    #[error("not a palpa modal cache (bad magic bytes)")]
    NotACache,
    /// Written by another format version.
    #[error("cache format version {found}, this palpa reads version {FORMAT_VERSION}")]
    Version {
        /// Version found in the file.
        found: u32,
    },
    /// The file is shorter than its header says.
    #[error("cache truncated: {have} bytes, header says {want}")]
    Truncated {
        /// Bytes present.
        have: usize,
        /// Bytes expected.
        want: usize,
    },
    /// Contents do not match the checksum: the file is corrupt.
    #[error("cache checksum mismatch: the file is corrupt")]
    Checksum,
    /// The inputs (mesh, materials, fixed nodes, parameters) changed since it was written.
    #[error(
        "cache is stale: it was computed from different inputs (hash {found}, expected {expected})"
    )]
    Stale {
        /// Hash stored in the file (hex).
        found: String,
        /// Hash of the current inputs (hex).
        expected: String,
    },
    /// The payload passed the checksum but could not be decoded (a writer bug).
    #[error("cache payload could not be decoded: {0}")]
    Decode(String),
    /// The payload decoded but its contents are unusable (inconsistent sizes, non-finite
    /// numbers, negative eigenvalues); says which.
    #[error("cache contents are invalid: {0}")]
    Contents(String),
    /// The cache could not be read: not a regular file, too large, unreadable (the
    /// error names the path).
    #[error(transparent)]
    Read(#[from] crate::files::ReadError),
}

impl CacheError {
    /// Whether the cache file does not exist (not yet computed), rather than being bad.
    pub fn is_missing(&self) -> bool {
        let source = match self {
            CacheError::Io { source, .. }
            | CacheError::Read(crate::files::ReadError::Io { source, .. }) => source,
            _ => return false,
        };
        source.kind() == std::io::ErrorKind::NotFound
    }
}

/// [`input_hash`] of what [`precompute()`](super::precompute()) would be given.
pub fn precompute_hash(
    mesh: &TetMesh,
    materials: &MaterialMap,
    fixes: &[Fix],
    pressure: Pressure,
    params: &PrecomputeParams,
) -> Result<[u8; 32], FemError> {
    let per_tet = materials.per_tet(mesh)?;
    let fixed = fem::fixed_nodes(mesh, fixes)?;
    Ok(input_hash(mesh, &per_tet, &fixed, pressure, params))
}

/// Hash of everything that determines a precompute result: mesh nodes, tetrahedra and
/// regions, the material of every tetrahedron, the fixed nodes, where the pressure is
/// evaluated and the parameters.
pub fn input_hash(
    mesh: &TetMesh,
    materials: &[Material],
    fixed: &[bool],
    pressure: Pressure,
    params: &PrecomputeParams,
) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"palpa modal precompute inputs\0");
    // Element pressure hashes as before nodal pressure existed, keeping caches valid.
    if pressure == Pressure::Nodal {
        h.update(b"nodal pressure\0");
    }
    h.update(&(mesh.nodes.len() as u64).to_le_bytes());
    for p in &mesh.nodes {
        for c in p.iter() {
            h.update(&c.to_le_bytes());
        }
    }
    h.update(&(mesh.tets.len() as u64).to_le_bytes());
    for (t, r) in mesh.tets.iter().zip(&mesh.regions) {
        for &v in t {
            h.update(&(v as u64).to_le_bytes());
        }
        h.update(&r.to_le_bytes());
    }
    h.update(&(materials.len() as u64).to_le_bytes());
    for m in materials {
        for v in [m.young, m.poisson, m.density] {
            h.update(&v.to_le_bytes());
        }
    }
    h.update(&(fixed.len() as u64).to_le_bytes());
    h.update(&fixed.iter().map(|&f| f as u8).collect::<Vec<u8>>());
    let params = bincode::serde::encode_to_vec(params, bincode::config::standard())
        .expect("parameters are plain data");
    h.update(&params);
    *h.finalize().as_bytes()
}

#[derive(Serialize, Deserialize)]
struct Payload {
    eigenvalues: Vec<f64>,
    shape_rows: usize,
    shapes: Vec<f64>,
    rigid: Vec<bool>,
    reports: Vec<ModeReport>,
    eigen: EigenInfo,
    n_free_dofs: u64,
    n_fixed_nodes: u64,
    timings: Timings,
}

/// A precompute result and the hash of the inputs that produced it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModalCache {
    /// [`input_hash`] of the inputs.
    pub input_hash: [u8; 32],
    /// The result.
    pub data: Precomputed,
}

impl ModalCache {
    /// The file bytes.
    pub fn encode(&self) -> Vec<u8> {
        let b = &self.data.basis;
        let payload = Payload {
            eigenvalues: b.eigenvalues.clone(),
            shape_rows: b.shapes.nrows(),
            shapes: (0..b.shapes.ncols())
                .flat_map(|c| b.shapes.col(c).iter().copied().collect::<Vec<_>>())
                .collect(),
            rigid: b.rigid.clone(),
            reports: self.data.reports.clone(),
            eigen: self.data.eigen.clone(),
            n_free_dofs: self.data.n_free_dofs as u64,
            n_fixed_nodes: self.data.n_fixed_nodes as u64,
            timings: self.data.timings,
        };
        let payload = bincode::serde::encode_to_vec(&payload, bincode::config::standard())
            .expect("payload is plain data");
        let mut body = Vec::with_capacity(32 + 8 + payload.len());
        body.extend_from_slice(&self.input_hash);
        body.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        body.extend_from_slice(&payload);
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(checksum(&out[8..12], &body).as_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Decodes file bytes, checking them and that they were computed from inputs
    /// hashing to `expected_hash`.
    pub fn decode(bytes: &[u8], expected_hash: &[u8; 32]) -> Result<Self, CacheError> {
        if bytes.len() < 12 {
            return Err(if bytes.len() >= 8 && &bytes[..8] != MAGIC {
                CacheError::NotACache
            } else {
                CacheError::Truncated {
                    have: bytes.len(),
                    want: HEADER_LEN,
                }
            });
        }
        if &bytes[..8] != MAGIC {
            return Err(CacheError::NotACache);
        }
        let found = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if found != FORMAT_VERSION {
            return Err(CacheError::Version { found });
        }
        if bytes.len() < HEADER_LEN {
            return Err(CacheError::Truncated {
                have: bytes.len(),
                want: HEADER_LEN,
            });
        }
        let stored_sum = &bytes[12..44];
        let body = &bytes[44..];
        let len = u64::from_le_bytes(body[32..40].try_into().expect("8 bytes"));
        let want = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(HEADER_LEN))
            .unwrap_or(usize::MAX);
        if want > bytes.len() {
            return Err(CacheError::Truncated {
                have: bytes.len(),
                want,
            });
        }
        // Longer than the header says: corrupt length field or appended bytes.
        if want < bytes.len() {
            return Err(CacheError::Checksum);
        }
        if checksum(&bytes[8..12], body).as_bytes() != stored_sum {
            return Err(CacheError::Checksum);
        }
        let input_hash: [u8; 32] = body[..32].try_into().expect("32 bytes");
        if &input_hash != expected_hash {
            return Err(CacheError::Stale {
                found: hex(&input_hash),
                expected: hex(expected_hash),
            });
        }
        let (p, _): (Payload, usize) =
            bincode::serde::decode_from_slice(&body[40..], bincode::config::standard())
                .map_err(|e| CacheError::Decode(e.to_string()))?;
        check_contents(&p).map_err(CacheError::Contents)?;
        let n_modes = p.eigenvalues.len();
        let shapes = Mat::from_fn(p.shape_rows, n_modes, |r, c| p.shapes[c * p.shape_rows + r]);
        Ok(Self {
            input_hash,
            data: Precomputed {
                basis: ModalBasis {
                    eigenvalues: p.eigenvalues,
                    shapes,
                    rigid: p.rigid,
                },
                reports: p.reports,
                eigen: p.eigen,
                n_free_dofs: p.n_free_dofs as usize,
                n_fixed_nodes: p.n_fixed_nodes as usize,
                timings: p.timings,
            },
        })
    }

    /// Writes the cache to `path`: a new temporary with an unpredictable name beside
    /// it, synced and renamed over it (`files::write_file_atomic`), so a crash never
    /// leaves a half-written cache under the final name, a link or FIFO planted at either
    /// name is never written through, and a failed write (a full disk) leaves no
    /// temporary behind.
    /// Its directory is created first if need be (an existing one is checked to be a
    /// directory, not a link to one).
    pub fn save(&self, path: &Path) -> Result<(), CacheError> {
        let io = |e: crate::files::WriteError| CacheError::Io {
            path: e.path.display().to_string(),
            source: e.source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::files::OutputDir::create(dir).map_err(io)?;
        }
        crate::files::write_file_atomic(path, &self.encode()).map_err(io)
    }

    /// Reads and checks the cache at `path` against `expected_hash`.
    pub fn load(path: &Path, expected_hash: &[u8; 32]) -> Result<Self, CacheError> {
        let bytes = crate::files::read_bytes(path, crate::files::FileKind::ModalCache)?;
        Self::decode(&bytes, expected_hash)
    }
}

/// Checks a decoded payload: at least one mode; one rigid flag per mode; 3 shape rows per
/// node, matching the free DOFs and fixed nodes; rows × modes shape values; every number
/// finite; no eigenvalue below −[`NEGATIVE_EIGENVALUE_RATIO`] × the largest |λ|; residual
/// blocks one per node, nodes ascending and within the mesh.
fn check_contents(p: &Payload) -> Result<(), String> {
    let n_modes = p.eigenvalues.len();
    if n_modes == 0 {
        return Err("no modes".into());
    }
    if p.rigid.len() != n_modes {
        return Err(format!(
            "{} rigid-mode flags for {n_modes} modes",
            p.rigid.len()
        ));
    }
    if p.shape_rows == 0 || p.shape_rows % 3 != 0 {
        return Err(format!("{} shape rows; expected 3 per node", p.shape_rows));
    }
    if p.shape_rows.checked_mul(n_modes) != Some(p.shapes.len()) {
        return Err(format!(
            "{} shape values for {} rows × {n_modes} modes",
            p.shapes.len(),
            p.shape_rows
        ));
    }
    let rows = p
        .n_fixed_nodes
        .checked_mul(3)
        .and_then(|r| r.checked_add(p.n_free_dofs));
    if rows != Some(p.shape_rows as u64) {
        return Err(format!(
            "{} shape rows, but {} free DOFs + 3 × {} fixed nodes",
            p.shape_rows, p.n_free_dofs, p.n_fixed_nodes
        ));
    }
    let scale = p.eigenvalues.iter().fold(0.0f64, |m, l| m.max(l.abs()));
    for (i, &l) in p.eigenvalues.iter().enumerate() {
        if !l.is_finite() {
            return Err(format!("eigenvalue {i} is {l}"));
        }
        if l < -NEGATIVE_EIGENVALUE_RATIO * scale {
            return Err(format!(
                "eigenvalue {i} is {l:e} rad²/s², negative beyond round-off (largest |λ| {scale:e})"
            ));
        }
    }
    if let Some(at) = p.shapes.iter().position(|v| !v.is_finite()) {
        return Err(format!(
            "mode {} shape row {} is {}",
            at / p.shape_rows,
            at % p.shape_rows,
            p.shapes[at]
        ));
    }
    Ok(())
}

fn checksum(version: &[u8], body: &[u8]) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    h.update(version);
    h.update(body);
    h.finalize()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
