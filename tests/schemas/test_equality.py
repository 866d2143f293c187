"""Allocation and pending-reason equality, and the first difference as text
(spec/alloc-equality.md Reqs 1-3; the cases of Req 6 AC 4 that have a Python meaning)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from xce_schemas import (
    JOB_ALLOC_ADAPTER,
    Alloc,
    HostAlloc,
    HostReason,
    JobAlloc,
    PendingReason,
    ResourceReason,
    alloc_diff,
    alloc_eq,
    host_alloc_diff,
    host_alloc_eq,
    job_alloc_diff,
    job_alloc_eq,
    pending_reason_diff,
    pending_reason_eq,
)


def slot(
    value: float = 2.0,
    *,
    name: str = "slots",
    from_: int = 100,
    instid: int = 1,
    reserve: bool = False,
    duration: int = -1,
) -> Alloc:
    return Alloc(
        name=name, value=value, from_=from_, instid=instid, reserve=reserve, duration=duration
    )


def job(
    *hosts: tuple[str, tuple[Alloc, ...]], shared: tuple[Alloc, ...] = (), jobid: int = 7
) -> JobAlloc:
    return JobAlloc(
        jobid=jobid, hosts=tuple(HostAlloc(host=h, allocs=a) for h, a in hosts), shared=shared
    )


BASE = job(
    ("h1", (slot(2.0),)),
    ("h2", (slot(1.0, instid=2), slot(512.0, name="mem", instid=3))),
    shared=(slot(1.0, name="lic", instid=4),),
)

ALLOC_FIELD_CASES = [
    (slot(name="mem"), "name: 'slots' != 'mem'"),
    (slot(reserve=True), "reserve: False != True"),
    (slot(2.0000000000000004), "value: 2.0 != 2.0000000000000004"),
    (slot(from_=101), "from: 100 != 101"),
    (slot(duration=60), "duration: -1 != 60"),
]


@pytest.mark.parametrize(
    ("other", "why"),
    ALLOC_FIELD_CASES,
    ids=[
        "name differs",
        "reserve differs",
        "value differs by one ulp: exact, no tolerance",
        "from differs",
        "duration differs",
    ],
)
def test_alloc_mismatch_on_each_compared_field(other: Alloc, why: str) -> None:
    assert not alloc_eq(slot(), other)
    assert alloc_diff(slot(), other) == why


def test_instid_is_not_compared_and_from_is() -> None:
    assert alloc_eq(slot(instid=1), slot(instid=99))
    assert alloc_diff(slot(instid=1), slot(instid=99)) is None  # equal: no description
    assert not alloc_eq(slot(from_=100), slot(from_=99))


JOB_CASES = [
    (replace(BASE, jobid=8), "jobid: 7 != 8"),
    (
        job(("h1", (slot(2.0),)), ("h3", BASE.hosts[1].allocs), shared=BASE.shared),
        "hosts[1] (h2).host: 'h2' != 'h3'",
    ),
    (
        job(("h1", (slot(2.0),)), ("h2", (slot(1.0), slot(256.0, name="mem"))), shared=BASE.shared),
        "hosts[1] (h2).allocs[1] (mem).value: 512.0 != 256.0",
    ),
    (
        job(("h2", BASE.hosts[1].allocs), ("h1", (slot(2.0),)), shared=BASE.shared),
        "hosts[0] (h1).host: 'h1' != 'h2'",
    ),
    (job(("h1", (slot(2.0),)), shared=BASE.shared), "hosts: lengths 2 != 1"),
    (
        job(("h1", (slot(2.0),)), ("h2", (slot(1.0),)), shared=BASE.shared),
        "hosts[1] (h2).allocs: lengths 2 != 1",
    ),
    (job(*[(h.host, h.allocs) for h in BASE.hosts]), "shared: lengths 1 != 0"),
    (
        job(*[(h.host, h.allocs) for h in BASE.hosts], shared=(slot(2.0, name="lic"),)),
        "shared[0] (lic).value: 1.0 != 2.0",
    ),
    (
        job(*[(h.host, h.allocs) for h in BASE.hosts], shared=(slot(1.0, name="lic", from_=5),)),
        "shared[0] (lic).from: 100 != 5",
    ),
]


@pytest.mark.parametrize(
    ("other", "why"),
    JOB_CASES,
    ids=[
        "jobid differs",
        "host name differs",
        "a resource value differs on the second host",
        "same hosts in another order: order matters",
        "host list shorter",
        "resource list shorter",
        "shared list shorter",
        "shared value differs",
        "shared from differs",
    ],
)
def test_job_alloc_mismatch_says_where(other: JobAlloc, why: str) -> None:
    assert not job_alloc_eq(BASE, other)
    assert job_alloc_diff(BASE, other) == why


def test_job_alloc_match_ignores_instids_everywhere() -> None:
    renumbered = job(
        ("h1", (slot(2.0, instid=50),)),
        ("h2", (slot(1.0, instid=51), slot(512.0, name="mem", instid=52))),
        shared=(slot(1.0, name="lic", instid=53),),
    )
    assert renumbered is not BASE and job_alloc_eq(BASE, renumbered)
    assert host_alloc_eq(BASE.hosts[1], renumbered.hosts[1])


@pytest.mark.parametrize(
    ("a", "b", "equal", "why"),
    [
        (None, None, True, None),
        (BASE, BASE, True, None),
        (None, BASE, False, "top level: left is None, right is not"),
        (BASE, None, False, "top level: right is None, left is not"),
    ],
    ids=["two Nones", "the same object", "left None", "right None"],
)
def test_none_at_the_top_level(
    a: JobAlloc | None, b: JobAlloc | None, equal: bool, why: str | None
) -> None:
    assert job_alloc_eq(a, b) is equal
    assert job_alloc_diff(a, b) == why


def test_none_entries_and_fields_nested() -> None:
    # Validation never makes these; the plain constructor can, and the walk must not crash.
    holey = HostAlloc(host="h1", allocs=(None,))  # type: ignore[arg-type]
    full = HostAlloc(host="h1", allocs=(slot(),))
    assert host_alloc_diff(holey, full) == "allocs[0]: left is None, right is not"
    assert host_alloc_diff(full, holey) == "allocs[0] (slots): right is None, left is not"
    assert host_alloc_eq(holey, HostAlloc(host="h1", allocs=(None,)))  # type: ignore[arg-type]
    nameless = HostAlloc(host=None, allocs=())  # type: ignore[arg-type]
    assert (
        host_alloc_diff(nameless, HostAlloc(host="h1", allocs=()))
        == "host: left is None, right is not"
    )
    assert alloc_diff(None, slot()) == "top level: left is None, right is not"


def test_comparison_changes_neither_argument() -> None:
    other = replace(BASE, jobid=9)
    dump = JOB_ALLOC_ADAPTER.dump_json
    before = (dump(BASE), dump(other))
    job_alloc_diff(BASE, other)
    assert (dump(BASE), dump(other)) == before


REASON = PendingReason(
    main="NOT_ENOUGH_SLOTS",  # type: ignore[arg-type]
    hosts=(HostReason(host="h1", code="HOST_CLOSED"), HostReason(host="h2", code="HOST_UNAVAIL")),  # type: ignore[arg-type]
    resources=(ResourceReason(resource="lic", host=None, code="NOT_ENOUGH_SLOTS"),),  # type: ignore[arg-type]
)


def reason(**update: object) -> PendingReason:
    return REASON.model_copy(update=update)


@pytest.mark.parametrize(
    ("other", "why"),
    [
        (reason(main="NO_HOSTS"), "main: 'NOT_ENOUGH_SLOTS' != 'NO_HOSTS'"),
        (reason(hosts=REASON.hosts[::-1]), "hosts[0] (h1).host: 'h1' != 'h2'"),
        (
            reason(hosts=(REASON.hosts[0], HostReason(host="h2", code="HOST_CLOSED"))),
            "hosts[1] (h2).code: 'HOST_UNAVAIL' != 'HOST_CLOSED'",
        ),  # type: ignore[arg-type]
        (reason(hosts=REASON.hosts[:1]), "hosts: lengths 2 != 1"),
        (
            reason(resources=(ResourceReason(resource="lic", host="h1", code="NOT_ENOUGH_SLOTS"),)),
            "resources[0] (lic).host: left is None, right is not",
        ),  # type: ignore[arg-type]
        (
            reason(resources=(ResourceReason(resource="mem", code="NOT_ENOUGH_SLOTS"),)),
            "resources[0] (lic).resource: 'lic' != 'mem'",
        ),  # type: ignore[arg-type]
        (reason(resources=()), "resources: lengths 1 != 0"),
    ],
    ids=[
        "main code differs",
        "host entries in another order",
        "host entry code differs",
        "fewer host entries",
        "resource entry host None on one side",
        "resource name differs",
        "no resource entries",
    ],
)
def test_pending_reason_full_structural_match(other: PendingReason, why: str) -> None:
    assert not pending_reason_eq(REASON, other)
    assert pending_reason_diff(REASON, other) == why


def test_pending_reason_match_and_none() -> None:
    assert pending_reason_eq(REASON, reason())
    assert pending_reason_diff(REASON, reason()) is None
    assert pending_reason_eq(None, None) and not pending_reason_eq(REASON, None)
    assert pending_reason_diff(None, REASON) == "top level: left is None, right is not"
