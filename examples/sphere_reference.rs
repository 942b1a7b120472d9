//! A converged reference for the sphere probe on the shipped default block: the same
//! sphere row `palpa indent --full` uses (the runtime's contact formulation, the whole
//! linear FEM solved statically), on the default block meshed finer and finer under the
//! contact (graded from the pressed point: `fine` 3.33, 1.67 and 0.83 mm, growing
//! `GROWTH` per cell across and 1.3 per layer in depth), Richardson-extrapolated in
//! `fine`, beside the lump (35, 0) mm and over it (0, 0), R 5 mm at 1, 2 and 4 mm. Beside
//! it, the runtime model (modal) on the shipped mesh. Prints the table of
//! docs/fem-accuracy.md ("A converged reference for the sphere").
//!
//! `cargo run --release --example sphere_reference [-- coarse]` (coarse: only the two
//! coarser levels, no extrapolation; minutes instead of tens of minutes).

use std::time::Instant;

use palpa::app::indent::{indent, IndentOptions};
use palpa::app::scene::build;
use palpa::scene::{BackendKind, Scene};

/// Cell growth across the top face away from the pressed point.
const GROWTH: f64 = 1.15;
/// Finest cells under the contact of the refinement levels (m).
const FINE: [f64; 3] = [0.0033333333, 0.0016666667, 0.00083333333];
const DEPTHS: [f64; 3] = [1e-3, 2e-3, 4e-3];
const RADIUS: f64 = 5e-3;

/// The default scene with a sphere of [`RADIUS`], meshed as shipped (`None`) or graded
/// from `at` with cells of `fine` (m) there.
fn scene(at: [f64; 2], fine: Option<f64>, backend: BackendKind) -> Scene {
    let shipped = include_str!("../scenes/default.toml");
    let text = match fine {
        None => shipped.to_string(),
        Some(h) => shipped.replace(
            "graded = { focus = [0.0, 0.0, 0.0], fine = 0.0033333333, growth = [1.0, 1.0, 1.3] }",
            &format!(
                "graded = {{ focus = [{}, {}, 0.0], fine = {h}, growth = [{GROWTH}, {GROWTH}, \
                 1.3] }}",
                at[0], at[1]
            ),
        ),
    };
    assert!(
        fine.is_none() || text != shipped,
        "the default scene's mesh line moved"
    );
    let mut scene = Scene::parse(&text, "reference.toml", std::path::Path::new(".")).unwrap();
    scene.backend.kind = backend;
    // Columns only as the press needs them (a refined mesh has many surface nodes).
    scene.backend.condensed.precompute_cap = 0;
    scene.contact.probe_radius = RADIUS;
    scene
}

/// Forces (N) at [`DEPTHS`] pressing at `at`, with the full FEM or the runtime model.
fn press(scene: Scene, at: [f64; 2], full: bool) -> (Vec<f64>, usize) {
    let cache = std::env::temp_dir().join("palpa-sphere-reference");
    let built = build(scene, &cache, &mut |_| {}).unwrap();
    let nodes = built.model.rest_positions().len();
    let options = IndentOptions {
        at,
        depths: DEPTHS.to_vec(),
        full,
    };
    let result = indent(built, &options, &mut |_, _| {}).unwrap();
    (result.force_n, nodes)
}

fn main() {
    let levels = if std::env::args().any(|a| a == "coarse") {
        2
    } else {
        3
    };
    for (place, at) in [
        ("beside the lump", [0.035, 0.0]),
        ("over the lump", [0.0, 0.0]),
    ] {
        println!(
            "R 5 mm {place}, ({:.0}, {:.0}) mm",
            at[0] * 1e3,
            at[1] * 1e3
        );
        let started = Instant::now();
        let (runtime, nodes) = press(scene(at, None, BackendKind::Modal), at, false);
        println!(
            "  runtime (modal) on the shipped mesh, {nodes} nodes: {} ({:.0} s)",
            newtons(&runtime),
            started.elapsed().as_secs_f64()
        );
        let (shipped_full, _) = press(scene(at, None, BackendKind::Condensed), at, true);
        println!("  --full on the shipped mesh: {}", newtons(&shipped_full));
        let mut full = Vec::new();
        for &h in &FINE[..levels] {
            let started = Instant::now();
            let (f, nodes) = press(scene(at, Some(h), BackendKind::Condensed), at, true);
            println!(
                "  --full graded from {:.2} mm, {nodes} nodes: {} ({:.0} s)",
                h * 1e3,
                newtons(&f),
                started.elapsed().as_secs_f64()
            );
            full.push(f);
        }
        if levels < 3 {
            continue;
        }
        for (d, &depth) in DEPTHS.iter().enumerate() {
            let [f1, f2, f3] = [full[0][d], full[1][d], full[2][d]];
            // Richardson in `fine` (halved each level): the observed order p from the
            // three levels, then the limit from the two finest.
            let p = ((f1 - f2) / (f2 - f3)).log2();
            // Not converging monotonically: the finest level, uncertain by its change.
            let limit = if p.is_finite() && p > 0.3 {
                f3 + (f3 - f2) / (2f64.powf(p) - 1.0)
            } else {
                f3
            };
            println!(
                "  {:.0} mm: reference {limit:.4} N (order {p:.2}); runtime {:+.1} %, finest \
                 mesh {:+.1} % against it",
                depth * 1e3,
                100.0 * (runtime[d] / limit - 1.0),
                100.0 * (f3 / limit - 1.0)
            );
        }
    }
}

fn newtons(f: &[f64]) -> String {
    f.iter()
        .map(|f| format!("{f:.4}"))
        .collect::<Vec<_>>()
        .join(" / ")
        + " N"
}
