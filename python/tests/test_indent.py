"""palpa.indent against the CLI's --json output, and its errors."""

import json
import subprocess

import numpy as np
import pytest

import palpa

DEPTHS = [0.0005, 0.002, 0.004]


def cli_indent(palpa_bin, scene, at, depths, out, cache_dir, full):
    """Runs `palpa indent --json` and returns its JSON."""
    cmd = [
        palpa_bin, "indent", "--scene", str(scene), "--at", f"{at[0]},{at[1]}",
        "--depths", ",".join(repr(d) for d in depths), "--json", str(out),
        "--cache-dir", str(cache_dir),
    ]
    if full:
        cmd.append("--full")
    subprocess.run(cmd, check=True, capture_output=True)
    return json.loads(out.read_text())


@pytest.mark.parametrize("full", [False, True])
def test_indent_equals_the_cli(full, data, palpa_bin, cache_dir, tmp_path):
    scene = data / "scenes" / "coarse_block.toml"
    at = (0.035, 0.0)
    cli = cli_indent(palpa_bin, scene, at, DEPTHS, tmp_path / "i.json", cache_dir, full)
    r = palpa.indent(scene, at, DEPTHS, full=full, cache_dir=cache_dir)
    assert r.method == ("full" if full else "runtime-modal")
    assert r.scene == "coarse block"
    assert list(r.depth_m) == cli["depth_m"] == DEPTHS
    # serde_json prints the shortest digits that round-trip: equal bit for bit.
    assert np.array_equal(r.force_n, np.array(cli["force_n"]))
    assert np.all(np.diff(r.force_n) > 0)
    assert np.allclose(r.surface_point, [0.035, 0.0, 0.0], atol=1e-12)
    assert np.allclose(r.normal, [0.0, 0.0, 1.0], atol=1e-9)


def test_bad_arguments_raise_naming_them(data, cache_dir):
    scene = data / "scenes" / "coarse_block.toml"
    with pytest.raises(palpa.PalpaError, match=r"depth 5 m: .*metres, not millimetres"):
        palpa.indent(scene, (0.0, 0.0), [0.001, 5.0], cache_dir=cache_dir)
    with pytest.raises(palpa.PalpaError, match=r"misses the tissue"):
        palpa.indent(scene, (0.2, 0.0), [0.001], cache_dir=cache_dir)
    with pytest.raises(palpa.PalpaError, match=r"no depths"):
        palpa.indent(scene, (0.0, 0.0), [], cache_dir=cache_dir)


def test_at_and_depths_take_tuples_lists_and_numpy_arrays(data, cache_dir):
    scene = data / "scenes" / "coarse_block.toml"
    by_tuple = palpa.indent(scene, (0.035, 0.0), DEPTHS, cache_dir=cache_dir)
    for at in ([0.035, 0.0], np.array([0.035, 0.0])):
        r = palpa.indent(scene, at, np.array(DEPTHS), cache_dir=cache_dir)
        assert np.array_equal(r.force_n, by_tuple.force_n)
    with pytest.raises(palpa.PalpaError, match=r"at must be two coordinates .* got 3"):
        palpa.indent(scene, [0.0, 0.0, 0.0], DEPTHS, cache_dir=cache_dir)


def test_errors_name_the_python_arguments_not_the_cli_flags(data, cache_dir):
    scene = data / "scenes" / "coarse_block.toml"
    with pytest.raises(palpa.PalpaError) as e:
        palpa.indent(scene, (float("nan"), 0.0), DEPTHS, cache_dir=cache_dir)
    assert str(e.value).startswith("at=NaN") and "--at" not in str(e.value)
