"""Allocation by resource requirement: span, select, order, same, rusage, shared
licences, COMPOUND with rollback and ALTER (spec "Allocation Architecture"; Req 9 AC 3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from xce_core.errors import EventError
from xce_core.resreq.model import ResreqError
from xce_core.resreq.parser import parse_resreq
from xce_core.snapshot import save_snapshot
from xce_schemas import Dispatch, JobState, Pend

from tests.builders import NS, ClusterBuilder, Scenario, cluster, job_spec
from tests.core.resreq.test_parser import ANY_TEXT


def shares(sc: Scenario, jobid: int) -> list[tuple[str, int]]:
    """(host, slots) of a running job's allocation, in allocation order."""
    alloc = sc.core.state.jobs[jobid].alloc
    assert alloc is not None, f"job {jobid} is not running"
    return [(h.host, int(a.value)) for h in alloc.hosts for a in h.allocs if a.name == "slots"]


def pend_of(sc: Scenario, jobid: int) -> Pend:
    return [d for d in sc.decisions if isinstance(d, Pend) and d.jobid == jobid][-1]


def licence(sc: Scenario, total: int, name: str = "lic", **extra: Any) -> None:
    sc.push(
        {
            "type": "RESOURCES_PUSH",
            "ts": sc.core.last_ts,
            "payload": {"resources": [{"name": name, "consumable": True, "shared": True, **extra}]},
        }
    )
    sc.push(
        {
            "type": "RESVALS_DELTA",
            "ts": sc.core.last_ts,
            "payload": {"values": [{"resource": name, "value": total}]},
        }
    )


def counters(sc: Scenario) -> tuple[Any, ...]:
    saved = save_snapshot(sc.core)
    return tuple(
        (h.name, h.used, tuple(sorted(h.reserved.items()))) for h in saved.hosts
    ), saved.shared_in_use


def eight_by_four() -> ClusterBuilder:
    return cluster().hosts_n(4, slots=8).queue("normal")


SPAN_CASES = [
    ("span[ptile=4]", 10, [("h1", 4), ("h2", 4), ("h3", 2)]),
    ("span[ptile=8]", 8, [("h1", 8)]),
    ("span[ptile=3]", 9, [("h1", 3), ("h2", 3), ("h3", 3)]),
    ("span[hosts=1]", 6, [("h1", 6)]),
    ("span[hosts=3]", 7, [("h1", 3), ("h2", 2), ("h3", 2)]),
    ("span[hosts=2]", 16, [("h1", 8), ("h2", 8)]),
]


@pytest.mark.parametrize(
    ("resreq", "tasks", "expected"),
    SPAN_CASES,
    ids=[
        "ptile 4 for 10 tasks: 4+4+2, the last host takes fewer",
        "ptile equal to tasks: one host",
        "ptile 3 for 9 tasks: three full hosts",
        "hosts=1: all on one host",
        "hosts=3: as even as possible over exactly three hosts",
        "hosts=2: two full hosts",
    ],
)
def test_span_shapes(resreq: str, tasks: int, expected: list[tuple[str, int]]) -> None:
    sc = eight_by_four().job(1, tasks=tasks, resreq=resreq).build()
    sc.round(1)
    assert shares(sc, 1) == expected


def test_ptile_respected_on_every_host_even_when_hosts_are_partly_busy() -> None:
    sc = (
        eight_by_four().job(1, tasks=6).job(2, tasks=12, resreq="span[ptile=4]", submit_s=1).build()
    )
    sc.round(2)
    assert shares(sc, 1) == [("h1", 6)]  # h1 has 2 left: too few for a share of 4
    assert shares(sc, 2) == [("h2", 4), ("h3", 4), ("h4", 4)]


def test_ptile_larger_than_the_task_count_pends_with_a_clear_reason() -> None:
    sc = eight_by_four().job(1, tasks=2, resreq="span[ptile=4]").build()
    assert sc.round(1) == [("PEND", 1, "PTILE_EXCEEDS_TASKS")]
    assert pend_of(sc, 1).reason.detail == "span[ptile=4] for 2 tasks"


