"""palpa.replay against the CLI's own output file, and its errors."""

import csv
import subprocess

import numpy as np
import pytest

import palpa

COLUMNS = "t,x,y,z,fx,fy,fz,depth,contact"


def cli_replay(palpa_bin, trajectory, out, cache_dir, scene=None):
    """Runs `palpa replay` and returns its CSV's text."""
    cmd = [palpa_bin, "replay", str(trajectory), "--out", str(out), "--cache-dir", str(cache_dir)]
    if scene is not None:
        cmd += ["--scene", str(scene)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out.read_text()


def rust_display(x):
    """A float as Rust's `{}` prints it: the shortest digits that round-trip, never an
    exponent, no trailing '.0' ("1", "-0", "0.0000001")."""
    return np.format_float_positional(x, unique=True, trim="-")


def rows_of(r):
    """The package's result as the CLI's CSV rows (strings)."""
    cols = [r.t, *r.position.T, *r.force.T, r.depth]
    return [
        ",".join([*(rust_display(c[i]) for c in cols), str(int(r.contact[i]))])
        for i in range(len(r))
    ]


@pytest.mark.parametrize("name", ["press_hold_release.csv", "slide_over_inclusion.csv"])
def test_replay_equals_the_cli_csv_bit_for_bit(name, data, palpa_bin, cache_dir, tmp_path):
    trajectory = data / "trajectories" / name
    text = cli_replay(palpa_bin, trajectory, tmp_path / "cli.csv", cache_dir)
    r = palpa.replay(None, trajectory, cache_dir=cache_dir)

    # The CLI's CSV opens with the scene's name (`palpa plot` titles from it).
    scene_line, *lines = text.splitlines()
    assert scene_line == f"# scene: {r.scene}"
    assert lines[0] == COLUMNS
    table = list(csv.reader(lines[1:]))
    assert len(r) == len(table) > 1000
    assert r.position.shape == r.force.shape == (len(r), 3)
    assert r.scene == "tissue block with a stiff inclusion"

    # Parsed with Python's correctly rounded float(), compared as bit patterns (so -0.0
    # and 0.0 differ).
    cli = np.array([[float(v) for v in row[:8]] for row in table])
    ours = np.column_stack([r.t, r.position, r.force, r.depth])
    assert np.array_equal(cli.view(np.uint64), ours.view(np.uint64))
    assert np.array_equal(np.array([row[8] == "1" for row in table]), r.contact)
    # And the text itself, digit for digit.
    assert rows_of(r) == lines[1:]

    # The replay pressed the tissue: forces and contact are not trivially zero.
    assert r.contact.any() and np.abs(r.force[:, 2]).max() > 1.0


def test_replay_of_a_scene_file_names_the_scene(data, palpa_bin, cache_dir, tmp_path):
    scene = data.parents[1] / "scenes" / "default.toml"
    trajectory = data / "trajectories" / "fast_tap.csv"
    text = cli_replay(palpa_bin, trajectory, tmp_path / "cli.csv", cache_dir, scene=scene)
    r = palpa.replay(str(scene), str(trajectory), cache_dir=str(cache_dir))
    assert rows_of(r) == [l for l in text.splitlines() if not l.startswith("#")][1:]


def bad_scene(tmp_path, data, old, new):
    text = (data.parents[1] / "scenes" / "default.toml").read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new))
    return path


def test_a_bad_scene_value_raises_naming_file_and_key(data, tmp_path):
    scene = bad_scene(tmp_path, data, "probe_radius = 0.0", "probe_radius = -0.002")
    trajectory = data / "trajectories" / "fast_tap.csv"
    with pytest.raises(palpa.PalpaError, match=r"bad\.toml: contact\.probe_radius"):
        palpa.replay(scene, trajectory)


def test_an_unknown_scene_key_raises_naming_it(data, tmp_path):
    scene = bad_scene(tmp_path, data, "young = 240e3", "youngs = 240e3")
    trajectory = data / "trajectories" / "fast_tap.csv"
    with pytest.raises(palpa.PalpaError, match=r"(?s)bad\.toml.*youngs"):
        palpa.replay(scene, trajectory)


def test_a_missing_scene_file_raises_naming_it(data, tmp_path):
    with pytest.raises(palpa.PalpaError, match=r"no_such_scene\.toml"):
        palpa.replay(tmp_path / "no_such_scene.toml", data / "trajectories" / "fast_tap.csv")


def test_a_bad_trajectory_line_raises_naming_file_and_line(tmp_path):
    trajectory = tmp_path / "traj.csv"
    trajectory.write_text("t,x,y,z,buttons\n0,0,0,0.01,0\n0.001,0,zero,0.01,0\n")
    with pytest.raises(palpa.PalpaError, match=r"traj\.csv:3"):
        palpa.replay(None, trajectory)


def test_a_trajectory_in_millimetres_warns_in_python(data, cache_dir, tmp_path):
    metres = (data / "trajectories" / "fast_tap.csv").read_text().splitlines()
    rows = [metres[0]] + [
        ",".join([t, *(str(float(v) * 1e3) for v in (x, y, z)), b])
        for t, x, y, z, b in (line.split(",") for line in metres[1:])
    ]
    mm = tmp_path / "tap_mm.csv"
    mm.write_text("\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match=r"millimetres"):
        r = palpa.replay(data / "scenes" / "coarse_block.toml", mm, cache_dir=cache_dir)
    assert not r.contact.any()
    assert r.force_n is not None and np.array_equal(r.force_n, r.force)
    assert np.array_equal(r.t_s, r.t) and np.array_equal(r.depth_m, r.depth)
