//! ParaView export (`palpa replay … --vtk DIR`): the deformed tissue as a VTK XML time
//! series — one `.vtu` per frame and a `series.pvd` that ParaView (or meshio, VisIt)
//! opens as an animation. The surface by default (points displaced, `displacement` in m);
//! with `volume`, every tetrahedron with its `region`, its stress tensor (Pa: Cauchy for
//! the large-strain laws, the small-strain stress for the linear one) and von Mises stress.

use std::path::{Path, PathBuf};

use crate::app::scene::BuiltScene;
use crate::fem::TetElement;
use crate::files::OutputDir;
use crate::mesh::vtu::{collection, unstructured_grid, VtuCells, VtuField};
use crate::nonlinear::{Hyperelastic, LawKind};
use crate::pipeline::SceneModel;
use crate::scene::FemInputs;
use crate::{Mat3, Vec3};

/// The collection file of a series.
pub const SERIES: &str = "series.pvd";

/// What to write and how often.
#[derive(Clone, Debug, PartialEq)]
pub struct ParaviewOptions {
    /// The directory the series goes into (created if missing; frames of an earlier
    /// series there are replaced).
    pub dir: PathBuf,
    /// Frames per second of simulated time (Hz).
    pub rate: f64,
    /// The whole volume with stress, not only the surface.
    pub volume: bool,
}

/// The tetrahedra and what a stress needs of each.
struct Volume {
    tets: Vec<[usize; 4]>,
    regions: Vec<i32>,
    elements: Vec<TetElement>,
    laws: Vec<Hyperelastic>,
}

/// A series being written.
pub struct ParaviewSeries {
    dir: OutputDir,
    rest: Vec<Vec3>,
    /// Mesh nodes written (all of them for the volume, else the surface's).
    nodes: Vec<usize>,
    /// Surface triangles in indices into `nodes`.
    triangles: Vec<[usize; 3]>,
    volume: Option<Volume>,
    period: f64,
    next: f64,
    frames: Vec<(f64, String)>,
    displacement: Vec<Vec3>,
}

/// A written series: where, and how many frames.
#[derive(Clone, Debug, PartialEq)]
pub struct ParaviewWritten {
    /// The `series.pvd` written.
    pub collection: PathBuf,
    /// Frames written.
    pub frames: usize,
}

fn write_error(e: impl std::fmt::Display) -> String {
    format!("ParaView series: {e}")
}

impl ParaviewSeries {
    /// A series of `built`'s model, written as `options` say.
    pub fn create(options: &ParaviewOptions, built: &BuiltScene) -> Result<Self, String> {
        if !(options.rate.is_finite() && options.rate > 0.0) {
            return Err(format!(
                "--vtk-rate {}: frames per second must be positive",
                options.rate
            ));
        }
        let (dir, _) = OutputDir::create(&options.dir).map_err(write_error)?;
        let rest = built.model.rest_positions().to_vec();
        let volume = match options.volume {
            true => Some(volume(built, rest.len())?),
            false => None,
        };
        let (nodes, triangles) = match volume {
            Some(_) => ((0..rest.len()).collect(), Vec::new()),
            None => surface(built.model.surface_triangles(), rest.len()),
        };
        Ok(Self {
            dir,
            displacement: vec![Vec3::zeros(); nodes.len()],
            rest,
            nodes,
            triangles,
            volume,
            period: 1.0 / options.rate,
            next: 0.0,
            frames: Vec::new(),
        })
    }

    /// Writes a frame of `model` at simulated time `t` (s) if one is due.
    pub fn offer(&mut self, t: f64, model: &mut SceneModel) -> Result<(), String> {
        if t + 1e-9 < self.next {
            return Ok(());
        }
        self.next = (self.frames.len() + 1) as f64 * self.period;
        self.write_frame(t, model)
    }

    /// Writes a frame of `model` at simulated time `t` (s) now.
    pub fn write_frame(&mut self, t: f64, model: &mut SceneModel) -> Result<(), String> {
        model.displacements(&self.nodes, &mut self.displacement);
        let points: Vec<Vec3> = self
            .nodes
            .iter()
            .zip(&self.displacement)
            .map(|(&n, u)| self.rest[n] + u)
            .collect();
        let point_data = [VtuField::Vector("displacement", &self.displacement)];
        let text = match &self.volume {
            None => unstructured_grid(
                &points,
                VtuCells::Triangles(&self.triangles),
                &point_data,
                &[],
            ),
            Some(v) => {
                let stress = v.stresses(&self.displacement);
                let von_mises: Vec<f64> = stress.iter().map(von_mises).collect();
                unstructured_grid(
                    &points,
                    VtuCells::Tetrahedra(&v.tets),
                    &point_data,
                    &[
                        VtuField::Integer("region", &v.regions),
                        VtuField::Tensor("stress", &stress),
                        VtuField::Scalar("von_mises", &von_mises),
                    ],
                )
            }
        };
        let name = format!("frame_{:06}.vtu", self.frames.len());
        self.dir
            .write_atomic(&name, text.as_bytes())
            .map_err(write_error)?;
        self.frames.push((t, name));
        Ok(())
    }

    /// Writes the collection naming every frame.
    pub fn finish(self) -> Result<ParaviewWritten, String> {
        self.dir
            .write_atomic(SERIES, collection(&self.frames).as_bytes())
            .and_then(|()| self.dir.sync())
            .map_err(write_error)?;
        Ok(ParaviewWritten {
            collection: self.dir.join(SERIES),
            frames: self.frames.len(),
        })
    }

