//! Room in a full basis: the oldest static shapes give way to one shape, their part of
//! the displacement itself, so the state is kept exactly while the newest shapes (the
//! contact's latest corrections) stay.

use super::model::ReducedStatics;
use super::newton::size;

/// How a basis was recycled: old coordinates = `transform` · new ones.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::nonlinear) struct Recycled {
    /// Row-major r_old × r_new, orthonormal columns (each new shape a unit combination
    /// of old ones, none shared).
    pub(in crate::nonlinear) transform: Vec<f64>,
    /// Shapes before.
    pub(in crate::nonlinear) before: usize,
    /// Shapes after.
    pub(in crate::nonlinear) after: usize,
}

impl Recycled {
    /// The new coordinates of an old state q (its K-projection on the new basis):
    /// Tᵀq (q shorter than the old basis: the missing coordinates are 0).
    pub(in crate::nonlinear) fn project(&self, q: &[f64]) -> Vec<f64> {
        (0..self.after)
            .map(|j| {
                (0..self.before.min(q.len()))
                    .map(|i| self.transform[i * self.after + j] * q[i])
                    .sum()
            })
            .collect()
    }
}

impl ReducedStatics {
    /// Keeps the first `keep` shapes (the dynamic ones) and the newest `newest` of the
    /// others; the displacement the rest carry at q, U_d q_d, becomes one shape
    /// (K-normalised: |q_d|, the basis being K-orthonormal), so U q is kept exactly, and q
    /// becomes its coordinates in the new basis (q may be shorter than the basis: the
    /// missing coordinates are 0). Shapes with no part of the state are dropped.
    /// Counts as a restart. The active terms stay; a cubature offset is carried over.
    pub(in crate::nonlinear) fn recycle(
        &mut self,
        q: &mut Vec<f64>,
        keep: usize,
        newest: usize,
    ) -> Recycled {
        let r = self.shapes;
        q.resize(r, 0.0);
        let keep = keep.min(r);
        let newest = newest.min(r - keep);
        let dropped = keep..r - newest;
        let norm = size(&q[dropped.clone()]);
        let merged = usize::from(norm > 0.0);
        let after = keep + merged + newest;
        let mut transform = vec![0.0; r * after];
        for j in 0..keep {
            transform[j * after + j] = 1.0;
        }
        if merged == 1 {
            for j in dropped.clone() {
                transform[j * after + keep] = q[j] / norm;
            }
        }
        for i in 0..newest {
            transform[(r - newest + i) * after + keep + merged + i] = 1.0;
        }
        let coefficients: Vec<(usize, f64)> = dropped
            .clone()
            .map(|j| (j, q[j] / norm.max(f64::MIN_POSITIVE)))
            .collect();
        for table in [&mut self.basis, &mut self.stiffness] {
            for row in table.chunks_exact_mut(self.capacity) {
                let combined: f64 = coefficients.iter().map(|&(j, c)| row[j] * c).sum();
                row.copy_within(r - newest..r, keep + merged);
                if merged == 1 {
                    row[keep] = combined;
                }
            }
        }
        let recycled = Recycled {
            transform,
            before: r,
            after,
        };
        let mut new_q = recycled.project(q);
        new_q.truncate(after);
        *q = new_q;
        self.shapes = after;
        self.revision += 1;
        self.restarts += 1;
        if let Some(offset) = self.quadrature.offset.take() {
            self.quadrature.offset = Some(offset.transformed(&recycled.transform, after));
        }
        recycled
    }

    /// Takes a mirror's recycled basis (U and KU tables with `shapes` shapes and its
    /// restarts, as [`ReducedStatics::tables`] gave them) as this one's.
    pub(in crate::nonlinear) fn adopt(
        &mut self,
        tables: (Vec<f64>, Vec<f64>),
        shapes: usize,
        restarts: u64,
    ) {
        self.basis = tables.0;
        self.stiffness = tables.1;
        self.shapes = shapes;
        self.restarts = restarts;
        self.revision += 1;
    }

    /// Copies of the U and KU tables, for a model to [`ReducedStatics::adopt`].
    pub(in crate::nonlinear) fn tables(&self) -> (Vec<f64>, Vec<f64>) {
        (self.basis.clone(), self.stiffness.clone())
    }
}

#[cfg(test)]
mod tests {
    use crate::nonlinear::test_block::fixed_base_block;
    use crate::nonlinear::{LawKind, ReducedStatics};
    use crate::Vec3;

    /// Recycled, the displacement is the same to round-off, the basis stays
    /// K-orthonormal, and the newest shapes are kept as they were.
    #[test]
    fn a_recycled_basis_keeps_the_state_and_its_newest_shapes() {
        let (mesh, statics, top) = fixed_base_block([4, 4, 2], LawKind::NeoHookean);
        let mut reduced = ReducedStatics::new(statics, 8).expect("reduced");
        let n = 3 * mesh.nodes.len();
        for d in [
            3 * top + 2,
            3 * (top - 1),
            3 * (top + 1) + 1,
            3 * (top - 5) + 2,
            3 * top,
        ] {
            let mut force = vec![0.0; n];
            force[d] = 1.0;
            reduced.add_shape(&force).expect("shape");
        }
        assert_eq!(reduced.shapes(), 5);
        let q = vec![0.3, -0.2, 0.5, 0.1, -0.4];
        let mut before = vec![Vec3::zeros(); mesh.nodes.len()];
        reduced.displacement(&q, &mut before);
        let newest = reduced.shape_columns(4);
        let mut q2 = q.clone();
        let recycled = reduced.recycle(&mut q2, 1, 2);
        assert_eq!(
            (recycled.before, recycled.after, reduced.shapes()),
            (5, 4, 4)
        );
        let mut after = vec![Vec3::zeros(); mesh.nodes.len()];
        reduced.displacement(&q2, &mut after);
        let worst = before
            .iter()
            .zip(&after)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max);
        assert!(worst < 1e-15, "moved by {worst} m");
        assert!(reduced.orthonormality_error() < 1e-12);
        assert_eq!(reduced.shape_columns(3), newest);
        assert_eq!(q2[0], q[0]);
    }
}
