//! `palpa map`'s library call: a grid of presses over the coarse block finds its lump, and
//! each grid force is the force a separate `indent` at that point gives (the model is
//! reset between points, so the map does not depend on the order it was pressed in).

use std::path::Path;

use palpa::app::indent::{indent, IndentOptions};
use palpa::app::map::{stiffness_map, MapOptions, Outline};
use palpa::app::scene::build;
use palpa::scene::Scene;

/// The coarse block on the condensed backend (static: each press settles at once).
fn coarse_condensed(dir: &Path) -> Scene {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenes/coarse_block.toml");
    let text = std::fs::read_to_string(source).unwrap() + "[backend]\nkind = \"condensed\"\n";
    let path = dir.join("coarse_condensed.toml");
    std::fs::write(&path, text).unwrap();
    Scene::load(&path).unwrap()
}

#[test]
fn a_map_of_the_coarse_block_finds_the_lump_and_agrees_with_single_presses() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let built = build(coarse_condensed(tmp.path()), &cache, &mut |_| {}).unwrap();
    let options = MapOptions {
        depth: 0.002,
        step: 0.02,
        full: false,
    };
    let mut calls = 0;
    let map = stiffness_map(built, &options, &mut |done, total| {
        calls += 1;
        assert_eq!((done, total), (calls, 25));
    })
    .unwrap();
    assert_eq!((map.xs.len(), map.ys.len()), (5, 5));
    assert_eq!(map.axes, ["x", "y"]);
    assert!(matches!(
        &map.outlines[..],
        [Outline::Circle { name, radius, .. }] if name == "inclusion" && *radius == 0.01
    ));
    // The lump (radius 1 cm under the centre) is where the force peaks, well above the rest.
    let ([x, y], peak) = map.peak().unwrap();
    assert!(x.abs() < 1e-9 && y.abs() < 1e-9, "peak at ({x}, {y})");
    let far = map.force[0].unwrap();
    assert!(
        peak > 1.3 * far,
        "peak {peak} N against the corner's {far} N"
    );
    // Each grid force is an indent at that point on a freshly built model.
    for (k, &at) in [[0.0, 0.0], [-0.04, -0.04], [0.02, -0.02]]
        .iter()
        .enumerate()
    {
        let built = build(coarse_condensed(tmp.path()), &cache, &mut |_| {}).unwrap();
        let single = indent(
            built,
            &IndentOptions {
                at,
                depths: vec![options.depth],
                full: false,
            },
            &mut |_, _| {},
        )
        .unwrap();
        let (_, mapped) = map
            .points()
            .find(|(p, _)| (p[0] - at[0]).abs() < 1e-9 && (p[1] - at[1]).abs() < 1e-9)
            .unwrap();
        let mapped = mapped.unwrap_or_else(|| panic!("point {k}: no force in the map"));
        assert!(
            (mapped - single.force_n[0]).abs() <= 1e-9 * single.force_n[0],
            "at {at:?}: map {mapped} N, indent {} N",
            single.force_n[0]
        );
    }
}
