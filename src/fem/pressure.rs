//! Nodal-averaged pressure: the volumetric strain of linear tetrahedra averaged over each
//! node's tetrahedra, which removes their volumetric locking (Bonet & Burton 1998).
//!
//! A constant-strain tetrahedron has one volumetric strain θₑ; near incompressibility
//! (ν → 0.5) the constraints θₑ ≈ 0 outnumber the displacement DOFs and the mesh locks.
//! Here each element keeps only its deviatoric energy, and the volumetric energy is
//! carried by the nodes: node a owns the volume Vₐ = Σₑ vₐₑ, vₐₑ = Vₑ/4 over its
//! tetrahedra, its pressure pₐ is the lumped projection of κθ,
//! pₐ Σₑ vₐₑ/κₑ = Σₑ vₐₑ θₑ, and the volumetric energy is
//!
//!   U = ½ Σₐ cₐ (gₐ·u)²,  gₐ·u = Σₑ vₐₑ θₑ (m³),  cₐ = 1 / Σₑ (vₐₑ/κₑ) (Pa/m³).
//!
//! For one material cₐ(gₐ·u)² = κ Vₐ θ̄ₐ² with θ̄ₐ the volume-weighted mean of θₑ: a
//! uniform strain gives exactly the element energy (the patch test holds), and the
//! stiffness couples each node to its neighbours' neighbours.

use crate::mesh::TetMesh;
use crate::{Mat3, Vec3};

use super::TetElement;

/// The nodal volumetric terms of a mesh: for each node a, its gradient gₐ (one vector
/// per node of its tetrahedra) and its coefficient cₐ.
#[derive(Clone, Debug, PartialEq)]
pub struct NodalPressure {
    /// Start of node a's entries in `support` (length nodes + 1).
    offsets: Vec<usize>,
    /// (node b, ∂(gₐ·u)/∂u_b (m²)), by ascending b within each node a.
    support: Vec<(usize, Vec3)>,
    /// cₐ = 1 / Σₑ (Vₑ/4)/κₑ (Pa/m³); 0 for a node in no tetrahedron.
    coefficient: Vec<f64>,
}

