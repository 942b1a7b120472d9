//! A tissue model with probes: each probe's god-object on the rest surface says which
//! surface it presses and how deep, its sphere's contact rows join one constraint
//! system that the model solves together each step (contacts of several probes
//! interact through the tissue), friction adds the tangential force, and each probe
//! gets the local force model its haptic thread extrapolates from.

use crate::contact::{
    Contact, ContactPatch, Friction, FrictionPhase, Proxy, SphereContact, SphereRows, StickPoint,
    SurfaceBvh,
};
use crate::fem::Support;
use crate::tissue::{
    DenseConstraintSolver, LocalForceModel, ModelStep, PointConstraint, PointLoad, SurfaceEntry,
    TissueModel,
};
use crate::{Mat3, Vec3};

mod near;

/// Where one probe touches the tissue after a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeContact {
    /// Centre of the contact forces on the deformed surface (m): the rows' material
    /// points (a point probe's: the one under its tip) weighted by their forces.
    pub point: Vec3,
    /// Unit direction of the normal contact force on the probe.
    pub normal: Vec3,
    /// Indentation of the probe (m): how far the sphere's centre (the tip, for a point
    /// probe) lies below where the rest-surface proxy holds it, along the entry normal.
    pub depth: f64,
    /// Contact rows that push (a sphere's one row, a point probe's one).
    pub rows: usize,
    /// The god-object's contact on the rest surface, if the probe is pressed into it.
    pub entry: Option<Contact>,
}

/// One probe's state between steps.
#[derive(Clone, Debug)]
struct ProbeState {
    /// God-object on the rest surface.
    proxy: Proxy,
    rows: SphereRows,
    contact: Option<ProbeContact>,
    stick: StickPoint,
    phase: Option<FrictionPhase>,
    last_force: Vec3,
    /// Centre of the sphere the rows were built for at the last step (m): the probe,
    /// or held back along the entry normal by the force cap.
    centre: Option<Vec3>,
    /// Indentation the rows used at the last step (m), the normal force it gave (N)
    /// and the stiffness along the entry normal (N/m): the force cap's prediction.
    cap_state: (f64, f64, f64),
    /// The god-object's contact on the rest surface at this step.
    entry: Option<Contact>,
    /// The friction force on the tissue (the reaction of the probe's friction, N)
    /// through the contact's footprint, loaded on the next step.
    drag: Option<PointLoad>,
}

impl ProbeState {
    fn new(radius: f64) -> Self {
        Self {
            proxy: Proxy::new(radius),
            rows: SphereRows::default(),
            contact: None,
            stick: StickPoint::default(),
            phase: None,
            last_force: Vec3::zeros(),
            centre: None,
            cap_state: (0.0, 0.0, 0.0),
            entry: None,
            drag: None,
        }
    }

    fn release(&mut self) {
        self.proxy.release();
        self.stick.release();
        self.contact = None;
        self.phase = None;
        self.cap_state = (0.0, 0.0, 0.0);
        self.drag = None;
    }
}

