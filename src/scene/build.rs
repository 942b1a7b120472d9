//! Scene → mesh: load or generate the tetrahedral mesh, scale it, embed the render
//! surface, and resolve region names, materials and fixed nodes against it.

use super::{FixSpec, MaterialSpec, RegionRef, Scene, SceneError};
use crate::mesh::embed::Embedding;
use crate::mesh::generate::box_mesh_split;
use crate::mesh::lattice::{fill_surface, LatticeOptions};
use crate::mesh::surface::{load_surface, SurfaceMesh};
use crate::mesh::{self, TetMesh};
use crate::Vec3;

/// A detailed render surface moved with the tetrahedral mesh.
#[derive(Clone, Debug)]
pub struct RenderSurface {
    /// The surface (m, scaled like the mesh).
    pub surface: SurfaceMesh,
    /// Its vertices' tetrahedra and barycentric coordinates.
    pub embedding: Embedding,
}

/// The scene's mesh, in scene metres.
#[derive(Clone, Debug)]
pub struct SceneMesh {
    /// The tetrahedral mesh.
    pub mesh: TetMesh,
    /// The embedded render surface, if the scene names one.
    pub render: Option<RenderSurface>,
}

/// Loads (file), fills (lattice) or generates (box) the mesh, scales it by
/// `mesh.scale`, and embeds the render surface.
pub fn build_mesh(scene: &Scene) -> Result<SceneMesh, SceneError> {
    let spec = &scene.mesh;
    let mesh_err = |key: &str, source| SceneError::Mesh {
        file: scene.source.clone(),
        key: key.to_string(),
        source,
    };
    let mut mesh = if let Some(file) = &spec.file {
        let mut m = mesh::load(&scene.resolve(file)).map_err(|e| mesh_err("mesh.file", e))?;
        m.scale(spec.scale);
        m
    } else if let Some(l) = &spec.lattice {
        let mut surface =
            load_surface(&scene.resolve(&l.surface)).map_err(|e| mesh_err("mesh.lattice", e))?;
        surface.scale(spec.scale);
        let options = LatticeOptions {
            split: l.split.into(),
            snap: l.snap,
        };
        fill_surface(&surface, l.cell_size, options).map_err(|e| mesh_err("mesh.lattice", e))?
    } else {
        let b = spec.box_.clone().unwrap_or_default();
        let mut m = box_mesh_split(Vec3::from(b.size), b.cells, b.split.into())
            .map_err(|e| mesh_err("mesh.box", e))?;
        let origin = Vec3::from(b.origin);
        for p in &mut m.nodes {
            *p += origin;
        }
        m.scale(spec.scale);
        m
    };
    for note in &mesh.notes {
        tracing::info!("{}: mesh: {note}", scene.source);
    }
    mesh.notes.clear();
    let render = match &spec.render_surface {
        None => None,
        Some(path) => {
            let full = scene.resolve(path);
            let mut surface =
                load_surface(&full).map_err(|e| mesh_err("mesh.render_surface", e))?;
            surface.scale(spec.scale);
            let embedding = Embedding::new(&mesh, &surface.vertices, &full.display().to_string())
                .map_err(|e| mesh_err("mesh.render_surface", e))?;
            if embedding.outside > 0 {
                tracing::info!(
                    "{}: {} render-surface vertices lie outside the tetrahedral mesh \
                     (farthest {:.2e} m); they follow their nearest tetrahedron",
                    scene.source,
                    embedding.outside,
                    embedding.max_distance
                );
            }
            Some(RenderSurface { surface, embedding })
        }
    };
    Ok(SceneMesh { mesh, render })
}

