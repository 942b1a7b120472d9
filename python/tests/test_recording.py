"""palpa.read_recording on a stream recorded by a real `palpa serve --record`, whole
and cut short."""

import signal
import subprocess

import numpy as np
import pytest

import palpa


def record_a_session(palpa_bin, scene, out, cache_dir, seconds=2.0):
    """Runs `palpa serve --device sim:press --record OUT` for `seconds` after it is ready,
    then stops it with Ctrl-C as a user would."""
    cmd = [
        palpa_bin, "serve", "--scene", str(scene), "--device", "sim:press",
        "--record", str(out), "--bind", "127.0.0.1:0", "--cache-dir", str(cache_dir),
        "--realtime", "off",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stdout:
            if line.startswith("press Ctrl-C"):
                break
        else:
            pytest.fail(f"serve exited before it was ready: {p.stderr.read()}")
        try:
            p.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pass
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    return out / "stream.palparec"


def test_a_served_recording_reads_back_frame_by_frame_and_cut_short(
    data, palpa_bin, cache_dir, tmp_path
):
    path = record_a_session(palpa_bin, data / "scenes" / "coarse_block.toml", tmp_path / "rec", cache_dir)
    r = palpa.read_recording(path)
    assert r.torn is None
    assert len(r) >= 20, r
    assert r.probe_m.shape == r.force_n.shape == r.proxy_m.shape == (len(r), 3)
    assert np.all(np.diff(r.sequence.astype(np.int64)) >= 1)
    assert np.all(np.diff(r.scene_time_s) >= 0)
    assert np.all(np.diff(r.received_us.astype(np.int64)) >= 0)
    assert r.other_messages >= 2  # the hello and the scene, before any frame
    assert np.all(r.depth_m[~r.in_contact] == 0)

    whole = path.read_bytes()
    cut = tmp_path / "cut.palparec"
    cut.write_bytes(whole[:-3])
    with pytest.warns(UserWarning, match=r"not a whole record"):
        c = palpa.read_recording(cut)
    assert c.torn is not None
    assert len(c) + c.other_messages == len(r) + r.other_messages - 1
    assert np.array_equal(c.force_n, r.force_n[: len(c)])

    bad = tmp_path / "bad.palparec"
    bad.write_bytes(b"not a recording")
    with pytest.raises(palpa.PalpaError):
        palpa.read_recording(bad)
