//! One fuzz target per parser, and its seeds. A target takes any bytes and must not panic,
//! hang or allocate without bound; errors are the expected outcome. It returns whether the
//! parser accepted the input (the runner reports how many were). When a parser accepts
//! an input, the target checks what the parser promises (a validated mesh really is valid,
//! a decoded message re-encodes to the same bytes, …), so acceptance of bad data is a
//! failure too.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use palpa::device::hid::MAX_REPORT_LEN;
use palpa::device::profile::DeviceProfile;
use palpa::device::replay::{Trajectory, TrajectorySample, MAX_TRAJECTORY_TIME};
use palpa::fem::{Axis, Fix, Material, MaterialMap, Pressure};
use palpa::mesh::surface::{self, SurfaceMesh};
use palpa::mesh::{msh, msh_binary, tetgen, vtk, TetMesh};
use palpa::modal::{self, ModalCache, PrecomputeParams};
use palpa::scene::Scene;
use palpa::Vec3;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(root().join(path)).unwrap_or_else(|e| panic!("seed {path}: {e}"))
}

/// The first `n` lines of a seed file (keeps large seeds fast to parse).
fn head(path: &str, n: usize) -> Vec<u8> {
    let text = String::from_utf8(read(path)).unwrap();
    text.lines()
        .take(n)
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes()
}

/// What every mesh a reader accepts must satisfy, checked independently of
/// `TetMesh::new`: finite nodes, indices in range, positive volumes, every node used.
fn check_mesh(m: &TetMesh) {
    assert!(m.nodes.iter().all(|p| p.iter().all(|c| c.is_finite())));
    assert_eq!(m.regions.len(), m.tets.len());
    let mut used = vec![false; m.nodes.len()];
    for (e, t) in m.tets.iter().enumerate() {
        for &n in t {
            used[n] = true;
        }
        let v = m.tet_volume(e);
        assert!(v > 0.0 && v.is_finite(), "tetrahedron {e} has volume {v}");
    }
    assert!(used.iter().all(|&u| u), "a node no tetrahedron uses");
    m.boundary();
}

