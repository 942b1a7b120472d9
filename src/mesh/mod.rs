//! Tetrahedral meshes: the validated mesh type, boundary extraction, file readers and
//! writers, generators, and the embedding of a separate render surface.
//!
//! One file per job: `msh`/`msh_binary`, `tetgen` and `vtk` read (and `vtk` writes)
//! tetrahedral meshes (`gmsh` holds what the two MSH readers share), `surface` reads OBJ/STL triangle surfaces, `generate` builds boxes,
//! `lattice` fills a closed surface with tetrahedra, `embed` ties a render surface to a
//! tetrahedral mesh; `text` is the shared line-numbered tokenizer.
//!
//! Every reader produces raw nodes and tetrahedra and hands them to [`TetMesh::new`],
//! which is the one place meshes are validated: non-finite coordinates, out-of-range or
//! repeated node indices, degenerate tetrahedra, two tetrahedra on the same four nodes and
//! nodes no tetrahedron uses are errors naming the element or node; inverted tetrahedra
//! are reoriented and reported in [`TetMesh::notes`].

pub mod embed;
pub mod generate;
mod gmsh;
pub mod lattice;
pub mod msh;
pub mod msh_binary;
pub mod surface;
pub mod tetgen;
mod text;
pub mod vtk;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::Vec3;

/// Reads a tetrahedral mesh, choosing the reader by extension: `.msh` (Gmsh 4.1 ASCII or
/// binary, 2.2 ASCII), `.node` or `.ele` (TetGen; the other file of the pair is found by
/// extension), `.vtk` (legacy ASCII unstructured grid). Surfaces (`.obj`, `.stl`) are read
/// by [`surface::load_surface`] and filled by [`lattice::fill_surface`].
pub fn load(path: &Path) -> Result<TetMesh, MeshError> {
    // A device, FIFO or directory is named as such, whatever its name ends with.
    crate::files::check_regular(path, crate::files::FileKind::Mesh)?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("msh") => msh::read_msh(path),
        Some("node" | "ele") => tetgen::read_tetgen(path),
        Some("vtk") => vtk::read_vtk(path),
        other => Err(MeshError::Invalid {
            file: path.display().to_string(),
            msg: format!(
                "unknown mesh extension {}; expected .msh, .node/.ele or .vtk",
                other.map_or("(none)".to_string(), |e| format!(".{e}"))
            ),
        }),
    }
}

/// Relative volume below which a tetrahedron is degenerate: |vol| < `DEGENERATE_RATIO`
/// · (longest edge)³. A regular tetrahedron has vol/edge³ ≈ 0.118.
pub const DEGENERATE_RATIO: f64 = 1e-9;

/// Why a mesh could not be read or accepted. Every variant names where the problem is.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The file could not be opened or read.
    #[error("{file}: {source}")]
    Io {
        /// File being read.
        file: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The file was refused before parsing: not a regular file, too large, unreadable
    /// (the error names it).
    #[error(transparent)]
    Read(#[from] crate::files::ReadError),
    /// A syntax or content problem at a line of a text file.
    #[error("{file}:{line}: {msg}")]
    Parse {
        /// File being read.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// A tetrahedron is unusable.
    #[error("{file}: tetrahedron {element} (0-based, in file order): {msg}")]
    Element {
        /// File (or generator) the mesh came from.
        file: String,
        /// 0-based index of the tetrahedron.
        element: usize,
        /// What is wrong.
        msg: String,
    },
    /// Two tetrahedra have the same four nodes.
    #[error(
        "{file}: tetrahedra {first} and {second} (0-based, in file order) have the same nodes {nodes:?}"
    )]
    DuplicateElement {
        /// File (or generator) the mesh came from.
        file: String,
        /// 0-based index of the earlier tetrahedron.
        first: usize,
        /// 0-based index of the later one.
        second: usize,
        /// Their nodes (0-based, as the later one lists them).
        nodes: [usize; 4],
    },
    /// A node is unusable.
    #[error("{file}: node {node} (0-based, in file order): {msg}")]
    Node {
        /// File (or generator) the mesh came from.
        file: String,
        /// 0-based node index.
        node: usize,
        /// What is wrong.
        msg: String,
    },
    /// The mesh as a whole is unusable (empty, unsupported format, …).
    #[error("{file}: {msg}")]
    Invalid {
        /// File (or generator) the mesh came from.
        file: String,
        /// What is wrong.
        msg: String,
    },
}

