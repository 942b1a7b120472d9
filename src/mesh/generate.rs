//! Mesh generators: boxes and beams of tetrahedra, and the lattice cell splits shared with
//! the lattice tetrahedraliser.

use super::{MeshError, TetMesh};
use crate::Vec3;

/// Most hexahedral cells a generated box or lattice may have: 6 · 333,334 ≈ 2·10⁶
/// tetrahedra: a mesh at this limit already needs tens of GB to precompute (factor memory
/// grows faster than the element count; docs/benchmarks.md, "precompute memory"), so
/// past it an input would only exhaust memory.
pub const MAX_GENERATED_CELLS: usize = 333_334;

/// Tetrahedra of [`MAX_GENERATED_CELLS`] six-way split cells.
pub const MAX_GENERATED_TETS: usize = 6 * MAX_GENERATED_CELLS;

/// How each hexahedral cell of a lattice is split into tetrahedra.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CubeSplit {
    /// Six tetrahedra around the main diagonal (Kuhn/Freudenthal). Every cell is split the
    /// same way, so neighbours share face diagonals. All tetrahedra are congruent.
    #[default]
    Six,
    /// Five tetrahedra: four corner tetrahedra and a central regular one. The central
    /// tetrahedron uses the cell corners whose lattice coordinates sum to an even number, so
    /// neighbouring cells alternate orientation and still share face diagonals. Fewer, but
    /// less uniform, elements.
    Five,
}

/// Calls `f` with the tetrahedra of lattice cell `cell` (corner (i, j, k) to
/// (i+1, j+1, k+1)) as lattice points, positively oriented.
pub(crate) fn for_each_cell_tet(
    cell: [usize; 3],
    split: CubeSplit,
    mut f: impl FnMut([[usize; 3]; 4]),
) {
    let corner = |bits: [usize; 3]| [cell[0] + bits[0], cell[1] + bits[1], cell[2] + bits[2]];
    let mut emit = |mut tet: [[usize; 3]; 4]| {
        let d = |p: [usize; 3], q: [usize; 3]| [0, 1, 2].map(|a| p[a] as i64 - q[a] as i64);
        let (u, v, w) = (d(tet[1], tet[0]), d(tet[2], tet[0]), d(tet[3], tet[0]));
        let det = u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0])
            + u[2] * (v[0] * w[1] - v[1] * w[0]);
        if det < 0 {
            tet.swap(2, 3);
        }
        f(tet);
    };
    match split {
        CubeSplit::Six => {
            // Paths from corner (0,0,0) to (1,1,1) along the axes in each of the 6 orders.
            const ORDERS: [[usize; 3]; 6] = [
                [0, 1, 2],
                [0, 2, 1],
                [1, 0, 2],
                [1, 2, 0],
                [2, 0, 1],
                [2, 1, 0],
            ];
            for order in ORDERS {
                let mut bits = [0; 3];
                let mut tet = [corner(bits); 4];
                for (step, &axis) in order.iter().enumerate() {
                    bits[axis] = 1;
                    tet[step + 1] = corner(bits);
                }
                emit(tet);
            }
        }
        CubeSplit::Five => {
            let mut central = Vec::with_capacity(4);
            for n in 0..8 {
                let bits = [n & 1, (n >> 1) & 1, (n >> 2) & 1];
                let p = corner(bits);
                if (p[0] + p[1] + p[2]) % 2 == 0 {
                    central.push(p);
                } else {
                    // A cut-off corner and its three neighbours along the cell edges.
                    let flip = |a: usize| {
                        let mut b = bits;
                        b[a] ^= 1;
                        corner(b)
                    };
                    emit([p, flip(0), flip(1), flip(2)]);
                }
            }
            emit([central[0], central[1], central[2], central[3]]);
        }
    }
}

/// A box [0, size.x] × [0, size.y] × [0, size.z] of `cells` hexahedral cells, each split
/// into six tetrahedra (see [`CubeSplit::Six`]).
pub fn box_mesh(size: Vec3, cells: [usize; 3]) -> Result<TetMesh, MeshError> {
    box_mesh_split(size, cells, CubeSplit::Six)
}

