//! Scene files: every shipped scene parses, validates and builds its mesh; bad scenes
//! fail with a message naming the file and the key (or path) at fault.

use palpa::app::config::device_choice;
use palpa::fem::{Axis, Fix, Shape};
use palpa::nonlinear::LawKind;
use palpa::scene::{build_mesh, FemInputs};
use palpa::scene::{BackendKind, DeviceKind, Scene, SceneError};
use palpa::Vec3;
use std::path::{Path, PathBuf};

fn scenes_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes"))
}

fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(scenes_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// Parses `text` as if it were the file `dir/test.toml`.
fn parse_in(text: &str, dir: &Path) -> Result<Scene, SceneError> {
    Scene::parse(text, &dir.join("test.toml").display().to_string(), dir)
}

fn parse(text: &str) -> Result<Scene, SceneError> {
    parse_in(text, &scenes_dir())
}

fn below(axis: Axis, dist: f64) -> Fix {
    Fix::Below { axis, dist }
}

fn error(text: &str) -> String {
    parse(text)
        .expect_err("scene should be rejected")
        .to_string()
}

#[test]
fn every_shipped_scene_loads_and_builds_its_mesh() {
    let files = shipped();
    assert!(files.len() >= 2, "{files:?}");
    for f in files {
        let scene = Scene::load(&f).unwrap_or_else(|e| panic!("{e}"));
        let inputs = FemInputs::resolve(&scene).unwrap_or_else(|e| panic!("{e}"));
        assert!(!inputs.mesh.mesh.tets.is_empty(), "{}", f.display());
        assert_eq!(inputs.per_tet.len(), inputs.mesh.mesh.tets.len());
        assert!(
            inputs.fixed.iter().any(|&f| f),
            "{}: shipped scenes are clamped",
            f.display()
        );
    }
}

#[test]
fn embedded_default_is_the_shipped_default_and_the_documented_block() {
    let embedded = Scene::embedded_default();
    let file = Scene::load(&scenes_dir().join("default.toml")).unwrap();
    assert_eq!(
        std::fs::read_to_string(scenes_dir().join("default.toml")).unwrap(),
        palpa::scene::DEFAULT_SCENE
    );
    assert_eq!(embedded.backend.kind, BackendKind::Modal);
    assert_eq!(file.device.kind, DeviceKind::Auto);
    let inputs = FemInputs::resolve(&embedded).unwrap();
    let mesh = &inputs.mesh.mesh;
    let (lo, hi) = mesh.bounds();
    assert!((lo - Vec3::new(-0.05, -0.05, -0.04)).norm() < 1e-12, "{lo}");
    assert!((hi - Vec3::new(0.05, 0.05, 0.0)).norm() < 1e-12, "{hi}");
    assert!((mesh.volume() - 0.1 * 0.1 * 0.04).abs() < 1e-12);

    let tissue = inputs.materials.default;
    let [(shape, inc)] = inputs.materials.overrides.as_slice() else {
        panic!("one inclusion: {:?}", inputs.materials.overrides);
    };
    let ball = Shape::Sphere {
        center: Vec3::new(0.0, 0.0, -0.015),
        radius: 0.01,
    };
    assert_eq!(*shape, ball);
    assert_eq!(tissue.young, 30e3);
    assert_eq!(inc.young / tissue.young, 8.0);
    assert_eq!((tissue.poisson, tissue.density), (0.45, 1000.0));

    // The bottom (z = −4 cm) is fixed.
    assert_eq!(inputs.fixes, [below(Axis::Z, 0.0)]);
    let bottom = mesh.nodes.iter().map(|p| p.z == -0.04);
    assert!(bottom.eq(inputs.fixed.iter().copied()));
    // Device frame = scene frame.
    let w = palpa::app::config::given_mapping(&embedded.device);
    assert_eq!(w, palpa::device::mapped::Workspace::IDENTITY);
}

#[test]
fn bunny_is_scaled_to_metres_with_its_base_fixed() {
    let scene = Scene::load(&scenes_dir().join("bunny.toml")).unwrap();
    let inputs = FemInputs::resolve(&scene).unwrap();
    let (lo, hi) = inputs.mesh.mesh.bounds();
    // The file spans about 9.7 cm in y (in cm units).
    assert!((hi.y - lo.y - 0.0966).abs() < 1e-3, "{lo} {hi}");
    assert_eq!(inputs.fixes, [below(Axis::Y, 0.005)]);
    let m = &inputs.materials;
    assert!(m.regions.is_empty());
    assert_eq!(m.default.young, 50e3);
    // One stiff lump under the back, eight times the default, 1 cm in radius.
    assert_eq!(m.overrides.len(), 1, "{:?}", m.overrides);
    let (shape, lump) = &m.overrides[0];
    assert_eq!(lump.young, 400e3);
    assert_eq!(
        *shape,
        Shape::Sphere {
            center: Vec3::new(0.03, 0.04, 0.0),
            radius: 0.01
        }
    );
}

/// A graded box: the block's extent, a node at the focus with cells of `fine` around
/// it, each cell away from it `growth` times the last (the end cells merged), and the
/// same block as the default scene's outside.
#[test]
fn a_graded_box_is_fine_at_its_focus_and_grows_away_from_it() {
    let s =
        parse("[mesh.box]\ngraded = { focus = [0.035, 0.0, 0.0], fine = 0.001, growth = 1.2 }\n")
            .unwrap();
    let mesh = build_mesh(&s).unwrap().mesh;
    let (lo, hi) = mesh.bounds();
    assert!((lo - Vec3::new(-0.05, -0.05, -0.04)).norm() < 1e-12, "{lo}");
    assert!((hi - Vec3::new(0.05, 0.05, 0.0)).norm() < 1e-12, "{hi}");
    let focus = Vec3::new(0.035, 0.0, 0.0);
    assert!(mesh.nodes.iter().any(|p| (p - focus).norm() < 1e-12));
    let mut xs: Vec<f64> = mesh
        .nodes
        .iter()
        .filter(|p| p.y.abs() < 1e-12 && p.z.abs() < 1e-12)
        .map(|p| p.x)
        .collect();
    xs.sort_by(f64::total_cmp);
    let cells: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    let at = xs.iter().position(|&x| (x - 0.035).abs() < 1e-12).unwrap();
    assert!((cells[at] - 0.001).abs() < 1e-12 && (cells[at - 1] - 0.001).abs() < 1e-12);
    // Away from the focus each cell is 1.2 times the last, but the last one each side.
    for k in at + 1..cells.len() - 1 {
        assert!((cells[k] / cells[k - 1] - 1.2).abs() < 1e-9, "{cells:?}");
    }
    for k in 2..at {
        assert!((cells[k - 1] / cells[k] - 1.2).abs() < 1e-9, "{cells:?}");
    }
    println!(
        "{} nodes; x cells (mm): {:.2?}",
        mesh.nodes.len(),
        cells.iter().map(|c| c * 1e3).collect::<Vec<_>>()
    );
}

/// A growth per axis: uniform 2.5 mm cells across (x, y), graded 1.5× in depth from
/// the top.
#[test]
fn a_graded_box_takes_a_growth_per_axis() {
    let s =
        parse("[mesh.box]\ngraded = { focus = [0, 0, 0], fine = 0.0025, growth = [1, 1, 1.5] }\n")
            .unwrap();
    let mesh = build_mesh(&s).unwrap().mesh;
    let along = |axis: usize| -> Vec<f64> {
        let mut xs: Vec<f64> = mesh.nodes.iter().map(|p| p[axis]).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
        xs.windows(2).map(|w| w[1] - w[0]).collect()
    };
    for axis in [0, 1] {
        let cells = along(axis);
        assert_eq!(cells.len(), 40);
        assert!(
            cells.iter().all(|c| (c - 0.0025).abs() < 1e-12),
            "{cells:?}"
        );
    }
    // Down from the top (the focus): 2.5, 3.75, 5.625, 8.4375 mm, then the rest.
    let depth: Vec<f64> = along(2).into_iter().rev().collect();
    for (k, want) in [0.0025, 0.00375, 0.005625, 0.0084375]
        .into_iter()
        .enumerate()
    {
        assert!((depth[k] - want).abs() < 1e-12, "{depth:?}");
    }
    assert!((depth.iter().sum::<f64>() - 0.04).abs() < 1e-12);
}

#[test]
fn an_empty_scene_is_the_default_block_with_defaults_everywhere() {
    let s = parse("").unwrap();
    assert_eq!(s.rates.ticks_per_model_step(), 5);
    assert_eq!(s.modal_max_frequency(), 100.0);
    assert_eq!(s.stream.max_clients, 64);
    let inputs = FemInputs::resolve(&s).unwrap();
    assert_eq!(inputs.mesh.mesh.bounds().1.z, 0.0);
    let m = &inputs.materials;
    assert!(m.regions.is_empty() && m.overrides.is_empty());
    assert_eq!(m.default.young, 30e3);
    assert_eq!(inputs.fixes, [below(Axis::Z, 0.0)]);
    // `fixed = []` says "nothing fixed".
    let free = FemInputs::resolve(&parse("fixed = []").unwrap()).unwrap();
    assert!(free.fixes.is_empty() && !free.fixed.contains(&true));
    // Every section may be present and empty.
    parse(
        "[mesh]\n[materials]\n[backend]\n[backend.modal]\n[backend.condensed]\n[contact]\n\
         [rates]\n[force]\n[safety]\n[device]\n[device.workspace]\n[stream]\n",
    )
    .unwrap();
}

#[test]
fn contact_patch_and_friction_keys_parse() {
    use palpa::app::scene::probe_setup;
    let s =
        parse("[contact]\nfriction = 0.5\nfriction_kinetic = 0.3\npatch_radius = 0.004\n").unwrap();
    let f = probe_setup(&s.contact).unwrap().friction;
    assert_eq!((f.mu_static, f.mu_kinetic), (0.5, 0.3));
    assert_eq!(s.contact.patch_radius, Some(0.004));
    // μ_k defaults to μ_s; no keys: frictionless, default patch.
    let f = probe_setup(&parse("[contact]\nfriction = 0.4\n").unwrap().contact)
        .unwrap()
        .friction;
    assert_eq!((f.mu_static, f.mu_kinetic), (0.4, 0.4));
    let d = parse("").unwrap().contact;
    assert!(probe_setup(&d).unwrap().friction.is_none() && d.patch_radius.is_none());
}

#[test]
fn a_typo_in_a_key_names_the_key_and_the_file() {
    for (text, key) in [
        ("[materials.default]\nyoungg = 1e3\n", "youngg"),
        ("[rates]\nhaptics = 1000\n", "haptics"),
        ("[mesh.box]\ncell = [1, 1, 1]\n", "cell"),
        ("[device.workspace]\nrotation = [0, 0, 0]\n", "rotation"),
        ("[[fixed]]\nbelow = { axis = \"z\", dist = 0.0 }\n", "dist"),
        ("colour = \"red\"\n", "colour"),
    ] {
        let e = error(text);
        assert!(e.contains(key), "{text}: {e}");
        assert!(e.contains("test.toml"), "{e}");
    }
}

#[test]
fn out_of_range_values_name_the_key_and_the_value() {
    for (text, needle) in [
        (
            "[materials.inclusion]\nyoung = -5\nsphere = { center = [0, 0, 0], radius = 0.01 }\n",
            "materials.inclusion.young: must lie in (0, 1e12], got -5",
        ),
        (
            "[materials.default]\nyoung = 1e3\npoisson = 0.5\n",
            "materials.default.poisson: must lie in (-1, 0.5), got 0.5",
        ),
        (
            "[materials.default]\nyoung = 1e3\ndensity = 0\n",
            "materials.default.density: must lie in (0, 1e5], got 0",
        ),
        (
            "[materials.lump]\nyoung = 1e3\nsphere = { center = [0, 0, 0], radius = -1 }\n",
            "materials.lump.sphere.radius",
        ),
        (
            "[materials.default]\nyoung = 1e3\nmodel = \"veronda-westmann\"\n",
            "materials.default.stiffening: model = \"veronda-westmann\" needs its stiffening",
        ),
        (
            "[materials.default]\nyoung = 1e3\nmodel = \"neo-hookean\"\nstiffening = 5\n",
            "materials.default.stiffening: only model = \"veronda-westmann\" takes",
        ),
        (
            "[materials.default]\nyoung = 1e3\nstiffening = 5\n",
            "materials.default.stiffening: only model",
        ),
        (
            "[materials.default]\nyoung = 1e3\nmodel = \"veronda-westmann\"\nstiffening = -1\n",
            "materials.default.stiffening: must lie in [0, 3e1], got -1",
        ),
        (
            "[materials.default]\nyoung = 1e3\nmodel = \"mooney-rivlin\"\n",
            "model",
        ),
        (
            "[rates]\nhaptic = 0\n",
            "rates.haptic: must lie in [1, 10000], got 0",
        ),
        (
            "[rates]\nmodel = -200\n",
            "rates.model: must lie in [1, 10000], got -200",
        ),
        ("[rates]\nmodel = 300\n", "rates.model: must divide"),
        ("[rates]\nvisual = 0\n", "rates.visual"),
        (
            "[mesh]\nscale = 0\n",
            "mesh.scale: must lie in (0, 1e6], got 0",
        ),
        ("[mesh.box]\ncells = [4, 0, 4]\n", "mesh.box.cells[1]"),
        (
            "[mesh.box]\ncells = [4, 4, 4]\ngraded = { focus = [0, 0, 0], fine = 0.001, growth = 1.2 }\n",
            "mesh.box: give `cells` (uniform) or `graded`, not both",
        ),
        (
            "[mesh.box]\ngraded = { focus = [0, 0, 0], fine = 0, growth = 1.2 }\n",
            "mesh.box.graded.fine: must lie in (0, 4e-2], got 0",
        ),
        (
            "[mesh.box]\ngraded = { focus = [0, 0, 0], fine = 0.001, growth = 0.9 }\n",
            "mesh.box.graded.growth: must lie in [1, 2], got 0.9",
        ),
        (
            "[mesh.box]\ngraded = { focus = [0, 0, 0], fine = 0.001, growth = [1, 2.5, 1] }\n",
            "mesh.box.graded.growth[1]: must lie in [1, 2], got 2.5",
        ),
        (
            "[mesh.box]\ngraded = { focus = [0, 0, 0], fine = 1e-6, growth = 1 }\n",
            "mesh.box.graded: [100002, 100002, 40000] is more than 333334 cells",
        ),
        (
            "[mesh.box]\ngraded = { focus = [0, 0], fine = 0.001, growth = 1.2 }\n",
            "focus",
        ),
        ("[mesh]\npressure = \"nodes\"\n", "pressure"),
        ("[backend.modal]\nmodes = 0\n", "backend.modal.modes"),
        ("[backend.modal]\nalpha1 = -1\n", "backend.modal.alpha1"),
        (
            "[backend.columns]\ncache_size = 0\n",
            "backend.columns.cache_size: must lie in [1, 1048576], got 0",
        ),
        (
            "[backend.condensed]\ncache_size = 512\n",
            "backend.condensed.cache_size: moved",
        ),
        ("[contact]\nprobe_radius = -0.001\n", "contact.probe_radius"),
        ("[contact]\nfriction = -0.3\n", "contact.friction"),
        (
            "[contact]\nfriction = 0.3\nfriction_kinetic = 0.5\n",
            "contact.friction_kinetic",
        ),
        ("[contact]\npatch_radius = -0.01\n", "contact.patch_radius"),
        ("[safety]\nmax_force = 0\n", "safety.max_force"),
        ("[device.workspace]\nscale = -1\n", "device.workspace.scale"),
        ("[device]\nkind = \"replay\"\n", "device.trajectory"),
        ("[stream]\nbind = \"localhost\"\n", "stream.bind"),
        ("[stream]\nmax_clients = 0\n", "stream.max_clients"),
        (
            "[[fixed]]\nbelow = { axis = \"z\", distance = -1 }\n",
            "fixed[0].below.distance",
        ),
        (
            "[[fixed]]\nbox = { min = [1, 0, 0], max = [0, 1, 1] }\n",
            "fixed[0].box",
        ),
        (
            "[materials.loose]\nyoung = 1e3\n",
            "materials.loose: needs one of",
        ),
        (
            "[mesh]\nfile = \"x.msh\"\n[mesh.box]\ncells = [1, 1, 1]\n",
            "mesh: give exactly one",
        ),
    ] {
        let e = error(text);
        assert!(e.contains(needle), "{text}: expected {needle:?} in {e:?}");
        assert!(e.contains("test.toml"), "{e}");
    }
}

#[test]
fn a_missing_mesh_file_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let e = parse_in("[mesh]\nfile = \"organs/liver.msh\"\n", dir.path())
        .unwrap_err()
        .to_string();
    let want = dir.path().join("organs/liver.msh").display().to_string();
    assert!(e.contains("mesh.file") && e.contains(&want), "{e}");
    let e = parse_in(
        "[mesh.lattice]\nsurface = \"liver.obj\"\ncell_size = 0.004\n",
        dir.path(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("mesh.lattice.surface") && e.contains("liver.obj"),
        "{e}"
    );
    let e = Scene::load(&dir.path().join("nope.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope.toml"), "{e}");
}

#[test]
fn a_bad_mesh_file_names_the_scene_key_and_the_mesh_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.msh"),
        "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\nx\n",
    )
    .unwrap();
    let scene = parse_in("[mesh]\nfile = \"bad.msh\"\n", dir.path()).unwrap();
    let e = build_mesh(&scene).unwrap_err().to_string();
    assert!(e.contains("mesh.file") && e.contains("bad.msh"), "{e}");
}