def test_hosts_one_pends_when_no_single_host_has_room() -> None:
    sc = (
        cluster()
        .hosts_n(4, slots=4)
        .queue("normal")
        .job(1, tasks=6, resreq="span[hosts=1]")
        .build()
    )
    assert sc.round(1) == [("PEND", 1, "NOT_ENOUGH_HOSTS_FOR_SPAN")]


def typed() -> ClusterBuilder:
    return (
        cluster()
        .queue("normal")
        .host("a1", 4, type="AIX", model="p5", mem=16000)
        .host("l1", 4, type="LINUX", model="xeon", mem=4000)
        .host("l2", 4, type="LINUX", model="xeon", mem=32000)
        .host("l3", 8, type="LINUX", model="epyc", mem=64000)
    )


@pytest.mark.parametrize(
    ("resreq", "tasks", "expected"),
    [
        ("select[type==AIX]", 1, [("a1", 1)]),
        ("type==LINUX && mem>8000", 1, [("l2", 1)]),
        ("select[maxmem >= 31GB]", 1, [("l2", 1)]),
        ("select[hname=='l3']", 2, [("l3", 2)]),
        ("select[type==any] order[maxmem]", 1, [("l3", 1)]),
        ("order[-maxmem]", 1, [("l1", 1)]),
        ("order[slots] span[hosts=1]", 4, [("l3", 4)]),
        ("select[type==LINUX] same[model]", 6, [("l3", 6)]),
        ("select[type==LINUX] same[model] span[ptile=4]", 8, [("l1", 4), ("l2", 4)]),
    ],
    ids=[
        "select on type",
        "plain string is a select; memory compare",
        "units: 31GB is 31744 MB: the 32000 MB host passes",
        "quoted host name",
        "order by maxmem: largest first",
        "order reversed: smallest first",
        "order by free slots: emptiest host first",
        "same model: only the epyc host can hold six",
        "same model: two xeons, four each",
    ],
)
def test_select_order_same(resreq: str, tasks: int, expected: list[tuple[str, int]]) -> None:
    sc = typed().job(1, tasks=tasks, resreq=resreq).build()
    sc.round(1)
    assert shares(sc, 1) == expected


def test_no_host_selected() -> None:
    sc = typed().job(1, resreq="select[type==SPARC]").build()
    assert sc.round(1) == [("PEND", 1, "NO_HOST_SELECTED")]


def test_memory_rusage_is_reserved_per_task_and_given_back() -> None:
    sc = (
        cluster()
        .queue("normal")
        .host("h1", 4, mem=8000)
        .host("h2", 4, mem=8000)
        .job(1, tasks=2, resreq="rusage[mem=3000] span[hosts=1]")
        .job(2, tasks=2, resreq="rusage[mem=3000] span[hosts=1]")
        .job(3, tasks=2, resreq="rusage[mem=3000] span[hosts=1]")
        .build()
    )
    assert sc.round(1) == [
        ("DISPATCH", 1, ("h1",)),
        ("DISPATCH", 2, ("h2",)),
        ("PEND", 3, "NOT_ENOUGH_RESOURCE"),
    ]
    assert [(r.resource, r.code.value) for r in pend_of(sc, 3).reason.resources] == [
        ("mem", "RESOURCE_SHORT")
    ]
    assert sc.core.state.hosts["h1"].reserved == {"mem": 6000.0}
    alloc = sc.core.state.jobs[1].alloc
    assert [(a.name, a.value) for a in alloc.hosts[0].allocs] == [("slots", 2.0), ("mem", 6000.0)]
    sc.finish(1, at_s=2)
    assert sc.core.state.hosts["h1"].reserved == {}
    assert sc.round(2) == [("DISPATCH", 3, ("h1",))]


