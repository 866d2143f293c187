"""The layering contract of DESIGN.md, enforced on the source text.

``xce_core`` never imports I/O, network, process or clock modules (only its clock
module may read ``time``) and never calls ``open``/``input``/``print``; ``xce_schemas``
imports nothing third-party but pydantic; the services that are not drivers import
only what DESIGN.md's layout table gives them: ``xce_recorder`` the schemas and its
clients (nats, redis, prometheus_client, orjson, pydantic), ``xce_admin`` those and
its web stack (fastapi, starlette, uvicorn, httpx) — never ``xce_core`` or
``xce_driver``. Imports are read from the AST (``import_module("x")`` and
``__import__("x")`` with a literal name count too). A rule that can fail: the
checker itself is tested on sources that break it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "services" / "core" / "xce_core"
SCHEMAS = ROOT / "schemas" / "xce_schemas"
RECORDER = ROOT / "services" / "recorder" / "xce_recorder"
ADMIN = ROOT / "services" / "admin" / "xce_admin"
KIT = ROOT / "services" / "kit" / "xce_kit"

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
#: Third-party packages the schemas may use: pydantic (and pydantic_core, the engine
#: pydantic is built on, for errors that name their field without a prefix).
SCHEMAS_ALLOWED_THIRD_PARTY = frozenset({"pydantic", "pydantic_core", "xce_schemas"})
#: What the recorder may import besides the standard library (DESIGN.md: schemas,
#: nats, redis; plus its metrics, JSON and validation libraries).
RECORDER_ALLOWED = frozenset(
    {
        "xce_recorder",
        "xce_kit",
        "xce_schemas",
        "nats",
        "redis",
        "prometheus_client",
        "orjson",
        "pydantic",
    }
)
#: What the service kit may import: the bus contract and the services' client
#: libraries (nkeys: NATS's keys, for the bus's credentials), never a service
#: (DESIGN.md: service plumbing is written once).
KIT_ALLOWED = frozenset(
    {"xce_kit", "xce_schemas", "nats", "redis", "prometheus_client", "orjson", "pydantic", "nkeys"}
)
#: What the admin API and ``xceadmin`` may import besides the standard library
#: (DESIGN.md: schemas, nats, redis, fastapi; plus FastAPI's stack, the CLI's HTTP
#: client, metrics, JSON and validation).
ADMIN_ALLOWED = frozenset(
    {
        "xce_admin",
        "xce_kit",
        "xce_schemas",
        "nats",
        "redis",
        "fastapi",
        "starlette",
        "uvicorn",
        "httpx",
        "pydantic",
        "prometheus_client",
        "orjson",
    }
)


#: Calls that import the module named by their first argument.
DYNAMIC_IMPORTS = frozenset({"import_module", "__import__"})


def imported(tree: ast.AST) -> list[str]:
    """Every absolute module name ``tree`` imports, statements and literal dynamic
    imports (``importlib.import_module("x")``, ``__import__("x")``) alike."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            if called in DYNAMIC_IMPORTS and literal:
                names.append(first.value)  # type: ignore[attr-defined]
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
    return service_violations(source, filename, SCHEMAS_ALLOWED_THIRD_PARTY)


def service_violations(source: str, filename: str, allowed: frozenset[str]) -> list[str]:
    """Imports in ``source`` of anything but the standard library and ``allowed``."""
    found = []
    for name in imported(ast.parse(source, filename)):
        top = name.split(".")[0]
        if top not in sys.stdlib_module_names and top not in allowed:
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


@pytest.mark.parametrize(
    ("folder", "allowed"),
    [(RECORDER, RECORDER_ALLOWED), (ADMIN, ADMIN_ALLOWED), (KIT, KIT_ALLOWED)],
    ids=["recorder", "admin", "kit"],
)
def test_services_import_only_what_the_layout_allows(folder: Path, allowed: frozenset[str]) -> None:
    files = sorted(folder.rglob("*.py"))
    assert len(files) >= 3
    problems = [p for f in files for p in service_violations(f.read_text(), f.name, allowed)]
    assert problems == []


@pytest.mark.parametrize(
    ("source", "allowed", "expected"),
    [
        (
            "from xce_core.core import SchedCore\n",
            RECORDER_ALLOWED,
            ["x.py: imports xce_core.core"],
        ),
        ("import xce_driver.recording\n", RECORDER_ALLOWED, ["x.py: imports xce_driver.recording"]),
        ("import fastapi\n", RECORDER_ALLOWED, ["x.py: imports fastapi"]),
        (
            "import importlib\ncore = importlib.import_module('xce_core.snapshot')\n",
            RECORDER_ALLOWED,
            ["x.py: imports xce_core.snapshot"],
        ),
        ("m = __import__('xce_driver')\n", ADMIN_ALLOWED, ["x.py: imports xce_driver"]),
        ("import nats\nimport redis.asyncio\nimport gzip\n", RECORDER_ALLOWED, []),
        ("from . import sink\nfrom xce_recorder.sink import x\n", RECORDER_ALLOWED, []),
        ("import uvicorn\nimport httpx\nfrom starlette import status\n", ADMIN_ALLOWED, []),
    ],
    ids=[
        "recorder imports the core",
        "recorder imports the driver",
        "recorder imports the web stack",
        "a dynamic import by name",
        "admin imports the driver through __import__",
        "clients and the standard library",
        "its own modules",
        "admin's web stack",
    ],
)
def test_the_service_rule_can_fail(
    source: str, allowed: frozenset[str], expected: list[str]
) -> None:
    assert service_violations(source, "x.py", allowed) == expected
