//! Embedding of a render surface in a tetrahedral mesh: each vertex of a separate (usually
//! finer) triangle mesh is tied to one tetrahedron by barycentric coordinates, so the
//! tetrahedral deformation moves the render surface (James & Pai's brain and dodo).
//!
//! A vertex inside the mesh uses its containing tetrahedron. A vertex slightly outside
//! uses the nearest tetrahedron with *unclamped* barycentric coordinates (some negative):
//! the rest shape is then reproduced exactly and the vertex follows the linear field of
//! that tetrahedron, where clamping would pull it onto the tetrahedral surface. The
//! distance to the nearest tetrahedron is reported so callers can reject poor fits.

use super::surface::closest_on_triangle;
use super::{MeshError, TetMesh};
use crate::{Mat3, Vec3};

/// Each embedded vertex's tetrahedron and barycentric coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding {
    /// Tetrahedron index per vertex.
    pub tet: Vec<usize>,
    /// Barycentric coordinates per vertex, one per tetrahedron node, summing to 1.
    /// All are in [0, 1] for vertices inside the mesh.
    pub bary: Vec<[f64; 4]>,
    /// Distance (m) from each vertex to its tetrahedron; 0 inside the mesh.
    pub distance: Vec<f64>,
    /// Largest entry of `distance` (m).
    pub max_distance: f64,
    /// Number of vertices outside the mesh (tied to their nearest tetrahedron).
    pub outside: usize,
    /// Node indices of each vertex's tetrahedron, so applying needs no mesh.
    tet_nodes: Vec<[usize; 4]>,
    /// Node count of the mesh, checked by [`Embedding::apply`].
    nodes: usize,
}

/// Barycentric coordinates below −`INSIDE_TOLERANCE` put a point outside a tetrahedron.
const INSIDE_TOLERANCE: f64 = 1e-10;

impl Embedding {
    /// Embeds `points` (e.g. render-surface vertices, m) in `mesh`. `source` names the
    /// points in errors (a non-finite vertex is an error naming it).
    pub fn new(mesh: &TetMesh, points: &[Vec3], source: &str) -> Result<Self, MeshError> {
        if let Some((i, p)) = points
            .iter()
            .enumerate()
            .find(|(_, p)| !p.iter().all(|c| c.is_finite()))
        {
            return Err(MeshError::Invalid {
                file: source.to_string(),
                msg: format!(
                    "vertex {i}: non-finite coordinate ({}, {}, {})",
                    p.x, p.y, p.z
                ),
            });
        }
        let grid = TetGrid::new(mesh);
        let mut embedding = Self {
            tet: Vec::with_capacity(points.len()),
            bary: Vec::with_capacity(points.len()),
            distance: Vec::with_capacity(points.len()),
            max_distance: 0.0,
            outside: 0,
            tet_nodes: Vec::with_capacity(points.len()),
            nodes: mesh.nodes.len(),
        };
        for p in points {
            let (tet, distance) = grid
                .containing(p)
                .map(|e| (e, 0.0))
                .unwrap_or_else(|| grid.nearest(p));
            if distance > 0.0 {
                embedding.outside += 1;
                embedding.max_distance = embedding.max_distance.max(distance);
            }
            embedding.tet.push(tet);
            embedding.tet_nodes.push(mesh.tets[tet]);
            embedding.bary.push(grid.barycentric(tet, p));
            embedding.distance.push(distance);
        }
        Ok(embedding)
    }

    /// Interpolates a per-node field of the mesh at the embedded vertices: node positions
    /// give vertex positions, node displacements give vertex displacements (linear
    /// fields are reproduced exactly). Panics if `node_values` is not one per mesh node.
    pub fn apply(&self, node_values: &[Vec3]) -> Vec<Vec3> {
        let mut out = vec![Vec3::zeros(); self.tet.len()];
        self.apply_into(node_values, &mut out);
        out
    }

