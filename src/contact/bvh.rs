//! Axis-aligned bounding-volume hierarchy over the surface triangles.
//!
//! The topology is built once from the rest shape (median split on the longest axis of
//! the centroids); as the tissue deforms, [`SurfaceBvh::refit`] recomputes every box
//! bottom-up from the current node positions without changing the tree (van den
//! Bergen's scheme, as in the modal paper §3.4.2). Deformation in palpation is small, so
//! the tree stays well shaped. Alternatively the boxes can be kept at rest and
//! inflated by a bound on the displacement ([`SurfaceBvh::set_inflation`]); the
//! runtime does that, so each step only the triangles near the probe need current
//! positions. Queries walk the tree with a fixed-size stack: no allocation on the model
//! thread.
//!
//! Hand-written rather than taken from parry: parry's BVH stores its own copy of the
//! triangles and has no refit from an external position array shared with the model.

use crate::Vec3;

use super::geometry::{
    at_barycentric, closest_on_triangle, plane_barycentric, plane_entry, unit_normal,
};

/// Triangles per leaf.
const LEAF_SIZE: usize = 4;
/// Traversal stack depth; a median-split tree over 2⁶⁰ triangles is shallower.
const STACK: usize = 64;

/// An axis-aligned box (m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub lo: Vec3,
    /// Upper corner.
    pub hi: Vec3,
}

impl Aabb {
    const EMPTY: Self = Self {
        lo: Vec3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY),
        hi: Vec3::new(f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY),
    };

    fn grow(&mut self, p: &Vec3) {
        self.lo = self.lo.inf(p);
        self.hi = self.hi.sup(p);
    }

    fn merge(&self, o: &Self) -> Self {
        Self {
            lo: self.lo.inf(&o.lo),
            hi: self.hi.sup(&o.hi),
        }
    }

    /// Squared distance from `p` to the box (0 inside).
    fn distance_squared(&self, p: &Vec3) -> f64 {
        let d = (self.lo - p).sup(&(p - self.hi)).sup(&Vec3::zeros());
        d.norm_squared()
    }

    /// Whether the segment `a → b`, with the box grown by `margin`, can meet the box
    /// (slab test).
    fn hits_segment(&self, a: &Vec3, b: &Vec3, margin: f64) -> bool {
        let d = b - a;
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for k in 0..3 {
            let lo = self.lo[k] - margin;
            let hi = self.hi[k] + margin;
            if d[k].abs() < 1e-300 {
                if a[k] < lo || a[k] > hi {
                    return false;
                }
            } else {
                let inv = 1.0 / d[k];
                let (mut ta, mut tb) = ((lo - a[k]) * inv, (hi - a[k]) * inv);
                if ta > tb {
                    std::mem::swap(&mut ta, &mut tb);
                }
                t0 = t0.max(ta);
                t1 = t1.min(tb);
                if t0 > t1 {
                    return false;
                }
            }
        }
        true
    }
}

#[derive(Clone, Copy, Debug)]
struct Node {
    aabb: Aabb,
    /// Leaf: first index into `order`; inner: index of the left child (right = left + 1).
    first: u32,
    /// Number of triangles for a leaf, 0 for an inner node.
    count: u32,
}

/// The closest surface point to a query point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Closest {
    /// Index of the triangle in the surface triangle list.
    pub triangle: usize,
    /// Barycentric weights of the point on that triangle.
    pub bary: [f64; 3],
    /// The point (m).
    pub point: Vec3,
    /// Distance from the query point (m).
    pub distance: f64,
}

/// The first front-face crossing of a moving point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentHit {
    /// Index of the triangle in the surface triangle list.
    pub triangle: usize,
    /// Fraction of the segment travelled before the crossing, in [0, 1].
    pub t: f64,
    /// Outward unit normal of the triangle.
    pub normal: Vec3,
}

/// BVH over surface triangles whose vertices are mesh nodes (indices into a position
/// array the caller owns and updates).
#[derive(Clone, Debug)]
pub struct SurfaceBvh {
    triangles: Vec<[usize; 3]>,
    nodes: Vec<Node>,
    order: Vec<u32>,
    /// Length tolerance for "on the plane" and "inside the triangle" (m), 1e-9 of the
    /// rest bounding-box diagonal.
    tol: f64,
    /// Every box is grown by this much at query time (m): a bound on how far the
    /// surface moved since the last refit.
    inflation: f64,
    /// Triangles around each mesh node (CSR: `around[node_start[v]..node_start[v+1]]`).
    node_start: Vec<u32>,
    around: Vec<u32>,
}

