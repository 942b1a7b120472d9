//! Integration tests of the mesh module: readers against each other and against the bunny,
//! bad input, generators, the lattice tetrahedraliser and render-surface embedding.

use std::path::{Path, PathBuf};

use palpa::mesh::embed::Embedding;
use palpa::mesh::generate::CubeSplit;
use palpa::mesh::lattice::{self, LatticeOptions};
use palpa::mesh::surface::{self, SurfaceMesh};
use palpa::mesh::{self, MeshError, TetMesh};
use palpa::Vec3;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn bunny() -> TetMesh {
    mesh::load(&data("bunny.msh")).unwrap()
}

#[test]
fn bunny_msh_reads_with_closed_outward_boundary() {
    let m = bunny();
    assert_eq!(m.nodes.len(), 3401);
    assert_eq!(m.tets.len(), 14976);
    assert!(m.regions.iter().all(|&r| r == 0));
    let b = m.boundary();
    assert!(b.is_closed());
    let enclosed = b.enclosed_volume(&m.nodes);
    let volume = m.volume();
    assert!(enclosed > 0.0);
    assert!(
        (enclosed - volume).abs() < 1e-9 * volume,
        "{enclosed} vs {volume}"
    );
    assert_eq!(b.nodes.len(), 1839);
}

fn cubes(name: &str) -> TetMesh {
    mesh::load(&data("meshes").join(name)).unwrap()
}

#[test]
fn small_mesh_reads_identically_in_every_format() {
    let v41 = cubes("cubes.msh");
    assert_eq!(v41.nodes.len(), 12);
    assert_eq!(v41.tets.len(), 12);
    assert_eq!(v41.regions.iter().filter(|&&r| r == 2).count(), 6);
    assert_eq!(v41.region_names.get(&2).map(String::as_str), Some("stiff"));
    assert!(v41.notes.is_empty(), "{:?}", v41.notes);
    assert!((v41.volume() - 0.25).abs() < 1e-15);
    let v22 = cubes("cubes22.msh");
    let tetgen = cubes("cubes.ele");
    let tetgen_by_node = cubes("cubes.node");
    let vtk = cubes("cubes.vtk");
    for other in [&v22, &tetgen, &tetgen_by_node, &vtk] {
        assert_eq!(other.nodes, v41.nodes);
        assert_eq!(other.tets, v41.tets);
        assert_eq!(other.regions, v41.regions);
    }
    assert_eq!(v22.region_names, v41.region_names);
}

#[test]
fn binary_msh_errors_name_the_byte_or_element() {
    let bytes = std::fs::read(data("meshes").join("blocks41_bin.msh")).unwrap();
    let parse = |b: &[u8]| mesh::msh_binary::parse_msh_binary("b.msh", b);
    let full = parse(&bytes).unwrap();
    assert_eq!(full.region_names.get(&8).map(String::as_str), Some("lump"));
    let e = parse(&bytes[..bytes.len() / 2]).unwrap_err().to_string();
    assert!(
        e.starts_with("b.msh: byte ") && e.contains("unexpected end of file"),
        "{e}"
    );
    // Point the first tetrahedron's first node at an unknown tag: the last element block
    // holds tetrahedra; find its first node tag by value.
    let tet0 = full.tets[0];
    let first_tag = (tet0[0] + 1) as u64; // Gmsh numbers nodes 1.. in file order here
    let mut bad = bytes.clone();
    let elements = bytes.windows(9).position(|w| w == b"$Elements").unwrap();
    let needle = first_tag.to_le_bytes();
    let at = elements
        + bytes[elements..]
            .windows(8)
            .enumerate()
            .filter(|(_, w)| *w == needle)
            .map(|(i, _)| i)
            .find(|&i| {
                // Element tag, then four node tags: the tetrahedron's nodes in order.
                (0..4).all(|k| {
                    let s = elements + i + 8 * k;
                    u64::from_le_bytes(bytes[s..s + 8].try_into().unwrap()) == (tet0[k] + 1) as u64
                })
            })
            .unwrap();
    bad[at..at + 8].copy_from_slice(&999_999u64.to_le_bytes());
    let e = parse(&bad).unwrap_err().to_string();
    assert!(
        e.contains("tetrahedron 0") && e.contains("unknown node tag 999999"),
        "{e}"
    );
}