def test_shared_licence_exhausted_pends_naming_the_licence() -> None:
    sc = (
        eight_by_four()
        .job(1, resreq="rusage[lic=1]")
        .job(2, resreq="rusage[lic=1]")
        .job(3, resreq="rusage[lic=1]")
        .build()
    )
    licence(sc, 2)
    assert sc.round(1) == [
        ("DISPATCH", 1, ("h1",)),
        ("DISPATCH", 2, ("h1",)),
        ("PEND", 3, "NOT_ENOUGH_RESOURCE"),
    ]
    reason = pend_of(sc, 3).reason
    assert [(r.resource, r.host, r.code.value) for r in reason.resources] == [
        ("lic", None, "RESOURCE_SHORT")
    ]
    shared = sc.core.state.jobs[1].alloc.shared
    assert [(a.name, a.value, a.duration) for a in shared] == [("lic", 1.0, -1)]
    assert sc.core.state.shared_in_use == {"lic": 2.0}
    sc.finish(2, at_s=2)
    assert sc.round(2) == [("DISPATCH", 3, ("h1",))]


@pytest.mark.parametrize(
    ("method", "tasks", "used"),
    [("per_job", 4, 1.0), ("per_task", 4, 4.0), ("per_host", 4, 2.0)],
    ids=["per job: once", "per task: times four", "per host: times two hosts"],
)
def test_reservation_method_multiplies_the_amount(method: str, tasks: int, used: float) -> None:
    sc = (
        cluster()
        .hosts_n(2, slots=2)
        .queue("normal")
        .job(1, tasks=tasks, resreq="rusage[lic=1]")
        .build()
    )
    licence(sc, 10, reserve_method=method)
    sc.round(1)
    assert sc.core.state.shared_in_use == {"lic": used}


def test_duration_gives_the_reservation_back_while_the_job_runs() -> None:
    sc = (
        eight_by_four()
        .job(1, resreq="rusage[lic=1:duration=1]")
        .job(2, resreq="rusage[lic=1]", submit_s=1)
        .build()
    )
    licence(sc, 1)
    assert sc.round(1) == [("DISPATCH", 1, ("h1",)), ("PEND", 2, "NOT_ENOUGH_RESOURCE")]
    assert sc.round(30) == []  # 30 s in: the minute is not over
    assert sc.round(61) == [("DISPATCH", 2, ("h1",))]  # licence back at 60 s, job 1 runs on
    assert sc.core.state.jobs[1].state is JobState.RUN
    sc.finish(1, at_s=70)  # what expired is not given back twice
    assert sc.core.state.shared_in_use == {"lic": 1.0}


def test_suspend_gives_back_reservations_and_resume_takes_them_again() -> None:
    sc = (
        cluster()
        .queue("normal")
        .host("h1", 4, mem=8000)
        .job(1, tasks=2, resreq="rusage[mem=1000:lic=1]")
        .build()
    )
    licence(sc, 1)
    sc.round(1)
    before = counters(sc)
    sc.state_change(1, JobState.SUSP, at_s=2)
    assert counters(sc) == ((("h1", 0, ()),), {})
    sc.state_change(1, JobState.RUN, at_s=3)
    assert counters(sc) == before


def test_unknown_or_non_consumable_rusage_is_a_bad_request() -> None:
    sc = eight_by_four().job(1, resreq="rusage[foo=1]").job(2, resreq="rusage[arch=1]").build()
    sc.push(
        {
            "type": "RESOURCES_PUSH",
            "ts": 0,
            "payload": {"resources": [{"name": "arch", "value_type": "string"}]},
        }
    )
    assert sc.round(1) == [("PEND", 1, "BAD_RESREQ"), ("PEND", 2, "BAD_RESREQ")]
    assert pend_of(sc, 1).reason.detail == "rusage[foo]: the resource is unknown"
    assert pend_of(sc, 2).reason.detail == "rusage[arch]: the resource is not consumable"