/// A tissue model probed by one or more spherical (or point) probes.
///
/// Each probe's tip is a rigid sphere of the scene's `probe_radius` (0: a point); its
/// contact row ([`SphereContact`]: a Hertz pressure profile sampled in the sphere's
/// frame) joins one constraint system per step, solved as a linear complementarity
/// problem by the backend, so several probes interact through the tissue and a sphere
/// that would pull is released. A point probe presses
/// the material point under it, spread over a contact patch ([`ContactPatch`], radius
/// set by [`ContactPipeline::with_patch_radius`]). Optional Coulomb friction
/// ([`ContactPipeline::with_friction`]) adds a tangential force from a stick point, and its
/// reaction drags the tissue: a load through the contact's footprint (the pushing rows'
/// supports weighted by their forces), applied from the next step (5 ms later: the
/// friction needs the step's normal force).
///
/// The surface BVH keeps its rest-shape boxes, inflated each step by the model's
/// displacement bound; only the triangles the probes' loads can bring within their
/// reach get current positions ([`TissueModel::displacement_bound_beyond`]), the
/// others keep their rest positions, so the per-step cost does not grow with the
/// surface size.
pub struct ContactPipeline<M: TissueModel> {
    model: M,
    bvh: SurfaceBvh,
    sphere: SphereContact,
    patch: ContactPatch,
    probes: Vec<ProbeState>,
    /// Node positions: rest, with the nodes near the probes displaced (m).
    positions: Vec<Vec3>,
    near_triangles: Vec<u32>,
    near_nodes: Vec<usize>,
    /// The last step's near nodes, put back at rest once they leave the near set.
    was_near: Vec<usize>,
    near_displacement: Vec<Vec3>,
    /// Nodes a little beyond the near reach, nearest a probe first: those the contact
    /// may load soon ([`TissueModel::anticipate`]).
    ahead_nodes: Vec<usize>,
    /// Step stamp per node, to list each near node once.
    stamp: Vec<u64>,
    steps: u64,
    /// Consecutive steps whose tissue solve failed (their forces are zero).
    failed_steps: u64,
    constraints: Vec<PointConstraint>,
    forces: Vec<Vec3>,
    /// The probes' friction drags for the step.
    loads: Vec<PointLoad>,
    friction: Friction,
    /// Largest force a contact may push the tissue with (N); `None`: unbounded.
    force_cap: Option<f64>,
    /// Where the probes may be (m): the rest shape's bounding box grown by its size on
    /// every side. Probe positions beyond it are clamped onto it, so no input drives the
    /// model with an unbounded constraint target.
    workspace: (Vec3, Vec3),
    stiffness: StiffnessScratch,
}

/// Scratch for the active set's static stiffness.
struct StiffnessScratch {
    /// Constraint indices of the pushing rows.
    active: Vec<usize>,
    /// Their static compliance, row-major A × A (m/N).
    compliance: Vec<f64>,
    rhs: Vec<f64>,
    solution: Vec<f64>,
    bilateral: Vec<bool>,
    solver: DenseConstraintSolver,
}

impl StiffnessScratch {
    fn new(capacity: usize) -> Self {
        Self {
            active: Vec::with_capacity(capacity),
            compliance: vec![0.0; capacity * capacity],
            rhs: vec![0.0; capacity],
            solution: vec![0.0; capacity],
            bilateral: vec![false; capacity],
            solver: DenseConstraintSolver::new(capacity),
        }
    }
}

impl<M: TissueModel> ContactPipeline<M> {
    /// Wraps `model` with one probe of `probe_radius` (m; 0 for a point probe). Builds
    /// the surface BVH from the rest shape.
    pub fn new(model: M, probe_radius: f64) -> Self {
        let positions = model.rest_positions().to_vec();
        let bvh = SurfaceBvh::build(model.surface_triangles().to_vec(), &positions);
        let n = positions.len();
        let t = model.surface_triangles().len();
        let patch = ContactPatch::new(0.0, &bvh, &positions);
        let sphere = SphereContact::new(probe_radius, &bvh, &positions);
        let workspace = grown_bounds(&positions);
        let capacity = model.constraint_capacity();
        Self {
            probes: vec![ProbeState::new(sphere.radius())],
            sphere,
            bvh,
            patch,
            positions,
            near_triangles: Vec::with_capacity(t),
            near_nodes: Vec::with_capacity(n),
            was_near: Vec::with_capacity(n),
            near_displacement: vec![Vec3::zeros(); n],
            ahead_nodes: Vec::with_capacity(n),
            stamp: vec![0; n],
            steps: 0,
            failed_steps: 0,
            constraints: Vec::with_capacity(capacity),
            forces: vec![Vec3::zeros(); capacity],
            loads: Vec::with_capacity(crate::tissue::MAX_PROBES),
            friction: Friction::NONE,
            force_cap: None,
            workspace,
            stiffness: StiffnessScratch::new(capacity),
            model,
        }
    }

    /// Probes this pipeline steps (1 to [`crate::tissue::MAX_PROBES`]); each has its
    /// own proxy, contact and friction, and all share one constraint system.
    pub fn with_probes(mut self, count: usize) -> Self {
        let count = count.clamp(1, crate::tissue::MAX_PROBES);
        self.probes = (0..count)
            .map(|_| ProbeState::new(self.sphere.radius()))
            .collect();
        self
    }

    /// Number of probes.
    pub fn probe_count(&self) -> usize {
        self.probes.len()
    }

