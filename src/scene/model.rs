//! Scene → running tissue model: mesh → materials per element → fixed nodes → FEM
//! system → modal precompute (cached by input hash) or condensed columns →
//! [`Simulation`] with the probe, plus the haptic configuration the scene asks for.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::build::{build_mesh, resolve_fixes, resolve_materials, FixRule, SceneMesh, Selector};
use super::{BackendKind, Scene, SceneError};
use crate::condensed::CondensedModel;
use crate::device::DeviceRating;
use crate::fem::{
    self, Axis, ComplianceColumns, DofMap, Factor, FemSystem, Fix, Material, MaterialMap, Shape,
};
use crate::haptic::HapticConfig;
use crate::modal::{
    self, CacheError, ModalCache, ModalParams, ModalRuntime, PrecomputeParams, Precomputed,
    Progress, SelectionParams,
};
use crate::session::{SceneModel, Simulation};
use crate::Vec3;

/// Constraint rows the model is sized for: one probe contact (1 row) or a held point
/// (3 rows), with room for a second point.
pub const MAX_CONSTRAINT_ROWS: usize = 6;

/// Environment variable naming the precompute cache directory.
pub const CACHE_DIR_ENV: &str = "PALPA_CACHE_DIR";

/// Why a scene could not become a model: the scene itself, or the FEM/precompute stage
/// (named).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The scene file or its mesh.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// A stage of the build failed.
    #[error("{scene}: {stage}: {message}")]
    Stage {
        /// The scene source.
        scene: String,
        /// Which stage (materials, fixed nodes, assembly, precompute, …).
        stage: &'static str,
        /// What failed.
        message: String,
    },
}

/// Where the precompute cache lives: `override_dir`, else `$PALPA_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/palpa`, else `~/.cache/palpa`, else a `palpa-cache` directory in the
/// system temporary directory.
pub fn cache_dir(override_dir: Option<&Path>) -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    override_dir
        .map(Path::to_path_buf)
        .or_else(|| env(CACHE_DIR_ENV))
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("palpa")))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("palpa")))
        .unwrap_or_else(|| std::env::temp_dir().join("palpa-cache"))
}

/// What happened to the modal precompute.
#[derive(Clone, Debug, PartialEq)]
pub enum PrecomputeOutcome {
    /// Loaded from the cache file.
    Loaded {
        /// The cache file.
        path: PathBuf,
    },
    /// Computed (the cache was absent, stale or damaged) and written.
    Computed {
        /// The cache file written.
        path: PathBuf,
        /// Why the cache could not be used (absent, stale, corrupt …).
        reason: String,
        /// Precompute wall time (s).
        seconds: f64,
    },
    /// The condensed backend has nothing to precompute offline.
    NotModal,
}

/// The scene's resolved FEM inputs: mesh, materials per region/shape, fixed nodes.
pub struct FemInputs {
    /// The mesh (m) and optional render surface.
    pub mesh: SceneMesh,
    /// Materials in precedence order.
    pub materials: MaterialMap,
    /// Fixed-node rules.
    pub fixes: Vec<Fix>,
}

/// A scene turned into a model, ready for a haptic loop.
pub struct BuiltScene {
    /// The scene.
    pub scene: Scene,
    /// The mesh and render surface.
    pub mesh: SceneMesh,
    /// The tissue model with the probe.
    pub model: SceneModel,
    /// What the modal precompute did.
    pub precompute: PrecomputeOutcome,
    /// Kept modes (modal backend; 0 for condensed).
    pub n_modes: usize,
}

impl BuiltScene {
    /// The haptic loop configuration for a device rated `rating`: the scene's rates,
    /// force strategy and safety limits. The workspace mapping is applied by wrapping
    /// the device ([`MappedDevice`](crate::device::mapped::MappedDevice)), so no offset here.
    pub fn haptic_config(&self, rating: DeviceRating) -> HapticConfig {
        let mut c = HapticConfig::new(self.scene.safety.limits(rating));
        c.tick_period = 1.0 / self.scene.rates.haptic;
        c.ticks_per_model_step = self.scene.rates.ticks_per_model_step();
        c.strategy = self.scene.force.strategy;
        c
    }
}

fn stage(scene: &Scene, stage: &'static str, e: impl std::fmt::Display) -> BuildError {
    BuildError::Stage {
        scene: scene.source.clone(),
        stage,
        message: e.to_string(),
    }
}