    /// The directory written into.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The surface's nodes (sorted) and its triangles in indices into them.
fn surface(triangles: &[[usize; 3]], nodes: usize) -> (Vec<usize>, Vec<[usize; 3]>) {
    let mut local = vec![usize::MAX; nodes];
    let mut used: Vec<usize> = triangles.iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    for (i, &n) in used.iter().enumerate() {
        local[n] = i;
    }
    let triangles = triangles.iter().map(|t| t.map(|n| local[n])).collect();
    (used, triangles)
}

fn volume(built: &BuiltScene, nodes: usize) -> Result<Volume, String> {
    let inputs = FemInputs::resolve(&built.scene).map_err(|e| e.to_string())?;
    let mesh = &inputs.mesh.mesh;
    if mesh.nodes.len() != nodes {
        return Err(format!(
            "--vtk-volume: the scene's mesh has {} nodes and its model {nodes}; the volume \
             cannot be written for this scene",
            mesh.nodes.len()
        ));
    }
    let elements = mesh
        .tets
        .iter()
        .map(|t| TetElement::new(t.map(|n| mesh.nodes[n])))
        .collect();
    Ok(Volume {
        tets: mesh.tets.clone(),
        regions: mesh.regions.clone(),
        elements,
        laws: inputs.laws.clone(),
    })
}

impl Volume {
    /// Each tetrahedron's stress tensor (Pa, row-major) for the nodal displacements `u`
    /// (m).
    fn stresses(&self, u: &[Vec3]) -> Vec<[f64; 9]> {
        self.tets
            .iter()
            .zip(&self.elements)
            .zip(&self.laws)
            .map(|((t, e), law)| {
                let grad: Mat3 = (0..4).map(|a| u[t[a]] * e.grads[a].transpose()).sum();
                let s = stress(law, &(Mat3::identity() + grad));
                [
                    s[(0, 0)],
                    s[(0, 1)],
                    s[(0, 2)],
                    s[(1, 0)],
                    s[(1, 1)],
                    s[(1, 2)],
                    s[(2, 0)],
                    s[(2, 1)],
                    s[(2, 2)],
                ]
            })
            .collect()
    }
}

/// The stress at deformation gradient `f` (Pa): the small-strain stress for the linear
/// law, the Cauchy stress σ = P Fᵀ / det F for the large-strain ones.
fn stress(law: &Hyperelastic, f: &Mat3) -> Mat3 {
    let p = law.stress(f);
    match law.kind {
        LawKind::Linear => p,
        _ => p * f.transpose() / f.determinant(),
    }
}

/// Von Mises equivalent stress of a row-major tensor (Pa).
fn von_mises(s: &[f64; 9]) -> f64 {
    let (xx, yy, zz) = (s[0], s[4], s[8]);
    let (xy, yz, zx) = (
        0.5 * (s[1] + s[3]),
        0.5 * (s[5] + s[7]),
        0.5 * (s[2] + s[6]),
    );
    (0.5 * ((xx - yy).powi(2) + (yy - zz).powi(2) + (zz - xx).powi(2))
        + 3.0 * (xy * xy + yz * yz + zx * zx))
        .sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::Material;

    #[test]
    fn a_uniaxial_strain_gives_the_von_mises_stress_of_its_lame_moduli() {
        let material = Material::new(30e3, 0.45, 1000.0).unwrap();
        let (lambda, mu) = material.lame();
        let law = Hyperelastic::new(LawKind::Linear, &material);
        let eps = 1e-3;
        let tet = TetElement::new([Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()]);
        let nodes = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
        let u: Vec<Vec3> = nodes
            .iter()
            .map(|x| Vec3::new(eps * x.x, 0.0, 0.0))
            .collect();
        let v = Volume {
            tets: vec![[0, 1, 2, 3]],
            regions: vec![0],
            elements: vec![tet],
            laws: vec![law],
        };
        let s = v.stresses(&u)[0];
        assert!((s[0] - (lambda + 2.0 * mu) * eps).abs() < 1e-9 * s[0]);
        assert!((s[4] - lambda * eps).abs() < 1e-9 * s[0]);
        assert!((von_mises(&s) - 2.0 * mu * eps).abs() < 1e-9 * mu * eps);
    }

    #[test]
    fn a_large_strain_law_gives_a_symmetric_cauchy_stress_near_the_linear_one() {
        let material = Material::new(30e3, 0.45, 1000.0).unwrap();
        let linear = Hyperelastic::new(LawKind::Linear, &material);
        let neo = Hyperelastic::new(LawKind::NeoHookean, &material);
        let f = Mat3::new(1.0005, 2e-4, 0.0, 0.0, 0.9998, 1e-4, 0.0, 0.0, 1.0001);
        let (a, b) = (stress(&linear, &f), stress(&neo, &f));
        assert!((b - b.transpose()).norm() < 1e-9 * b.norm());
        assert!((a - b).norm() < 2e-3 * a.norm(), "{a} vs {b}");
    }

    #[test]
    fn a_surface_is_renumbered_onto_its_own_nodes() {
        let (nodes, tris) = surface(&[[4, 2, 9], [9, 2, 7]], 10);
        assert_eq!(nodes, vec![2, 4, 7, 9]);
        assert_eq!(tris, vec![[1, 0, 3], [3, 0, 2]]);
    }
}