impl SurfaceBvh {
    /// Builds the tree over `triangles` (outward, counter-clockwise) at `positions`.
    /// Panics only if a triangle names a node outside `positions` (a caller bug: the
    /// triangles come from the same validated mesh).
    pub fn build(triangles: Vec<[usize; 3]>, positions: &[Vec3]) -> Self {
        let mut order: Vec<u32> = (0..triangles.len() as u32).collect();
        let centroids: Vec<Vec3> = triangles
            .iter()
            .map(|t| (positions[t[0]] + positions[t[1]] + positions[t[2]]) / 3.0)
            .collect();
        let mut all = Aabb::EMPTY;
        for t in &triangles {
            for &v in t {
                all.grow(&positions[v]);
            }
        }
        let diag = if triangles.is_empty() {
            1.0
        } else {
            (all.hi - all.lo).norm()
        };
        let mut nodes = Vec::with_capacity(2 * triangles.len() / LEAF_SIZE + 1);
        nodes.push(Node {
            aabb: Aabb::EMPTY,
            first: 0,
            count: 0,
        });
        if !triangles.is_empty() {
            split(&mut nodes, 0, &mut order, 0, &centroids);
        }
        let n_nodes = triangles.iter().flatten().max().map_or(0, |&v| v + 1);
        let mut node_start = vec![0u32; n_nodes + 1];
        for t in &triangles {
            for &v in t {
                node_start[v + 1] += 1;
            }
        }
        for v in 0..n_nodes {
            node_start[v + 1] += node_start[v];
        }
        let mut fill = node_start.clone();
        let mut around = vec![0u32; 3 * triangles.len()];
        for (i, t) in triangles.iter().enumerate() {
            for &v in t {
                around[fill[v] as usize] = i as u32;
                fill[v] += 1;
            }
        }
        let mut bvh = Self {
            triangles,
            nodes,
            order,
            tol: 1e-9 * diag.max(f64::MIN_POSITIVE),
            inflation: 0.0,
            node_start,
            around,
        };
        bvh.refit(positions);
        bvh
    }

    /// The surface triangles, in the order contact results index them.
    pub fn triangles(&self) -> &[[usize; 3]] {
        &self.triangles
    }

    /// Length tolerance used for on-surface decisions (m).
    pub fn tolerance(&self) -> f64 {
        self.tol
    }

    /// Recomputes every box from the current `positions` (same node indexing as at
    /// build), keeping the topology. Children always follow their parent in `nodes`,
    /// so one reverse pass suffices.
    pub fn refit(&mut self, positions: &[Vec3]) {
        self.inflation = 0.0;
        for i in (0..self.nodes.len()).rev() {
            let node = self.nodes[i];
            let aabb = if node.count > 0 {
                let mut b = Aabb::EMPTY;
                for &t in &self.order[node.first as usize..(node.first + node.count) as usize] {
                    for &v in &self.triangles[t as usize] {
                        b.grow(&positions[v]);
                    }
                }
                b
            } else if self.triangles.is_empty() {
                Aabb::EMPTY
            } else {
                let l = node.first as usize;
                self.nodes[l].aabb.merge(&self.nodes[l + 1].aabb)
            };
            self.nodes[i].aabb = aabb;
        }
    }

    /// Grows every box by `bound` (m) in queries, for a surface that moved by at most
    /// that much since the boxes were last fitted (0 after a [`Self::refit`]).
    pub fn set_inflation(&mut self, bound: f64) {
        self.inflation = if bound.is_finite() {
            bound.max(0.0)
        } else {
            f64::INFINITY
        };
    }

    /// Appends to `out` every triangle whose (inflated) box lies within `radius` (m)
    /// of `p`: all triangles a query around `p` of that reach can touch.
    pub fn triangles_near(&self, p: &Vec3, radius: f64, out: &mut Vec<u32>) {
        self.triangles_within(p, radius + self.inflation, out);
    }