/// Mesh, materials and fixed nodes of `scene`, checked against each other.
pub fn fem_inputs(scene: &Scene) -> Result<FemInputs, BuildError> {
    let mesh = build_mesh(scene)?;
    let mut materials: Option<MaterialMap> = None;
    for (name, selector, spec) in resolve_materials(scene, &mesh.mesh)? {
        let m = Material::new(spec.young, spec.poisson, spec.density)
            .map_err(|e| scene.invalid(format!("materials.{name}"), e.to_string()))?;
        materials = Some(match (materials, selector) {
            (None, Selector::Default) => MaterialMap::uniform(m),
            (Some(map), Selector::Region(id)) => map.with_region(id, m),
            (Some(map), Selector::Sphere(center, radius)) => {
                map.with_override(Shape::Sphere { center, radius }, m)
            }
            (Some(map), Selector::Box(min, max)) => map.with_override(Shape::Box { min, max }, m),
            _ => unreachable!("resolve_materials puts exactly one default first"),
        });
    }
    let materials = materials.expect("resolve_materials always yields the default");
    let axis = |a: usize| [Axis::X, Axis::Y, Axis::Z][a];
    let fixes = resolve_fixes(scene, &mesh.mesh)?
        .into_iter()
        .map(|r| match r {
            FixRule::Below(a, dist) => Fix::Below {
                axis: axis(a),
                dist,
            },
            FixRule::Box(min, max) => Fix::InBox { min, max },
            FixRule::Region(id) => Fix::Region(id),
            FixRule::Nodes(list) => Fix::Nodes(list),
        })
        .collect();
    Ok(FemInputs {
        mesh,
        materials,
        fixes,
    })
}

/// The modal precompute parameters a scene asks for. Residual flexibility is applied at
/// run time from K⁻¹ columns, so the precompute does not store per-node blocks.
pub fn precompute_params(scene: &Scene) -> PrecomputeParams {
    let m = &scene.backend.modal;
    PrecomputeParams {
        n_modes: m.modes,
        selection: SelectionParams {
            max_force: m.max_force,
            min_displacement: m.min_displacement,
            max_frequency_hz: scene.modal_max_frequency(),
            alpha_stiffness: m.alpha1,
            alpha_mass: m.alpha2,
        },
        residual: false,
        ..PrecomputeParams::default()
    }
}

/// The cache file of a precompute with input hash `hash` in `dir`.
pub fn cache_path(dir: &Path, hash: &[u8; 32]) -> PathBuf {
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("modal-{hex}.palpa"))
}

/// Loads the modal precompute from the cache in `dir`, or computes and writes it;
/// `progress` sees the precompute's stages when it runs.
pub fn modal_precompute(
    scene: &Scene,
    inputs: &FemInputs,
    dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Precomputed, PrecomputeOutcome), BuildError> {
    let params = precompute_params(scene);
    let mesh = &inputs.mesh.mesh;
    let per_tet = inputs
        .materials
        .per_tet(mesh)
        .map_err(|e| stage(scene, "materials", e))?;
    let fixed =
        fem::fixed_nodes(mesh, &inputs.fixes).map_err(|e| stage(scene, "fixed nodes", e))?;
    let hash = modal::input_hash(mesh, &per_tet, &fixed, &params);
    let path = cache_path(dir, &hash);
    let reason = match ModalCache::load(&path, &hash) {
        Ok(cache) => {
            tracing::info!("loaded precompute from {}", path.display());
            return Ok((cache.data, PrecomputeOutcome::Loaded { path }));
        }
        Err(CacheError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            "no cache yet".to_string()
        }
        Err(e) => {
            tracing::warn!("{}: {e}; recomputing", path.display());
            e.to_string()
        }
    };
    let start = Instant::now();
    let data = modal::precompute(mesh, &inputs.materials, &inputs.fixes, &params, progress)
        .map_err(|e| stage(scene, "modal precompute", e))?;
    let seconds = start.elapsed().as_secs_f64();
    std::fs::create_dir_all(dir)
        .map_err(|e| stage(scene, "precompute cache", format!("{}: {e}", dir.display())))?;
    let cache = ModalCache {
        input_hash: hash,
        data,
    };
    cache
        .save(&path)
        .map_err(|e| stage(scene, "precompute cache", e))?;
    Ok((
        cache.data,
        PrecomputeOutcome::Computed {
            path,
            reason,
            seconds,
        },
    ))
}

