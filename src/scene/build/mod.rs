//! Scene → running model: mesh → materials and fixed nodes (resolved once) → FEM
//! system (assembled once) → modal precompute (cached by input hash) or condensed
//! columns → the probe [`Simulation`], plus the haptic configuration the scene asks
//! for.

mod cache;
mod fem;
mod mesh;
mod regions;

use std::path::Path;
use std::sync::Arc;

pub use cache::{
    cache_dir, cache_path, has_modes, modal_precompute, precompute_params, PrecomputeOutcome,
    CACHE_DIR_ENV,
};
pub use fem::FemInputs;
pub use mesh::{build_mesh, RenderSurface, SceneMesh};

use crate::condensed::CondensedModel;
use crate::contact::Friction;
use crate::device::mapped::Workspace;
use crate::device::DeviceRating;
use crate::fem::{ComplianceColumns, Factor, FemSystem};
use crate::haptic::HapticConfig;
use crate::mesh::TetMesh;
use crate::modal::{ModalBasis, ModalParams, ModalRuntime, Progress};
use crate::model::{TissueGeometry, TissueModel};
use crate::nonlinear::{NonlinearParams, NonlinearTissue, TissueModes};
use crate::pipeline::{patch, SceneModel, Simulation};
use crate::scene::{BackendKind, NonlinearSpec, Scene, SceneError};
use crate::Vec3;

/// Constraint rows the model is sized for: the contact rows of all probes in one step (a
/// 5 mm sphere 6 mm into a block of 5 mm cells has about 60 candidate nodes and samples; a
/// mesh graded to 0.5 mm under it, about 250).
pub const MAX_CONSTRAINT_ROWS: usize = 384;

/// How far past the device's force clamp the tissue may be pushed. Holding a position,
/// the modal model's force rings around the cap after a jump (measured, 1 m box jumped
/// 9 cm deep: 2.4 % below a cap of 1× the clamp, 23 % below a cap of 1.25×), and the hand
/// must feel the clamp, not the ringing; a point probe pushing the default block with 2×
/// the 8 N clamp dents it about 35 mm beside the lump (`palpa indent`: 4.62 N at 10 mm),
/// still above its fixed base 40 mm down.
pub const FORCE_CAP_MARGIN: f64 = 2.0;

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
    /// Fits the scene to a device rated `rating` and returns the haptic loop
    /// configuration (the scene's rates, force strategy and safety limits). The tissue
    /// is then never pushed harder than the device may render (the force clamp, with
    /// [`FORCE_CAP_MARGIN`]), so a deep press saturates in the model as on the hand. The
    /// workspace mapping is applied by wrapping the device
    /// ([`MappedDevice`](crate::device::mapped::MappedDevice)).
    pub fn attach_device(&mut self, rating: DeviceRating) -> HapticConfig {
        let mut c = HapticConfig::new(self.scene.safety.limits(rating));
        self.model
            .set_force_cap(FORCE_CAP_MARGIN * c.limits.max_force);
        c.tick_period = 1.0 / self.scene.rates.haptic;
        c.ticks_per_model_step = self.scene.rates.ticks_per_model_step();
        c.strategy = self.scene.force.strategy;
        c
    }

    /// How a device rated `rating` maps into the scene, and one line saying how it was
    /// chosen: `[device.workspace]` when the scene gives it; else a physical device's
    /// workspace fitted to the mesh's bounding box ([`Workspace::fit`]); else (virtual
    /// devices) the identity.
    pub fn device_mapping(&self, rating: &DeviceRating) -> (Workspace, String) {
        let describe = |w: &Workspace| {
            format!(
                "scale {:.3} (scene m per device m), device origin at ({:.4}, {:.4}, {:.4}) m",
                w.scale, w.offset.x, w.offset.y, w.offset.z
            )
        };
        if let Some(spec) = &self.scene.device.workspace {
            let w = spec.mapping();
            return (w, format!("{} (from [device.workspace])", describe(&w)));
        }
        match &rating.workspace {
            Some(device) => {
                let (lo, hi) = self.mesh.mesh.bounds();
                let w = Workspace::fit(device, lo, hi);
                let h = device.half_extent * 1e3;
                (
                    w,
                    format!(
                        "{}: the device's ±({:.0}, {:.0}, {:.0}) mm box fitted to the scene's bounding box, its centre at the middle of the top (set [device.workspace] to choose)",
                        describe(&w),
                        h.x,
                        h.y,
                        h.z
                    ),
                )
            }
            None => (
                Workspace::IDENTITY,
                "device positions are scene positions".into(),
            ),
        }
    }

    /// Where a probe rests above the tissue (m, scene frame): `height` above the middle of
    /// the mesh's top (where `serve` parks the virtual stylus).
    pub fn above_the_middle(&self, height: f64) -> Vec3 {
        let (lo, hi) = self.mesh.mesh.bounds();
        let mid = (lo + hi) / 2.0;
        Vec3::new(mid.x, mid.y, hi.z + height)
    }

    /// The scene's name for viewers and logs (its `name`, else its source).
    pub fn name(&self) -> String {
        self.scene
            .name
            .clone()
            .unwrap_or_else(|| self.scene.source.clone())
    }
}

