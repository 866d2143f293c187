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

import functools
import os
from collections.abc import Callable
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


def _in_step(name: str, hook: Callable[..., Any]) -> Callable[..., Any]:
    """setuptools' ``hook`` (same arguments, same result), with ``XCE_BUILD_STEP`` set
    to ``name`` while it runs ``setup.py``: ``requires``, ``metadata``, ``editable``
    or ``wheel``."""

    @functools.wraps(hook)
    def run(*args: Any, **kwargs: Any) -> Any:
        os.environ["XCE_BUILD_STEP"] = name
        try:
            return hook(*args, **kwargs)
        finally:
            del os.environ["XCE_BUILD_STEP"]

    return run


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements, and mypy's when ``XCE_MYPYC=1``."""
    requires = _in_step("requires", build_meta.get_requires_for_build_wheel)(config_settings)
    extra = _COMPILE_REQUIRES if os.environ.get("XCE_MYPYC") == "1" else []
    return [*requires, *extra]


#: The wheel's metadata is made without compiling (the wheel's build compiles), and an
#: editable install is always pure Python.
prepare_metadata_for_build_wheel = _in_step("metadata", build_meta.prepare_metadata_for_build_wheel)
build_wheel = _in_step("wheel", build_meta.build_wheel)
get_requires_for_build_editable = _in_step("editable", build_meta.get_requires_for_build_editable)
prepare_metadata_for_build_editable = _in_step(
    "editable", build_meta.prepare_metadata_for_build_editable
)
build_editable = _in_step("editable", build_meta.build_editable)
