//! Lattice tetrahedraliser: fills a closed triangle surface with a regular tetrahedral
//! lattice, for meshing scanned or modelled surfaces without an external mesher.
//!
//! Pipeline: (1) a box lattice of cubes of the given size covers the surface, each cube
//! split as [`CubeSplit`] says; (2) a tetrahedron is kept when its centroid is inside the
//! surface (winding number of a ray, accelerated by a 2-D grid of triangles); (3) edges
//! where kept tetrahedra meet only along the edge (non-manifold boundary) are filled with
//! the lattice tetrahedra around them, so the boundary is a closed manifold; (4) boundary
//! nodes are optionally snapped to the closest surface point when no incident tetrahedron
//! loses too much volume; (5) unreferenced lattice nodes are dropped and the rest
//! renumbered, and [`TetMesh::new`] validates the result.
//!
//! Hand-written: no Rust crate tetrahedralises a surface (TetGen-like crates wrap C++).

use std::collections::HashMap;

use super::generate::{for_each_cell_tet, CubeSplit};
use super::surface::{closest_on_triangle, SurfaceMesh};
use super::{signed_volume, MeshError, TetMesh};
use crate::Vec3;

/// Largest lattice the tetrahedraliser builds, in cubes (memory guard against a cell
/// size given in the wrong unit).
pub const MAX_CELLS: usize = 20_000_000;

/// A snapped boundary node may not shrink any incident tetrahedron below this fraction
/// of the smallest lattice tetrahedron's volume (h³/6); it moves less far instead.
pub const SNAP_MIN_VOLUME_RATIO: f64 = 0.2;

/// Choices of the lattice tetrahedraliser.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatticeOptions {
    /// How each lattice cube is split into tetrahedra.
    pub split: CubeSplit,
    /// Move boundary nodes onto the surface (better volume and shape; tetrahedra stay
    /// well-shaped because moves that flatten them are refused).
    pub snap: bool,
}

impl Default for LatticeOptions {
    fn default() -> Self {
        Self {
            split: CubeSplit::Six,
            snap: true,
        }
    }
}

/// Fills the closed `surface` with a tetrahedral lattice of cubes of edge `cell_size`
/// (same unit as the surface, m once scaled). All tetrahedra get region 0.
pub fn fill_surface(
    surface: &SurfaceMesh,
    cell_size: f64,
    options: LatticeOptions,
) -> Result<TetMesh, MeshError> {
    let source = format!("lattice (cell size {cell_size})");
    let invalid = |msg: String| MeshError::Invalid {
        file: source.clone(),
        msg,
    };
    if !(cell_size.is_finite() && cell_size > 0.0) {
        return Err(invalid(format!(
            "cell size must be positive, got {cell_size}"
        )));
    }
    if let Some((a, b)) = open_edge(surface) {
        return Err(invalid(format!(
            "the surface is not closed: edge from vertex {a} to vertex {b} has no opposite edge"
        )));
    }
    let lattice = Lattice::covering(surface, cell_size).ok_or_else(|| {
        invalid(format!(
            "cell size {cell_size} needs more than {MAX_CELLS} lattice cells for this surface"
        ))
    })?;
    let winding = WindingGrid::new(surface);
    let per_cell = match options.split {
        CubeSplit::Six => 6,
        CubeSplit::Five => 5,
    };
    let mut kept = classify(&lattice, options.split, per_cell, &winding);
    let selection = Selection {
        lattice: &lattice,
        split: options.split,
        per_cell,
    };
    let boundary = selection
        .close_non_manifold_edges(&mut kept)
        .map_err(invalid)?;

    // Renumber the referenced lattice points.
    const UNUSED: usize = usize::MAX;
    let mut new_id = vec![UNUSED; lattice.points()];
    let mut nodes = Vec::new();
    let mut tets = Vec::new();
    for (c, cell) in lattice.cell_coords().enumerate() {
        let (cell_tets, count) = cell_tets(cell, options.split);
        for (l, tet) in cell_tets[..count].iter().enumerate() {
            if kept[c * per_cell + l] {
                tets.push(tet.map(|p| {
                    let id = &mut new_id[lattice.point_id(p)];
                    if *id == UNUSED {
                        *id = nodes.len();
                        nodes.push(lattice.point(p));
                    }
                    *id
                }));
            }
        }
    }
    if tets.is_empty() {
        return Err(invalid(format!(
            "no lattice tetrahedron has its centroid inside the surface; cell size {cell_size} is too coarse"
        )));
    }
    if options.snap {
        let mut on_boundary = vec![false; nodes.len()];
        for face in &boundary {
            for p in face {
                on_boundary[new_id[lattice.point_id(*p)]] = true;
            }
        }
        snap_boundary(surface, cell_size, &mut nodes, &tets, &on_boundary);
    }
    let regions = vec![0; tets.len()];
    TetMesh::new(&source, nodes, tets, regions)
}

