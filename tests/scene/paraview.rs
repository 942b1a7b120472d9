//! `palpa replay --vtk`: the ParaView series, read back with an independent reader (the
//! `vtkio` crate), holds the replay's deformed tissue at each frame's time — checked
//! against the same trajectory stepped here in lock-step through the public API.

use std::path::Path;

use palpa::app::config::{attach_device, given_mapping};
use palpa::app::paraview::ParaviewOptions;
use palpa::app::replay::{replay_session, ReplayOptions};
use palpa::device::mapped::MappedDevice;
use palpa::device::replay::{ReplayDevice, Trajectory};
use palpa::device::HapticDevice;
use palpa::haptic::LockStep;
use palpa::Vec3;
use vtkio::model::{Attribute, CellType, DataSet, VertexNumbers};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One frame as vtkio reads it: points (m), displacement (m), cell types, cell arrays.
struct Frame {
    points: Vec<Vec3>,
    displacement: Vec<Vec3>,
    types: Vec<CellType>,
    connectivity: Vec<u64>,
    cell_arrays: Vec<(String, Vec<f64>)>,
}

fn vectors(flat: Vec<f64>) -> Vec<Vec3> {
    flat.chunks(3)
        .map(|c| Vec3::new(c[0], c[1], c[2]))
        .collect()
}

fn read_frame(path: &Path) -> Frame {
    let vtk = vtkio::Vtk::import(path).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
    let DataSet::UnstructuredGrid { pieces, .. } = vtk.data else {
        panic!("{}: not an unstructured grid", path.display())
    };
    assert_eq!(pieces.len(), 1);
    let piece = pieces
        .into_iter()
        .next()
        .unwrap()
        .into_loaded_piece_data(None)
        .unwrap();
    let array = |a: Attribute| match a {
        Attribute::DataArray(d) => (d.name, d.data.cast_into::<f64>().unwrap()),
        Attribute::Field { name, .. } => panic!("field {name}"),
    };
    let point: Vec<_> = piece.data.point.into_iter().map(array).collect();
    let displacement = point
        .iter()
        .find(|(n, _)| n == "displacement")
        .map(|(_, v)| vectors(v.clone()))
        .expect("a displacement array");
    let VertexNumbers::XML { connectivity, .. } = piece.cells.cell_verts else {
        panic!("XML cells expected")
    };
    Frame {
        points: vectors(piece.points.cast_into::<f64>().unwrap()),
        displacement,
        types: piece.cells.types,
        connectivity,
        cell_arrays: piece.data.cell.into_iter().map(array).collect(),
    }
}

/// (time, file) of each frame in a `.pvd`.
fn collection(path: &Path) -> Vec<(f64, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let attribute = |line: &str, key: &str| {
        let from = line.find(&format!("{key}=\"")).unwrap() + key.len() + 2;
        line[from..].split('"').next().unwrap().to_string()
    };
    text.lines()
        .filter(|l| l.contains("<DataSet "))
        .map(|l| {
            (
                attribute(l, "timestep").parse().unwrap(),
                attribute(l, "file"),
            )
        })
        .collect()
}

#[test]
fn a_replay_written_for_paraview_holds_the_models_deformed_volume_at_each_frame() {
    let tmp = tempfile::tempdir().unwrap();
    let scene_path = repo().join("tests/data/scenes/coarse_block.toml");
    let trajectory = repo().join("tests/data/trajectories/fast_tap.csv");
    let series = tmp.path().join("series");
    let options = ReplayOptions {
        input: trajectory.clone(),
        scene: Some(scene_path.clone()),
        cache_dir: tmp.path().join("cache"),
        out: Some(tmp.path().join("replay.csv")),
        record: None,
        paraview: Some(ParaviewOptions {
            dir: series.clone(),
            rate: 30.0,
            volume: true,
        }),
    };
    let outcome = replay_session(&options, &mut |_| {}).unwrap();
    let written = outcome.paraview.expect("a series written");
    let frames = collection(&written.collection);
    assert_eq!(frames.len(), written.frames);
    // 0.5 s at 30 Hz: t = 0, 1/30, …, 15/30 (each at the first tick at or after it).
    assert_eq!(frames.len(), 16, "{frames:?}");

    // The same trajectory, stepped here, read at each frame's tick.
    let scene = palpa::scene::Scene::load(&scene_path).unwrap();
    let mut built =
        palpa::app::scene::build(scene, &tmp.path().join("cache"), &mut |_| {}).unwrap();
    let tets = built.mesh.mesh.tets.clone();
    let regions = built.mesh.mesh.regions.clone();
    let rest = built.model.rest_positions().to_vec();
    let traj = Trajectory::load(&trajectory).unwrap();
    let device = ReplayDevice::new(traj.clone());
    let config = attach_device(&mut built, device.rating());
    let mapping = given_mapping(&built.scene.device);
    let mut lock = LockStep::new(MappedDevice::new(device, mapping), built.model, config);
    let all: Vec<usize> = (0..rest.len()).collect();
    let mut u = vec![Vec3::zeros(); rest.len()];
    let mut deepest = 0.0f64;
    for (t, file) in &frames {
        let tick = (t / config.tick_period).round() as usize;
        while (lock.time() / config.tick_period).round() as usize <= tick {
            lock.step();
        }
        lock.model_mut().displacements(&all, &mut u);
        let frame = read_frame(&series.join(file));
        assert_eq!(frame.points.len(), rest.len(), "{file}");
        for (n, p) in frame.points.iter().enumerate() {
            assert!((p - (rest[n] + u[n])).norm() <= 1e-9, "{file} node {n}");
            assert!(
                (frame.displacement[n] - u[n]).norm() <= 1e-9,
                "{file} node {n}"
            );
        }
        deepest = deepest.max(u.iter().map(|v| v.norm()).fold(0.0, f64::max));
        assert_eq!(frame.types.len(), tets.len());
        assert!(frame.types.iter().all(|c| *c == CellType::Tetra));
        let flat: Vec<u64> = tets.iter().flatten().map(|&n| n as u64).collect();
        assert_eq!(frame.connectivity, flat);
        let cell = |name: &str| {
            &frame
                .cell_arrays
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{file}: no {name}"))
                .1
        };
        let region: Vec<i32> = cell("region").iter().map(|&r| r as i32).collect();
        assert_eq!(region, regions);
        assert_eq!(cell("stress").len(), 9 * tets.len());
        assert!(cell("von_mises").iter().all(|s| s.is_finite() && *s >= 0.0));
    }
    assert!(deepest > 1e-4, "the tap deforms the tissue: {deepest} m");
}