    /// Never pushes the tissue harder than `force` (N) with one probe: a probe deeper
    /// than the indentation that force gives holds its sphere there (the sphere-proxy
    /// stays outside the tissue it cannot dent further). The device cannot render
    /// more; beyond it linear elasticity would drive the surface through the body.
    pub fn set_force_cap(&mut self, force: f64) {
        self.force_cap = (force > 0.0 && force.is_finite()).then_some(force);
    }

    /// The box the probes are kept in (lowest and highest corner, m): the rest shape's
    /// bounding box grown by its size on every side.
    pub fn workspace(&self) -> (Vec3, Vec3) {
        self.workspace
    }

    /// Spreads a point probe's contact over the surface nodes within `radius` (m) of
    /// the contact point ([`ContactPatch`]); 0 keeps the barycentric point of the
    /// touched triangle. A sphere probe has its own footprint and ignores it.
    pub fn with_patch_radius(mut self, radius: f64) -> Self {
        self.patch = ContactPatch::new(radius, &self.bvh, self.model.rest_positions());
        self
    }

    /// Coulomb stick/slip friction between probe and tissue ([`StickPoint`]).
    pub fn with_friction(mut self, friction: Friction) -> Self {
        self.friction = friction;
        self
    }

    /// Changes the probes' tip radius (m; 0 for a point probe) and friction, and
    /// forgets their contacts (the tissue keeps its state): another fingertip.
    pub fn set_probe(&mut self, radius: f64, friction: Friction) {
        self.sphere = SphereContact::new(radius, &self.bvh, self.model.rest_positions());
        self.friction = friction;
        for p in &mut self.probes {
            *p = ProbeState::new(self.sphere.radius());
        }
    }

    /// Contact patch radius of a point probe (m); 0 for the barycentric point.
    pub fn patch_radius(&self) -> f64 {
        self.patch.radius()
    }

    /// Probe tip radius (m); 0 for a point probe.
    pub fn probe_radius(&self) -> f64 {
        self.sphere.radius()
    }

    /// The friction stick point of the first probe (scene frame, m) while it is in
    /// frictional contact.
    pub fn stick_point(&self) -> Option<Vec3> {
        self.probes[0].stick.anchor()
    }

    /// Whether the first probe stuck or slipped at the last step (`None`: no friction
    /// force).
    pub fn friction_phase(&self) -> Option<FrictionPhase> {
        self.probes[0].phase
    }

    /// The tissue model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The tissue model, mutably (e.g. to read displaced render vertices).
    pub fn model_mut(&mut self) -> &mut M {
        &mut self.model
    }

    /// The first probe's contact at the last step, if it was pressing.
    pub fn contact(&self) -> Option<ProbeContact> {
        self.probes[0].contact
    }

    /// Probe `i`'s contact at the last step, if it was pressing.
    pub fn contact_of(&self, i: usize) -> Option<ProbeContact> {
        self.probes.get(i).and_then(|p| p.contact)
    }

    /// The first probe's sphere-proxy after the last step (m): the centre of the
    /// sphere the tissue was pressed by, outside the deformed surface.
    pub fn proxy_position(&self) -> Option<Vec3> {
        self.probes[0].centre
    }

    /// The constraints of the last step (all probes' contact rows, in probe order).
    pub fn constraints(&self) -> &[PointConstraint] {
        &self.constraints
    }

    /// The force each constraint of the last step applied to the tissue (N).
    pub fn constraint_forces(&self) -> &[Vec3] {
        &self.forces[..self.constraints.len()]
    }

    /// The loads the last step put on the tissue besides its constraints: the probes'
    /// friction drags (N, through each contact's footprint).
    pub fn loads(&self) -> &[PointLoad] {
        &self.loads
    }

    /// Puts the tissue back at rest and forgets the contacts and proxies, as if the
    /// pipeline had just been built.
    pub fn reset(&mut self) {
        self.model.reset();
        let radius = self.sphere.radius();
        for p in &mut self.probes {
            *p = ProbeState::new(radius);
        }
        self.positions.copy_from_slice(self.model.rest_positions());
        self.was_near.clear();
        self.constraints.clear();
    }