    /// Appends to `out` every triangle whose rest (fitted, not inflated) box lies
    /// within `reach` (m) of `p`.
    pub fn triangles_within(&self, p: &Vec3, reach: f64, out: &mut Vec<u32>) {
        if self.triangles.is_empty() {
            return;
        }
        let mut stack = [0u32; STACK];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let node = self.nodes[stack[top] as usize];
            if node.aabb.distance_squared(p) > reach * reach {
                continue;
            }
            if node.count > 0 {
                out.extend_from_slice(
                    &self.order[node.first as usize..(node.first + node.count) as usize],
                );
            } else if top + 2 <= STACK {
                stack[top] = node.first;
                stack[top + 1] = node.first + 1;
                top += 2;
            }
        }
    }

    /// Vertex positions of triangle `t`.
    pub fn vertices(&self, t: usize, positions: &[Vec3]) -> [Vec3; 3] {
        self.triangles[t].map(|v| positions[v])
    }

    /// Shaded (Phong) normal at barycentric point `bary` of triangle `t`: the
    /// interpolated area-weighted vertex normals, normalised. Continuous across
    /// triangle edges, so a force along it does not jump as the contact slides from
    /// one flat triangle to the next (force shading, Morgenbesser & Srinivasan 1996).
    /// Falls back to the face normal if the interpolation vanishes.
    pub fn shaded_normal(&self, t: usize, bary: &[f64; 3], positions: &[Vec3]) -> Vec3 {
        let mut n = Vec3::zeros();
        for (&v, &w) in self.triangles[t].iter().zip(bary) {
            let mut nv = Vec3::zeros();
            for &f in &self.around[self.node_start[v] as usize..self.node_start[v + 1] as usize] {
                let [a, b, c] = self.vertices(f as usize, positions);
                nv += (b - a).cross(&(c - a));
            }
            let len = nv.norm();
            if len > 0.0 {
                n += nv * (w / len);
            }
        }
        let len = n.norm();
        if len > 0.0 && len.is_finite() {
            n / len
        } else {
            let [a, b, c] = self.vertices(t, positions);
            unit_normal(&a, &b, &c).unwrap_or(Vec3::z())
        }
    }

    /// Closest surface point to `p` within `max_distance` (m), or `None`.
    pub fn closest_point(
        &self,
        p: &Vec3,
        max_distance: f64,
        positions: &[Vec3],
    ) -> Option<Closest> {
        if self.triangles.is_empty() || !p.iter().all(|x| x.is_finite()) {
            return None;
        }
        let mut best: Option<Closest> = None;
        let mut best_d2 = max_distance * max_distance;
        let mut stack = [0u32; STACK];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let node = self.nodes[stack[top] as usize];
            let gap = node.aabb.distance_squared(p).sqrt() - self.inflation;
            if gap > 0.0 && gap * gap > best_d2 {
                continue;
            }
            if node.count > 0 {
                for &t in &self.order[node.first as usize..(node.first + node.count) as usize] {
                    let [a, b, c] = self.vertices(t as usize, positions);
                    let w = closest_on_triangle(p, &a, &b, &c);
                    let q = at_barycentric(&w, &a, &b, &c);
                    let d2 = (q - p).norm_squared();
                    if d2 <= best_d2 {
                        best_d2 = d2;
                        best = Some(Closest {
                            triangle: t as usize,
                            bary: w,
                            point: q,
                            distance: d2.sqrt(),
                        });
                    }
                }
            } else if top + 2 <= STACK {
                stack[top] = node.first;
                stack[top + 1] = node.first + 1;
                top += 2;
            }
        }
        best
    }

    /// First triangle whose front face (shifted outward by `offset`, m, for a sphere
    /// probe) the segment `from → to` enters, skipping triangles in `skip`. A crossing
    /// within the tolerance of an edge or vertex counts, so a point cannot slip between
    /// two triangles.
    pub fn segment_cast(
        &self,
        from: &Vec3,
        to: &Vec3,
        offset: f64,
        skip: &[usize],
        positions: &[Vec3],
    ) -> Option<SegmentHit> {
        if self.triangles.is_empty() {
            return None;
        }
        let mut best: Option<SegmentHit> = None;
        let mut stack = [0u32; STACK];
        let mut top = 1;
        let margin = offset + self.tol + self.inflation;
        while top > 0 {
            top -= 1;
            let node = self.nodes[stack[top] as usize];
            let end = best.map_or(*to, |h| from + (to - from) * h.t);
            if !node.aabb.hits_segment(from, &end, margin) {
                continue;
            }
            if node.count > 0 {
                for &t in &self.order[node.first as usize..(node.first + node.count) as usize] {
                    let t = t as usize;
                    if skip.contains(&t) {
                        continue;
                    }
                    let [a, b, c] = self.vertices(t, positions);
                    let Some(n) = unit_normal(&a, &b, &c) else {
                        continue;
                    };
                    let Some(s) = plane_entry(from, to, &n, &a, offset, self.tol) else {
                        continue;
                    };
                    if best.is_some_and(|h| h.t <= s) {
                        continue;
                    }
                    let x = from + (to - from) * s - n * offset;
                    let Some(w) = plane_barycentric(&x, &a, &b, &c) else {
                        continue;
                    };
                    let edge_tol =
                        self.tol / (b - a).norm().max((c - a).norm()).max(f64::MIN_POSITIVE);
                    if w.iter().all(|&wi| wi >= -edge_tol) {
                        best = Some(SegmentHit {
                            triangle: t,
                            t: s,
                            normal: n,
                        });
                    }
                }
            } else if top + 2 <= STACK {
                stack[top] = node.first;
                stack[top + 1] = node.first + 1;
                top += 2;
            }
        }
        best
    }
}

