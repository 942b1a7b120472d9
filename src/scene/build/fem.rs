//! Scene → FEM inputs: materials per tetrahedron and fixed nodes, resolved once against
//! the mesh (region names and ids checked, node indices checked), and the assembled
//! system they give.

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::fem::{
    self, Axis, DofMap, FemSystem, Fix, Material, MaterialMap, MaterialSource, Pressure, Shape,
    LOCKING_POISSON,
};
use crate::mesh::TetMesh;
use crate::nonlinear::{Hyperelastic, LawKind, NonlinearStatics};
use crate::scene::{
    FixSpec, MaterialModel, MaterialSpec, RegionRef, Scene, SceneError, DEFAULT_MATERIAL,
};
use crate::Vec3;

use super::mesh::SceneMesh;
use super::{stage, BuildError};

/// The scene's FEM inputs, resolved once: the mesh, the material of every tetrahedron
/// and the fixed nodes.
pub struct FemInputs {
    /// The mesh (m) and optional render surface.
    pub mesh: SceneMesh,
    /// Materials by region and shape, in the scene's precedence order.
    pub materials: MaterialMap,
    /// Fixed-node rules.
    pub fixes: Vec<Fix>,
    /// The material of every tetrahedron.
    pub per_tet: Vec<Material>,
    /// The strain-energy law of every tetrahedron (its material's `model`, with the
    /// material's small-strain moduli).
    pub laws: Vec<Hyperelastic>,
    /// Whether each node is fixed.
    pub fixed: Vec<bool>,
}

impl FemInputs {
    /// Mesh, materials and fixed nodes of `scene`, checked against each other.
    pub fn resolve(scene: &Scene) -> Result<Self, BuildError> {
        let mesh = super::mesh::build_mesh(scene)?;
        let (materials, kinds) = material_map(scene, &mesh.mesh)?;
        let fixes = fixes(scene, &mesh.mesh)?;
        let per_tet = materials
            .per_tet(&mesh.mesh)
            .map_err(|e| stage(scene, "materials", e))?;
        let sources = materials.sources(&mesh.mesh);
        warn_empty_overrides(scene, &sources);
        let laws = sources
            .into_iter()
            .zip(&per_tet)
            .map(|(source, material)| Hyperelastic::new(kinds.of(source), material))
            .collect();
        let fixed =
            fem::fixed_nodes(&mesh.mesh, &fixes).map_err(|e| stage(scene, "fixed nodes", e))?;
        Ok(Self {
            mesh,
            materials,
            fixes,
            per_tet,
            laws,
            fixed,
        })
    }

    /// Whether any tetrahedron follows a large-strain law.
    pub fn is_nonlinear(&self) -> bool {
        self.laws.iter().any(|l| l.kind != LawKind::Linear)
    }

    /// Assembles K and the lumped M over the free DOFs.
    pub fn assemble(&self, scene: &Scene) -> Result<FemSystem, BuildError> {
        let dofs = DofMap::new(&self.fixed).map_err(|e| stage(scene, "fixed nodes", e))?;
        fem::assemble_with(&self.mesh.mesh, &self.per_tet, dofs, scene.mesh.pressure)
            .map_err(|e| stage(scene, "assembly", e))
    }

    /// The full nonlinear FEM of the scene: its laws, its fixed nodes prescribed, and
    /// nodal pressure when `mesh.pressure = "nodal"` (the linear law's, or the
    /// large-strain laws' averaged volume ratio).
    pub fn statics(&self, scene: &Scene) -> Result<NonlinearStatics, BuildError> {
        let prescribed: Vec<bool> = self.fixed.iter().flat_map(|&f| [f; 3]).collect();
        let mesh = &self.mesh.mesh;
        let statics = NonlinearStatics::new(mesh, self.laws.clone(), prescribed)
            .map_err(|e| stage(scene, "nonlinear FEM", e))?;
        Ok(match scene.mesh.pressure {
            Pressure::Element => statics,
            Pressure::Nodal => statics.with_nodal_pressure(mesh),
        })
    }
}

/// The strain-energy law of each entry of a [`MaterialMap`], alongside it.
struct LawKinds {
    default: LawKind,
    regions: std::collections::BTreeMap<i32, LawKind>,
    overrides: Vec<LawKind>,
}

impl LawKinds {
    fn of(&self, source: MaterialSource) -> LawKind {
        match source {
            MaterialSource::Default => self.default,
            MaterialSource::Region(id) => self.regions[&id],
            MaterialSource::Override(i) => self.overrides[i],
        }
    }
}

/// The law a material spec names (its stiffening checked by the schema).
fn law_kind(spec: &MaterialSpec) -> LawKind {
    match spec.model {
        MaterialModel::Linear => LawKind::Linear,
        MaterialModel::NeoHookean => LawKind::NeoHookean,
        MaterialModel::VerondaWestmann => LawKind::VerondaWestmann {
            stiffening: spec.stiffening.unwrap_or(0.0),
        },
    }
}