    /// Steps the tissue with `probes` (m, scene frame; a non-finite position is a
    /// probe that is not there) and writes each probe's local force model into `out`.
    /// Probes beyond [`Self::probe_count`] are ignored.
    pub fn step_probes(&mut self, t: f64, dt: f64, probes: &[Vec3], out: &mut [LocalForceModel]) {
        let n = probes.len().min(out.len()).min(self.probes.len());
        let (lo, hi) = self.workspace;
        let radius = self.sphere.radius();
        // Each probe's god-object on the rest surface, and the sphere centre its rows use.
        self.bvh.set_inflation(0.0);
        for (i, probe) in probes.iter().enumerate().take(n) {
            let state = &mut self.probes[i];
            if !probe.iter().all(|x| x.is_finite()) {
                state.release();
                state.centre = None;
                state.entry = None;
                continue;
            }
            let probe = probe.zip_zip_map(&lo, &hi, |x, lo, hi| x.clamp(lo, hi));
            let entry = state
                .proxy
                .update(&self.bvh, self.model.rest_positions(), &probe);
            state.entry = entry;
            let depth = entry.map_or(0.0, |c| c.depth.max(0.0));
            state.centre = Some(probe);
            if let (Some(cap), Some(c), true) = (self.force_cap, entry, depth > 0.0) {
                // The indentation the cap allows: from the last step's force and active
                // stiffness along the entry normal, or, at a new contact, from the
                // compliance of the entry point alone (exact for a point probe; a
                // sphere's several rows are stiffer, and the next step corrects).
                let (mut used, mut force, mut k) = state.cap_state;
                if k.is_nan() || k <= 0.0 {
                    let rest = self.model.rest_positions();
                    let support = if radius > 0.0 {
                        Support::triangle(self.bvh.triangles()[c.triangle], c.bary)
                    } else {
                        self.patch
                            .support(&self.bvh, rest, c.triangle, &c.bary, &c.normal)
                    };
                    let cn = self
                        .model
                        .point_compliance(&support)
                        .map_or(0.0, |m| c.normal.dot(&(m * c.normal)));
                    (used, force, k) = (0.0, 0.0, if cn > 0.0 { 1.0 / cn } else { 0.0 });
                }
                let mut allowed = used + (cap - force) / k;
                if force > cap {
                    // Past the cap, never below the secant's depth: the tangent of a
                    // stiffening contact would back the sphere out of the tissue.
                    allowed = allowed.max(used * cap / force);
                }
                if k > 0.0 && depth > allowed {
                    state.centre = Some(probe + c.normal * (depth - allowed.max(0.0)));
                }
            }
        }
        self.refresh_near(&probes[..n]);
        self.constraints.clear();
        let capacity = self.model.constraint_capacity();
        for i in 0..n {
            let state = &mut self.probes[i];
            let Some(centre) = state.centre else {
                state.rows = SphereRows::default();
                continue;
            };
            let entry = state.entry;
            let rows = if let (true, Some(c)) = (radius > 0.0, entry) {
                self.sphere.push_rows(
                    &self.bvh,
                    self.model.rest_positions(),
                    &self.positions,
                    (self.bvh.triangles()[c.triangle], c.bary),
                    centre,
                    c.normal,
                    capacity,
                    &mut self.constraints,
                )
            } else if radius > 0.0 {
                // A sphere off the rest surface (beyond the proxy's margin) has no rows.
                SphereRows {
                    first: self.constraints.len(),
                    count: 0,
                }
            } else if let (Some(c), true) = (entry, self.constraints.len() < capacity) {
                let rest = self.model.rest_positions();
                let n = c.normal;
                let support = self.patch.support(&self.bvh, rest, c.triangle, &c.bary, &n);
                self.sphere
                    .push_point(support, n, centre, &mut self.constraints)
            } else {
                SphereRows {
                    first: self.constraints.len(),
                    count: 0,
                }
            };
            self.probes[i].rows = rows;
        }
        self.loads.clear();
        self.loads
            .extend(self.probes[..n].iter().filter_map(|p| p.drag));
        let solved = self
            .model
            .set_loads(&self.loads)
            .and_then(|()| self.model.advance(dt, &self.constraints, &mut self.forces));
        match solved {
            Ok(()) => self.failed_steps = 0,
            Err(e) => {
                // No force from a failed solve; said once, then once a second at 200 Hz.
                if self.failed_steps % 200 == 0 {
                    tracing::warn!(
                        "the tissue step failed ({e}); its contact force is zero until a \
                         step succeeds ({} steps in a row)",
                        self.failed_steps + 1
                    );
                }
                self.failed_steps += 1;
                self.forces.fill(Vec3::zeros());
            }
        }
        self.active_stiffness_setup();
        for i in 0..n {
            out[i] = self.finish_probe(i, t, dt, probes[i]);
        }
    }

