"""The layering contract of DESIGN.md, enforced on the source text.

``xce_core`` never imports I/O, network, process or clock modules (only its clock
module may read ``time``) and never calls ``open``/``input``/``print``; ``xce_schemas``
imports nothing third-party but pydantic. A rule that can fail: the checker itself
is tested on sources that break it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "services" / "core" / "xce_core"
SCHEMAS = ROOT / "schemas" / "xce_schemas"

#: Modules the core must never import (I/O, network, processes, threads, wall clock).
CORE_FORBIDDEN = frozenset(
    {
        "os",
        "pathlib",
        "io",
        "shutil",
        "tempfile",
        "glob",
        "socket",
        "ssl",
        "select",
        "selectors",
        "asyncio",
        "threading",
        "multiprocessing",
        "concurrent",
        "subprocess",
        "signal",
        "time",
        "datetime",
        "urllib",
        "http",
        "requests",
        "nats",
        "redis",
        "fastapi",
        "uvicorn",
        "importlib",
        "sqlite3",
        "logging.handlers",
        "xce_driver",
    }
)
#: Calls the core must never make.
CORE_FORBIDDEN_CALLS = frozenset({"open", "input", "print", "exec", "eval", "__import__"})
#: The one module allowed to read the clock.
CLOCK_MODULE = "clock.py"
#: Third-party packages the schemas may use.
SCHEMAS_ALLOWED_THIRD_PARTY = frozenset({"pydantic", "xce_schemas"})


def imported(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def core_violations(source: str, filename: str) -> list[str]:
    """What in ``source`` breaks the core's layering rule."""
    tree = ast.parse(source, filename)
    found = []
    for name in imported(tree):
        top = name.split(".")[0]
        if filename == CLOCK_MODULE and top == "time":
            continue
        if top in CORE_FORBIDDEN or name in CORE_FORBIDDEN:
            found.append(f"{filename}: imports {name}")
    for node in ast.walk(tree):
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        if call and node.func.id in CORE_FORBIDDEN_CALLS:  # type: ignore[attr-defined]
            found.append(f"{filename}:{node.lineno}: calls {node.func.id}()")
    return found


def schemas_violations(source: str, filename: str) -> list[str]:
    """Third-party imports in ``source`` other than pydantic."""
    found = []
    for name in imported(ast.parse(source, filename)):
        top = name.split(".")[0]
        if top not in sys.stdlib_module_names and top not in SCHEMAS_ALLOWED_THIRD_PARTY:
            found.append(f"{filename}: imports {name}")
    return found


def test_core_imports_no_io_network_or_clock() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 10
    problems = [p for f in files for p in core_violations(f.read_text(), f.name)]
    assert problems == []


def test_schemas_import_only_pydantic() -> None:
    problems = [
        p for f in sorted(SCHEMAS.rglob("*.py")) for p in schemas_violations(f.read_text(), f.name)
    ]
    assert problems == []


@pytest.mark.parametrize(
    ("source", "filename", "expected"),
    [
        ("import socket\n", "x.py", ["x.py: imports socket"]),
        ("from os.path import join\n", "x.py", ["x.py: imports os.path"]),
        ("import time\n", "core.py", ["core.py: imports time"]),
        ("import time\n", CLOCK_MODULE, []),
        ("import nats.aio.client\n", "x.py", ["x.py: imports nats.aio.client"]),
        ("data = open('f').read()\n", "x.py", ["x.py:1: calls open()"]),
        ("from sortedcontainers import SortedList\n", "x.py", []),
    ],
    ids=[
        "network module",
        "filesystem submodule",
        "clock outside the clock module",
        "clock inside the clock module",
        "message bus",
        "file I/O builtin",
        "pure library",
    ],
)
def test_the_core_rule_can_fail(source: str, filename: str, expected: list[str]) -> None:
    assert core_violations(source, filename) == expected


def test_the_schemas_rule_can_fail() -> None:
    assert schemas_violations("import orjson\nimport json\n", "x.py") == ["x.py: imports orjson"]
