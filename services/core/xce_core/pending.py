"""Pending reasons: the one factory every reason comes from, and host-based entries.

``make_pending_reason`` is the single factory (the spec's ``make_pendreason()``):
nothing else constructs a ``PendingReason``, so a dedup pool can live here later.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from xce_schemas import (
    PENDING_TEXT,
    HostReason,
    HostStatus,
    PendingCode,
    PendingReason,
    ResourceReason,
)

from xce_core.plugins import HostInfo

#: Main codes that carry no host-based entries: they are not about any one host.
_CLUSTER_WIDE = frozenset(
    {
        PendingCode.NO_HOSTS,
        PendingCode.JOB_LARGER_THAN_CLUSTER,
        PendingCode.BAD_RESREQ,
        PendingCode.PTILE_EXCEEDS_TASKS,
        PendingCode.PREEMPT_WAIT,
        PendingCode.PREEMPT_GIVEN_UP,
        PendingCode.QUEUE_INACTIVE,
        PendingCode.QUEUE_WINDOW,
        PendingCode.QUEUE_SLOT_LIMIT,
        PendingCode.QUEUE_USER_SLOT_LIMIT,
        PendingCode.RESERVED,
        PendingCode.ORDER_BLOCKED,
    }
)


def is_cluster_wide(code: PendingCode) -> bool:
    """Whether ``code`` is about the job or its queue as a whole, never a host (its
    reasons carry no host-based entries)."""
    return code in _CLUSTER_WIDE


_STATUS_CODE = {
    HostStatus.CLOSED: PendingCode.HOST_CLOSED,
    HostStatus.UNAVAIL: PendingCode.HOST_UNAVAIL,
}


def make_pending_reason(
    main: PendingCode,
    hosts: Iterable[HostReason] = (),
    resources: Iterable[ResourceReason] = (),
    detail: str = "",
) -> PendingReason:
    """Build a pending reason: the only constructor of ``PendingReason`` in the core.

    Args:
        main: main reason code.
        hosts: host-based entries, in host order.
        resources: resource-based entries.
        detail: words that go with the main code.
    """
    return PendingReason(main=main, hosts=tuple(hosts), resources=tuple(resources), detail=detail)


@lru_cache(maxsize=1 << 16)
def host_reason(host: str, code: PendingCode) -> HostReason:
    """The host-based entry ``(host, code)``, one shared immutable object per pair."""
    return HostReason(host=host, code=code)


def host_reasons(hosts: Sequence[HostInfo]) -> tuple[HostReason, ...]:
    """Host-based entries of a PEND decision: the hosts that cannot take the job as
    they are (closed or unavailable), each with its code, in host order.

    Occupancy (``HOST_NOT_ENOUGH_SLOTS``: a host whose slots are all in use) is not
    listed: it changes with every start and finish, it is what the main reason
    ``NOT_ENOUGH_SLOTS`` says, and listing it would make every pending job's reason
    change every round (and every round emit a PEND per pending job). The per-host
    occupancy view is computed on demand (``occupancy_reasons``).
    """
    return tuple(
        host_reason(host.name, _STATUS_CODE[host.status])
        for host in hosts
        if host.status is not HostStatus.OK
    )


def occupancy_reasons(hosts: Sequence[HostInfo], min_free: int) -> tuple[HostReason, ...]:
    """The full per-host view: ``host_reasons`` plus ``HOST_NOT_ENOUGH_SLOTS`` for
    every ok host with fewer than ``min_free`` free slots, in host order."""
    entries: list[HostReason] = []
    short = PendingCode.HOST_NOT_ENOUGH_SLOTS
    for host in hosts:
        if host.status is HostStatus.OK:
            if host.slots - host.used < min_free:
                entries.append(host_reason(host.name, short))
        else:
            entries.append(host_reason(host.name, _STATUS_CODE[host.status]))
    return tuple(entries)


def reason_for(
    main: PendingCode,
    hosts: Sequence[HostInfo],
    resources: Sequence[str] = (),
    detail: str = "",
) -> PendingReason:
    """The pending reason for an allocation that failed with ``main``.

    Cluster-wide codes carry no host entries; the others list the hosts that cannot
    take the job as they are (``host_reasons``). ``resources`` become resource-based
    entries (``RESOURCE_SHORT``; cluster-wide, so without a host); ``detail`` goes
    with the main code.
    """
    entries = tuple(
        ResourceReason(resource=name, host=None, code=PendingCode.RESOURCE_SHORT)
        for name in resources
    )
    if main in _CLUSTER_WIDE:
        return make_pending_reason(main, (), entries, detail)
    return make_pending_reason(main, host_reasons(hosts), entries, detail)


def render(reason: PendingReason) -> str:
    """A pending reason in plain words, with host counts, as LSF's ``bjobs -p`` prints
    it: ``Not enough job slots in the cluster; Not enough job slots: 12 hosts;
    Closed by the administrator: 1 host``. Host-based entries are counted per code in
    the order the codes first appear; resource-based entries name their resource.
    """
    main = PENDING_TEXT[reason.main]
    parts = [f"{main} ({reason.detail})" if reason.detail else main]
    counts: dict[PendingCode, int] = {}
    for entry in reason.hosts:
        counts[entry.code] = counts.get(entry.code, 0) + 1
    for code, count in counts.items():
        parts.append(f"{PENDING_TEXT[code]}: {count} host{'' if count == 1 else 's'}")
    for item in reason.resources:
        where = f" on {item.host}" if item.host else ""
        parts.append(f"{PENDING_TEXT[item.code]}: {item.resource}{where}")
    return "; ".join(parts)
