"""The build backend: setuptools', with the compiled core as an opt-in.

``XCE_MYPYC=1 python3 -m pip install .`` compiles the scheduling core with mypyc
(``setup.py``). Only then does the build need mypy, and what mypy must import to
check the core; every other build (the README's, an editable one) needs setuptools
alone and makes pure Python. An editable install is never compiled: a compiled module
would shadow the source it was built from, and an edit would silently not count.
"""

from __future__ import annotations

import os
from typing import Any

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


def _compiling() -> bool:
    return os.environ.get("XCE_MYPYC") == "1"


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements, and mypy's when ``XCE_MYPYC=1``.

    setuptools runs ``setup.py`` to answer, before mypy is installed:
    ``XCE_BUILD_REQUIRES`` tells it not to compile (nor say why not) yet."""
    extra = _COMPILE_REQUIRES if _compiling() else []
    os.environ["XCE_BUILD_REQUIRES"] = "1"
    try:
        requires = build_meta.get_requires_for_build_wheel(config_settings)
    finally:
        del os.environ["XCE_BUILD_REQUIRES"]
    return [*requires, *extra]


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """An editable install, always pure Python (``setup.py`` reads ``XCE_EDITABLE``)."""
    os.environ["XCE_EDITABLE"] = "1"
    return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
