"""Allocation records of a placement: what a DISPATCH carries and ``hold`` takes."""

from __future__ import annotations

from xce_schemas import SLOTS, UNTIL_JOB_END, Alloc, HostAlloc, JobAlloc

from xce_core.alloc.outcome import Placement, RusageHold


def build_records(
    jobid: int, placement: Placement, from_s: int, first_instid: int
) -> tuple[JobAlloc, int]:
    """The allocation records of ``placement``: per host a slots record and one per
    reservation there, then one per shared reservation; their instance ids run from
    ``first_instid`` on, in that order.

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
        first_instid: the instance id of the first record.

    Returns:
        The allocation, and the instance id after its last record's (the counter's
        next value).
    """
    instid = first_instid
    hosts = []
    for host, slots, reservations in placement.shares:
        slots_record = Alloc(
            name=SLOTS, value=float(slots), from_=from_s, duration=UNTIL_JOB_END, instid=instid
        )
        instid += 1
        if reservations:
            held = _held(reservations, from_s, instid)
            instid += len(held)
            allocs: tuple[Alloc, ...] = (slots_record, *held)
        else:
            allocs = (slots_record,)
        hosts.append(HostAlloc(host=host.name, allocs=allocs))
    shared = _held(placement.shared, from_s, instid)
    return JobAlloc(jobid=jobid, hosts=tuple(hosts), shared=shared), instid + len(shared)


def _held(
    reservations: tuple[RusageHold, ...], from_s: int, first_instid: int
) -> tuple[Alloc, ...]:
    """One record per reservation, instance ids from ``first_instid`` on. The amount
    is a float (``2.0``, as the wire writes it) even where the parser kept it whole."""
    return tuple(
        Alloc(name=name, value=float(amount), from_=from_s, duration=duration, instid=instid)
        for instid, (name, amount, duration) in enumerate(reservations, first_instid)
    )