#[test]
fn vtk_writer_round_trips_with_fields() {
    let m = bunny();
    let u: Vec<Vec3> = m
        .nodes
        .iter()
        .map(|p| Vec3::new(0.1 * p.y, -p.x / 3.0, 1e-7 * p.z))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bunny.vtk");
    let fields = [mesh::vtk::PointVectors {
        name: "displacement",
        values: &u,
    }];
    mesh::vtk::save_vtk(&path, &m, &fields).unwrap();
    let back = mesh::load(&path).unwrap();
    assert_eq!(back, m);
    // The vectors are written exactly too.
    let text = std::fs::read_to_string(&path).unwrap();
    let after = text.split("VECTORS displacement double\n").nth(1).unwrap();
    let first: Vec<f64> = after
        .lines()
        .next()
        .unwrap()
        .split(' ')
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(first, vec![u[0].x, u[0].y, u[0].z]);
    let bad = [mesh::vtk::PointVectors {
        name: "mode 1",
        values: &u,
    }];
    let e = mesh::vtk::save_vtk(&path, &m, &bad)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mode 1"), "{e}");
}

/// Writes `text` to a file called `name` in a fresh directory and loads it.
fn load_text(name: &str, text: &str) -> Result<TetMesh, MeshError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    mesh::load(&path)
}

/// Loads a TetGen pair written from the two texts.
fn load_tetgen(node: &str, ele: &str) -> Result<TetMesh, MeshError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.node"), node).unwrap();
    std::fs::write(dir.path().join("m.ele"), ele).unwrap();
    mesh::load(&dir.path().join("m.ele"))
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(data("meshes").join(name)).unwrap()
}

/// Asserts that `result` is an error whose message contains every one of `parts`.
#[track_caller]
fn assert_error(result: Result<TetMesh, MeshError>, parts: &[&str]) {
    let e = result.expect_err("bad input must be an error").to_string();
    for p in parts {
        assert!(e.contains(p), "error `{e}` lacks `{p}`");
    }
}

#[test]
fn truncated_files_are_errors_naming_the_line() {
    let msh = fixture("cubes.msh");
    let cut = &msh[..msh.find("0.5 0.0 0.5").unwrap()];
    assert_error(
        load_text("t.msh", cut),
        &["t.msh:", "unexpected end of file"],
    );
    let v22 = fixture("cubes22.msh");
    let cut = &v22[..v22.find("$EndElements").unwrap()];
    assert_error(
        load_text("t.msh", cut),
        &["t.msh:40:", "end of file", "$EndElements"],
    );
    let ele = fixture("cubes.ele");
    assert_error(
        load_tetgen(&fixture("cubes.node"), &ele[..ele.len() - 8]),
        &["m.ele:13:", "end of file"],
    );
    let vtk = fixture("cubes.vtk");
    let cut = &vtk[..vtk.find("CELL_TYPES").unwrap()];
    assert_error(load_text("t.vtk", cut), &["t.vtk:", "cell types"]);
    let cut = &vtk[..vtk.find("4 1 2 5").unwrap()];
    assert_error(load_text("t.vtk", cut), &["t.vtk:", "end of file"]);
}

#[test]
fn non_finite_and_malformed_numbers_name_the_line() {
    let v22 = fixture("cubes22.msh");
    assert_error(
        load_text("n.msh", &v22.replace("5 0.5 0.5 0.0", "5 0.5 nan 0.0")),
        &["n.msh:15:", "non-finite"],
    );
    assert_error(
        load_text("n.msh", &v22.replace("5 0.5 0.5 0.0", "5 0.5 inf 0.0")),
        &["n.msh:15:", "non-finite"],
    );
    assert_error(
        load_text("n.msh", &v22.replace("5 0.5 0.5 0.0", "5 0.5 0,5 0.0")),
        &["n.msh:15:", "`0,5`"],
    );
    let node = fixture("cubes.node").replace("4 0.5 0.5 0.0", "4 0.5 -inf 0.0");
    assert_error(
        load_tetgen(&node, &fixture("cubes.ele")),
        &["m.node:7:", "non-finite"],
    );
    let vtk = fixture("cubes.vtk").replacen("0.5 0.5 0.0", "NaN 0.5 0.0", 1);
    assert_error(load_text("n.vtk", &vtk), &["n.vtk:10:", "non-finite"]);
}

