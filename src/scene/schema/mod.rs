//! The scene file's schema: one file per section, each with its own checks
//! (`docs/scenes.md` documents every key). Parsing rejects unknown keys; every range
//! error names the file, the key and the value. Lengths are in m, moduli in Pa,
//! densities in kg/m³, rates in Hz, times in s.

mod backend;
mod check;
mod contact;
mod device;
mod fixed;
mod haptic;
mod materials;
mod mesh;
mod stream;
mod view;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

pub use backend::{BackendKind, BackendSpec, ColumnsSpec, CondensedSpec, ModalSpec, NonlinearSpec};
use check::Check;
pub use contact::ContactSpec;
pub use device::{DeviceKind, DeviceSpec, WorkspaceSpec};
pub use fixed::{AxisName, FixSpec};
pub use haptic::{ForceSpec, Rates, SafetySpec};
pub use materials::{
    AabbSpec, MaterialModel, MaterialSpec, RegionRef, SphereSpec, DEFAULT_MATERIAL, MAX_STIFFENING,
};
pub use mesh::{
    BoxSpec, Grading, Growth, LatticeSpec, MeshSpec, Split, DEFAULT_BOX_CELLS, MAX_GROWTH,
};
pub use stream::{resolve_bind, StreamSpec};
pub use view::{UpAxis, ViewSpec};

/// The default scene's text (a tissue block with a stiff spherical inclusion), built
/// into the binary so `palpa serve` needs no files.
pub const DEFAULT_SCENE: &str = include_str!("../../../scenes/default.toml");

/// Why a scene could not be read, checked or built; always names the file, and the key
/// or path at fault.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The scene file could not be read (the error names it).
    #[error(transparent)]
    Read(#[from] crate::files::ReadError),
    /// TOML syntax, an unknown key, or a value of the wrong type (the TOML error names
    /// the line, column and key).
    #[error("{file}: {message}")]
    Parse {
        /// The scene file.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A value out of its range, or a combination that does not make sense.
    #[error("{file}: {key}: {message}")]
    Invalid {
        /// The scene file.
        file: String,
        /// Dotted key path, e.g. `materials.inclusion.young`.
        key: String,
        /// What is wrong, with the value found.
        message: String,
    },
    /// The mesh (or render surface) could not be read or built.
    #[error("{file}: {key}: {source}")]
    Mesh {
        /// The scene file.
        file: String,
        /// The key that named the mesh, e.g. `mesh.file`.
        key: String,
        /// The mesh error (names the mesh file and line or element).
        source: crate::mesh::MeshError,
    },
}

/// A scene file, parsed and checked. Every section may be left out (its defaults
/// apply); an empty file is the plain default block with its bottom fixed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scene {
    /// Human-readable name (shown to viewers and in logs).
    pub name: Option<String>,
    /// Where the tetrahedral mesh comes from.
    pub mesh: MeshSpec,
    /// Materials by name; `default` covers elements no other material selects.
    pub materials: BTreeMap<String, Spanned<MaterialSpec>>,
    /// Fixed-node rules (their union is fixed); absent: the bottom (z ≤ min) is fixed;
    /// `fixed = []`: nothing is fixed (a free body).
    pub fixed: Option<Vec<FixSpec>>,
    /// Which tissue backend and its parameters.
    pub backend: BackendSpec,
    /// Probe contact.
    pub contact: ContactSpec,
    /// Loop rates.
    pub rates: Rates,
    /// Force between model updates.
    pub force: ForceSpec,
    /// Safety limits of the haptic loop.
    pub safety: SafetySpec,
    /// Device choice and workspace mapping.
    pub device: DeviceSpec,
    /// Visual stream server.
    pub stream: StreamSpec,
    /// How viewers show the scene.
    pub view: ViewSpec,
    /// Directory relative paths are resolved against (the scene file's directory).
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// Name of the scene source for messages (file path or `embedded default scene`).
    #[serde(skip)]
    pub source: String,
}

impl Scene {
    /// Reads and checks a scene file; relative paths in it are resolved against its
    /// directory.
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        let text = crate::files::read_text(path, crate::files::FileKind::Scene)?;
        let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        Self::parse(&text, &path.display().to_string(), &base)
    }

    /// The default scene built into the binary.
    pub fn embedded_default() -> Self {
        Self::parse(DEFAULT_SCENE, "embedded default scene", Path::new("."))
            .expect("the embedded default scene is valid")
    }

    /// Parses and checks scene text; `source` names it in errors, `base_dir` resolves
    /// relative paths.
    pub fn parse(text: &str, source: &str, base_dir: &Path) -> Result<Self, SceneError> {
        let mut scene: Scene = toml::from_str(text).map_err(|e| SceneError::Parse {
            file: source.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        scene.source = source.to_string();
        scene.base_dir = base_dir.to_path_buf();
        scene.validate()?;
        Ok(scene)
    }

    /// A path from the scene file, resolved against the scene's directory.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.base_dir.join(path)
        }
    }

    /// The error for `key`.
    pub fn invalid(&self, key: impl Into<String>, message: impl Into<String>) -> SceneError {
        SceneError::Invalid {
            file: self.source.clone(),
            key: key.into(),
            message: message.into(),
        }
    }

    /// The resolved fixed-node rules (absent section: the bottom, z ≤ min).
    pub fn fix_rules(&self) -> Vec<FixSpec> {
        self.fixed.clone().unwrap_or_else(|| {
            vec![FixSpec::Below {
                axis: AxisName::Z,
                distance: 0.0,
            }]
        })
    }

    /// Materials in precedence order: (name, spec), `default` first, then region
    /// materials, then geometric ones in file order.
    pub fn materials_in_order(&self) -> Vec<(&str, &MaterialSpec)> {
        let mut v: Vec<(&str, &Spanned<MaterialSpec>)> = self
            .materials
            .iter()
            .map(|(k, m)| (k.as_str(), m))
            .collect();
        v.sort_by_key(|(name, m)| {
            let class = match (*name == "default", m.get_ref().region.is_some()) {
                (true, _) => 0,
                (false, true) => 1,
                (false, false) => 2,
            };
            (class, m.span().start)
        });
        v.into_iter().map(|(k, m)| (k, m.get_ref())).collect()
    }

    /// The highest mode frequency kept (Hz): `backend.modal.max_frequency`, or half
    /// the model rate (the Nyquist limit of the model step).
    pub fn modal_max_frequency(&self) -> f64 {
        self.backend
            .modal
            .max_frequency
            .unwrap_or(self.rates.model / 2.0)
    }

    /// Checks every value's range, section by section; the error names the key and the
    /// value.
    pub fn validate(&self) -> Result<(), SceneError> {
        let c = Check::new(self);
        if let Some(name) = &self.name {
            c.text("name", name, 200)?;
        }
        self.mesh.validate(&c)?;
        materials::validate(&self.materials, &c)?;
        fixed::validate(self.fixed.as_deref().unwrap_or_default(), &c)?;
        self.backend.validate(&c)?;
        self.contact.validate(&c)?;
        self.rates.validate(&c)?;
        self.safety.validate(&c)?;
        self.device.validate(&c)?;
        self.stream.validate(&c)?;
        Ok(())
    }
}
