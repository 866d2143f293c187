"""Compiled modules of the optional compiled core; everything else is in pyproject.toml.

With ``XCE_MYPYC=1`` (``build_support/backend.py`` then brings mypy into the build),
the scheduling core's modules are compiled to C extensions by mypyc: the same code,
the same decisions, about 1.2 times as fast. Without it, or without mypyc or a C
compiler, or for an editable install, the package is pure Python, as it always works,
and the build says why on stderr (pip shows a build's output with ``-v``).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup

CORE = Path("services/core/xce_core")

#: Core modules left as Python: exceptions that derive from built-in ones (mypyc cannot
#: compile those), plugin loading and the plugin interfaces others implement, and the
#: resource-requirement parser (lark calls back into it by name; its results are cached).
PURE = {"__init__.py", "errors.py", "plugins.py", "in_tree.py", "parser.py"}


def _why_not(step: str) -> str | None:
    """Why the core, asked for, is not compiled in this build step, or None when it is."""
    if step == "editable":
        return "an editable install is never compiled (the source would be shadowed)"
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        return "mypyc is not installed"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler}) on PATH"
    return None


def compiled_modules() -> list[object]:
    """The extension modules of the compiled core (empty for a pure-Python build).

    Only when ``XCE_MYPYC=1``, and only in the steps that make the package: asked what
    it needs (``requires``) or its metadata, the build has no answer yet and says
    nothing (``build_support/backend.py`` sets ``XCE_BUILD_STEP``)."""
    step = os.environ.get("XCE_BUILD_STEP", "wheel")
    if os.environ.get("XCE_MYPYC") != "1" or step in ("requires", "metadata"):
        return []
    why = _why_not(step)
    if why is not None:
        print(f"xce-scheduler: building pure Python: {why}", file=sys.stderr)
        return []
    from mypyc.build import mypycify

    sources = sorted(str(path) for path in CORE.rglob("*.py") if path.name not in PURE)
    return list(mypycify(sources, opt_level="3"))


setup(ext_modules=compiled_modules())
