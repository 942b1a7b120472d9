//! Scenes: what a scene file says — mesh, materials, fixed nodes, backend, contact,
//! rates, force strategy, safety limits, device and stream — read from TOML, checked,
//! and turned into the parts the server runs (`docs/scenes.md` documents every key).
//!
//! Data flow: [`Scene::load`] (or [`Scene::embedded_default`]) parses the file with
//! unknown keys rejected and checks every value's range, naming the key;
//! [`build::build_mesh`] loads or generates the mesh and resolves materials and fixed
//! nodes per element and node; [`WorkspaceSpec::mapping`] maps the device into the scene.
//! Lengths are in m, moduli in Pa, densities in kg/m³, rates in Hz, times in s.

pub mod build;
pub mod model;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::device::choice::DeviceChoice;
use crate::device::mapped::Workspace;
use crate::haptic::ForceStrategy;
use crate::Vec3;

/// The default scene's text (a tissue block with a stiff spherical inclusion), built
/// into the binary so `palpa serve` needs no files.
pub const DEFAULT_SCENE: &str = include_str!("../../scenes/default.toml");

/// Why a scene could not be read, checked or built; always names the file, and the key
/// or path at fault.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The scene file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The scene file.
        file: String,
        /// Underlying error.
        source: std::io::Error,
    },
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
    /// Directory relative paths are resolved against (the scene file's directory).
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// Name of the scene source for messages (file path or `embedded default scene`).
    #[serde(skip)]
    pub source: String,
}

/// Where the mesh comes from: exactly one of `file`, `box`, `lattice` (none: the
/// default box).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeshSpec {
    /// Tetrahedral mesh file (.msh, .node/.ele, .vtk), relative to the scene file.
    pub file: Option<PathBuf>,
    /// Generated box.
    #[serde(rename = "box")]
    pub box_: Option<BoxSpec>,
    /// Lattice fill of a closed surface.
    pub lattice: Option<LatticeSpec>,
    /// Factor applied to the file's (or surface's) coordinates, e.g. 0.01 for cm.
    pub scale: f64,
    /// Optional detailed render surface (.obj/.stl, same units as the mesh before
    /// `scale`), embedded in the tetrahedral mesh and moved with it.
    pub render_surface: Option<PathBuf>,
}

impl Default for MeshSpec {
    fn default() -> Self {
        Self {
            file: None,
            box_: None,
            lattice: None,
            scale: 1.0,
            render_surface: None,
        }
    }
}

/// How a lattice cube is split into tetrahedra.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// Six congruent tetrahedra around the main diagonal.
    #[default]
    Six,
    /// Five tetrahedra, orientation alternating between neighbours.
    Five,
}

impl From<Split> for crate::mesh::generate::CubeSplit {
    fn from(s: Split) -> Self {
        match s {
            Split::Six => Self::Six,
            Split::Five => Self::Five,
        }
    }
}

/// A generated box of hexahedral cells split into tetrahedra.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BoxSpec {
    /// Lowest corner (m, before `mesh.scale`).
    pub origin: [f64; 3],
    /// Edge lengths (m, before `mesh.scale`).
    pub size: [f64; 3],
    /// Cells along x, y, z.
    pub cells: [usize; 3],
    /// Cell split.
    pub split: Split,
}

impl Default for BoxSpec {
    /// The default block: x, y ∈ [−5, 5] cm, z ∈ [−4, 0] cm, 5 mm cells.
    fn default() -> Self {
        Self {
            origin: [-0.05, -0.05, -0.04],
            size: [0.10, 0.10, 0.04],
            cells: [20, 20, 8],
            split: Split::Six,
        }
    }
}

/// A closed triangle surface filled with a lattice of tetrahedra.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatticeSpec {
    /// Closed surface (.obj/.stl), relative to the scene file.
    pub surface: PathBuf,
    /// Lattice cube edge (m, after `mesh.scale`).
    pub cell_size: f64,
    /// Move boundary nodes onto the surface.
    #[serde(default = "yes")]
    pub snap: bool,
    /// Cell split.
    #[serde(default)]
    pub split: Split,
}

