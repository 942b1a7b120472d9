//! The god-object proxy of a point (or small sphere) probe.
//!
//! The proxy is the probe as it would be if it could not enter the tissue: each update
//! it moves from where it was toward the probe tip and stops at the first surface it
//! meets; the remaining motion is projected onto the plane(s) it rests on (at most
//! three: face, edge, vertex), and it moves again, until it reaches the probe or cannot
//! move further (Zilles & Salisbury 1995; Ruspini et al. 1997). The projection solves
//! the small problem "closest point to the probe on the feasible side of every active
//! plane", so a plane the probe has moved away from releases (unilateral contact).
//!
//! While in contact the proxy is attached to a material point (triangle + barycentric
//! weights). A sphere probe of radius r is handled by shifting each triangle plane
//! outward by r (exact on faces; at a sharp convex edge the sphere may graze the edge
//! by at most r·(1 − cos(θ/2))). The proxy itself is frictionless: Coulomb friction
//! is a stick point beside it ([`super::friction`]).
//!
//! palpa moves the proxy over the **rest** surface, which does not move: it says which
//! surface the probe was pressed into, along which normal and how deep (the sphere's
//! indentation), however deep the press, while the tissue model finds where the
//! deformed surface meets the probe ([`super::sphere`]). A proxy placed for the first
//! time with the probe already inside the body starts on the surface closest to the
//! probe, so a probe that starts pressed in is in contact at once. A contact stays a
//! *candidate* while the probe is within a small margin outside the surface (the "alarm
//! distance" of constraint-based contact in SOFA).

use crate::Vec3;

use super::bvh::SurfaceBvh;
use super::geometry::{at_barycentric, closest_on_triangle, unit_normal};

/// Move-stop-project iterations per update; each hit adds a plane or leaves an edge,
/// so a handful suffices on any tessellation, and the bound keeps the cost fixed.
const MAX_ITERATIONS: usize = 16;

/// Where the proxy touches the surface, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// Index of the touched triangle in the BVH's triangle list.
    pub triangle: usize,
    /// Barycentric weights of the contact point on that triangle.
    pub bary: [f64; 3],
    /// Contact point on the deformed surface (m).
    pub point: Vec3,
    /// Outward unit normal at the contact point, shaded (interpolated vertex normals,
    /// [`SurfaceBvh::shaded_normal`]) so it is continuous as the contact slides: the
    /// direction of the force on the probe.
    pub normal: Vec3,
    /// Signed penetration (m): distance from the probe to the proxy when the probe is
    /// pressed in;
    /// negative (minus the gap) for a kept candidate contact with the probe just
    /// outside the surface.
    pub depth: f64,
    /// Proxy (god-object) centre (m).
    pub proxy: Vec3,
}

#[derive(Clone, Copy, Debug)]
struct Plane {
    triangle: usize,
    normal: Vec3,
    /// Signed offset: feasible side is normal · x ≥ offset.
    offset: f64,
}

/// God-object proxy state for one probe.
#[derive(Clone, Debug)]
pub struct Proxy {
    radius: f64,
    margin: f64,
    position: Option<Vec3>,
    anchor: Option<(usize, [f64; 3])>,
}

impl Proxy {
    /// A proxy for a probe sphere of `radius` (m; 0 for a point probe) with the
    /// default candidate margin of 0.5 mm. The first update places it at the probe.
    pub fn new(radius: f64) -> Self {
        Self {
            radius: radius.max(0.0),
            margin: 5e-4,
            position: None,
            anchor: None,
        }
    }

    /// Sets how far outside the surface (m) the probe may be while a contact it had
    /// stays a candidate for the model to hold or release.
    pub fn with_margin(mut self, margin: f64) -> Self {
        self.margin = margin.max(0.0);
        self
    }

    /// Drops the contact: the model found that holding it would pull the surface.
    /// The next update treats the probe as free until it penetrates again.
    pub fn release(&mut self) {
        self.anchor = None;
    }