impl NodalPressure {
    /// The terms of `mesh` whose tetrahedra have geometry `elements` and bulk moduli
    /// `bulk` (Pa), one per tetrahedron.
    pub fn new(mesh: &TetMesh, elements: &[TetElement], bulk: &[f64]) -> Self {
        let n = mesh.nodes.len();
        let mut incident: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (e, tet) in mesh.tets.iter().enumerate() {
            for &a in tet {
                incident[a].push(e);
            }
        }
        let mut offsets = Vec::with_capacity(n + 1);
        let mut support = Vec::new();
        let mut coefficient = Vec::with_capacity(n);
        let mut entries: Vec<(usize, Vec3)> = Vec::new();
        offsets.push(0);
        for tets in &incident {
            entries.clear();
            let mut compliance = 0.0;
            for &e in tets {
                let el = &elements[e];
                let share = el.volume / 4.0;
                compliance += share / bulk[e];
                for (b, &node) in mesh.tets[e].iter().enumerate() {
                    entries.push((node, el.grads[b] * share));
                }
            }
            entries.sort_unstable_by_key(|&(node, _)| node);
            entries.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    kept.1 += later.1;
                }
                same
            });
            support.extend_from_slice(&entries);
            offsets.push(support.len());
            coefficient.push(if compliance > 0.0 {
                1.0 / compliance
            } else {
                0.0
            });
        }
        Self {
            offsets,
            support,
            coefficient,
        }
    }

    /// The same terms without those of the nodes `off` marks (their coefficient set to
    /// 0): another formulation carries those nodes' volumetric energy (the large-strain
    /// laws' nodal volume, `nonlinear/volume.rs`). The coupling pattern stays.
    pub fn without_nodes(mut self, off: &[bool]) -> Self {
        for (c, &off) in self.coefficient.iter_mut().zip(off) {
            if off {
                *c = 0.0;
            }
        }
        self
    }

    /// Number of mesh nodes.
    pub fn n_nodes(&self) -> usize {
        self.coefficient.len()
    }

    /// Node a's gradient entries: (node b, ∂(gₐ·u)/∂u_b (m²)), ascending b.
    pub fn gradient(&self, a: usize) -> &[(usize, Vec3)] {
        &self.support[self.offsets[a]..self.offsets[a + 1]]
    }

    /// gₐ·u (m³): node a's volume times its mean volumetric strain under displacements
    /// `u` (m, one per node).
    pub fn dilatation(&self, a: usize, u: &[Vec3]) -> f64 {
        self.gradient(a).iter().map(|(b, g)| g.dot(&u[*b])).sum()
    }

    /// The volumetric energy U = ½ Σₐ cₐ (gₐ·u)² (J).
    pub fn energy(&self, u: &[Vec3]) -> f64 {
        (0..self.n_nodes())
            .map(|a| 0.5 * self.coefficient[a] * self.dilatation(a, u).powi(2))
            .sum()
    }

    /// Adds ∂U/∂u = Σₐ cₐ (gₐ·u) gₐ (N) to `forces` (one per node).
    pub fn add_forces(&self, u: &[Vec3], forces: &mut [Vec3]) {
        for a in 0..self.n_nodes() {
            let p = self.coefficient[a] * self.dilatation(a, u);
            for (b, g) in self.gradient(a) {
                forces[*b] += g * p;
            }
        }
    }

    /// Calls `add(i, j, block)` for every 3×3 block cₐ gₐ\[i\] gₐ\[j\]ᵀ (N/m) of the
    /// stiffness ∂²U/∂u_i∂u_j, once per node a and pair (i, j) of its support.
    pub fn for_each_block(&self, mut add: impl FnMut(usize, usize, Mat3)) {
        for a in 0..self.n_nodes() {
            let c = self.coefficient[a];
            let g = self.gradient(a);
            for (j, gj) in g {
                for (i, gi) in g {
                    add(*i, *j, gi * gj.transpose() * c);
                }
            }
        }
    }

    /// For each node j, the nodes i it couples to through some node's support
    /// (ascending, j included).
    pub fn couplings(&self) -> Vec<Vec<usize>> {
        let mut lists: Vec<Vec<usize>> = vec![Vec::new(); self.n_nodes()];
        for a in 0..self.n_nodes() {
            let g = self.gradient(a);
            for (j, _) in g {
                lists[*j].extend(g.iter().map(|(i, _)| *i));
            }
        }
        for l in &mut lists {
            l.sort_unstable();
            l.dedup();
        }
        lists
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::generate::box_mesh;

    /// A 3×2×2 box with its interior nodes moved off the lattice.
    fn skewed_box() -> (TetMesh, Vec<TetElement>) {
        let mut mesh = box_mesh(Vec3::new(0.03, 0.02, 0.02), [3, 2, 2]).unwrap();
        for (i, x) in mesh.nodes.iter_mut().enumerate() {
            let interior = (1e-9..0.03 - 1e-9).contains(&x.x)
                && (1e-9..0.02 - 1e-9).contains(&x.y)
                && (1e-9..0.02 - 1e-9).contains(&x.z);
            if interior {
                let s = (i as f64 * 1.7).sin();
                *x += Vec3::new(0.002 * s, -0.0015 * s, 0.001 * (i as f64).cos());
            }
        }
        let elements = mesh
            .tets
            .iter()
            .map(|t| TetElement::new(t.map(|v| mesh.nodes[v])))
            .collect();
        (mesh, elements)
    }

    #[test]
    fn a_uniform_strain_has_the_element_volumetric_energy() {
        let (mesh, elements) = skewed_box();
        let kappa = 2.5e5;
        let pressure = NodalPressure::new(&mesh, &elements, &vec![kappa; mesh.tets.len()]);
        let grad = Mat3::new(0.01, 0.002, -0.003, 0.004, -0.02, 0.001, 0.0, 0.005, 0.03);
        let u: Vec<Vec3> = mesh.nodes.iter().map(|x| grad * x).collect();
        let volume: f64 = elements.iter().map(|e| e.volume).sum();
        let exact = 0.5 * kappa * volume * grad.trace().powi(2);
        assert!((pressure.energy(&u) - exact).abs() < 1e-12 * exact);
    }

    #[test]
    fn forces_and_blocks_are_the_energy_derivatives() {
        let (mesh, elements) = skewed_box();
        let bulk: Vec<f64> = (0..mesh.tets.len())
            .map(|e| if e % 3 == 0 { 8e5 } else { 1e5 })
            .collect();
        let pressure = NodalPressure::new(&mesh, &elements, &bulk);
        let n = mesh.nodes.len();
        let u: Vec<Vec3> = (0..n)
            .map(|i| Vec3::new((i as f64).sin(), (2.0 * i as f64).cos(), 0.3) * 1e-4)
            .collect();
        let mut forces = vec![Vec3::zeros(); n];
        pressure.add_forces(&u, &mut forces);
        let h = 1e-9;
        for (node, axis) in [(0, 0), (7, 1), (n / 2, 2), (n - 1, 0)] {
            let mut up = u.clone();
            up[node][axis] += h;
            let mut down = u.clone();
            down[node][axis] -= h;
            let slope = (pressure.energy(&up) - pressure.energy(&down)) / (2.0 * h);
            let f = forces[node][axis];
            assert!((slope - f).abs() < 1e-6 * f.abs().max(1e-3), "{slope} {f}");
        }
        // K u from the blocks is the force, the energy being quadratic.
        let mut ku = vec![Vec3::zeros(); n];
        pressure.for_each_block(|i, j, block| ku[i] += block * u[j]);
        for (a, b) in ku.iter().zip(&forces) {
            assert!((a - b).norm() < 1e-9 * b.norm().max(1e-6));
        }
    }
}
