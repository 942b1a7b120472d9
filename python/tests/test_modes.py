"""palpa.modes against an independent numpy FEM of the same mesh (read from its VTK
twin), and its errors."""

import numpy as np
import pytest

import palpa

E, NU, RHO = 30e3, 0.45, 1000.0  # the default scene's soft tissue


def read_vtk(path):
    """Nodes and tetrahedra of a legacy ASCII VTK unstructured grid (cell type 10)."""
    words = path.read_text().split()
    i = words.index("POINTS")
    n = int(words[i + 1])
    nodes = np.array(words[i + 3 : i + 3 + 3 * n], dtype=float).reshape(n, 3)
    i = words.index("CELLS")
    cells, pos = [], i + 3
    for _ in range(int(words[i + 1])):
        k = int(words[pos])
        cells.append([int(w) for w in words[pos + 1 : pos + 1 + k]])
        pos += k + 1
    i = words.index("CELL_TYPES")
    types = [int(w) for w in words[i + 2 : i + 2 + len(cells)]]
    return nodes, np.array([c for c, t in zip(cells, types) if t == 10])


def stiffness_and_mass(nodes, tets, young, nu, rho):
    """Linear tetrahedra: K = sum V B^T D B, lumped M (rho V / 4 per node)."""
    lam = young * nu / ((1 + nu) * (1 - 2 * nu))
    mu = young / (2 * (1 + nu))
    d = np.zeros((6, 6))
    d[:3, :3] = lam
    d[:3, :3] += 2 * mu * np.eye(3)
    d[3:, 3:] = mu * np.eye(3)
    n = len(nodes)
    k = np.zeros((3 * n, 3 * n))
    m = np.zeros(3 * n)
    for tet in tets:
        x = nodes[tet]
        a = np.hstack([np.ones((4, 1)), x])
        vol = abs(np.linalg.det(a)) / 6
        grad = np.linalg.inv(a)[1:]  # d(shape function)/dx, 3 x 4
        b = np.zeros((6, 12))
        for j in range(4):
            gx, gy, gz = grad[:, j]
            b[:, 3 * j : 3 * j + 3] = [
                [gx, 0, 0],
                [0, gy, 0],
                [0, 0, gz],
                [gy, gx, 0],
                [0, gz, gy],
                [gz, 0, gx],
            ]
        dofs = np.array([[3 * v, 3 * v + 1, 3 * v + 2] for v in tet]).ravel()
        k[np.ix_(dofs, dofs)] += vol * b.T @ d @ b
        m[dofs] += rho * vol / 4
    return k, m


def reference_modes(k, m, free):
    """Eigenvalues (ascending) and M-normalised shapes of K x = lambda M x on `free` DOFs."""
    k, s = k[np.ix_(free, free)], 1 / np.sqrt(m[free])
    lam, y = np.linalg.eigh(s[:, None] * k * s[None, :])
    return lam, s[:, None] * y


@pytest.fixture(scope="module")
def cubes(data):
    nodes, tets = read_vtk(data / "meshes" / "cubes.vtk")
    assert (len(nodes), len(tets)) == (12, 12)
    return nodes, tets


def node_order(ours, theirs):
    """Index into `theirs` of each of `ours` (same positions)."""
    d = np.linalg.norm(ours[:, None, :] - theirs[None, :, :], axis=2)
    order = d.argmin(axis=1)
    assert np.allclose(d[np.arange(len(ours)), order], 0)
    return order


def test_free_body_modes_match_numpy_fem(data, cubes):
    nodes, tets = cubes
    r = palpa.modes(data / "meshes" / "cubes.msh", modes=36, max_freq=1e9)
    k, m = stiffness_and_mass(nodes, tets, E, NU, RHO)
    lam, _ = reference_modes(k, m, np.arange(36))

    assert r.fate[:6] == ["kept-rigid"] * 6
    assert np.array_equal(r.freq_hz[:6], np.zeros(6))
    assert np.isnan(r.damping_ratio[:6]).all() and np.isnan(r.static_response[:6]).all()
    scale = lam[-1]
    assert np.allclose(r.eigenvalue[:6], 0, atol=1e-9 * scale)

    elastic = lam[6:]
    assert np.allclose(r.eigenvalue[6:], elastic, rtol=1e-9, atol=1e-12 * scale)
    assert np.allclose(r.freq_hz[6:], np.sqrt(elastic) / (2 * np.pi), rtol=1e-9)
    zeta = (2e-3 * elastic + 2.0) / (2 * np.sqrt(elastic))
    assert np.allclose(r.damping_ratio[6:], zeta, rtol=1e-9)
    assert (r.n_tets, r.n_free_dofs, r.n_fixed_nodes) == (12, 36, 0)