fn yes() -> bool {
    true
}

/// A region of the mesh: its id (physical group number) or its physical name.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum RegionRef {
    /// Region id.
    Id(i32),
    /// Physical name from the mesh file.
    Name(String),
}

impl std::fmt::Display for RegionRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegionRef::Id(id) => write!(f, "{id}"),
            RegionRef::Name(n) => write!(f, "{n:?}"),
        }
    }
}

/// A ball (m).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SphereSpec {
    /// Centre (m, scene frame, after `mesh.scale`).
    pub center: [f64; 3],
    /// Radius (m).
    pub radius: f64,
}

/// An axis-aligned box (m).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AabbSpec {
    /// Lower corner (m, scene frame, after `mesh.scale`).
    pub min: [f64; 3],
    /// Upper corner (m).
    pub max: [f64; 3],
}

/// An isotropic linear-elastic material and which elements get it: at most one of
/// `region`, `sphere`, `box` (none: only allowed for the material named `default`).
/// Elements get, in order of precedence: the last geometric (sphere/box) material in
/// the file containing their centroid, else their region's material, else `default`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialSpec {
    /// Young's modulus E (Pa), > 0.
    pub young: f64,
    /// Poisson ratio ν, in (−1, 0.5).
    #[serde(default = "default_poisson")]
    pub poisson: f64,
    /// Density ρ (kg/m³), > 0.
    #[serde(default = "default_density")]
    pub density: f64,
    /// Elements of this region.
    pub region: Option<RegionRef>,
    /// Elements whose centroid is in this ball.
    pub sphere: Option<SphereSpec>,
    /// Elements whose centroid is in this box.
    #[serde(rename = "box")]
    pub box_: Option<AabbSpec>,
}

fn default_poisson() -> f64 {
    0.45
}

fn default_density() -> f64 {
    1000.0
}

/// The material elements get when the scene names none: E 30 kPa, ν 0.45, ρ 1000.
pub const DEFAULT_MATERIAL: (f64, f64, f64) = (30e3, 0.45, 1000.0);

/// A coordinate axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AxisName {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl AxisName {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One fixed-node rule; a `[[fixed]]` table has exactly one of these keys.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FixSpec {
    /// Nodes with coordinate `axis` ≤ mesh minimum + `distance` (m).
    Below {
        /// Axis tested.
        axis: AxisName,
        /// Distance above the lowest node (m), ≥ 0.
        #[serde(default)]
        distance: f64,
    },
    /// Nodes inside an axis-aligned box (m).
    Box {
        /// Lower corner (m).
        min: [f64; 3],
        /// Upper corner (m).
        max: [f64; 3],
    },
    /// Every node of the region's elements.
    Region(RegionRef),
    /// Node indices (0-based, file order).
    Nodes(Vec<usize>),
}

/// Which tissue backend runs the model thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// Modal dynamics with residual flexibility (DESIGN §2.2).
    #[default]
    Modal,
    /// Condensed static FEM (DESIGN §2.3).
    Condensed,
}

/// Backend choice and both backends' parameters (only the chosen one is used).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendSpec {
    /// Which backend.
    pub kind: BackendKind,
    /// Modal parameters.
    pub modal: ModalSpec,
    /// Condensed parameters.
    pub condensed: CondensedSpec,
}

/// Modal backend parameters (mode count, selection cut-offs, Rayleigh damping).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModalSpec {
    /// Modes computed before selection (k), ≥ 1.
    pub modes: usize,
    /// Highest mode frequency kept (Hz); absent: half the model rate.
    pub max_frequency: Option<f64>,
    /// Largest force expected at one point (N), for dropping unobservable modes.
    pub max_force: f64,
    /// Smallest displacement that matters (m).
    pub min_displacement: f64,
    /// Rayleigh stiffness damping α₁ (s), ≥ 0.
    pub alpha1: f64,
    /// Rayleigh mass damping α₂ (1/s), ≥ 0.
    pub alpha2: f64,
    /// Add residual flexibility at the contact (static stiffness of full FEM).
    pub residual: bool,
}

