//! A tissue model with a probe: the proxy finds the contact on the deformed surface,
//! the contact patch spreads it over the tip's footprint, the model enforces it for one
//! step, friction adds the tangential force, and the result becomes the local force
//! model the haptic thread extrapolates from.

use crate::contact::{
    geometry::at_barycentric, Contact, ContactPatch, Friction, FrictionPhase, Proxy, StickPoint,
    SurfaceBvh,
};
use crate::fem::Support;
use crate::model::{LocalForceModel, ModelStep, PointConstraint, TissueModel};
use crate::{Mat3, Vec3};

/// A tissue model probed by one point (or sphere) probe with a god-object proxy.
///
/// The contact constraint acts on a patch of surface nodes around the contact point
/// ([`ContactPatch`], radius set by [`Simulation::with_patch_radius`]; 0, the default,
/// is the barycentric point of the touched triangle), and optional Coulomb friction
/// ([`Simulation::with_friction`]) adds a tangential force from a stick point.
///
/// The surface BVH keeps its rest-shape boxes, inflated each step by the model's
/// displacement bound; only the triangles within reach of the proxy's move get current
/// positions, so the per-step cost does not grow with the surface size (the full
/// displaced surface is for the 30 Hz visual frame: [`TissueModel::displacements`]).
pub struct Simulation<M: TissueModel> {
    model: M,
    bvh: SurfaceBvh,
    proxy: Proxy,
    /// Node positions: rest, with the nodes near the probe displaced (m).
    positions: Vec<Vec3>,
    near_triangles: Vec<u32>,
    near_nodes: Vec<usize>,
    near_displacement: Vec<Vec3>,
    /// Step stamp per node, to list each near node once.
    stamp: Vec<u64>,
    steps: u64,
    constraints: Vec<PointConstraint>,
    forces: Vec<Vec3>,
    contact: Option<Contact>,
    last_force: Vec3,
    patch: ContactPatch,
    /// Outward reference normal and tip target of the contact held at the last step.
    held: Option<(Vec3, Vec3)>,
    friction: Friction,
    stick: StickPoint,
    phase: Option<FrictionPhase>,
    /// Largest force the contact may push the tissue with (N); `None`: unbounded.
    force_cap: Option<f64>,
    /// Where the probe may be (m): the rest shape's bounding box grown by its size on
    /// every side. Probe positions beyond it are clamped onto it, so no input drives the
    /// model with an unbounded constraint target.
    workspace: (Vec3, Vec3),
}

impl<M: TissueModel> Simulation<M> {
    /// Wraps `model` with a probe of `probe_radius` (m; 0 for a point probe). Builds
    /// the surface BVH from the rest shape.
    pub fn new(model: M, probe_radius: f64) -> Self {
        let positions = model.rest_positions().to_vec();
        let bvh = SurfaceBvh::build(model.surface_triangles().to_vec(), &positions);
        let n = positions.len();
        let t = model.surface_triangles().len();
        let patch = ContactPatch::new(0.0, &bvh, &positions);
        let workspace = grown_bounds(&positions);
        Self {
            model,
            bvh,
            proxy: Proxy::new(probe_radius),
            positions,
            near_triangles: Vec::with_capacity(t),
            near_nodes: Vec::with_capacity(n),
            near_displacement: vec![Vec3::zeros(); n],
            stamp: vec![0; n],
            steps: 0,
            constraints: Vec::with_capacity(1),
            forces: vec![Vec3::zeros(); 1],
            contact: None,
            last_force: Vec3::zeros(),
            patch,
            held: None,
            friction: Friction::NONE,
            stick: StickPoint::default(),
            phase: None,
            force_cap: None,
            workspace,
        }
    }

    /// Never pushes the tissue harder than `force` (N): a probe deeper than the
    /// indentation that force gives (at the contact's static compliance) holds the
    /// tissue there. The device cannot render more; beyond it linear elasticity would
    /// drive the surface through the body (centimetres past a fixed base in a deep
    /// press), and the proxy could end up on the far side.
    pub fn set_force_cap(&mut self, force: f64) {
        self.force_cap = (force > 0.0 && force.is_finite()).then_some(force);
    }

    /// The box the probe is kept in (lowest and highest corner, m): the rest shape's
    /// bounding box grown by its size on every side.
    pub fn workspace(&self) -> (Vec3, Vec3) {
        self.workspace
    }

