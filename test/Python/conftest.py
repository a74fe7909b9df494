"""Shared fixtures of the Python package's tests (run by CTest, one entry
per file, with PYTHONPATH=build/python, ETLLM_SHARED_DIR and ETLLM_BIN_DIR
set; see test/Python/CMakeLists.txt)."""

import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # models.py


def _dir(env, fallback):
    p = os.environ.get(env)
    return pathlib.Path(p) if p else fallback


SHARED = _dir("ETLLM_SHARED_DIR", HERE.parents[2] / "shared")
BIN = _dir("ETLLM_BIN_DIR", HERE.parents[1] / "build" / "bin")


@pytest.fixture(scope="session")
def shared():
    """The shared test data (models, tokenizers); tests that need it are
    skipped without it, as lit's `REQUIRES: shared` tests are."""
    if not (SHARED / "models").is_dir():
        pytest.skip(f"no shared test data in {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def tok512(shared):
    return shared / "models" / "stories260K" / "tok512.bin"


@pytest.fixture(scope="session")
def tool():
    """The path of a built tool (etllm-export, etllm-run, ...)."""
    def find(name):
        p = BIN / name
        if not p.exists():
            pytest.fail(f"{p} is not built (set ETLLM_BIN_DIR)")
        return str(p)
    return find
