//! The virtual indentation test a tissue scientist runs on a sample (`palpa indent`). The
//! scene's probe is pressed quasi-statically along the inward surface normal at a point
//! of the surface to each depth (a sphere tip's lowest point, so depth 0 is touching),
//! and the normal force is reported: by the scene's
//! runtime model, held at each depth until its force settles (the default; the
//! nonlinear backend held in its static equilibrium, where its modes would settle), or by the
//! full nonlinear static FEM (`--full`: Newton on the whole mesh with each material's
//! strain-energy law; a point probe's contact patch held at the depth by a Lagrange
//! multiplier, a sphere probe as a rigid frictionless sphere every surface node stays
//! out of). No device, force clamp or safety filter takes part.

use crate::app::scene::BuiltScene;
use crate::contact::geometry::{plane_barycentric, unit_normal};
use crate::contact::{SphereContact, SurfaceBvh};
use crate::nonlinear::{
    LinearConstraint, NewtonOptions, NonlinearStatics, RigidSphere, SphereContactState,
    SweptPressState, SweptSphere,
};
use crate::pipeline::SceneModel;
use crate::scene::plausible;
use crate::scene::{FemInputs, Scene};
use crate::tissue::ModelStep;
use crate::Vec3;

/// Most depths one run takes.
pub const MAX_DEPTHS: usize = 10_000;

/// Deepest press accepted (m): deeper than any tissue sample a probe can press.
pub const MAX_DEPTH: f64 = 1.0;

/// Smallest cosine between a triangle's normal and the shaded normal indent presses
/// with (a steeper surface would send the probe sideways).
const MIN_COS: f64 = 0.5;

/// Model steps over which the probe moves from one depth to the next (a quasi-static
/// ramp; the static backends settle at once, the modal one rings less).
const RAMP_STEPS: usize = 20;

/// Longest the runtime model is held at one depth for its force to settle (s).
const MAX_HOLD: f64 = 10.0;

/// Model steps at the end of a hold whose force range an unsettled press reports.
const RANGE_STEPS: usize = 20;

/// Consecutive model steps the force must stay within [`SETTLED`] of the last one.
const CALM_STEPS: usize = 5;

/// A force is settled when it changes by at most 1e-9 N + this fraction of itself per
/// model step.
const SETTLED: f64 = 1e-8;

/// Halvings of a depth increment the full solve may take where Newton fails on the
/// whole increment (continuation in depth).
const MAX_BISECTIONS: usize = 10;

/// Checks a list of depths (m): at most [`MAX_DEPTHS`], each finite in [0, [`MAX_DEPTH`]].
pub fn check_depths(depths: &[f64]) -> Result<(), String> {
    if depths.is_empty() {
        return Err("no depths given".into());
    }
    if depths.len() > MAX_DEPTHS {
        return Err(format!(
            "{} depths; at most {MAX_DEPTHS} per run",
            depths.len()
        ));
    }
    // The range check also refuses NaN and the infinities.
    if let Some(d) = depths.iter().find(|&&d| !(0.0..=MAX_DEPTH).contains(&d)) {
        return Err(format!(
            "depth {d} m: each must lie in [0, {MAX_DEPTH}] m (metres, not millimetres)"
        ));
    }
    Ok(())
}

/// How the forces were computed.
#[derive(Clone, Debug, PartialEq)]
pub enum Method {
    /// The scene's runtime model (its backend named), held until its force settled.
    Runtime {
        /// `modal`, `condensed` or `nonlinear`.
        backend: &'static str,
    },
    /// The full nonlinear static FEM.
    Full {
        /// Free degrees of freedom of the mesh.
        dofs: usize,
        /// Newton iterations over all depths.
        iterations: usize,
    },
}

/// The result of an indentation test.
#[derive(Clone, Debug, PartialEq)]
pub struct Indentation {
    /// The rest surface point pressed (m, scene frame).
    pub surface_point: Vec3,
    /// Outward unit surface normal there: the probe pressed along its negative.
    pub normal: Vec3,
    /// Depths pressed to (m), in the order given.
    pub depth_m: Vec<f64>,
    /// Normal force on the probe at each depth (N, positive pushing the probe out).
    pub force_n: Vec<f64>,
    /// How the forces were computed.
    pub method: Method,
}