    /// Spreads the contact over the surface nodes within `radius` (m) of the contact
    /// point ([`ContactPatch`]); 0 keeps the barycentric point of the touched triangle.
    pub fn with_patch_radius(mut self, radius: f64) -> Self {
        self.patch = ContactPatch::new(radius, &self.bvh, self.model.rest_positions());
        self
    }

    /// Coulomb stick/slip friction between probe and tissue ([`StickPoint`]).
    pub fn with_friction(mut self, friction: Friction) -> Self {
        self.friction = friction;
        self
    }

    /// Contact patch radius (m); 0 for the barycentric point.
    pub fn patch_radius(&self) -> f64 {
        self.patch.radius()
    }

    /// The friction stick point (scene frame, m) while the probe is in frictional
    /// contact.
    pub fn stick_point(&self) -> Option<Vec3> {
        self.stick.anchor()
    }

    /// Whether the probe stuck or slipped at the last step (`None`: no friction force).
    pub fn friction_phase(&self) -> Option<FrictionPhase> {
        self.phase
    }

    /// The tissue model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The tissue model, mutably (e.g. to read displaced render vertices).
    pub fn model_mut(&mut self) -> &mut M {
        &mut self.model
    }

    /// The contact found at the last step, if the probe was pressing.
    pub fn contact(&self) -> Option<Contact> {
        self.contact
    }

    /// The proxy (god-object) position after the last step (m).
    pub fn proxy_position(&self) -> Option<Vec3> {
        self.proxy.position()
    }

    /// Puts the tissue back at rest and forgets the contact and the proxy, as if the
    /// simulation had just been built.
    pub fn reset(&mut self) {
        self.model.reset();
        self.proxy.reset();
        self.positions.copy_from_slice(self.model.rest_positions());
        self.contact = None;
        self.last_force = Vec3::zeros();
        self.held = None;
        self.stick.release();
        self.phase = None;
    }

    /// Brings the positions of the nodes within reach of the proxy's next move up to
    /// date, and inflates the rest-shape boxes by the model's displacement bound.
    fn refresh_near(&mut self, probe: &Vec3) {
        let bound = self.model.displacement_bound();
        self.bvh.set_inflation(bound);
        let center = self.proxy.position().unwrap_or(*probe);
        let reach = if probe.iter().all(|x| x.is_finite()) {
            (probe - center).norm()
        } else {
            0.0
        };
        // The anchored contact point moved by at most 2·bound since the last step.
        let radius = reach + self.proxy.margin() + self.proxy.radius() + 2.0 * bound;
        self.near_triangles.clear();
        self.bvh
            .triangles_near(&center, radius, &mut self.near_triangles);
        self.steps += 1;
        self.near_nodes.clear();
        for &t in &self.near_triangles {
            for v in self.bvh.triangles()[t as usize] {
                if self.stamp[v] != self.steps {
                    self.stamp[v] = self.steps;
                    self.near_nodes.push(v);
                }
            }
        }
        let m = self.near_nodes.len();
        self.model
            .displacements(&self.near_nodes, &mut self.near_displacement[..m]);
        let rest = self.model.rest_positions();
        for (&v, u) in self.near_nodes.iter().zip(&self.near_displacement[..m]) {
            self.positions[v] = rest[v] + u;
        }
    }
}

