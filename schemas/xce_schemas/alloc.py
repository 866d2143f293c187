"""Allocation records: what a DISPATCH decision gives a job (spec/alloc-equality.md).

A job allocation lists, per host in allocation order, the resources the job holds
there (``slots`` first), plus the cluster-wide shared resources (licences) it holds.

The three record types are plain slotted classes (stdlib dataclasses), not pydantic
models: the core builds one per host of every dispatch, the most objects it makes, and
inside the process nothing needs checking (DESIGN "Plain objects inside, validation at
the boundaries"). Pydantic still validates them wherever they cross a boundary: as a
field of a wire model (``Dispatch.alloc``, a snapshot's job) read from JSON, or through
``JOB_ALLOC_ADAPTER``. An instance given to a wire model is kept as it is, and its JSON
is the same as that of the pydantic models these replaced, byte for byte (the fields in
the same order, ``from`` for ``from_``).

They compare and hash by value, as the frozen models they replaced did, but they are
not frozen: a frozen dataclass sets each field through ``object.__setattr__``, and that
made a KTH-SP2 simulation 13 % slower. Nothing may change a record, decision or event
once made: the core, the driver, a recording and a hook share the same object
(spec "Architectural Support for Future Object Sharing").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import ConfigDict, Field, Strict, TypeAdapter

#: The resource name under which slots are allocated on a host.
SLOTS = "slots"

#: ``duration`` value meaning "held until the job ends".
UNTIL_JOB_END = -1

#: How pydantic reads and writes the records at a boundary: unknown fields refused,
#: ``from`` on the wire (``from_`` accepted too). Every scalar is strict, as in the
#: events and decisions: ``"7"`` is not an instance id, nor ``"yes"`` a boolean.
_WIRE = ConfigDict(extra="forbid", serialize_by_alias=True, validate_by_name=True)


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class Alloc:
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

    __pydantic_config__ = _WIRE

    name: Annotated[str, Strict(), Field(min_length=1)]
    reserve: Annotated[bool, Strict()] = False
    value: Annotated[float, Strict()]
    from_: Annotated[int, Strict(), Field(alias="from")]
    duration: Annotated[int, Strict()] = UNTIL_JOB_END
    instid: Annotated[int, Strict(), Field(ge=0)]


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class HostAlloc:
    """The resources a job holds on one host: an ``xce_host_alloc_t``.

    Attributes:
        host: host name.
        allocs: per-resource records in order (``slots`` first).
    """

    __pydantic_config__ = _WIRE

    host: Annotated[str, Strict(), Field(min_length=1)]
    allocs: tuple[Alloc, ...]


@dataclass(slots=True, kw_only=True, unsafe_hash=True)
class JobAlloc:
    """A whole job allocation: an ``xce_job_alloc_t``.

    Attributes:
        jobid: the job.
        hosts: per-host records in allocation order.
        shared: cluster-wide shared resources (licences) held, in order.
    """

    __pydantic_config__ = _WIRE

    jobid: Annotated[int, Strict(), Field(ge=0)]
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


#: Validates and serialises a job allocation where it crosses a boundary on its own.
JOB_ALLOC_ADAPTER: TypeAdapter[JobAlloc] = TypeAdapter(JobAlloc)


def parse_job_alloc(data: Any) -> JobAlloc:
    """Validate a decoded JSON object (or another ``JobAlloc``'s fields) as a job
    allocation.

    Raises:
        pydantic.ValidationError: naming the offending field (``hosts.0.allocs.0.from``).
    """
    return JOB_ALLOC_ADAPTER.validate_python(data)