/// The region id `r` names in `mesh` (an id must occur; a name must be a physical name
/// of the mesh file); `key` names the scene key in the error.
pub fn region_id(
    scene: &Scene,
    mesh: &TetMesh,
    r: &RegionRef,
    key: &str,
) -> Result<i32, SceneError> {
    let id = match r {
        RegionRef::Id(id) => *id,
        RegionRef::Name(name) => {
            *mesh
                .region_names
                .iter()
                .find(|(_, n)| *n == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = mesh.region_names.values().map(String::as_str).collect();
                    scene.invalid(
                        key,
                        format!(
                            "the mesh has no region named {name:?} (named regions: {})",
                            if known.is_empty() {
                                "none".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    )
                })?
                .0
        }
    };
    if !mesh.regions.contains(&id) {
        let mut ids = mesh.regions.clone();
        ids.sort_unstable();
        ids.dedup();
        return Err(scene.invalid(
            key,
            format!("no element has region id {id} (the mesh has regions {ids:?})"),
        ));
    }
    Ok(id)
}

/// Which material selector a scene material uses, resolved against the mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Selector {
    /// Elements not selected by any other material.
    Default,
    /// Elements of a region id.
    Region(i32),
    /// Elements whose centroid lies in a ball (centre, radius; m).
    Sphere(Vec3, f64),
    /// Elements whose centroid lies in a box (min, max corners; m).
    Box(Vec3, Vec3),
}

/// One scene material with its selector resolved: (name, selector, E Pa, ν, ρ kg/m³),
/// in precedence order (default, regions, geometric ones in file order — later wins).
pub fn resolve_materials(
    scene: &Scene,
    mesh: &TetMesh,
) -> Result<Vec<(String, Selector, MaterialSpec)>, SceneError> {
    let mut out = Vec::new();
    if !scene.materials.contains_key("default") {
        let (young, poisson, density) = super::DEFAULT_MATERIAL;
        out.push((
            "default".to_string(),
            Selector::Default,
            MaterialSpec {
                young,
                poisson,
                density,
                region: None,
                sphere: None,
                box_: None,
            },
        ));
    }
    for (name, spec) in scene.materials_in_order() {
        let selector = if let Some(r) = &spec.region {
            Selector::Region(region_id(
                scene,
                mesh,
                r,
                &format!("materials.{name}.region"),
            )?)
        } else if let Some(s) = &spec.sphere {
            Selector::Sphere(Vec3::from(s.center), s.radius)
        } else if let Some(b) = &spec.box_ {
            Selector::Box(Vec3::from(b.min), Vec3::from(b.max))
        } else {
            Selector::Default
        };
        out.push((name.to_string(), selector, spec.clone()));
    }
    Ok(out)
}

/// A fixed-node rule resolved against the mesh.
#[derive(Clone, Debug, PartialEq)]
pub enum FixRule {
    /// Nodes with coordinate `axis` ≤ mesh minimum + distance (m).
    Below(usize, f64),
    /// Nodes inside the box (min, max; m).
    Box(Vec3, Vec3),
    /// Nodes of the region's elements.
    Region(i32),
    /// Node indices, checked against the mesh.
    Nodes(Vec<usize>),
}

/// The scene's fixed-node rules with regions resolved and node indices checked.
pub fn resolve_fixes(scene: &Scene, mesh: &TetMesh) -> Result<Vec<FixRule>, SceneError> {
    scene
        .fix_rules()
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            Ok(match rule {
                FixSpec::Below { axis, distance } => FixRule::Below(axis.index(), *distance),
                FixSpec::Box { min, max } => FixRule::Box(Vec3::from(*min), Vec3::from(*max)),
                FixSpec::Region(r) => {
                    FixRule::Region(region_id(scene, mesh, r, &format!("fixed[{i}].region"))?)
                }
                FixSpec::Nodes(list) => {
                    if let Some(&n) = list.iter().find(|&&n| n >= mesh.nodes.len()) {
                        return Err(scene.invalid(
                            format!("fixed[{i}].nodes"),
                            format!(
                                "node {n} is out of range (the mesh has {} nodes)",
                                mesh.nodes.len()
                            ),
                        ));
                    }
                    FixRule::Nodes(list.clone())
                }
            })
        })
        .collect()
}
