//! Scene → mesh: load, fill or generate the tetrahedral mesh, scale it, and embed the
//! render surface.

use crate::mesh::embed::Embedding;
use crate::mesh::generate::{box_mesh_split, grid_mesh};
use crate::mesh::lattice::{fill_surface, LatticeOptions};
use crate::mesh::surface::{load_surface, SurfaceMesh};
use crate::mesh::{self, TetMesh};
use crate::scene::schema::DEFAULT_BOX_CELLS;
use crate::scene::{Scene, SceneError};
use crate::Vec3;

/// A detailed render surface moved with the tetrahedral mesh.
#[derive(Clone, Debug)]
pub struct RenderSurface {
    /// The surface (m, scaled like the mesh).
    pub surface: SurfaceMesh,
    /// Its vertices' tetrahedra and barycentric coordinates.
    pub embedding: Embedding,
}

/// The scene's mesh, in scene metres.
#[derive(Clone, Debug)]
pub struct SceneMesh {
    /// The tetrahedral mesh.
    pub mesh: TetMesh,
    /// The embedded render surface, if the scene names one.
    pub render: Option<RenderSurface>,
}

/// Loads (file), fills (lattice) or generates (box) the mesh, scales it by
/// `mesh.scale`, and embeds the render surface.
pub fn build_mesh(scene: &Scene) -> Result<SceneMesh, SceneError> {
    let spec = &scene.mesh;
    let mesh_err = |key: &str, source| SceneError::Mesh {
        file: scene.source.clone(),
        key: key.to_string(),
        source,
    };
    let mut mesh = if let Some(file) = &spec.file {
        let mut m = mesh::load(&scene.resolve(file)).map_err(|e| mesh_err("mesh.file", e))?;
        m.scale(spec.scale);
        m
    } else if let Some(l) = &spec.lattice {
        let mut surface =
            load_surface(&scene.resolve(&l.surface)).map_err(|e| mesh_err("mesh.lattice", e))?;
        surface.scale(spec.scale);
        let options = LatticeOptions {
            split: l.split.into(),
            snap: l.snap,
        };
        fill_surface(&surface, l.cell_size, options).map_err(|e| mesh_err("mesh.lattice", e))?
    } else {
        let b = spec.box_.clone().unwrap_or_default();
        let mut m = match &b.graded {
            Some(g) => {
                let [x, y, z] = g.axes(&b.origin, &b.size);
                let source = format!("graded box {}x{}x{}", x.len() - 1, y.len() - 1, z.len() - 1);
                grid_mesh(&source, [&x, &y, &z], b.split.into())
            }
            None => box_mesh_split(
                Vec3::from(b.size),
                b.cells.unwrap_or(DEFAULT_BOX_CELLS),
                b.split.into(),
            ),
        }
        .map_err(|e| mesh_err("mesh.box", e))?;
        let origin = Vec3::from(b.origin);
        for p in &mut m.nodes {
            *p += origin;
        }
        m.scale(spec.scale);
        m
    };
    for note in &mesh.notes {
        if note.contains("warning:") {
            tracing::warn!("{}: mesh: {note}", scene.source);
        } else {
            tracing::info!("{}: mesh: {note}", scene.source);
        }
    }
    mesh.notes.clear();
    let (lo, hi) = mesh.bounds();
    if let Some(why) = super::plausible::mesh_size_warning((hi - lo).norm()) {
        tracing::warn!(
            "{}: mesh: {why} (mesh.scale = {})",
            scene.source,
            spec.scale
        );
    }
    let render = match &spec.render_surface {
        None => None,
        Some(path) => {
            let full = scene.resolve(path);
            let mut surface =
                load_surface(&full).map_err(|e| mesh_err("mesh.render_surface", e))?;
            surface.scale(spec.scale);
            check_render_scale(scene, &mesh, &surface)?;
            let embedding = Embedding::new(&mesh, &surface.vertices, &full.display().to_string())
                .map_err(|e| mesh_err("mesh.render_surface", e))?;
            if embedding.outside > 0 {
                tracing::info!(
                    "{}: {} render-surface vertices lie outside the tetrahedral mesh \
                     (farthest {:.2e} m); they follow their nearest tetrahedron",
                    scene.source,
                    embedding.outside,
                    embedding.max_distance
                );
            }
            Some(RenderSurface { surface, embedding })
        }
    };
    Ok(SceneMesh { mesh, render })
}

/// A render surface must overlap the tetrahedral mesh at about its size: one in other
/// units (100× off) would be embedded vertex by vertex far outside the mesh, slowly and
/// uselessly.
fn check_render_scale(
    scene: &Scene,
    mesh: &TetMesh,
    surface: &SurfaceMesh,
) -> Result<(), SceneError> {
    let (lo, hi) = mesh.bounds();
    let (slo, shi) = surface.bounds();
    let (size, render) = ((hi - lo).norm(), (shi - slo).norm());
    let ratio = render / size;
    let gap = (slo - hi).sup(&(lo - shi)).max();
    if !(0.5..=2.0).contains(&ratio) || gap > 0.5 * size {
        return Err(scene.invalid(
            "mesh.render_surface",
            format!(
                "the render surface is {ratio:.3}× the size of the tetrahedral mesh \
                 ({render:.3e} m against {size:.3e} m across){}; are both in the same \
                 units before mesh.scale?",
                if gap > 0.5 * size {
                    format!(" and {gap:.3e} m away from it")
                } else {
                    String::new()
                }
            ),
        ));
    }
    Ok(())
}
