//! A tissue backend over an assembled FEM system, wrapped in the contact pipeline: what
//! a scene's build hands over once its mesh, system and precompute are ready.

use std::sync::Arc;

use crate::condensed::{CondensedModel, PrecomputeLimit};
use crate::contact::Friction;
use crate::fem::{ComplianceColumns, DofMap, Factor, FemSystem};
use crate::mesh::TetMesh;
use crate::modal::residual::ResidualColumns;
use crate::modal::{ModalBasis, ModalParams, ModalRuntime};
use crate::nonlinear::{NonlinearParams, NonlinearStatics, NonlinearTissue, TissueModes};
use crate::tissue::{TissueGeometry, TissueModel};
use crate::Vec3;

use super::{patch, ContactPipeline, SceneModel};

/// Constraint rows the model is sized for: the contact rows of all probes in one step,
/// with room for a sphere on a finely graded mesh (docs/benchmarks.md, "contact rows").
pub const MAX_CONSTRAINT_ROWS: usize = 384;

/// How the probes touch the tissue: tip radius, contact patch and friction.
#[derive(Clone, Copy, Debug)]
pub struct ProbeSetup {
    /// Tip radius (m); 0 is a point probe.
    pub radius: f64,
    /// Contact patch radius of a point probe (m); absent: twice the mean surface edge.
    pub patch_radius: Option<f64>,
    /// Coulomb friction between probe and tissue.
    pub friction: Friction,
}

impl ProbeSetup {
    /// A probe of tip `radius` (m) with the contact patch `patch_radius` (m) and the
    /// Coulomb coefficients `mu_static` ≥ `mu_kinetic` ≥ 0; an error says which is wrong.
    pub fn new(
        radius: f64,
        patch_radius: Option<f64>,
        mu_static: f64,
        mu_kinetic: f64,
    ) -> Result<Self, String> {
        Ok(Self {
            radius,
            patch_radius,
            friction: Friction::new(mu_static, mu_kinetic)?,
        })
    }
}

/// Which backend to build, with what it needs beyond the FEM system.
pub enum BackendSetup<'a> {
    /// Modal dynamics over `basis`; `residual`: with residual flexibility (clamped
    /// bodies only).
    Modal {
        /// The precomputed modes.
        basis: &'a ModalBasis,
        /// Damping, step and row capacity.
        params: ModalParams,
        /// Residual flexibility asked for.
        residual: bool,
    },
    /// Condensed static FEM, with at most `precompute_cap` columns computed at the start
    /// and at most `precompute_bytes` of them.
    Condensed {
        /// Columns computed up front.
        precompute_cap: usize,
        /// Bytes of columns computed up front at most.
        precompute_bytes: f64,
    },
    /// Large-strain tissue in a reduced basis, its lowest modes (of `modes`, if any)
    /// dynamic with Rayleigh damping `alpha` (α₁, α₂).
    Nonlinear {
        /// The full nonlinear statics (boxed: the other variants are a few words).
        statics: Box<NonlinearStatics>,
        /// The reduced model's parameters.
        params: NonlinearParams,
        /// The precomputed modes the dynamic part uses.
        modes: Option<&'a ModalBasis>,
        /// Rayleigh damping (α₁ s, α₂ 1/s).
        alpha: (f64, f64),
    },
}

/// The stage a column cache larger than memory allows fails in, before the factor of K.
pub const COLUMN_CACHE: &str = "column cache";

/// A build stage that failed, and why.
#[derive(Debug)]
pub struct StageError {
    /// Which stage (factorising K, modal runtime, …).
    pub stage: &'static str,
    /// What failed.
    pub message: String,
}

fn failed(stage: &'static str) -> impl Fn(String) -> StageError {
    move |message| StageError { stage, message }
}

