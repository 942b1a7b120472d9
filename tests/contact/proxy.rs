//! God-object proxy against explicit surfaces: a box block (convex edges and
//! vertices, many coplanar triangles) and a V-groove (concave crease).

use palpa::contact::{Proxy, SurfaceBvh};
use palpa::mesh::generate::box_mesh;
use palpa::Vec3;

const SIZE: Vec3 = Vec3::new(0.1, 0.08, 0.05);

fn block() -> (SurfaceBvh, Vec<Vec3>) {
    let mesh = box_mesh(SIZE, [5, 4, 3]).unwrap();
    let bvh = SurfaceBvh::build(mesh.boundary().triangles, &mesh.nodes);
    (bvh, mesh.nodes)
}

/// Signed distance to the box (negative inside): the independent "did it cross" check.
fn box_distance(p: &Vec3) -> f64 {
    let q = (p - SIZE / 2.0).abs() - SIZE / 2.0;
    q.sup(&Vec3::zeros()).norm() + q.max().min(0.0)
}

#[test]
fn probe_above_surface_has_no_contact() {
    let (bvh, pos) = block();
    let mut proxy = Proxy::new(0.0);
    for z in [0.2, 0.1, 0.06, 0.0501] {
        assert_eq!(proxy.update(&bvh, &pos, &Vec3::new(0.03, 0.03, z)), None);
        assert_eq!(proxy.position(), Some(Vec3::new(0.03, 0.03, z)));
    }
}

#[test]
fn pressing_along_minus_normal_contacts_with_outward_normal() {
    let (bvh, pos) = block();
    let mut proxy = Proxy::new(0.0);
    proxy.update(&bvh, &pos, &Vec3::new(0.033, 0.027, 0.06));
    for i in 1..=10 {
        let depth = 0.001 * i as f64;
        let c = proxy
            .update(&bvh, &pos, &Vec3::new(0.033, 0.027, SIZE.z - depth))
            .expect("contact");
        assert!(
            (c.normal - Vec3::z()).norm() < 1e-12,
            "normal {:?}",
            c.normal
        );
        assert!((c.depth - depth).abs() < 1e-12);
        assert!((c.point - Vec3::new(0.033, 0.027, SIZE.z)).norm() < 1e-12);
        assert!((c.proxy - c.point).norm() < 1e-12);
        let [a, b, cc] = bvh.vertices(c.triangle, &pos);
        let on = a * c.bary[0] + b * c.bary[1] + cc * c.bary[2];
        assert!((on - c.point).norm() < 1e-12);
    }
    // Just outside (within the 0.5 mm margin) the contact stays a candidate with
    // negative depth, for the model to hold or release by the sign of its force.
    let c = proxy
        .update(&bvh, &pos, &Vec3::new(0.033, 0.027, SIZE.z + 1e-4))
        .expect("candidate");
    assert!((c.depth + 1e-4).abs() < 1e-12);
    proxy.release();
    assert_eq!(
        proxy.update(&bvh, &pos, &Vec3::new(0.033, 0.027, SIZE.z + 1e-4)),
        None
    );
    // Pulling out beyond the margin releases at once.
    proxy
        .update(&bvh, &pos, &Vec3::new(0.033, 0.027, SIZE.z - 1e-3))
        .expect("contact");
    assert_eq!(
        proxy.update(&bvh, &pos, &Vec3::new(0.033, 0.027, SIZE.z + 1e-3)),
        None
    );
}

#[test]
fn probe_on_edges_and_vertices_of_the_tessellation() {
    let (bvh, pos) = block();
    // Top-face grid lines are at multiples of 0.02 (x) and 0.02 (y); Kuhn diagonals too.
    let spots = [
        Vec3::new(0.04, 0.04, 0.0),
        Vec3::new(0.04, 0.03, 0.0),
        Vec3::new(0.03, 0.03, 0.0),
        Vec3::new(0.1, 0.08, 0.0),
    ];
    for s in spots {
        let mut proxy = Proxy::new(0.0);
        proxy.update(&bvh, &pos, &(s + Vec3::new(0.0, 0.0, 0.07)));
        // Exactly on the surface: touching, not pressing.
        assert_eq!(
            proxy.update(&bvh, &pos, &(s + Vec3::new(0.0, 0.0, SIZE.z))),
            None
        );
        let c = proxy
            .update(&bvh, &pos, &(s + Vec3::new(0.0, 0.0, SIZE.z - 0.002)))
            .expect("contact");
        assert!(
            (c.point - (s + Vec3::new(0.0, 0.0, SIZE.z))).norm() < 1e-12,
            "{s:?}: {:?}",
            c.point
        );
        assert!(box_distance(&c.proxy) > -1e-12);
    }
}