/// What to press: where, how deep, and on which model.
#[derive(Clone, Debug, PartialEq)]
pub struct IndentOptions {
    /// Where (m): the two scene coordinates across the scene's up axis; the probe comes
    /// down the up axis there onto the first surface it meets.
    pub at: [f64; 2],
    /// Depths (m), in order; a sphere tip is pressed by its lowest point.
    pub depths: Vec<f64>,
    /// The full nonlinear static FEM instead of the scene's runtime model.
    pub full: bool,
}

/// Presses the built scene's probe as `options` say: with the runtime model, or the
/// full nonlinear FEM. `on_depth(depth, force)` hears of each depth as it is done (m, N).
pub fn indent(
    built: BuiltScene,
    options: &IndentOptions,
    on_depth: &mut dyn FnMut(f64, f64),
) -> Result<Indentation, String> {
    let BuiltScene {
        scene, mut model, ..
    } = built;
    indent_model(&scene, &mut model, options, on_depth)
}

/// [`indent`] on a model already built for `scene`, left pressed at the last depth
/// ([`SceneModel::reset`] before pressing it again elsewhere).
pub fn indent_model(
    scene: &Scene,
    model: &mut SceneModel,
    options: &IndentOptions,
    on_depth: &mut dyn FnMut(f64, f64),
) -> Result<Indentation, String> {
    let IndentOptions { at, depths, full } = options;
    let (at, depths, full) = (*at, &depths[..], *full);
    check_depths(depths)?;
    if !at.iter().all(|x| x.is_finite()) {
        return Err(format!("--at {},{}: not finite", at[0], at[1]));
    }
    // A press held still rings down to the static equilibrium of the nonlinear model's
    // modes and shapes; solving that at once spares the ring-down.
    if let SceneModel::Nonlinear(sim) = model {
        sim.model_mut().hold_static(true);
    }
    let up = scene.view.up.vector();
    let (surface_point, normal, face) = surface_point(model, up, at)?;
    let thickness = thickness_under(model, up, surface_point);
    let deepest = depths.iter().fold(0.0, |a: f64, &d| a.max(d));
    if let Some(why) = plausible::indentation_warning(deepest, thickness) {
        tracing::warn!("--depths: {why}");
    }
    let dt = 1.0 / scene.rates.model;
    let mut press = Press {
        model,
        dt,
        t: 0.0,
        radius: scene.contact.probe_radius,
        along_face: None,
    };
    let (force_n, method) = if full {
        let inputs = FemInputs::resolve(scene).map_err(|e| e.to_string())?;
        let statics = inputs.statics(scene).map_err(|e| e.to_string())?;
        full_press(
            &mut press,
            &inputs,
            &statics,
            surface_point,
            normal,
            depths,
            on_depth,
        )?
    } else {
        let backend = press.model.backend_name();
        // The rest-surface proxy holds the probe on the flat triangle and measures the
        // indentation along the shaded normal: pressed along the shaded normal it slid
        // by depth·sin θ and measured depth·cos² θ (0.99 of it on the bunny, θ ≈ 5°).
        // Along the face normal it stays put; the travel is scaled by 1/cos θ so the
        // measured indentation is the depth asked for.
        press.along_face = Some((face, face.dot(&normal).max(MIN_COS)));
        let forces = runtime_press(&mut press, surface_point, normal, depths, on_depth)?;
        (forces, Method::Runtime { backend })
    };
    Ok(Indentation {
        surface_point,
        normal,
        depth_m: depths.to_vec(),
        force_n,
        method,
    })
}

/// How much tissue lies under `top` along −`up` (m): to the first surface a ray from
/// below meets, else to the body's lowest point.
fn thickness_under(model: &SceneModel, up: Vec3, top: Vec3) -> f64 {
    let rest = model.rest_positions();
    let lowest = rest.iter().map(|x| up.dot(x)).fold(f64::INFINITY, f64::min);
    let height = up.dot(&top) - lowest;
    let (from, to) = (top - up * (height + 1e-3), top - up * (1e-6 * height));
    let bvh = SurfaceBvh::build(model.surface_triangles().to_vec(), rest);
    match bvh.segment_cast(&from, &to, 0.0, &[], rest) {
        Some(hit) => up.dot(&(top - (from + (to - from) * hit.t))).max(0.0),
        None => height,
    }
}

