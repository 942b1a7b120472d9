"""palpa from Python: replay probe trajectories through a tissue scene, and the
vibration modes of a tetrahedral mesh, as numpy arrays (SI units: s, m, N, Hz)."""

import os
from typing import Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, "os.PathLike[str]"]

class PalpaError(Exception):
    """An input was rejected or a computation failed; the message names the file,
    line or scene key (e.g. ``scene.toml: contact.probe_radius: ...``)."""

class Replay:
    """A trajectory replayed through a scene: one row per haptic tick, scene frame."""

    t: npt.NDArray[np.float64]
    """Virtual time (s), shape (N,)."""
    position: npt.NDArray[np.float64]
    """Probe tip (m), shape (N, 3)."""
    force: npt.NDArray[np.float64]
    """Force on the user's hand (N), shape (N, 3)."""
    depth: npt.NDArray[np.float64]
    """Indentation below the undeformed surface (m), shape (N,)."""
    contact: npt.NDArray[np.bool_]
    """Whether the model reported contact, shape (N,)."""
    scene: str
    """The scene's name (its ``name``, else its source)."""
    t_s: npt.NDArray[np.float64]
    """``t`` named with its unit (s)."""
    position_m: npt.NDArray[np.float64]
    """``position`` named with its unit (m)."""
    force_n: npt.NDArray[np.float64]
    """``force`` named with its unit (N)."""
    depth_m: npt.NDArray[np.float64]
    """``depth`` named with its unit (m)."""
    def __len__(self) -> int: ...

def replay(
    scene: Optional[_Path], trajectory: _Path, *, cache_dir: Optional[_Path] = None
) -> Replay:
    """Replay ``trajectory`` (a ``t,x,y,z,buttons`` CSV, s and m) through ``scene``
    (a scene TOML file; None: the embedded default scene) in deterministic lock-step,
    exactly as ``palpa replay`` does: the same rows as its ``--out`` CSV. The modal
    precompute is cached in ``cache_dir`` (None: $PALPA_CACHE_DIR, else
    ~/.cache/palpa). Raises PalpaError naming the file, line or scene key; what palpa
    warns of (a trajectory in millimetres, a probe that never touches the tissue) is
    issued as a ``UserWarning``."""

class Modes:
    """The vibration modes of a mesh, ascending: every computed mode (K of them) and
    the shapes of the kept ones."""

    freq_hz: npt.NDArray[np.float64]
    """Natural frequency (Hz), shape (K,); exactly 0 for rigid-body modes."""
    eigenvalue: npt.NDArray[np.float64]
    """lambda = omega^2 (rad^2/s^2), shape (K,), as computed (rigid modes ~ 0)."""
    damping_ratio: npt.NDArray[np.float64]
    """Rayleigh damping ratio zeta = (alpha_k lambda + alpha_m) / (2 omega), shape (K,);
    NaN for rigid modes."""
    static_response: npt.NDArray[np.float64]
    """Largest static displacement ``max_force`` causes in the mode (m), shape (K,);
    NaN for rigid modes (unbounded)."""
    kept: npt.NDArray[np.bool_]
    """Whether selection kept the mode, shape (K,)."""
    fate: list[str]
    """Per mode: "kept", "kept-rigid", "unobservable" or "above-cutoff"."""
    nodes: npt.NDArray[np.float64]
    """Node positions (m, after ``scale``), shape (nodes, 3)."""
    shapes: npt.NDArray[np.float64]
    """Mass-normalised shapes of the kept modes (m kg^-1/2), shape (nodes, 3, kept);
    fixed nodes' rows are zero."""
    n_tets: int
    """Tetrahedra of the mesh."""
    n_free_dofs: int
    """Free degrees of freedom."""
    n_fixed_nodes: int
    """Fixed nodes."""
    max_residual: float
    """Largest relative residual |Kx - lambda Mx| / |Kx| over the elastic modes."""
    timings_s: dict[str, float]
    """Stage times (s): "assembly", "factorisation", "eigen"."""

