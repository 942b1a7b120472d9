//! The `palpa` Python module: a recorded probe trajectory replayed through a scene in
//! deterministic lock-step (the rows `palpa replay` writes), and the vibration modes of a
//! tetrahedral mesh (what `palpa modes` reports), and the virtual indentation test
//! (`palpa indent`), as numpy arrays. Every error becomes a
//! `palpa.PalpaError` whose message names the file, line or scene key, with the CLI's
//! words (the same functions read the same files); a panic inside palpa becomes a
//! `PalpaError` too, never a `PanicException`.

use std::path::PathBuf;

use numpy::ndarray::{Array1, Array2, Array3};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::create_exception;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyException, PyUserWarning};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tracing_subscriber::layer::SubscriberExt;

use palpa::app::indent::{indent as press, IndentOptions, Method};
use palpa::app::modes::{
    default_scene_material, load_mesh, modes as compute_modes, parse_fix_below, ModesOptions,
};
use palpa::app::replay::{replay_reviewed, ReplayRow};
use palpa::app::scene::build_scene;
use palpa::device::replay::Trajectory;
use palpa::fem::{Fix, Material, Pressure};
use palpa::modal::{self, ModeFate, PrecomputeParams, Precomputed, SelectionParams};

create_exception!(
    palpa,
    PalpaError,
    PyException,
    "A palpa input was rejected or a computation failed; the message names the file, line or scene key."
);

/// The CLI's flag names in palpa's messages, and the Python argument each stands for.
/// A flag that begins another (`--pressure nodal`, `--pressure`) comes after it.
const ARGUMENT_NAMES: [(&str, &str); 13] = [
    ("--at ", "at="),
    ("--at,", "at,"),
    ("--depths", "depths"),
    ("--fix-below", "fix_below"),
    ("--full", "full=True"),
    ("--scene", "scene"),
    ("--modes", "modes"),
    ("--scale ", "scale="),
    ("--young", "young"),
    ("--poisson ", "poisson="),
    ("--pressure nodal", "pressure=\"nodal\""),
    ("--max-force", "max_force"),
    ("--min-displacement", "min_displacement"),
];

/// `message` in Python's words: argument names instead of the CLI's flags.
fn pythonic(message: &str) -> String {
    ARGUMENT_NAMES
        .iter()
        .fold(message.to_string(), |m, (flag, name)| m.replace(flag, name))
}

/// Runs `work` with the GIL released; an error, or a panic inside palpa, becomes a
/// `PalpaError` (a panic says it is a bug in palpa and what it said). What palpa warns
/// of meanwhile (its `tracing` warnings, and `notes` the work returns) reaches Python as
/// `UserWarning`s.
fn run_detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<(T, Vec<String>), String> + Send,
) -> PyResult<T> {
    let (result, mut warnings) = py.detach(|| {
        let (collector, warnings) = WarningCollector::new();
        let result = tracing::subscriber::with_default(
            tracing_subscriber::registry().with(collector),
            || std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)),
        );
        let result = result.unwrap_or_else(|panic| {
            let said = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            Err(format!(
                "internal error in palpa (please report it): {said}"
            ))
        });
        let warnings = std::mem::take(&mut *warnings.lock().unwrap_or_else(|p| p.into_inner()));
        (result, warnings)
    });
    let (value, notes) = result.map_err(|e| PalpaError::new_err(pythonic(&e)))?;
    warnings.extend(notes);
    let category = py.get_type::<PyUserWarning>();
    for w in warnings {
        let text = std::ffi::CString::new(pythonic(&w).replace('\0', " "))
            .expect("no NUL left in the text");
        PyErr::warn(py, &category, &text, 2)?;
    }
    Ok(value)
}

/// A `tracing` layer keeping the message of every warning and error event.
struct WarningCollector(Arc<Mutex<Vec<String>>>);

