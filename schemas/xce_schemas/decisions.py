"""Decisions: what the core emits through its ``on_decision`` callback (Req 10 AC 5).

Every decision carries ``op`` and ``ts``, the logical time (ns) of the scheduling
session that made it (its ``BEGIN_ROUND``).

The five decision types are plain slotted classes (stdlib dataclasses), as the
allocation records are (``xce_schemas.alloc``): the core makes several per job and
checks nothing in them it did not make itself. Pydantic validates a decision where it
crosses a boundary (``parse_decision``, a recording line, the bus) and writes it
(``dump_decision``): the same bytes as the pydantic models these replaced. They hash
by value and nothing may change one once made (why they are not frozen:
``xce_schemas.alloc``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from xce_schemas.alloc import JobAlloc
from xce_schemas.base import PLAIN_WIRE
from xce_schemas.events import JobId, TimestampNs
from xce_schemas.pending import PendingReason

#: Linux signal numbers carried by decisions (the schemas import no OS module).
SIGTSTP = 20
SIGCONT = 18

#: The controller hook detail reused for preemption stop notifications (Req 6 AC 8).
HOOK_DETAIL_JOB_STOP = 65


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class NewSession:
    """A scheduling session began: ``session`` counts sessions from 1."""

    __pydantic_config__ = PLAIN_WIRE

    op: Literal["NEW_SESSION"] = "NEW_SESSION"
    ts: TimestampNs
    session: Annotated[int, Field(ge=1)]


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class Dispatch:
    """Start ``jobid`` on the allocation ``alloc``."""

    __pydantic_config__ = PLAIN_WIRE

    op: Literal["DISPATCH"] = "DISPATCH"
    ts: TimestampNs
    jobid: JobId
    alloc: JobAlloc


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class Pend:
    """``jobid`` stays pending for this session, because of ``reason``."""

    __pydantic_config__ = PLAIN_WIRE

    op: Literal["PEND"] = "PEND"
    ts: TimestampNs
    jobid: JobId
    reason: PendingReason


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class Preempt:
    """Suspend the victims so that ``preempting_jobid`` can start (Req 6 AC 1, 8)."""

    __pydantic_config__ = PLAIN_WIRE

    op: Literal["PREEMPT"] = "PREEMPT"
    ts: TimestampNs
    preempting_jobid: JobId
    victim_jobids: Annotated[tuple[JobId, ...], Field(min_length=1)]
    signal: int = SIGTSTP
    hook_detail: int = HOOK_DETAIL_JOB_STOP


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class Resume:
    """Resume the suspended ``jobid`` on the hosts it held (signal SIGCONT)."""

    __pydantic_config__ = PLAIN_WIRE

    op: Literal["RESUME"] = "RESUME"
    ts: TimestampNs
    jobid: JobId
    signal: int = SIGCONT


Decision = Annotated[
    NewSession | Dispatch | Pend | Preempt | Resume,
    Field(discriminator="op"),
]

#: Decision op names.
DECISION_OPS: tuple[str, ...] = ("NEW_SESSION", "DISPATCH", "PEND", "PREEMPT", "RESUME")

DECISION_ADAPTER: TypeAdapter[Decision] = TypeAdapter(Decision)


def parse_decision(data: dict[str, Any]) -> Decision:
    """Validate a decoded JSON object as one decision.

    Raises:
        pydantic.ValidationError: naming the op and the offending field.
    """
    return DECISION_ADAPTER.validate_python(data)


def dump_decision(decision: Decision) -> bytes:
    """A decision's JSON, as the wire (and every recording) has it: the bytes the
    pydantic models these classes replaced wrote."""
    return DECISION_ADAPTER.dump_json(decision)


def decision_fields(decision: Decision) -> dict[str, Any]:
    """A decision as a dict of its wire fields (nested records as dicts too)."""
    fields: dict[str, Any] = DECISION_ADAPTER.dump_python(decision)
    return fields
