"""Fixtures of the driver tests: where the shared workload traces live.

The traces of the Parallel Workloads Archive are not shipped with the repo; they sit
next to it in ``../shared/workloads`` (see ``SOURCES.md`` there). Tests read them from
that folder only and never copy them; without the folder those tests are skipped.
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


@pytest.fixture(scope="session")
def workloads_dir() -> Path:
    """``<repo root>/../shared/workloads``; skips the test when the folder is absent."""
    if not WORKLOADS_DIR.is_dir():
        pytest.skip("../shared/workloads is absent (traces are not shipped with the repo)")
    return WORKLOADS_DIR


@cache
def _read(path: Path) -> SwfTrace:
    return read_swf(path)


@pytest.fixture(scope="session")
def load_trace(workloads_dir: Path) -> Callable[[str], SwfTrace]:
    """Reads a trace of ``workloads_dir`` by file name, once per test session."""
    return lambda name: _read(workloads_dir / name)


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