def test_a_request_that_does_not_parse_pends_naming_position_and_token() -> None:
    sc = eight_by_four().job(1, resreq="select[mem>4000 &&& type==LINUX]").job(2).build()
    assert sc.round(1) == [("PEND", 1, "BAD_RESREQ"), ("DISPATCH", 2, ("h1",))]
    detail = pend_of(sc, 1).reason.detail
    assert "position" in detail and "&" in detail


BAD_STRINGS = [
    # (id, resreq, the pending reason's detail)
    (
        "an empty string literal, which would match every host",
        "select[hname!='']",
        "bad resource requirement at position 14: select[...]: empty string (no host has an"
        " empty value; to ask whether a host has a resource, use defined(res)) (\"''\")",
    ),
    (
        "an empty string literal, which would match no host",
        "select[hname=='']",
        "bad resource requirement at position 14: select[...]: empty string (no host has an"
        " empty value; to ask whether a host has a resource, use defined(res)) (\"''\")",
    ),
    (
        "an rusage value that is a word",
        "rusage[mem=abc]",
        "bad resource requirement at position 11: rusage[mem=...]: 'abc' is not a number"
        " (a rusage value is a number, optionally with a unit such as MB)",
    ),
    (
        "rusage written with =[",
        "rusage=[mem=20MB]",
        "bad resource requirement at position 6: rusage[...]: a section is written"
        " rusage[...], without '=' before '['",
    ),
    (
        "a select expression inside rusage",
        "rusage[mem=7000 && hname!='h3']",
        "bad resource requirement at position 16: rusage[...]: '&&' is not allowed in rusage"
        " (a select expression goes in select[...]; separate rusage values with ':')",
    ),
    (
        "an empty select section",
        "select[]",
        "bad resource requirement at position 0: select[...]: empty section (leave out select[]"
        " if it asks for nothing) ('select[')",
    ),
    (
        "a zero ptile",
        "span[ptile=0]",
        "bad resource requirement at position 11: span[ptile=...]: ptile must be at least 1,"
        " not 0 ('0')",
    ),
    (
        "zero hosts",
        "span[hosts=0]",
        "bad resource requirement at position 11: span[hosts=...]: hosts must be at least 1,"
        " not 0 ('0')",
    ),
    (
        "a negative rusage amount",
        "rusage[mem=-2]",
        "bad resource requirement at position 11: rusage[mem=...]: negative value (an amount"
        " reserved is 0 or more) ('-2')",
    ),
    (
        "an empty rusage value",
        "rusage[mem=]",
        "bad resource requirement at position 11: rusage[mem=...]: no value after '=' (']')",
    ),
    (
        "a section given twice",
        "select[a] select[b]",
        "bad resource requirement at position 10: select[...]: given twice (join the conditions"
        " in one select[...] with &&) ('select[')",
    ),
    (
        "a unit LSF does not know",
        "select[mem>1Q]",
        "bad resource requirement at position 11: select[...]: bad number '1Q' (units: K M G T"
        " P E Z, B optional)",
    ),
    (
        "an unknown section",
        "foo[a]",
        "bad resource requirement at position 3: foo[...]: not a section (the sections are"
        " select[...], order[...], rusage[...], span[...], same[...], cu[...], affinity[...])"
        " ('[')",
    ),
    (
        "a compound part outside the braces",
        "2*{-} order[ut]",
        "bad resource requirement at position 6: compound: 'order[' outside the braces"
        " (a part's sections go inside its {...})",
    ),
]