#[test]
fn bad_node_references_name_line_and_element() {
    let v22 = fixture("cubes22.msh");
    // Unknown node tag.
    let bad = v22.replace("3 4 2 1 1 1 2 5 11", "3 4 2 1 1 1 2 5 13");
    assert_error(
        load_text("r.msh", &bad),
        &["r.msh:28:", "unknown node tag 13"],
    );
    // Repeated node in a tetrahedron.
    let bad = v22.replace("3 4 2 1 1 1 2 5 11", "3 4 2 1 1 1 2 2 11");
    assert_error(
        load_text("r.msh", &bad),
        &["r.msh:28:", "tetrahedron 0", "repeated"],
    );
    // Node tag defined twice.
    let bad = v22.replace("5 0.5 0.5 0.0", "4 0.5 0.5 0.0");
    assert_error(
        load_text("r.msh", &bad),
        &["r.msh:15:", "node tag 4 defined twice"],
    );
    // Out of range (0-based TetGen).
    let ele = fixture("cubes.ele").replace("0 0 1 4 10 1", "0 0 1 4 12 1");
    assert_error(
        load_tetgen(&fixture("cubes.node"), &ele),
        &["m.ele:2:", "tetrahedron 0", "out of range"],
    );
    let vtk = fixture("cubes.vtk").replacen("4 0 1 4 10", "4 0 1 4 99", 1);
    assert_error(
        load_text("r.vtk", &vtk),
        &["r.vtk:", "tetrahedron 0", "node index 99 out of range"],
    );
    // Counts that disagree.
    let bad = v22.replace("$Nodes\n12\n", "$Nodes\n11\n");
    assert_error(
        load_text("c.msh", &bad),
        &["c.msh:22:", "$EndNodes", "more nodes than the count"],
    );
    let msh = fixture("cubes.msh").replace("3 2 4 6\n", "3 2 4 5\n");
    assert_error(
        load_text("c.msh", &msh),
        &["c.msh:", "header says 14 elements but the blocks hold 13"],
    );
}

#[test]
fn inverted_tets_are_reoriented_with_a_note_and_degenerate_ones_rejected() {
    let v22 = fixture("cubes22.msh");
    let inverted = v22.replace("3 4 2 1 1 1 2 5 11", "3 4 2 1 1 1 5 2 11");
    let m = load_text("i.msh", &inverted).unwrap();
    let reference = cubes("cubes22.msh");
    assert_eq!(m.tets[1..], reference.tets[1..]);
    let mut first = m.tets[0];
    first.sort_unstable();
    assert_eq!(first, [0, 1, 4, 10]);
    assert!((m.tet_volume(0) - reference.tet_volume(0)).abs() < 1e-15);
    assert_eq!(m.notes.len(), 1);
    assert!(
        m.notes[0].contains("reoriented 1 inverted"),
        "{:?}",
        m.notes
    );
    // Nodes 1, 2, 4, 5 all lie in the plane z = 0.
    let flat = v22.replace("3 4 2 1 1 1 2 5 11", "3 4 2 1 1 1 2 5 4");
    assert_error(
        load_text("d.msh", &flat),
        &["d.msh:28:", "tetrahedron 0", "degenerate"],
    );
    let ele = fixture("cubes.ele").replace("1 0 1 10 7 1", "1 0 1 4 3 1");
    assert_error(
        load_tetgen(&fixture("cubes.node"), &ele),
        &["m.ele:3:", "tetrahedron 1", "degenerate"],
    );
}

#[test]
fn empty_meshes_and_unknown_formats_are_errors() {
    let empty =
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n0\n$EndNodes\n$Elements\n0\n$EndElements\n";
    assert_error(load_text("e.msh", empty), &["e.msh", "empty mesh"]);
    let only_tris = fixture("cubes22.msh");
    let only_tris = only_tris
        .split("3 4 2")
        .next()
        .unwrap()
        .replace("$Elements\n14", "$Elements\n2")
        + "$EndElements\n";
    assert_error(
        load_text("e.msh", &only_tris),
        &["e.msh", "empty mesh", "{2: 2}"],
    );
    assert_error(
        load_tetgen("0 3 0 0\n", "0 4 0\n"),
        &["m.ele", "empty mesh"],
    );
    assert_error(
        load_text(
            "e.vtk",
            "# vtk DataFile Version 3.0\n\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 0 float\n",
        ),
        &["e.vtk", "empty mesh"],
    );
    assert_error(load_text("e.vtk", ""), &["e.vtk:1:", "not a VTK"]);
    assert_error(load_text("e.msh", ""), &["e.msh", "no $MeshFormat"]);
    assert_error(
        load_text("m.stl", "solid"),
        &["m.stl", "unknown mesh extension .stl"],
    );
    assert_error(
        mesh::load(Path::new("/nonexistent/m.msh")),
        &["/nonexistent/m.msh"],
    );
}