/// Whether each lattice tetrahedron (flat index cell · per_cell + local) has its centroid
/// inside the surface. Along a row of cells in x, the centroids of the tetrahedra with the
/// same local index and cell parity lie on one line parallel to x, so the surface
/// crossings of that line are found once and swept, instead of casting a ray per centroid.
fn classify(
    lattice: &Lattice,
    split: CubeSplit,
    per_cell: usize,
    winding: &WindingGrid,
) -> Vec<bool> {
    let mut kept = vec![false; lattice.cells() * per_cell];
    let [nx, ny, nz] = lattice.n;
    let mut crossings: Vec<(f64, i32)> = Vec::new();
    for k in 0..nz {
        for j in 0..ny {
            for parity in 0..nx.min(2) {
                let (tets, count) = cell_tets([parity, j, k], split);
                for (l, tet) in tets[..count].iter().enumerate() {
                    let centroid = tet.iter().map(|&p| lattice.point(p)).sum::<Vec3>() / 4.0;
                    crossings.clear();
                    winding.crossings([centroid.y, centroid.z], |x, sign| {
                        crossings.push((x, sign))
                    });
                    crossings.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
                    // Winding number left of every crossing; each crossing passed drops out.
                    let mut w: i32 = crossings.iter().map(|c| c.1).sum();
                    let mut next = 0;
                    for i in (parity..nx).step_by(2) {
                        let x = tet
                            .iter()
                            .map(|p| lattice.point([p[0] - parity + i, p[1], p[2]]).x)
                            .sum::<f64>()
                            / 4.0;
                        while next < crossings.len() && crossings[next].0 <= x {
                            w -= crossings[next].1;
                            next += 1;
                        }
                        kept[lattice.cell_index([i, j, k]) * per_cell + l] = w != 0;
                    }
                }
            }
        }
    }
    kept
}

/// The tetrahedra of a lattice cell as an array (6 or 5 used) for random access.
fn cell_tets(cell: [usize; 3], split: CubeSplit) -> ([[[usize; 3]; 4]; 6], usize) {
    let mut out = [[[0; 3]; 4]; 6];
    let mut count = 0;
    for_each_cell_tet(cell, split, |t| {
        out[count] = t;
        count += 1;
    });
    (out, count)
}

/// A directed surface edge without its opposite, if any.
fn open_edge(surface: &SurfaceMesh) -> Option<(usize, usize)> {
    let mut directed: HashMap<(usize, usize), u32> = HashMap::new();
    for t in &surface.triangles {
        for k in 0..3 {
            *directed.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
        }
    }
    directed
        .keys()
        .find(|&&(a, b)| !directed.contains_key(&(b, a)))
        .copied()
}

/// A box of `n` cubes of edge `h` from `origin`; lattice points are (i, j, k) with
/// 0 ≤ i ≤ n[0] etc.
struct Lattice {
    origin: Vec3,
    h: f64,
    n: [usize; 3],
}

