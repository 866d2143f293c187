"""Fixtures of the driver tests: where the shared workload traces live.

The traces of the Parallel Workloads Archive are not shipped with the repo; they sit
next to it in ``../shared/workloads`` (see ``SOURCES.md`` there). Tests read them from
that folder only and never copy them. A test that needs one trace asks for it by name
(``trace_path``, ``load_trace``, or ``shared_trace`` outside fixtures) and is skipped,
with the file's name in the reason, when that file is absent, even if the folder holds
others; a test of the folder as a whole (``workloads_dir``) is skipped without it.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from xce_driver.workloads.swf import SwfTrace, read_swf

#: The repository root (this file is ``<root>/tests/driver/conftest.py``).
REPO_ROOT = Path(__file__).resolve().parents[2]
#: The shared traces, next to the repository.
WORKLOADS_DIR = (REPO_ROOT.parent / "shared" / "workloads").resolve()


def absent_reason(name: str) -> str:
    """Why a test that needs the trace ``name`` is skipped when the file is absent."""
    return f"{name} is absent from ../shared/workloads (traces are not shipped with the repo)"


def shared_trace(name: str, folder: Path | None = None) -> Path:
    """The path of the shared trace ``name``; skips the calling test (the reason names
    the file) when it is absent, whether or not the folder holds other traces.

    Args:
        name: the trace's file name, e.g. ``SDSC-SP2-1998-4.2-cln.swf.gz``.
        folder: where to look; default ``WORKLOADS_DIR``.
    """
    path = (WORKLOADS_DIR if folder is None else folder) / name
    if not path.is_file():
        pytest.skip(absent_reason(name))
    return path


@pytest.fixture(scope="session")
def workloads_dir() -> Path:
    """``<repo root>/../shared/workloads``; skips the test when the folder is absent.

    For tests of the folder as a whole; a test that needs one trace uses
    ``trace_path`` or ``load_trace``, which skip per file.
    """
    if not WORKLOADS_DIR.is_dir():
        pytest.skip("../shared/workloads is absent (traces are not shipped with the repo)")
    return WORKLOADS_DIR


@pytest.fixture(scope="session")
def trace_path() -> Callable[[str], Path]:
    """The path of a shared trace by file name; skips the test when that file is absent."""
    return shared_trace


@cache
def _read(path: Path) -> SwfTrace:
    return read_swf(path)


@pytest.fixture(scope="session")
def load_trace() -> Callable[[str], SwfTrace]:
    """Reads a shared trace by file name, once per test session; skips the test when
    that file is absent."""
    return lambda name: _read(shared_trace(name))


@pytest.fixture(scope="session")
def xce_sched() -> str:
    """The installed ``xce-sched`` console script (next to this interpreter, else on
    PATH); skips the test when it is not installed."""
    beside = Path(sys.executable).with_name("xce-sched")
    if beside.exists():
        return str(beside)
    found = shutil.which("xce-sched")
    if found is None:
        pytest.skip("the xce-sched console script is not installed")
    return found