    /// [`Embedding::apply`] into a caller-owned buffer (no allocation, for per-frame use).
    /// Panics if the lengths do not match.
    pub fn apply_into(&self, node_values: &[Vec3], out: &mut [Vec3]) {
        assert_eq!(node_values.len(), self.nodes, "one value per mesh node");
        assert_eq!(out.len(), self.tet.len(), "one output per embedded vertex");
        for ((o, b), nodes) in out.iter_mut().zip(&self.bary).zip(&self.tet_nodes) {
            *o = node_values[nodes[0]] * b[0]
                + node_values[nodes[1]] * b[1]
                + node_values[nodes[2]] * b[2]
                + node_values[nodes[3]] * b[3];
        }
    }
}

/// Tetrahedra binned in a uniform grid by bounding box, with each tetrahedron's inverse
/// edge matrix for barycentric coordinates.
struct TetGrid<'a> {
    mesh: &'a TetMesh,
    inverse: Vec<Mat3>,
    lo: Vec3,
    hi: Vec3,
    bin: Vec3,
    n: [usize; 3],
    bins: Vec<Vec<u32>>,
}

impl<'a> TetGrid<'a> {
    fn new(mesh: &'a TetMesh) -> Self {
        let (lo, hi) = mesh.bounds();
        // About one tetrahedron per bin.
        let extent = (hi - lo).map(|e| e.max(f64::MIN_POSITIVE));
        let side = (extent.x * extent.y * extent.z / mesh.tets.len() as f64).cbrt();
        let n = [0, 1, 2].map(|a| ((extent[a] / side).ceil() as usize).clamp(1, 512));
        let bin = Vec3::new(
            extent.x / n[0] as f64,
            extent.y / n[1] as f64,
            extent.z / n[2] as f64,
        );
        let mut grid = Self {
            mesh,
            inverse: Vec::with_capacity(mesh.tets.len()),
            lo,
            hi,
            bin,
            n,
            bins: vec![Vec::new(); n[0] * n[1] * n[2]],
        };
        for (e, tet) in mesh.tets.iter().enumerate() {
            let [a, b, c, d] = tet.map(|v| mesh.nodes[v]);
            let edges = Mat3::from_columns(&[b - a, c - a, d - a]);
            // Validated tetrahedra have positive volume, so the edge matrix is invertible.
            grid.inverse
                .push(edges.try_inverse().unwrap_or_else(Mat3::zeros));
            let c0 = grid.cell(&a.inf(&b).inf(&c).inf(&d));
            let c1 = grid.cell(&a.sup(&b).sup(&c).sup(&d));
            for k in c0[2]..=c1[2] {
                for j in c0[1]..=c1[1] {
                    for i in c0[0]..=c1[0] {
                        grid.bins[i + n[0] * (j + n[1] * k)].push(e as u32);
                    }
                }
            }
        }
        grid
    }

    /// Bin coordinates of `p`, clamped to the grid.
    fn cell(&self, p: &Vec3) -> [usize; 3] {
        [0, 1, 2].map(|a| {
            (((p[a] - self.lo[a]) / self.bin[a]).floor().max(0.0) as usize).min(self.n[a] - 1)
        })
    }

    fn barycentric(&self, e: usize, p: &Vec3) -> [f64; 4] {
        let a = self.mesh.nodes[self.mesh.tets[e][0]];
        let l = self.inverse[e] * (p - a);
        [1.0 - l.x - l.y - l.z, l.x, l.y, l.z]
    }

    /// The tetrahedron containing `p` (the one it is deepest inside, at shared faces).
    fn containing(&self, p: &Vec3) -> Option<usize> {
        if (0..3).any(|a| p[a] < self.lo[a] || p[a] > self.hi[a]) {
            return None;
        }
        let c = self.cell(p);
        let bin = &self.bins[c[0] + self.n[0] * (c[1] + self.n[1] * c[2])];
        bin.iter()
            .map(|&e| {
                let b = self.barycentric(e as usize, p);
                (e as usize, b.into_iter().fold(f64::MAX, f64::min))
            })
            .filter(|&(_, depth)| depth >= -INSIDE_TOLERANCE)
            .max_by(|x, y| x.1.total_cmp(&y.1))
            .map(|(e, _)| e)
    }