/// Builds `backend` over `system` (the FEM system of `mesh`), its K⁻¹ column cache
/// holding `column_cache` nodes, probed as `probe` says; `source` names the scene in
/// warnings.
pub fn build(
    mesh: &TetMesh,
    system: &FemSystem,
    column_cache: usize,
    backend: BackendSetup,
    probe: ProbeSetup,
    source: &str,
) -> Result<SceneModel, StageError> {
    let geometry = TissueGeometry::from_mesh(mesh);
    let patch_radius = probe
        .patch_radius
        .unwrap_or_else(|| 2.0 * mean_edge(&geometry.rest, &geometry.triangles));
    if probe.radius == 0.0 {
        let nodes = patch::most_nodes_within(&geometry.rest, &geometry.surface_nodes, patch_radius);
        let given = probe.patch_radius.is_some();
        if let Some(warning) = patch::crowded_patch_warning(patch_radius, nodes, given) {
            tracing::warn!("{source}: {warning}");
        }
    }
    let columns = |what: &'static str| {
        // Each completed node holds 72 bytes per mesh node (ComplianceColumns::new).
        let bytes = 72.0 * mesh.nodes.len() as f64 * column_cache as f64;
        crate::budget::check(bytes, || {
            format!(
                "a cache of {column_cache} nodes' columns on a {}-node mesh",
                mesh.nodes.len()
            )
        })
        .map_err(failed(COLUMN_CACHE))?;
        let par = faer::get_global_parallelism();
        let factor = Factor::for_system(system, 0.0, crate::fem::Ordering::default(), par)
            .map_err(|e| failed("factorising K")(e.to_string()))?;
        ComplianceColumns::new(
            Arc::new(factor),
            system.dofs.clone(),
            &system.positions,
            column_cache,
        )
        .map_err(|e| failed(what)(e.to_string()))
    };
    let contact = Contact {
        radius: probe.radius,
        patch_radius,
        friction: probe.friction,
        dofs: &system.dofs,
    };
    Ok(match backend {
        BackendSetup::Modal {
            basis,
            params,
            residual,
        } => {
            let clamped = !basis.rigid.iter().any(|&r| r);
            if residual && !clamped {
                tracing::warn!(
                    "{source}: the body is free (rigid modes present), so residual flexibility \
                     is off; the contact will feel stiffer than full FEM"
                );
            }
            // K is factorised on its own thread: the viewer and the haptic loop start
            // meanwhile, and the model's first step waits for it.
            let residual = match residual && clamped {
                true => Some(
                    residual_being_built(system, column_cache)
                        .map_err(failed("residual flexibility"))?,
                ),
                false => None,
            };
            let shapes = basis.shapes.as_ref();
            let eigenvalues = &basis.eigenvalues;
            let runtime =
                ModalRuntime::with_residual(geometry, eigenvalues, shapes, params, residual)
                    .map_err(|e| failed("modal runtime")(e.to_string()))?;
            SceneModel::Modal(pipeline(runtime, contact))
        }
        BackendSetup::Condensed {
            precompute_cap,
            precompute_bytes,
        } => {
            let limit = PrecomputeLimit {
                nodes: precompute_cap.min(column_cache),
                bytes: precompute_bytes,
            };
            let columns = columns("condensed columns")?;
            let model = CondensedModel::within(geometry, columns, limit, MAX_CONSTRAINT_ROWS)
                .map_err(|e| failed("condensed model")(e.to_string()))?;
            SceneModel::Condensed(pipeline(model, contact))
        }
        BackendSetup::Nonlinear {
            statics,
            params,
            modes,
            alpha,
        } => {
            let modes = modes.map_or_else(TissueModes::default, |b| tissue_modes(b, system, alpha));
            let residual = columns("residual flexibility")?;
            let statics = Arc::from(statics);
            let model = NonlinearTissue::new(geometry, statics, params, &modes, residual)
                .map_err(|e| failed("nonlinear model")(e.to_string()))?;
            SceneModel::Nonlinear(pipeline(model, contact))
        }
    })
}

/// The K⁻¹ column cache of `system`, `capacity` nodes, built (K factorised) on its own
/// thread.
fn residual_being_built(system: &FemSystem, capacity: usize) -> Result<ResidualColumns, String> {
    let par = faer::get_global_parallelism();
    let system = system.clone();
    ResidualColumns::building(move || {
        let factor = Factor::for_system(&system, 0.0, crate::fem::Ordering::default(), par)
            .map_err(|e| format!("factorising K: {e}"))?;
        ComplianceColumns::new(Arc::new(factor), system.dofs, &system.positions, capacity)
            .map_err(|e| e.to_string())
    })
}

/// What the probes' contact needs besides the tissue model.
#[derive(Clone, Copy)]
struct Contact<'a> {
    /// Probe tip radius (m).
    radius: f64,
    /// A point probe's contact patch radius (m).
    patch_radius: f64,
    friction: Friction,
    /// The fixed nodes: the faces on the support are not touched.
    dofs: &'a DofMap,
}

/// The probes' contact over a tissue model.
fn pipeline<M: TissueModel>(model: M, contact: Contact) -> Box<ContactPipeline<M>> {
    Box::new(
        ContactPipeline::new(model, contact.radius)
            .with_fixed_nodes(|n| contact.dofs.is_fixed(n))
            .with_patch_radius(contact.patch_radius)
            .with_friction(contact.friction),
    )
}

/// The nonlinear backend's dynamic modes: the precompute's elastic modes (rigid ones
/// left out) with the lumped mass over every DOF (zero at fixed nodes).
fn tissue_modes(
    basis: &ModalBasis,
    system: &FemSystem,
    (alpha1, alpha2): (f64, f64),
) -> TissueModes {
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
        alpha1,
        alpha2,
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