@pytest.mark.parametrize(
    ("resreq", "detail"), [c[1:] for c in BAD_STRINGS], ids=[c[0] for c in BAD_STRINGS]
)
def test_a_bad_string_pends_naming_its_place_and_problem(resreq: str, detail: str) -> None:
    sc = eight_by_four().job(1, resreq=resreq).job(2).build()
    assert sc.round(1) == [("PEND", 1, "BAD_RESREQ"), ("DISPATCH", 2, ("h1",))]
    assert pend_of(sc, 1).reason.detail == detail


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_any_request_string_is_decided_without_a_crash(resreq: str) -> None:
    # DESIGN invariant 5: whatever the string, the job is dispatched or pends with a
    # reason; a refused string pends BAD_RESREQ with the parser's message.
    sc = eight_by_four().job(1, tasks=2, resreq=resreq).job(2).build()
    decided = [(kind, jobid) for kind, jobid, _ in sc.round(1)]
    assert decided in ([("DISPATCH", 1), ("DISPATCH", 2)], [("PEND", 1), ("DISPATCH", 2)])
    parsed = parse_resreq(resreq)
    if isinstance(parsed, ResreqError):
        reason = pend_of(sc, 1).reason
        assert reason.main.value == "BAD_RESREQ"
        assert reason.detail is not None and reason.detail.startswith(parsed.message)


def test_zettabytes_are_a_unit() -> None:
    # LSF's bsub -R lists ZB (or Z) with KB ... EB; a host's maxmem is below 1 ZB.
    sc = eight_by_four().job(1, resreq="select[maxmem < 1ZB]").build()
    assert sc.round(1) == [("DISPATCH", 1, ("h1",))]


def test_compound_allocates_every_part_with_one_from() -> None:
    sc = typed().job(1, tasks=6, resreq="2*{select[type==AIX]} + 4*{select[model==epyc]}").build()
    sc.core.push_event({"type": "BEGIN_ROUND", "ts": 1_700_000_000 * NS + 5, "payload": {}})
    assert shares(sc, 1) == [("a1", 2), ("l3", 4)]
    alloc = sc.core.state.jobs[1].alloc
    assert {a.from_ for h in alloc.hosts for a in h.allocs} == {1_700_000_000}


def test_compound_parts_see_what_earlier_parts_took() -> None:
    sc = (
        cluster()
        .queue("normal")
        .host("h1", 4)
        .host("h2", 4)
        .job(1, tasks=6, resreq="3*{-} + 3*{-}")
        .build()
    )
    sc.round(1)
    # The second part cannot use h1 (one slot left after the first part): h2.
    assert shares(sc, 1) == [("h1", 3), ("h2", 3)]


def test_compound_rollback_leaves_every_counter_as_before() -> None:
    sc = (
        typed()
        .job(
            1,
            tasks=6,
            resreq="2*{select[type==AIX] rusage[mem=1000:lic=1]} + 4*{select[type==SPARC]}",
        )
        .build()
    )
    licence(sc, 5)
    before = counters(sc)
    assert sc.round(1) == [("PEND", 1, "NO_HOST_SELECTED")]
    assert counters(sc) == before
    assert save_snapshot(sc.core).counters.next_instid >= 1


def test_compound_task_count_must_match_the_job() -> None:
    sc = eight_by_four().job(1, tasks=5, resreq="2*{-} + 2*{-}").build()
    assert sc.round(1) == [("PEND", 1, "BAD_RESREQ")]
    assert (
        pend_of(sc, 1).reason.detail == "the compound requirement asks for 4 tasks, the job for 5"
    )


def test_alternative_takes_the_first_that_fits() -> None:
    sc = (
        cluster()
        .hosts_n(4, slots=4)
        .queue("normal")
        .job(1, tasks=6, resreq="{span[hosts=1]} || {span[ptile=2]} || {span[ptile=3]}")
        .build()
    )
    sc.round(1)
    assert shares(sc, 1) == [("h1", 2), ("h2", 2), ("h3", 2)]


def test_alternative_that_fits_nowhere_pends_with_the_first_alternatives_reason() -> None:
    sc = (
        cluster()
        .hosts_n(2, slots=4)
        .queue("normal")
        .job(1, tasks=6, resreq="{span[hosts=1]} || {select[type==SPARC]}")
        .build()
    )
    assert sc.round(1) == [("PEND", 1, "NOT_ENOUGH_HOSTS_FOR_SPAN")]


