//! A stiffness map (`palpa map`): the scene's probe pressed to one depth at every point of
//! a grid over the tissue's top surface, as a palpating hand would, giving the force there
//! — a stiff inclusion shows as a hot spot. Each point is an [`indent`](super::indent)
//! of the runtime model (or the full FEM), the model reset between points.

use super::indent::{check_depths, indent_model, IndentOptions};
use crate::app::scene::BuiltScene;
use crate::pipeline::SceneModel;
use crate::scene::{MaterialSpec, Scene};
use crate::Vec3;

/// Most grid points one map takes.
pub const MAX_POINTS: usize = 250_000;

/// What to map.
#[derive(Clone, Debug, PartialEq)]
pub struct MapOptions {
    /// Depth pressed at every point (m).
    pub depth: f64,
    /// Grid spacing (m).
    pub step: f64,
    /// The full nonlinear static FEM instead of the runtime model (slow: a solve per point).
    pub full: bool,
}

/// A material's footprint seen from above (m, in the map's two coordinates).
#[derive(Clone, Debug, PartialEq)]
pub enum Outline {
    /// A sphere's silhouette.
    Circle {
        /// The material's name.
        name: String,
        /// Centre (m).
        center: [f64; 2],
        /// Radius (m).
        radius: f64,
    },
    /// A box's footprint.
    Rect {
        /// The material's name.
        name: String,
        /// Lower corner (m).
        min: [f64; 2],
        /// Upper corner (m).
        max: [f64; 2],
    },
}