impl Lattice {
    /// The lattice covering the surface's bounding box with one spare cell on each side.
    fn covering(surface: &SurfaceMesh, h: f64) -> Option<Self> {
        let (lo, hi) = surface.bounds();
        let mut n = [0; 3];
        let mut total = 1usize;
        for a in 0..3 {
            let cells = ((hi[a] - lo[a]) / h).ceil() + 2.0;
            if cells > MAX_CELLS as f64 {
                return None;
            }
            n[a] = cells as usize;
            total = total.checked_mul(n[a])?;
        }
        if total > MAX_CELLS {
            return None;
        }
        let centre = (lo + hi) / 2.0;
        let origin = centre - Vec3::new(n[0] as f64, n[1] as f64, n[2] as f64) * (h / 2.0);
        Some(Self { origin, h, n })
    }

    fn cells(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }

    /// Cell corner coordinates in flat order (x fastest).
    fn cell_coords(&self) -> impl Iterator<Item = [usize; 3]> + '_ {
        let [nx, ny, nz] = self.n;
        (0..nz).flat_map(move |k| (0..ny).flat_map(move |j| (0..nx).map(move |i| [i, j, k])))
    }

    fn cell_index(&self, c: [usize; 3]) -> usize {
        c[0] + self.n[0] * (c[1] + self.n[1] * c[2])
    }

    fn point(&self, p: [usize; 3]) -> Vec3 {
        self.origin + Vec3::new(p[0] as f64, p[1] as f64, p[2] as f64) * self.h
    }

    fn point_id(&self, p: [usize; 3]) -> usize {
        p[0] + (self.n[0] + 1) * (p[1] + (self.n[1] + 1) * p[2])
    }

    fn points(&self) -> usize {
        (self.n[0] + 1) * (self.n[1] + 1) * (self.n[2] + 1)
    }
}

/// Outward faces of a positively oriented tetrahedron (0, 1, 2, 3).
const FACES: [[usize; 3]; 4] = [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]];

/// The lattice with its cube split: answers which tetrahedra neighbour which, so the
/// boundary of a set of kept tetrahedra is found without hashing every face.
struct Selection<'l> {
    lattice: &'l Lattice,
    split: CubeSplit,
    per_cell: usize,
}