/// Shape of a mesh file's element (cell) type, which decides whether a reader keeps,
/// ignores or refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ElementShape {
    /// 0-D.
    Point,
    /// 1-D.
    Line,
    /// 2-D: triangles, quadrangles, polygons.
    Surface,
    /// A tetrahedron of any order; its first 4 nodes are the corners.
    Tetrahedron,
    /// Another volume element (hexahedron, prism, pyramid, …).
    OtherVolume,
}

/// Removes the nodes flagged in `midside` that no tetrahedron uses as a corner: the
/// higher-order nodes of elements read by their 4 corners. Renumbers `tets` and keeps
/// `node_lines` (when it has one line per node) in step. Returns how many nodes went, or
/// 0 without changing anything when a tetrahedron refers to a node that does not exist
/// (so that [`TetMesh::new`] reports it).
pub(crate) fn drop_midside_nodes(
    nodes: &mut Vec<Vec3>,
    node_lines: &mut Vec<usize>,
    tets: &mut [[usize; 4]],
    midside: &[bool],
) -> usize {
    if tets.iter().flatten().any(|&n| n >= nodes.len()) {
        return 0;
    }
    let mut corner = vec![false; nodes.len()];
    for &n in tets.iter().flatten() {
        corner[n] = true;
    }
    let drop = |n: usize| !corner[n] && midside.get(n).copied().unwrap_or(false);
    let mut new_index = Vec::with_capacity(nodes.len());
    let mut kept = 0;
    for n in 0..nodes.len() {
        new_index.push(kept);
        if !drop(n) {
            kept += 1;
        }
    }
    let dropped = nodes.len() - kept;
    if dropped == 0 {
        return 0;
    }
    let lines = node_lines.len() == nodes.len();
    let mut n = 0;
    nodes.retain(|_| {
        n += 1;
        !drop(n - 1)
    });
    if lines {
        let mut n = 0;
        node_lines.retain(|_| {
            n += 1;
            !drop(n - 1)
        });
    }
    for v in tets.iter_mut().flatten() {
        *v = new_index[*v];
    }
    dropped
}

/// A validated linear tetrahedral mesh: every tetrahedron has positive volume.
#[derive(Clone, Debug, PartialEq)]
pub struct TetMesh {
    /// Node positions (scene units, m once scaled).
    pub nodes: Vec<Vec3>,
    /// Tetrahedra as node indices, positively oriented:
    /// (b−a)·((c−a)×(d−a)) > 0.
    pub tets: Vec<[usize; 4]>,
    /// Region id of each tetrahedron (the file's physical group; 0 when it has none).
    pub regions: Vec<i32>,
    /// Names of regions, where the file gives them (Gmsh `$PhysicalNames`).
    pub region_names: BTreeMap<i32, String>,
    /// What validation changed, e.g. "reoriented 12 inverted tetrahedra".
    pub notes: Vec<String>,
}

/// Signed volume of the tetrahedron (a, b, c, d): (b−a)·((c−a)×(d−a)) / 6.
pub fn signed_volume(a: &Vec3, b: &Vec3, c: &Vec3, d: &Vec3) -> f64 {
    (b - a).dot(&(c - a).cross(&(d - a))) / 6.0
}

