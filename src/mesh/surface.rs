//! Triangle surface meshes: OBJ (via `tobj`, polygons triangulated) and STL (via `stl_io`,
//! ASCII or binary), with duplicate vertices merged and the result validated. Used as input
//! to the lattice tetrahedraliser and as render surfaces to embed in a tetrahedral mesh.

use std::collections::HashMap;
use std::path::Path;

use super::MeshError;
use crate::Vec3;

/// Twice a triangle's area below `DEGENERATE_TRIANGLE_RATIO` · (longest edge)² makes it
/// degenerate (an equilateral triangle has ratio ≈ 0.87).
pub const DEGENERATE_TRIANGLE_RATIO: f64 = 1e-12;

/// A validated triangle surface: finite vertices, in-range indices, no degenerate triangle.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceMesh {
    /// Vertex positions (file units until scaled).
    pub vertices: Vec<Vec3>,
    /// Triangles as vertex indices, in file order and winding.
    pub triangles: Vec<[usize; 3]>,
}

impl SurfaceMesh {
    /// Validates raw surface data. `source` names the file in errors; problems name the
    /// vertex or triangle (0-based, in file order).
    pub fn new(
        source: &str,
        vertices: Vec<Vec3>,
        triangles: Vec<[usize; 3]>,
    ) -> Result<Self, MeshError> {
        let invalid = |msg: String| MeshError::Invalid {
            file: source.to_string(),
            msg,
        };
        if vertices.is_empty() || triangles.is_empty() {
            return Err(invalid(format!(
                "empty surface ({} vertices, {} triangles)",
                vertices.len(),
                triangles.len()
            )));
        }
        if let Some((i, p)) = vertices
            .iter()
            .enumerate()
            .find(|(_, p)| !p.iter().all(|c| c.is_finite()))
        {
            return Err(invalid(format!(
                "vertex {i}: non-finite coordinate ({}, {}, {})",
                p.x, p.y, p.z
            )));
        }
        for (t, tri) in triangles.iter().enumerate() {
            if let Some(&bad) = tri.iter().find(|&&v| v >= vertices.len()) {
                return Err(invalid(format!(
                    "triangle {t}: vertex index {bad} out of range ({} vertices)",
                    vertices.len()
                )));
            }
            let [a, b, c] = tri.map(|v| vertices[v]);
            let twice_area = (b - a).cross(&(c - a)).norm();
            let longest = [(b - a).norm(), (c - b).norm(), (a - c).norm()]
                .into_iter()
                .fold(0.0, f64::max);
            if tri[0] == tri[1]
                || tri[1] == tri[2]
                || tri[0] == tri[2]
                || twice_area <= DEGENERATE_TRIANGLE_RATIO * longest * longest
            {
                return Err(invalid(format!(
                    "triangle {t}: degenerate (vertices {tri:?}, area {:.3e})",
                    twice_area / 2.0
                )));
            }
        }
        Ok(Self {
            vertices,
            triangles,
        })
    }

    /// Multiplies every coordinate by `s` (e.g. 0.01 for a surface in centimetres).
    pub fn scale(&mut self, s: f64) {
        for p in &mut self.vertices {
            *p *= s;
        }
    }

    /// Axis-aligned bounding box of the vertices: (min, max).
    pub fn bounds(&self) -> (Vec3, Vec3) {
        self.vertices.iter().fold(
            (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
            |(lo, hi), p| (lo.inf(p), hi.sup(p)),
        )
    }

    /// Volume enclosed by the triangles (divergence theorem); positive for a closed
    /// surface wound counter-clockwise seen from outside.
    pub fn enclosed_volume(&self) -> f64 {
        self.triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|v| self.vertices[v]);
                a.dot(&b.cross(&c)) / 6.0
            })
            .sum()
    }

    /// Whether every edge is used exactly once in each direction (a closed, consistently
    /// wound surface without boundary or non-manifold edges).
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