@pytest.mark.parametrize(
    ("single", "composite"),
    [
        ("span[ptile=2]", "6*{span[ptile=2]}"),
        ("select[type==LINUX] order[maxmem]", "{select[type==LINUX] order[maxmem]}"),
        ("span[hosts=1]", "{span[hosts=1]} || {span[hosts=1]}"),
    ],
    ids=["a one-part compound", "a one-alternative request", "two equal alternatives"],
)
def test_composite_paths_place_like_their_primary(single: str, composite: str) -> None:
    """Req 9 AC 3: COMPOUND and ALTER call into the same primary path."""
    placed = []
    for resreq in (single, composite):
        sc = (
            typed()
            .job(1, tasks=6 if "6*" in composite or "ptile" in single else 4, resreq=resreq)
            .build()
        )
        sc.round(1)
        placed.append(shares(sc, 1))
    assert placed[0] == placed[1]


def test_equal_requests_share_one_object() -> None:
    sc = eight_by_four().build()
    sc.submit(job_spec(1, resreq="select[mem>4000]"), job_spec(2, resreq="mem > 4000"), at_s=1)
    jobs = sc.core.state.jobs
    assert jobs[1].request is jobs[2].request


def test_dispatch_records_list_every_reservation() -> None:
    sc = (
        cluster()
        .queue("normal")
        .host("h1", 4, mem=8000)
        .host("h2", 4, mem=8000)
        .job(1, tasks=4, resreq="rusage[mem=500] span[ptile=2]")
        .build()
    )
    sc.round(1)
    dispatch = next(d for d in sc.decisions if isinstance(d, Dispatch))
    assert [[(a.name, a.value) for a in h.allocs] for h in dispatch.alloc.hosts] == [
        [("slots", 2.0), ("mem", 1000.0)],
        [("slots", 2.0), ("mem", 1000.0)],
    ]


def test_host_memory_cannot_shrink_below_what_jobs_reserve() -> None:
    sc = cluster().queue("normal").host("h1", 4, mem=8000).job(1, resreq="rusage[mem=3000]").build()
    sc.round(1)
    with pytest.raises(
        EventError, match=r"host 'h1' cannot shrink to 2000 MB while jobs reserve 3000 MB"
    ):
        sc.push(
            {
                "type": "WORKERS_PUSH",
                "ts": 2 * NS,
                "payload": {"hosts": [{"name": "h1", "slots": 4, "max_mem_mb": 2000}]},
            }
        )
    assert sc.core.state.hosts["h1"].max_mem == 8000


def test_resume_sums_what_a_compound_holds_on_one_host() -> None:
    sc = cluster().queue("normal").host("h1", 4).job(1, tasks=4, resreq="2*{-} + 2*{-}").build()
    sc.round(1)
    assert shares(sc, 1) == [("h1", 2), ("h1", 2)]
    sc.state_change(1, JobState.SUSP, at_s=2)
    sc.submit(job_spec(2, tasks=2, submit_s=2), at_s=2)
    sc.round(3)
    with pytest.raises(
        EventError, match=r"job 1 cannot resume: 2 slots free on host 'h1', it needs 4"
    ):
        sc.state_change(1, JobState.RUN, at_s=4)
    assert sc.core.state.hosts["h1"].used == 2


def test_reservations_given_back_in_another_order_leave_no_residue() -> None:
    sc = cluster().queue("normal").host("h1", 8, mem=10).build()
    sc.submit(
        *[
            job_spec(j, resreq=f"rusage[mem={v}]")
            for j, v in enumerate([1.1, 0.7, 1.3, 0.3, 1.3, 1.1], 1)
        ],
        at_s=0,
    )
    sc.round(1)
    for jobid in (3, 1, 4, 2, 5, 6):
        sc.finish(jobid, at_s=2)
    assert sc.core.state.hosts["h1"].reserved == {}
    sc.submit(job_spec(10, resreq="rusage[mem=10]", submit_s=3), at_s=3)
    assert sc.round(3) == [("DISPATCH", 10, ("h1",))]