impl TetMesh {
    /// Validates raw mesh data and builds the mesh. `source` names the file or
    /// generator in error messages. `regions` must have one entry per tetrahedron.
    pub fn new(
        source: &str,
        nodes: Vec<Vec3>,
        mut tets: Vec<[usize; 4]>,
        regions: Vec<i32>,
    ) -> Result<Self, MeshError> {
        let file = source.to_string();
        if nodes.is_empty() || tets.is_empty() {
            return Err(MeshError::Invalid {
                file,
                msg: format!(
                    "empty mesh ({} nodes, {} tetrahedra); a tetrahedral mesh needs both",
                    nodes.len(),
                    tets.len()
                ),
            });
        }
        if regions.len() != tets.len() {
            return Err(MeshError::Invalid {
                file,
                msg: format!("{} region ids for {} tetrahedra", regions.len(), tets.len()),
            });
        }
        if let Some((i, p)) = nodes
            .iter()
            .enumerate()
            .find(|(_, p)| !p.iter().all(|c| c.is_finite()))
        {
            return Err(MeshError::Node {
                file,
                node: i,
                msg: format!("non-finite coordinate ({}, {}, {})", p.x, p.y, p.z),
            });
        }
        let mut inverted = 0usize;
        for (e, tet) in tets.iter_mut().enumerate() {
            if let Some(&bad) = tet.iter().find(|&&n| n >= nodes.len()) {
                return Err(MeshError::Element {
                    file,
                    element: e,
                    msg: format!(
                        "node index {bad} out of range (mesh has {} nodes)",
                        nodes.len()
                    ),
                });
            }
            for i in 0..4 {
                for j in i + 1..4 {
                    if tet[i] == tet[j] {
                        return Err(MeshError::Element {
                            file,
                            element: e,
                            msg: format!("node {} repeated in {:?}", tet[i], tet),
                        });
                    }
                }
            }
            let [a, b, c, d] = tet.map(|n| nodes[n]);
            let vol = signed_volume(&a, &b, &c, &d);
            let longest = [b - a, c - a, d - a, c - b, d - b, d - c]
                .iter()
                .map(|e| e.norm())
                .fold(0.0, f64::max);
            if vol.abs() < DEGENERATE_RATIO * longest.powi(3) || !vol.is_finite() {
                return Err(MeshError::Element {
                    file,
                    element: e,
                    msg: format!(
                        "degenerate (volume {vol:.3e}, longest edge {longest:.3e}; nodes {tet:?})"
                    ),
                });
            }
            if vol < 0.0 {
                tet.swap(2, 3);
                inverted += 1;
            }
        }
        let mut first_use: HashMap<[usize; 4], usize> = HashMap::with_capacity(tets.len());
        for (e, tet) in tets.iter().enumerate() {
            let mut key = *tet;
            key.sort_unstable();
            if let Some(&first) = first_use.get(&key) {
                return Err(MeshError::DuplicateElement {
                    file,
                    first,
                    second: e,
                    nodes: *tet,
                });
            }
            first_use.insert(key, e);
        }
        let mut used = vec![false; nodes.len()];
        for &n in tets.iter().flatten() {
            used[n] = true;
        }
        let orphans = used.iter().filter(|&&u| !u).count();
        if let Some(first) = used.iter().position(|&u| !u) {
            return Err(MeshError::Node {
                file,
                node: first,
                msg: format!(
                    "used by no tetrahedron ({orphans} such nodes, this is the first); a node \
                     outside every element has no stiffness or mass, so remove unused nodes \
                     (e.g. Gmsh: save only the volume's physical group)"
                ),
            });
        }
        let mut notes = Vec::new();
        if inverted > 0 {
            notes.push(format!(
                "{source}: reoriented {inverted} inverted tetrahedra (negative volume)"
            ));
        }
        Ok(Self {
            nodes,
            tets,
            regions,
            region_names: BTreeMap::new(),
            notes,
        })
    }

    /// Volume of tetrahedron `e` (positive).
    pub fn tet_volume(&self, e: usize) -> f64 {
        let [a, b, c, d] = self.tets[e].map(|n| self.nodes[n]);
        signed_volume(&a, &b, &c, &d)
    }

    /// Sum of all tetrahedron volumes.
    pub fn volume(&self) -> f64 {
        (0..self.tets.len()).map(|e| self.tet_volume(e)).sum()
    }

    /// Axis-aligned bounding box of the nodes: (min, max).
    pub fn bounds(&self) -> (Vec3, Vec3) {
        let mut lo = Vec3::repeat(f64::INFINITY);
        let mut hi = Vec3::repeat(f64::NEG_INFINITY);
        for p in &self.nodes {
            lo = lo.inf(p);
            hi = hi.sup(p);
        }
        (lo, hi)
    }

    /// Multiplies every coordinate by `s` (e.g. 0.01 for a mesh in centimetres).
    pub fn scale(&mut self, s: f64) {
        for p in &mut self.nodes {
            *p *= s;
        }
    }

