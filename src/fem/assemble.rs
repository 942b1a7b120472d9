//! Assembly of the sparse stiffness matrix and the lumped mass over the free DOFs.

use faer::sparse::{SparseColMat, SymbolicSparseColMat};
use faer::{Col, ColRef, Mat, MatMut, MatRef, Par};

use super::{node_graph, DofMap, FemError, Material, NodalPressure, NodeGraph, TetElement};
use crate::mesh::TetMesh;
use crate::Vec3;

/// Lumped mass of every mesh node (kg): each tetrahedron gives ρ·vol/4 to each corner.
pub fn lumped_mass(mesh: &TetMesh, materials: &[Material]) -> Result<Vec<f64>, FemError> {
    check_count(mesh, materials)?;
    let mut mass = vec![0.0; mesh.nodes.len()];
    for (e, (tet, m)) in mesh.tets.iter().zip(materials).enumerate() {
        let share = m.density * mesh.tet_volume(e) / 4.0;
        for &n in tet {
            mass[n] += share;
        }
    }
    Ok(mass)
}

fn check_count(mesh: &TetMesh, materials: &[Material]) -> Result<(), FemError> {
    if materials.len() != mesh.tets.len() {
        return Err(FemError::MaterialCount {
            given: materials.len(),
            tets: mesh.tets.len(),
        });
    }
    Ok(())
}

/// The linear FEM system over the free DOFs: M ü + K u = f.
#[derive(Clone, Debug)]
pub struct FemSystem {
    /// Stiffness K (N/m), symmetric, both triangles stored, 3×3 blocks per node pair.
    pub k: SparseColMat<usize, f64>,
    /// Diagonal of the lumped mass M (kg), one entry per free DOF.
    pub mass: Vec<f64>,
    /// Free-DOF numbering.
    pub dofs: DofMap,
    /// Adjacency of free nodes (the block pattern of K).
    pub graph: NodeGraph,
    /// Rest position of each free node (m), in free-node order.
    pub positions: Vec<Vec3>,
    /// Index into K's values of each diagonal entry, per free DOF.
    diag: Vec<usize>,
}

/// Where the volumetric strain of the linear tetrahedra is evaluated (the scene's
/// `mesh.pressure`: `"element"` or `"nodal"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pressure {
    /// In each element: the standard constant-strain tetrahedron, which locks as ν → 0.5.
    #[default]
    Element,
    /// Averaged over each node's tetrahedra ([`NodalPressure`]): no volumetric locking,
    /// at the cost of a stiffness that couples neighbours' neighbours.
    Nodal,
}

/// Assembles K and the lumped M of `mesh` with one material per tetrahedron over the
/// free DOFs of `dofs`, with element pressure ([`assemble_with`]).
pub fn assemble(
    mesh: &TetMesh,
    materials: &[Material],
    dofs: DofMap,
) -> Result<FemSystem, FemError> {
    assemble_with(mesh, materials, dofs, Pressure::Element)
}