impl Selection<'_> {
    fn full(&self, kept: &[bool], c: [usize; 3]) -> bool {
        let i = self.lattice.cell_index(c) * self.per_cell;
        kept[i..i + self.per_cell].iter().all(|&k| k)
    }

    /// Outward boundary faces (as lattice points) of the kept tetrahedra. Cells that are
    /// full and whose six face neighbours are full are skipped: a tetrahedron's face is
    /// shared only within its cell or with the cell across a cube face.
    fn boundary_faces(&self, kept: &[bool]) -> Vec<[[usize; 3]; 3]> {
        let n = self.lattice.n;
        let mut faces = Vec::new();
        for (c, cell) in self.lattice.cell_coords().enumerate() {
            let flags = &kept[c * self.per_cell..(c + 1) * self.per_cell];
            if !flags.contains(&true) {
                continue;
            }
            let interior = flags.iter().all(|&k| k)
                && (0..3).all(|a| {
                    cell[a] > 0
                        && cell[a] + 1 < n[a]
                        && [cell[a] - 1, cell[a] + 1].iter().all(|&v| {
                            let mut nb = cell;
                            nb[a] = v;
                            self.full(kept, nb)
                        })
                });
            if interior {
                continue;
            }
            let (tets, count) = cell_tets(cell, self.split);
            for (l, tet) in tets[..count].iter().enumerate() {
                if !flags[l] {
                    continue;
                }
                for f in FACES {
                    let face = f.map(|i| tet[i]);
                    if !self.face_neighbour_kept(kept, cell, l, &face) {
                        faces.push(face);
                    }
                }
            }
        }
        faces
    }

    /// Whether the tetrahedron across `face` of tetrahedron `l` of `cell` is kept.
    fn face_neighbour_kept(
        &self,
        kept: &[bool],
        cell: [usize; 3],
        l: usize,
        face: &[[usize; 3]; 3],
    ) -> bool {
        // On a cube face: the neighbour is in the adjacent cell; otherwise in this cell.
        let mut other = cell;
        let mut same_cell = true;
        for a in 0..3 {
            let v = face[0][a];
            if face.iter().all(|p| p[a] == v) {
                same_cell = false;
                if v == cell[a] {
                    if v == 0 {
                        return false;
                    }
                    other[a] = v - 1;
                } else {
                    if v >= self.lattice.n[a] {
                        return false;
                    }
                    other[a] = v;
                }
            }
        }
        let (tets, count) = cell_tets(other, self.split);
        let base = self.lattice.cell_index(other) * self.per_cell;
        tets[..count]
            .iter()
            .enumerate()
            .find(|&(m, t)| (!same_cell || m != l) && face.iter().all(|p| t.contains(p)))
            .is_some_and(|(m, _)| kept[base + m])
    }

    /// Adds the lattice tetrahedra around every boundary edge where kept tetrahedra touch
    /// only along that edge (the edge then has four or more boundary faces), until there
    /// is none. Only ever adds, so it terminates. Returns the final boundary faces.
    fn close_non_manifold_edges(&self, kept: &mut [bool]) -> Result<Vec<[[usize; 3]; 3]>, String> {
        const MAX_ROUNDS: usize = 100;
        for _ in 0..MAX_ROUNDS {
            let faces = self.boundary_faces(kept);
            let mut directed: HashMap<([usize; 3], [usize; 3]), u32> = HashMap::new();
            for f in &faces {
                for k in 0..3 {
                    *directed.entry((f[k], f[(k + 1) % 3])).or_default() += 1;
                }
            }
            let bad: Vec<([usize; 3], [usize; 3])> = directed
                .into_iter()
                .filter(|&(_, count)| count > 1)
                .map(|(e, _)| e)
                .collect();
            if bad.is_empty() {
                return Ok(faces);
            }
            for (p, q) in bad {
                self.keep_around_edge(kept, p, q);
            }
        }
        Err(format!(
            "boundary still non-manifold after {MAX_ROUNDS} repair rounds"
        ))
    }

    /// Keeps every lattice tetrahedron that has the edge p–q.
    fn keep_around_edge(&self, kept: &mut [bool], p: [usize; 3], q: [usize; 3]) {
        let range = |a: usize| {
            let lo = p[a].max(q[a]).saturating_sub(1);
            let hi = p[a].min(q[a]).min(self.lattice.n[a] - 1);
            lo..=hi
        };
        for k in range(2) {
            for j in range(1) {
                for i in range(0) {
                    let base = self.lattice.cell_index([i, j, k]) * self.per_cell;
                    let (tets, count) = cell_tets([i, j, k], self.split);
                    for (l, tet) in tets[..count].iter().enumerate() {
                        if tet.contains(&p) && tet.contains(&q) {
                            kept[base + l] = true;
                        }
                    }
                }
            }
        }
    }
}

/// Fractions of the way to the surface a boundary node is moved, tried in order until no
/// incident tetrahedron gets too small. Partial moves matter: refusing whole moves refuses
/// mostly inward ones (they shrink tetrahedra), which biased the bunny's volume by +1%.
const SNAP_FRACTIONS: [f64; 4] = [1.0, 0.75, 0.5, 0.25];