impl WarningCollector {
    fn new() -> (Self, Arc<Mutex<Vec<String>>>) {
        let kept = Arc::new(Mutex::new(Vec::new()));
        (Self(kept.clone()), kept)
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for WarningCollector {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() > tracing::Level::WARN {
            return;
        }
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "message" {
                    self.0 = value.to_string();
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(message.0);
    }
}

/// A trajectory replayed through a scene: one row per haptic tick (scene frame).
#[pyclass(frozen, get_all, module = "palpa")]
struct Replay {
    /// Virtual time (s), shape (N,).
    t: Py<PyArray1<f64>>,
    /// Probe tip (m), shape (N, 3).
    position: Py<PyArray2<f64>>,
    /// Force on the user's hand (N), shape (N, 3).
    force: Py<PyArray2<f64>>,
    /// Indentation below the undeformed surface (m), shape (N,).
    depth: Py<PyArray1<f64>>,
    /// Whether the model reported contact, shape (N,).
    contact: Py<PyArray1<bool>>,
    /// The scene's name (its `name`, else its source).
    scene: String,
}

#[pymethods]
impl Replay {
    /// `t` by its unit: virtual time (s).
    #[getter]
    fn t_s(&self, py: Python<'_>) -> Py<PyArray1<f64>> {
        self.t.clone_ref(py)
    }

    /// `position` by its unit: probe tip (m).
    #[getter]
    fn position_m(&self, py: Python<'_>) -> Py<PyArray2<f64>> {
        self.position.clone_ref(py)
    }

    /// `force` by its unit: force on the user's hand (N).
    #[getter]
    fn force_n(&self, py: Python<'_>) -> Py<PyArray2<f64>> {
        self.force.clone_ref(py)
    }

    /// `depth` by its unit: indentation (m).
    #[getter]
    fn depth_m(&self, py: Python<'_>) -> Py<PyArray1<f64>> {
        self.depth.clone_ref(py)
    }

    /// Number of ticks.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.t.bind(py).len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<palpa.Replay: {} ticks through {:?}>",
            self.__len__(py),
            self.scene
        )
    }
}

/// Rows as columns: N×3 arrays for the vectors.
fn replay_columns(py: Python<'_>, rows: &[ReplayRow], scene: String) -> Replay {
    let n = rows.len();
    let xyz = |v: fn(&ReplayRow) -> palpa::Vec3| {
        let flat = rows.iter().flat_map(|r| {
            let p = v(r);
            [p.x, p.y, p.z]
        });
        Array2::from_shape_vec((n, 3), flat.collect())
            .expect("three values per row")
            .into_pyarray(py)
            .unbind()
    };
    let column = |v: fn(&ReplayRow) -> f64| {
        Array1::from_iter(rows.iter().map(v))
            .into_pyarray(py)
            .unbind()
    };
    Replay {
        t: column(|r| r.t),
        position: xyz(|r| r.probe),
        force: xyz(|r| r.force),
        depth: column(|r| r.depth),
        contact: Array1::from_iter(rows.iter().map(|r| r.contact))
            .into_pyarray(py)
            .unbind(),
        scene,
    }
}

/// Replays `trajectory` (a `t,x,y,z,buttons` CSV) through `scene` (a scene TOML file;
/// None: the embedded default scene) exactly as `palpa replay` does; the modal
/// precompute is cached in `cache_dir` (None: $PALPA_CACHE_DIR, else ~/.cache/palpa).
#[pyfunction]
#[pyo3(signature = (scene, trajectory, *, cache_dir = None))]
fn replay(
    py: Python<'_>,
    scene: Option<PathBuf>,
    trajectory: PathBuf,
    cache_dir: Option<PathBuf>,
) -> PyResult<Replay> {
    let (rows, name) = run_detached(py, || -> Result<_, String> {
        let trajectory = Trajectory::load(&trajectory).map_err(|e| e.to_string())?;
        let built = build_scene(scene.as_deref(), cache_dir.as_deref(), &mut |_| {})?;
        let name = built.name();
        let replay = replay_reviewed(built, trajectory);
        let notes = replay.review.notes();
        Ok(((replay.rows, name), notes))
    })?;
    Ok(replay_columns(py, &rows, name))
}