/// The first rest surface point on the line along `up` through `at` (coordinates
/// across `up`), coming down from above, the outward (shaded) normal there and the
/// outward normal of its flat triangle.
fn surface_point(model: &SceneModel, up: Vec3, at: [f64; 2]) -> Result<(Vec3, Vec3, Vec3), String> {
    let rest = model.rest_positions();
    let axis = up.iamax();
    let across: Vec<usize> = (0..3).filter(|&a| a != axis).collect();
    let mut base = Vec3::zeros();
    base[across[0]] = at[0];
    base[across[1]] = at[1];
    let (lo, hi) = rest
        .iter()
        .map(|x| up.dot(x))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), h| {
            (lo.min(h), hi.max(h))
        });
    let margin = 0.1 * (hi - lo) + 1e-3;
    let (from, to) = (base + up * (hi + margin), base + up * (lo - margin));
    let bvh = SurfaceBvh::build(model.surface_triangles().to_vec(), rest);
    let Some(hit) = bvh.segment_cast(&from, &to, 0.0, &[], rest) else {
        let name = |a: usize| ["x", "y", "z"][a];
        let span = |a: usize| {
            let (lo, hi) = rest
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                    (lo.min(x[a]), hi.max(x[a]))
                });
            format!("{} ∈ [{lo}, {hi}] m", name(a))
        };
        return Err(format!(
            "--at {},{}: the line along the up axis there misses the tissue (it spans {}, {})",
            at[0],
            at[1],
            span(across[0]),
            span(across[1])
        ));
    };
    let x = from + (to - from) * hit.t;
    let [a, b, c] = bvh.vertices(hit.triangle, rest);
    let bary = plane_barycentric(&x, &a, &b, &c).unwrap_or([1.0 / 3.0; 3]);
    let shaded = bvh.shaded_normal(hit.triangle, &bary, rest);
    let face = unit_normal(&a, &b, &c).unwrap_or(shaded);
    Ok((x, shaded, face))
}

/// Where a probe tip of `radius` (m) is centred (m) when the tip is `depth` (m;
/// negative: above) into the surface at `surface` with outward normal `normal`: a
/// sphere's lowest point, not its centre, goes to the depth.
fn probe_centre(surface: Vec3, normal: Vec3, radius: f64, depth: f64) -> Vec3 {
    surface + normal * (radius - depth)
}

/// The scene's model stepped at its model rate with the probe where a press puts it.
struct Press<'a> {
    model: &'a mut SceneModel,
    dt: f64,
    t: f64,
    /// The probe tip's radius (m; 0 for a point probe).
    radius: f64,
    /// Pressed along this flat triangle's outward normal, with the cosine between it
    /// and the shaded normal; `None`: along the normal given.
    along_face: Option<(Vec3, f64)>,
}

impl Press<'_> {
    /// Where the probe is (its centre, m) when its tip is `depth` (m) into the surface
    /// ([`probe_centre`]).
    fn at_depth(&self, surface: Vec3, normal: Vec3, depth: f64) -> Vec3 {
        match self.along_face {
            Some((face, cos)) => surface + face * (self.radius - depth / cos),
            None => probe_centre(surface, normal, self.radius, depth),
        }
    }

    /// One model step with the probe at `probe` (m); the normal force along `normal`
    /// on the probe (N).
    fn step(&mut self, probe: Vec3, normal: &Vec3) -> f64 {
        self.t += self.dt;
        self.model.step(self.t, self.dt, probe).f0.dot(normal)
    }

    /// Moves the probe from `from` to `to` over [`RAMP_STEPS`] steps (m).
    fn ramp(&mut self, from: Vec3, to: Vec3, normal: &Vec3) -> f64 {
        let mut f = 0.0;
        for k in 1..=RAMP_STEPS {
            f = self.step(from + (to - from) * (k as f64 / RAMP_STEPS as f64), normal);
        }
        f
    }
}