def test_clamped_modes_and_shapes_match_numpy_fem(data, cubes):
    nodes, tets = cubes
    r = palpa.modes(data / "meshes" / "cubes.msh", fix_below="x=0.0", modes=24, max_freq=1e9)
    k, m = stiffness_and_mass(nodes, tets, E, NU, RHO)
    free = np.array([3 * v + c for v in range(12) if nodes[v, 0] > 0 for c in range(3)])
    lam, _ = reference_modes(k, m, free)

    assert (r.n_free_dofs, r.n_fixed_nodes) == (24, 4)
    assert np.allclose(r.eigenvalue, lam, rtol=1e-9)
    assert "kept-rigid" not in r.fate

    # Each kept shape, moved into the reference's node order, is M-normalised and
    # solves K x = lambda M x with the reference's K and M.
    order = node_order(r.nodes, nodes)
    kept = r.eigenvalue[r.kept]
    assert r.shapes.shape == (12, 3, len(kept)) and len(kept) > 0
    x = np.zeros((36, len(kept)))
    for ours, theirs in enumerate(order):
        x[3 * theirs : 3 * theirs + 3] = r.shapes[ours]
    assert np.allclose(x.T @ (m[:, None] * x), np.eye(len(kept)), atol=1e-9)
    kx, mx = (k @ x)[free], (m[:, None] * x)[free] * kept
    assert np.allclose(kx, mx, rtol=1e-7, atol=1e-9 * np.abs(kx).max())


def test_frequencies_scale_with_size_and_stiffness(data):
    mesh = data / "meshes" / "cubes.msh"
    base = palpa.modes(mesh, fix_below="x=0.0", modes=10)
    # f ~ sqrt(E / rho) / L: twice as large halves it, four times as stiff doubles it.
    bigger = palpa.modes(mesh, fix_below="x=0.0", modes=10, scale=2.0)
    stiffer = palpa.modes(mesh, fix_below="x=0.0", modes=10, young=4 * E)
    assert np.allclose(bigger.freq_hz, base.freq_hz / 2, rtol=1e-9)
    assert np.allclose(stiffer.freq_hz, base.freq_hz * 2, rtol=1e-9)


def test_bad_inputs_raise_naming_what(data, tmp_path):
    with pytest.raises(palpa.PalpaError, match=r"missing\.msh"):
        palpa.modes(tmp_path / "missing.msh")
    with pytest.raises(palpa.PalpaError, match=r"fix_below"):
        palpa.modes(data / "meshes" / "cubes.msh", fix_below="x0.1")
    with pytest.raises(palpa.PalpaError, match=r"scale"):
        palpa.modes(data / "meshes" / "cubes.msh", scale=-1.0)
    with pytest.raises(palpa.PalpaError, match=r"(?i)poisson"):
        palpa.modes(data / "meshes" / "cubes.msh", poisson=0.5)


def test_a_locking_material_warns_in_pythons_words(data):
    with pytest.warns(UserWarning, match=r"poisson=0\.49.*pressure=\"nodal\"") as got:
        palpa.modes(data / "meshes" / "cubes.msh", fix_below="x=0.0", modes=4, poisson=0.49)
    assert not any("--" in str(w.message) for w in got), [str(w.message) for w in got]


def test_nodal_pressure_does_not_lock():
    # A 20:1 cantilever, 2 cells across, nearly incompressible: Euler-Bernoulli's first
    # bending frequency is 0.4039 Hz whatever the Poisson ratio.
    beam = dict(fix_below="x=1e-9", young=1e5, poisson=0.499, modes=2)
    element = palpa.modes("box:40x2x2:0.2x0.01x0.01", **beam)
    nodal = palpa.modes("box:40x2x2:0.2x0.01x0.01", pressure="nodal", **beam)
    assert element.freq_hz[0] > 5 * 0.4039
    assert abs(nodal.freq_hz[0] / 0.4039 - 1) < 0.3
    with pytest.raises(palpa.PalpaError, match=r"pressure"):
        palpa.modes("box:2x2x2", pressure="nodes")


def test_selection_drops_the_modes_above_the_cutoff(data):
    mesh = data / "meshes" / "cubes.msh"
    every = palpa.modes(mesh, fix_below="x=0.0", modes=24, max_freq=1e9)
    cut = float(np.median(every.freq_hz))
    r = palpa.modes(mesh, fix_below="x=0.0", modes=24, max_freq=cut)
    above = r.freq_hz > cut
    assert above.any() and not above.all()
    assert r.fate == ["above-cutoff" if a else "kept" for a in above]
    assert np.array_equal(r.kept, ~above)
    assert r.shapes.shape == (12, 3, int((~above).sum()))
