"""The build backend: setuptools', with the compiled core as an opt-in.

``XCE_MYPYC=1 python3 -m pip install .`` compiles the scheduling core with mypyc
(``setup.py``). Only then does the build need mypy, and what mypy must import to
check the core; every other build (the README's, an editable one) needs setuptools
alone and makes pure Python. An editable install is never compiled: a compiled module
would shadow the source it was built from, and an edit would silently not count.

setuptools runs ``setup.py`` in every hook; ``XCE_BUILD_STEP`` tells it which, so that
it compiles only when it builds the wheel (not once more for its metadata) and says
why not only where that is the answer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403  (the hooks this module does not change)

#: What compiling the core needs beyond setuptools: mypyc, and the core's own imports,
#: which mypy reads to type-check it (the pydantic plugin among them).
_COMPILE_REQUIRES = [
    "mypy>=1.10",
    "pydantic>=2.6",
    "sortedcontainers>=2.4",
    "lark>=1.1",
    "mypy-extensions>=1.0",
]

_T = TypeVar("_T")


@contextmanager
def _step(name: str) -> Iterator[None]:
    """``XCE_BUILD_STEP`` is ``name`` while setuptools runs ``setup.py`` for a hook:
    ``requires``, ``metadata``, ``editable`` or ``wheel``."""
    os.environ["XCE_BUILD_STEP"] = name
    try:
        yield
    finally:
        del os.environ["XCE_BUILD_STEP"]


def _in_step(name: str, hook: Callable[..., _T], *args: Any) -> _T:
    with _step(name):
        return hook(*args)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements, and mypy's when ``XCE_MYPYC=1``."""
    requires = _in_step("requires", build_meta.get_requires_for_build_wheel, config_settings)
    extra = _COMPILE_REQUIRES if os.environ.get("XCE_MYPYC") == "1" else []
    return [*requires, *extra]


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    """The wheel's metadata, without compiling (the wheel's build compiles)."""
    return _in_step(
        "metadata", build_meta.prepare_metadata_for_build_wheel, metadata_directory, config_settings
    )


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """The wheel: compiled when ``XCE_MYPYC=1`` and mypyc and a C compiler are there."""
    return _in_step(
        "wheel", build_meta.build_wheel, wheel_directory, config_settings, metadata_directory
    )


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements alone: an editable install is pure Python."""
    return _in_step("editable", build_meta.get_requires_for_build_editable, config_settings)


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    """The editable install's metadata (pure Python)."""
    return _in_step(
        "editable",
        build_meta.prepare_metadata_for_build_editable,
        metadata_directory,
        config_settings,
    )


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """An editable install, always pure Python."""
    return _in_step(
        "editable", build_meta.build_editable, wheel_directory, config_settings, metadata_directory
    )
