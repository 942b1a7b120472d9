//! Runtime tissue models on bunny.msh (scale 0.01, y ≤ min + 5 mm fixed, E 50 kPa,
//! ν 0.45, ρ 1000): proxy update against the deformed surface, one modal step with a
//! pressed contact (k = 40, 200; advance only and the whole simulation step; a
//! barycentric point contact and the default contact patch), the condensed step with
//! cached and with newly contacted columns, and 64 held points.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use faer::Par;
use palpa::condensed::CondensedModel;
use palpa::contact::{ContactPatch, Proxy, SurfaceBvh};
use palpa::fem::{
    assemble, fixed_nodes, Axis, DofMap, Factor, FemSystem, Fix, Material, MaterialMap, Ordering,
};
use palpa::fem::{ComplianceColumns, Support};
use palpa::mesh::TetMesh;
use palpa::modal::{compute_modes, ModalBasis, ModalParams, ModalRuntime, Timings};
use palpa::pipeline::ContactPipeline;
use palpa::tissue::{ModelStep, PointConstraint, TissueGeometry, TissueModel};
use palpa::Vec3;

struct Bunny {
    mesh: TetMesh,
    system: FemSystem,
    factor: Arc<Factor>,
    basis200: ModalBasis,
    triangles: Vec<[usize; 3]>,
    surface: Vec<usize>,
    bvh: SurfaceBvh,
}

fn bunny() -> Bunny {
    let mut mesh = palpa::mesh::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/bunny.msh"
    )))
    .unwrap();
    mesh.scale(0.01);
    let materials = MaterialMap::uniform(Material::new(50e3, 0.45, 1000.0).unwrap())
        .per_tet(&mesh)
        .unwrap();
    let fixed = fixed_nodes(
        &mesh,
        &[Fix::Below {
            axis: Axis::Y,
            dist: 0.005,
        }],
    )
    .unwrap();
    let system = assemble(&mesh, &materials, DofMap::new(&fixed).unwrap()).unwrap();
    let (basis200, _, _) =
        compute_modes(&system, 200, Ordering::default(), &mut Timings::default()).unwrap();
    let factor = Arc::new(Factor::for_system(&system, 0.0, Ordering::default(), Par::Seq).unwrap());
    let b = mesh.boundary();
    let bvh = SurfaceBvh::build(b.triangles.clone(), &mesh.nodes);
    Bunny {
        mesh,
        system,
        factor,
        basis200,
        triangles: b.triangles,
        surface: b.nodes,
        bvh,
    }
}

/// A free surface point on the bunny's flank: triangle, weights, position, normal.
fn top_contact(b: &Bunny) -> (usize, [f64; 3], Vec3, Vec3) {
    let (lo, hi) = b.mesh.bounds();
    // On the flank of the body: the ears are far softer and curve within a millimetre.
    let p = lo + (hi - lo).component_mul(&Vec3::new(0.5, 0.4, 1.0));
    let c = b
        .bvh
        .closest_point(&p, f64::INFINITY, &b.mesh.nodes)
        .unwrap();
    (
        c.triangle,
        c.bary,
        c.point,
        b.bvh.shaded_normal(c.triangle, &c.bary, &b.mesh.nodes),
    )
}

impl Bunny {
    /// A K⁻¹ column cache of `cache` nodes over the bunny's factor, nothing computed.
    fn columns(&self, cache: usize) -> ComplianceColumns {
        ComplianceColumns::new(
            self.factor.clone(),
            self.system.dofs.clone(),
            &self.system.positions,
            cache,
        )
        .unwrap()
    }
}

fn modal(b: &Bunny, k: usize, cache: usize, max_rows: usize) -> ModalRuntime {
    let keep: Vec<usize> = (0..k).collect();
    let basis = b.basis200.select(&keep);
    let columns = b.columns(cache);
    let params = ModalParams {
        max_rows,
        ..ModalParams::default()
    };
    ModalRuntime::new(
        TissueGeometry {
            rest: b.mesh.nodes.clone(),
            triangles: b.triangles.clone(),
            surface_nodes: b.surface.clone(),
        },
        &basis.eigenvalues,
        basis.shapes.as_ref(),
        params,
        Some(columns),
    )
    .unwrap()
}

