"""Equality of allocations and pending reasons, and the first difference as text.

spec/alloc-equality.md, Reqs 1-3 and 6. Each comparison exists once: a ``*_diff``
function walks both values in comparison order and returns a description of the
first difference, or None when they are equal; the ``*_eq`` function is that walk's
verdict. Producing the text never logs (Req 3 AC 6) and the walk never changes
either argument (Req 1 AC 7).

Contract of allocation equality (Req 1): two records describe the same allocation
decision when they agree on resource name, reserve, value (exactly, no tolerance),
reservation start ``from`` and duration, host by host and resource by resource, in
order. The allocation-instance id ``instid`` is not compared: it comes from a
per-process counter, so a recording and its replay number the same allocation
differently (bug-1844). This is not the slot matching of merging, where ``instid``
is significant.

None-safety (Req 1 AC 5): the same object, two Nones included, is equal; one None
against a value is a difference at any level. Pydantic validation guarantees the
lists exist, so the spec's "count without an array" malformation cannot occur here.

A description names the path to the field (list indexes with the entry's name), the
field, and both values, which side is None, or both list lengths, e.g.
``hosts[1] (h2).allocs[0] (slots).value: 2.0 != 1.0``. Given ``sides``, the names
of the two arguments (``("recorded", "replayed")``), it says which value is whose:
``hosts[0] (h099).host: recorded 'h099', replayed 'h001'``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import TypeVar

from xce_schemas.alloc import Alloc, HostAlloc, JobAlloc
from xce_schemas.pending import HostReason, PendingReason, ResourceReason

T = TypeVar("T")

#: Alloc fields compared, in comparison order (``instid`` deliberately absent).
ALLOC_FIELDS = ("name", "reserve", "value", "from_", "duration")


def _wire(field: str) -> str:
    return "from" if field == "from_" else field


#: A first difference, as the walk finds it: (kind, path, left, right), where kind is
#: ``value`` (two shown values), ``none`` (the side that is None: ``left`` or
#: ``right``) or ``lengths`` (two list lengths). ``_render`` makes it text.
_Diff = tuple[str, str, str, str]


def _render(diff: _Diff | None, sides: tuple[str, str] | None) -> str | None:
    """The description of a difference; ``sides`` names the two arguments."""
    if diff is None:
        return None
    kind, path, left, right = diff
    if kind == "none":
        path = path or "top level"
        this, that = ("left", "right") if left == "left" else ("right", "left")
        if sides is not None:
            this, that = (sides[0], sides[1]) if left == "left" else (sides[1], sides[0])
        return f"{path}: {this} is None, {that} is not"
    if sides is None:
        prefix = "lengths " if kind == "lengths" else ""
        return f"{path}: {prefix}{left} != {right}"
    unit = " entries" if kind == "lengths" else ""
    return f"{path}: {sides[0]} {left}{unit}, {sides[1]} {right}{unit}"


def _none_diff(path: str, a: object, b: object) -> _Diff | None:
    """The difference when exactly one side is None, else None."""
    if a is None:
        return ("none", path, "left", "")
    if b is None:
        return ("none", path, "right", "")
    return None


def _fields_diff(path: str, a: object, b: object, fields: Sequence[str]) -> _Diff | None:
    for field in fields:
        left, right = getattr(a, field), getattr(b, field)
        if left is None or right is None:
            if left is right:
                continue
            return _none_diff(f"{path}{_wire(field)}", left, right)
        # ``value`` compares exactly: ==, no tolerance (Req 1 AC 1).
        if left != right:
            return ("value", f"{path}{_wire(field)}", _show(left), _show(right))
    return None


def _show(value: object) -> str:
    return repr(value.value if isinstance(value, Enum) else value)


def _list_diff(
    path: str,
    a: Sequence[T],
    b: Sequence[T],
    label: Callable[[T], str | None],
    item_diff: Callable[[str, T, T], _Diff | None],
) -> _Diff | None:
    if len(a) != len(b):
        return ("lengths", path, str(len(a)), str(len(b)))
    for index, (left, right) in enumerate(zip(a, b, strict=True)):
        name = label(left) if left is not None else None
        where = f"{path}[{index}]" + (f" ({name})" if name else "")
        found = _item(where, left, right, item_diff)
        if found is not None:
            return found
    return None


def _item(
    path: str, a: T | None, b: T | None, diff: Callable[[str, T, T], _Diff | None]
) -> _Diff | None:
    if a is b:
        return None
    if a is None or b is None:
        return _none_diff(path, a, b)
    return diff(path, a, b)


def _alloc(path: str, a: Alloc, b: Alloc) -> _Diff | None:
    return _fields_diff(f"{path}." if path else "", a, b, ALLOC_FIELDS)


def _host_alloc(path: str, a: HostAlloc, b: HostAlloc) -> _Diff | None:
    prefix = f"{path}." if path else ""
    return _fields_diff(prefix, a, b, ("host",)) or _list_diff(
        f"{prefix}allocs", a.allocs, b.allocs, lambda x: x.name, _alloc
    )


def _job_alloc(path: str, a: JobAlloc, b: JobAlloc) -> _Diff | None:
    prefix = f"{path}." if path else ""
    return (
        _fields_diff(prefix, a, b, ("jobid",))
        or _list_diff(f"{prefix}hosts", a.hosts, b.hosts, lambda x: x.host, _host_alloc)
        or _list_diff(f"{prefix}shared", a.shared, b.shared, lambda x: x.name, _alloc)
    )


def _host_reason(path: str, a: HostReason, b: HostReason) -> _Diff | None:
    return _fields_diff(f"{path}.", a, b, ("host", "code"))


def _resource_reason(path: str, a: ResourceReason, b: ResourceReason) -> _Diff | None:
    return _fields_diff(f"{path}.", a, b, ("resource", "host", "code"))


def _pending_reason(path: str, a: PendingReason, b: PendingReason) -> _Diff | None:
    prefix = f"{path}." if path else ""
    return (
        _fields_diff(prefix, a, b, ("main",))
        or _list_diff(f"{prefix}hosts", a.hosts, b.hosts, lambda x: x.host, _host_reason)
        or _list_diff(
            f"{prefix}resources", a.resources, b.resources, lambda x: x.resource, _resource_reason
        )
    )


def alloc_diff(
    a: Alloc | None, b: Alloc | None, *, sides: tuple[str, str] | None = None
) -> str | None:
    """The first difference between two resource allocations, or None when equal
    (``sides``: names of ``a`` and ``b`` for the text, e.g. recorded and replayed)."""
    return _render(_item("", a, b, _alloc), sides)


def host_alloc_diff(
    a: HostAlloc | None, b: HostAlloc | None, *, sides: tuple[str, str] | None = None
) -> str | None:
    """The first difference between two host allocations, or None when equal
    (``sides``: as ``alloc_diff``)."""
    return _render(_item("", a, b, _host_alloc), sides)


def job_alloc_diff(
    a: JobAlloc | None, b: JobAlloc | None, *, sides: tuple[str, str] | None = None
) -> str | None:
    """The first difference between two job allocations, or None when equal
    (``sides``: as ``alloc_diff``)."""
    return _render(_item("", a, b, _job_alloc), sides)


def pending_reason_diff(
    a: PendingReason | None, b: PendingReason | None, *, sides: tuple[str, str] | None = None
) -> str | None:
    """The first difference between two pending reasons (full structure), or None
    (``sides``: as ``alloc_diff``)."""
    return _render(_item("", a, b, _pending_reason), sides)


def alloc_eq(a: Alloc | None, b: Alloc | None) -> bool:
    """Same resource allocation decision: all but ``instid`` equal (Req 1 AC 1, 4)."""
    return alloc_diff(a, b) is None


def host_alloc_eq(a: HostAlloc | None, b: HostAlloc | None) -> bool:
    """Same host name and the same allocations in order (Req 1 AC 2)."""
    return host_alloc_diff(a, b) is None


def job_alloc_eq(a: JobAlloc | None, b: JobAlloc | None) -> bool:
    """Same jobid, host allocations and shared allocations, in order (Req 1 AC 3)."""
    return job_alloc_diff(a, b) is None


def pending_reason_eq(a: PendingReason | None, b: PendingReason | None) -> bool:
    """Same main code, host-based entries and resource-based entries, in order
    (Req 2: full structural match, stricter than ``--sim-verify``'s main-code check)."""
    return pending_reason_diff(a, b) is None