/// A box [0, size.x] × [0, size.y] × [0, size.z] (m) of `cells` hexahedral cells (at most
/// [`MAX_GENERATED_CELLS`] in all), each split into tetrahedra as `split` says. Region 0
/// everywhere.
pub fn box_mesh_split(
    size: Vec3,
    cells: [usize; 3],
    split: CubeSplit,
) -> Result<TetMesh, MeshError> {
    let source = format!("box {}x{}x{}", cells[0], cells[1], cells[2]);
    if cells.contains(&0) || !size.iter().all(|s| s.is_finite() && *s > 0.0) {
        return Err(MeshError::Invalid {
            file: source,
            msg: format!("box needs positive size and cell counts, got {size:?} and {cells:?}"),
        });
    }
    let cell_count = cells.iter().try_fold(1usize, |n, &c| n.checked_mul(c));
    if cell_count.is_none_or(|n| n > MAX_GENERATED_CELLS) {
        return Err(MeshError::Invalid {
            file: source,
            msg: format!(
                "{cells:?} cells exceed the limit of {MAX_GENERATED_CELLS} cells \
                 ({MAX_GENERATED_TETS} tetrahedra)"
            ),
        });
    }
    let axis = |a: usize| {
        (0..=cells[a])
            .map(|i| size[a] * i as f64 / cells[a] as f64)
            .collect::<Vec<_>>()
    };
    grid_mesh(&source, [&axis(0), &axis(1), &axis(2)], split)
}

/// A box of hexahedral cells on the tensor grid of the node coordinates `axes` (m,
/// strictly increasing, at least two per axis), each cell split into tetrahedra as
/// `split` says. Region 0 everywhere; `source` names it in errors.
pub fn grid_mesh(source: &str, axes: [&[f64]; 3], split: CubeSplit) -> Result<TetMesh, MeshError> {
    let invalid = |msg: String| MeshError::Invalid {
        file: source.to_string(),
        msg,
    };
    for (a, xs) in axes.iter().enumerate() {
        if xs.len() < 2 || !xs.iter().all(|x| x.is_finite()) || xs.windows(2).any(|w| w[1] <= w[0])
        {
            return Err(invalid(format!(
                "grid axis {a} needs at least two strictly increasing finite coordinates"
            )));
        }
    }
    let [nx, ny, nz] = axes.map(|xs| xs.len() - 1);
    let cell_count = [nx, ny, nz]
        .iter()
        .try_fold(1usize, |n, &c| n.checked_mul(c));
    if cell_count.is_none_or(|n| n > MAX_GENERATED_CELLS) {
        return Err(invalid(format!(
            "{:?} cells exceed the limit of {MAX_GENERATED_CELLS} cells \
             ({MAX_GENERATED_TETS} tetrahedra)",
            [nx, ny, nz]
        )));
    }
    let id = |p: [usize; 3]| p[0] + (nx + 1) * (p[1] + (ny + 1) * p[2]);
    let mut nodes = Vec::with_capacity((nx + 1) * (ny + 1) * (nz + 1));
    for &z in axes[2] {
        for &y in axes[1] {
            for &x in axes[0] {
                nodes.push(Vec3::new(x, y, z));
            }
        }
    }
    let mut tets = Vec::with_capacity(6 * nx * ny * nz);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                for_each_cell_tet([i, j, k], split, |t| tets.push(t.map(id)));
            }
        }
    }
    let regions = vec![0; tets.len()];
    TetMesh::new(source, nodes, tets, regions)
}

