//! What the reduced forces are summed over: every active element with weight 1, or a
//! cubature's few elements and weights, optionally made exact to first order at one
//! state by the full sum's forces and tangent there ([`TaylorOffset`]).

/// (element, weight) pairs the reduced forces are summed over, their nodes, and the
/// offset that makes a cubature exact to first order at one state.
#[derive(Clone, Debug, Default)]
pub(super) struct Quadrature {
    /// (element, weight ≥ 0, dimensionless) pairs.
    pub(super) elements: Vec<(usize, f64)>,
    /// The elements' nodes, ascending.
    pub(super) nodes: Vec<usize>,
    /// The full sum less this one, to first order about a state; `None` for the full
    /// sum itself and for a bare cubature.
    pub(super) offset: Option<TaylorOffset>,
}

impl Quadrature {
    /// Over `elements`, whose nodes `tets` gives.
    pub(super) fn new(elements: Vec<(usize, f64)>, tets: &[[usize; 4]]) -> Self {
        let mut nodes: Vec<usize> = elements.iter().flat_map(|&(el, _)| tets[el]).collect();
        nodes.sort_unstable();
        nodes.dedup();
        Self {
            elements,
            nodes,
            offset: None,
        }
    }

    /// Every element of `active` with weight 1.
    pub(super) fn full(active: &[usize], tets: &[[usize; 4]]) -> Self {
        Self::new(active.iter().map(|&e| (e, 1.0)).collect(), tets)
    }
}

/// A cubature's error at a state q₀, to first order: the reduced forces (N) and tangent
/// (N/m) of the full sum there less the cubature's. Added to the cubature's sums as
/// a + B (q − q₀) (and to its energy as a·(q − q₀) + ½ (q − q₀)ᵀB(q − q₀), so the sum
/// stays a potential's gradient), it makes the cubature's forces and tangent the full
/// sum's at q₀; elsewhere only the cubature's error in their change is left.
#[derive(Clone, Debug)]
pub(super) struct TaylorOffset {
    /// q₀ over the basis's first r₀ shapes (√J).
    pub(super) at: Vec<f64>,
    /// a (N), length r₀.
    pub(super) forces: Vec<f64>,
    /// B (N/m), row-major r₀ × r₀.
    pub(super) tangent: Vec<f64>,
}

impl TaylorOffset {
    /// r₀: the basis's first shapes it covers.
    pub(super) fn shapes(&self) -> usize {
        self.at.len()
    }

    /// Adds the offset at q to the reduced forces `gradient` (length ≥ r₀) and, if
    /// given, to the energy `energy` (J).
    pub(super) fn add_forces(&self, q: &[f64], gradient: &mut [f64], energy: Option<&mut f64>) {
        let r0 = self.shapes();
        let mut work = 0.0;
        let mut curvature = 0.0;
        for j in 0..r0 {
            let row = &self.tangent[j * r0..][..r0];
            let bd: f64 = (0..r0).map(|k| row[k] * (q[k] - self.at[k])).sum();
            gradient[j] += self.forces[j] + bd;
            let d = q[j] - self.at[j];
            work += self.forces[j] * d;
            curvature += d * bd;
        }
        if let Some(e) = energy {
            *e += work + 0.5 * curvature;
        }
    }

    /// Adds B to the reduced tangent `tangent` (row-major r × r, r ≥ r₀).
    pub(super) fn add_tangent(&self, tangent: &mut [f64], r: usize) {
        let r0 = self.shapes();
        for j in 0..r0 {
            let row = &self.tangent[j * r0..][..r0];
            for (o, b) in tangent[j * r..][..r0].iter_mut().zip(row) {
                *o += b;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offset is the gradient and Hessian of the energy it adds (central
    /// differences), over the shapes it covers, and only its forces at q₀.
    #[test]
    fn the_offset_is_a_potentials_gradient_and_hessian() {
        let offset = TaylorOffset {
            at: vec![0.3, -0.2],
            forces: vec![1.5, -0.5],
            tangent: vec![2.0, 0.4, 0.4, 1.0],
        };
        let energy = |q: &[f64]| {
            let mut e = 0.0;
            offset.add_forces(q, &mut [0.0; 3], Some(&mut e));
            e
        };
        let q = [0.7, 0.1, 5.0];
        let mut gradient = [0.0; 3];
        let mut tangent = [0.0; 9];
        offset.add_forces(&q, &mut gradient, None);
        offset.add_tangent(&mut tangent, 3);
        let h = 1e-6;
        for j in 0..3 {
            let (mut up, mut down) = (q, q);
            up[j] += h;
            down[j] -= h;
            let slope = (energy(&up) - energy(&down)) / (2.0 * h);
            assert!((slope - gradient[j]).abs() < 1e-8, "∂E/∂q{j}");
        }
        assert_eq!(tangent, [2.0, 0.4, 0.0, 0.4, 1.0, 0.0, 0.0, 0.0, 0.0]);
        let mut at = [0.0; 2];
        offset.add_forces(&offset.at.clone(), &mut at, None);
        assert_eq!(at, [1.5, -0.5]);
    }
}