@pytest.mark.parametrize(
    ("resource", "message"),
    [
        (
            {"name": "slots", "consumable": True},
            r"payload\.resources\[0\]\.name: 'slots' is built in",
        ),
        (
            {"name": "type", "value_type": "string"},
            r"payload\.resources\[0\]\.name: 'type' is built in",
        ),
        (
            {"name": "os", "value_type": "string", "consumable": True},
            r"payload\.resources\[0\]\.consumable: only a numeric resource is consumable",
        ),
    ],
    ids=["a resource named slots", "a resource named type", "a consumable string"],
)
def test_resource_definitions_that_would_corrupt_accounting_are_refused(
    resource: dict[str, Any], message: str
) -> None:
    sc = eight_by_four().build()
    with pytest.raises(EventError, match=message):
        sc.push({"type": "RESOURCES_PUSH", "ts": 0, "payload": {"resources": [resource]}})


def test_a_bad_rusage_is_bad_even_on_a_full_cluster() -> None:
    sc = cluster().hosts_n(1).queue("normal").job(1).job(2, resreq="rusage[nosuch=1]").build()
    assert sc.round(1) == [("DISPATCH", 1, ("h1",)), ("PEND", 2, "BAD_RESREQ")]


def test_an_impossible_alternative_does_not_decide_the_reason() -> None:
    sc = (
        cluster()
        .hosts_n(2)
        .queue("normal")
        .job(1, tasks=2)
        .job(2, tasks=2, resreq="{4*{-}} || {span[hosts=1]}")
        .build()
    )
    # span[hosts=1] for 2 tasks on hosts of one slot never fits: that is the reason,
    # full cluster or not (it was NOT_ENOUGH_SLOTS while job 1 ran).
    assert sc.round(1) == [
        ("DISPATCH", 1, ("h1", "h2")),
        ("PEND", 2, "NOT_ENOUGH_HOSTS_FOR_SPAN"),
    ]


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        (8, [("h1", 4), ("h2", 4)]),
        (7, [("h1", 4), ("h2", 3)]),
        (4, "BAD_RESREQ"),
        (9, "BAD_RESREQ"),
    ],
    ids=[
        "exactly 2 x 4",
        "two hosts, the last takes 3",
        "4 tasks need only one host of 4",
        "9 tasks need a third host",
    ],
)
def test_span_hosts_with_ptile(tasks: int, expected: object) -> None:
    sc = eight_by_four().job(1, tasks=tasks, resreq="span[hosts=2:ptile=4]").build()
    decided = sc.round(1)
    if expected == "BAD_RESREQ":
        assert decided == [("PEND", 1, "BAD_RESREQ")]
        assert pend_of(sc, 1).reason.detail == f"span[hosts=2:ptile=4] does not fit {tasks} tasks"
    else:
        assert shares(sc, 1) == expected


def test_resume_after_the_reservation_ended_during_the_suspension() -> None:
    sc = (
        cluster()
        .queue("normal")
        .host("h1", 8, mem=1000)
        .job(1, resreq="rusage[mem=800:duration=10s]")
        .build()
    )
    sc.round(100)
    sc.state_change(1, JobState.SUSP, at_s=105)
    sc.submit(job_spec(2, resreq="rusage[mem=500]", submit_s=105), at_s=105)
    assert sc.round(106) == [("DISPATCH", 2, ("h1",))]
    sc.state_change(1, JobState.RUN, at_s=200)  # its 10 s reservation ended at 110: nothing to take
    assert sc.core.state.hosts["h1"].reserved == {"mem": 500.0}


def test_a_bad_request_names_its_token() -> None:
    sc = eight_by_four().job(1, resreq="span[ptile=0]").build()
    sc.round(1)
    detail = pend_of(sc, 1).reason.detail
    assert "position" in detail and "0" in detail
