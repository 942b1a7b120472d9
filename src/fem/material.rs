//! Isotropic linear-elastic materials and their assignment to tetrahedra.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::FemError;
use crate::mesh::TetMesh;
use crate::Vec3;

/// Poisson ratio from which linear tetrahedra lock (shear and bending become far too
/// stiff as the material approaches incompressibility); the commands warn from it on,
/// naming the material (`Material::locks`).
pub const LOCKING_POISSON: f64 = 0.45;

/// An isotropic linear-elastic material.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Material {
    /// Young's modulus E (Pa).
    pub young: f64,
    /// Poisson ratio ν (dimensionless, −1 < ν < 0.5).
    pub poisson: f64,
    /// Density ρ (kg/m³).
    pub density: f64,
}

impl Material {
    /// A validated material; see [`Material::validate`].
    pub fn new(young: f64, poisson: f64, density: f64) -> Result<Self, FemError> {
        let m = Self {
            young,
            poisson,
            density,
        };
        m.validate("material")?;
        Ok(m)
    }

    /// Checks E > 0, −1 < ν < 0.5, ρ > 0 (all finite); `what` names the material in the
    /// error.
    pub fn validate(&self, what: &str) -> Result<(), FemError> {
        let err = |field, value, reason| FemError::Material {
            what: what.to_string(),
            field,
            value,
            reason,
        };
        if !(self.young.is_finite() && self.young > 0.0) {
            return Err(err(
                "young",
                self.young,
                "Young's modulus must be finite and > 0 Pa",
            ));
        }
        if !(self.poisson.is_finite() && self.poisson > -1.0 && self.poisson < 0.5) {
            return Err(err(
                "poisson",
                self.poisson,
                "Poisson ratio must lie in (-1, 0.5)",
            ));
        }
        if !(self.density.is_finite() && self.density > 0.0) {
            return Err(err(
                "density",
                self.density,
                "density must be finite and > 0 kg/m³",
            ));
        }
        Ok(())
    }

    /// Whether linear tetrahedra of this material lock: ν ≥ [`LOCKING_POISSON`].
    pub fn locks(&self) -> bool {
        self.poisson >= LOCKING_POISSON
    }

    /// Lamé parameters (λ, μ) in Pa.
    pub fn lame(&self) -> (f64, f64) {
        let (e, nu) = (self.young, self.poisson);
        let lambda = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
        let mu = e / (2.0 * (1.0 + nu));
        (lambda, mu)
    }

    /// Bulk modulus κ = λ + 2μ/3 = E / (3(1 − 2ν)) (Pa).
    pub fn bulk_modulus(&self) -> f64 {
        self.young / (3.0 * (1.0 - 2.0 * self.poisson))
    }
}

/// A geometric region for material overrides (e.g. a stiff inclusion); a tetrahedron
/// belongs to it when its centroid does.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Shape {
    /// Ball with centre and radius (m).
    Sphere {
        /// Centre (m).
        center: Vec3,
        /// Radius (m).
        radius: f64,
    },
    /// Axis-aligned box between two corners (m).
    Box {
        /// Lower corner (m).
        min: Vec3,
        /// Upper corner (m).
        max: Vec3,
    },
}

impl Shape {
    /// Whether point `p` lies inside (boundary included).
    pub fn contains(&self, p: &Vec3) -> bool {
        match self {
            Shape::Sphere { center, radius } => (p - center).norm() <= *radius,
            Shape::Box { min, max } => (0..3).all(|i| p[i] >= min[i] && p[i] <= max[i]),
        }
    }
}

/// Which entry of a [`MaterialMap`] a tetrahedron's material comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaterialSource {
    /// The default material.
    Default,
    /// The material of this region id.
    Region(i32),
    /// The override at this index of [`MaterialMap::overrides`].
    Override(usize),
}

/// Which material each tetrahedron gets: a default, per-region materials (region ids
/// from the mesh file's physical groups), then geometric overrides, later ones winning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaterialMap {
    /// Material of tetrahedra not matched by a region or override.
    pub default: Material,
    /// Material per region id.
    pub regions: BTreeMap<i32, Material>,
    /// Geometric overrides, applied in order after the regions.
    pub overrides: Vec<(Shape, Material)>,
}

impl MaterialMap {
    /// Every tetrahedron gets `m`.
    pub fn uniform(m: Material) -> Self {
        Self {
            default: m,
            regions: BTreeMap::new(),
            overrides: Vec::new(),
        }
    }