fn check_surface(s: &SurfaceMesh) {
    assert!(s.vertices.iter().all(|p| p.iter().all(|c| c.is_finite())));
    assert!(s.triangles.iter().flatten().all(|&v| v < s.vertices.len()));
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// Gmsh MSH, ASCII 4.1 and 2.2.
pub fn msh_ascii(data: &[u8]) -> bool {
    if let Ok(m) = msh::parse_msh("fuzz.msh", &text(data)) {
        check_mesh(&m);
        true
    } else {
        false
    }
}

/// Gmsh MSH 4.1 binary.
pub fn msh_binary(data: &[u8]) -> bool {
    if let Ok(m) = msh_binary::parse_msh_binary("fuzz.msh", data) {
        check_mesh(&m);
        true
    } else {
        false
    }
}

/// VTK legacy ASCII.
pub fn vtk(data: &[u8]) -> bool {
    if let Ok(m) = vtk::parse_vtk("fuzz.vtk", &text(data)) {
        check_mesh(&m);
        true
    } else {
        false
    }
}

/// TetGen: the `.node` text, a NUL byte, the `.ele` text.
pub fn tetgen(data: &[u8]) -> bool {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let node = text(&data[..split]);
    let ele = text(data.get(split + 1..).unwrap_or(&[]));
    if let Ok(m) = tetgen::parse_tetgen("fuzz.node", &node, "fuzz.ele", &ele) {
        check_mesh(&m);
        true
    } else {
        false
    }
}

/// Wavefront OBJ.
pub fn obj(data: &[u8]) -> bool {
    if let Ok(s) = surface::parse_obj("fuzz.obj", data) {
        check_surface(&s);
        true
    } else {
        false
    }
}

/// STL, ASCII or binary.
pub fn stl(data: &[u8]) -> bool {
    if let Ok(s) = surface::parse_stl("fuzz.stl", data) {
        check_surface(&s);
        true
    } else {
        false
    }
}

/// Scene TOML, through the public API (parse, then validate again).
pub fn scene(data: &[u8]) -> bool {
    if let Ok(scene) = Scene::parse(&text(data), "fuzz.toml", &root().join("scenes")) {
        scene.validate().expect("a parsed scene validates again");
        true
    } else {
        false
    }
}

/// Device profile TOML; an accepted profile must encode and decode reports of its own
/// lengths without going out of bounds.
pub fn profile(data: &[u8]) -> bool {
    if let Ok(p) = DeviceProfile::from_toml(&text(data), "fuzz.toml") {
        let mut buf = [0u8; MAX_REPORT_LEN];
        let mut codec = p.codec();
        let n = codec.encode_input(&mut buf, [0.01, -0.02, 0.03], 1, 7, 9);
        assert_eq!(n, p.input.length);
        codec.decode_input(&buf[..n]);
        let (n, _) = codec.encode_output(&mut buf, Vec3::new(1.0, -2.0, 1e9), 3);
        assert_eq!(n, p.output.length);
        codec.decode_output(&buf[..n]);
        true
    } else {
        false
    }
}

/// Trajectory CSV; an accepted trajectory stays within the time bound and survives a
/// write/read round trip unchanged.
pub fn trajectory(data: &[u8]) -> bool {
    if let Ok(t) = Trajectory::parse(&text(data), "fuzz.csv") {
        let d = t.duration();
        assert!((0.0..=MAX_TRAJECTORY_TIME).contains(&d), "duration {d}");
        let mut cursor = 0;
        for s in [0.0, d / 3.0, d, d + 1.0, 0.0] {
            t.sample_at(s, &mut cursor);
        }
        let mut csv = Vec::new();
        t.write_csv(&mut csv).unwrap();
        let back = Trajectory::parse(std::str::from_utf8(&csv).unwrap(), "back.csv")
            .expect("a written trajectory reads back");
        assert_eq!(back, t);
        true
    } else {
        false
    }
}

/// The cache under test: a small clamped box, and the hash of its inputs.
fn cache_fixture() -> &'static (ModalCache, [u8; 32]) {
    static CACHE: OnceLock<(ModalCache, [u8; 32])> = OnceLock::new();
    CACHE.get_or_init(|| {
        let mesh = palpa::mesh::generate::box_mesh(Vec3::new(0.02, 0.02, 0.01), [2, 2, 1]).unwrap();
        let materials = MaterialMap::uniform(Material::new(5.0e4, 0.3, 1000.0).unwrap());
        let fixes = vec![Fix::Below {
            axis: Axis::Z,
            dist: 1e-9,
        }];
        let params = PrecomputeParams {
            n_modes: 6,
            ..Default::default()
        };
        let data = modal::precompute(
            &mesh,
            &materials,
            &fixes,
            Pressure::Element,
            &params,
            &mut |_| {},
        )
        .unwrap();
        let hash =
            modal::precompute_hash(&mesh, &materials, &fixes, Pressure::Element, &params).unwrap();
        (
            ModalCache {
                input_hash: hash,
                data,
            },
            hash,
        )
    })
}

/// Bytes of the cache header before the payload: magic, version, checksum, input hash,
/// payload length (layout in `src/modal/cache.rs`).
const CACHE_HEADER: usize = 8 + 4 + 32 + 32 + 8;

/// A cache file around `payload` with a correct checksum and input hash, written here from
/// the documented layout (so the fuzzer reaches the payload decoder, not the checksum).
fn cache_file_around(payload: &[u8], hash: &[u8; 32]) -> Vec<u8> {
    let version = modal::cache::FORMAT_VERSION.to_le_bytes();
    let mut body = hash.to_vec();
    body.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    body.extend_from_slice(payload);
    let mut h = blake3::Hasher::new();
    h.update(&version);
    h.update(&body);
    let mut out = b"PALPAMOD".to_vec();
    out.extend_from_slice(&version);
    out.extend_from_slice(h.finalize().as_bytes());
    out.extend_from_slice(&body);
    out
}

/// Modal cache: the bytes as a whole file, and the bytes as the payload of a file with a
/// valid checksum. An accepted cache must have consistent sizes and finite numbers.
pub fn cache(data: &[u8]) -> bool {
    let (_, hash) = cache_fixture();
    let check = |c: ModalCache| {
        let b = &c.data.basis;
        assert_eq!(b.eigenvalues.len(), b.shapes.ncols());
        assert_eq!(b.rigid.len(), b.shapes.ncols());
        assert!(b.eigenvalues.iter().all(|l| l.is_finite()));
        assert!((0..b.shapes.ncols()).all(|c| b.shapes.col(c).iter().all(|v| v.is_finite())));
        c.encode();
    };
    let whole = ModalCache::decode(data, hash).map(check).is_ok();
    let payload = ModalCache::decode(&cache_file_around(data, hash), hash)
        .map(check)
        .is_ok();
    whole || payload
}