/// Moves each boundary node towards its closest surface point (if within one cell size),
/// as far along [`SNAP_FRACTIONS`] as keeps every incident tetrahedron above
/// [`SNAP_MIN_VOLUME_RATIO`] of the smallest lattice tetrahedron's volume.
fn snap_boundary(
    surface: &SurfaceMesh,
    h: f64,
    nodes: &mut [Vec3],
    tets: &[[usize; 4]],
    on_boundary: &[bool],
) {
    let mut incident: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (e, tet) in tets.iter().enumerate() {
        for &n in tet {
            if on_boundary[n] {
                incident[n].push(e);
            }
        }
    }
    let volume = |nodes: &[Vec3], e: usize| {
        let [a, b, c, d] = tets[e].map(|n| nodes[n]);
        signed_volume(&a, &b, &c, &d)
    };
    // The smallest lattice tetrahedron (every Kuhn tetrahedron, the corner ones of Five).
    let lattice_volume = h * h * h / 6.0;
    let closest = ClosestGrid::new(surface, h);
    for n in (0..nodes.len()).filter(|&n| on_boundary[n]) {
        let Some(target) = closest.closest_within(&nodes[n], h) else {
            continue;
        };
        let old = nodes[n];
        let fraction = SNAP_FRACTIONS.into_iter().find(|&t| {
            nodes[n] = old + (target - old) * t;
            incident[n]
                .iter()
                .all(|&e| volume(nodes, e) >= SNAP_MIN_VOLUME_RATIO * lattice_volume)
        });
        if fraction.is_none() {
            nodes[n] = old;
        }
    }
}

/// Winding number of a closed triangle surface about a point, by counting signed
/// crossings of the ray from the point towards +x. Triangles are binned by their (y, z)
/// bounding boxes so a query only tests the few triangles its ray can cross.
///
/// Robustness: the query point is perturbed symbolically by (0, ε, ε²) in (x, y, z), and
/// each edge's orientation test is evaluated with its endpoints in a canonical order, so
/// a ray through a shared edge or vertex is counted exactly once.
struct WindingGrid<'a> {
    surface: &'a SurfaceMesh,
    lo: [f64; 2],
    bin: [f64; 2],
    n: [usize; 2],
    bins: Vec<Vec<u32>>,
}