impl<M: TissueModel> ModelStep for Simulation<M> {
    fn step(&mut self, t: f64, dt: f64, probe: Vec3) -> LocalForceModel {
        if !probe.iter().all(|x| x.is_finite()) {
            // No probe: the contact lets go and the tissue moves freely for the step.
            self.proxy.release();
            self.stick.release();
            self.contact = None;
            self.held = None;
            self.phase = None;
            self.constraints.clear();
            let _ = self.model.advance(dt, &self.constraints, &mut self.forces);
            self.last_force = Vec3::zeros();
            return LocalForceModel {
                t0: t,
                ..LocalForceModel::NONE
            };
        }
        let (lo, hi) = self.workspace;
        let probe = probe.zip_zip_map(&lo, &hi, |x, lo, hi| x.clamp(lo, hi));
        self.refresh_near(&probe);
        if let (Some(c), Some((n, target)), true) =
            (self.contact, self.held, self.patch.radius() > 0.0)
        {
            // A patch holds the footprint's average at the tip; the contacted point
            // itself sits this much deeper along the constraint normal (centimetres in
            // a deep press), and the proxy follows the probe shifted by it. Only the
            // normal part: the tangential drift of the material is what lets the
            // contact slide back under the tip.
            let [a, b, p] = self.bvh.vertices(c.triangle, &self.positions);
            let point = at_barycentric(&c.bary, &a, &b, &p);
            self.proxy.set_hold(n * n.dot(&(point - target)));
        }
        let contact = self.proxy.update(&self.bvh, &self.positions, &probe);
        // The constraint acts along the reference surface's (shaded) normal at the
        // contacted material point, not the deformed one the proxy slides on: linear
        // elasticity measures the gap along the undeformed normal, and the deformed
        // normal is ill-defined at the apex of the probe's own dent (it flipped from face
        // to face every step when the probe rested on a mesh vertex).
        let normal = contact.map(|c| {
            self.bvh
                .shaded_normal(c.triangle, &c.bary, self.model.rest_positions())
        });
        self.constraints.clear();
        let mut support = None;
        // The contact's static compliance, once asked for this step (K⁻¹ does not change
        // with the step, so the force cap and the local stiffness share it).
        let mut compliance = None;
        self.held = None;
        if let (Some(c), Some(n)) = (contact, normal) {
            let s = self.patch.support(
                &self.bvh,
                self.model.rest_positions(),
                c.triangle,
                &c.bary,
                &n,
            );
            let tip = probe - n * self.proxy.radius();
            let target = match self.force_cap {
                Some(cap) => {
                    let c = self.model.point_compliance(&s).ok();
                    compliance = c;
                    c.map_or(tip, |c| self.capped_target(cap, &c, &s, &n, tip))
                }
                None => tip,
            };
            self.constraints
                .push(PointConstraint::contact_on(s, n, target));
            support = Some(s);
            self.held = Some((n, tip));
        }
        let ok = self
            .model
            .advance(dt, &self.constraints, &mut self.forces)
            .is_ok();
        let f_tissue = if ok && contact.is_some() {
            self.forces[0]
        } else {
            Vec3::zeros()
        };
        let in_contact = contact.is_some() && f_tissue != Vec3::zeros();
        self.contact = if in_contact { contact } else { None };
        self.phase = None;
        if !in_contact {
            self.proxy.release();
            self.stick.release();
            self.held = None;
        }
        let mut f0 = -f_tissue;
        let mut stiffness = Mat3::zeros();
        let mut local = None;
        if let (true, Some(c), Some(n), Some(s)) = (in_contact, contact, normal, support) {
            let compliance = match compliance {
                Some(c) => c,
                None => self.model.point_compliance(&s).unwrap_or(Mat3::zeros()),
            };
            let cn = n.dot(&(compliance * n));
            if cn > 0.0 {
                stiffness = -(n * n.transpose()) / cn;
            }
            if !self.friction.is_none() {
                // Tangential contact stiffness of the tissue at the patch: the inverse
                // of its mean tangential compliance.
                let k_t = 2.0 / (compliance.trace() - cn);
                if let Some(fr) =
                    self.stick
                        .update(&self.friction, &c.point, &n, f0.dot(&n), k_t, cn)
                {
                    f0 += fr.force;
                    stiffness += fr.stiffness;
                    self.phase = Some(fr.phase);
                }
            }
            local = Some((c.point, n));
        }
        let mut out = LocalForceModel {
            t0: t,
            x0: probe,
            f0,
            ..LocalForceModel::NONE
        };
        if dt > 0.0 && dt.is_finite() {
            out.f_dot = (f0 - self.last_force) / dt;
        }
        self.last_force = f0;
        if let Some((point, n)) = local {
            out.in_contact = true;
            out.contact_point = point;
            out.normal = n;
            out.stiffness = stiffness;
        }
        out
    }
}

impl<M: TissueModel> Simulation<M> {
    /// The constraint target for a tip at `tip` (m) on `support` along `n`, whose static
    /// compliance is `compliance` (m/N): the tip itself, or, past the force cap `cap`
    /// (N), the indentation the capped force gives.
    fn capped_target(
        &self,
        cap: f64,
        compliance: &Mat3,
        support: &Support,
        n: &Vec3,
        tip: Vec3,
    ) -> Vec3 {
        let cn = n.dot(&(compliance * n));
        let depth = n.dot(&(support.rest_point(self.model.rest_positions()) - tip));
        let deepest = cap * cn;
        if cn > 0.0 && depth > deepest {
            tip + n * (depth - deepest)
        } else {
            tip
        }
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