/// Wire protocol: client and server messages. An accepted message re-encodes to exactly
/// the bytes it came from (the encoding is canonical).
pub fn wire(data: &[u8]) -> bool {
    let client = palpa_protocol::decode_client(data)
        .map(|m| assert_eq!(palpa_protocol::encode_client(&m), data))
        .is_ok();
    let server = palpa_protocol::decode_server(data)
        .map(|m| assert_eq!(palpa_protocol::encode_server(&m), data))
        .is_ok();
    client || server
}

/// Seeds of a target: files from `tests/data`, `scenes`, `profiles` and
/// `protocol/vectors`, plus small inputs written here for formats without test files.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    match target {
        "msh_ascii" => vec![
            read("tests/data/meshes/cubes.msh"),
            read("tests/data/meshes/cubes22.msh"),
            read("tests/data/meshes/blocks41.msh"),
            read("tests/data/meshes/blocks22.msh"),
        ],
        "msh_binary" => vec![read("tests/data/meshes/blocks41_bin.msh")],
        "vtk" => vec![
            read("tests/data/meshes/cubes.vtk"),
            read("tests/data/meshes/blocks.vtk"),
            b"# vtk DataFile Version 5.1\nt\nASCII\nDATASET UNSTRUCTURED_GRID\n\
POINTS 4 double\n0 0 0 1 0 0 0 1 0 0 0 1\nCELLS 2 4\nOFFSETS vtktypeint64\n0 4\n\
CONNECTIVITY vtktypeint64\n0 1 2 3\nCELL_TYPES 1\n10\n"
                .to_vec(),
        ],
        "tetgen" => {
            let mut pair = read("tests/data/meshes/cubes.node");
            pair.push(0);
            pair.extend(read("tests/data/meshes/cubes.ele"));
            vec![pair]
        }
        "obj" => vec![
            b"# tetrahedron\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
                .to_vec(),
            b"o cube\nv -1 -1 -1\nv 1 -1 -1\nv 1 1 -1\nv -1 1 -1\nv -1 -1 1\nv 1 -1 1\n\
v 1 1 1\nv -1 1 1\nvn 0 0 1\nvt 0 0\ng sides\nf 1/1/1 4/1/1 3/1/1 2/1/1\nf 5//1 6//1 7//1 8//1\n\
f 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8\nf -1 -2 -3\n"
                .to_vec(),
            read("tests/data/bunny.obj")[..4096].to_vec(),
        ],
        "stl" => {
            let tet = [
                [[0.0f32, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]],
                [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
                [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]],
                [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            ];
            let mut ascii = String::from("solid tet\n");
            let mut binary = vec![0u8; 80];
            binary.extend_from_slice(&(tet.len() as u32).to_le_bytes());
            for tri in tet {
                ascii.push_str("facet normal 0 0 0\nouter loop\n");
                binary.extend_from_slice(&[0u8; 12]);
                for v in tri {
                    ascii.push_str(&format!("vertex {} {} {}\n", v[0], v[1], v[2]));
                    for c in v {
                        binary.extend_from_slice(&c.to_le_bytes());
                    }
                }
                ascii.push_str("endloop\nendfacet\n");
                binary.extend_from_slice(&[0, 0]);
            }
            ascii.push_str("endsolid tet\n");
            vec![ascii.into_bytes(), binary]
        }
        "scene" => vec![read("scenes/default.toml"), read("scenes/bunny.toml")],
        "profile" => vec![read("profiles/palpa-reference.toml")],
        "trajectory" => {
            let sample = |t: f64| TrajectorySample {
                t,
                position: Vec3::new(0.01, -0.02, t),
                buttons: 1,
                force: Some(Vec3::new(0.5, 0.0, -1.0)),
            };
            let mut with_force = Vec::new();
            Trajectory::new(vec![sample(0.0), sample(0.001), sample(0.5)], "seed")
                .unwrap()
                .write_csv(&mut with_force)
                .unwrap();
            vec![
                head("tests/data/trajectories/fast_tap.csv", 40),
                head("tests/data/trajectories/press_hold_release.csv", 40),
                with_force,
                b"# comment\nt,x,y,z,buttons\n\n0,0,0,0,0\n1,0,0,0,3\n".to_vec(),
            ]
        }
        "cache" => {
            let file = cache_fixture().0.encode();
            let payload = file[CACHE_HEADER..].to_vec();
            vec![file, payload]
        }
        "wire" => {
            let dir = root().join("protocol/vectors");
            let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "bin"))
                .collect();
            paths.sort();
            paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
        }
        other => panic!("no fuzz target `{other}`"),
    }
}