/// Builds the scene's model: precompute (cached in `cache_dir`) or condensed columns,
/// then the probe simulation.
pub fn build(
    scene: Scene,
    cache_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<BuiltScene, BuildError> {
    let inputs = fem_inputs(&scene)?;
    let mesh = &inputs.mesh.mesh;
    let boundary = mesh.boundary();
    let system = || -> Result<FemSystem, BuildError> {
        let per_tet = inputs
            .materials
            .per_tet(mesh)
            .map_err(|e| stage(&scene, "materials", e))?;
        let fixed =
            fem::fixed_nodes(mesh, &inputs.fixes).map_err(|e| stage(&scene, "fixed nodes", e))?;
        let dofs = DofMap::new(&fixed).map_err(|e| stage(&scene, "fixed nodes", e))?;
        fem::assemble(mesh, &per_tet, dofs).map_err(|e| stage(&scene, "assembly", e))
    };
    let factor = |system: &FemSystem| -> Result<Arc<Factor>, BuildError> {
        Factor::for_system(
            system,
            0.0,
            fem::Ordering::default(),
            faer::get_global_parallelism(),
        )
        .map(Arc::new)
        .map_err(|e| stage(&scene, "factorising K", e))
    };
    let radius = scene.contact.probe_radius;
    let patch_radius = scene
        .contact
        .patch_radius
        .unwrap_or_else(|| radius.max(2.0 * mean_edge(&mesh.nodes, &boundary.triangles)));
    let friction = scene
        .contact
        .friction()
        .map_err(|e| scene.invalid("contact.friction", e))?;
    let (model, precompute, n_modes) = match scene.backend.kind {
        BackendKind::Modal => {
            let (pre, outcome) = modal_precompute(&scene, &inputs, cache_dir, progress)?;
            let clamped = !pre.basis.rigid.iter().any(|&r| r);
            let columns = if scene.backend.modal.residual && clamped {
                let system = system()?;
                let f = factor(&system)?;
                Some(
                    ComplianceColumns::new(
                        f,
                        system.dofs.clone(),
                        scene.backend.condensed.cache_size,
                    )
                    .map_err(|e| stage(&scene, "residual flexibility", e))?,
                )
            } else {
                if scene.backend.modal.residual {
                    tracing::warn!(
                        "{}: the body is free (rigid modes present), so residual flexibility \
                         is off; the contact will feel stiffer than full FEM",
                        scene.source
                    );
                }
                None
            };
            let params = ModalParams {
                alpha1: scene.backend.modal.alpha1,
                alpha2: scene.backend.modal.alpha2,
                dt: 1.0 / scene.rates.model,
                max_rows: MAX_CONSTRAINT_ROWS,
            };
            let n_modes = pre.basis.n_modes();
            let runtime = ModalRuntime::new(
                mesh.nodes.clone(),
                boundary.triangles,
                boundary.nodes,
                &pre.basis.eigenvalues,
                pre.basis.shapes.as_ref(),
                params,
                columns,
            )
            .map_err(|e| stage(&scene, "modal runtime", e))?;
            (
                SceneModel::Modal(Box::new(
                    Simulation::new(runtime, radius)
                        .with_patch_radius(patch_radius)
                        .with_friction(friction),
                )),
                outcome,
                n_modes,
            )
        }
        BackendKind::Condensed => {
            let system = system()?;
            let f = factor(&system)?;
            let c = &scene.backend.condensed;
            let columns = ComplianceColumns::new(f, system.dofs.clone(), c.cache_size)
                .map_err(|e| stage(&scene, "condensed columns", e))?;
            let model = CondensedModel::new(
                mesh.nodes.clone(),
                boundary.triangles,
                boundary.nodes,
                columns,
                c.precompute_cap.min(c.cache_size),
                MAX_CONSTRAINT_ROWS,
            )
            .map_err(|e| stage(&scene, "condensed model", e))?;
            (
                SceneModel::Condensed(Box::new(
                    Simulation::new(model, radius)
                        .with_patch_radius(patch_radius)
                        .with_friction(friction),
                )),
                PrecomputeOutcome::NotModal,
                0,
            )
        }
    };
    Ok(BuiltScene {
        mesh: inputs.mesh,
        scene,
        model,
        precompute,
        n_modes,
    })
}

/// Mean edge length (m) of the surface triangles at rest: the mesh scale the default
/// contact patch radius is tied to.
fn mean_edge(nodes: &[Vec3], triangles: &[[usize; 3]]) -> f64 {
    let total: f64 = triangles
        .iter()
        .map(|t| {
            (nodes[t[0]] - nodes[t[1]]).norm()
                + (nodes[t[1]] - nodes[t[2]]).norm()
                + (nodes[t[2]] - nodes[t[0]]).norm()
        })
        .sum();
    if triangles.is_empty() {
        0.0
    } else {
        total / (3.0 * triangles.len() as f64)
    }
}