/// The runtime model pressed to each depth and held there until its force settles.
fn runtime_press(
    press: &mut Press,
    surface: Vec3,
    normal: Vec3,
    depths: &[f64],
    on_depth: &mut dyn FnMut(f64, f64),
) -> Result<Vec<f64>, String> {
    // Start just above the surface, so the probe enters it at the surface point.
    let mut probe = press.at_depth(surface, normal, -2e-3);
    press.step(probe, &normal);
    let mut forces = Vec::with_capacity(depths.len());
    for &depth in depths {
        let target = press.at_depth(surface, normal, depth);
        let mut last = press.ramp(probe, target, &normal);
        probe = target;
        let (mut calm, mut held) = (0, 0);
        // The range of the force over the last steps held (N), for the error.
        let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
        while calm < CALM_STEPS {
            if held as f64 * press.dt > MAX_HOLD {
                return Err(format!(
                    "at depth {depth} m the runtime model's force still changes after \
                     {MAX_HOLD} s held: between {low:.4} and {high:.4} N over the last \
                     {RANGE_STEPS} steps"
                ));
            }
            let f = press.step(target, &normal);
            if held as f64 * press.dt > MAX_HOLD - RANGE_STEPS as f64 * press.dt {
                (low, high) = (low.min(f), high.max(f));
            }
            calm = if (f - last).abs() <= 1e-9 + SETTLED * f.abs() {
                calm + 1
            } else {
                0
            };
            last = f;
            held += 1;
        }
        let reached = press.model.indentation(&target);
        if depth > 0.0 && (reached - depth).abs() > 1e-6 + 1e-3 * depth {
            return Err(format!(
                "at depth {depth} m the probe's proxy slid along the surface: the model \
                 measures an indentation of {reached} m. The surface is too curved there \
                 for a point pressed this deep: try a point where it is flatter (another \
                 --at, e.g. a millimetre away), a smaller depth, or a sphere probe \
                 ([contact] probe_radius in the scene, e.g. 0.002)"
            ));
        }
        on_depth(depth, last);
        forces.push(last);
    }
    Ok(forces)
}

/// The full nonlinear static FEM pressed to each depth: a sphere probe
/// (`contact.probe_radius > 0`) as a rigid frictionless sphere on the surface nodes
/// ([`NonlinearStatics::press_sphere`]), a point probe as its contact patch.
fn full_press(
    press: &mut Press,
    inputs: &FemInputs,
    statics: &NonlinearStatics,
    surface: Vec3,
    normal: Vec3,
    depths: &[f64],
    on_depth: &mut dyn FnMut(f64, f64),
) -> Result<(Vec<f64>, Method), String> {
    let mesh = &inputs.mesh.mesh;
    let rest = press.model.rest_positions();
    if mesh.nodes.len() != rest.len() {
        return Err(format!(
            "the scene's mesh has {} nodes, its model {}",
            mesh.nodes.len(),
            rest.len()
        ));
    }
    let dofs = 3 * inputs.fixed.iter().filter(|&&f| !f).count();
    let (forces, iterations) = if press.radius > 0.0 && !inputs.is_nonlinear() {
        let mut sphere = SweptPress::new(press, statics, surface, normal);
        let forces = press_each_depth(&mut sphere, depths, on_depth)?;
        (forces, sphere.iterations)
    } else if press.radius > 0.0 {
        let mut sphere = SpherePress::new(press, statics, surface, normal);
        let forces = press_each_depth(&mut sphere, depths, on_depth)?;
        (forces, sphere.iterations)
    } else {
        let mut patch = PatchPress::new(press, statics, surface, normal)?;
        let forces = press_each_depth(&mut patch, depths, on_depth)?;
        (forces, patch.iterations)
    };
    Ok((forces, Method::Full { dofs, iterations }))
}

/// Newton's tolerance for the full solves.
const FULL_NEWTON: NewtonOptions = NewtonOptions {
    relative: 1e-9,
    max_iterations: 40,
};

/// A probe held on the full FEM at a depth.
trait FullPress {
    /// Solves the press at `depth` (m) from the last depth solved, keeping that one
    /// where this fails.
    fn solve(&mut self, depth: f64) -> Result<(), String>;
    /// The normal force on the probe at the last depth solved (N).
    fn force(&self) -> f64;
}

