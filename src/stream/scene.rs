//! The scene as the stream describes it to clients (surface, rest positions, modal
//! basis), and the conversion of snapshots into wire frames.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use palpa_protocol as wire;

use super::config::CLIENT_CAPACITY;
use super::snapshot::{SnapshotDeformation, VisualSnapshot};
use crate::mesh::TetMesh;
use crate::Vec3;

/// The surface a stream shows and how its frames carry the deformation.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamScene {
    /// Scene name shown by viewers.
    pub name: String,
    /// Surface triangles as surface-vertex indices, counter-clockwise seen from outside.
    pub triangles: Vec<[u32; 3]>,
    /// Rest position of every surface vertex (m).
    pub rest_positions: Vec<Vec3>,
    /// The modal basis restricted to the surface; `None` streams vertex positions.
    pub modal_basis: Option<SurfaceModalBasis>,
    /// Model thread rate (Hz), told to clients.
    pub model_rate_hz: f64,
    /// Haptic loop rate (Hz), told to clients.
    pub haptic_rate_hz: f64,
    /// Unit vector pointing up in the scene (viewers draw it vertical).
    pub up: Vec3,
    /// Regions of the materials other than the default one, at rest (x-ray view).
    pub regions: Vec<StreamRegion>,
}

/// The region of one material inside the tissue: its closed boundary at rest.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamRegion {
    /// The material's name in the scene.
    pub name: String,
    /// The material's Young's modulus (Pa).
    pub young: f64,
    /// Boundary triangles as indices into `rest_positions`, counter-clockwise seen from
    /// outside the region.
    pub triangles: Vec<[u32; 3]>,
    /// The boundary's vertices at rest (m).
    pub rest_positions: Vec<Vec3>,
}

impl StreamRegion {
    /// The boundary of the tetrahedra `tets` of `mesh` (the faces that only one of them
    /// has), as the region of material `name` with Young's modulus `young` (Pa).
    pub fn of_tetrahedra(name: &str, young: f64, mesh: &TetMesh, tets: &[usize]) -> Self {
        // Outward faces of a positively oriented tetrahedron (0, 1, 2, 3), as in
        // `TetMesh::boundary`, which covers the whole mesh only.
        const FACES: [[usize; 3]; 4] = [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]];
        let mut faces: HashMap<[usize; 3], ([usize; 3], u32)> = HashMap::new();
        for &t in tets {
            for f in FACES {
                let tri = f.map(|i| mesh.tets[t][i]);
                let mut key = tri;
                key.sort_unstable();
                faces.entry(key).or_insert((tri, 0)).1 += 1;
            }
        }
        let mut outer: Vec<[usize; 3]> = faces
            .into_values()
            .filter(|(_, n)| *n == 1)
            .map(|(tri, _)| tri)
            .collect();
        outer.sort_unstable();
        let mut index: HashMap<usize, u32> = HashMap::new();
        let mut rest_positions = Vec::new();
        let triangles = outer
            .iter()
            .map(|tri| {
                tri.map(|node| {
                    *index.entry(node).or_insert_with(|| {
                        rest_positions.push(mesh.nodes[node]);
                        (rest_positions.len() - 1) as u32
                    })
                })
            })
            .collect();
        Self {
            name: name.to_owned(),
            young,
            triangles,
            rest_positions,
        }
    }
}

/// Modal displacement vectors of the surface vertices: vertex `v` moves by
/// `Σ_j q_j · vectors[v · mode_count + j]` (m per unit modal coordinate).
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceModalBasis {
    /// Number of modes k.
    pub mode_count: usize,
    /// `vertex_count · mode_count` vectors, vertex-major.
    pub vectors: Vec<Vec3>,
}

/// A scene whose surface is a tet mesh's boundary, with the map from surface vertices
/// back to mesh nodes (to restrict a full-mesh modal basis to the surface).
#[derive(Clone, Debug, PartialEq)]
pub struct MeshSurface {
    /// The scene (without a modal basis).
    pub scene: StreamScene,
    /// Mesh node index of every surface vertex.
    pub mesh_nodes: Vec<usize>,
}

impl StreamScene {
    /// The boundary surface of `mesh`, streamed as positions until a basis is attached
    /// with [`StreamScene::with_modal_basis`].
    pub fn from_mesh_surface(name: &str, mesh: &TetMesh) -> MeshSurface {
        let boundary = mesh.boundary();
        let mut surface_index = vec![u32::MAX; mesh.nodes.len()];
        for (i, &node) in boundary.nodes.iter().enumerate() {
            surface_index[node] = i as u32;
        }
        let triangles = boundary
            .triangles
            .iter()
            .map(|t| t.map(|node| surface_index[node]))
            .collect();
        let rest_positions = boundary.nodes.iter().map(|&n| mesh.nodes[n]).collect();
        MeshSurface {
            scene: StreamScene {
                name: name.to_owned(),
                triangles,
                rest_positions,
                modal_basis: None,
                model_rate_hz: 200.0,
                haptic_rate_hz: 1000.0,
                up: Vec3::z(),
                regions: Vec::new(),
            },
            mesh_nodes: boundary.nodes,
        }
    }