/// The vibration modes of a mesh, ascending: every computed mode, and the shapes of the
/// kept ones.
#[pyclass(frozen, get_all, module = "palpa")]
struct Modes {
    /// Natural frequency (Hz), shape (K,); exactly 0 for rigid-body modes.
    freq_hz: Py<PyArray1<f64>>,
    /// λ = ω² (rad²/s²), shape (K,), as computed (rigid modes ≈ 0).
    eigenvalue: Py<PyArray1<f64>>,
    /// Rayleigh damping ratio ζ, shape (K,); NaN for rigid modes.
    damping_ratio: Py<PyArray1<f64>>,
    /// Largest static displacement the largest force causes in the mode (m), shape
    /// (K,); NaN for rigid modes (unbounded).
    static_response: Py<PyArray1<f64>>,
    /// Whether selection kept the mode, shape (K,).
    kept: Py<PyArray1<bool>>,
    /// Why: "kept", "kept-rigid", "unobservable" or "above-cutoff", one per mode.
    fate: Vec<String>,
    /// Node positions (m, after `scale`), shape (nodes, 3).
    nodes: Py<PyArray2<f64>>,
    /// Mass-normalised shapes of the kept modes (m·kg^-½), shape (nodes, 3, kept);
    /// fixed nodes' rows are zero.
    shapes: Py<PyArray3<f64>>,
    /// Tetrahedra of the mesh.
    n_tets: usize,
    /// Free degrees of freedom.
    n_free_dofs: usize,
    /// Fixed nodes.
    n_fixed_nodes: usize,
    /// Largest relative residual ‖Kx − λMx‖ / ‖Kx‖ over the elastic modes.
    max_residual: f64,
    /// Stage times (s): "assembly", "factorisation", "eigen".
    timings_s: Py<PyDict>,
}

#[pymethods]
impl Modes {
    fn __repr__(&self, py: Python<'_>) -> String {
        let kept = self.kept.bind(py).to_vec().unwrap_or_default();
        format!(
            "<palpa.Modes: {} computed, {} kept>",
            kept.len(),
            kept.iter().filter(|k| **k).count()
        )
    }
}

fn fate_code(fate: ModeFate) -> &'static str {
    match fate {
        ModeFate::Kept => "kept",
        ModeFate::KeptRigid => "kept-rigid",
        ModeFate::Unobservable => "unobservable",
        ModeFate::AboveCutoff => "above-cutoff",
    }
}

/// The modes as arrays.
fn modes_columns(
    py: Python<'_>,
    pre: &Precomputed,
    nodes: &[palpa::Vec3],
    n_tets: usize,
) -> PyResult<Modes> {
    let per_mode = |v: &dyn Fn(&modal::ModeReport) -> f64| {
        Array1::from_iter(pre.reports.iter().map(v))
            .into_pyarray(py)
            .unbind()
    };
    let shapes = &pre.basis.shapes;
    let (n, k) = (pre.basis.n_nodes(), pre.basis.n_modes());
    let shapes = Array3::from_shape_fn((n, 3, k), |(v, c, j)| shapes[(3 * v + c, j)]);
    let nodes = Array2::from_shape_fn((nodes.len(), 3), |(v, c)| nodes[v][c]);
    let timings = PyDict::new(py);
    timings.set_item("assembly", pre.timings.assembly)?;
    timings.set_item("factorisation", pre.timings.factorisation)?;
    timings.set_item("eigen", pre.timings.eigen)?;
    Ok(Modes {
        freq_hz: per_mode(&|r| {
            if r.fate == ModeFate::KeptRigid {
                0.0
            } else {
                r.freq_hz
            }
        }),
        eigenvalue: per_mode(&|r| r.eigenvalue),
        damping_ratio: per_mode(&|r| r.damping_ratio.unwrap_or(f64::NAN)),
        static_response: per_mode(&|r| r.static_response.unwrap_or(f64::NAN)),
        kept: Array1::from_iter(pre.reports.iter().map(|r| r.fate.kept()))
            .into_pyarray(py)
            .unbind(),
        fate: pre
            .reports
            .iter()
            .map(|r| fate_code(r.fate).to_string())
            .collect(),
        nodes: nodes.into_pyarray(py).unbind(),
        shapes: shapes.into_pyarray(py).unbind(),
        n_tets,
        n_free_dofs: pre.n_free_dofs,
        n_fixed_nodes: pre.n_fixed_nodes,
        max_residual: pre.eigen.max_residual,
        timings_s: timings.unbind(),
    })
}