/// Presses to each of `depths` (m) in turn, each from the last (continuation in
/// depth): an increment Newton fails on is halved, at most [`MAX_BISECTIONS`] times.
fn press_each_depth(
    press: &mut dyn FullPress,
    depths: &[f64],
    on_depth: &mut dyn FnMut(f64, f64),
) -> Result<Vec<f64>, String> {
    let mut reached = 0.0;
    let mut forces = Vec::with_capacity(depths.len());
    for &depth in depths {
        // Depths still to reach, the last one first to pop.
        let mut targets = vec![depth];
        while let Some(&next) = targets.last() {
            match press.solve(next) {
                Ok(()) => {
                    reached = next;
                    targets.pop();
                }
                Err(e) if targets.len() <= MAX_BISECTIONS => {
                    targets.push(0.5 * (reached + next));
                    tracing::debug!("depth {depth} m: bisecting the increment ({e})");
                }
                Err(e) => {
                    return Err(format!(
                        "the full nonlinear FEM failed pressing to {depth} m, even in {} \
                         steps: {e}",
                        1 << MAX_BISECTIONS
                    ))
                }
            }
        }
        let force = press.force();
        on_depth(depth, force);
        forces.push(force);
    }
    Ok(forces)
}

/// A point probe on the full FEM: its contact patch as the runtime model holds it (its
/// support and normal), its displacement along the normal prescribed by a Lagrange
/// multiplier.
struct PatchPress<'a> {
    statics: &'a NonlinearStatics,
    /// The patch's (DOF, weight) pairs along the press direction.
    coefficients: Vec<(usize, f64)>,
    /// The constraint's value (m) at depth d: `at_surface` − d·`per_depth`.
    at_surface: f64,
    per_depth: f64,
    loads: Vec<Vec3>,
    u: Vec<Vec3>,
    /// λ (N): the force on the tissue along the press direction.
    lambda: f64,
    /// Newton iterations so far.
    iterations: usize,
}

impl<'a> PatchPress<'a> {
    fn new(
        press: &mut Press,
        statics: &'a NonlinearStatics,
        surface: Vec3,
        normal: Vec3,
    ) -> Result<Self, String> {
        // A shallow press tells which material point the probe holds.
        let above = press.at_depth(surface, normal, -2e-3);
        press.step(above, &normal);
        press.ramp(above, press.at_depth(surface, normal, 1e-4), &normal);
        let constraints = press.model.constraints();
        let [contact] = constraints else {
            return Err(format!(
                "a point probe makes one contact patch; this one made {} rows",
                constraints.len()
            ));
        };
        let direction = contact.direction(0);
        let rest = press.model.rest_positions();
        let n = rest.len();
        Ok(Self {
            statics,
            coefficients: contact.support.along(direction).collect(),
            at_surface: direction.dot(&(surface - contact.support.rest_point(rest))),
            per_depth: direction.dot(&normal),
            loads: vec![Vec3::zeros(); n],
            u: vec![Vec3::zeros(); n],
            lambda: 0.0,
            iterations: 0,
        })
    }
}

impl FullPress for PatchPress<'_> {
    fn solve(&mut self, depth: f64) -> Result<(), String> {
        let mut trial = self.u.clone();
        let mut constraint = LinearConstraint {
            coefficients: self.coefficients.clone(),
            value: self.at_surface - depth * self.per_depth,
            multiplier: self.lambda,
        };
        let report = self
            .statics
            .solve_constrained(&mut trial, &self.loads, Some(&mut constraint), &FULL_NEWTON)
            .map_err(|e| e.to_string())?;
        self.iterations += report.steps.len();
        self.u = trial;
        self.lambda = constraint.multiplier;
        Ok(())
    }

    /// λ is the force on the tissue along the outward normal; the probe feels −λ.
    fn force(&self) -> f64 {
        -self.lambda
    }
}

/// A sphere probe on the full FEM: a rigid frictionless sphere whose lowest point is
/// pressed to each depth, every surface node kept outside it.
struct SpherePress<'a> {
    statics: &'a NonlinearStatics,
    /// Where the sphere touches the rest surface, the outward normal there (m).
    surface: Vec3,
    normal: Vec3,
    radius: f64,
    nodes: Vec<usize>,
    loads: Vec<Vec3>,
    u: Vec<Vec3>,
    state: SphereContactState,
    /// Newton iterations so far.
    iterations: usize,
}