fn bunny_surface() -> SurfaceMesh {
    surface::load_surface(&data("bunny.obj")).unwrap()
}

#[test]
fn bunny_obj_is_a_closed_surface_matching_the_tet_mesh() {
    let s = bunny_surface();
    assert_eq!(s.vertices.len(), 1839);
    assert_eq!(s.triangles.len(), 3674);
    assert!(s.is_closed());
    // bunny.msh was meshed from this surface: same enclosed volume (OBJ floats are f32).
    let tet = bunny();
    let v = s.enclosed_volume();
    assert!(
        (v - tet.volume()).abs() < 1e-5 * v,
        "{v} vs {}",
        tet.volume()
    );
}

#[test]
fn stl_round_trip_merges_duplicate_vertices() {
    let s = bunny_surface();
    let f32v = |p: &Vec3| stl_io::Vector::new([p.x as f32, p.y as f32, p.z as f32]);
    let triangles: Vec<stl_io::Triangle> = s
        .triangles
        .iter()
        .map(|t| stl_io::Triangle {
            normal: stl_io::Vector::new([0.0, 0.0, 0.0]),
            vertices: t.map(|v| f32v(&s.vertices[v])),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bunny.stl");
    let mut file = std::fs::File::create(&path).unwrap();
    stl_io::write_stl(&mut file, triangles.iter()).unwrap();
    drop(file);
    let back = surface::load_surface(&path).unwrap();
    assert_eq!(back.vertices.len(), 1839);
    assert_eq!(back.triangles.len(), 3674);
    assert!(back.is_closed());
    assert!((back.enclosed_volume() - s.enclosed_volume()).abs() < 1e-12);
}

#[test]
fn bad_surfaces_name_the_culprit() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let e =
        surface::load_surface(&write("d.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n")).unwrap_err();
    assert!(
        e.to_string().contains("d.obj") && e.to_string().contains("triangle 0: degenerate"),
        "{e}"
    );
    let e = surface::load_surface(&write("n.obj", "v 0 0 0\nv 1 nan 0\nv 0 1 0\nf 1 2 3\n"))
        .unwrap_err();
    assert!(e.to_string().contains("n.obj"), "{e}");
    let e =
        surface::load_surface(&write("r.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n")).unwrap_err();
    assert!(e.to_string().contains("r.obj"), "{e}");
    let stl = "solid s\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid s\n";
    let ok = surface::load_surface(&write("ok.stl", stl)).unwrap();
    assert_eq!(ok.triangles, vec![[0, 1, 2]]);
    let e = surface::load_surface(&write("t.stl", &stl[..60])).unwrap_err();
    assert!(e.to_string().contains("t.stl"), "{e}");
    let e = surface::load_surface(&write("s.ply", "ply")).unwrap_err();
    assert!(
        e.to_string().contains("unknown surface extension .ply"),
        "{e}"
    );
}

/// Number of vertices whose triangles form more than one fan (closed surfaces only).
fn pinched_vertices(triangles: &[[usize; 3]]) -> usize {
    let mut link: std::collections::HashMap<usize, Vec<(usize, usize)>> = Default::default();
    for t in triangles {
        for k in 0..3 {
            link.entry(t[k])
                .or_default()
                .push((t[(k + 1) % 3], t[(k + 2) % 3]));
        }
    }
    link.values()
        .filter(|edges| {
            let next: std::collections::HashMap<usize, usize> = edges.iter().copied().collect();
            // A single fan returns to its start after exactly edges.len() steps.
            let mut steps = 0;
            let mut cur = edges[0].0;
            loop {
                cur = next[&cur];
                steps += 1;
                if cur == edges[0].0 || steps > edges.len() {
                    break;
                }
            }
            steps != edges.len()
        })
        .count()
}

#[test]
fn lattice_fills_the_bunny_with_closed_boundary_and_accurate_volume() {
    let mut s = bunny_surface();
    s.scale(0.01);
    let target = s.enclosed_volume();
    let cell = 0.002;
    for (split, snap) in [
        (CubeSplit::Six, false),
        (CubeSplit::Six, true),
        (CubeSplit::Five, true),
    ] {
        let m = lattice::fill_surface(&s, cell, LatticeOptions { split, snap }).unwrap();
        assert!(m.tets.len() > 100_000, "{split:?}: {} tets", m.tets.len());
        let b = m.boundary();
        assert!(b.is_closed(), "{split:?} snap {snap}");
        // One sphere-like 2-manifold: every vertex has a single fan, V − E + F = 2.
        assert_eq!(pinched_vertices(&b.triangles), 0, "{split:?} snap {snap}");
        let (v, f) = (b.nodes.len() as i64, b.triangles.len() as i64);
        assert_eq!(v - 3 * f / 2 + f, 2, "{split:?} snap {snap}");
        let volume = m.volume();
        assert!((b.enclosed_volume(&m.nodes) - volume).abs() < 1e-9 * volume);
        // Issue target: within 5%; measured −0.004% (no snap), 0.33% (Six), 0.15% (Five).
        let err = (volume - target) / target;
        assert!(
            err.abs() < 0.01,
            "{split:?} snap {snap}: volume error {err}"
        );
        // Snapping never leaves a tetrahedron below a fifth of the lattice's smallest.
        let smallest = (0..m.tets.len())
            .map(|e| m.tet_volume(e))
            .fold(f64::MAX, f64::min);
        assert!(
            smallest >= 0.2 * cell.powi(3) / 6.0 * (1.0 - 1e-9),
            "{split:?}: {smallest}"
        );
        // Every node is used by a tetrahedron (unreferenced lattice points were dropped).
        let mut used = vec![false; m.nodes.len()];
        m.tets.iter().flatten().for_each(|&n| used[n] = true);
        assert!(used.iter().all(|&u| u));
    }
}

#[test]
fn bunny_surface_embeds_in_bunny_tets_and_follows_linear_fields() {
    let m = bunny();
    let s = bunny_surface();
    let emb = Embedding::new(&m, &s.vertices, "bunny.obj").unwrap();
    assert_eq!(emb.tet.len(), s.vertices.len());
    // The OBJ is the tet mesh's own surface, stored in f32: at most rounding away.
    assert!(emb.max_distance < 1e-5, "max distance {}", emb.max_distance);
    for (b, &d) in emb.bary.iter().zip(&emb.distance) {
        assert!((b.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(b.iter().all(|&w| w >= -1e-5), "{b:?} at distance {d}");
    }
    // A linear displacement field u(x) = A x + c on the nodes is reproduced exactly.
    let a = palpa::Mat3::new(0.1, -0.3, 0.02, 0.5, 0.0, -0.1, 0.07, 0.2, -0.4);
    let c = Vec3::new(0.01, -0.02, 0.03);
    let u: Vec<Vec3> = m.nodes.iter().map(|p| a * p + c).collect();
    let at_vertices = emb.apply(&u);
    for (got, p) in at_vertices.iter().zip(&s.vertices) {
        let want = a * p + c;
        assert!(
            (got - want).norm() < 1e-12 * want.norm().max(1.0),
            "{got} vs {want}"
        );
    }
    // Positions too, and apply_into agrees with apply.
    let mut out = vec![Vec3::zeros(); s.vertices.len()];
    emb.apply_into(&m.nodes, &mut out);
    for (got, p) in out.iter().zip(&s.vertices) {
        assert!((got - p).norm() < 1e-12);
    }
}

mod fuzz {
    use super::fixture;
    use palpa::mesh::{msh, msh_binary, tetgen, vtk};
    use proptest::prelude::*;

    /// `text` cut at `cut` (a fraction of its length) with the byte range at `at` replaced
    /// by `junk`: truncations, bad numbers, wrong counts and stray tokens.
    fn mangle(text: &str, cut: f64, at: f64, junk: &str) -> String {
        let mut s: Vec<u8> = text.as_bytes().to_vec();
        let i = ((at * s.len() as f64) as usize).min(s.len());
        let j = (i + junk.len() % 5).min(s.len());
        s.splice(i..j, junk.bytes());
        s.truncate(((cut * s.len() as f64) as usize).max(1));
        String::from_utf8_lossy(&s).into_owned()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Mangled files are read or rejected with an error naming the file; never a panic.
        #[test]
        fn mangled_files_never_panic(
            cut in 0.0..1.2f64,
            at in 0.0..1.0f64,
            junk in prop::sample::select(vec!["", "nan", "-1", "1e999", "99", "0", "$EndNodes", "x", "\n", " 4 ", "CELLS", "3.5"]),
        ) {
            let cut = cut.min(1.0);
            for (name, text) in [("cubes.msh", fixture("cubes.msh")), ("cubes22.msh", fixture("cubes22.msh"))] {
                if let Err(e) = msh::parse_msh(name, &mangle(&text, cut, at, junk)) {
                    prop_assert!(e.to_string().contains(name), "{e}");
                }
            }
            if let Err(e) = vtk::parse_vtk("cubes.vtk", &mangle(&fixture("cubes.vtk"), cut, at, junk)) {
                prop_assert!(e.to_string().contains("cubes.vtk"), "{e}");
            }
            let node = mangle(&fixture("cubes.node"), cut, at, junk);
            let ele = mangle(&fixture("cubes.ele"), 1.0 - cut / 2.0, 1.0 - at, junk);
            if let Err(e) = tetgen::parse_tetgen("cubes.node", &node, "cubes.ele", &ele) {
                prop_assert!(e.to_string().contains("cubes."), "{e}");
            }
        }

        /// Binary MSH with bytes overwritten and the file cut: an error or a mesh, no panic.
        #[test]
        fn mangled_binary_msh_never_panics(cut in 0.0..1.2f64, at in 0.0..1.0f64, junk in any::<[u8; 8]>()) {
            let mut bytes = std::fs::read(super::data("meshes").join("blocks41_bin.msh")).unwrap();
            let i = ((at * bytes.len() as f64) as usize).min(bytes.len() - 8);
            bytes[i..i + 8].copy_from_slice(&junk);
            bytes.truncate(((cut.min(1.0) * bytes.len() as f64) as usize).max(1));
            if let Err(e) = msh_binary::parse_msh_binary("b.msh", &bytes) {
                prop_assert!(e.to_string().contains("b.msh"), "{e}");
            }
        }
    }
}

#[test]
fn gmsh_written_files_read_identically() {
    let v41 = cubes("blocks41.msh");
    assert_eq!(v41.nodes.len(), 428);
    assert!(v41.notes.is_empty(), "{:?}", v41.notes);
    // Two unit cubes, the first "soft tissue" (5), the second "lump" (8).
    assert!((v41.volume() - 2.0).abs() < 1e-12);
    let volume_of = |m: &TetMesh, r: i32| -> f64 {
        (0..m.tets.len())
            .filter(|&e| m.regions[e] == r)
            .map(|e| m.tet_volume(e))
            .sum()
    };
    assert!((volume_of(&v41, 5) - 1.0).abs() < 1e-12);
    assert!((volume_of(&v41, 8) - 1.0).abs() < 1e-12);
    assert_eq!(
        v41.region_names.get(&5).map(String::as_str),
        Some("soft tissue")
    );
    assert!(v41.boundary().is_closed());
    for name in ["blocks22.msh", "blocks.vtk", "blocks41_bin.msh"] {
        let other = cubes(name);
        // Gmsh prints 16 significant digits in ASCII; binary holds every bit.
        assert_eq!(other.nodes.len(), v41.nodes.len(), "{name}");
        let worst = other
            .nodes
            .iter()
            .zip(&v41.nodes)
            .map(|(a, b)| (a - b).amax())
            .fold(0.0, f64::max);
        assert!(worst < 1e-15, "{name}: nodes differ by {worst}");
        assert!(other.tets == v41.tets, "{name}: tetrahedra differ");
        assert!(other.regions == v41.regions, "{name}: regions differ");
    }
}

/// Replaces exactly one occurrence of `from` in `text`.
#[track_caller]
fn edit(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "`{from}` must occur once");
    text.replacen(from, to, 1)
}

/// Asserts that `mesh` has a note containing every one of `parts`.
#[track_caller]
fn assert_note(mesh: &TetMesh, parts: &[&str]) {
    assert!(
        mesh.notes
            .iter()
            .any(|n| parts.iter().all(|p| n.contains(p))),
        "no note with {parts:?} in {:?}",
        mesh.notes
    );
}

#[test]
fn unknown_gmsh_element_types_are_ignored_with_a_counted_warning() {
    // Issue input: element type 999. 2.2: the first surface triangle (line 26) becomes
    // type 999; the tetrahedra are all still read.
    let v22 = edit(
        &fixture("cubes22.msh"),
        "1 2 2 9 1 1 4 10",
        "1 999 2 9 1 1 4 10",
    );
    let m = load_text("u.msh", &v22).unwrap();
    assert_eq!(m.tets.len(), 12);
    assert_note(
        &m,
        &[
            "u.msh",
            "warning",
            "1 elements of unknown element type 999",
            "line 26",
        ],
    );
    // 4.1: the block of two surface triangles (lines 47-48) becomes type 999.
    let v41 = edit(&fixture("cubes.msh"), "2 1 2 2\n", "2 1 999 2\n");
    let m = load_text("u.msh", &v41).unwrap();
    assert_eq!(m.tets.len(), 12);
    assert_note(&m, &["2 elements of unknown element type 999", "line 47"]);
    // Surface triangles themselves are normal and pass without a word.
    assert!(cubes("cubes22.msh").notes.is_empty());
}

#[test]
fn gmsh_volume_elements_that_are_not_tetrahedra_are_errors() {
    // Issue input: element type 5 (hexahedron) where a tetrahedron was (line 28).
    let v22 = fixture("cubes22.msh");
    let hex = edit(&v22, "3 4 2 1 1 1 2 5 11", "3 5 2 1 1 1 2 5 11 3 4 6 12");
    assert_error(
        load_text("h.msh", &hex),
        &[
            "h.msh:28:",
            "element type 5 (8-node hexahedron)",
            "tetrahedra only",
        ],
    );
    // The same type code with a tetrahedron's four nodes: the count does not fit type 5.
    let short = edit(&v22, "3 4 2 1 1 1 2 5 11", "3 5 2 1 1 1 2 5 11");
    assert_error(
        load_text("h.msh", &short),
        &["h.msh:28:", "type 5", "needs 8 node tags, found 4"],
    );
    // A tetrahedron line with a fifth node tag is not silently truncated.
    let five = edit(&v22, "3 4 2 1 1 1 2 5 11", "3 4 2 1 1 1 2 5 11 12");
    assert_error(
        load_text("h.msh", &five),
        &["h.msh:28:", "needs 4 node tags, found 5"],
    );
}

#[test]
fn quadratic_gmsh_tetrahedra_are_read_by_their_corners() {
    // One 10-node tetrahedron (type 11): corners 1-4, mid-edge nodes 5-10.
    let text = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n10\n\
1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 0.5 0 0\n6 0.5 0.5 0\n7 0 0.5 0\n8 0 0 0.5\n\
9 0 0.5 0.5\n10 0.5 0 0.5\n$EndNodes\n$Elements\n1\n1 11 2 3 1 1 2 3 4 5 6 7 8 9 10\n\
$EndElements\n";
    let m = load_text("q.msh", text).unwrap();
    assert_eq!(m.nodes.len(), 4);
    assert_eq!(m.tets, vec![[0, 1, 2, 3]]);
    assert_eq!(m.regions, vec![3]);
    assert_note(
        &m,
        &["1 elements of type 11 (10-node tetrahedron", "line 19"],
    );
    assert_note(&m, &["dropped the 6 higher-order nodes"]);
}

#[test]
fn vtk_cell_types_other_than_tetrahedra_are_named() {
    // cubes.vtk: cells 0-1 are triangles (type 5, lines 19-20), cell 2 is the tetrahedron
    // on line 21 whose type is on line 36.
    let vtk = fixture("cubes.vtk");
    let retype = |code: &str| {
        let mut lines: Vec<&str> = vtk.lines().collect();
        assert_eq!(lines[35], "10");
        lines[35] = code;
        lines.join("\n") + "\n"
    };
    // Issue input: cell type 0 (VTK_EMPTY_CELL) is not a cell this reader knows: ignored,
    // with a warning naming the count and the cell's line.
    let m = load_text("c.vtk", &retype("0")).unwrap();
    assert_eq!(m.tets.len(), 11);
    assert_note(
        &m,
        &[
            "c.vtk",
            "warning",
            "1 cells of unknown cell type 0",
            "line 21",
        ],
    );
    // Issue input: type 5 (triangle) on a cell of four points.
    assert_error(
        load_text("c.vtk", &retype("5")),
        &["c.vtk:21:", "cell 2 is a triangle (type 5) with 4 points"],
    );
    // Issue input: type 11 (voxel).
    assert_error(
        load_text("c.vtk", &retype("11")),
        &["c.vtk:21:", "cell 2 is a voxel (type 11)"],
    );
    let voxel = edit(&vtk, "CELLS 14 68\n", "CELLS 14 72\n").replacen(
        "4 0 1 4 10\n",
        "8 0 1 3 4 6 7 9 10\n",
        1,
    );
    let mut lines: Vec<&str> = voxel.lines().collect();
    lines[35] = "11";
    assert_error(
        load_text("c.vtk", &(lines.join("\n") + "\n")),
        &["c.vtk:21:", "voxel (type 11)", "tetrahedra only"],
    );
    // Surface triangles beside the tetrahedra are normal: no note at all.
    assert!(cubes("cubes.vtk").notes.is_empty());
}

#[test]
fn duplicate_tetrahedra_are_errors_naming_both() {
    // Element 4 (line 29) lists element 3's nodes (line 28) in another order.
    let dup = edit(
        &fixture("cubes22.msh"),
        "4 4 2 1 1 1 2 11 8",
        "4 4 2 1 1 2 11 1 5",
    );
    assert_error(
        load_text("d.msh", &dup),
        &[
            "d.msh:29:",
            "tetrahedron 1 (0-based, in file order)",
            "as tetrahedron 0 on line 28",
        ],
    );
    let ele = edit(&fixture("cubes.ele"), "1 0 1 10 7 1", "1 10 4 0 1 1");
    assert_error(
        load_tetgen(&fixture("cubes.node"), &ele),
        &["m.ele:3:", "tetrahedron 1", "as tetrahedron 0 on line 2"],
    );
    // In a binary file there are no lines: the error names both element numbers.
    let e = TetMesh::new(
        "b.msh",
        cubes("cubes.msh").nodes,
        vec![[0, 1, 4, 10], [0, 1, 4, 10]],
        vec![0, 0],
    )
    .unwrap_err();
    assert!(matches!(
        e,
        MeshError::DuplicateElement {
            first: 0,
            second: 1,
            ..
        }
    ));
}

#[test]
fn orphan_nodes_are_errors_naming_the_first_and_the_count() {
    // Issue input: a node no tetrahedron uses. Before, it reached the FEM as a zero row of
    // M and K and precompute failed with "K - (NaN)·M not positive definite".
    let orphan = edit(&fixture("cubes22.msh"), "$Nodes\n12\n", "$Nodes\n14\n").replacen(
        "$EndNodes",
        "13 2 2 2\n14 3 3 3\n$EndNodes",
        1,
    );
    assert_error(
        load_text("o.msh", &orphan),
        &[
            "o.msh:23:",
            "node 12 (0-based, in file order)",
            "used by no tetrahedron (2 such nodes",
        ],
    );
    let node = edit(&fixture("cubes.node"), "12 3 0 1\n", "13 3 0 1\n") + "12 2 2 2 0\n";
    assert_error(
        load_tetgen(&node, &fixture("cubes.ele")),
        &[
            "m.node:15:",
            "node 12",
            "used by no tetrahedron (1 such nodes",
        ],
    );
}

#[test]
fn obj_texture_and_normal_indices_cannot_overflow_the_reader() {
    // Fuzz finding (obj case 472): a normal index of 9223372036854775807 made tobj 4.0.5
    // panic with "attempt to multiply with overflow". Only positions are read now.
    let obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 0 0 1\nvt 0 0\n\
f 1/1/1 3/1/1 2/1/9223372036854775807\nf 1/9223372036854775807 2 4\nf 1//1 4//1 3//1\nf 2 3 4\n";
    let s = surface::parse_obj("n.obj", obj.as_bytes()).unwrap();
    assert_eq!(s.triangles.len(), 4);
    assert!(s.is_closed());
    assert!((s.enclosed_volume() - 1.0 / 6.0).abs() < 1e-12);
}

#[test]
fn a_box_of_too_many_cells_is_an_error_before_allocating() {
    // A scene's `mesh.box.cells = [1000000, 1000000, 1000000]` asked for 10¹⁸ nodes (and
    // `[18446744073709551615, 2, 1]` overflowed the node count).
    let size = Vec3::new(0.1, 0.1, 0.1);
    for cells in [
        [1_000_000, 1_000_000, 1_000_000],
        [usize::MAX, 2, 1],
        [1000, 334, 1],
    ] {
        let e = palpa::mesh::generate::box_mesh(size, cells)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("exceed the limit of 333334 cells"),
            "{cells:?}: {e}"
        );
    }
    assert!(palpa::mesh::generate::box_mesh(size, [1000, 1, 1]).is_ok());
}