/// The error of build stage `stage` of `scene`.
fn stage(scene: &Scene, stage: &'static str, e: impl std::fmt::Display) -> BuildError {
    BuildError::Stage {
        scene: scene.source.clone(),
        stage,
        message: e.to_string(),
    }
}

/// Builds the scene's model: precompute (cached in `cache_dir`) or condensed columns,
/// then the probe simulation.
pub fn build(
    scene: Scene,
    cache_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<BuiltScene, BuildError> {
    let inputs = FemInputs::resolve(&scene)?;
    if inputs.is_nonlinear() && scene.backend.kind != BackendKind::Nonlinear {
        warn_linear_backend(&scene);
    }
    let mesh = &inputs.mesh.mesh;
    let geometry = TissueGeometry::from_mesh(mesh);
    let system = inputs.assemble(&scene)?;
    let columns = |system: &FemSystem, what: &'static str| {
        let factor = Factor::for_system(
            system,
            0.0,
            crate::fem::Ordering::default(),
            faer::get_global_parallelism(),
        )
        .map_err(|e| stage(&scene, "factorising K", e))?;
        let cache_size = scene.backend.columns.cache_size;
        ComplianceColumns::new(
            Arc::new(factor),
            system.dofs.clone(),
            &system.positions,
            cache_size,
        )
        .map_err(|e| stage(&scene, what, e))
    };
    check_size(&scene, mesh)?;
    let radius = scene.contact.probe_radius;
    let patch_radius = scene
        .contact
        .patch_radius
        .unwrap_or_else(|| 2.0 * mean_edge(&geometry.rest, &geometry.triangles));
    if radius == 0.0 {
        let nodes = patch::most_nodes_within(&geometry.rest, &geometry.surface_nodes, patch_radius);
        let given = scene.contact.patch_radius.is_some();
        if let Some(warning) = patch::crowded_patch_warning(patch_radius, nodes, given) {
            tracing::warn!("{}: {warning}", scene.source);
        }
    }
    let friction = scene
        .contact
        .friction()
        .map_err(|e| scene.invalid("contact.friction", e))?;
    // The probes' contact over a tissue model, as the scene sets it up.
    fn contact<M: TissueModel>(
        model: M,
        (radius, patch_radius, friction): (f64, f64, Friction),
    ) -> Box<Simulation<M>> {
        Box::new(
            Simulation::new(model, radius)
                .with_patch_radius(patch_radius)
                .with_friction(friction),
        )
    }
    let probe = (radius, patch_radius, friction);
    let (model, precompute, n_modes) = match scene.backend.kind {
        BackendKind::Modal => {
            let (pre, outcome) = modal_precompute(&scene, &inputs, &system, cache_dir, progress)?;
            let clamped = !pre.basis.rigid.iter().any(|&r| r);
            let residual = if scene.backend.modal.residual && clamped {
                Some(columns(&system, "residual flexibility")?)
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
                geometry,
                &pre.basis.eigenvalues,
                pre.basis.shapes.as_ref(),
                params,
                residual,
            )
            .map_err(|e| stage(&scene, "modal runtime", e))?;
            (SceneModel::Modal(contact(runtime, probe)), outcome, n_modes)
        }
        BackendKind::Condensed => {
            let columns = columns(&system, "condensed columns")?;
            let cap = scene.backend.condensed.precompute_cap;
            let model = CondensedModel::new(
                geometry,
                columns,
                cap.min(scene.backend.columns.cache_size),
                MAX_CONSTRAINT_ROWS,
            )
            .map_err(|e| stage(&scene, "condensed model", e))?;
            (
                SceneModel::Condensed(contact(model, probe)),
                PrecomputeOutcome::NotModal,
                0,
            )
        }
        BackendKind::Nonlinear => {
            let statics = inputs.statics(&scene)?;
            let spec = &scene.backend.nonlinear;
            let params = NonlinearParams {
                shapes: spec.shapes,
                tolerance: spec.tolerance,
                corrections_per_step: spec.corrections_per_step,
                max_rows: MAX_CONSTRAINT_ROWS,
            };
            let (modes, outcome) = if spec.modes > 0 {
                let (pre, outcome) =
                    modal_precompute(&scene, &inputs, &system, cache_dir, progress)?;
                (tissue_modes(&pre.basis, &system, spec), outcome)
            } else {
                (TissueModes::default(), PrecomputeOutcome::NotModal)
            };
            let n_modes = modes.shapes.len();
            let model = NonlinearTissue::new(geometry, Arc::new(statics), params, &modes)
                .map_err(|e| stage(&scene, "nonlinear model", e))?;
            (
                SceneModel::Nonlinear(contact(model, probe)),
                outcome,
                n_modes,
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

/// The nonlinear backend's dynamic modes: the precompute's elastic modes (rigid ones
/// left out) with the lumped mass over every DOF (zero at fixed nodes).
fn tissue_modes(basis: &ModalBasis, system: &FemSystem, spec: &NonlinearSpec) -> TissueModes {
    let dofs = &system.dofs;
    let mass = (0..3 * dofs.n_nodes())
        .map(|d| dofs.dof(d / 3, d % 3).map_or(0.0, |i| system.mass[i]))
        .collect();
    let shapes = (0..basis.n_modes())
        .filter(|&i| !basis.rigid[i])
        .map(|i| basis.shapes.col(i).iter().copied().collect())
        .collect();
    TissueModes {
        shapes,
        mass,
        alpha1: spec.alpha1,
        alpha2: spec.alpha2,
    }
}

/// Warns that the scene's large-strain materials run at their small-strain moduli in
/// the linear backends, naming them.
fn warn_linear_backend(scene: &Scene) {
    let names: Vec<String> = scene
        .materials_in_order()
        .into_iter()
        .filter(|(_, spec)| spec.model != crate::scene::MaterialModel::Linear)
        .map(|(name, _)| format!("materials.{name}"))
        .collect();
    let backend = match scene.backend.kind {
        BackendKind::Modal => "modal",
        BackendKind::Condensed => "condensed",
        BackendKind::Nonlinear => "nonlinear",
    };
    let (verb, them) = if names.len() == 1 {
        ("follows", "it")
    } else {
        ("follow", "them")
    };
    tracing::warn!(
        "{}: {} {verb} a large-strain law, but the {backend} backend is linear: it runs \
         {them} at small-strain moduli (E, ν); `palpa indent --full` solves the laws",
        scene.source,
        names.join(", "),
    );
}

/// Checks what the scene asks for against the mesh it got: memory sized by the mesh
/// (the modal basis, the column cache) and probe sizes against the body's size.
fn check_size(scene: &Scene, mesh: &TetMesh) -> Result<(), BuildError> {
    let memory = physical_memory();
    let n = mesh.nodes.len() as f64;
    let modal = &scene.backend.modal;
    let basis = 8.0 * 3.0 * n * modal.modes as f64;
    if scene.backend.kind == BackendKind::Modal && basis > memory / 2.0 {
        return Err(scene
            .invalid(
                "backend.modal.modes",
                format!(
                    "{} modes of {} nodes need {:.1} GB, more than half of this machine's {:.1} GB",
                    modal.modes,
                    mesh.nodes.len(),
                    basis * 1e-9,
                    memory * 1e-9
                ),
            )
            .into());
    }
    let columns = 72.0 * n * scene.backend.columns.cache_size as f64;
    if columns > memory / 2.0 {
        return Err(scene
            .invalid(
                "backend.columns.cache_size",
                format!(
                    "{} cached nodes of a {}-node mesh need up to {:.1} GB, more than half of \
                     this machine's {:.1} GB",
                    scene.backend.columns.cache_size,
                    mesh.nodes.len(),
                    columns * 1e-9,
                    memory * 1e-9
                ),
            )
            .into());
    }
    let (lo, hi) = mesh.bounds();
    let size = (hi - lo).norm();
    let contact = &scene.contact;
    for (key, r) in [
        ("contact.probe_radius", Some(contact.probe_radius)),
        ("contact.patch_radius", contact.patch_radius),
    ] {
        if let Some(r) = r.filter(|&r| r > size) {
            return Err(scene
                .invalid(
                    key,
                    format!("{r} m is larger than the whole mesh ({size:.3} m across)"),
                )
                .into());
        }
    }
    Ok(())
}

/// Physical memory of this machine (bytes); 16 GB where the system does not say.
fn physical_memory() -> f64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        pages as f64 * page as f64
    } else {
        16e9
    }
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
