"""Pending reasons: why a job did not dispatch in a scheduling session.

As in LSF, a reason has a *main* code (what blocks the job everywhere) and
*host-based* entries (what blocks it on each host), plus *resource-based* entries
(which resource is short on which host). Codes are names, stable on the wire.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from xce_schemas.base import WireModel


class PendingCode(StrEnum):
    """The catalogue of pending-reason codes.

    Main codes describe the job as a whole; host codes (prefixed ``HOST_``) appear in
    host-based entries. Plain words for each are in ``PENDING_TEXT``.
    """

    NOT_ENOUGH_SLOTS = "NOT_ENOUGH_SLOTS"
    NOT_ENOUGH_HOSTS_FOR_SPAN = "NOT_ENOUGH_HOSTS_FOR_SPAN"
    JOB_LARGER_THAN_CLUSTER = "JOB_LARGER_THAN_CLUSTER"
    NO_HOSTS = "NO_HOSTS"
    BAD_RESREQ = "BAD_RESREQ"
    PTILE_EXCEEDS_TASKS = "PTILE_EXCEEDS_TASKS"
    NO_HOST_SELECTED = "NO_HOST_SELECTED"
    NOT_ENOUGH_RESOURCE = "NOT_ENOUGH_RESOURCE"
    RESOURCE_SHORT = "RESOURCE_SHORT"
    PREEMPT_WAIT = "PREEMPT_WAIT"
    PREEMPT_GIVEN_UP = "PREEMPT_GIVEN_UP"
    QUEUE_INACTIVE = "QUEUE_INACTIVE"
    QUEUE_WINDOW = "QUEUE_WINDOW"
    QUEUE_SLOT_LIMIT = "QUEUE_SLOT_LIMIT"
    QUEUE_USER_SLOT_LIMIT = "QUEUE_USER_SLOT_LIMIT"
    RESERVED = "RESERVED"
    ORDER_BLOCKED = "ORDER_BLOCKED"
    HOST_NOT_ENOUGH_SLOTS = "HOST_NOT_ENOUGH_SLOTS"
    HOST_CLOSED = "HOST_CLOSED"
    HOST_UNAVAIL = "HOST_UNAVAIL"


#: Plain words for every code, in the style of LSF's ``bjobs -p``.
PENDING_TEXT: dict[PendingCode, str] = {
    PendingCode.NOT_ENOUGH_SLOTS: "Not enough job slots in the cluster",
    PendingCode.NOT_ENOUGH_HOSTS_FOR_SPAN: (
        "Not enough hosts with free slots to meet the job's spanning requirement"
    ),
    PendingCode.JOB_LARGER_THAN_CLUSTER: "The job requests more slots than the cluster has",
    PendingCode.NO_HOSTS: "No hosts are defined in the cluster",
    PendingCode.BAD_RESREQ: "Bad resource requirement",
    PendingCode.PTILE_EXCEEDS_TASKS: "The job's span[ptile] is larger than its task count",
    PendingCode.NO_HOST_SELECTED: "No host satisfies the job's resource requirements",
    PendingCode.NOT_ENOUGH_RESOURCE: "Job's requirements for resource reservation not satisfied",
    PendingCode.RESOURCE_SHORT: "Not enough of this resource is free",
    PendingCode.PREEMPT_WAIT: "Waiting for preempted jobs to release their resources",
    PendingCode.PREEMPT_GIVEN_UP: (
        "Preemption given up: the preempted jobs did not suspend in time"
    ),
    PendingCode.QUEUE_INACTIVE: "The queue is inactivated by the administrator",
    PendingCode.QUEUE_WINDOW: "The queue is inactivated by its run windows",
    PendingCode.QUEUE_SLOT_LIMIT: "The queue's job slot limit is reached",
    PendingCode.QUEUE_USER_SLOT_LIMIT: "The user has reached the queue's per-user job slot limit",
    PendingCode.RESERVED: (
        "The free room it fits is reserved for a job ahead of it, and it would not end "
        "before that job starts"
    ),
    PendingCode.ORDER_BLOCKED: "A job ahead of it cannot start (strict order: no backfilling)",
    PendingCode.HOST_NOT_ENOUGH_SLOTS: "Not enough job slots",
    PendingCode.HOST_CLOSED: "Closed by the administrator",
    PendingCode.HOST_UNAVAIL: "Host is unavailable",
}


class HostReason(WireModel):
    """A host-based entry: the job cannot run on ``host`` because of ``code``."""

    host: str = Field(min_length=1)
    code: PendingCode


class ResourceReason(WireModel):
    """A resource-based entry: ``resource`` on ``host`` (None: cluster-wide) is short."""

    resource: str = Field(min_length=1)
    host: str | None = None
    code: PendingCode


class PendingReason(WireModel):
    """A job's pending reason: an ``xce_job_preason_t`` (alloc-equality Req 2).

    Attributes:
        main: the main reason code.
        hosts: host-based entries, in host order.
        resources: resource-based entries, in order.
        detail: words that go with the main code (e.g. where a resource requirement
            stops parsing); derived text, not part of pending-reason equality.
    """

    main: PendingCode
    hosts: tuple[HostReason, ...] = ()
    resources: tuple[ResourceReason, ...] = ()
    detail: str = ""
