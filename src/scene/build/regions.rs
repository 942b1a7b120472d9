//! The regions of the scene's materials as viewers draw them (the x-ray view): which
//! tetrahedra each non-default material covers, and their boundary at rest.

use crate::fem::Shape;
use crate::scene::{Scene, SceneError};
use crate::stream::StreamRegion;
use crate::Vec3;

use super::fem::region_id;
use super::BuiltScene;

impl BuiltScene {
    /// One region per material other than the default one that covers at least one
    /// tetrahedron, with its boundary at rest (m). The material of a tetrahedron follows
    /// the precedence of [`crate::fem::MaterialMap::per_tet`] (geometric materials in
    /// file order, later winning, then region materials, then the default); that map
    /// holds materials, not names, so the names are resolved here by the same rules.
    pub fn material_regions(&self) -> Result<Vec<StreamRegion>, SceneError> {
        let scene: &Scene = &self.scene;
        let mesh = &self.mesh.mesh;
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
            .map(|((name, spec), tets)| StreamRegion::of_tetrahedra(name, spec.young, mesh, tets))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::scene::{build, Scene};

    #[test]
    fn the_default_scene_has_one_region_the_inclusion_sphere() {
        let cache = tempfile::tempdir().unwrap();
        let mut scene = Scene::embedded_default();
        scene.backend.kind = crate::scene::BackendKind::Condensed;
        let built = build(scene, cache.path(), &mut |_| {}).unwrap();
        let regions = built.material_regions().unwrap();
        assert_eq!(
            regions.len(),
            1,
            "only the inclusion differs from the default"
        );
        let lump = &regions[0];
        assert_eq!(lump.name, "inclusion");
        assert_eq!(lump.young, 240e3);
        // The lump's boundary: every vertex within a tetrahedron's size of the 1 cm
        // sphere around (0, 0, −1.5 cm) (cells are 5 mm), and the surface closed.
        let centre = crate::Vec3::new(0.0, 0.0, -0.015);
        for p in &lump.rest_positions {
            let r = (p - centre).norm();
            assert!(r < 0.01 + 0.0087, "vertex {p:?} is {r} m from the centre");
        }
        let mut edges = std::collections::HashMap::new();
        for t in &lump.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                *edges.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        assert!(!lump.triangles.is_empty());
        assert!(
            edges.values().all(|&n| n == 2),
            "every edge has two triangles"
        );
        // Outward orientation: the enclosed volume (divergence theorem) is positive and
        // near the sphere's 4.19 cm³ (voxelised by 5 mm cells).
        let volume: f64 = lump
            .triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| lump.rest_positions[i as usize] - centre);
                a.dot(&b.cross(&c)) / 6.0
            })
            .sum();
        assert!(
            (2e-6..7e-6).contains(&volume),
            "lump volume {volume} m³, sphere 4.19e-6 m³"
        );
    }
}