#[test]
fn nan_probe_is_rejected_without_losing_the_proxy() {
    let (bvh, pos) = block();
    let mut proxy = Proxy::new(0.0);
    proxy.update(&bvh, &pos, &Vec3::new(0.05, 0.04, 0.06));
    proxy
        .update(&bvh, &pos, &Vec3::new(0.05, 0.04, 0.049))
        .expect("contact");
    assert_eq!(
        proxy.update(&bvh, &pos, &Vec3::new(f64::NAN, 0.04, 0.04)),
        None
    );
    assert_eq!(
        proxy.update(&bvh, &pos, &Vec3::new(0.05, f64::INFINITY, 0.04)),
        None
    );
    let c = proxy
        .update(&bvh, &pos, &Vec3::new(0.05, 0.04, 0.048))
        .expect("contact again");
    assert!((c.point.z - SIZE.z).abs() < 1e-12);
}

#[test]
fn sliding_on_a_face_crosses_triangle_edges_smoothly() {
    let (bvh, pos) = block();
    let mut proxy = Proxy::new(0.0);
    proxy.update(&bvh, &pos, &Vec3::new(0.005, 0.013, 0.06));
    let mut last: Option<(Vec3, Vec3)> = None;
    for i in 0..=900 {
        let x = 0.005 + 0.0001 * i as f64;
        let probe = Vec3::new(x, 0.013 + 0.3 * (x - 0.005), SIZE.z - 0.003);
        let c = proxy.update(&bvh, &pos, &probe).expect("stays in contact");
        assert!(
            (c.proxy - Vec3::new(probe.x, probe.y, SIZE.z)).norm() < 1e-12,
            "step {i}: {:?}",
            c.proxy
        );
        // Shaded normal: exactly +z away from the block's edges, continuous everywhere.
        assert!(c.normal.z > 0.7);
        if (0.02..=0.08).contains(&x) && probe.y >= 0.02 {
            assert!(
                (c.normal - Vec3::z()).norm() < 1e-12,
                "step {i}: {:?}",
                c.normal
            );
        }
        if let Some((prev, n)) = last {
            let moved: Vec3 = c.proxy - prev;
            assert!(moved.norm() < 0.00011, "jump at step {i}");
            assert!((c.normal - n).norm() < 0.01, "normal jump at step {i}");
        }
        last = Some((c.proxy, c.normal));
    }
}

#[test]
fn sliding_over_a_convex_edge_wraps_around_without_entering() {
    let (bvh, pos) = block();
    let mut proxy = Proxy::new(0.0);
    proxy.update(&bvh, &pos, &Vec3::new(0.08, 0.04, 0.06));
    let mut last: Option<Vec3> = None;
    let mut saw_side = false;
    // Probe goes 2 mm deep, moves out past the x = 0.1 edge (the proxy slides to the
    // edge and lets go), then comes back in 2 mm through the side face, lower down.
    for i in 0..=400 {
        let s = i as f64 / 400.0;
        let probe = if s < 0.5 {
            Vec3::new(0.08 + 0.04 * (2.0 * s), 0.04, SIZE.z - 0.002)
        } else {
            Vec3::new(
                0.12 - 0.022 * (2.0 * s - 1.0),
                0.04,
                SIZE.z - 0.002 - 0.03 * (2.0 * s - 1.0),
            )
        };
        let c = proxy.update(&bvh, &pos, &probe);
        let p = proxy.position().unwrap();
        assert!(box_distance(&p) > -1e-12, "proxy inside at step {i}: {p:?}");
        if let Some(c) = c {
            assert!(
                c.normal.x >= -1e-12 && c.normal.z >= -1e-12,
                "inward normal {:?}",
                c.normal
            );
            if c.normal.x > 0.99 {
                saw_side = true;
            }
        }
        if let Some(prev) = last {
            assert!(
                (p - prev).norm() < 0.005,
                "jump at step {i}: {prev:?} → {p:?}"
            );
        }
        last = Some(p);
    }
    assert!(saw_side, "proxy never reached the side face");
}

#[test]
fn concave_crease_holds_the_proxy_in_the_valley() {
    // V-groove along y: planes z = |x| (normals point up and inward).
    let pos = vec![
        Vec3::new(-1.0, -1.0, 1.0),
        Vec3::new(-1.0, 1.0, 1.0),
        Vec3::new(0.0, -1.0, 0.0),
        Vec3::new(0.0, 1.0, 0.0),
        Vec3::new(1.0, -1.0, 1.0),
        Vec3::new(1.0, 1.0, 1.0),
    ];
    let tris = vec![[0, 2, 1], [1, 2, 3], [2, 4, 3], [3, 4, 5]];
    let bvh = SurfaceBvh::build(tris, &pos);
    let mut proxy = Proxy::new(0.0);
    proxy.update(&bvh, &pos, &Vec3::new(-0.3, 0.1, 1.0));
    let mut last = Vec3::new(-0.3, 0.1, 0.4);
    for i in 0..=100 {
        let s = i as f64 / 100.0;
        let probe = Vec3::new(-0.3 + 0.6 * s, 0.1, 0.4 - 1.0 * s);
        let c = proxy.update(&bvh, &pos, &probe);
        let p = proxy.position().unwrap();
        assert!(p.z >= p.x.abs() - 1e-9, "proxy below the groove: {p:?}");
        assert!((p - last).norm() < 0.05, "jump at {i}");
        last = p;
        if s > 0.8 {
            let c = c.expect("pressed into the valley");
            assert!(
                p.x.abs() < 1e-9 && p.z.abs() < 1e-9,
                "not at the crease: {p:?}"
            );
            assert!(c.normal.z > 0.0);
        }
    }
}