def modes(
    mesh: _Path,
    *,
    scale: float = 1.0,
    young: Optional[float] = None,
    poisson: Optional[float] = None,
    density: Optional[float] = None,
    fix_below: Optional[str] = None,
    modes: int = 40,
    max_force: Optional[float] = None,
    min_displacement: Optional[float] = None,
    max_freq: Optional[float] = None,
    alpha_k: Optional[float] = None,
    alpha_m: Optional[float] = None,
    pressure: str = "element",
) -> Modes:
    """The lowest ``modes`` vibration modes of ``mesh`` (a .msh, .node/.ele or .vtk
    file, or ``box:NXxNYxNZ[:SXxSYxSZ]``), selected as ``palpa modes`` does. Young's
    modulus (Pa), Poisson ratio and density (kg/m^3) default to the default scene's
    soft tissue. Mode selection keeps a mode whose static response to ``max_force``
    (N; None: 10) reaches ``min_displacement`` (m; None: 1e-5) and whose frequency is
    at most ``max_freq`` (Hz; None: 100); damping is Rayleigh, ``alpha_k`` (s; None:
    2e-3) and ``alpha_m`` (1/s; None: 2) -- the defaults of ``palpa modes``.
    ``fix_below`` is ``"AXIS=DIST"`` (m, after ``scale``), e.g.
    ``"z=0.001"``; nothing fixed: a free body with six rigid modes. ``pressure`` is
    ``"element"`` or ``"nodal"`` (nodal-averaged pressure, which does not lock as the
    Poisson ratio nears 0.5). Raises PalpaError naming the file or argument."""

class Indentation:
    """A virtual indentation test: the probe pressed along the inward surface normal
    to each depth, and the normal force there."""

    depth_m: npt.NDArray[np.float64]
    """Depths pressed to (m), in the order given, shape (D,)."""
    force_n: npt.NDArray[np.float64]
    """Normal force on the probe at each depth (N), shape (D,)."""
    surface_point: npt.NDArray[np.float64]
    """The rest surface point pressed (m), shape (3,)."""
    normal: npt.NDArray[np.float64]
    """Outward unit surface normal there, shape (3,); the probe pressed along its
    negative."""
    method: str
    """"full" (the full nonlinear static FEM) or "runtime-modal" /
    "runtime-condensed" / "runtime-nonlinear"."""
    scene: str
    """The scene's name (its ``name``, else its source)."""

def indent(
    scene: Optional[_Path],
    at: Union[Sequence[float], npt.NDArray[np.float64]],
    depths: Union[Sequence[float], npt.NDArray[np.float64]],
    *,
    full: bool = False,
    cache_dir: Optional[_Path] = None,
) -> Indentation:
    """Press ``scene``'s probe (a scene TOML file; None: the embedded default scene) at
    ``at`` = (X, Y) (m, the two coordinates across the scene's up axis) along the
    inward surface normal to each of ``depths`` (m, in order), exactly as ``palpa
    indent`` does: the scene's runtime model held until its force settles, or, with
    ``full``, the full nonlinear static FEM with each material's strain-energy law.
    Raises PalpaError naming the scene key or the bad argument."""

class StreamRecording:
    """The frames of a visual-stream recording, one row per frame the viewers were sent."""

    received_us: npt.NDArray[np.uint64]
    """When the recorder received each frame (us since the Unix epoch), shape (F,)."""
    scene_time_s: npt.NDArray[np.float64]
    """Scene time of the model state shown (s), shape (F,)."""
    sequence: npt.NDArray[np.uint64]
    """Frame number, +1 per published frame (gaps: frames not sent), shape (F,)."""
    probe_m: npt.NDArray[np.float64]
    """Probe tip (m), shape (F, 3)."""
    proxy_m: npt.NDArray[np.float64]
    """Proxy on the deformed surface (m), shape (F, 3)."""
    force_n: npt.NDArray[np.float64]
    """Force on the user's hand (N), shape (F, 3)."""
    depth_m: npt.NDArray[np.float64]
    """Indentation (m), shape (F,)."""
    in_contact: npt.NDArray[np.bool_]
    """Whether the probe touched the tissue, shape (F,)."""
    other_messages: int
    """Records that are not frames (hello, scene, statistics, columns, ...)."""
    torn: Optional[str]
    """What follows the last whole record of a file cut short (a crash, a full disk);
    None for a whole file."""
    def __len__(self) -> int: ...

def read_recording(path: _Path) -> StreamRecording:
    """Read a visual-stream recording (``serve --record DIR``'s ``DIR/stream.palparec``)
    up to its last whole record; a torn tail is reported in ``torn`` and as a
    ``UserWarning``, never an error. Raises PalpaError for a file that is not one."""