    /// Lists the pushing rows and factorises their static compliance (all probes').
    fn active_stiffness_setup(&mut self) {
        let st = &mut self.stiffness;
        st.active.clear();
        for (i, f) in self.forces[..self.constraints.len()].iter().enumerate() {
            if *f != Vec3::zeros() {
                st.active.push(i);
            }
        }
        let a = st.active.len();
        let c = &mut st.compliance[..a * a];
        for (x, &i) in st.active.iter().enumerate() {
            let ci = &self.constraints[i];
            let di = ci.direction(0);
            for (y, &j) in st.active.iter().enumerate().take(x + 1) {
                let cj = &self.constraints[j];
                let block = self
                    .model
                    .compliance_between(&ci.support, &cj.support)
                    .unwrap_or(Mat3::zeros());
                let v = di.dot(&(block * cj.direction(0)));
                c[x * a + y] = v;
                c[y * a + x] = v;
            }
        }
    }

    /// Probe `i`'s force, stiffness, friction and contact after the step.
    fn finish_probe(&mut self, i: usize, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        let rows = self.probes[i].rows;
        let range = rows.first..rows.first + rows.count;
        let mut normal_force = Vec3::zeros();
        let mut centroid = Vec3::zeros();
        let mut weight = 0.0;
        let mut pushing = 0;
        for k in range.clone() {
            let f = self.forces[k];
            if f == Vec3::zeros() {
                continue;
            }
            let support = &self.constraints[k].support;
            let rest = self.model.rest_positions();
            let point = support.rest_point(rest)
                + support
                    .iter()
                    .map(|(v, w)| (self.positions[v] - rest[v]) * w)
                    .sum::<Vec3>();
            normal_force -= f;
            centroid += point * f.norm();
            weight += f.norm();
            pushing += 1;
        }
        let state_entry = self.probes[i].entry;
        if pushing == 0 || weight.is_nan() || weight <= 0.0 {
            let state = &mut self.probes[i];
            state.release();
            state.last_force = Vec3::zeros();
            return LocalForceModel {
                t0: t,
                x0: probe,
                ..LocalForceModel::NONE
            };
        }
        let point = centroid / weight;
        let n = normal_force / normal_force.norm();
        let stiffness_n = self.probe_stiffness(&range);
        let depth = state_entry.map_or(0.0, |c| c.depth.max(0.0));
        let k_entry = state_entry.map_or(0.0, |c| -c.normal.dot(&(stiffness_n * c.normal)));
        let mut f0 = normal_force;
        let mut stiffness = stiffness_n;
        let mut phase = None;
        let mut drag = None;
        if !self.friction.is_none() {
            if let Some(footprint) = self.footprint(&range) {
                // The surface's tangent plane is the rest surface's where the probe
                // entered (its normal N): a sphere's force leans as its rows' normals
                // do, and a tangent plane leaning with it turned a straight press into
                // slip (0.1 N of friction after a slow 2 mm press).
                let surface_n = state_entry.map_or(n, |c| c.normal);
                let c = self
                    .model
                    .compliance_between(&footprint, &footprint)
                    .unwrap_or(Mat3::zeros());
                let cn = surface_n.dot(&(c * surface_n));
                // Tangential contact stiffness of the tissue at the footprint: the
                // inverse of its mean tangential compliance.
                let k_t = 2.0 / (c.trace() - cn);
                // Slip is the probe's motion over the surface: the stick point is where
                // the probe itself touches (the sphere's point along the normal), not
                // the material there, which the contact's own load moves.
                let touching =
                    self.probes[i].centre.unwrap_or(probe) - surface_n * self.sphere.radius();
                let state = &mut self.probes[i];
                if let Some(fr) = state.stick.update(
                    &self.friction,
                    &touching,
                    &surface_n,
                    normal_force.norm(),
                    k_t,
                    cn,
                ) {
                    f0 += fr.force;
                    stiffness += fr.stiffness;
                    phase = Some(fr.phase);
                    drag = Some(PointLoad {
                        support: footprint,
                        force: -fr.force,
                    });
                }
            }
        } else {
            self.probes[i].stick.release();
        }
        let state = &mut self.probes[i];
        let used_depth = match (state.centre, state_entry) {
            (Some(centre), Some(c)) => depth - c.normal.dot(&(centre - probe)),
            _ => depth,
        };
        state.cap_state = (
            used_depth,
            state_entry.map_or(0.0, |c| c.normal.dot(&normal_force)),
            k_entry,
        );
        state.phase = phase;
        state.drag = drag;
        state.contact = Some(ProbeContact {
            point,
            normal: n,
            depth,
            rows: pushing,
            entry: state_entry,
        });
        let mut out = LocalForceModel {
            in_contact: true,
            t0: t,
            x0: probe,
            f0,
            stiffness,
            contact_point: point,
            normal: n,
            entry: state_entry.map(|c| SurfaceEntry {
                proxy: c.proxy,
                normal: c.normal,
            }),
            ..LocalForceModel::NONE
        };
        if dt > 0.0 && dt.is_finite() {
            out.f_dot = (f0 - state.last_force) / dt;
        }
        state.last_force = f0;
        out
    }