impl<'a> WindingGrid<'a> {
    fn new(surface: &'a SurfaceMesh) -> Self {
        let (lo, hi) = surface.bounds();
        let side = ((surface.triangles.len() as f64).sqrt() * 1.5)
            .ceil()
            .max(1.0) as usize;
        let n = [side, side];
        let lo2 = [lo.y, lo.z];
        let bin = [
            ((hi.y - lo.y) / side as f64).max(f64::MIN_POSITIVE),
            ((hi.z - lo.z) / side as f64).max(f64::MIN_POSITIVE),
        ];
        let mut grid = Self {
            surface,
            lo: lo2,
            bin,
            n,
            bins: vec![Vec::new(); side * side],
        };
        for (t, tri) in surface.triangles.iter().enumerate() {
            let ps = tri.map(|v| surface.vertices[v]);
            let (mut y0, mut y1, mut z0, mut z1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
            for p in &ps {
                (y0, y1, z0, z1) = (y0.min(p.y), y1.max(p.y), z0.min(p.z), z1.max(p.z));
            }
            let (i0, i1) = (grid.index(0, y0), grid.index(0, y1));
            let (j0, j1) = (grid.index(1, z0), grid.index(1, z1));
            for j in j0..=j1 {
                for i in i0..=i1 {
                    grid.bins[i + n[0] * j].push(t as u32);
                }
            }
        }
        grid
    }

    fn index(&self, axis: usize, v: f64) -> usize {
        (((v - self.lo[axis]) / self.bin[axis]).floor().max(0.0) as usize).min(self.n[axis] - 1)
    }

    /// Calls `f(x, sign)` for every triangle the line {(·, q_y, q_z)} crosses: the x of the
    /// crossing and +1 or −1 by the triangle's orientation seen along x.
    fn crossings(&self, q: [f64; 2], mut f: impl FnMut(f64, i32)) {
        for a in 0..2 {
            if q[a] < self.lo[a] || q[a] > self.lo[a] + self.bin[a] * self.n[a] as f64 {
                return;
            }
        }
        let bin = self.index(0, q[0]) + self.n[0] * self.index(1, q[1]);
        for &t in &self.bins[bin] {
            let [a, b, c] = self.surface.triangles[t as usize].map(|v| self.surface.vertices[v]);
            let (ya, yb, yc) = ([a.y, a.z], [b.y, b.z], [c.y, c.z]);
            let (wa, sa) = edge(yb, yc, q);
            let (wb, sb) = edge(yc, ya, q);
            let (wc, sc) = edge(ya, yb, q);
            if sa == 0 || sa != sb || sb != sc {
                continue;
            }
            let sum = wa + wb + wc;
            if sum != 0.0 {
                f((wa * a.x + wb * b.x + wc * c.x) / sum, sa);
            }
        }
    }

    /// Signed number of times the surface winds around `p` (0 outside a closed surface).
    #[cfg(test)]
    fn winding_number(&self, p: &Vec3) -> i32 {
        let mut winding = 0;
        self.crossings([p.y, p.z], |x, sign| {
            if x > p.x {
                winding += sign;
            }
        });
        winding
    }
}

/// Orientation of q relative to the directed 2-D edge u→v: the determinant and its sign
/// under the symbolic perturbation q + (ε, ε²). Evaluated with (u, v) in lexicographic
/// order and negated if swapped, so both triangles sharing the edge see opposite signs.
fn edge(u: [f64; 2], v: [f64; 2], q: [f64; 2]) -> (f64, i32) {
    let (s, t, flip) = if (u[0], u[1]) <= (v[0], v[1]) {
        (u, v, 1)
    } else {
        (v, u, -1)
    };
    let det = (t[0] - s[0]) * (q[1] - s[1]) - (t[1] - s[1]) * (q[0] - s[0]);
    let sign = if det > 0.0 {
        1
    } else if det < 0.0 {
        -1
    } else if t[1] != s[1] {
        // d/dε of the determinant: −(t_z − s_z).
        if s[1] > t[1] {
            1
        } else {
            -1
        }
    } else if t[0] != s[0] {
        // d/dε² of the determinant: (t_y − s_y).
        if t[0] > s[0] {
            1
        } else {
            -1
        }
    } else {
        0
    };
    (flip as f64 * det, flip * sign)
}

/// Triangles binned in a uniform 3-D grid of cell `h`, for closest-point queries within
/// distance `h`.
struct ClosestGrid<'a> {
    surface: &'a SurfaceMesh,
    lo: Vec3,
    h: f64,
    n: [usize; 3],
    bins: HashMap<[usize; 3], Vec<u32>>,
}

impl<'a> ClosestGrid<'a> {
    fn new(surface: &'a SurfaceMesh, h: f64) -> Self {
        let (lo, hi) = surface.bounds();
        let n = [0, 1, 2].map(|a| ((hi[a] - lo[a]) / h).floor() as usize + 1);
        let mut bins: HashMap<[usize; 3], Vec<u32>> = HashMap::new();
        let cell = |p: &Vec3| {
            [0, 1, 2].map(|a| (((p[a] - lo[a]) / h).floor().max(0.0) as usize).min(n[a] - 1))
        };
        for (t, tri) in surface.triangles.iter().enumerate() {
            let ps = tri.map(|v| surface.vertices[v]);
            let c0 = cell(&ps[0].inf(&ps[1]).inf(&ps[2]));
            let c1 = cell(&ps[0].sup(&ps[1]).sup(&ps[2]));
            for k in c0[2]..=c1[2] {
                for j in c0[1]..=c1[1] {
                    for i in c0[0]..=c1[0] {
                        bins.entry([i, j, k]).or_default().push(t as u32);
                    }
                }
            }
        }
        Self {
            surface,
            lo,
            h,
            n,
            bins,
        }
    }

