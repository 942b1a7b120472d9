//! A bound on the field of the loads at each of many nodes, cheap enough for the whole
//! surface every step. The loads are gathered into a few clusters (about one probe's
//! contact each). Near a cluster a node gets the field's exact magnitude: a sum of
//! |f| · (largest block) over a press's loads is an order of magnitude above the
//! field they make together. Farther out it gets, per cluster, the sum over its loads
//! of |f| · (largest block beyond the node's distance from them). So the nodes under a
//! second probe pressing far away are known to move what they move, and the nodes near
//! the first are known to get only the second's tail.

use super::bands::BANDS;
use super::{block_of, ComplianceColumns};
use crate::Vec3;

/// Most clusters: more loads than fit join the nearest cluster, which grows.
const CLUSTERS: usize = 8;

/// Most nodes given their field exactly; the others near a cluster get its tails bound.
const CLOSE: usize = 512;

/// Loads near one another: every load node lies within `radius` (m) of `seed`.
#[derive(Clone, Copy)]
struct Cluster {
    seed: Vec3,
    radius: f64,
    /// `table[0]` = Σ |f| · largest block, `table[j]` = Σ |f| · largest block at least
    /// radii[j − 1] from the load's node (m).
    table: [f64; BANDS + 1],
}

impl ComplianceColumns {
    /// Adds to each `out[i]` a bound (m) on |[`Self::add_field`]| of `loads` at mesh
    /// node `nodes[i]` (zero at a fixed node): within a band radius (a sixteenth of the
    /// mesh's half diagonal) of a cluster of complete loads, the magnitude of their
    /// whole field there; elsewhere, over each cluster, Σ |f| · (largest block of the
    /// load's columns at least |x − seed| − radius from its node). Plus, everywhere,
    /// the bound of the loads still being completed (as [`Self::field_bound`]).
    pub fn add_field_bounds(&self, loads: &[(usize, Vec3)], nodes: &[usize], out: &mut [f64]) {
        let Self { bands, dofs, .. } = self;
        let radii = bands.radii();
        // A cluster spans about one probe's contact; the field is summed exactly a
        // band further out, where the tail beyond it is a few times smaller.
        let (span, exact) = (radii[BANDS - 5], radii[BANDS - 4]);
        let mut clusters = [Cluster {
            seed: Vec3::zeros(),
            radius: 0.0,
            table: [0.0; BANDS + 1],
        }; CLUSTERS];
        let mut used = 0;
        let mut pending = 0.0;
        for &(v, f) in loads {
            let Some(e) = self.find(v).map(|i| &self.entries[i]) else {
                continue;
            };
            if !e.complete {
                pending += f.norm() * e.norm;
                continue;
            }
            let Some(free) = dofs.free_node_index(v) else {
                continue;
            };
            let x = bands.position(free);
            let nearest = clusters[..used]
                .iter()
                .enumerate()
                .map(|(i, c)| (i, (x - c.seed).norm()))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let i = match nearest {
                Some((i, d)) if d <= span || used == CLUSTERS => {
                    clusters[i].radius = clusters[i].radius.max(d);
                    i
                }
                _ => {
                    clusters[used].seed = x;
                    used += 1;
                    used - 1
                }
            };
            let table = &mut clusters[i].table;
            let f = f.norm();
            table[0] += f * e.max_block;
            for (t, b) in table[1..].iter_mut().zip(&e.beyond) {
                *t += f * b;
            }
        }
        let pending = if pending > 0.0 {
            pending * self.entries.iter().map(|e| e.norm).fold(0.0, f64::max)
        } else {
            0.0
        };
        // Squared distances from each seed at which its nodes enter each band, and
        // within which the field is summed.
        let thresholds: [[f64; BANDS]; CLUSTERS] = std::array::from_fn(|i| {
            let c = &clusters[i];
            radii.map(|r| (r + c.radius) * (r + c.radius))
        });
        let near: [f64; CLUSTERS] = std::array::from_fn(|i| {
            let r = exact + clusters[i].radius;
            r * r
        });
        // The nodes near a cluster (as many as fit), their tails bound and their field,
        // summed load by load as `add_field` does (a load's columns read in one pass).
        let mut close = [(0usize, 0usize, 0.0f64, Vec3::zeros()); CLOSE];
        let mut n_close = 0;
        for (i, (o, &v)) in out.iter_mut().zip(nodes).enumerate() {
            let Some(free) = dofs.free_node_index(v) else {
                continue;
            };
            let x = bands.position(free);
            let mut tails = 0.0;
            let mut near_one = false;
            for ((c, t), near) in clusters[..used].iter().zip(&thresholds).zip(&near) {
                let d2 = (x - c.seed).norm_squared();
                near_one |= d2 <= *near;
                tails += c.table[t.partition_point(|&r2| r2 <= d2)];
            }
            if near_one && n_close < CLOSE {
                close[n_close] = (i, v, tails, Vec3::zeros());
                n_close += 1;
            } else {
                *o += tails + pending;
            }
        }
        let close = &mut close[..n_close];
        for &(node, f) in loads {
            if let Some(e) = self.find(node).map(|i| &self.entries[i]) {
                if e.complete {
                    for (_, v, _, u) in close.iter_mut() {
                        *u += block_of(&e.values, *v) * f;
                    }
                }
            }
        }
        for &(i, _, tails, u) in close.iter() {
            out[i] += u.norm().min(tails) + pending;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use faer::{Mat, Par};

    use super::ComplianceColumns;
    use crate::fem::{
        assemble, fixed_nodes, Axis, DofMap, Factor, Fix, Material, MaterialMap, Ordering,
    };
    use crate::mesh::generate::box_mesh;
    use crate::Vec3;

    /// Two presses 6 cm apart on a strip clamped below, and one load whose columns are
    /// still being completed: the per-node bound covers the field `add_field` gives at
    /// every node (the direct solve K u = F without the incomplete load); under a press
    /// it is well below Σ |f| · (largest block), and near one press the far press's
    /// loads add a small part of their bound over every node.
    #[test]
    fn the_bound_at_each_node_covers_the_field_and_a_far_press_adds_only_its_tail() {
        let size = Vec3::new(0.08, 0.04, 0.02);
        let mesh = box_mesh(size, [16, 8, 4]).unwrap();
        let materials = MaterialMap::uniform(Material::new(5e3, 0.45, 1000.0).unwrap());
        let per_tet = materials.per_tet(&mesh).unwrap();
        let bottom = Fix::Below {
            axis: Axis::Z,
            dist: 1e-9,
        };
        let fixed = fixed_nodes(&mesh, &[bottom]).unwrap();
        let system = assemble(&mesh, &per_tet, DofMap::new(&fixed).unwrap()).unwrap();
        let factor =
            Arc::new(Factor::for_system(&system, 0.0, Ordering::default(), Par::Seq).unwrap());
        let mut cols =
            ComplianceColumns::new(factor.clone(), system.dofs.clone(), &system.positions, 1000)
                .unwrap();
        let top = |x: f64, y: f64, r: f64| -> Vec<usize> {
            (0..mesh.nodes.len())
                .filter(|&v| {
                    let p = mesh.nodes[v];
                    p.z > size.z - 1e-9 && (p.x - x).hypot(p.y - y) <= r
                })
                .collect()
        };
        let (a, b) = (top(0.01, 0.02, 0.006), top(0.07, 0.02, 0.006));
        let press = |nodes: &[usize]| -> Vec<(usize, Vec3)> {
            let f = Vec3::new(0.02, 0.0, -0.5) / nodes.len() as f64;
            nodes.iter().map(|&v| (v, f)).collect()
        };
        let (loads_a, loads_b) = (press(&a), press(&b));
        cols.precompute(&a).unwrap();
        cols.precompute(&b).unwrap();
        let incomplete = top(0.04, 0.02, 1e-3)[0];
        cols.cache([incomplete]).unwrap();
        assert!(!cols.is_complete(incomplete));
        let complete: Vec<(usize, Vec3)> = loads_a.iter().chain(&loads_b).copied().collect();
        let mut loads = complete.clone();
        loads.push((incomplete, Vec3::new(0.0, 0.0, -0.05)));

        let nodes: Vec<usize> = (0..mesh.nodes.len()).collect();
        let mut u = Mat::<f64>::zeros(factor.n(), 1);
        for &(v, f) in &complete {
            let d = system.dofs.node_dofs(v).unwrap();
            for axis in 0..3 {
                u[(d[axis], 0)] += f[axis];
            }
        }
        factor.solve_in_place(u.as_mut()).unwrap();
        let direct = |v: usize| {
            system.dofs.node_dofs(v).map_or(Vec3::zeros(), |d| {
                Vec3::new(u[(d[0], 0)], u[(d[1], 0)], u[(d[2], 0)])
            })
        };
        let scale = nodes.iter().map(|&v| direct(v).norm()).fold(0.0, f64::max);
        for (set, label) in [
            (&complete, "complete loads"),
            (&loads, "with the incomplete"),
        ] {
            let mut field = vec![Vec3::zeros(); nodes.len()];
            cols.add_field(set, &nodes, &mut field);
            let mut bound = vec![0.0; nodes.len()];
            cols.add_field_bounds(set, &nodes, &mut bound);
            for ((&v, f), b) in nodes.iter().zip(&field).zip(&bound) {
                assert!(
                    f.norm() <= *b,
                    "{label}, node {v}: |u| {:e} > {b:e}",
                    f.norm()
                );
                if set.len() == complete.len() {
                    assert!((f - direct(v)).norm() <= 1e-9 * scale, "node {v}");
                }
            }
        }
        let mut under = vec![0.0; a.len()];
        cols.add_field_bounds(&loads_a, &a, &mut under);
        let largest = under.iter().copied().fold(0.0, f64::max);
        let everywhere = cols.field_bound(&loads_a);
        assert!(
            largest < 0.5 * everywhere,
            "under press a: {largest:e} of {everywhere:e}"
        );
        let near_a = top(0.01, 0.02, 0.01);
        let mut tail = vec![0.0; near_a.len()];
        cols.add_field_bounds(&loads_b, &near_a, &mut tail);
        let largest = tail.iter().copied().fold(0.0, f64::max);
        let everywhere = cols.field_bound(&loads_b);
        assert!(
            largest < 0.25 * everywhere,
            "near press a, press b's loads bound {largest:e} of {everywhere:e}"
        );
    }
}