/// Reads a surface by extension: `.obj` or `.stl`.
pub fn load_surface(path: &Path) -> Result<SurfaceMesh, MeshError> {
    crate::files::check_regular(path, crate::files::FileKind::Surface)?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("obj") => read_obj(path),
        Some("stl") => read_stl(path),
        other => Err(MeshError::Invalid {
            file: path.display().to_string(),
            msg: format!(
                "unknown surface extension {}; expected .obj or .stl",
                other.map_or("(none)".to_string(), |e| format!(".{e}"))
            ),
        }),
    }
}

/// Reads a Wavefront OBJ file; all objects and groups are merged, polygons triangulated.
pub fn read_obj(path: &Path) -> Result<SurfaceMesh, MeshError> {
    parse_obj(&path.display().to_string(), &read_bytes(path)?)
}

/// Parses the bytes of an OBJ file (see [`read_obj`]); `file` names it in errors. Material
/// libraries are not read (a surface has no use for them).
pub fn parse_obj(file: &str, bytes: &[u8]) -> Result<SurfaceMesh, MeshError> {
    let options = tobj::LoadOptions {
        triangulate: true,
        single_index: false,
        ..Default::default()
    };
    let text = positions_only(&String::from_utf8_lossy(bytes));
    let (models, _materials) = tobj::load_obj_buf(&mut text.as_bytes(), &options, |_| {
        Ok((Vec::new(), Default::default()))
    })
    .map_err(|e| MeshError::Invalid {
        file: file.to_string(),
        msg: format!("OBJ: {e}"),
    })?;
    let mut merger = VertexMerger::default();
    let mut triangles = Vec::new();
    for model in &models {
        let m = &model.mesh;
        let ids: Vec<usize> = m
            .positions
            .chunks_exact(3)
            .map(|p| merger.add(Vec3::new(p[0].into(), p[1].into(), p[2].into())))
            .collect();
        for (k, tri) in m.indices.chunks_exact(3).enumerate() {
            let mut t = [0; 3];
            for (slot, &i) in t.iter_mut().zip(tri) {
                *slot = *ids.get(i as usize).ok_or_else(|| MeshError::Invalid {
                    file: file.to_string(),
                    msg: format!(
                        "object `{}`, face {k}: vertex index {} out of range ({} vertices)",
                        model.name,
                        i as usize + 1,
                        ids.len()
                    ),
                })?;
            }
            triangles.push(t);
        }
    }
    SurfaceMesh::new(file, merger.vertices, triangles)
}

