//! Mesh generators: boxes and beams of tetrahedra.

use super::{signed_volume, MeshError, TetMesh};
use crate::Vec3;

/// A box [0, size.x] × [0, size.y] × [0, size.z] of `cells` hexahedral cells, each split
/// into six tetrahedra along its main diagonal (Kuhn/Freudenthal subdivision). Every cell
/// is split the same way, so neighbouring cells share face diagonals and the mesh is
/// conforming.
pub fn box_mesh(size: Vec3, cells: [usize; 3]) -> Result<TetMesh, MeshError> {
    let source = format!("box {}x{}x{}", cells[0], cells[1], cells[2]);
    if cells.contains(&0) || !size.iter().all(|s| s.is_finite() && *s > 0.0) {
        return Err(MeshError::Invalid {
            file: source,
            msg: format!("box needs positive size and cell counts, got {size:?} and {cells:?}"),
        });
    }
    let [nx, ny, nz] = cells;
    let id = |i: usize, j: usize, k: usize| i + (nx + 1) * (j + (ny + 1) * k);
    let mut nodes = Vec::with_capacity((nx + 1) * (ny + 1) * (nz + 1));
    for k in 0..=nz {
        for j in 0..=ny {
            for i in 0..=nx {
                nodes.push(Vec3::new(
                    size.x * i as f64 / nx as f64,
                    size.y * j as f64 / ny as f64,
                    size.z * k as f64 / nz as f64,
                ));
            }
        }
    }
    // Paths from corner (0,0,0) to (1,1,1) along the axes in each of the 6 orders.
    const ORDERS: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut tets = Vec::with_capacity(6 * nx * ny * nz);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                for order in ORDERS {
                    let mut c = [i, j, k];
                    let mut tet = [id(c[0], c[1], c[2]); 4];
                    for (step, &axis) in order.iter().enumerate() {
                        c[axis] += 1;
                        tet[step + 1] = id(c[0], c[1], c[2]);
                    }
                    let [a, b, cc, d] = tet.map(|n| nodes[n]);
                    if signed_volume(&a, &b, &cc, &d) < 0.0 {
                        tet.swap(2, 3);
                    }
                    tets.push(tet);
                }
            }
        }
    }
    let regions = vec![0; tets.len()];
    TetMesh::new(&source, nodes, tets, regions)
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
    fn empty_box_is_an_error() {
        assert!(box_mesh(Vec3::new(1.0, 1.0, 1.0), [0, 1, 1]).is_err());
        assert!(box_mesh(Vec3::new(1.0, -1.0, 1.0), [1, 1, 1]).is_err());
    }
}
