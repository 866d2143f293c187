"""Preemption scenarios: each acceptance criterion of Req 6, resume, no thrash."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence

import pytest
from xce_core.core import SchedCore
from xce_core.errors import ConfigError, EventError
from xce_core.in_tree import in_tree_registry
from xce_core.pending import render
from xce_core.plugins import CoreView, JobInfo, PickerBase, PickerConfig, PreemptTrial
from xce_core.snapshot import load_snapshot, save_snapshot
from xce_schemas import (
    BeginRound,
    Decision,
    JobState,
    JobStateChange,
    Pend,
    Preempt,
    QueueSpec,
    QueueUpdate,
    ResourceDef,
    ResourcesPush,
    Resume,
    ResVal,
    ResvalsFull,
    dump_decision,
)
from xce_schemas.decisions import HOOK_DETAIL_JOB_STOP, SIGCONT, SIGTSTP
from xce_schemas.events import (
    JobStateChangePayload,
    QueueUpdatePayload,
    ResourcesPushPayload,
    ResvalsPayload,
)

from tests.builders import NS, ClusterBuilder, Scenario, cluster, job_spec


def urgent_and_normal(**normal: object) -> ClusterBuilder:
    """Two queues: ``urgent`` may preempt ``normal``, whose jobs may be preempted."""
    fields = {"preemptible": True, **normal}
    return (
        cluster()
        .queue("urgent", priority=100, preemptible_queues=("normal",))
        .queue("normal", priority=30, **fields)
    )


def running(sc: Scenario, jobid: int) -> bool:
    return sc.core.state.jobs[jobid].state is JobState.RUN


def used(sc: Scenario) -> dict[str, int]:
    return {host.name: host.used for host in sc.core.state.host_order}


# --- Req 6 AC 1-4: a preemption, its decision, the preemptor pending -------------------


def test_a_preemptor_suspends_the_lowest_priority_victim_and_starts_once_it_is_suspended() -> None:
    sc = (
        urgent_and_normal()
        .host("h1", slots=4)
        .host("h2", slots=4)
        .job(1, tasks=4, priority=5)
        .job(2, tasks=4, priority=1)
        .build()
    )
    assert [d[:2] for d in sc.round(1)] == [("DISPATCH", 1), ("DISPATCH", 2)]
    sc.submit(job_spec(3, queue="urgent", tasks=4, priority=10, submit_s=2), at_s=2)
    assert sc.round(2) == [("PREEMPT", 3, (2,)), ("PEND", 3, "PREEMPT_WAIT")]
    preempt = next(d for d in sc.decisions if isinstance(d, Preempt))
    assert (preempt.signal, preempt.hook_detail, preempt.ts) == (
        SIGTSTP,
        HOOK_DETAIL_JOB_STOP,
        2 * NS,
    )
    pend = sc.decisions[-1]
    assert isinstance(pend, Pend) and pend.reason.detail == "jobs 2"
    # Asynchronous (AC 4): nothing is freed until the victim is suspended.
    assert running(sc, 2) and used(sc) == {"h1": 4, "h2": 4}
    assert sc.round(3) == []  # still waiting: no second PREEMPT, the reason is unchanged
    sc.state_change(2, JobState.SUSP, at_s=4)
    assert used(sc) == {"h1": 4, "h2": 0}
    assert sc.round(4) == [("DISPATCH", 3, ("h2",))]
    assert sc.core.state.preemptions == {}


def test_ties_in_priority_go_to_the_most_recently_started() -> None:
    sc = urgent_and_normal().hosts_n(3, slots=2).job(1, tasks=2).build()
    sc.round(1)
    sc.submit(job_spec(2, tasks=2, submit_s=5), at_s=5)
    sc.round(5)
    sc.submit(job_spec(3, tasks=2, submit_s=7), at_s=7)
    sc.round(7)
    sc.submit(job_spec(4, queue="urgent", tasks=2, priority=1, submit_s=9), at_s=9)
    assert sc.round(9)[0] == ("PREEMPT", 4, (3,))


def test_no_sufficient_victim_set_pends_with_a_shortage_reason_and_no_preemption() -> None:
    # AC 5: two 4-slot victims cannot make room for 12 slots on an 8-slot cluster
    # with 4 slots held by a job of equal priority.
    sc = (
        urgent_and_normal()
        .hosts_n(3, slots=4)
        .job(1, tasks=4, priority=2)
        .job(2, tasks=4)
        .job(3, tasks=4)
        .build()
    )
    sc.round(1)
    sc.submit(job_spec(4, queue="urgent", tasks=12, priority=2, submit_s=2), at_s=2)
    assert sc.round(2) == [("PEND", 4, "NOT_ENOUGH_SLOTS")]
    assert sc.core.preemptions == 0


# --- Req 6 AC 9: safety ------------------------------------------------------------------


def test_victims_are_never_of_equal_or_higher_priority_nor_in_other_queues() -> None:
    sc = (
        cluster()
        .queue("urgent", priority=100, preemptible_queues=("normal", "guarded"))
        .queue("normal", priority=30, preemptible=True)
        .queue("guarded", priority=30)  # not preemptible
        .queue("other", priority=30, preemptible=True)  # not a target
        .hosts_n(4, slots=1)
        .job(1, priority=5)  # equal priority
        .job(2, priority=9)  # higher
        .job(3, queue="guarded")
        .job(4, queue="other")
        .build()
    )
    sc.round(1)
    sc.submit(job_spec(5, queue="urgent", priority=5, submit_s=2), at_s=2)
    assert sc.round(2) == [("PEND", 5, "NOT_ENOUGH_SLOTS")]


def test_a_queue_without_preemptible_queues_never_preempts() -> None:
    sc = urgent_and_normal().queue("plain", priority=200).hosts_n(1, slots=1).job(1).build()
    sc.round(1)
    sc.submit(job_spec(2, queue="plain", priority=50, submit_s=2), at_s=2)
    assert sc.round(2) == [("PEND", 2, "NOT_ENOUGH_SLOTS")]


# --- the victim set ------------------------------------------------------------------------


def test_the_victim_set_is_minimal() -> None:
    # span[hosts=1], 2 slots: taking victims by rank takes job 1 (prio 1, h1) first,
    # which cannot make room alone (job 3 on h1 is not preemptible); job 2 (prio 2,
    # h2) can, so job 1 is given back.
    sc = (
        urgent_and_normal()
        .queue("keep", priority=30)
        .host("h1", slots=2)
        .host("h2", slots=2)
        .job(1, priority=1)
        .job(3, queue="keep")
        .job(2, tasks=2, priority=2)
        .build()
    )
    sc.round(1)
    assert used(sc) == {"h1": 2, "h2": 2}
    sc.submit(job_spec(4, queue="urgent", tasks=2, priority=10, resreq="span[hosts=1]"), at_s=2)
    assert sc.round(2)[0] == ("PREEMPT", 4, (2,))


def test_victims_only_on_hosts_where_the_preemptor_can_run() -> None:
    sc = (
        urgent_and_normal()
        .host("a1", slots=1, type="A")
        .host("b1", slots=1, type="B")
        .job(1, priority=0, resreq="select[type==A]")
        .job(2, priority=3, resreq="select[type==B]")
        .build()
    )
    sc.round(1)
    sc.submit(job_spec(3, queue="urgent", priority=9, resreq="select[type==B]"), at_s=2)
    assert sc.round(2)[0] == ("PREEMPT", 3, (2,))  # not job 1, though its priority is lower


def test_memory_preemption_frees_a_host_whose_memory_is_reserved() -> None:
    sc = urgent_and_normal().host("h1", slots=4, mem=1000).job(1, resreq="rusage[mem=800]").build()
    sc.round(1)
    sc.submit(
        job_spec(2, queue="urgent", priority=1, resreq="select[mem>500] rusage[mem=600]"), at_s=2
    )
    assert sc.round(2)[0] == ("PREEMPT", 2, (1,))
    sc.state_change(1, JobState.SUSP, at_s=3)
    assert sc.round(3) == [("DISPATCH", 2, ("h1",))]


def test_a_licence_preemption() -> None:
    sc = urgent_and_normal().hosts_n(2, slots=4).build()
    sc.push(
        ResourcesPush(
            ts=0,
            payload=ResourcesPushPayload(
                resources=(ResourceDef(name="lic", consumable=True, shared=True),)
            ),
        )
    )
    sc.push(ResvalsFull(ts=0, payload=ResvalsPayload(values=(ResVal(resource="lic", value=2),))))
    sc.submit(job_spec(1, resreq="rusage[lic=2]"), job_spec(2, priority=0), at_s=1)
    sc.round(1)
    sc.submit(job_spec(3, queue="urgent", priority=1, resreq="rusage[lic=1]"), at_s=2)
    # Slots are free on both hosts; only the licence is short, and job 2 holds none.
    assert sc.round(2) == [("PREEMPT", 3, (1,)), ("PEND", 3, "PREEMPT_WAIT")]
    sc.state_change(1, JobState.SUSP, at_s=3)
    assert sc.core.state.shared_available("lic") == 2
    assert sc.round(3)[0][:2] == ("DISPATCH", 3)
    assert sc.core.state.shared_available("lic") == 1


# --- no thrash, give-up -----------------------------------------------------------------------


def test_no_thrash_and_a_preemption_whose_victims_do_not_suspend_is_given_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sc = (
        urgent_and_normal()
        .configure(preempt_timeout_rounds=3)
        .hosts_n(2, slots=1)
        .job(1, priority=1)
        .job(2, priority=2)
        .build()
    )
    sc.round(1)
    sc.submit(job_spec(3, queue="urgent", priority=9), at_s=2)
    assert sc.round(2) == [("PREEMPT", 3, (1,)), ("PEND", 3, "PREEMPT_WAIT")]
    # A second urgent job does not take the victim already chosen.
    sc.submit(job_spec(4, queue="urgent", priority=9), at_s=3)
    assert sc.round(3) == [("PREEMPT", 4, (2,)), ("PEND", 4, "PREEMPT_WAIT")]
    assert sc.round(4) == []  # both wait: no new PREEMPT
    with caplog.at_level(logging.WARNING, logger="xce_core"):
        assert sc.round(5) == [("PEND", 3, "PREEMPT_GIVEN_UP")]
    assert "preemption for job 3 given up" in caplog.text
    assert sc.core.preemptions_given_up == 1
    assert sc.core.state.jobs[1].ignored_preemption
    # Job 1 is never chosen again; job 4's victim (2) is still in flight.
    assert sc.round(6)[0] == ("PEND", 3, "NOT_ENOUGH_SLOTS")


def test_a_late_suspension_of_an_ignored_victim_still_comes_back() -> None:
    sc = urgent_and_normal().configure(preempt_timeout_rounds=1).hosts_n(1).job(1).build()
    sc.round(1)
    sc.submit(job_spec(2, queue="urgent", priority=1), at_s=2)
    sc.round(2)
    assert sc.round(3) == [("PEND", 2, "PREEMPT_GIVEN_UP")]
    sc.state_change(1, JobState.SUSP, at_s=4)  # too late, but suspended by our signal
    assert sc.round(4) == [("DISPATCH", 2, ("h1",))]
    sc.finish(2, at_s=5)
    assert sc.round(5) == [("RESUME", 1, None)]


# --- resume -------------------------------------------------------------------------------------


def test_a_victim_resumes_on_its_hosts_after_the_preemptor_finishes() -> None:
    sc = urgent_and_normal().hosts_n(2, slots=2).job(1, tasks=4).build()
    sc.round(1)
    sc.submit(job_spec(2, queue="urgent", tasks=2, priority=1), at_s=2)
    assert sc.round(2)[0] == ("PREEMPT", 2, (1,))
    sc.state_change(1, JobState.SUSP, at_s=3)
    assert sc.round(3) == [("DISPATCH", 2, ("h1",))]
    assert sc.round(4) == []  # h1 is still taken: no resume
    sc.finish(2, at_s=5)
    assert sc.round(5) == [("RESUME", 1, None)]
    resume = sc.decisions[-1]
    assert isinstance(resume, Resume) and resume.signal == SIGCONT
    assert running(sc, 1) and used(sc) == {"h1": 2, "h2": 2}
    sc.state_change(1, JobState.RUN, at_s=6)  # the controller's confirmation: a no-op
    assert used(sc) == {"h1": 2, "h2": 2}


def test_a_suspended_victim_waits_while_a_higher_priority_job_needs_its_room() -> None:
    sc = urgent_and_normal().hosts_n(1, slots=2).job(1, tasks=2).build()
    sc.round(1)
    sc.submit(job_spec(2, queue="urgent", tasks=2, priority=5), at_s=2)
    sc.round(2)
    sc.state_change(1, JobState.SUSP, at_s=3)
    sc.round(3)
    sc.submit(job_spec(3, queue="urgent", tasks=2, priority=5), at_s=4)
    assert sc.round(4) == [("PEND", 3, "NOT_ENOUGH_SLOTS")]
    sc.finish(2, at_s=5)
    assert sc.round(5) == [("DISPATCH", 3, ("h1",))]  # job 3 needs the room: no resume
    sc.finish(3, at_s=6)
    assert sc.round(6) == [("RESUME", 1, None)]


def test_a_job_suspended_by_the_controller_is_not_resumed_by_the_core() -> None:
    sc = urgent_and_normal().hosts_n(1, slots=1).job(1).build()
    sc.round(1)
    sc.state_change(1, JobState.SUSP, at_s=2)  # bstop: not a preemption
    assert sc.round(3) == []
    assert sc.core.state.jobs[1].state is JobState.SUSP


def test_a_preemptor_that_leaves_the_queue_ends_its_preemption() -> None:
    sc = urgent_and_normal().hosts_n(1).job(1).build()
    sc.round(1)
    sc.submit(job_spec(2, queue="urgent", priority=1), at_s=2)
    sc.round(2)
    sc.state_change(2, JobState.EXIT, at_s=3)  # bkill
    assert sc.core.state.preemptions == {}
    sc.state_change(1, JobState.SUSP, at_s=4)
    assert not sc.core.state.jobs[1].preempted  # nobody asked any more


# --- the unsatisfiable cache with preemption ----------------------------------------------------


class Fifo(PickerBase):
    """Pending jobs in submission order, whatever their priority."""

    name = "fifo"

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        self.view = view
        self.pending: dict[int, JobInfo] = {}
        self.cursor: Iterator[JobInfo] = iter(())

    def on_job_push(self, job: JobInfo) -> None:
        self.pending[job.jobid] = job

    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None:
        self.pending.pop(job.jobid, None)

    def on_dispatch(self, jobid: int) -> None:
        self.pending.pop(jobid, None)

    def begin_session(self) -> None:
        self.cursor = iter(list(self.pending.values()))

    def next_job(self) -> JobInfo | None:
        return next(self.cursor, None)


def test_a_higher_priority_twin_is_not_pended_by_a_lower_twins_cache_entry() -> None:
    registry = in_tree_registry()
    registry.pickers.register("fifo", Fifo)
    sc = (
        urgent_and_normal()
        .with_picker("fifo")
        .hosts_n(1, slots=1)
        .job(1, priority=3)
        .build(registry=registry)
    )
    sc.round(1)
    sc.submit(
        job_spec(2, queue="urgent", priority=2),  # cannot preempt priority 3: cached
        job_spec(3, queue="urgent", priority=4),  # the same request, and may preempt
        job_spec(4, queue="urgent", priority=2),  # a hit of job 2's entry
        at_s=2,
    )
    assert sc.round(2) == [
        ("PEND", 2, "NOT_ENOUGH_SLOTS"),
        ("PREEMPT", 3, (1,)),
        ("PEND", 3, "PREEMPT_WAIT"),
        ("PEND", 4, "NOT_ENOUGH_SLOTS"),
    ]
    assert sc.core.cache_hits == 1


# --- policies ---------------------------------------------------------------------------------


class Rogue:
    """A policy that names a job it may not take (a higher-priority one)."""

    name = "rogue"

    def __init__(self, view: CoreView) -> None:
        self.view = view

    def select_victims(
        self, preemptor: JobInfo, candidates: Sequence[JobInfo], trial: PreemptTrial
    ) -> Sequence[int]:
        return [job.jobid for job in candidates] + [99]


def test_the_core_refuses_a_policy_that_breaks_the_safety_rules(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = in_tree_registry()
    registry.preempt_policies.register("rogue", Rogue)
    builder = (
        cluster()
        .queue("urgent", priority=100, preemptible_queues=("normal",), preempt_policy="rogue")
        .queue("normal", priority=30, preemptible=True)
        .hosts_n(1)
        .job(1)
        .job(99, queue="normal", priority=-1)  # pends: not a candidate
    )
    sc = builder.build(registry=registry)
    sc.round(1)
    sc.submit(job_spec(2, queue="urgent", priority=10), at_s=2)
    with caplog.at_level(logging.ERROR, logger="xce_core"):
        assert sc.round(2) == [("PEND", 2, "NOT_ENOUGH_SLOTS")]
    assert "outside the safe candidates" in caplog.text


def test_an_unknown_policy_or_target_queue_is_refused_and_nothing_changes() -> None:
    sc = urgent_and_normal().build()
    bad_policy = QueueSpec(name="x", preemptible_queues=("normal",), preempt_policy="nope")
    with pytest.raises(ConfigError, match="unknown preempt policy 'nope'"):
        sc.push(QueueUpdate(ts=NS, payload=QueueUpdatePayload(queue=bad_policy)))
    bad_target = QueueSpec(name="x", preemptible_queues=("ghost",))
    with pytest.raises(EventError, match=r"preemptible_queues\[0\]: unknown queue 'ghost'"):
        sc.push(QueueUpdate(ts=NS, payload=QueueUpdatePayload(queue=bad_target)))
    assert "x" not in sc.core.state.queues


# --- snapshots ---------------------------------------------------------------------------------


def test_a_snapshot_mid_preemption_continues_with_the_same_decisions() -> None:
    sc = (
        urgent_and_normal(max_running=6)
        .configure(preempt_timeout_rounds=2)
        .hosts_n(3, slots=2)
        .job(1, tasks=2)
        .job(2, tasks=2, priority=1)
        .job(3, tasks=2, priority=2)
        .build()
    )
    sc.round(1)
    sc.submit(job_spec(4, queue="urgent", tasks=4, priority=9), at_s=2)
    assert sc.round(2)[0] == ("PREEMPT", 4, (1, 2))
    sc.state_change(1, JobState.SUSP, at_s=3)  # job 2 has not suspended yet
    twin_decisions: list[Decision] = []
    snapshot = save_snapshot(sc.core)
    twin = load_snapshot(snapshot.model_dump_json(), twin_decisions.append)
    assert save_snapshot(twin).model_dump_json() == snapshot.model_dump_json()
    assert twin.state.queue_slots == sc.core.state.queue_slots == {"normal": 4}

    def script(core: SchedCore, decisions: list[Decision]) -> list[str]:
        start = len(decisions)
        for at_s, event in [
            (3, None),
            (4, JobStateChangePayload(jobid=2, state=JobState.SUSP)),
            (4, None),
            (5, JobStateChangePayload(jobid=4, state=JobState.DONE)),
            (5, None),
        ]:
            if event is None:
                core.push_event(BeginRound(ts=at_s * NS))
            else:
                core.push_event(JobStateChange(ts=at_s * NS, payload=event))
        return [dump_decision(d).decode() for d in decisions[start:]]

    ours = script(sc.core, sc.decisions)
    assert ours == script(twin, twin_decisions)
    ops = [json.loads(line)["op"] for line in ours]
    assert ops.count("DISPATCH") == 1 and ops.count("RESUME") == 2


def test_explain_says_a_preemptor_waits_for_its_victims_in_plain_words() -> None:
    sc = urgent_and_normal().hosts_n(2).job(1).job(2).build()
    sc.round(1)
    sc.submit(job_spec(3, queue="urgent", priority=1), at_s=2)
    sc.round(2)
    reason = sc.core.explain(3)
    assert reason is not None
    assert render(reason) == "Waiting for preempted jobs to release their resources (jobs 1)"


# --- preemption and slot limits ---------------------------------------------------------------


def test_preemptors_of_a_limited_queue_preempt_no_more_than_its_limit_allows() -> None:
    sc = (
        cluster()
        .queue("normal", priority=30, preemptible_queues=("low",), max_running=2)
        .queue("low", priority=10, preemptible=True)
        .hosts_n(4)
        .job(1, queue="low", tasks=2)
        .job(2, queue="low", tasks=2)
        .build()
    )
    sc.round(1)
    sc.submit(job_spec(3, tasks=2, priority=5), job_spec(4, tasks=2, priority=5), at_s=10)
    # Job 3's preemption promises it 2 slots of the queue's 2: job 4 may not preempt.
    assert sc.round(10) == [
        ("PREEMPT", 3, (1,)),
        ("PEND", 3, "PREEMPT_WAIT"),
        ("PEND", 4, "QUEUE_SLOT_LIMIT"),
    ]
    sc.state_change(1, JobState.SUSP, at_s=10)
    assert sc.round(10) == [("DISPATCH", 3, ("h1", "h2"))]
    assert running(sc, 2)  # never suspended for nothing
    sc.finish(3, at_s=110)
    # Job 4 (priority 5) waits for the room job 1 (priority 0) held: no resume yet.
    assert sc.round(110) == [("DISPATCH", 4, ("h1", "h2"))]
    sc.finish(4, at_s=210)
    assert sc.round(210) == [("RESUME", 1, None)]


def test_a_job_that_can_never_run_does_not_keep_a_victim_suspended() -> None:
    sc = (
        urgent_and_normal(max_running=8)
        .host("h1", slots=2, mem=1000)
        .job(1, tasks=2, resreq="rusage[mem=100]")
        .build()
    )
    sc.round(1)
    sc.submit(job_spec(2, queue="urgent", tasks=2, priority=5), at_s=2)
    assert sc.round(2)[0] == ("PREEMPT", 2, (1,))
    sc.state_change(1, JobState.SUSP, at_s=2)
    sc.round(2)
    sc.submit(
        job_spec(3, queue="urgent", priority=9, resreq="rusage[mem=1953]"),  # no host has it
        job_spec(4, queue="normal", tasks=9, priority=9),  # more than normal's limit of 8
        at_s=3,
    )
    decided = sc.round(3)
    assert [d[:2] for d in decided] == [("PEND", 3), ("PEND", 4)]
    assert decided[1] == ("PEND", 4, "QUEUE_SLOT_LIMIT")
    pend = next(d for d in sc.decisions if isinstance(d, Pend) and d.jobid == 4)
    assert pend.reason.detail == "the job's 9 slots exceed the limit of 8 slots"
    sc.finish(2, at_s=4)
    assert sc.round(4)[0] == ("RESUME", 1, None)


@pytest.mark.parametrize(
    "resreq",
    ["span[hosts=1]", "span[ptile=3]", "select[hname=='h1']"],
    ids=[
        "span[hosts=1] larger than any host",
        "ptile larger than any host",
        "more tasks than the selected host has slots",
    ],
)
def test_a_job_whose_request_never_fits_does_not_keep_a_victim_suspended(resreq: str) -> None:
    sc = urgent_and_normal().host("h1", slots=2).host("h2", slots=2).job(1, tasks=4).build()
    sc.round(1)
    sc.submit(job_spec(2, queue="urgent", tasks=4, priority=5), at_s=2)
    assert sc.round(2)[0] == ("PREEMPT", 2, (1,))
    sc.state_change(1, JobState.SUSP, at_s=2)
    sc.round(2)
    # 3 tasks on hosts of 2 slots, or on h1 alone: never, whatever runs.
    sc.submit(job_spec(3, queue="urgent", priority=9, tasks=3, resreq=resreq), at_s=3)
    assert [d[:2] for d in sc.round(3)] == [("PEND", 3)]
    sc.finish(2, at_s=4)
    assert sc.round(4)[0] == ("RESUME", 1, None)