    /// Attaches a modal basis given per (surface vertex, mode) by `shape` (m per unit
    /// modal coordinate).
    pub fn with_modal_basis(
        mut self,
        mode_count: usize,
        shape: impl Fn(usize, usize) -> Vec3,
    ) -> Self {
        let n = self.rest_positions.len();
        let mut vectors = Vec::with_capacity(n * mode_count);
        for v in 0..n {
            for j in 0..mode_count {
                vectors.push(shape(v, j));
            }
        }
        self.modal_basis = Some(SurfaceModalBasis {
            mode_count,
            vectors,
        });
        self
    }

    /// Number of modes the frames carry, or `None` for a positions scene.
    pub fn mode_count(&self) -> Option<usize> {
        self.modal_basis.as_ref().map(|b| b.mode_count)
    }

    /// Surface positions for a snapshot, computed in f64 on the server side (m): the
    /// reference that clients' f32 reconstructions are compared with.
    pub fn positions(&self, snapshot: &VisualSnapshot) -> Vec<Vec3> {
        match &snapshot.deformation {
            SnapshotDeformation::Positions(p) => p.clone(),
            SnapshotDeformation::Superposed {
                coordinates, field, ..
            } => {
                let k = coordinates.len();
                self.rest_positions
                    .iter()
                    .enumerate()
                    .map(|(v, rest)| {
                        let modal: Vec3 = match &self.modal_basis {
                            Some(basis) if k > 0 => basis.vectors[v * k..(v + 1) * k]
                                .iter()
                                .zip(coordinates)
                                .map(|(phi, q)| phi * *q)
                                .sum(),
                            _ => Vec3::zeros(),
                        };
                        rest + modal + field.get(v).copied().unwrap_or_default()
                    })
                    .collect()
            }
        }
    }

    /// The hello message every client gets first.
    pub fn hello(&self, frame_rate_hz: f64, control_allowed: bool) -> wire::ServerMessage {
        wire::ServerMessage::Hello(wire::ServerHello {
            protocol_version: wire::PROTOCOL_VERSION,
            scene_name: self.name.clone(),
            frame_rate_hz: frame_rate_hz as f32,
            model_rate_hz: self.model_rate_hz as f32,
            haptic_rate_hz: self.haptic_rate_hz as f32,
            units: wire::Units::si(),
            control_allowed,
        })
    }

    /// The scene init message (surface, rest positions, basis in f32).
    pub fn scene_init(&self) -> wire::ServerMessage {
        wire::ServerMessage::SceneInit(wire::SceneInit {
            triangles: self.triangles.clone(),
            rest_positions: self.rest_positions.iter().map(f32x3).collect(),
            modal_basis: self.modal_basis.as_ref().map(|b| wire::ModalBasis {
                mode_count: b.mode_count as u32,
                vectors: b.vectors.iter().map(f32x3).collect(),
            }),
            up: f32x3(&self.up),
            regions: self
                .regions
                .iter()
                .map(|r| wire::MaterialRegion {
                    name: r.name.clone(),
                    young_pa: r.young as f32,
                    triangles: r.triangles.clone(),
                    rest_positions: r.rest_positions.iter().map(f32x3).collect(),
                })
                .collect(),
            column_capacity: CLIENT_CAPACITY as u32,
        })
    }

    /// Checks that a snapshot fits the scene (mode and vertex counts), naming what is
    /// wrong.
    pub fn check(&self, snapshot: &VisualSnapshot) -> Result<(), String> {
        let n = self.rest_positions.len();
        let k = self.mode_count().unwrap_or(0);
        match &snapshot.deformation {
            SnapshotDeformation::Superposed {
                coordinates, field, ..
            } => {
                if coordinates.len() != k {
                    return Err(format!(
                        "snapshot has {} modal coordinates, scene has {k} modes",
                        coordinates.len()
                    ));
                }
                if field.len() != n {
                    return Err(format!(
                        "snapshot has a field over {} vertices, scene has {n} surface vertices",
                        field.len()
                    ));
                }
                Ok(())
            }
            SnapshotDeformation::Positions(_) if self.modal_basis.is_some() => {
                Err("positions snapshot for a modal scene".into())
            }
            SnapshotDeformation::Positions(p) if p.len() == n => Ok(()),
            SnapshotDeformation::Positions(p) => Err(format!(
                "snapshot has {} positions, scene has {n} surface vertices",
                p.len()
            )),
        }
    }
}

pub(crate) fn f32x3(v: &Vec3) -> [f32; 3] {
    [v.x as f32, v.y as f32, v.z as f32]
}

pub(crate) fn f64x3(v: &Vec3) -> [f64; 3] {
    [v.x, v.y, v.z]
}

/// Microseconds since the Unix epoch, for `Frame::sent_unix_us`.
pub fn unix_now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}
