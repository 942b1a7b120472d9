"""Shared fixtures: the repository's data, the palpa CLI binary, one precompute cache."""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def data():
    """tests/data of the repository."""
    return REPO / "tests" / "data"


@pytest.fixture(scope="session")
def palpa_bin():
    """The `palpa` CLI to compare with: $PALPA_BIN (tests/python/main.rs sets it)."""
    path = os.environ.get("PALPA_BIN")
    if not path:
        pytest.skip("PALPA_BIN is not set (cargo test --test python sets it)")
    return path


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """A fresh precompute cache shared by the CLI and the package in this session."""
    return tmp_path_factory.mktemp("palpa-cache")