/// Node coordinates on [`lo`, `hi`] (m) graded away from `focus` (clamped into the
/// interval, and always a node): cells of `fine` (m) at the focus, each next one
/// `growth` (≥ 1) times the last, the last cell on each side stretched or merged so
/// the ends are met exactly (a cell never shorter than half the one before it).
pub fn graded_axis(lo: f64, hi: f64, focus: f64, fine: f64, growth: f64) -> Vec<f64> {
    let focus = focus.clamp(lo, hi);
    let side = |length: f64| {
        let mut steps = Vec::new();
        let (mut at, mut h) = (0.0, fine);
        while length - at > 1e-12 * length.max(fine) {
            if length - at < 1.5 * h {
                steps.push(length);
                break;
            }
            at += h;
            steps.push(at);
            h *= growth.max(1.0);
        }
        steps
    };
    let mut xs: Vec<f64> = side(focus - lo).iter().rev().map(|d| focus - d).collect();
    xs.push(focus);
    xs.extend(side(hi - focus).iter().map(|d| focus + d));
    if let Some(first) = xs.first_mut() {
        *first = first.max(lo);
    }
    xs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_volume_and_closed_boundary() {
        let m = box_mesh(Vec3::new(2.0, 1.0, 0.5), [4, 3, 2]).unwrap();
        assert_eq!(m.nodes.len(), 5 * 4 * 3);
        assert_eq!(m.tets.len(), 6 * 24);
        assert!(m.notes.is_empty());
        assert!((m.volume() - 1.0).abs() < 1e-12);
        let b = m.boundary();
        assert!(b.is_closed());
        assert!((b.enclosed_volume(&m.nodes) - 1.0).abs() < 1e-12);
        // Every node of a 5x4x3 grid except the 3x2x1 interior ones is on the surface.
        assert_eq!(b.nodes.len(), 60 - 6);
    }

    #[test]
    fn both_splits_conform_with_exact_volume() {
        let size = Vec3::new(0.3, 0.2, 0.1);
        for (split, per_cell) in [(CubeSplit::Six, 6), (CubeSplit::Five, 5)] {
            let m = box_mesh_split(size, [3, 4, 5], split).unwrap();
            assert_eq!(m.tets.len(), per_cell * 60, "{split:?}");
            assert!(m.notes.is_empty(), "{split:?}: {:?}", m.notes);
            assert!((m.volume() - 0.006).abs() < 1e-15, "{split:?}");
            let b = m.boundary();
            assert!(b.is_closed(), "{split:?}");
            // Conforming: no interior face is left unmatched, so the boundary is exactly
            // two triangles per outer cell face.
            assert_eq!(b.triangles.len(), 2 * 2 * (12 + 20 + 15), "{split:?}");
            assert!(
                (b.enclosed_volume(&m.nodes) - 0.006).abs() < 1e-15,
                "{split:?}"
            );
            // Every tetrahedron is positively oriented and the same size within a split.
            let v0 = m.tet_volume(0);
            assert!(v0 > 0.0);
            if split == CubeSplit::Six {
                assert!((0..m.tets.len()).all(|e| (m.tet_volume(e) - v0).abs() < 1e-18));
            }
        }
    }

    #[test]
    fn empty_box_is_an_error() {
        assert!(box_mesh(Vec3::new(1.0, 1.0, 1.0), [0, 1, 1]).is_err());
        assert!(box_mesh(Vec3::new(1.0, -1.0, 1.0), [1, 1, 1]).is_err());
    }

    #[test]
    fn graded_axis_is_fine_at_the_focus_and_meets_the_ends() {
        let xs = graded_axis(-0.02, 0.03, 0.0, 5e-4, 1.25);
        assert_eq!(xs[0], -0.02);
        assert_eq!(*xs.last().unwrap(), 0.03);
        assert!(xs.contains(&0.0));
        assert!(xs.windows(2).all(|w| w[1] > w[0]));
        let at = xs.iter().position(|&x| x == 0.0).unwrap();
        assert!((xs[at + 1] - 5e-4).abs() < 1e-15 && (xs[at - 1] + 5e-4).abs() < 1e-15);
        // Neighbouring cells differ by at most the growth (the end cells by 2.5x).
        for w in xs.windows(3) {
            let ratio = (w[2] - w[1]) / (w[1] - w[0]);
            assert!((1.0 / 2.5..=2.5).contains(&ratio), "{ratio} in {xs:?}");
        }
    }

    #[test]
    fn graded_grid_is_conforming_with_exact_volume() {
        let xs = graded_axis(-0.01, 0.01, 0.0, 1e-3, 1.5);
        let zs = graded_axis(-0.01, 0.0, 0.0, 1e-3, 1.5);
        let m = grid_mesh("graded", [&xs, &xs, &zs], CubeSplit::Five).unwrap();
        assert!((m.volume() - 0.02 * 0.02 * 0.01).abs() < 1e-15);
        let b = m.boundary();
        assert!(b.is_closed());
        assert!((0..m.tets.len()).all(|e| m.tet_volume(e) > 0.0));
        assert!(grid_mesh("bad", [&xs, &[0.0], &zs], CubeSplit::Six).is_err());
    }
}