    /// Probe sphere radius (m).
    pub fn radius(&self) -> f64 {
        self.radius
    }

    /// How far (m) outside the surface the probe may be while its contact stays a
    /// candidate ([`Proxy::with_margin`]).
    pub fn margin(&self) -> f64 {
        self.margin
    }

    /// Current proxy centre (m), once placed.
    pub fn position(&self) -> Option<Vec3> {
        self.position
    }

    /// Forgets contact and position (e.g. after the probe was teleported).
    pub fn reset(&mut self) {
        self.position = None;
        self.anchor = None;
    }

    /// Moves the proxy toward `probe` (m) over the surface at `positions` (the
    /// deformed node positions `bvh` was last refitted to) and returns the contact, or
    /// `None` when the probe is free. A non-finite probe is rejected: no
    /// contact, the proxy stays where it was. Allocation-free.
    ///
    /// The proxy moves over whatever surface `positions` describe; palpa runs it on the
    /// rest shape (a static surface: the classic god-object), and the tissue model
    /// decides where the deformed surface meets the probe.
    pub fn update(
        &mut self,
        bvh: &SurfaceBvh,
        positions: &[Vec3],
        probe: &Vec3,
    ) -> Option<Contact> {
        if !probe.iter().all(|x| x.is_finite()) {
            self.anchor = None;
            return None;
        }
        let tol = bvh.tolerance();
        let r = self.radius;
        let mut p = match (self.anchor, self.position) {
            (Some((t, w)), _) => {
                let [a, b, c] = bvh.vertices(t, positions);
                let n = unit_normal(&a, &b, &c).unwrap_or(Vec3::zeros());
                at_barycentric(&w, &a, &b, &c) + n * r
            }
            (None, Some(p)) => p,
            (None, None) => Self::first_place(bvh, positions, probe, r),
        };
        let mut planes = [Plane {
            triangle: usize::MAX,
            normal: Vec3::zeros(),
            offset: 0.0,
        }; 3];
        let mut count = 0;
        for _ in 0..MAX_ITERATIONS {
            let target = constrained_target(probe, &planes[..count], tol);
            if (target - p).norm() <= tol {
                break;
            }
            let mut skip = [usize::MAX; 3];
            for (s, pl) in skip.iter_mut().zip(&planes[..count]) {
                *s = pl.triangle;
            }
            match bvh.segment_cast(&p, &target, r, &skip[..count], positions) {
                Some(hit) => {
                    p += (target - p) * hit.t;
                    // Keep only the planes the proxy still rests on.
                    let mut kept = 0;
                    for i in 0..count {
                        if planes[i].normal.dot(&p) - planes[i].offset <= 10.0 * tol {
                            planes[kept] = planes[i];
                            kept += 1;
                        }
                    }
                    count = kept;
                    if count == 3 {
                        break;
                    }
                    let [a, ..] = bvh.vertices(hit.triangle, positions);
                    planes[count] = Plane {
                        triangle: hit.triangle,
                        normal: hit.normal,
                        offset: hit.normal.dot(&a) + r,
                    };
                    count += 1;
                }
                None => {
                    p = target;
                    // Sliding along a plane past a convex edge leaves the surface: drop
                    // the planes and head for the probe again from here.
                    let supported = bvh.closest_point(&p, r + 10.0 * tol, positions).is_some();
                    if count > 0 && !supported && (probe - p).norm() > tol {
                        count = 0;
                        continue;
                    }
                    break;
                }
            }
        }
        self.position = Some(p);
        let depth = (p - probe).norm();
        if count == 0 || depth <= tol {
            return self.candidate(bvh, positions, probe);
        }
        let Some(on) = bvh.closest_point(&p, r + 10.0 * tol + 1e3 * tol, positions) else {
            self.anchor = None;
            return None;
        };
        self.anchor = Some((on.triangle, on.bary));
        Some(Contact {
            triangle: on.triangle,
            bary: on.bary,
            point: on.point,
            normal: bvh.shaded_normal(on.triangle, &on.bary, positions),
            depth,
            proxy: p,
        })
    }
}