    /// Tetrahedra of region `id` get `m`.
    pub fn with_region(mut self, id: i32, m: Material) -> Self {
        self.regions.insert(id, m);
        self
    }

    /// Tetrahedra whose centroid lies in `shape` get `m` (overrides regions).
    pub fn with_override(mut self, shape: Shape, m: Material) -> Self {
        self.overrides.push((shape, m));
        self
    }

    /// Validates every material and resolves one per tetrahedron of `mesh`.
    pub fn per_tet(&self, mesh: &TetMesh) -> Result<Vec<Material>, FemError> {
        self.default.validate("default material")?;
        for (id, m) in &self.regions {
            m.validate(&format!("material of region {id}"))?;
        }
        for (i, (_, m)) in self.overrides.iter().enumerate() {
            m.validate(&format!("override {i} material"))?;
        }
        Ok(self
            .sources(mesh)
            .into_iter()
            .map(|source| match source {
                MaterialSource::Default => self.default,
                MaterialSource::Region(id) => self.regions[&id],
                MaterialSource::Override(i) => self.overrides[i].1,
            })
            .collect())
    }

    /// Which entry of the map gives each tetrahedron of `mesh` its material (the last
    /// override containing its centroid, else its region's, else the default), so that
    /// callers holding more per entry (e.g. a strain-energy law) resolve it alike.
    pub fn sources(&self, mesh: &TetMesh) -> Vec<MaterialSource> {
        mesh.tets
            .iter()
            .zip(&mesh.regions)
            .map(|(tet, region)| {
                let centroid = tet.iter().map(|&n| mesh.nodes[n]).sum::<Vec3>() / 4.0;
                self.overrides
                    .iter()
                    .rposition(|(shape, _)| shape.contains(&centroid))
                    .map(MaterialSource::Override)
                    .or_else(|| {
                        self.regions
                            .contains_key(region)
                            .then_some(MaterialSource::Region(*region))
                    })
                    .unwrap_or(MaterialSource::Default)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn materials_lock_from_the_locking_poisson_ratio() {
        assert!(Material::new(1.0, LOCKING_POISSON, 1.0).unwrap().locks());
        assert!(!Material::new(1.0, 0.3, 1.0).unwrap().locks());
    }

    #[test]
    fn lame_parameters_match_definitions() {
        let m = Material::new(1000.0, 0.25, 1.0).unwrap();
        let (l, mu) = m.lame();
        assert!((mu - 400.0).abs() < 1e-12);
        assert!((l - 400.0).abs() < 1e-12);
    }

    #[test]
    fn bad_materials_are_named() {
        for (e, nu, rho, field) in [
            (0.0, 0.3, 1.0, "young"),
            (f64::NAN, 0.3, 1.0, "young"),
            (1.0, 0.5, 1.0, "poisson"),
            (1.0, -1.0, 1.0, "poisson"),
            (1.0, 0.3, -2.0, "density"),
        ] {
            let err = Material::new(e, nu, rho).unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        }
    }

    #[test]
    fn overrides_beat_regions_beat_default() {
        let mesh = crate::mesh::generate::box_mesh(Vec3::new(2.0, 1.0, 1.0), [2, 1, 1]).unwrap();
        let mut mesh = mesh;
        for (e, r) in mesh.regions.iter_mut().enumerate() {
            *r = if e < 6 { 1 } else { 2 };
        }
        let soft = Material::new(1.0, 0.3, 1.0).unwrap();
        let hard = Material::new(10.0, 0.3, 1.0).unwrap();
        let lump = Material::new(100.0, 0.3, 1.0).unwrap();
        let map = MaterialMap::uniform(soft)
            .with_region(2, hard)
            .with_override(
                Shape::Sphere {
                    center: Vec3::new(0.5, 0.5, 0.5),
                    radius: 0.4,
                },
                lump,
            );
        let per = map.per_tet(&mesh).unwrap();
        assert!(per[6..].iter().all(|m| *m == hard));
        // Cell 0's tets have centroids within 0.36 of the cell centre.
        assert!(per[..6].iter().all(|m| *m == lump));
        let bad = MaterialMap::uniform(soft).with_region(
            3,
            Material {
                young: -1.0,
                ..soft
            },
        );
        assert!(bad
            .per_tet(&mesh)
            .unwrap_err()
            .to_string()
            .contains("material of region 3"));
    }
}
