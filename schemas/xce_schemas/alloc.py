"""Allocation records: what a DISPATCH decision gives a job (spec/alloc-equality.md).

A job allocation lists, per host in allocation order, the resources the job holds
there (``slots`` first), plus the cluster-wide shared resources (licences) it holds.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from xce_schemas.base import WireModel

#: The resource name under which slots are allocated on a host.
SLOTS = "slots"

#: ``duration`` value meaning "held until the job ends".
UNTIL_JOB_END = -1


class Alloc(WireModel):
    """One resource held by a job: an ``xce_alloc_t`` (alloc-equality Req 1 AC 1).

    Attributes:
        name: resource name (``slots``, ``mem``, a licence name).
        reserve: False for an allocation made by dispatch; True for a forward
            reservation held for a job that has not started (backfill).
        value: the amount held (slots, MB, licences), compared exactly.
        from_: reservation start, whole seconds since the Unix epoch: the start of
            the scheduling session that made it (``BEGIN_ROUND ts // 10**9``,
            alloc-equality Req 4). Written ``from`` on the wire.
        duration: seconds the amount is held, or -1 (``UNTIL_JOB_END``).
        instid: allocation-instance id from the core's counter; ignored by
            allocation equality (alloc-equality Req 1 AC 4).
    """

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True)

    name: str = Field(min_length=1)
    reserve: bool = False
    value: float
    from_: int = Field(alias="from")
    duration: int = UNTIL_JOB_END
    instid: int = Field(ge=0)


class HostAlloc(WireModel):
    """The resources a job holds on one host: an ``xce_host_alloc_t``.

    Attributes:
        host: host name.
        allocs: per-resource records in order (``slots`` first).
    """

    host: str = Field(min_length=1)
    allocs: tuple[Alloc, ...]


class JobAlloc(WireModel):
    """A whole job allocation: an ``xce_job_alloc_t``.

    Attributes:
        jobid: the job.
        hosts: per-host records in allocation order.
        shared: cluster-wide shared resources (licences) held, in order.
    """

    jobid: int = Field(ge=0)
    hosts: tuple[HostAlloc, ...]
    shared: tuple[Alloc, ...] = ()

    def slots_by_host(self) -> dict[str, int]:
        """Slots held per host name, in allocation order (units: slots)."""
        held: dict[str, int] = {}
        for host in self.hosts:
            for alloc in host.allocs:
                if alloc.name == SLOTS:
                    held[host.host] = held.get(host.host, 0) + int(alloc.value)
        return held