#[test]
fn regions_resolve_by_name_and_unknown_ones_are_named() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/meshes");
    let probe = parse_in("[mesh]\nfile = \"blocks41.msh\"\n", Path::new(data)).unwrap();
    let mesh = build_mesh(&probe).unwrap().mesh;
    let (&id, name) = mesh.region_names.iter().next().expect("named regions");
    let text = format!(
        "[mesh]\nfile = \"blocks41.msh\"\n[materials.hard]\nyoung = 1e5\nregion = {name:?}\n\
         [[fixed]]\nregion = {id}\n"
    );
    let scene = parse_in(&text, Path::new(data)).unwrap();
    let inputs = FemInputs::resolve(&scene).unwrap();
    assert_eq!(inputs.materials.regions[&id].young, 1e5);
    assert_eq!(inputs.fixes, [Fix::Region(id)]);

    let text =
        "[mesh]\nfile = \"blocks41.msh\"\n[materials.hard]\nyoung = 1e5\nregion = \"spleen\"\n";
    let scene = parse_in(text, Path::new(data)).unwrap();
    let e = FemInputs::resolve(&scene).err().unwrap().to_string();
    assert!(
        e.contains("materials.hard.region") && e.contains("spleen"),
        "{e}"
    );
    let text = "[mesh]\nfile = \"blocks41.msh\"\n[[fixed]]\nnodes = [0, 100000]\n";
    let scene = parse_in(text, Path::new(data)).unwrap();
    let e = FemInputs::resolve(&scene).err().unwrap().to_string();
    assert!(e.contains("fixed[0].nodes") && e.contains("100000"), "{e}");
}

