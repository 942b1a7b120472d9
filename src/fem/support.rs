//! A material point as weighted mesh nodes: the barycentric point of a surface
//! triangle (its linear shape functions), or a patch of nodes under a probe's footprint.
//! Constraints measure and load the tissue through these weights.

use crate::Vec3;

/// Most nodes a [`Support`] holds (a sphere's footprint on 0.5 mm cells covers about
/// 170): a contact patch keeps its largest weights when more
/// surface nodes than this lie within its radius.
pub const MAX_SUPPORT_NODES: usize = 192;

/// A material point of the surface as weighted mesh nodes (weights sum to 1): it moves
/// by Σ_v w_v u_v, and a force f on it puts w_v f on each node v. Measuring and loading
/// through the same weights keeps the compliance wᵀ C w symmetric. Either the
/// barycentric point of one triangle, or a contact patch: the footprint of a probe tip
/// spread over the surface nodes around the contact point (see
/// the contact module's patch). Plain `Copy` data, no allocation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Support {
    len: usize,
    nodes: [usize; MAX_SUPPORT_NODES],
    weights: [f64; MAX_SUPPORT_NODES],
    /// Rest position of the material point (m) when it is not Σ w_v rest[v] (a patch on
    /// a curved surface: the contact point, not the chord average of the patch).
    origin: Option<Vec3>,
}

impl Support {
    /// The barycentric point with weights `weights` on the triangle `nodes`.
    pub fn triangle(nodes: [usize; 3], weights: [f64; 3]) -> Self {
        let mut s = Self::empty();
        s.len = 3;
        s.nodes[..3].copy_from_slice(&nodes);
        s.weights[..3].copy_from_slice(&weights);
        s
    }

    /// A single mesh node.
    pub fn node(node: usize) -> Self {
        let mut s = Self::empty();
        s.len = 1;
        s.nodes[0] = node;
        s.weights[0] = 1.0;
        s
    }

    /// A patch of `(node, weight)` pairs (weights ≥ 0, normalised here to sum 1) whose
    /// material point rests at `origin` (m). Keeps the [`MAX_SUPPORT_NODES`] largest
    /// weights. `None` if no weight is positive.
    pub fn patch(pairs: impl IntoIterator<Item = (usize, f64)>, origin: Vec3) -> Option<Self> {
        Self::patch_of_at_most(MAX_SUPPORT_NODES, pairs, origin)
    }

    /// As [`Support::patch`], keeping the `most` (at most [`MAX_SUPPORT_NODES`]) largest
    /// weights.
    pub fn patch_of_at_most(
        most: usize,
        pairs: impl IntoIterator<Item = (usize, f64)>,
        origin: Vec3,
    ) -> Option<Self> {
        let most = most.clamp(1, MAX_SUPPORT_NODES);
        let mut s = Self::empty();
        for (v, w) in pairs {
            if !(w > 0.0 && w.is_finite()) {
                continue;
            }
            if s.len < most {
                s.nodes[s.len] = v;
                s.weights[s.len] = w;
                s.len += 1;
            } else {
                let (i, &smallest) = s.weights[..most]
                    .iter()
                    .enumerate()
                    .min_by(|a, b| a.1.total_cmp(b.1))
                    .expect("MAX_SUPPORT_NODES > 0");
                if w > smallest {
                    s.nodes[i] = v;
                    s.weights[i] = w;
                }
            }
        }
        let total: f64 = s.weights[..s.len].iter().sum();
        if s.len == 0 || !(total > 0.0 && total.is_finite()) {
            return None;
        }
        for w in &mut s.weights[..s.len] {
            *w /= total;
        }
        s.origin = Some(origin);
        Some(s)
    }

    fn empty() -> Self {
        Self {
            len: 0,
            nodes: [0; MAX_SUPPORT_NODES],
            weights: [0.0; MAX_SUPPORT_NODES],
            origin: None,
        }
    }

    /// The mesh nodes carrying the point.
    pub fn nodes(&self) -> &[usize] {
        &self.nodes[..self.len]
    }

    /// Their weights (sum 1), in the order of [`Support::nodes`].
    pub fn weights(&self) -> &[f64] {
        &self.weights[..self.len]
    }

    /// `(node, weight)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.nodes()
            .iter()
            .copied()
            .zip(self.weights().iter().copied())
    }

    /// A unit force along `direction` at the material point as (DOF, N) pairs, DOF =
    /// 3 · node + axis: what the point's motion along `direction` is measured by and
    /// its force acts through. Zero entries are left out.
    pub fn along(&self, direction: Vec3) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.iter()
            .flat_map(move |(v, w)| (0..3).map(move |a| (3 * v + a, w * direction[a])))
            .filter(|&(_, w)| w != 0.0)
    }

    /// Rest position of the material point (m): the patch's contact point, or
    /// Σ w_v · rest\[v\].
    pub fn rest_point(&self, rest: &[Vec3]) -> Vec3 {
        self.origin
            .unwrap_or_else(|| self.iter().map(|(v, w)| rest[v] * w).sum())
    }

    /// Displacement of the material point (m), Σ w_v u_v, from the displacements `u`
    /// of the support's nodes in [`Support::nodes`] order.
    pub fn displacement(&self, u: &[Vec3]) -> Vec3 {
        self.weights().iter().zip(u).map(|(&w, u)| u * w).sum()
    }

    /// Whether every weight and the rest point are finite numbers.
    pub fn is_finite(&self) -> bool {
        self.weights().iter().all(|w| w.is_finite())
            && self.origin.is_none_or(|o| o.iter().all(|x| x.is_finite()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_support_normalises_and_keeps_the_largest_weights() {
        let origin = Vec3::new(1.0, 2.0, 3.0);
        let s = Support::patch([(4, 1.0), (7, 3.0), (9, 0.0), (2, f64::NAN)], origin).unwrap();
        assert_eq!(s.nodes(), &[4, 7]);
        assert_eq!(s.weights(), &[0.25, 0.75]);
        assert_eq!(s.rest_point(&[]), origin);
        assert!(Support::patch([(1, 0.0)], origin).is_none());
        // More nodes than fit: the smallest weights go.
        let many = (0..MAX_SUPPORT_NODES + 10).map(|v| (v, 1.0 + v as f64));
        let s = Support::patch(many, origin).unwrap();
        assert_eq!(s.nodes().len(), MAX_SUPPORT_NODES);
        assert!(s.nodes().iter().all(|&v| v >= 10));
        assert!((s.weights().iter().sum::<f64>() - 1.0).abs() < 1e-15);
        // A triangle point rests at its barycentric point.
        let rest = [Vec3::zeros(), Vec3::x(), Vec3::y()];
        let t = Support::triangle([0, 1, 2], [0.5, 0.25, 0.25]);
        assert_eq!(t.rest_point(&rest), Vec3::new(0.25, 0.25, 0.0));
    }
}