    /// The closest surface point to `p` if it is within `radius` ≤ h.
    fn closest_within(&self, p: &Vec3, radius: f64) -> Option<Vec3> {
        let mut best: Option<(f64, Vec3)> = None;
        let c = [0, 1, 2].map(|a| ((p[a] - self.lo[a]) / self.h).floor() as i64);
        for dk in -1..=1 {
            for dj in -1..=1 {
                for di in -1..=1 {
                    let q = [c[0] + di, c[1] + dj, c[2] + dk];
                    if (0..3).any(|a| q[a] < 0 || q[a] >= self.n[a] as i64) {
                        continue;
                    }
                    let Some(bin) = self.bins.get(&q.map(|v| v as usize)) else {
                        continue;
                    };
                    for &t in bin {
                        let [a, b, cc] =
                            self.surface.triangles[t as usize].map(|v| self.surface.vertices[v]);
                        let w = closest_on_triangle(p, &a, &b, &cc);
                        let x = a * w[0] + b * w[1] + cc * w[2];
                        let d = (x - p).norm();
                        if d <= radius && best.is_none_or(|(bd, _)| d < bd) {
                            best = Some((d, x));
                        }
                    }
                }
            }
        }
        best.map(|(_, x)| x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed axis-aligned cube surface [0, 1]³ with outward winding.
    fn cube_surface() -> SurfaceMesh {
        let m = super::super::generate::box_mesh(Vec3::new(1.0, 1.0, 1.0), [1, 1, 1]).unwrap();
        let b = m.boundary();
        SurfaceMesh::new("cube", m.nodes.clone(), b.triangles).unwrap()
    }

    #[test]
    fn winding_number_of_a_cube_including_rays_through_edges() {
        let s = cube_surface();
        let w = WindingGrid::new(&s);
        assert_eq!(w.winding_number(&Vec3::new(0.5, 0.5, 0.5)).abs(), 1);
        // Rays through the face diagonal, an edge and a vertex of the cube surface.
        assert_eq!(w.winding_number(&Vec3::new(0.5, 0.25, 0.25)).abs(), 1);
        assert_eq!(w.winding_number(&Vec3::new(0.1, 0.3, 0.3)).abs(), 1);
        assert_eq!(w.winding_number(&Vec3::new(-0.5, 0.0, 0.5)), 0);
        assert_eq!(w.winding_number(&Vec3::new(-0.5, 1.0, 1.0)), 0);
        assert_eq!(w.winding_number(&Vec3::new(1.5, 0.5, 0.5)), 0);
        assert_eq!(w.winding_number(&Vec3::new(0.5, 1.5, 0.5)), 0);
    }

    #[test]
    fn fills_a_cube_exactly_with_snapping() {
        let s = cube_surface();
        for split in [CubeSplit::Six, CubeSplit::Five] {
            let m = fill_surface(&s, 0.1, LatticeOptions { split, snap: true }).unwrap();
            let b = m.boundary();
            assert!(b.is_closed());
            assert!((m.volume() - 1.0).abs() < 1e-9, "{split:?}: {}", m.volume());
        }
    }

    #[test]
    fn open_surfaces_and_bad_cell_sizes_are_errors() {
        let mut s = cube_surface();
        s.triangles.pop();
        let e = fill_surface(&s, 0.1, LatticeOptions::default()).unwrap_err();
        assert!(e.to_string().contains("not closed"), "{e}");
        let s = cube_surface();
        let e = fill_surface(&s, 0.0, LatticeOptions::default()).unwrap_err();
        assert!(e.to_string().contains("positive"), "{e}");
        let e = fill_surface(&s, 1e-4, LatticeOptions::default()).unwrap_err();
        assert!(e.to_string().contains("lattice cells"), "{e}");
    }
}