    /// Distance from `p` to tetrahedron `e` (0 inside).
    fn distance(&self, e: usize, p: &Vec3) -> f64 {
        if self.barycentric(e, p).iter().all(|&b| b >= 0.0) {
            return 0.0;
        }
        let [a, b, c, d] = self.mesh.tets[e].map(|v| self.mesh.nodes[v]);
        [[a, b, c], [a, b, d], [a, c, d], [b, c, d]]
            .iter()
            .map(|[u, v, w]| {
                let l = closest_on_triangle(p, u, v, w);
                (u * l[0] + v * l[1] + w * l[2] - p).norm()
            })
            .fold(f64::MAX, f64::min)
    }

    /// The tetrahedron nearest to `p` and its distance, searching rings of bins outwards
    /// until no unvisited bin can hold anything nearer.
    fn nearest(&self, p: &Vec3) -> (usize, f64) {
        let c = self.cell(p).map(|v| v as i64);
        let min_bin = self.bin.min();
        let max_ring = *self.n.iter().max().unwrap_or(&1) as i64;
        let mut best = (0, f64::MAX);
        for ring in 0..=max_ring {
            for k in c[2] - ring..=c[2] + ring {
                for j in c[1] - ring..=c[1] + ring {
                    for i in c[0] - ring..=c[0] + ring {
                        let on_shell = [i - c[0], j - c[1], k - c[2]]
                            .iter()
                            .any(|d| d.abs() == ring);
                        let q = [i, j, k];
                        if !on_shell || (0..3).any(|a| q[a] < 0 || q[a] >= self.n[a] as i64) {
                            continue;
                        }
                        let bin = (i + self.n[0] as i64 * (j + self.n[1] as i64 * k)) as usize;
                        for &e in &self.bins[bin] {
                            let d = self.distance(e as usize, p);
                            if d < best.1 {
                                best = (e as usize, d);
                            }
                        }
                    }
                }
            }
            if best.1 <= ring as f64 * min_bin {
                break;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::generate::box_mesh;

    #[test]
    fn inside_and_outside_points() {
        let m = box_mesh(Vec3::new(1.0, 1.0, 1.0), [3, 3, 3]).unwrap();
        let points = [
            Vec3::new(0.5, 0.5, 0.5),
            Vec3::new(0.1, 0.9, 0.3),
            Vec3::new(1.0, 1.0, 1.0),
            Vec3::new(1.25, 0.5, 0.5),
            Vec3::new(-2.0, -2.0, 0.5),
        ];
        let emb = Embedding::new(&m, &points, "pts").unwrap();
        for v in 0..3 {
            assert_eq!(emb.distance[v], 0.0);
            assert!(emb.bary[v]
                .iter()
                .all(|&b| (-1e-12..=1.0 + 1e-12).contains(&b)));
        }
        assert_eq!(emb.outside, 2);
        assert!((emb.distance[3] - 0.25).abs() < 1e-12);
        assert!((emb.distance[4] - 8f64.sqrt()).abs() < 1e-12);
        assert!((emb.max_distance - 8f64.sqrt()).abs() < 1e-12);
        // Rest positions are reproduced exactly, outside points included.
        for (q, p) in emb.apply(&m.nodes).iter().zip(&points) {
            assert!((q - p).norm() < 1e-12, "{q} vs {p}");
        }
        for b in &emb.bary {
            assert!((b.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn non_finite_vertex_is_named() {
        let m = box_mesh(Vec3::new(1.0, 1.0, 1.0), [1, 1, 1]).unwrap();
        let e = Embedding::new(&m, &[Vec3::zeros(), Vec3::new(f64::NAN, 0.0, 0.0)], "r.obj")
            .unwrap_err();
        assert!(
            e.to_string().contains("r.obj") && e.to_string().contains("vertex 1"),
            "{e}"
        );
    }
}