impl Proxy {
    /// Where a proxy placed for the first time starts: at the probe, unless the probe
    /// is inside the body (or closer to its surface than the radius), in which case on
    /// the surface point closest to it, pushed out by the radius, so the first sweep
    /// from there to the probe finds the surface it is pressed into.
    fn first_place(bvh: &SurfaceBvh, positions: &[Vec3], probe: &Vec3, r: f64) -> Vec3 {
        let Some(near) = bvh.closest_point(probe, f64::INFINITY, positions) else {
            return *probe;
        };
        let n = bvh.shaded_normal(near.triangle, &near.bary, positions);
        if n.dot(&(probe - near.point)) >= r {
            return *probe;
        }
        near.point + n * (r + 10.0 * bvh.tolerance())
    }

    /// The kept candidate when the probe left the surface by less than the margin
    /// after a contact, or rests behind the anchored face by less than the sweep
    /// resolves; otherwise no contact.
    fn candidate(&mut self, bvh: &SurfaceBvh, positions: &[Vec3], probe: &Vec3) -> Option<Contact> {
        let (anchored, _) = self.anchor.take()?;
        let near = bvh.closest_point(probe, self.radius + self.margin, positions)?;
        let normal = bvh.shaded_normal(near.triangle, &near.bary, positions);
        let gap = normal.dot(&(probe - near.point)) - self.radius;
        if gap < 0.0
            && near.triangle != anchored
            && !self.reaches(bvh, positions, probe, anchored, &near)
        {
            // Behind another face but not caught by the sweep (a sliver at an edge):
            // no contact rather than a wrong one. Behind the anchored face itself is
            // the settled dent of a held probe: the sweep starts on that face, so it
            // cannot see a penetration of rounding size, and the contact stays for the
            // model to hold or release by the sign of its force. An anchor on an edge
            // or vertex is the same point as its neighbour's closest point.
            return None;
        }
        self.anchor = Some((near.triangle, near.bary));
        Some(Contact {
            triangle: near.triangle,
            bary: near.bary,
            point: near.point,
            normal,
            depth: -gap,
            proxy: *probe,
        })
    }
}

impl Proxy {
    /// Whether the anchored triangle comes as close to `probe` as the closest point
    /// `near` found on another triangle (within the BVH tolerance): the anchor lies on
    /// their shared edge or vertex.
    fn reaches(
        &self,
        bvh: &SurfaceBvh,
        positions: &[Vec3],
        probe: &Vec3,
        anchored: usize,
        near: &super::bvh::Closest,
    ) -> bool {
        let [a, b, c] = bvh.vertices(anchored, positions);
        let w = closest_on_triangle(probe, &a, &b, &c);
        let on_anchored = at_barycentric(&w, &a, &b, &c);
        (on_anchored - probe).norm() <= (near.point - probe).norm() + bvh.tolerance()
    }
}

/// The point closest to `goal` on the feasible side (normal · x ≥ offset) of every
/// plane: the minimum over the faces of the feasible polyhedron, found by projecting
/// onto the intersection of each subset of planes (at most 2³ − 1 subsets) and keeping
/// the closest feasible one. A point more than `tol` behind a plane is infeasible —
/// the same bound the sweep ([`SurfaceBvh::segment_cast`]) uses for "behind" — so the
/// proxy never settles behind a face it hit, where the next sweep, starting behind the
/// face, would not see it and the proxy would tunnel through.
fn constrained_target(goal: &Vec3, planes: &[Plane], tol: f64) -> Vec3 {
    let feasible = |x: &Vec3| planes.iter().all(|pl| pl.normal.dot(x) - pl.offset >= -tol);
    if feasible(goal) {
        return *goal;
    }
    let mut best: Option<(f64, Vec3)> = None;
    for mask in 1u32..(1 << planes.len()) {
        let Some(x) = project_onto_intersection(goal, planes, mask) else {
            continue;
        };
        if !feasible(&x) {
            continue;
        }
        let d = (x - goal).norm_squared();
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, x));
        }
    }
    // Some subset always has a feasible projection when the planes bound a non-empty
    // region containing the proxy; fall back to the most recent plane otherwise.
    best.map_or_else(
        || {
            let pl = planes[planes.len() - 1];
            goal + pl.normal * (pl.offset - pl.normal.dot(goal))
        },
        |(_, x)| x,
    )
}