/// Assembles K and the lumped M of `mesh` with one material per tetrahedron over the
/// free DOFs of `dofs`, the volumetric strain evaluated as `pressure` says. Fixed DOFs
/// are dropped while assembling (rows and columns never exist), which is exact for zero
/// prescribed displacement.
///
/// K's pattern is built from the node graph and element blocks are added in place: with
/// 144 entries per tetrahedron, a triplet list would cost ~3× the memory of K and a sort.
pub fn assemble_with(
    mesh: &TetMesh,
    materials: &[Material],
    dofs: DofMap,
    pressure: Pressure,
) -> Result<FemSystem, FemError> {
    check_count(mesh, materials)?;
    if dofs.n_nodes() != mesh.nodes.len() {
        return Err(FemError::Dimension(format!(
            "DOF map covers {} nodes, mesh has {}",
            dofs.n_nodes(),
            mesh.nodes.len()
        )));
    }
    let elements: Vec<TetElement> = mesh
        .tets
        .iter()
        .map(|tet| TetElement::new(tet.map(|v| mesh.nodes[v])))
        .collect();
    let nodal = match pressure {
        Pressure::Element => None,
        Pressure::Nodal => {
            let bulk: Vec<f64> = materials.iter().map(Material::bulk_modulus).collect();
            Some(NodalPressure::new(mesh, &elements, &bulk))
        }
    };
    let graph = match &nodal {
        None => node_graph(mesh, &dofs),
        Some(p) => coupling_graph(p, &dofs),
    };
    let n_free_nodes = graph.n();
    let n = 3 * n_free_nodes;
    // Column 3j+c holds rows 3i..3i+3 for every i in {j} ∪ neighbours(j), ascending.
    let block_rows = |j: usize| -> Vec<usize> {
        let mut rows: Vec<usize> = graph.neighbours(j).to_vec();
        let at = rows.partition_point(|&i| i < j);
        rows.insert(at, j);
        rows
    };
    let mut col_ptr = Vec::with_capacity(n + 1);
    let mut row_idx = Vec::new();
    let mut lists: Vec<Vec<usize>> = Vec::with_capacity(n_free_nodes);
    let mut diag = Vec::with_capacity(n);
    col_ptr.push(0);
    for j in 0..n_free_nodes {
        let rows = block_rows(j);
        let self_pos = rows.partition_point(|&i| i < j);
        for c in 0..3 {
            diag.push(row_idx.len() + 3 * self_pos + c);
            row_idx.extend(rows.iter().flat_map(|&i| [3 * i, 3 * i + 1, 3 * i + 2]));
            col_ptr.push(row_idx.len());
        }
        lists.push(rows);
    }
    let mut values = vec![0.0; row_idx.len()];
    let mut add_block = |i: usize, j: usize, block: &dyn Fn(usize, usize) -> f64| {
        let p = lists[j].partition_point(|&r| r < i);
        for c in 0..3 {
            let base = col_ptr[3 * j + c] + 3 * p;
            for r in 0..3 {
                values[base + r] += block(r, c);
            }
        }
    };
    for ((tet, material), element) in mesh.tets.iter().zip(materials).zip(&elements) {
        let free = tet.map(|v| dofs.free_node_index(v));
        if free.iter().all(Option::is_none) {
            continue;
        }
        let ke = match nodal {
            None => element.stiffness(material),
            Some(_) => element.deviatoric_stiffness(material),
        };
        for (b, j) in free.iter().enumerate() {
            let Some(j) = *j else { continue };
            for (a, i) in free.iter().enumerate() {
                let Some(i) = *i else { continue };
                add_block(i, j, &|r, c| ke[(3 * a + r, 3 * b + c)]);
            }
        }
    }
    if let Some(p) = &nodal {
        p.for_each_block(|i, j, block| {
            if let (Some(i), Some(j)) = (dofs.free_node_index(i), dofs.free_node_index(j)) {
                add_block(i, j, &|r, c| block[(r, c)]);
            }
        });
    }
    let symbolic = SymbolicSparseColMat::new_checked(n, n, col_ptr, None, row_idx);
    let k = SparseColMat::new(symbolic, values);
    let node_mass = lumped_mass(mesh, materials)?;
    let mass = dofs
        .free_nodes()
        .iter()
        .flat_map(|&v| [node_mass[v]; 3])
        .collect();
    let positions = dofs.free_nodes().iter().map(|&v| mesh.nodes[v]).collect();
    Ok(FemSystem {
        k,
        mass,
        dofs,
        graph,
        positions,
        diag,
    })
}

/// The graph of free nodes coupled through nodal pressure (neighbours' neighbours).
fn coupling_graph(pressure: &NodalPressure, dofs: &DofMap) -> NodeGraph {
    let couplings = pressure.couplings();
    let mut offsets = vec![0];
    let mut adj = Vec::new();
    let mut row = Vec::new();
    for &v in dofs.free_nodes() {
        row.clear();
        row.extend(
            couplings[v]
                .iter()
                .filter(|&&i| i != v)
                .filter_map(|&i| dofs.free_node_index(i)),
        );
        row.sort_unstable();
        adj.extend_from_slice(&row);
        offsets.push(adj.len());
    }
    NodeGraph { offsets, adj }
}

impl FemSystem {
    /// Number of free DOFs.
    pub fn n_free(&self) -> usize {
        self.mass.len()
    }

    /// K − σM (N/m) with the same pattern as K.
    pub fn shifted(&self, sigma: f64) -> SparseColMat<usize, f64> {
        let mut a = self.k.clone();
        let values = a.val_mut();
        for (&p, m) in self.diag.iter().zip(&self.mass) {
            values[p] -= sigma * m;
        }
        a
    }

    /// out = K x for a block of vectors (N for x in m).
    pub fn apply_k(&self, out: MatMut<'_, f64>, x: MatRef<'_, f64>) {
        faer::sparse::linalg::matmul::sparse_dense_matmul(
            out,
            faer::Accum::Replace,
            self.k.as_ref(),
            x,
            1.0,
            Par::Seq,
        );
    }

    /// K x for a block of vectors.
    pub fn k_times(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let mut out = Mat::zeros(self.n_free(), x.ncols());
        self.apply_k(out.as_mut(), x);
        out
    }

    /// Nodal displacements of all mesh nodes from a free-DOF vector; fixed nodes get 0.
    pub fn scatter(&self, x: ColRef<'_, f64>) -> Vec<Vec3> {
        let mut u = vec![Vec3::zeros(); self.dofs.n_nodes()];
        for (j, &v) in self.dofs.free_nodes().iter().enumerate() {
            u[v] = Vec3::new(x[3 * j], x[3 * j + 1], x[3 * j + 2]);
        }
        u
    }

    /// Free-DOF vector from nodal values of all mesh nodes (fixed nodes ignored).
    pub fn gather(&self, u: &[Vec3]) -> Col<f64> {
        Col::from_fn(self.n_free(), |d| u[self.dofs.free_nodes()[d / 3]][d % 3])
    }
}
