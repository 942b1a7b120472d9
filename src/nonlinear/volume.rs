//! Nodal-averaged pressure at large strain (Bonet & Burton 1998): the volumetric energy
//! of the large-strain laws carried by the nodes, which removes the volumetric locking of
//! linear tetrahedra as the linear law's [`crate::fem::NodalPressure`] does at small
//! strain, and reduces to it there.
//!
//! Node a owns vₐₑ = Vₑ/4 of each tetrahedron e around it, Vₐ = Σₑ vₐₑ. Its volume ratio
//! is the volume-weighted mean of its tetrahedra's, J̄ₐ = Σₑ wₐₑ Jₑ with wₐₑ = vₐₑ/Vₐ,
//! its bulk modulus the harmonic mean κ̄ₐ = Vₐ / Σₑ (vₐₑ/κₑ), and its energy
//!
//!   Uₐ = Vₐ κ̄ₐ/2 ℓ(J̄ₐ)²,  ℓ = ln, continued linearly below the floor (`kinematics.rs`).
//!
//! Its pressure πₐ = ∂Uₐ/∂J̄ₐ / Vₐ = κ̄ₐ ℓ ℓ' comes back to each tetrahedron as the mean
//! p̄ₑ of its nodes' pressures: the forces are those of a stress p̄ₑ cof(Fₑ), and the
//! tangent is the element part p̄ₑ ∂²Jₑ plus, per node, Vₐ (dπₐ/dJ̄ₐ) ∂J̄ₐ ∂J̄ₐᵀ, which
//! couples each node to its neighbours' neighbours. At small strain J̄ₐ − 1 is the mean
//! volumetric strain and Uₐ the linear nodal energy ½ cₐ (gₐ·u)², cₐ = κ̄ₐ/Vₐ.
//! Only the nodes with a large-strain tetrahedron around them are carried here; the
//! others keep the linear [`crate::fem::NodalPressure`].

use super::kinematics::{cofactor, cofactor_differential, log_floored};
use crate::fem::TetElement;
use crate::{Mat3, Vec3};

/// The large-strain nodal volumetric terms of a mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct NodalVolume {
    /// Start of node a's entries in `incident` (length nodes + 1; empty for the nodes
    /// not carried here).
    offsets: Vec<usize>,
    /// (tetrahedron e, wₐₑ) around each node.
    incident: Vec<(usize, f64)>,
    /// Vₐ κ̄ₐ (N·m: Pa times m³) per node, 0 for the nodes not carried here.
    stiffness: Vec<f64>,
    /// wₐₑ of each tetrahedron's four nodes (0 for a node not carried here).
    corner_weight: Vec<[f64; 4]>,
}

/// What the volumetric terms need of a displacement: each tetrahedron's J and cof F.
#[derive(Clone, Debug, Default)]
pub struct VolumeState {
    /// Jₑ per tetrahedron.
    pub j: Vec<f64>,
    /// cof(Fₑ) per tetrahedron.
    pub cofactor: Vec<Mat3>,
    /// ∂Uₐ/∂J̄ₐ = Vₐ πₐ per node (N·m; 0 for the nodes not carried).
    pub pressure: Vec<f64>,
    /// ∂²Uₐ/∂J̄ₐ² per node (N·m).
    pub stiffness: Vec<f64>,
    /// J̄ₐ per node.
    pub mean_j: Vec<f64>,
}

impl NodalVolume {
    /// The terms of a mesh of `tets` with geometry `elements` and bulk moduli `bulk` (Pa),
    /// carrying the nodes `large` says (those next to a large-strain tetrahedron).
    pub fn new(
        n_nodes: usize,
        tets: &[[usize; 4]],
        elements: &[TetElement],
        bulk: &[f64],
        large: &[bool],
    ) -> Self {
        let mut around: Vec<Vec<usize>> = vec![Vec::new(); n_nodes];
        for (e, tet) in tets.iter().enumerate() {
            for &a in tet {
                if large[a] {
                    around[a].push(e);
                }
            }
        }
        let mut offsets = Vec::with_capacity(n_nodes + 1);
        let mut incident = Vec::new();
        let mut stiffness = Vec::with_capacity(n_nodes);
        offsets.push(0);
        for list in &around {
            let volume: f64 = list.iter().map(|&e| elements[e].volume / 4.0).sum();
            let compliance: f64 = list
                .iter()
                .map(|&e| elements[e].volume / 4.0 / bulk[e])
                .sum();
            for &e in list {
                incident.push((e, elements[e].volume / 4.0 / volume));
            }
            offsets.push(incident.len());
            // Vₐ κ̄ₐ = Vₐ² / Σ vₐₑ/κₑ.
            stiffness.push(if compliance > 0.0 {
                volume * volume / compliance
            } else {
                0.0
            });
        }
        let corner_weight = tets
            .iter()
            .zip(elements)
            .map(|(tet, el)| {
                tet.map(|a| {
                    let volume: f64 = around[a].iter().map(|&f| elements[f].volume / 4.0).sum();
                    if large[a] && volume > 0.0 {
                        el.volume / 4.0 / volume
                    } else {
                        0.0
                    }
                })
            })
            .collect();
        Self {
            offsets,
            incident,
            stiffness,
            corner_weight,
        }
    }