/// The OBJ text with every face, line and point element reduced to its position indices
/// (`f 1/4/2 …` becomes `f 1 …`). A surface needs positions only, and tobj 4.0.5
/// multiplies texture and normal indices without overflow checks (a normal index of
/// 9223372036854775807 panics in its `vn * 3 + 2`).
fn positions_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut tokens = line.split_whitespace();
        match tokens.next() {
            Some(keyword @ ("f" | "l" | "p")) => {
                out.push_str(keyword);
                for t in tokens {
                    out.push(' ');
                    out.push_str(t.split('/').next().unwrap_or(""));
                }
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Reads an STL file (ASCII or binary); identical vertices are merged.
pub fn read_stl(path: &Path) -> Result<SurfaceMesh, MeshError> {
    parse_stl(&path.display().to_string(), &read_bytes(path)?)
}

/// Parses the bytes of an STL file (see [`read_stl`]); `file` names it in errors.
pub fn parse_stl(file: &str, bytes: &[u8]) -> Result<SurfaceMesh, MeshError> {
    let mesh =
        stl_io::read_stl(&mut std::io::Cursor::new(bytes)).map_err(|e| MeshError::Invalid {
            file: file.to_string(),
            msg: format!("STL: {e}"),
        })?;
    let vertices = mesh
        .vertices
        .iter()
        .map(|v| Vec3::new(v[0].into(), v[1].into(), v[2].into()))
        .collect();
    let triangles = mesh.faces.iter().map(|f| f.vertices).collect();
    SurfaceMesh::new(file, vertices, triangles)
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, MeshError> {
    Ok(crate::files::read_bytes(
        path,
        crate::files::FileKind::Surface,
    )?)
}

/// Merges bit-identical vertex positions (OBJ objects each carry their own copies).
#[derive(Default)]
struct VertexMerger {
    vertices: Vec<Vec3>,
    index: HashMap<[u64; 3], usize>,
}

impl VertexMerger {
    fn add(&mut self, p: Vec3) -> usize {
        let key = [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()];
        *self.index.entry(key).or_insert_with(|| {
            self.vertices.push(p);
            self.vertices.len() - 1
        })
    }
}

/// The point of triangle (a, b, c) closest to `p` (Ericson, Real-Time Collision Detection
/// §5.1.5), as barycentric weights (u, v, w), each ≥ 0 and summing to 1, with
/// u·a + v·b + w·c the point; exact on edges and vertices. The lattice, the embedding and
/// the contact proxy all use this one routine.
pub fn closest_on_triangle(p: &Vec3, a: &Vec3, b: &Vec3, c: &Vec3) -> [f64; 3] {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(&ap);
    let d2 = ac.dot(&ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return [1.0, 0.0, 0.0];
    }
    let bp = p - b;
    let d3 = ab.dot(&bp);
    let d4 = ac.dot(&bp);
    if d3 >= 0.0 && d4 <= d3 {
        return [0.0, 1.0, 0.0];
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return [1.0 - v, v, 0.0];
    }
    let cp = p - c;
    let d5 = ab.dot(&cp);
    let d6 = ac.dot(&cp);
    if d6 >= 0.0 && d5 <= d6 {
        return [0.0, 0.0, 1.0];
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return [1.0 - w, 0.0, w];
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return [0.0, 1.0 - w, w];
    }
    let denom = 1.0 / (va + vb + vc);
    let v = vb * denom;
    let w = vc * denom;
    [1.0 - v - w, v, w]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_point_regions() {
        let [a, b, c] = [Vec3::zeros(), Vec3::x(), Vec3::y()];
        let at_barycentric =
            |w: &[f64; 3], a: &Vec3, b: &Vec3, c: &Vec3| a * w[0] + b * w[1] + c * w[2];
        let cases = [
            (Vec3::new(0.2, 0.2, 1.0), [0.6, 0.2, 0.2]),
            (Vec3::new(-1.0, -1.0, 0.5), [1.0, 0.0, 0.0]),
            (Vec3::new(2.0, -0.5, 0.0), [0.0, 1.0, 0.0]),
            (Vec3::new(0.5, -1.0, 0.0), [0.5, 0.5, 0.0]),
            (Vec3::new(1.0, 1.0, 0.0), [0.0, 0.5, 0.5]),
            (Vec3::new(-1.0, 0.25, 3.0), [0.75, 0.0, 0.25]),
        ];
        for (p, want) in cases {
            let w = closest_on_triangle(&p, &a, &b, &c);
            for k in 0..3 {
                assert!((w[k] - want[k]).abs() < 1e-12, "{p:?}: {w:?} vs {want:?}");
            }
            // Independent check: no sampled triangle point is closer.
            let q = at_barycentric(&w, &a, &b, &c);
            for i in 0..=20 {
                for j in 0..=(20 - i) {
                    let s = at_barycentric(
                        &[
                            1.0 - (i + j) as f64 / 20.0,
                            i as f64 / 20.0,
                            j as f64 / 20.0,
                        ],
                        &a,
                        &b,
                        &c,
                    );
                    assert!((p - q).norm() <= (p - s).norm() + 1e-12);
                }
            }
        }
    }

    #[test]
    fn validation_names_the_culprit() {
        let v = vec![
            Vec3::zeros(),
            Vec3::x(),
            Vec3::y(),
            Vec3::new(2.0, 0.0, 0.0),
        ];
        let e = SurfaceMesh::new("s.obj", v.clone(), vec![[0, 1, 2], [0, 1, 3]]).unwrap_err();
        assert!(e.to_string().contains("triangle 1: degenerate"), "{e}");
        let e = SurfaceMesh::new("s.obj", v.clone(), vec![[0, 1, 4]]).unwrap_err();
        assert!(
            e.to_string()
                .contains("triangle 0: vertex index 4 out of range"),
            "{e}"
        );
        let mut nan = v;
        nan[1].z = f64::NAN;
        let e = SurfaceMesh::new("s.obj", nan, vec![[0, 1, 2]]).unwrap_err();
        assert!(e.to_string().contains("vertex 1: non-finite"), "{e}");
    }
}
