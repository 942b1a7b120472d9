"""Special files and a panic inside palpa: the package raises PalpaError with the CLI's
words (issue 42), never reads a device or blocks on a FIFO, never a PanicException."""

import os
import subprocess
import time

import pytest

import palpa


@pytest.fixture()
def specials(tmp_path):
    """/dev/zero, /dev/urandom and a FIFO, with the kind each is named as."""
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    return [
        ("/dev/zero", "character device"),
        ("/dev/urandom", "character device"),
        (str(fifo), "FIFO"),
    ]


def test_every_path_argument_refuses_special_files_naming_them(specials, data, cache_dir):
    scene = data / "scenes" / "coarse_block.toml"
    trajectory = data / "trajectories" / "press_hold_release.csv"
    for path, kind in specials:
        calls = [
            lambda: palpa.replay(path, trajectory, cache_dir=cache_dir),
            lambda: palpa.replay(scene, path, cache_dir=cache_dir),
            lambda: palpa.modes(path),
            lambda: palpa.indent(path, (0.0, 0.0), [0.001], cache_dir=cache_dir),
        ]
        for call in calls:
            start = time.monotonic()
            with pytest.raises(palpa.PalpaError) as raised:
                call()
            elapsed = time.monotonic() - start
            assert f"{path}: is a {kind}" in str(raised.value), str(raised.value)
            # Far above the ~1 ms it takes: only a read of the device or a blocked FIFO
            # would come near it.
            assert elapsed < 5.0, elapsed


def test_the_package_and_the_cli_say_the_same_words(palpa_bin, tmp_path):
    fifo = tmp_path / "pipe.msh"
    os.mkfifo(fifo)
    cli = subprocess.run([palpa_bin, "modes", str(fifo)], capture_output=True, text=True)
    assert cli.returncode == 1
    with pytest.raises(palpa.PalpaError) as raised:
        palpa.modes(fifo)
    assert str(raised.value) in cli.stderr, (str(raised.value), cli.stderr)
