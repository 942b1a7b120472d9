//! The vibration modes of a tetrahedral mesh (`palpa modes`): computed, selected and,
//! on request, written as a modal cache file.

use std::path::Path;

use crate::fem::{Axis, Fix, Material, MaterialMap, Pressure, LOCKING_POISSON};
use crate::mesh::{self, generate::box_mesh, TetMesh};
use crate::modal::{
    self, ModalCache, ModeFate, ModeReport, PrecomputeParams, Precomputed, Progress,
};
use crate::scene::plausible;
use crate::scene::{Scene, DEFAULT_MATERIAL};
use crate::Vec3;

/// What to compute the modes of, and how.
pub struct ModesOptions {
    /// The mesh (m).
    pub mesh: TetMesh,
    /// Its one material.
    pub material: Material,
    /// Fixed-node rules (their union is fixed).
    pub fixes: Vec<Fix>,
    /// Where the volumetric strain is evaluated.
    pub pressure: Pressure,
    /// Modes to compute, their selection and the ordering.
    pub params: PrecomputeParams,
}

/// The computed and selected modes of a mesh.
pub struct Modes {
    /// What they were computed from.
    pub options: ModesOptions,
    /// The precompute: basis, every mode's report, timings.
    pub pre: Precomputed,
}

/// Computes and selects the modes `options` ask for; `progress` hears of the stages. A
/// nearly incompressible material on element pressure is warned about (it locks).
pub fn modes(options: ModesOptions, progress: &mut dyn FnMut(Progress)) -> Result<Modes, String> {
    let material = options.material;
    if material.locks() && options.pressure == Pressure::Element {
        tracing::warn!(
            "the material of --poisson {}: Poisson ratio ≥ {LOCKING_POISSON} is nearly \
             incompressible; linear tetrahedra lock (too stiff in bending and shear): \
             use --pressure nodal, refine the mesh or expect stiff results",
            material.poisson
        );
    }
    let materials = MaterialMap::uniform(material);
    let pre = modal::precompute(
        &options.mesh,
        &materials,
        &options.fixes,
        options.pressure,
        &options.params,
        progress,
    )
    .map_err(|e| e.to_string())?;
    Ok(Modes { options, pre })
}

impl Modes {
    /// Writes the modes as a modal cache file at `path`, keyed by their inputs' hash.
    pub fn save_cache(self, path: &Path) -> Result<(), String> {
        let o = &self.options;
        let materials = MaterialMap::uniform(o.material);
        let hash = modal::precompute_hash(&o.mesh, &materials, &o.fixes, o.pressure, &o.params)
            .map_err(|e| e.to_string())?;
        ModalCache {
            input_hash: hash,
            data: self.pre,
        }
        .save(path)
        .map_err(|e| e.to_string())
    }
}

/// The embedded default scene's `[materials.default]` as (E Pa, ν, ρ kg/m³), else the
/// built-in material scenes get when they name none.
pub fn default_scene_material() -> (f64, f64, f64) {
    Scene::embedded_default()
        .materials
        .get("default")
        .map_or(DEFAULT_MATERIAL, |m| {
            let m = m.get_ref();
            (m.young, m.poisson, m.density)
        })
}

/// The frequency to show (Hz): rigid-body modes are 0 Hz (their computed eigenvalue is
/// zero to rounding and may come out as −0.00000).
pub fn shown_frequency(r: &ModeReport) -> f64 {
    if r.fate == ModeFate::KeptRigid {
        0.0
    } else {
        r.freq_hz
    }
}

/// Parses `AXIS=DIST` (e.g. `y=0.005`).
pub fn parse_fix_below(s: &str) -> Result<Fix, String> {
    let (axis, dist) = s
        .split_once('=')
        .ok_or_else(|| format!("--fix-below expects AXIS=DIST, e.g. y=0.005, got {s:?}"))?;
    let axis: Axis = axis.trim().parse()?;
    let dist: f64 = dist
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|d| d.is_finite() && *d >= 0.0)
        .ok_or_else(|| format!("--fix-below: {dist:?} is not a finite distance >= 0"))?;
    Ok(Fix::Below { axis, dist })
}

/// Reads a mesh file or generates `box:NXxNYxNZ[:SXxSYxSZ]`.
pub fn load_mesh(spec: &str) -> Result<TetMesh, String> {
    let Some(rest) = spec.strip_prefix("box:") else {
        return mesh::load(Path::new(spec)).map_err(|e| e.to_string());
    };
    let triple = |s: &str| -> Result<[f64; 3], String> {
        let v: Vec<f64> = s
            .split('x')
            .map(|t| {
                t.parse::<f64>()
                    .map_err(|_| format!("{spec}: {t:?} is not a number"))
            })
            .collect::<Result<_, _>>()?;
        v.try_into()
            .map_err(|_| format!("{spec}: expected three values separated by 'x'"))
    };
    let (cells, size) = match rest.split_once(':') {
        Some((c, s)) => (triple(c)?, triple(s)?),
        None => (triple(rest)?, [0.1; 3]),
    };
    if cells
        .iter()
        .any(|c| c.fract() != 0.0 || *c < 1.0 || *c > 1e9)
    {
        return Err(format!("{spec}: cell counts must be positive integers"));
    }
    if !size.iter().all(|s| s.is_finite() && *s > 0.0) {
        return Err(format!("{spec}: the box size must be finite and positive"));
    }
    box_mesh(Vec3::from(size), cells.map(|c| c as usize)).map_err(|e| e.to_string())
}

/// Logs the mesh reader's notes (warnings as warnings) as a scene build does, and a
/// size (m, after `scale`) or Young's modulus `young` (Pa) that looks like a unit
/// mistake; `spec` names the mesh.
pub fn warn_implausible(spec: &str, mesh: &mut TetMesh, scale: f64, young: f64) {
    for note in std::mem::take(&mut mesh.notes) {
        if note.contains("warning:") {
            tracing::warn!("{spec}: {note}");
        } else {
            tracing::info!("{spec}: {note}");
        }
    }
    let (lo, hi) = mesh.bounds();
    if let Some(why) = plausible::mesh_size_warning((hi - lo).norm()) {
        tracing::warn!("{spec}: {why} (--scale {scale})");
    }
    if let Some(why) = plausible::young_warning(young) {
        tracing::warn!("--young: {why}");
    }
}
