//! A hyperelastic tetrahedral mesh with prescribed degrees of freedom: its elements,
//! laws, volumetric terms and the block pattern its tangent is assembled into.

use super::types::NonlinearError;
use crate::fem::{NodalPressure, TetElement};
use crate::mesh::TetMesh;
use crate::nonlinear::volume::NodalVolume;
use crate::nonlinear::{Hyperelastic, LawKind};
use crate::{Mat3, Vec3};

/// A hyperelastic mesh with prescribed degrees of freedom, ready to solve.
#[derive(Clone, Debug)]
pub struct NonlinearStatics {
    pub(in crate::nonlinear) tets: Vec<[usize; 4]>,
    pub(in crate::nonlinear) rest: Vec<Vec3>,
    pub(in crate::nonlinear) elements: Vec<TetElement>,
    pub(in crate::nonlinear) laws: Vec<Hyperelastic>,
    pub(super) col_ptr: Vec<usize>,
    pub(super) row_idx: Vec<usize>,
    /// Position of node a in node b's block column, per tetrahedron and (a, b).
    pub(super) slot: Vec<[[usize; 4]; 4]>,
    /// Whether each DOF (3·node + axis) is prescribed.
    pub(in crate::nonlinear) prescribed: Vec<bool>,
    /// The nodes' volumetric energy, when the elements carry only their deviatoric part:
    /// the linear law's at the nodes with only linear tetrahedra around them, the
    /// large-strain laws' ([`NodalVolume`]) at the others.
    pub(in crate::nonlinear) pressure: Option<NodalPressure>,
    pub(in crate::nonlinear) volume: Option<NodalVolume>,
}

impl NonlinearStatics {
    /// The problem on `mesh` with one law per tetrahedron; `prescribed[3·v + axis]` marks
    /// the DOFs whose displacement the caller sets (fixed at their value in `u`).
    pub fn new(
        mesh: &TetMesh,
        laws: Vec<Hyperelastic>,
        prescribed: Vec<bool>,
    ) -> Result<Self, NonlinearError> {
        let n = mesh.nodes.len();
        if laws.len() != mesh.tets.len() {
            return Err(NonlinearError::LawCount {
                given: laws.len(),
                tets: mesh.tets.len(),
            });
        }
        if prescribed.len() != 3 * n {
            return Err(NonlinearError::NodeCount {
                what: "prescribed DOF mask (3 per node)",
                given: prescribed.len(),
                nodes: n,
            });
        }
        let elements: Vec<TetElement> = mesh
            .tets
            .iter()
            .map(|t| TetElement::new(t.map(|v| mesh.nodes[v])))
            .collect();
        Ok(Self::with_pattern(mesh, elements, laws, prescribed, None))
    }

    /// The same problem with nodal-averaged pressure: each tetrahedron keeps only its
    /// deviatoric energy and the nodes carry the volumetric one, which removes
    /// volumetric locking. Nodes with only linear tetrahedra around them carry the
    /// linear law's ([`NodalPressure`]); the others the large-strain laws'
    /// ([`NodalVolume`]: the volume ratio averaged over the node, the same at small
    /// strain).
    pub fn with_nodal_pressure(self, mesh: &TetMesh) -> Self {
        let bulk: Vec<f64> = self.laws.iter().map(|l| l.kappa).collect();
        let mut large = vec![false; mesh.nodes.len()];
        for (tet, law) in mesh.tets.iter().zip(&self.laws) {
            if law.kind != LawKind::Linear {
                for &a in tet {
                    large[a] = true;
                }
            }
        }
        let pressure = NodalPressure::new(mesh, &self.elements, &bulk).without_nodes(&large);
        let volume = large
            .iter()
            .any(|&l| l)
            .then(|| NodalVolume::new(mesh.nodes.len(), &mesh.tets, &self.elements, &bulk, &large));
        let deviatoric = self
            .laws
            .iter()
            .map(|l| Hyperelastic {
                lambda: -2.0 * l.mu / 3.0,
                kappa: 0.0,
                ..*l
            })
            .collect();
        let mut problem = Self::with_pattern(
            mesh,
            self.elements,
            deviatoric,
            self.prescribed,
            Some(pressure),
        );
        problem.volume = volume;
        problem
    }

    /// Builds the block pattern: the nodes sharing a tetrahedron, and with `pressure`
    /// also those coupled through a node's support.
    fn with_pattern(
        mesh: &TetMesh,
        elements: Vec<TetElement>,
        laws: Vec<Hyperelastic>,
        prescribed: Vec<bool>,
        pressure: Option<NodalPressure>,
    ) -> Self {
        let n = mesh.nodes.len();
        let mut blocks: Vec<Vec<usize>> = match &pressure {
            Some(p) => p.couplings(),
            None => (0..n).map(|v| vec![v]).collect(),
        };
        for tet in &mesh.tets {
            for &a in tet {
                blocks[a].extend_from_slice(tet);
            }
        }
        for list in &mut blocks {
            list.sort_unstable();
            list.dedup();
        }
        let mut col_ptr = Vec::with_capacity(3 * n + 1);
        let mut row_idx = Vec::new();
        col_ptr.push(0);
        for list in &blocks {
            for _ in 0..3 {
                row_idx.extend(list.iter().flat_map(|&i| [3 * i, 3 * i + 1, 3 * i + 2]));
                col_ptr.push(row_idx.len());
            }
        }
        let slot = mesh
            .tets
            .iter()
            .map(|tet| {
                let mut s = [[0; 4]; 4];
                for (b, &nb) in tet.iter().enumerate() {
                    for (a, &na) in tet.iter().enumerate() {
                        s[a][b] = blocks[nb].partition_point(|&r| r < na);
                    }
                }
                s
            })
            .collect();
        Self {
            tets: mesh.tets.clone(),
            rest: mesh.nodes.clone(),
            elements,
            laws,
            col_ptr,
            row_idx,
            slot,
            prescribed,
            pressure,
            volume: None,
        }
    }

    /// Whether the volumetric strain is averaged over the nodes
    /// ([`NonlinearStatics::with_nodal_pressure`]).
    pub fn has_nodal_pressure(&self) -> bool {
        self.pressure.is_some()
    }

    /// Deformation gradient of tetrahedron `e` under nodal displacements `u` (m).
    pub fn deformation_gradient(&self, e: usize, u: &[Vec3]) -> Mat3 {
        let el = &self.elements[e];
        Mat3::identity()
            + (0..4)
                .map(|a| u[self.tets[e][a]] * el.grads[a].transpose())
                .sum::<Mat3>()
    }
}