/// `value` if finite and > 0, else an error naming `name`.
fn positive(name: &str, value: f64) -> Result<f64, String> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(format!("{name} must be a finite number > 0, got {value}"))
    }
}

/// Computes the lowest `modes` vibration modes of `mesh` (a .msh, .node/.ele or .vtk
/// file, or `box:NXxNYxNZ[:SXxSYxSZ]`) and selects them as `palpa modes` does. The
/// material defaults to the default scene's soft tissue, the selection parameters
/// (`max_force` N, `min_displacement` m, `max_freq` Hz, Rayleigh `alpha_k` s and
/// `alpha_m` 1/s) to those of `palpa modes`; `fix_below` is `AXIS=DIST` (m, after
/// scaling), e.g. "z=0.001"; `pressure` is "element" or "nodal" (nodal-averaged
/// pressure, which does not lock as ν → 0.5).
#[pyfunction]
#[pyo3(signature = (
    mesh,
    *,
    scale = 1.0,
    young = None,
    poisson = None,
    density = None,
    fix_below = None,
    modes = 40,
    max_force = None,
    min_displacement = None,
    max_freq = None,
    alpha_k = None,
    alpha_m = None,
    pressure = "element",
))]
#[allow(clippy::too_many_arguments)]
fn modes(
    py: Python<'_>,
    mesh: PathBuf,
    scale: f64,
    young: Option<f64>,
    poisson: Option<f64>,
    density: Option<f64>,
    fix_below: Option<String>,
    modes: usize,
    max_force: Option<f64>,
    min_displacement: Option<f64>,
    max_freq: Option<f64>,
    alpha_k: Option<f64>,
    alpha_m: Option<f64>,
    pressure: &str,
) -> PyResult<Modes> {
    let (pre, mesh) = run_detached(py, || -> Result<_, String> {
        let spec = mesh.to_string_lossy();
        let mut mesh = load_mesh(&spec)?;
        mesh.scale(positive("scale", scale)?);
        let (e, nu, rho) = default_scene_material();
        let material = Material::new(
            young.unwrap_or(e),
            poisson.unwrap_or(nu),
            density.unwrap_or(rho),
        )
        .map_err(|e| e.to_string())?;
        let fixes: Vec<Fix> = fix_below
            .as_deref()
            .map(parse_fix_below)
            .transpose()?
            .into_iter()
            .collect();
        let d = SelectionParams::default();
        let alpha_k = alpha_k.unwrap_or(d.alpha_stiffness);
        let alpha_m = alpha_m.unwrap_or(d.alpha_mass);
        for (name, v) in [("alpha_k", alpha_k), ("alpha_m", alpha_m)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be a finite number >= 0, got {v}"));
            }
        }
        let params = PrecomputeParams {
            n_modes: modes,
            selection: SelectionParams {
                max_force: positive("max_force", max_force.unwrap_or(d.max_force))?,
                min_displacement: positive(
                    "min_displacement",
                    min_displacement.unwrap_or(d.min_displacement),
                )?,
                max_frequency_hz: positive("max_freq", max_freq.unwrap_or(d.max_frequency_hz))?,
                alpha_stiffness: alpha_k,
                alpha_mass: alpha_m,
            },
            ordering: Default::default(),
        };
        let pressure = match pressure {
            "element" => Pressure::Element,
            "nodal" => Pressure::Nodal,
            other => {
                return Err(format!(
                    "pressure must be \"element\" or \"nodal\", got {other:?}"
                ))
            }
        };
        let options = ModesOptions {
            mesh,
            material,
            fixes,
            pressure,
            params,
        };
        let result = compute_modes(options, &mut |_| {}).map_err(|e| format!("{spec}: {e}"))?;
        Ok(((result.pre, result.options.mesh), Vec::new()))
    })?;
    modes_columns(py, &pre, &mesh.nodes, mesh.tets.len())
}

