"""The cluster model's layering: both emulators share it, and the simulation needs no
bus, so ``xce_driver.cluster`` imports the standard library, the schemas and the
driver's simulation modules only: never ``xce_driver.live``, the service kit, nats
or redis (the live emulator imports the model, never the other way round). Read
from the source as ``tests/test_layering.py`` reads the other rules, with its
helpers; a rule that can fail.
"""

from __future__ import annotations

import ast

import pytest

from tests.test_layering import ROOT, imported, service_violations

CLUSTER = ROOT / "services" / "driver" / "xce_driver" / "cluster"
#: Top-level packages the cluster model may import besides the standard library.
CLUSTER_ALLOWED = frozenset({"xce_driver", "xce_schemas"})
#: Driver packages it must never import: the live services (the bus).
CLUSTER_FORBIDDEN = ("xce_driver.live",)


def cluster_violations(source: str, filename: str) -> list[str]:
    """What in ``source`` breaks the cluster model's layering rule."""
    found = service_violations(source, filename, CLUSTER_ALLOWED)
    for name in imported(ast.parse(source, filename)):
        if any(name == bad or name.startswith(bad + ".") for bad in CLUSTER_FORBIDDEN):
            found.append(f"{filename}: imports {name}")
    return found


def test_the_cluster_model_imports_no_bus() -> None:
    files = sorted(CLUSTER.rglob("*.py"))
    assert len(files) >= 5
    problems = [p for f in files for p in cluster_violations(f.read_text(), f.name)]
    assert problems == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from xce_driver.live.emulate import LiveEmulator\n",
            ["x.py: imports xce_driver.live.emulate"],
        ),
        ("import xce_driver.live\n", ["x.py: imports xce_driver.live"]),
        ("import nats\n", ["x.py: imports nats"]),
        ("from xce_kit.connection import connect_nats\n", ["x.py: imports xce_kit.connection"]),
        ("import asyncio\nimport heapq\nfrom xce_schemas import Dispatch\n", []),
        ("from xce_driver.workloads.mapping import SimJob\n", []),
        ("from xce_driver.livestock import cows\n", []),
    ],
    ids=[
        "the live emulator",
        "the live package",
        "the bus client",
        "the service kit",
        "the standard library and the schemas",
        "the driver's workloads",
        "a name that only starts like live",
    ],
)
def test_the_cluster_rule_can_fail(source: str, expected: list[str]) -> None:
    assert cluster_violations(source, "x.py") == expected