impl Default for ModalSpec {
    fn default() -> Self {
        Self {
            modes: 40,
            max_frequency: None,
            max_force: 10.0,
            min_displacement: 1e-5,
            alpha1: 2e-3,
            alpha2: 2.0,
            residual: true,
        }
    }
}

/// Condensed backend parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CondensedSpec {
    /// K⁻¹ columns (per node) kept in the cache, ≥ 1.
    pub cache_size: usize,
    /// Surfaces with at most this many nodes get every column computed at start.
    pub precompute_cap: usize,
}

impl Default for CondensedSpec {
    fn default() -> Self {
        Self {
            cache_size: 4096,
            precompute_cap: 4096,
        }
    }
}

/// Probe contact.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContactSpec {
    /// Probe tip radius (m), ≥ 0; 0 is a point probe.
    pub probe_radius: f64,
    /// Radius (m) of the contact patch the probe's force is spread over, ≥ 0; 0 is the
    /// barycentric point of the touched triangle. Absent: the larger of the probe
    /// radius and twice the mean surface edge length, so the force does not ripple
    /// with the mesh as the probe slides.
    pub patch_radius: Option<f64>,
    /// Static Coulomb friction coefficient μ_s, ≥ 0; 0 is frictionless.
    pub friction: f64,
    /// Kinetic friction coefficient μ_k, 0 ≤ μ_k ≤ μ_s. Absent: μ_s.
    pub friction_kinetic: Option<f64>,
}

impl ContactSpec {
    /// The friction coefficients (μ_s, μ_k).
    pub fn friction(&self) -> Result<crate::contact::Friction, String> {
        crate::contact::Friction::new(
            self.friction,
            self.friction_kinetic.unwrap_or(self.friction),
        )
    }
}

/// Loop rates (Hz).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rates {
    /// Haptic loop rate (Hz).
    pub haptic: f64,
    /// Model step rate (Hz); must divide the haptic rate.
    pub model: f64,
    /// Visual frame rate (Hz).
    pub visual: f64,
}

impl Default for Rates {
    fn default() -> Self {
        Self {
            haptic: 1000.0,
            model: 200.0,
            visual: 30.0,
        }
    }
}

impl Rates {
    /// Haptic ticks per model step (the checked ratio of the two rates).
    pub fn ticks_per_model_step(&self) -> u32 {
        (self.haptic / self.model).round() as u32
    }
}

/// Force between model updates.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForceSpec {
    /// `hold`, `linear-time` or `local-stiffness`.
    pub strategy: ForceStrategy,
}

impl Default for ForceSpec {
    fn default() -> Self {
        Self {
            strategy: ForceStrategy::LocalStiffness,
        }
    }
}

/// Safety limits; absent values come from the device's rating and
/// [`SafetyLimits::for_device`](crate::haptic::SafetyLimits::for_device).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SafetySpec {
    /// Largest force magnitude (N); never above the device's rating.
    pub max_force: Option<f64>,
    /// Largest force change per second (N/s).
    pub max_force_rate: Option<f64>,
    /// Force ramp-in time at start and after a fault (s).
    pub ramp_time: Option<f64>,
    /// Cap on the extrapolation stiffness (N/m); never above the device's rating.
    pub max_stiffness: Option<f64>,
    /// A device sample older than this fades the force (s).
    pub stale_sample_timeout: Option<f64>,
    /// A local force model older than this fades the force (s).
    pub model_timeout: Option<f64>,
    /// Fade time on a soft fault (s).
    pub fade_time: Option<f64>,
    /// Passivity controller's largest added damping (N·s/m); absent: off.
    pub passivity_max_damping: Option<f64>,
}