/// Orthogonal projection of `goal` onto the intersection of the planes selected by
/// `mask` (x = goal + Σ μᵢ nᵢ with Gram system), or `None` if they are (nearly)
/// parallel.
fn project_onto_intersection(goal: &Vec3, planes: &[Plane], mask: u32) -> Option<Vec3> {
    let mut sel = [0usize; 3];
    let mut m = 0;
    for (i, _) in planes.iter().enumerate() {
        if mask & (1 << i) != 0 {
            sel[m] = i;
            m += 1;
        }
    }
    let n = |k: usize| planes[sel[k]].normal;
    let rhs = |k: usize| planes[sel[k]].offset - planes[sel[k]].normal.dot(goal);
    match m {
        1 => Some(goal + n(0) * rhs(0)),
        2 => {
            let g = nalgebra::Matrix2::new(1.0, n(0).dot(&n(1)), n(0).dot(&n(1)), 1.0);
            if g.determinant() < 1e-10 {
                return None;
            }
            let mu = g.try_inverse()? * nalgebra::Vector2::new(rhs(0), rhs(1));
            Some(goal + n(0) * mu[0] + n(1) * mu[1])
        }
        3 => {
            let nm = nalgebra::Matrix3::from_columns(&[n(0), n(1), n(2)]);
            let g = nm.transpose() * nm;
            if g.determinant() < 1e-10 {
                return None;
            }
            let mu = g.try_inverse()? * Vec3::new(rhs(0), rhs(1), rhs(2));
            Some(goal + nm * mu)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::generate::box_mesh;

    /// A probe pressing straight down whose sample lands just behind the top face —
    /// deeper than the BVH tolerance, but by no more than ten of them — must be in
    /// contact there and stay in contact as it goes deeper, with the proxy on the
    /// face. (A replayed trajectory interpolated at a real-time tick woken 20–200 ns
    /// late lands exactly there; the proxy used to settle behind the face with no
    /// contact and then tunnel through the tissue for good.)
    #[test]
    fn a_probe_landing_a_few_tolerances_behind_the_face_is_in_contact() {
        let size = Vec3::new(0.1, 0.1, 0.04);
        let mesh = box_mesh(size, [5, 5, 2]).unwrap();
        let bvh = SurfaceBvh::build(mesh.boundary().triangles, &mesh.nodes);
        let tol = bvh.tolerance();
        let (x, y, top) = (0.062, 0.056, size.z);
        for landing in [1.5, 2.0, 5.0, 9.0, 9.9] {
            let landing = landing * tol;
            let mut proxy = Proxy::new(0.0);
            assert_eq!(
                proxy.update(&bvh, &mesh.nodes, &Vec3::new(x, y, top + 4e-5)),
                None
            );
            for depth in [landing, landing + 4e-5, landing + 8e-5, 1e-3] {
                let probe = Vec3::new(x, y, top - depth);
                let c = proxy
                    .update(&bvh, &mesh.nodes, &probe)
                    .unwrap_or_else(|| {
                        panic!("no contact at depth {depth:e} m (landed {landing:e} m deep, tolerance {tol:e} m)")
                    });
                assert!(
                    (c.depth - depth).abs() <= tol,
                    "depth {} for {depth} (landed {landing:e} m deep)",
                    c.depth
                );
                assert!(
                    (c.proxy - Vec3::new(x, y, top)).norm() <= tol,
                    "{:?}",
                    c.proxy
                );
                assert_eq!(c.normal, Vec3::z());
            }
        }
    }
}