/// Splits `order[lo..]` under node `at` recursively; children are pushed after their
/// parent.
fn split(nodes: &mut Vec<Node>, at: usize, order: &mut [u32], offset: usize, centroids: &[Vec3]) {
    if order.len() <= LEAF_SIZE {
        nodes[at] = Node {
            aabb: Aabb::EMPTY,
            first: offset as u32,
            count: order.len() as u32,
        };
        return;
    }
    let mut b = Aabb::EMPTY;
    for &t in order.iter() {
        b.grow(&centroids[t as usize]);
    }
    let axis = (b.hi - b.lo).imax();
    let mid = order.len() / 2;
    order.select_nth_unstable_by(mid, |&x, &y| {
        centroids[x as usize][axis].total_cmp(&centroids[y as usize][axis])
    });
    let left = nodes.len();
    nodes.push(Node {
        aabb: Aabb::EMPTY,
        first: 0,
        count: 0,
    });
    nodes.push(Node {
        aabb: Aabb::EMPTY,
        first: 0,
        count: 0,
    });
    nodes[at] = Node {
        aabb: Aabb::EMPTY,
        first: left as u32,
        count: 0,
    };
    let (l, r) = order.split_at_mut(mid);
    split(nodes, left, l, offset, centroids);
    split(nodes, left + 1, r, offset + mid, centroids);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::generate::box_mesh;

    #[test]
    fn closest_point_matches_brute_force_after_refit() {
        let mesh = box_mesh(Vec3::new(0.1, 0.08, 0.05), [5, 4, 3]).unwrap();
        let surface = mesh.boundary();
        let mut positions = mesh.nodes.clone();
        let mut bvh = SurfaceBvh::build(surface.triangles.clone(), &positions);
        for p in positions.iter_mut() {
            p.z += 0.01 * (20.0 * p.x).sin() * p.z;
        }
        bvh.refit(&positions);
        for i in 0..200 {
            let f = i as f64;
            let q = Vec3::new(
                0.13 * (f * 0.37).sin() + 0.05,
                0.1 * (f * 0.71).cos() + 0.04,
                0.08 * (f * 1.3).sin() + 0.03,
            );
            let got = bvh.closest_point(&q, f64::INFINITY, &positions).unwrap();
            let brute = (0..surface.triangles.len())
                .map(|t| {
                    let [a, b, c] = bvh.vertices(t, &positions);
                    (at_barycentric(&closest_on_triangle(&q, &a, &b, &c), &a, &b, &c) - q).norm()
                })
                .fold(f64::INFINITY, f64::min);
            assert!(
                (got.distance - brute).abs() < 1e-12,
                "{q:?}: {} vs {brute}",
                got.distance
            );
        }
    }

    #[test]
    fn inflated_rest_boxes_answer_like_a_refit() {
        let mesh = box_mesh(Vec3::new(0.1, 0.08, 0.05), [5, 4, 3]).unwrap();
        let surface = mesh.boundary();
        let rest = mesh.nodes.clone();
        let moved: Vec<Vec3> = rest
            .iter()
            .map(|p| p + Vec3::new(0.004 * (30.0 * p.y).sin(), 0.0, -0.006 * (25.0 * p.x).cos()))
            .collect();
        let bound = rest
            .iter()
            .zip(&moved)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max);
        let mut inflated = SurfaceBvh::build(surface.triangles.clone(), &rest);
        inflated.set_inflation(bound);
        let mut fitted = SurfaceBvh::build(surface.triangles.clone(), &rest);
        fitted.refit(&moved);
        let mut near = Vec::new();
        for i in 0..100 {
            let f = i as f64;
            let q = Vec3::new(
                0.12 * (f * 0.37).sin() + 0.05,
                0.1 * (f * 0.71).cos() + 0.04,
                0.07 * (f * 1.3).sin() + 0.03,
            );
            let a = inflated.closest_point(&q, 0.02, &moved);
            let b = fitted.closest_point(&q, 0.02, &moved);
            assert_eq!(a.map(|c| c.distance), b.map(|c| c.distance));
            let down = q - Vec3::new(0.0, 0.0, 0.1);
            assert_eq!(
                inflated
                    .segment_cast(&q, &down, 0.0, &[], &moved)
                    .map(|h| h.t),
                fitted
                    .segment_cast(&q, &down, 0.0, &[], &moved)
                    .map(|h| h.t)
            );
            if let Some(c) = b {
                near.clear();
                inflated.triangles_near(&q, 0.02, &mut near);
                assert!(near.contains(&(c.triangle as u32)));
            }
        }
    }
}