/// A map of the normal force at one depth over the top surface.
#[derive(Clone, Debug, PartialEq)]
pub struct StiffnessMap {
    /// The scene's name.
    pub scene: String,
    /// The depth pressed (m).
    pub depth: f64,
    /// Names of the two scene axes across the up axis (`x`, `y`, `z`).
    pub axes: [&'static str; 2],
    /// Grid coordinates along the first axis (m).
    pub xs: Vec<f64>,
    /// Grid coordinates along the second axis (m).
    pub ys: Vec<f64>,
    /// Force (N) at (xs[i], ys[j]) as `force[j * xs.len() + i]`; `None` where the press
    /// failed (off the tissue, the proxy slid).
    pub force: Vec<Option<f64>>,
    /// Why the first failed points failed, with where (m).
    pub failures: Vec<([f64; 2], String)>,
    /// Footprints of the sphere and box materials.
    pub outlines: Vec<Outline>,
    /// `runtime (modal)` or `full FEM`.
    pub method: String,
}

impl StiffnessMap {
    /// The largest force and where (m).
    pub fn peak(&self) -> Option<([f64; 2], f64)> {
        self.points()
            .filter_map(|(p, f)| f.map(|f| (p, f)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The median force over the map (N): the far field where the inclusion is small.
    pub fn median(&self) -> Option<f64> {
        let mut f: Vec<f64> = self.force.iter().flatten().copied().collect();
        f.sort_by(f64::total_cmp);
        (!f.is_empty()).then(|| f[f.len() / 2])
    }

    /// Every grid point (m) with its force.
    pub fn points(&self) -> impl Iterator<Item = ([f64; 2], Option<f64>)> + '_ {
        self.ys.iter().enumerate().flat_map(move |(j, &y)| {
            self.xs
                .iter()
                .enumerate()
                .map(move |(i, &x)| ([x, y], self.force[j * self.xs.len() + i]))
        })
    }

    /// The map as CSV: a `# scene:` line, then `x,y,force` (m, m, N; empty where the press
    /// failed).
    pub fn to_csv(&self) -> String {
        let mut out = format!(
            "# scene: {}\n# force (N) at depth {} m, {}\n{},{},force\n",
            self.scene, self.depth, self.method, self.axes[0], self.axes[1]
        );
        for ([x, y], f) in self.points() {
            let f = f.map_or(String::new(), |f| f.to_string());
            out.push_str(&format!("{x},{y},{f}\n"));
        }
        out
    }
}

/// Failures kept with their reasons.
const KEPT_FAILURES: usize = 5;

/// Presses `built`'s probe at every grid point as `options` say; `progress(done, total)`
/// hears of each point.
pub fn stiffness_map(
    built: BuiltScene,
    options: &MapOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<StiffnessMap, String> {
    check_depths(&[options.depth])?;
    let title = built.name();
    let BuiltScene {
        scene, mut model, ..
    } = built;
    let up = scene.view.up.vector();
    let axis = up.iamax();
    let across: Vec<usize> = (0..3).filter(|&a| a != axis).collect();
    let (lo, hi) = bounds(model.rest_positions());
    let xs = grid(lo[across[0]], hi[across[0]], options.step)?;
    let ys = grid(lo[across[1]], hi[across[1]], options.step)?;
    let total = xs.len() * ys.len();
    if total > MAX_POINTS {
        return Err(format!(
            "--step {} m gives {total} points; at most {MAX_POINTS} (a larger step)",
            options.step
        ));
    }
    let mut force = Vec::with_capacity(total);
    let mut failures = Vec::new();
    for &y in &ys {
        for &x in &xs {
            match press_once(&scene, &mut model, [x, y], options) {
                Ok(f) => force.push(Some(f)),
                Err(why) => {
                    force.push(None);
                    if failures.len() < KEPT_FAILURES {
                        failures.push(([x, y], why));
                    }
                }
            }
            progress(force.len(), total);
        }
    }
    let name = |a: usize| ["x", "y", "z"][a];
    Ok(StiffnessMap {
        scene: title,
        depth: options.depth,
        axes: [name(across[0]), name(across[1])],
        xs,
        ys,
        force,
        failures,
        outlines: outlines(&scene, [across[0], across[1]]),
        method: match options.full {
            true => "full FEM".into(),
            false => format!("runtime ({})", model.backend_name()),
        },
    })
}

fn press_once(
    scene: &Scene,
    model: &mut SceneModel,
    at: [f64; 2],
    options: &MapOptions,
) -> Result<f64, String> {
    model.reset();
    let press = IndentOptions {
        at,
        depths: vec![options.depth],
        full: options.full,
    };
    let result = indent_model(scene, model, &press, &mut |_, _| {})?;
    Ok(result.force_n[0])
}

fn bounds(points: &[Vec3]) -> (Vec3, Vec3) {
    points.iter().fold(
        (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
        |(lo, hi), p| (lo.inf(p), hi.sup(p)),
    )
}

/// Points `step` (m) apart over [lo, hi], symmetric about its middle (which is one of
/// them), at least half a step in from the edges (a press on the very edge slides off).
fn grid(lo: f64, hi: f64, step: f64) -> Result<Vec<f64>, String> {
    if !(step.is_finite() && step > 0.0) {
        return Err(format!("--step {step} m: must be positive"));
    }
    let half = 0.5 * (hi - lo);
    if step > hi - lo {
        return Err(format!(
            "--step {step} m is wider than the tissue ({} m)",
            hi - lo
        ));
    }
    let n = ((half - 0.5 * step) / step + 1e-9).floor().max(0.0) as i64;
    let mid = 0.5 * (lo + hi);
    Ok((-n..=n).map(|k| mid + k as f64 * step).collect())
}

/// The sphere and box materials' footprints on the `axes` plane.
fn outlines(scene: &Scene, axes: [usize; 2]) -> Vec<Outline> {
    let on = |v: [f64; 3]| [v[axes[0]], v[axes[1]]];
    scene
        .materials
        .iter()
        .filter_map(|(name, spec)| {
            let spec: &MaterialSpec = spec.get_ref();
            let name = name.clone();
            if let Some(s) = &spec.sphere {
                Some(Outline::Circle {
                    name,
                    center: on(s.center),
                    radius: s.radius,
                })
            } else {
                spec.box_.as_ref().map(|b| Outline::Rect {
                    name,
                    min: on(b.min),
                    max: on(b.max),
                })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_is_symmetric_about_the_middle_and_half_a_step_in_from_the_edges() {
        let g = grid(-0.05, 0.05, 0.005).unwrap();
        assert_eq!(g.len(), 19);
        assert!((g[0] + 0.045).abs() < 1e-12 && (g[18] - 0.045).abs() < 1e-12);
        assert!(g[9].abs() < 1e-12);
        assert!(grid(0.0, 0.01, 0.02).is_err());
        assert!(grid(0.0, 0.01, f64::NAN).is_err());
    }
}