#[test]
fn geometric_materials_keep_file_order_after_regions() {
    let s = parse(
        "[materials.zeta]\nyoung = 1e3\nsphere = { center = [0, 0, 0], radius = 0.01 }\n\
         [materials.alpha]\nyoung = 2e3\nbox = { min = [0, 0, 0], max = [0.01, 0.01, 0.01] }\n\
         [materials.default]\nyoung = 3e3\n",
    )
    .unwrap();
    let m = FemInputs::resolve(&s).unwrap().materials;
    assert_eq!(m.default.young, 3e3);
    let order: Vec<f64> = m.overrides.iter().map(|(_, m)| m.young).collect();
    assert_eq!(order, [1e3, 2e3], "zeta, then alpha: file order");
}

#[test]
fn every_shipped_scene_builds_its_model_and_reuses_the_cache() {
    use palpa::app::scene::build;
    use palpa::scene::PrecomputeOutcome;
    use palpa::tissue::ModelStep;
    let cache = tempfile::tempdir().unwrap();
    for f in shipped() {
        let scene = Scene::load(&f).unwrap();
        // The modal backend's modes, or the nonlinear one's dynamic modes.
        let modal = palpa::scene::has_modes(&scene);
        let built = build(scene, cache.path(), &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
        let mut model = built.model;
        // Far above everything: no contact, no force.
        let far = model.step(0.0, 5e-3, Vec3::new(0.0, 0.0, 10.0));
        assert!(!far.in_contact && far.f0 == Vec3::zeros());
        if !modal {
            // Nothing precomputed or cached offline.
            assert!(
                matches!(built.precompute, PrecomputeOutcome::NotModal),
                "{}: {:?}",
                f.display(),
                built.precompute
            );
            continue;
        }
        assert!(
            matches!(built.precompute, PrecomputeOutcome::Computed { .. }),
            "{}: {:?}",
            f.display(),
            built.precompute
        );
        assert!(built.n_modes > 0, "{}", f.display());
        // Loaded again through the same cache lookup a rebuild makes (`build` and
        // `palpa precompute` share it), without building the model a second time.
        let again = palpa::app::precompute::precompute(
            &Scene::load(&f).unwrap(),
            cache.path(),
            &mut |_| {},
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(again.outcome, PrecomputeOutcome::Loaded { .. }),
            "{}: {:?}",
            f.display(),
            again.outcome
        );
    }
}

#[test]
fn every_device_backend_can_be_named_in_a_scene() {
    use palpa::device::choice::DeviceChoice;
    for (kind, expected) in [
        ("auto", DeviceChoice::Auto),
        ("sim", DeviceChoice::Sim(None)),
        ("hid", DeviceChoice::Hid(None)),
        ("haply", DeviceChoice::Haply("ws://localhost:10001".into())),
        ("openhaptics", DeviceChoice::OpenHaptics(None)),
        ("dhd", DeviceChoice::Dhd(None)),
    ] {
        let scene = Scene::parse(
            &format!("[device]\nkind = \"{kind}\"\n"),
            "s.toml",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(device_choice(&scene), expected, "{kind}");
    }
    let e = Scene::parse("[device]\nkind = \"phantom\"\n", "s.toml", Path::new(".")).unwrap_err();
    assert!(e.to_string().contains("phantom"), "{e}");
}

#[test]
fn each_tetrahedron_gets_its_materials_strain_energy_law() {
    let scene = parse(
        "[mesh.box]\norigin = [-0.05, -0.05, -0.04]\nsize = [0.1, 0.1, 0.04]\ncells = [10, 10, 4]\n\
         [materials.default]\nyoung = 30e3\nmodel = \"neo-hookean\"\n\
         [materials.inclusion]\nyoung = 240e3\nmodel = \"veronda-westmann\"\nstiffening = 5\n\
         sphere = { center = [0.0, 0.0, -0.015], radius = 0.01 }\n",
    )
    .unwrap();
    let inputs = FemInputs::resolve(&scene).unwrap();
    assert!(inputs.is_nonlinear());
    let mut seen = (0, 0);
    for (law, material) in inputs.laws.iter().zip(&inputs.per_tet) {
        let (lambda, mu) = material.lame();
        assert_eq!((law.lambda, law.mu), (lambda, mu));
        match law.kind {
            LawKind::NeoHookean => {
                assert_eq!(material.young, 30e3);
                seen.0 += 1;
            }
            LawKind::VerondaWestmann { stiffening } => {
                assert_eq!((material.young, stiffening), (240e3, 5.0));
                seen.1 += 1;
            }
            LawKind::Linear => panic!("a linear tetrahedron in a scene without one"),
        }
    }
    assert!(seen.0 > 0 && seen.1 > 0, "{seen:?}");
    let linear = parse("[materials.default]\nyoung = 1e3\n").unwrap();
    assert!(!FemInputs::resolve(&linear).unwrap().is_nonlinear());
}

/// The modal cache tells element from nodal pressure: the same mesh, materials and
/// modes with the other pressure are computed again into their own file, not loaded.
#[test]
fn nodal_pressure_is_its_own_cached_precompute() {
    use palpa::app::scene::build;
    use palpa::scene::PrecomputeOutcome;
    let cache = tempfile::tempdir().unwrap();
    let scene = |pressure: &str| {
        parse(&format!(
            "[mesh]\npressure = \"{pressure}\"\n[mesh.box]\ncells = [6, 6, 3]\n\
             [backend.modal]\nmodes = 6\n"
        ))
        .unwrap()
    };
    for pressure in ["element", "nodal"] {
        let built = build(scene(pressure), cache.path(), &mut |_| {}).unwrap();
        assert!(
            matches!(built.precompute, PrecomputeOutcome::Computed { .. }),
            "{pressure}: {:?}",
            built.precompute
        );
        let again = build(scene(pressure), cache.path(), &mut |_| {}).unwrap();
        assert!(
            matches!(again.precompute, PrecomputeOutcome::Loaded { .. }),
            "{pressure}: {:?}",
            again.precompute
        );
    }
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 2);
}