impl<'a> SpherePress<'a> {
    fn new(press: &Press, statics: &'a NonlinearStatics, surface: Vec3, normal: Vec3) -> Self {
        let n = press.model.rest_positions().len();
        Self {
            statics,
            surface,
            normal,
            radius: press.radius,
            nodes: press.model.surface_nodes().to_vec(),
            loads: vec![Vec3::zeros(); n],
            u: vec![Vec3::zeros(); n],
            state: SphereContactState::default(),
            iterations: 0,
        }
    }
}

impl FullPress for SpherePress<'_> {
    fn solve(&mut self, depth: f64) -> Result<(), String> {
        let mut trial = self.u.clone();
        let mut state = self.state.clone();
        let sphere = RigidSphere {
            centre: probe_centre(self.surface, self.normal, self.radius, depth),
            radius: self.radius,
        };
        self.statics
            .press_sphere(
                &mut trial,
                &self.loads,
                sphere,
                &self.nodes,
                &mut state,
                &FULL_NEWTON,
            )
            .map_err(|e| e.to_string())?;
        self.iterations += state.iterations;
        if depth > 0.0 && state.rows.len() < 3 {
            tracing::warn!(
                "at depth {depth} m the sphere touches {} surface node(s): the mesh is \
                 coarse for this sphere, and the full FEM keeps only nodes out of it (the \
                 runtime also keeps points of the sphere out of the faces)",
                state.rows.len()
            );
        }
        (self.u, self.state) = (trial, state);
        Ok(())
    }

    /// The tissue pushes the sphere back with the opposite of the force on it (+ 0.0
    /// turns a −0 into 0).
    fn force(&self) -> f64 {
        -self.state.force_on_tissue().dot(&self.normal) + 0.0
    }
}

/// A sphere probe on the full FEM of linear materials with the runtime's contact
/// formulation ([`NonlinearStatics::press_swept_sphere`]): one row on the Hertz pressure
/// profile sampled in the sphere's frame, so `--full` and the runtime differ only in how
/// they solve the tissue.
struct SweptPress<'a> {
    statics: &'a NonlinearStatics,
    surface: Vec3,
    normal: Vec3,
    radius: f64,
    contact: SphereContact,
    bvh: SurfaceBvh,
    /// The rest-surface point pressed (a triangle's nodes, barycentric weights).
    pole: Option<([usize; 3], [f64; 3])>,
    loads: Vec<Vec3>,
    u: Vec<Vec3>,
    state: SweptPressState,
    /// Newton iterations so far.
    iterations: usize,
}

impl<'a> SweptPress<'a> {
    fn new(press: &Press, statics: &'a NonlinearStatics, surface: Vec3, normal: Vec3) -> Self {
        let rest = press.model.rest_positions();
        let bvh = SurfaceBvh::build(press.model.surface_triangles().to_vec(), rest);
        Self {
            statics,
            surface,
            normal,
            radius: press.radius,
            contact: SphereContact::new(press.radius, &bvh, rest),
            pole: bvh
                .closest_point(&surface, f64::INFINITY, rest)
                .map(|c| (bvh.triangles()[c.triangle], c.bary)),
            bvh,
            loads: vec![Vec3::zeros(); rest.len()],
            u: vec![Vec3::zeros(); rest.len()],
            state: SweptPressState::default(),
            iterations: 0,
        }
    }
}

impl FullPress for SweptPress<'_> {
    fn solve(&mut self, depth: f64) -> Result<(), String> {
        let mut trial = self.u.clone();
        let mut state = self.state.clone();
        let pole = self
            .pole
            .ok_or_else(|| "the model has no surface to press".to_string())?;
        let sphere = SweptSphere {
            contact: &mut self.contact,
            bvh: &self.bvh,
            centre: probe_centre(self.surface, self.normal, self.radius, depth),
            entry: self.normal,
            pole,
        };
        self.statics
            .press_swept_sphere(&mut trial, &self.loads, sphere, &mut state, &FULL_NEWTON)
            .map_err(|e| e.to_string())?;
        self.iterations += state.iterations;
        (self.u, self.state) = (trial, state);
        Ok(())
    }

    /// The tissue pushes the sphere back with the opposite of the force on it.
    fn force(&self) -> f64 {
        -self.state.force.dot(&self.normal) + 0.0
    }
}
