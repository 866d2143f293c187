"""Decisions: what the core emits through its ``on_decision`` callback (Req 10 AC 5).

Every decision carries ``op`` and ``ts``, the logical time (ns) of the scheduling
session that made it (its ``BEGIN_ROUND``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from xce_schemas.alloc import JobAlloc
from xce_schemas.base import WireModel
from xce_schemas.events import JobId, TimestampNs
from xce_schemas.pending import PendingReason

#: Linux signal numbers carried by decisions (the schemas import no OS module).
SIGTSTP = 20
SIGCONT = 18

#: The controller hook detail reused for preemption stop notifications (Req 6 AC 8).
HOOK_DETAIL_JOB_STOP = 65


class NewSession(WireModel):
    """A scheduling session began: ``session`` counts sessions from 1."""

    op: Literal["NEW_SESSION"] = "NEW_SESSION"
    ts: TimestampNs
    session: int = Field(ge=1)


class Dispatch(WireModel):
    """Start ``jobid`` on the allocation ``alloc``."""

    op: Literal["DISPATCH"] = "DISPATCH"
    ts: TimestampNs
    jobid: JobId
    alloc: JobAlloc


class Pend(WireModel):
    """``jobid`` stays pending for this session, because of ``reason``."""

    op: Literal["PEND"] = "PEND"
    ts: TimestampNs
    jobid: JobId
    reason: PendingReason


class Preempt(WireModel):
    """Suspend the victims so that ``preempting_jobid`` can start (Req 6 AC 1, 8)."""

    op: Literal["PREEMPT"] = "PREEMPT"
    ts: TimestampNs
    preempting_jobid: JobId
    victim_jobids: tuple[JobId, ...] = Field(min_length=1)
    signal: int = SIGTSTP
    hook_detail: int = HOOK_DETAIL_JOB_STOP


class Resume(WireModel):
    """Resume the suspended ``jobid`` on the hosts it held (signal SIGCONT)."""

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