/// A virtual indentation test: the probe pressed along the inward surface normal to
/// each depth, and the normal force there.
#[pyclass(frozen, get_all, module = "palpa")]
struct Indentation {
    /// Depths pressed to (m), in the order given, shape (D,).
    depth_m: Py<PyArray1<f64>>,
    /// Normal force on the probe at each depth (N), shape (D,).
    force_n: Py<PyArray1<f64>>,
    /// The rest surface point pressed (m), shape (3,).
    surface_point: Py<PyArray1<f64>>,
    /// Outward unit surface normal there, shape (3,): the probe pressed along its negative.
    normal: Py<PyArray1<f64>>,
    /// "full" (the full nonlinear static FEM) or "runtime-modal" / "runtime-condensed" /
    /// "runtime-nonlinear".
    method: String,
    /// The scene's name (its `name`, else its source).
    scene: String,
}

#[pymethods]
impl Indentation {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<palpa.Indentation: {} depths through {:?}, {}>",
            self.depth_m.bind(py).len(),
            self.scene,
            self.method
        )
    }
}

/// Presses `scene`'s probe (a scene TOML file; None: the embedded default scene) at `at`
/// = (X, Y) (m, across the scene's up axis) along the inward surface normal to each of
/// `depths` (m), exactly as `palpa indent` does: the runtime model held until its force
/// settles, or the full nonlinear static FEM when `full`.
#[pyfunction]
#[pyo3(signature = (scene, at, depths, *, full = false, cache_dir = None))]
fn indent(
    py: Python<'_>,
    scene: Option<PathBuf>,
    at: Vec<f64>,
    depths: Vec<f64>,
    full: bool,
    cache_dir: Option<PathBuf>,
) -> PyResult<Indentation> {
    let [x, y] = at[..] else {
        return Err(PalpaError::new_err(format!(
            "at must be two coordinates (x, y) in m across the scene's up axis, got {}",
            at.len()
        )));
    };
    let (result, name) = run_detached(py, || -> Result<_, String> {
        let built = build_scene(scene.as_deref(), cache_dir.as_deref(), &mut |_| {})?;
        let name = built.name();
        let options = IndentOptions {
            at: [x, y],
            depths,
            full,
        };
        Ok(((press(built, &options, &mut |_, _| {})?, name), Vec::new()))
    })?;
    let vector = |v: palpa::Vec3| {
        Array1::from_vec(vec![v.x, v.y, v.z])
            .into_pyarray(py)
            .unbind()
    };
    Ok(Indentation {
        depth_m: Array1::from_vec(result.depth_m).into_pyarray(py).unbind(),
        force_n: Array1::from_vec(result.force_n).into_pyarray(py).unbind(),
        surface_point: vector(result.surface_point),
        normal: vector(result.normal),
        method: match result.method {
            Method::Full { .. } => "full".to_string(),
            Method::Runtime { backend } => format!("runtime-{backend}"),
        },
        scene: name,
    })
}

/// The frames of a visual-stream recording (`serve --record`'s `stream.palparec`), as
/// columns: one row per frame the viewers were sent.
#[pyclass(frozen, get_all, module = "palpa")]
struct StreamRecording {
    /// When the recorder received each frame (µs since the Unix epoch), shape (F,).
    received_us: Py<PyArray1<u64>>,
    /// Scene time of the model state shown (s), shape (F,).
    scene_time_s: Py<PyArray1<f64>>,
    /// Frame number, +1 per published frame (gaps: frames not sent), shape (F,).
    sequence: Py<PyArray1<u64>>,
    /// Probe tip (m), shape (F, 3).
    probe_m: Py<PyArray2<f64>>,
    /// Proxy on the deformed surface (m), shape (F, 3).
    proxy_m: Py<PyArray2<f64>>,
    /// Force on the user's hand (N), shape (F, 3).
    force_n: Py<PyArray2<f64>>,
    /// Indentation (m), shape (F,).
    depth_m: Py<PyArray1<f64>>,
    /// Whether the probe touched the tissue, shape (F,).
    in_contact: Py<PyArray1<bool>>,
    /// Records that are not frames (hello, scene, statistics, columns, ...).
    other_messages: usize,
    /// What follows the last whole record, if the file was cut short (a crash, a full
    /// disk): "N bytes at offset O: reason"; None for a whole file.
    torn: Option<String>,
}

