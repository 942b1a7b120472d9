//! How far a loaded node's influence reaches: for each complete column, the largest
//! compliance block beyond a few distances from the loaded node. The contact uses it
//! to refresh only the surface a probe's loads can bring within its reach, where a
//! single bound over the whole mesh (the column's largest block, at the loaded node
//! itself) made it refresh the whole top of the default block.

use std::sync::Arc;

use super::DofMap;
use crate::Vec3;

/// Number of distances each column records.
pub(super) const BANDS: usize = 8;

/// The distances (m) a column records its far blocks at, and the rest position of
/// every free node.
#[derive(Clone, Debug)]
pub(super) struct DistanceBands {
    /// Rest position of each free node (m), in free-node order.
    positions: Arc<[Vec3]>,
    /// Ascending radii (m): half the mesh's bounding-box diagonal, halved down to the
    /// first.
    radii: [f64; BANDS],
}

impl DistanceBands {
    /// Bands over free nodes at rest positions `positions` (m, free-node order).
    pub(super) fn new(positions: &[Vec3]) -> Self {
        let (mut lo, mut hi) = (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY));
        for p in positions {
            lo = lo.inf(p);
            hi = hi.sup(p);
        }
        let half_diagonal = if positions.is_empty() {
            0.0
        } else {
            0.5 * (hi - lo).norm()
        };
        let radii = std::array::from_fn(|j| half_diagonal / f64::powi(2.0, (BANDS - 1 - j) as i32));
        Self {
            positions: positions.into(),
            radii,
        }
    }

    /// Rest position (m) of free node `free` (its free-node index).
    pub(super) fn position(&self, free: usize) -> Vec3 {
        self.positions[free]
    }

    /// `beyond[j]` = the largest Frobenius norm of a 3×3 block of a node-major column
    /// `values` (3·n_nodes × 3, row-major) at the free nodes at least `radii[j]` from
    /// `centre` (m); 0 where there are none.
    pub(super) fn far_blocks(&self, dofs: &DofMap, values: &[f64], centre: Vec3) -> [f64; BANDS] {
        let mut beyond = [0.0f64; BANDS];
        for (p, &u) in self.positions.iter().zip(dofs.free_nodes()) {
            let d = (p - centre).norm();
            let bands = self.radii.partition_point(|&r| r <= d);
            if bands > 0 {
                let b = &values[9 * u..9 * u + 9];
                let norm2 = b.iter().map(|x| x * x).sum::<f64>();
                beyond[bands - 1] = beyond[bands - 1].max(norm2);
            }
        }
        // Nodes beyond radii[j] include those beyond every larger radius.
        for j in (0..BANDS - 1).rev() {
            beyond[j] = beyond[j].max(beyond[j + 1]);
        }
        beyond.map(f64::sqrt)
    }

    /// The largest block beyond `distance` (m) of a column with far blocks `beyond`
    /// and largest block `max_block`: `beyond` at the largest radius not above
    /// `distance`, `max_block` below the first.
    pub(super) fn block_beyond(&self, beyond: &[f64; BANDS], max_block: f64, distance: f64) -> f64 {
        match self.radii.partition_point(|&r| r <= distance) {
            0 => max_block,
            j => beyond[j - 1],
        }
    }
}
