"""Allocation records of a placement: what a DISPATCH carries and ``hold`` takes."""

from __future__ import annotations

from collections.abc import Callable

from xce_schemas import SLOTS, UNTIL_JOB_END, JobAlloc

from xce_core.alloc.outcome import Placement


def build_records(
    jobid: int, placement: Placement, from_s: int, next_instid: Callable[[], int]
) -> JobAlloc:
    """The allocation records of ``placement``: per host a slots record and one per
    reservation there, then one per shared reservation.

    The records are validated as one document, in one call into pydantic's
    validator, not one model at a time: the same models, in half the time (a
    dispatch's records are the most objects the core builds).

    Args:
        jobid: the job placed.
        placement: where its tasks go and what it reserves.
        from_s: the session start, whole seconds (alloc-equality Req 4), stamped on
            every record.
        next_instid: gives each record a new instance id.
    """

    def record(name: str, value: float, duration: int) -> dict[str, object]:
        return {
            "name": name,
            "value": value,
            "from": from_s,
            "duration": duration,
            "instid": next_instid(),
        }

    hosts = [
        {
            "host": host.name,
            "allocs": [
                record(SLOTS, float(slots), UNTIL_JOB_END),
                *[record(*reservation) for reservation in reservations],
            ],
        }
        for host, slots, reservations in placement.shares
    ]
    shared = [record(*reservation) for reservation in placement.shared]
    return _validate({"jobid": jobid, "hosts": hosts, "shared": shared})


_validate: Callable[[dict[str, object]], JobAlloc] = JobAlloc.model_validate
