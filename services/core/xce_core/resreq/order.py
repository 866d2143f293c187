"""``order[]``: sort candidate hosts by resource values, best first.

Keys are applied leftmost first (the leftmost key decides; the next breaks ties, and
so on); hosts that tie on every key, or lack a value, keep host order, so the result
is deterministic. A host without a numeric value for a key sorts after every host
that has one. Without ``order[]``, candidates come in host order (the order hosts
were first pushed); LSF's default ``r15s:pg`` needs load indices this scheduler does
not collect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from xce_core.resreq.model import OrderKey

H = TypeVar("H")


def sort_hosts(
    hosts: Sequence[H],
    keys: Sequence[OrderKey],
    values: Callable[[H], Mapping[str, float | str | bool]],
) -> list[H]:
    """``hosts`` sorted by ``keys`` (stable: ties keep the given order)."""

    def key(host: H) -> tuple[tuple[int, float], ...]:
        have = values(host)
        out = []
        for order in keys:
            value = have.get(order.resource)
            if isinstance(value, bool):
                value = float(value)
            if not isinstance(value, int | float):
                out.append((1, 0.0))  # missing or not a number: after the rest
            else:
                out.append((0, -float(value) if order.descending else float(value)))
        return tuple(out)

    return sorted(hosts, key=key)