impl SafetySpec {
    /// The limits for a device with `rating`: the scene's values where given (force and
    /// stiffness never above the rating), the device defaults elsewhere.
    pub fn limits(&self, rating: crate::device::DeviceRating) -> crate::haptic::SafetyLimits {
        let d = crate::haptic::SafetyLimits::for_device(rating);
        crate::haptic::SafetyLimits {
            max_force: self.max_force.map_or(d.max_force, |f| f.min(d.max_force)),
            max_force_rate: self.max_force_rate.unwrap_or(d.max_force_rate),
            ramp_time: self.ramp_time.unwrap_or(d.ramp_time),
            max_stiffness: self
                .max_stiffness
                .map_or(d.max_stiffness, |k| k.min(d.max_stiffness)),
            stale_sample_timeout: self.stale_sample_timeout.unwrap_or(d.stale_sample_timeout),
            model_timeout: self.model_timeout.unwrap_or(d.model_timeout),
            fade_time: self.fade_time.unwrap_or(d.fade_time),
            passivity_max_damping: self.passivity_max_damping.or(d.passivity_max_damping),
        }
    }
}

/// Which device drives the probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    /// A connected HID device a profile matches, else the viewer-driven virtual stylus.
    #[default]
    Auto,
    /// A HID device (the profile's, or the reference profile).
    Hid,
    /// The virtual stylus, moved by a viewer's control messages.
    Sim,
    /// A recorded trajectory (`device.trajectory`).
    Replay,
}

/// Device choice and workspace mapping.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeviceSpec {
    /// Which device.
    pub kind: DeviceKind,
    /// HID device profile (TOML), relative to the scene file; absent: shipped profiles.
    pub profile: Option<PathBuf>,
    /// Trajectory CSV for `kind = "replay"`, relative to the scene file.
    pub trajectory: Option<PathBuf>,
    /// Device frame → scene frame.
    pub workspace: WorkspaceSpec,
}

/// Device frame → scene frame: p_scene = R · (scale · p_device) + offset, with
/// R = Rz(rz) · Ry(ry) · Rx(rx); forces go back as f_device = Rᵀ f_scene.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspaceSpec {
    /// Motion scale (scene metres per device metre), > 0.
    pub scale: f64,
    /// Scene position of the device origin (m).
    pub offset: [f64; 3],
    /// Rotation angles about x, y, z (degrees), applied in that order.
    pub rotation_deg: [f64; 3],
}

impl WorkspaceSpec {
    /// The mapping this section describes.
    pub fn mapping(&self) -> Workspace {
        Workspace::new(self.scale, Vec3::from(self.offset), self.rotation_deg)
    }
}

impl Default for WorkspaceSpec {
    fn default() -> Self {
        Self {
            scale: 1.0,
            offset: [0.0; 3],
            rotation_deg: [0.0; 3],
        }
    }
}

/// Visual stream server.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamSpec {
    /// Address and port to listen on (port 0: any free port).
    pub bind: String,
    /// Control token for viewers that move the probe; absent: a random one per start.
    pub token: Option<String>,
    /// Most simultaneous clients, ≥ 1.
    pub max_clients: usize,
}

impl Default for StreamSpec {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:7878".into(),
            token: None,
            max_clients: 64,
        }
    }
}

impl StreamSpec {
    /// The bind address (checked by [`Scene::validate`]).
    pub fn bind_addr(&self) -> SocketAddr {
        self.bind.parse().expect("validated bind address")
    }
}

impl Scene {
    /// The device the `[device]` section asks for (paths resolved against the scene
    /// file).
    pub fn device_choice(&self) -> DeviceChoice {
        let d = &self.device;
        let path = |p: &Option<PathBuf>| p.as_deref().map(|p| self.resolve(p));
        match d.kind {
            DeviceKind::Auto => DeviceChoice::Auto,
            DeviceKind::Sim => DeviceChoice::Sim(None),
            DeviceKind::Hid => DeviceChoice::Hid(path(&d.profile)),
            DeviceKind::Replay => DeviceChoice::Replay(
                path(&d.trajectory).expect("validated: a replay device names its trajectory"),
            ),
        }
    }

