//! The regions of the scene's materials (viewers draw them in the x-ray view): which
//! tetrahedra each non-default material covers.

use crate::fem::Shape;
use crate::scene::{Scene, SceneError};
use crate::Vec3;

use super::fem::region_id;
use super::mesh::SceneMesh;

/// A non-default material and the tetrahedra it covers.
#[derive(Clone, Debug)]
pub struct MaterialRegion {
    /// The material's name in the scene.
    pub name: String,
    /// Its Young's modulus (Pa).
    pub young: f64,
    /// The tetrahedra it covers.
    pub tets: Vec<usize>,
}

/// One region per material of `scene` other than the default one that covers at least
/// one tetrahedron of `mesh`. The material of a tetrahedron follows
/// the precedence of [`crate::fem::MaterialMap::per_tet`] (geometric materials in
/// file order, later winning, then region materials, then the default); that map
/// holds materials, not names, so the names are resolved here by the same rules.
pub fn material_regions(
    scene: &Scene,
    mesh: &SceneMesh,
) -> Result<Vec<MaterialRegion>, SceneError> {
    let mesh = &mesh.mesh;
    let materials = scene.materials_in_order();
    let mut by_region = Vec::new();
    let mut by_shape = Vec::new();
    for (i, (name, spec)) in materials.iter().enumerate() {
        if let Some(r) = &spec.region {
            let key = format!("materials.{name}.region");
            by_region.push((region_id(scene, mesh, r, &key)?, i));
        } else if let Some(s) = &spec.sphere {
            let shape = Shape::Sphere {
                center: Vec3::from(s.center),
                radius: s.radius,
            };
            by_shape.push((shape, i));
        } else if let Some(b) = &spec.box_ {
            let shape = Shape::Box {
                min: Vec3::from(b.min),
                max: Vec3::from(b.max),
            };
            by_shape.push((shape, i));
        }
    }
    let mut tets_of: Vec<Vec<usize>> = vec![Vec::new(); materials.len()];
    for (t, (tet, region)) in mesh.tets.iter().zip(&mesh.regions).enumerate() {
        let centroid = tet.iter().map(|&n| mesh.nodes[n]).sum::<Vec3>() / 4.0;
        let material = by_shape
            .iter()
            .rev()
            .find(|(shape, _)| shape.contains(&centroid))
            .map(|(_, i)| *i)
            .or_else(|| {
                by_region
                    .iter()
                    .find(|(id, _)| id == region)
                    .map(|(_, i)| *i)
            });
        if let Some(i) = material {
            tets_of[i].push(t);
        }
    }
    Ok(materials
        .iter()
        .zip(&tets_of)
        .filter(|(_, tets)| !tets.is_empty())
        .map(|((name, spec), tets)| MaterialRegion {
            name: name.to_string(),
            young: spec.young,
            tets: tets.clone(),
        })
        .collect())
}