#[test]
fn proxy_follows_the_deformed_surface() {
    let (mut bvh, mut pos) = block();
    let mut proxy = Proxy::new(0.0);
    proxy.update(&bvh, &pos, &Vec3::new(0.05, 0.04, 0.06));
    let c0 = proxy
        .update(&bvh, &pos, &Vec3::new(0.05, 0.04, 0.045))
        .unwrap();
    // The tissue is pushed down 1 mm under the probe region.
    for p in pos.iter_mut() {
        if p.z > 0.04 {
            p.z -= 0.001 * (-((p.x - 0.05).powi(2) + (p.y - 0.04).powi(2)) / 0.02f64.powi(2)).exp();
        }
    }
    bvh.refit(&pos);
    let c1 = proxy
        .update(&bvh, &pos, &Vec3::new(0.05, 0.04, 0.045))
        .unwrap();
    assert_eq!(c1.triangle, c0.triangle);
    let [a, b, c] = bvh.vertices(c0.triangle, &pos);
    let moved = a * c0.bary[0] + b * c0.bary[1] + c * c0.bary[2];
    assert!(
        moved.z < SIZE.z - 0.0005,
        "surface under the probe did not move: {moved:?}"
    );
    assert!(
        (c1.point - moved).norm() < 1e-12,
        "{:?} vs {moved:?}",
        c1.point
    );
    assert!((c1.depth - (moved.z - 0.045)).abs() < 1e-12);
}

#[test]
fn sphere_probe_stays_one_radius_off_the_face() {
    let (bvh, pos) = block();
    let mut proxy = Proxy::new(0.004);
    proxy.update(&bvh, &pos, &Vec3::new(0.05, 0.04, 0.07));
    let c = proxy
        .update(&bvh, &pos, &Vec3::new(0.05, 0.04, 0.05))
        .expect("sphere touches");
    assert!((c.proxy - Vec3::new(0.05, 0.04, 0.054)).norm() < 1e-12);
    assert!((c.point - Vec3::new(0.05, 0.04, 0.05)).norm() < 1e-12);
    assert!((c.depth - 0.004).abs() < 1e-12);
}

#[test]
fn anchored_point_on_an_edge_stays_a_candidate_behind_either_neighbour() {
    let (bvh, pos) = block();
    // Edge points of the top face (grid lines every 0.02 m, and the cells' diagonals),
    // approached from either side so the anchor lands on either neighbouring triangle;
    // then the probe rests a rounding error behind the surface at the edge, where the
    // closest-point query may report the other triangle.
    let edges = [
        Vec3::new(0.04, 0.03, 0.0),
        Vec3::new(0.06, 0.05, 0.0),
        Vec3::new(0.03, 0.04, 0.0),
        Vec3::new(0.05, 0.05, 0.0),
        Vec3::new(0.025, 0.025, 0.0),
    ];
    for e in edges {
        for side in [
            Vec3::new(1e-3, 0.0, 0.0),
            Vec3::new(-1e-3, 0.0, 0.0),
            Vec3::new(0.0, 1e-3, 0.0),
            Vec3::new(0.0, -1e-3, 0.0),
        ] {
            let top = e + Vec3::new(0.0, 0.0, SIZE.z);
            let mut proxy = Proxy::new(0.0);
            proxy.update(&bvh, &pos, &(top + side + Vec3::new(0.0, 0.0, 0.01)));
            proxy
                .update(&bvh, &pos, &(top + side - Vec3::new(0.0, 0.0, 1e-3)))
                .expect("pressed beside the edge");
            proxy
                .update(&bvh, &pos, &(top - Vec3::new(0.0, 0.0, 1e-3)))
                .expect("pressed on the edge");
            for behind in [1e-15, 1e-17, 0.0] {
                let c = proxy.update(&bvh, &pos, &(top - Vec3::new(0.0, 0.0, behind)));
                let c = c.unwrap_or_else(|| panic!("{e:?} from {side:?}: dropped {behind}"));
                assert!((c.point - top).norm() < 1e-12);
            }
        }
    }
}