    /// Reads and checks a scene file; relative paths in it are resolved against its
    /// directory.
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
            file: path.display().to_string(),
            source,
        })?;
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

    /// Checks every value's range; the error names the key and the value.
    pub fn validate(&self) -> Result<(), SceneError> {
        let positive = |key: &str, v: f64| -> Result<(), SceneError> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(self.invalid(key, format!("must be > 0, got {v}")))
            }
        };
        let non_negative = |key: &str, v: f64| -> Result<(), SceneError> {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(self.invalid(key, format!("must be >= 0, got {v}")))
            }
        };
        let finite3 = |key: &str, v: &[f64; 3]| -> Result<(), SceneError> {
            if v.iter().all(|c| c.is_finite()) {
                Ok(())
            } else {
                Err(self.invalid(key, format!("must be finite, got {v:?}")))
            }
        };
        let file_exists = |key: &str, p: &Path| -> Result<(), SceneError> {
            let full = self.resolve(p);
            if full.is_file() {
                Ok(())
            } else {
                Err(self.invalid(key, format!("no such file: {}", full.display())))
            }
        };
        let ordered = |key: &str, min: &[f64; 3], max: &[f64; 3]| -> Result<(), SceneError> {
            finite3(&format!("{key}.min"), min)?;
            finite3(&format!("{key}.max"), max)?;
            if (0..3).all(|i| min[i] <= max[i]) {
                Ok(())
            } else {
                Err(self.invalid(
                    key,
                    format!("min must not exceed max, got min {min:?} and max {max:?}"),
                ))
            }
        };

        let m = &self.mesh;
        let sources = [m.file.is_some(), m.box_.is_some(), m.lattice.is_some()];
        if sources.iter().filter(|&&s| s).count() > 1 {
            return Err(self.invalid(
                "mesh",
                "give exactly one of `file`, `box` and `lattice`".to_string(),
            ));
        }
        positive("mesh.scale", m.scale)?;
        if let Some(f) = &m.file {
            file_exists("mesh.file", f)?;
        }
        if let Some(b) = &m.box_ {
            finite3("mesh.box.origin", &b.origin)?;
            for i in 0..3 {
                positive(&format!("mesh.box.size[{i}]"), b.size[i])?;
                if b.cells[i] == 0 {
                    return Err(self.invalid(format!("mesh.box.cells[{i}]"), "must be >= 1, got 0"));
                }
            }
        }
        if let Some(l) = &m.lattice {
            file_exists("mesh.lattice.surface", &l.surface)?;
            positive("mesh.lattice.cell_size", l.cell_size)?;
        }
        if let Some(r) = &m.render_surface {
            file_exists("mesh.render_surface", r)?;
        }

        for (name, spec) in &self.materials {
            let spec = spec.get_ref();
            let key = |field: &str| format!("materials.{name}.{field}");
            positive(&key("young"), spec.young)?;
            if !(spec.poisson.is_finite() && spec.poisson > -1.0 && spec.poisson < 0.5) {
                return Err(self.invalid(
                    key("poisson"),
                    format!("must lie in (-1, 0.5), got {}", spec.poisson),
                ));
            }
            positive(&key("density"), spec.density)?;
            let selectors = [
                spec.region.is_some(),
                spec.sphere.is_some(),
                spec.box_.is_some(),
            ]
            .iter()
            .filter(|&&s| s)
            .count();
            match (name == "default", selectors) {
                (true, 0) | (false, 1) => {}
                (true, _) => {
                    return Err(self.invalid(
                        format!("materials.{name}"),
                        "the default material covers all other elements; it takes no \
                         `region`, `sphere` or `box`",
                    ))
                }
                (false, 0) => {
                    return Err(self.invalid(
                        format!("materials.{name}"),
                        "needs one of `region`, `sphere` or `box` (or name it `default`)",
                    ))
                }
                (false, _) => {
                    return Err(self.invalid(
                        format!("materials.{name}"),
                        "give only one of `region`, `sphere` and `box`",
                    ))
                }
            }
            if let Some(s) = &spec.sphere {
                finite3(&key("sphere.center"), &s.center)?;
                positive(&key("sphere.radius"), s.radius)?;
            }
            if let Some(b) = &spec.box_ {
                ordered(&key("box"), &b.min, &b.max)?;
            }
        }

        for (i, rule) in self.fixed.iter().flatten().enumerate() {
            match rule {
                FixSpec::Below { distance, .. } => {
                    non_negative(&format!("fixed[{i}].below.distance"), *distance)?
                }
                FixSpec::Box { min, max } => ordered(&format!("fixed[{i}].box"), min, max)?,
                FixSpec::Region(_) | FixSpec::Nodes(_) => {}
            }
        }

        let b = &self.backend;
        if b.modal.modes == 0 {
            return Err(self.invalid("backend.modal.modes", "must be >= 1, got 0"));
        }
        if let Some(f) = b.modal.max_frequency {
            positive("backend.modal.max_frequency", f)?;
        }
        positive("backend.modal.max_force", b.modal.max_force)?;
        positive("backend.modal.min_displacement", b.modal.min_displacement)?;
        non_negative("backend.modal.alpha1", b.modal.alpha1)?;
        non_negative("backend.modal.alpha2", b.modal.alpha2)?;
        if b.condensed.cache_size == 0 {
            return Err(self.invalid("backend.condensed.cache_size", "must be >= 1, got 0"));
        }

        non_negative("contact.probe_radius", self.contact.probe_radius)?;
        if let Some(r) = self.contact.patch_radius {
            non_negative("contact.patch_radius", r)?;
        }
        non_negative("contact.friction", self.contact.friction)?;
        if let Some(mu_k) = self.contact.friction_kinetic {
            non_negative("contact.friction_kinetic", mu_k)?;
        }
        if let Err(e) = self.contact.friction() {
            return Err(self.invalid("contact.friction_kinetic", e));
        }

        let r = &self.rates;
        positive("rates.haptic", r.haptic)?;
        positive("rates.model", r.model)?;
        positive("rates.visual", r.visual)?;
        let ratio = r.haptic / r.model;
        if ratio < 1.0 || (ratio - ratio.round()).abs() > 1e-9 * ratio {
            return Err(self.invalid(
                "rates.model",
                format!(
                    "must divide the haptic rate {} Hz a whole number of times, got {} Hz",
                    r.haptic, r.model
                ),
            ));
        }

        let s = &self.safety;
        for (key, v) in [
            ("safety.max_force", s.max_force),
            ("safety.max_force_rate", s.max_force_rate),
            ("safety.max_stiffness", s.max_stiffness),
            ("safety.stale_sample_timeout", s.stale_sample_timeout),
            ("safety.model_timeout", s.model_timeout),
            ("safety.fade_time", s.fade_time),
            ("safety.passivity_max_damping", s.passivity_max_damping),
        ] {
            if let Some(v) = v {
                positive(key, v)?;
            }
        }
        if let Some(v) = s.ramp_time {
            non_negative("safety.ramp_time", v)?;
        }

        let d = &self.device;
        if let Some(p) = &d.profile {
            file_exists("device.profile", p)?;
        }
        match (&d.trajectory, d.kind) {
            (Some(t), _) => file_exists("device.trajectory", t)?,
            (None, DeviceKind::Replay) => {
                return Err(self.invalid(
                    "device.trajectory",
                    "kind = \"replay\" needs a trajectory file",
                ))
            }
            (None, _) => {}
        }
        positive("device.workspace.scale", d.workspace.scale)?;
        finite3("device.workspace.offset", &d.workspace.offset)?;
        finite3("device.workspace.rotation_deg", &d.workspace.rotation_deg)?;

        if let Err(e) = self.stream.bind.parse::<SocketAddr>() {
            return Err(self.invalid(
                "stream.bind",
                format!("expected ADDRESS:PORT, got {:?} ({e})", self.stream.bind),
            ));
        }
        if self.stream.max_clients == 0 {
            return Err(self.invalid("stream.max_clients", "must be >= 1, got 0"));
        }
        if self.stream.token.as_deref() == Some("") {
            return Err(self.invalid("stream.token", "must not be empty"));
        }
        Ok(())
    }
}