    /// Nodes of the mesh.
    pub fn n_nodes(&self) -> usize {
        self.stiffness.len()
    }

    /// Whether node `a` is carried here.
    pub fn carries(&self, a: usize) -> bool {
        self.stiffness[a] > 0.0
    }

    /// (tetrahedron, wₐₑ) around node `a`.
    pub fn around(&self, a: usize) -> &[(usize, f64)] {
        &self.incident[self.offsets[a]..self.offsets[a + 1]]
    }

    /// Vₐ κ̄ₐ of node `a` (N·m).
    pub fn node_stiffness(&self, a: usize) -> f64 {
        self.stiffness[a]
    }

    /// The nodes' J̄ₐ from the tetrahedra's Jₑ in `state.j`, and their pressures and
    /// pressure stiffnesses, into `state`.
    pub fn update(&self, state: &mut VolumeState) {
        let n = self.n_nodes();
        state.pressure.resize(n, 0.0);
        state.stiffness.resize(n, 0.0);
        state.mean_j.resize(n, 1.0);
        for a in 0..n {
            if !self.carries(a) {
                continue;
            }
            let mean: f64 = self.around(a).iter().map(|&(e, w)| w * state.j[e]).sum();
            let (pressure, stiffness) = self.node_pressure(a, mean);
            state.mean_j[a] = mean;
            state.pressure[a] = pressure;
            state.stiffness[a] = stiffness;
        }
    }

    /// ∂Uₐ/∂J̄ₐ and ∂²Uₐ/∂J̄ₐ² (N·m) of node `a` at J̄ₐ = `mean`.
    pub fn node_pressure(&self, a: usize, mean: f64) -> (f64, f64) {
        let kappa_v = self.stiffness[a];
        let (l, l1, l2) = log_floored(mean);
        (kappa_v * l * l1, kappa_v * (l1 * l1 + l * l2))
    }

    /// Uₐ (J) of node `a` at J̄ₐ = `mean`.
    pub fn node_energy(&self, a: usize, mean: f64) -> f64 {
        0.5 * self.stiffness[a] * log_floored(mean).0.powi(2)
    }

    /// wₐₑ of tetrahedron `e`'s four nodes (0 for those not carried).
    pub fn corner_weights(&self, e: usize) -> [f64; 4] {
        self.corner_weight[e]
    }

    /// The energy Σₐ Vₐκ̄ₐ/2 ℓ(J̄ₐ)² (J) at `state` (after [`Self::update`]).
    pub fn energy(&self, state: &VolumeState) -> f64 {
        (0..self.n_nodes())
            .filter(|&a| self.carries(a))
            .map(|a| self.node_energy(a, state.mean_j[a]))
            .sum()
    }

    /// Tetrahedron `e`'s share of its nodes' pressures: Σₐ ∂Uₐ/∂J̄ₐ · wₐₑ over its
    /// carried nodes (N·m), so that its nodal forces are this times cof(Fₑ) ∇N_b.
    pub fn element_factor(&self, e: usize, tet: &[usize; 4], state: &VolumeState) -> f64 {
        tet.iter()
            .zip(&self.corner_weight[e])
            .map(|(&a, &w)| w * state.pressure[a])
            .sum()
    }
}

impl NodalVolume {
    /// ∂J̄ₐ/∂u_b of node `a` for each node b of its tetrahedra, Σₑ wₐₑ cof(Fₑ) ∇N_b, into
    /// `out` ((b, Vec3), ascending b; m⁻¹).
    pub fn mean_gradient(
        &self,
        a: usize,
        tets: &[[usize; 4]],
        elements: &[TetElement],
        state: &VolumeState,
        out: &mut Vec<(usize, Vec3)>,
    ) {
        out.clear();
        for &(e, w) in self.around(a) {
            let cof = state.cofactor[e] * w;
            for (k, &b) in tets[e].iter().enumerate() {
                out.push((b, cof * elements[e].grads[k]));
            }
        }
        out.sort_unstable_by_key(|&(b, _)| b);
        out.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
    }
}

/// The Hessian of det at F as a 9 × 9 matrix: entry (3a + b, 3c + d) is ∂²J/∂F_ab∂F_cd.
pub fn det_hessian(f: &Mat3) -> [[f64; 9]; 9] {
    let columns: [Mat3; 9] = std::array::from_fn(|l| {
        let mut e = Mat3::zeros();
        e[(l / 3, l % 3)] = 1.0;
        cofactor_differential(f, &e)
    });
    std::array::from_fn(|i| std::array::from_fn(|l| columns[l][(i / 3, i % 3)]))
}

/// J and cof F of each tetrahedron under nodal displacements `u`, into `state`.
pub fn element_volumes(
    tets: &[[usize; 4]],
    elements: &[TetElement],
    u: &[Vec3],
    state: &mut VolumeState,
) {
    state.j.clear();
    state.cofactor.clear();
    for (tet, el) in tets.iter().zip(elements) {
        let f = Mat3::identity()
            + (0..4)
                .map(|a| u[tet[a]] * el.grads[a].transpose())
                .sum::<Mat3>();
        state.j.push(f.determinant());
        state.cofactor.push(cofactor(&f));
    }
}