    /// The boundary: triangles that belong to exactly one tetrahedron, oriented with
    /// outward normals, and the sorted set of nodes they use.
    pub fn boundary(&self) -> Boundary {
        // Outward faces of a positively oriented tetrahedron (0, 1, 2, 3).
        const FACES: [[usize; 3]; 4] = [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]];
        let mut faces: HashMap<[usize; 3], ([usize; 3], u32)> =
            HashMap::with_capacity(self.tets.len() * 2);
        for tet in &self.tets {
            for f in FACES {
                let tri = f.map(|i| tet[i]);
                let mut key = tri;
                key.sort_unstable();
                faces.entry(key).or_insert((tri, 0)).1 += 1;
            }
        }
        let mut triangles: Vec<[usize; 3]> = faces
            .into_values()
            .filter(|&(_, count)| count == 1)
            .map(|(tri, _)| tri)
            .collect();
        triangles.sort_unstable();
        let mut nodes: Vec<usize> = triangles.iter().flatten().copied().collect();
        nodes.sort_unstable();
        nodes.dedup();
        Boundary { triangles, nodes }
    }
}

/// The outward-oriented boundary surface of a tetrahedral mesh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Boundary {
    /// Boundary triangles as mesh node indices, counter-clockwise seen from outside.
    pub triangles: Vec<[usize; 3]>,
    /// Sorted mesh node indices that lie on the boundary.
    pub nodes: Vec<usize>,
}

impl Boundary {
    /// Volume enclosed by the triangles (divergence theorem); positive when they are
    /// closed and outward-oriented.
    pub fn enclosed_volume(&self, nodes: &[Vec3]) -> f64 {
        self.triangles
            .iter()
            .map(|t| nodes[t[0]].dot(&nodes[t[1]].cross(&nodes[t[2]])) / 6.0)
            .sum()
    }

    /// Whether every edge is shared by exactly two triangles, in opposite directions
    /// (a closed, consistently oriented surface).
    pub fn is_closed(&self) -> bool {
        let mut directed: HashMap<(usize, usize), u32> = HashMap::new();
        for t in &self.triangles {
            for k in 0..3 {
                *directed.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
            }
        }
        directed
            .iter()
            .all(|(&(a, b), &n)| n == 1 && directed.get(&(b, a)) == Some(&1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_tet() -> Vec<Vec3> {
        vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.0, 1.0),
        ]
    }

    #[test]
    fn single_tet_boundary_is_closed_and_outward() {
        let m = TetMesh::new("unit", unit_tet(), vec![[0, 1, 2, 3]], vec![0]).unwrap();
        let b = m.boundary();
        assert_eq!(b.triangles.len(), 4);
        assert!(b.is_closed());
        assert!((b.enclosed_volume(&m.nodes) - 1.0 / 6.0).abs() < 1e-15);
    }

    #[test]
    fn inverted_tet_is_reoriented_with_a_note() {
        let m = TetMesh::new("unit", unit_tet(), vec![[0, 2, 1, 3]], vec![0]).unwrap();
        assert!((m.tet_volume(0) - 1.0 / 6.0).abs() < 1e-15);
        assert_eq!(m.notes.len(), 1);
    }

    #[test]
    fn bad_tets_are_named() {
        let flat = {
            let mut n = unit_tet();
            n[3] = Vec3::new(0.5, 0.5, 0.0);
            n
        };
        let e = TetMesh::new("f.msh", flat, vec![[0, 1, 2, 3]], vec![0]).unwrap_err();
        assert!(e.to_string().contains("tetrahedron 0"), "{e}");
        assert!(e.to_string().contains("degenerate"), "{e}");
        let e = TetMesh::new("f.msh", unit_tet(), vec![[0, 1, 2, 9]], vec![0]).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let e = TetMesh::new("f.msh", unit_tet(), vec![[0, 1, 1, 3]], vec![0]).unwrap_err();
        assert!(e.to_string().contains("repeated"), "{e}");
        let mut nan = unit_tet();
        nan[2].y = f64::NAN;
        let e = TetMesh::new("f.msh", nan, vec![[0, 1, 2, 3]], vec![0]).unwrap_err();
        assert!(e.to_string().contains("node 2"), "{e}");
        let e = TetMesh::new("f.msh", vec![], vec![], vec![]).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = TetMesh::new(
            "f.msh",
            unit_tet(),
            vec![[0, 1, 2, 3], [3, 1, 0, 2]],
            vec![0; 2],
        )
        .unwrap_err();
        assert!(e.to_string().contains("tetrahedra 0 and 1"), "{e}");
        let mut extra = unit_tet();
        extra.push(Vec3::new(2.0, 2.0, 2.0));
        let e = TetMesh::new("f.msh", extra, vec![[0, 1, 2, 3]], vec![0]).unwrap_err();
        assert!(
            e.to_string().contains("node 4") && e.to_string().contains("no tetrahedron"),
            "{e}"
        );
    }
}
