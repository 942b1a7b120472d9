//! What the reduced forces are summed over: the large-strain terms beyond linear, one
//! per element (its deviatoric or whole law) and, with nodal-averaged pressure, one per
//! node (its volumetric energy, `volume.rs`); every active term with weight 1, or a
//! cubature's few terms and weights, optionally made exact to first order at one state
//! by the full sum's forces and tangent there ([`TaylorOffset`]).

use super::volume::NodalVolume;

/// The terms whose large-strain law departs from its linearisation (the *active* ones),
/// ascending: elements, and nodes whose volume ratio is averaged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Active {
    /// Elements.
    pub elements: Vec<usize>,
    /// Nodes (nodal-averaged pressure only).
    pub volumes: Vec<usize>,
}

impl Active {
    /// Terms in all.
    pub fn len(&self) -> usize {
        self.elements.len() + self.volumes.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A cubature: terms and their weights (dimensionless, ≥ 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Cubature {
    /// (element, weight) pairs.
    pub elements: Vec<(usize, f64)>,
    /// (node, weight) pairs of nodal volume terms.
    pub volumes: Vec<(usize, f64)>,
    /// ‖b − A w‖ / ‖b‖ over the training states, each state's forces scaled to unit
    /// norm (dimensionless).
    pub training_error: f64,
}

/// The terms the reduced forces are summed over, with what evaluating them needs, and
/// the offset that makes a cubature exact to first order at one state.
#[derive(Clone, Debug, Default)]
pub(super) struct Quadrature {
    /// (element, weight ≥ 0) pairs of element terms.
    pub(super) elements: Vec<(usize, f64)>,
    /// (node, weight ≥ 0) pairs of nodal volume terms.
    pub(super) volumes: Vec<(usize, f64)>,
    /// Elements whose F is evaluated (the element terms' and the volume terms' own),
    /// ascending, each with its element term's weight (0: none).
    pub(super) evaluated: Vec<(usize, f64)>,
    /// For each volume term, its elements as (index into `evaluated`, wₐₑ).
    pub(super) around: Vec<Vec<(usize, f64)>>,
    /// The evaluated elements' nodes, ascending.
    pub(super) nodes: Vec<usize>,
    /// The full sum less this one, to first order about a state; `None` for the full
    /// sum itself and for a bare cubature.
    pub(super) offset: Option<TaylorOffset>,
}

impl Quadrature {
    /// Over element terms `elements` and volume terms `volumes` (whose elements
    /// `volume` gives), the elements' nodes from `tets`.
    pub(super) fn new(
        elements: Vec<(usize, f64)>,
        volumes: Vec<(usize, f64)>,
        tets: &[[usize; 4]],
        volume: Option<&NodalVolume>,
    ) -> Self {
        let mut evaluated: Vec<(usize, f64)> = elements.clone();
        if let Some(v) = volume {
            for &(a, _) in &volumes {
                evaluated.extend(v.around(a).iter().map(|&(e, _)| (e, 0.0)));
            }
        }
        evaluated.sort_unstable_by_key(|&(e, _)| e);
        evaluated.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        let around = match volume {
            Some(v) => volumes
                .iter()
                .map(|&(a, _)| {
                    v.around(a)
                        .iter()
                        .map(|&(e, w)| {
                            let k = evaluated.partition_point(|&(f, _)| f < e);
                            (k, w)
                        })
                        .collect()
                })
                .collect(),
            None => Vec::new(),
        };
        let mut nodes: Vec<usize> = evaluated.iter().flat_map(|&(el, _)| tets[el]).collect();
        nodes.sort_unstable();
        nodes.dedup();
        Self {
            elements,
            volumes,
            evaluated,
            around,
            nodes,
            offset: None,
        }
    }

    /// Every term of `active` with weight 1.
    pub(super) fn full(active: &Active, tets: &[[usize; 4]], volume: Option<&NodalVolume>) -> Self {
        let ones = |terms: &[usize]| terms.iter().map(|&t| (t, 1.0)).collect();
        Self::new(ones(&active.elements), ones(&active.volumes), tets, volume)
    }

    /// `cubature`'s terms with its weights.
    pub(super) fn of_cubature(
        cubature: &Cubature,
        tets: &[[usize; 4]],
        volume: Option<&NodalVolume>,
    ) -> Self {
        Self::new(
            cubature.elements.clone(),
            cubature.volumes.clone(),
            tets,
            volume,
        )
    }

    /// Terms summed over.
    pub(super) fn terms(&self) -> usize {
        self.elements.len() + self.volumes.len()
    }

    /// Whether it sums over the same terms with the same weights as `other`.
    pub(super) fn same_terms(&self, other: &Self) -> bool {
        self.elements == other.elements && self.volumes == other.volumes
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

    /// The offset over a basis whose first r₀ coordinates map to new ones by
    /// `transform` (row-major r₀ × r_new: old coordinates = transform · new ones, the
    /// new basis K-orthonormal and in the old one's span): its forces and tangent
    /// projected, its state in the new coordinates.
    pub(super) fn transformed(&self, transform: &[f64], r_new: usize) -> Self {
        let r0 = self.shapes();
        let t = |i: usize, j: usize| transform[i * r_new + j];
        let at = (0..r_new)
            .map(|j| (0..r0).map(|i| t(i, j) * self.at[i]).sum())
            .collect();
        let forces = (0..r_new)
            .map(|j| (0..r0).map(|i| t(i, j) * self.forces[i]).sum())
            .collect();
        let mut bt = vec![0.0; r0 * r_new];
        for i in 0..r0 {
            for j in 0..r_new {
                bt[i * r_new + j] = (0..r0).map(|k| self.tangent[i * r0 + k] * t(k, j)).sum();
            }
        }
        let mut tangent = vec![0.0; r_new * r_new];
        for a in 0..r_new {
            for b in 0..r_new {
                tangent[a * r_new + b] = (0..r0).map(|i| t(i, a) * bt[i * r_new + b]).sum();
            }
        }
        Self {
            at,
            forces,
            tangent,
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

    /// Over an orthonormal change of coordinates that keeps the whole span the offset
    /// adds the same energy at the same point.
    #[test]
    fn a_transformed_offset_adds_the_same_energy() {
        let offset = TaylorOffset {
            at: vec![0.3, -0.2],
            forces: vec![1.5, -0.5],
            tangent: vec![2.0, 0.4, 0.4, 1.0],
        };
        let (c, s) = (0.6f64, 0.8f64);
        // old = T new, T a rotation.
        let transform = [c, -s, s, c];
        let moved = offset.transformed(&transform, 2);
        let new = [0.4, -0.9];
        let old = [c * new[0] - s * new[1], s * new[0] + c * new[1]];
        let (mut e_old, mut e_new) = (0.0, 0.0);
        offset.add_forces(&old, &mut [0.0; 2], Some(&mut e_old));
        moved.add_forces(&new, &mut [0.0; 2], Some(&mut e_new));
        assert!((e_old - e_new).abs() < 1e-12, "{e_old} {e_new}");
    }
}