#[pymethods]
impl StreamRecording {
    /// Number of frames.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.scene_time_s.bind(py).len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<palpa.StreamRecording: {} frames{}>",
            self.__len__(py),
            if self.torn.is_some() {
                ", torn tail"
            } else {
                ""
            }
        )
    }
}

/// Reads a visual-stream recording (`serve --record DIR`'s `DIR/stream.palparec`) up to
/// its last whole record; a torn tail (a crash, a full disk) is reported in `torn` and
/// as a warning, never an error.
#[pyfunction]
fn read_recording(py: Python<'_>, path: PathBuf) -> PyResult<StreamRecording> {
    let recording = run_detached(py, || -> Result<_, String> {
        let bytes = palpa::files::read_bytes(&path, palpa::files::FileKind::StreamRecording)
            .map_err(|e| e.to_string())?;
        let r =
            palpa_client::read_recording(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let notes = r
            .torn
            .iter()
            .map(|t| {
                format!(
                    "{}: {} bytes at offset {} are not a whole record ({}); read up to there",
                    path.display(),
                    t.bytes,
                    t.offset,
                    t.reason
                )
            })
            .collect();
        Ok((r, notes))
    })?;
    let frames: Vec<(u64, &palpa_client::palpa_protocol::Frame)> = recording
        .messages
        .iter()
        .filter_map(|(t, m)| match m {
            palpa_client::palpa_protocol::ServerMessage::Frame(f) => Some((*t, f)),
            _ => None,
        })
        .collect();
    let n = frames.len();
    let xyz = |v: fn(&palpa_client::palpa_protocol::Frame) -> [f64; 3]| {
        Array2::from_shape_vec((n, 3), frames.iter().flat_map(|(_, f)| v(f)).collect())
            .expect("three values per frame")
            .into_pyarray(py)
            .unbind()
    };
    Ok(StreamRecording {
        received_us: Array1::from_iter(frames.iter().map(|(t, _)| *t))
            .into_pyarray(py)
            .unbind(),
        scene_time_s: Array1::from_iter(frames.iter().map(|(_, f)| f.scene_time))
            .into_pyarray(py)
            .unbind(),
        sequence: Array1::from_iter(frames.iter().map(|(_, f)| f.sequence))
            .into_pyarray(py)
            .unbind(),
        probe_m: xyz(|f| f.probe),
        proxy_m: xyz(|f| f.proxy),
        force_n: xyz(|f| f.force),
        depth_m: Array1::from_iter(frames.iter().map(|(_, f)| f.depth))
            .into_pyarray(py)
            .unbind(),
        in_contact: Array1::from_iter(frames.iter().map(|(_, f)| f.in_contact))
            .into_pyarray(py)
            .unbind(),
        other_messages: recording.messages.len() - n,
        torn: recording
            .torn
            .as_ref()
            .map(|t| format!("{} bytes at offset {}: {}", t.bytes, t.offset, t.reason)),
    })
}

/// palpa from Python: `replay`, `modes`, `indent` and `read_recording`.
#[pymodule]
#[pyo3(name = "palpa")]
fn palpa_python(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(modes, m)?)?;
    m.add_function(wrap_pyfunction!(indent, m)?)?;
    m.add_function(wrap_pyfunction!(read_recording, m)?)?;
    m.add_class::<StreamRecording>()?;
    m.add_class::<Indentation>()?;
    m.add_class::<Replay>()?;
    m.add_class::<Modes>()?;
    m.add("PalpaError", m.py().get_type::<PalpaError>())?;
    Ok(())
}
