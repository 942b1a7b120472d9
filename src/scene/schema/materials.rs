//! `[materials.NAME]`: isotropic materials (small-strain moduli and a strain-energy law)
//! and which elements get each.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::check::{Check, MAX_COORDINATE};
use super::SceneError;

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

/// Which strain-energy law a material follows at large strain (`model = "..."`); E and
/// ν are its small-strain moduli in every law (docs/math.md §12).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MaterialModel {
    /// Linear elasticity (small strain).
    #[default]
    Linear,
    /// Compressible neo-Hookean.
    NeoHookean,
    /// Veronda–Westmann exponential stiffening; needs `stiffening`.
    VerondaWestmann,
}

/// Largest Veronda–Westmann stiffening exponent γ a scene may give: at γ = 30 the
/// stiffness already grows e³ ≈ 20× by Ī₁ − 3 = 0.1 (about 18 % uniaxial stretch).
pub const MAX_STIFFENING: f64 = 30.0;

/// An isotropic material and which elements get it: at most one of
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
    /// Strain-energy law at large strain.
    #[serde(default)]
    pub model: MaterialModel,
    /// Veronda–Westmann stiffening exponent γ (dimensionless, in [0, [`MAX_STIFFENING`]]);
    /// required by that model and refused by the others.
    pub stiffening: Option<f64>,
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

/// Stiffest material a scene may give (Pa): steel is 2·10¹¹, diamond 1.2·10¹².
pub const MAX_YOUNG: f64 = 1e12;

/// Densest material a scene may give (kg/m³): osmium is 2.2·10⁴.
pub const MAX_DENSITY: f64 = 1e5;

/// The material elements get when the scene names none: E 30 kPa, ν 0.45, ρ 1000.
pub const DEFAULT_MATERIAL: (f64, f64, f64) = (30e3, 0.45, 1000.0);

/// Checks every material's moduli, density, law and selector.
pub(super) fn validate(
    materials: &BTreeMap<String, Spanned<MaterialSpec>>,
    c: &Check,
) -> Result<(), SceneError> {
    for (name, spec) in materials {
        // Material names reach viewers (the x-ray regions): printable only.
        c.text(&format!("materials.{}", name.escape_debug()), name, 64)?;
        let spec = spec.get_ref();
        let key = |field: &str| format!("materials.{name}.{field}");
        c.positive_at_most(&key("young"), spec.young, MAX_YOUNG)?;
        if !(spec.poisson.is_finite() && spec.poisson > -1.0 && spec.poisson < 0.5) {
            return Err(c.invalid(
                key("poisson"),
                format!("must lie in (-1, 0.5), got {}", spec.poisson),
            ));
        }
        c.positive_at_most(&key("density"), spec.density, MAX_DENSITY)?;
        match (spec.model, spec.stiffening) {
            (MaterialModel::VerondaWestmann, Some(g)) => {
                c.non_negative_at_most(&key("stiffening"), g, MAX_STIFFENING)?
            }
            (MaterialModel::VerondaWestmann, None) => {
                return Err(c.invalid(
                    key("stiffening"),
                    "model = \"veronda-westmann\" needs its stiffening exponent γ \
                     (dimensionless, e.g. 5; 0 is neo-Hookean)",
                ))
            }
            (_, Some(_)) => {
                return Err(c.invalid(
                    key("stiffening"),
                    "only model = \"veronda-westmann\" takes a stiffening exponent",
                ))
            }
            (_, None) => {}
        }
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
                return Err(c.invalid(
                    format!("materials.{name}"),
                    "the default material covers all other elements; it takes no \
                     `region`, `sphere` or `box`",
                ))
            }
            (false, 0) => {
                return Err(c.invalid(
                    format!("materials.{name}"),
                    "needs one of `region`, `sphere` or `box` (or name it `default`)",
                ))
            }
            (false, _) => {
                return Err(c.invalid(
                    format!("materials.{name}"),
                    "give only one of `region`, `sphere` and `box`",
                ))
            }
        }
        if let Some(s) = &spec.sphere {
            c.bounded3(&key("sphere.center"), &s.center, MAX_COORDINATE)?;
            c.positive_at_most(&key("sphere.radius"), s.radius, MAX_COORDINATE)?;
        }
        if let Some(b) = &spec.box_ {
            c.ordered(&key("box"), &b.min, &b.max)?;
        }
    }
    Ok(())
}