/// The scene's materials as one map: `default` (the scene's, or the built-in
/// [`DEFAULT_MATERIAL`]), then region materials, then geometric ones in file order
/// (later wins); and each entry's strain-energy law.
fn material_map(scene: &Scene, mesh: &TetMesh) -> Result<(MaterialMap, LawKinds), SceneError> {
    let material = |name: &str, young: f64, poisson: f64, density: f64| {
        let m = Material::new(young, poisson, density)
            .map_err(|e| scene.invalid(format!("materials.{name}"), e.to_string()))?;
        if let Some(why) = super::plausible::young_warning(young) {
            tracing::warn!("{}: materials.{name}.young: {why}", scene.source);
        }
        Ok::<_, SceneError>(m)
    };
    let (young, poisson, density) = DEFAULT_MATERIAL;
    let mut map = MaterialMap::uniform(material("default", young, poisson, density)?);
    let mut kinds = LawKinds {
        default: LawKind::Linear,
        regions: Default::default(),
        overrides: Vec::new(),
    };
    warn_locking(scene);
    for (name, spec) in scene.materials_in_order() {
        let m = material(name, spec.young, spec.poisson, spec.density)?;
        let kind = law_kind(spec);
        map = if let Some(r) = &spec.region {
            let id = region_id(scene, mesh, r, &format!("materials.{name}.region"))?;
            kinds.regions.insert(id, kind);
            map.with_region(id, m)
        } else if let Some(s) = &spec.sphere {
            let shape = Shape::Sphere {
                center: Vec3::from(s.center),
                radius: s.radius,
            };
            kinds.overrides.push(kind);
            map.with_override(shape, m)
        } else if let Some(b) = &spec.box_ {
            let shape = Shape::Box {
                min: Vec3::from(b.min),
                max: Vec3::from(b.max),
            };
            kinds.overrides.push(kind);
            map.with_override(shape, m)
        } else {
            kinds.default = kind;
            MaterialMap { default: m, ..map }
        };
    }
    Ok((map, kinds))
}

/// Warns of each geometric material (`sphere`, `box`) that no element's centroid falls
/// in (a shape in millimetres on a mesh in metres selects nothing).
fn warn_empty_overrides(scene: &Scene, sources: &[MaterialSource]) {
    let shaped = scene
        .materials_in_order()
        .into_iter()
        .filter(|(_, s)| s.region.is_none() && (s.sphere.is_some() || s.box_.is_some()));
    for (index, (name, _)) in shaped.enumerate() {
        if !sources.contains(&MaterialSource::Override(index)) {
            tracing::warn!(
                "{}: materials.{name}: selects no element (no tetrahedron's centroid lies                  in its shape, or a later material takes them all); shapes are in m, after                  mesh.scale: is it in millimetres?",
                scene.source
            );
        }
    }
}

/// Logs one warning naming the scene's materials whose Poisson ratio makes linear
/// tetrahedra with element pressure lock (ν ≥ [`LOCKING_POISSON`]), once per scene
/// source and materials in this process (a scene built again, e.g. for a second device, does not repeat it).
fn warn_locking(scene: &Scene) {
    static WARNED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if scene.mesh.pressure == Pressure::Nodal {
        return;
    }
    let mut names: Vec<String> = scene
        .materials_in_order()
        .into_iter()
        .filter(|(_, spec)| spec.poisson >= LOCKING_POISSON)
        .map(|(name, spec)| format!("materials.{name} (ν = {})", spec.poisson))
        .collect();
    if !scene.materials.contains_key("default") && DEFAULT_MATERIAL.1 >= LOCKING_POISSON {
        names.push(format!(
            "the built-in default material (ν = {}; the scene has no [materials.default])",
            DEFAULT_MATERIAL.1
        ));
    }
    if names.is_empty() {
        return;
    }
    let message = format!(
        "{}: {}: Poisson ratio ≥ {LOCKING_POISSON} is nearly incompressible; linear \
         tetrahedra lock (too stiff in bending and shear): set [mesh] pressure = \"nodal\" \
         for linear materials, refine the mesh, or expect stiff results",
        scene.source,
        names.join(", ")
    );
    let first = WARNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert(message.clone());
    if first {
        tracing::warn!("{message}");
    }
}

/// The scene's fixed-node rules with regions resolved and node indices checked.
fn fixes(scene: &Scene, mesh: &TetMesh) -> Result<Vec<Fix>, SceneError> {
    let axis = |a: usize| [Axis::X, Axis::Y, Axis::Z][a];
    scene
        .fix_rules()
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            Ok(match rule {
                FixSpec::Below { axis: a, distance } => Fix::Below {
                    axis: axis(a.index()),
                    dist: *distance,
                },
                FixSpec::Box { min, max } => Fix::InBox {
                    min: Vec3::from(*min),
                    max: Vec3::from(*max),
                },
                FixSpec::Region(r) => {
                    Fix::Region(region_id(scene, mesh, r, &format!("fixed[{i}].region"))?)
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
                    Fix::Nodes(list.clone())
                }
            })
        })
        .collect()
}

/// The region id `r` names in `mesh` (an id must occur; a name must be a physical name
/// of the mesh file); `key` names the scene key in the error.
pub(super) fn region_id(
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
