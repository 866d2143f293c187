"""Allocation records of a placement: what a DISPATCH carries and ``hold`` takes."""

from __future__ import annotations

from collections.abc import Callable

from xce_schemas import SLOTS, UNTIL_JOB_END, Alloc, HostAlloc, JobAlloc

from xce_core.alloc.outcome import Placement, RusageHold


def build_records(
    jobid: int, placement: Placement, from_s: int, next_instid: Callable[[], int]
) -> JobAlloc:
    """The allocation records of ``placement``: per host a slots record and one per
    reservation there, then one per shared reservation.

    The records are plain slotted objects, built without validation: everything in
    them comes from the core's own state (a placement of hosts it holds, amounts its
    parser checked), and pydantic checks them only where they cross a boundary
    (``xce_schemas.alloc``). A dispatch's records are the most objects the core
    builds: one host record and one slots record per host.

    Args:
        jobid: the job placed.
        placement: where its tasks go and what it reserves.
        from_s: the session start, whole seconds (alloc-equality Req 4), stamped on
            every record.
        next_instid: gives each record a new instance id.
    """

    def record(held: RusageHold) -> Alloc:
        name, amount, duration = held
        # float(): an amount the parser kept whole is written 2.0, as the wire has it.
        return Alloc(
            name=name, value=float(amount), from_=from_s, duration=duration, instid=next_instid()
        )

    hosts = tuple(
        HostAlloc(
            host=host.name,
            allocs=(
                Alloc(
                    name=SLOTS,
                    value=float(slots),
                    from_=from_s,
                    duration=UNTIL_JOB_END,
                    instid=next_instid(),
                ),
                *[record(held) for held in reservations],
            ),
        )
        for host, slots, reservations in placement.shares
    )
    return JobAlloc(
        jobid=jobid, hosts=hosts, shared=tuple(record(held) for held in placement.shared)
    )