    /// ∂f/∂x of the normal contact force on the probe whose rows are `range` (N/m):
    /// −D C⁻¹ Dᵀ over the pushing rows' static compliance C (all probes' rows: the
    /// others held where they are) and this probe's row directions D.
    fn probe_stiffness(&mut self, range: &std::ops::Range<usize>) -> Mat3 {
        let st = &mut self.stiffness;
        let a = st.active.len();
        let mut k = Mat3::zeros();
        if a == 0 {
            return k;
        }
        let c = &st.compliance[..a * a];
        for axis in 0..3 {
            for (x, &row) in st.active.iter().enumerate() {
                st.rhs[x] = if range.contains(&row) {
                    self.constraints[row].direction(0)[axis]
                } else {
                    0.0
                };
            }
            let (rhs, sol, bilateral) = (&st.rhs[..a], &mut st.solution[..a], &st.bilateral[..a]);
            if axis == 0 {
                st.solver.solve(a, c, rhs, bilateral, sol);
            } else {
                st.solver.resolve(a, c, rhs, bilateral, sol);
            }
            for (x, &row) in st.active.iter().enumerate() {
                if range.contains(&row) {
                    k.set_column(
                        axis,
                        &(k.column(axis) - self.constraints[row].direction(0) * sol[x]),
                    );
                }
            }
        }
        // Symmetric by construction up to round-off.
        (k + k.transpose()) * 0.5
    }

    /// The contact's footprint as one material point: the pushing rows' supports
    /// weighted by their forces.
    fn footprint(&self, range: &std::ops::Range<usize>) -> Option<Support> {
        let rest = self.model.rest_positions();
        let mut origin = Vec3::zeros();
        let mut total = 0.0;
        for k in range.clone() {
            let w = self.forces[k].norm();
            origin += self.constraints[k].support.rest_point(rest) * w;
            total += w;
        }
        if total.is_nan() || total <= 0.0 {
            return None;
        }
        Support::patch(
            range.clone().flat_map(|k| {
                let w = self.forces[k].norm();
                self.constraints[k]
                    .support
                    .iter()
                    .map(move |(v, x)| (v, x * w))
            }),
            origin / total,
        )
    }
}

impl<M: TissueModel> ModelStep for ContactPipeline<M> {
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        let mut out = [LocalForceModel::NONE];
        self.step_probes(t, dt, &[probe], &mut out);
        out[0]
    }

    fn step_probes(&mut self, t: f64, dt: f64, probes: &[Vec3], out: &mut [LocalForceModel]) {
        ContactPipeline::step_probes(self, t, dt, probes, out);
    }
}

/// The bounding box of `points` grown by its largest extent on every side (m).
fn grown_bounds(points: &[Vec3]) -> (Vec3, Vec3) {
    let Some(first) = points.first() else {
        return (Vec3::zeros(), Vec3::zeros());
    };
    let (lo, hi) = points
        .iter()
        .fold((*first, *first), |(lo, hi), p| (lo.inf(p), hi.sup(p)));
    let size = (hi - lo).max();
    (lo.add_scalar(-size), hi.add_scalar(size))
}