/// The condensed model of the bunny with a column cache of `cache` nodes, nothing
/// precomputed, up to 3 constraint rows.
fn condensed(b: &Bunny, cache: usize) -> CondensedModel {
    let columns = b.columns(cache);
    CondensedModel::new(
        TissueGeometry {
            rest: b.mesh.nodes.clone(),
            triangles: b.triangles.clone(),
            surface_nodes: b.surface.clone(),
        },
        columns,
        0,
        3,
    )
    .unwrap()
}

/// The scene default contact patch radius: twice the mean surface edge (m).
fn patch_radius(b: &Bunny) -> f64 {
    let total: f64 = b
        .triangles
        .iter()
        .map(|t| {
            (0..3)
                .map(|i| (b.mesh.nodes[t[i]] - b.mesh.nodes[t[(i + 1) % 3]]).norm())
                .sum::<f64>()
        })
        .sum();
    2.0 * total / (3.0 * b.triangles.len() as f64)
}

fn benches(c: &mut Criterion) {
    let b = bunny();
    let dt = 5e-3;
    let (t, w, x, n) = top_contact(&b);
    let nodes = b.triangles[t];
    let radius = patch_radius(&b);
    let patch =
        ContactPatch::new(radius, &b.bvh, &b.mesh.nodes).support(&b.bvh, &b.mesh.nodes, t, &w, &n);
    println!(
        "contact patch: radius {:.2} mm, {} nodes",
        radius * 1e3,
        patch.nodes().len()
    );

    // Proxy against the deformed surface: a 2 mm dent under the probe; the probe
    // presses 1 mm into it and slides back and forth by 0.2 mm.
    {
        let mut pos = b.mesh.nodes.clone();
        for p in pos.iter_mut() {
            let r2 = (*p - x).norm_squared();
            *p -= n * 2e-3 * (-r2 / (0.01f64 * 0.01)).exp();
        }
        let mut bvh = b.bvh.clone();
        bvh.refit(&pos);
        let base = x - n * 3e-3;
        let side = n.cross(&Vec3::x()).normalize() * 2e-4;
        let mut proxy = Proxy::new(0.0);
        proxy.update(&bvh, &pos, &(base + n * 5e-3));
        assert!(proxy.update(&bvh, &pos, &base).is_some());
        let mut flip = false;
        c.bench_function("proxy update, deformed bunny surface", |bch| {
            bch.iter(|| {
                flip = !flip;
                let probe = if flip { base + side } else { base - side };
                black_box(proxy.update(&bvh, &pos, &probe))
            })
        });
        c.bench_function("BVH refit, bunny surface", |bch| {
            bch.iter(|| bvh.refit(black_box(&pos)))
        });
    }

    for k in [40, 200] {
        let mut model = modal(&b, k, 16, 3);
        let mut f = [Vec3::zeros()];
        let press = PointConstraint::contact(nodes, w, n, x - n * 1e-3);
        for _ in 0..10 {
            model.advance(dt, &[press], &mut f).unwrap();
        }
        c.bench_function(
            &format!("modal k={k}: advance with pressed contact (residual on)"),
            |bch| bch.iter(|| model.advance(dt, black_box(&[press]), &mut f).unwrap()),
        );
        let press_patch = PointConstraint::contact_on(patch, n, x - n * 1e-3);
        let mut model = modal(&b, k, 64, 3);
        for _ in 0..10 {
            model.advance(dt, &[press_patch], &mut f).unwrap();
        }
        c.bench_function(
            &format!("modal k={k}: advance with pressed patch contact (residual on)"),
            |bch| {
                bch.iter(|| {
                    model
                        .advance(dt, black_box(&[press_patch]), &mut f)
                        .unwrap()
                })
            },
        );
        for r in [0.0, radius] {
            sliding_step(c, &b, k, r, (x, n));
        }
    }

    {
        let mut model = condensed(&b, 16);
        let press = PointConstraint::contact(nodes, w, n, x - n * 1e-3);
        let mut f = [Vec3::zeros()];
        model.advance(dt, &[press], &mut f).unwrap();
        c.bench_function(
            "condensed: advance with pressed contact, cached columns",
            |bch| bch.iter(|| model.advance(dt, black_box(&[press]), &mut f).unwrap()),
        );
        let press_patch = PointConstraint::contact_on(patch, n, x - n * 1e-3);
        let mut model = condensed(&b, 64);
        model.advance(dt, &[press_patch], &mut f).unwrap();
        c.bench_function(
            "condensed: advance with pressed patch contact, cached columns",
            |bch| {
                bch.iter(|| {
                    model
                        .advance(dt, black_box(&[press_patch]), &mut f)
                        .unwrap()
                })
            },
        );
        // Newly contacted node: a one-node cache and a different node every time. The
        // step forward-solves the node along the elimination tree (the force needs
        // nothing more) and spends what is left of the column budget on completing
        // earlier nodes' full columns.
        let mut model = condensed(&b, 1);
        let free: Vec<usize> = b
            .surface
            .iter()
            .copied()
            .filter(|&v| !b.system.dofs.is_fixed(v))
            .collect();
        let mut i = 0;
        c.bench_function("condensed: newly contacted node (3 column solves)", |bch| {
            bch.iter(|| {
                i = (i + 1) % free.len();
                let v = free[i];
                let c = PointConstraint::contact(
                    [v, v, v],
                    [1.0, 0.0, 0.0],
                    Vec3::y(),
                    b.mesh.nodes[v] - Vec3::y() * 1e-4,
                );
                model.advance(dt, &[c], &mut f).unwrap()
            })
        });
        // Newly contacted triangle: three new nodes solved together.
        let mut model = condensed(&b, 3);
        let free_tris: Vec<[usize; 3]> = b
            .triangles
            .iter()
            .copied()
            .filter(|t| t.iter().all(|&v| !b.system.dofs.is_fixed(v)))
            .collect();
        let mut i = 0;
        c.bench_function("condensed: newly contacted triangle (3 new nodes)", |bch| {
            bch.iter(|| {
                i = (i + 1) % free_tris.len();
                let tri = free_tris[i];
                let p = (b.mesh.nodes[tri[0]] + b.mesh.nodes[tri[1]] + b.mesh.nodes[tri[2]]) / 3.0;
                let c =
                    PointConstraint::contact(tri, [1.0 / 3.0; 3], Vec3::y(), p - Vec3::y() * 1e-4);
                model.advance(dt, &[c], &mut f).unwrap()
            })
        });
    }

    {
        // Displacement queries while a new patch contact's K⁻¹ columns complete (the
        // field at cached nodes from their forward solves) and once complete: the
        // simulation's per-step query near the proxy (nodes of the triangles within
        // two patch radii) and the 30 Hz visual frame (every surface node).
        let near: Vec<usize> = {
            let mut v: Vec<usize> = b
                .triangles
                .iter()
                .filter(|t| {
                    t.iter()
                        .any(|&v| (b.mesh.nodes[v] - x).norm() <= 2.0 * radius)
                })
                .flatten()
                .copied()
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let press_patch = PointConstraint::contact_on(patch, n, x - n * 1e-3);
        let mut model = modal(&b, 40, 64, 3);
        model.columns().unwrap().set_completion_budget(0);
        let mut f = [Vec3::zeros()];
        model.advance(dt, &[press_patch], &mut f).unwrap();
        let mut out = vec![Vec3::zeros(); b.surface.len()];
        for state in ["completing", "complete"] {
            if state == "complete" {
                model.columns().unwrap().complete_all();
            }
            for (what, nodes) in [("near-proxy", &near), ("surface", &b.surface)] {
                c.bench_function(
                    &format!(
                        "modal k=40: displacements of {} {what} nodes, patch columns {state}",
                        nodes.len()
                    ),
                    |bch| {
                        bch.iter(|| model.displacements(black_box(nodes), &mut out[..nodes.len()]))
                    },
                );
            }
        }
    }

    {
        // 64 held points (192 rows) spread over the free surface, k = 40, residual on.
        let mut model = modal(&b, 40, 256, 192);
        let step = b.triangles.len() / 80;
        let holds: Vec<PointConstraint> = (0..b.triangles.len())
            .step_by(step)
            .map(|t| b.triangles[t])
            .filter(|tri| tri.iter().all(|&v| !b.system.dofs.is_fixed(v)))
            .take(64)
            .map(|tri| {
                let p = (b.mesh.nodes[tri[0]] + b.mesh.nodes[tri[1]] + b.mesh.nodes[tri[2]]) / 3.0;
                PointConstraint::hold(tri, [1.0 / 3.0; 3], p + Vec3::new(0.0, -5e-4, 0.0))
            })
            .collect();
        assert_eq!(holds.len(), 64);
        let mut f = vec![Vec3::zeros(); 64];
        // Another set on the same nodes: the same points' weights shifted.
        let moved: Vec<PointConstraint> = holds
            .iter()
            .map(|h| PointConstraint {
                support: Support::triangle(
                    h.support.nodes().try_into().unwrap(),
                    [0.5, 0.25, 0.25],
                ),
                ..*h
            })
            .collect();
        model.advance(dt, &moved, &mut f).unwrap();
        model.advance(dt, &holds, &mut f).unwrap();
        // Steady state: every column complete (the first steps forward-solve 192 nodes
        // and complete their columns over the following steps).
        model.columns().unwrap().complete_all();
        c.bench_function(
            "modal k=40: 64 held points in one step (residual on, cached)",
            |bch| bch.iter(|| model.advance(dt, black_box(&holds), &mut f).unwrap()),
        );
        // The constrained set changes every step: rows, S (modal part and residual
        // blocks) and the factorisation are rebuilt each time.
        let mut flip = false;
        c.bench_function(
            "modal k=40: 64 held points, constrained set changing every step",
            |bch| {
                bch.iter(|| {
                    flip = !flip;
                    let set = if flip { &moved } else { &holds };
                    model.advance(dt, black_box(set), &mut f).unwrap()
                })
            },
        );
    }
}

/// Press 1 mm in over 1 s, then slide to and fro along the surface at 4 mm/s (20 µm a
/// step) while pressed: a palpating hand. `radius`: contact patch radius (m).
fn sliding_step(c: &mut Criterion, b: &Bunny, k: usize, radius: f64, (x, n): (Vec3, Vec3)) {
    let dt = 5e-3;
    let mut sim = ContactPipeline::new(modal(b, k, 64, 3), 0.0).with_patch_radius(radius);
    sim.step(0.0, dt, x + n * 2e-3);
    let mut time = 0.0;
    for i in 1..=200 {
        time += dt;
        sim.step(time, dt, x - n * (1e-3 * i as f64 / 200.0));
    }
    let tangent = n.cross(&Vec3::x()).normalize();
    let mut i = 0u64;
    let mut in_contact = 0u64;
    let solves = sim.model_mut().columns().map_or(0, |c| c.solves());
    c.bench_function(
        &format!(
            "modal k={k}, patch radius {:.1} mm: simulation step, pressed and sliding (proxy + patch + advance + local model)",
            radius * 1e3
        ),
        |bch| {
            bch.iter(|| {
                i += 1;
                time += dt;
                let phase = (i % 100) as f64;
                let s = if phase < 50.0 { phase } else { 100.0 - phase };
                let lfm = sim.step(time, dt, x - n * 1e-3 + tangent * (2e-5 * s));
                in_contact += lfm.in_contact as u64;
                black_box(lfm)
            })
        },
    );
    let after = sim.model_mut().columns().map_or(0, |c| c.solves());
    println!(
        "k={k}, patch {radius:.4}: {in_contact} of {i} benchmarked steps in contact; {} column solves (newly contacted nodes) among them",
        after - solves
    );
}

criterion_group! {
    name = runtime;
    config = Criterion::default().sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(runtime);
