"""Tests of the cluster model both emulators share (``xce_driver.cluster.model``).

A ``Controller`` stand-in records what the model reports, each as ``(s, what, ...)``,
and settles each instant as the live emulator does (its finishes, then its
submission); with ``dispatching`` it also starts every job it submits, on host
``h1``, as a core that always has room would. The test plays the core by hand
otherwise (``apply`` of decisions it writes). Hosts are named, never counted: the
core decides where jobs run; the model runs them there.

A job's label gives its shape: ``J<jobid>.S<submit s>.R<run s>``; queues are
``normal`` (no limit) and ``short`` (``run_limit_s`` 60).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from xce_driver.cluster.jobs import NS, JobRecord, RunPlan
from xce_driver.cluster.model import ClusterModel
from xce_driver.cluster.timeline import EventPriority, Instant, SimulationTimeError
from xce_driver.workloads.mapping import SimJob
from xce_schemas import (
    Decision,
    Dispatch,
    HostAlloc,
    JobAlloc,
    JobSpec,
    JobState,
    Pend,
    PendingCode,
    PendingReason,
    Preempt,
    QueueSpec,
    QueueStatus,
    Resume,
)

QUEUES = (
    QueueSpec(name="normal", priority=30, preemptible=True),
    QueueSpec(name="short", priority=30, preemptible=True, run_limit_s=60),
    QueueSpec(name="closed", status=QueueStatus.CLOSED),
)


def J(jobid: int, submit_s: int, run_s: int, queue: str = "normal") -> SimJob:
    """``J<jobid>.S<submit_s>.R<run_s>``, one task."""
    return SimJob(jobid=jobid, submit_s=submit_s, run_s=run_s, tasks=1, queue=queue, user="u1")


class Hosts:
    """The model's controller: records reports and instants (times in s)."""

    def __init__(self, dispatching: bool = False) -> None:
        self.log: list[tuple[object, ...]] = []
        self.instants: list[tuple[int, list[int], list[int]]] = []
        self.dispatching = dispatching
        self.model: ClusterModel

    def job_state(self, now: int, jobid: int, state: JobState) -> None:
        self.log.append((now // NS, state.value, jobid))

    def submit_jobs(self, now: int, jobs: Sequence[tuple[SimJob, QueueSpec | None]]) -> None:
        self.log.append((now // NS, "SUBMIT", tuple(job.jobid for job, _ in jobs)))

    def settle(self, instant: Instant) -> None:
        self.instants.append((instant.at // NS, list(instant.finished), list(instant.submitted)))
        for jobid in instant.finished:
            self.model.finish(jobid)
        submitted = self.model.submit(instant.submitted) if instant.submitted else []
        if self.dispatching:
            for jobid in submitted:
                self.model.apply(dispatch(jobid, instant.at))


def cluster(
    jobs: Sequence[SimJob],
    *,
    dispatching: bool = False,
    run_plans: dict[int, RunPlan] | None = None,
) -> tuple[ClusterModel, Hosts]:
    hosts = Hosts(dispatching)
    hosts.model = ClusterModel(jobs, QUEUES, hosts, run_plans=run_plans)
    return hosts.model, hosts


def dispatch(jobid: int, ts: int, host: str = "h1") -> Dispatch:
    return Dispatch(
        ts=ts, jobid=jobid, alloc=JobAlloc(jobid=jobid, hosts=(HostAlloc(host=host, allocs=()),))
    )


def at(model: ClusterModel, seconds: int, *decisions: Decision) -> list[bool]:
    """Step the model's agenda through ``seconds`` (what is due then too, as a round
    comes after the rest of its instant) and apply ``decisions`` then; what each
    ``apply`` returned."""
    agenda = model.agenda
    agenda.run(until=seconds * NS)
    while agenda.peek() == seconds * NS:
        agenda.step()
    return [model.apply(decision) for decision in decisions]


def times(record: JobRecord) -> tuple[int | None, int | None]:
    return record.start_s, record.end_s


# --- a job's life ------------------------------------------------------------------------


def test_a_dispatched_job_runs_its_run_time_and_finishes() -> None:
    model, hosts = cluster([J(1, 0, 100)])  # J1.S0.R100
    model.schedule_arrivals()
    at(model, 5, dispatch(1, 5 * NS, "h7"))
    assert (model.pending, model.running) == (0, 1)
    model.agenda.run()
    assert hosts.log == [(0, "SUBMIT", (1,)), (105, "DONE", 1)]
    record = model.records[1]
    assert (times(record), record.hosts, record.killed_by_runlimit) == ((5, 105), ("h7",), False)
    assert (model.running, model.stats.done, model.runs) == (0, 1, {})


def test_a_queue_run_limit_kills_a_job_that_runs_longer() -> None:
    model, hosts = cluster([J(1, 0, 100, "short")])  # J1.S0.R100, limit 60
    model.schedule_arrivals()
    at(model, 0, dispatch(1, 0))
    model.agenda.run()
    assert hosts.log[-1] == (60, "EXIT", 1)
    assert (times(model.records[1]), model.records[1].killed_by_runlimit) == ((0, 60), True)


def test_time_suspended_does_not_count_and_the_record_keeps_the_suspension() -> None:
    """docs/queues.md's case: a 100 s job of a queue with a 60 s limit, suspended
    after 30 s for 50 s, is killed at 110 s."""
    model, hosts = cluster([J(1, 0, 100, "short"), J(2, 30, 10)])  # 2: the preemptor
    model.schedule_arrivals()
    at(model, 0, dispatch(1, 0))
    assert at(model, 30, Preempt(ts=30 * NS, preempting_jobid=2, victim_jobids=(1,))) == [True]
    assert not model.agenda  # its finish is called off; no submission is left to come
    record = model.records[1]
    assert (record.times_suspended, record.suspensions) == (1, [(30, None)])
    assert (model.running, model.suspended) == (0, 1)
    assert at(model, 80, Resume(ts=80 * NS, jobid=1)) == [False]
    assert (record.times_resumed, record.suspended_s, record.suspensions) == (1, 50, [(30, 80)])
    model.agenda.run()
    assert hosts.log == [
        (0, "SUBMIT", (1,)),
        (30, "SUBMIT", (2,)),
        (30, "SUSP", 1),
        (110, "EXIT", 1),  # 30 s run + 50 s suspended + 30 s run: the limit
    ]
    assert (times(record), record.ran_s, record.killed_by_runlimit) == ((0, 110), 60, True)
    assert (model.stats.suspensions, model.stats.resumes) == (1, 1)


@pytest.mark.parametrize(
    ("victims", "expected", "suspended"),
    [
        ((1,), [True], [1]),
        ((9,), [False], []),
        ((1, 1), [True], [1]),
        ((2, 1), [True], [1]),
    ],
    ids=[
        "a running victim is suspended",
        "a job the model does not run: nothing to stop",
        "a victim named twice is suspended once",
        "a victim that finished already is passed over, the next suspended",
    ],
)
def test_preempt_suspends_only_what_runs(
    victims: tuple[int, ...], expected: list[bool], suspended: list[int]
) -> None:
    model, hosts = cluster([J(1, 0, 100), J(2, 0, 5)])
    model.schedule_arrivals()
    at(model, 0, dispatch(1, 0), dispatch(2, 0))
    assert at(model, 10, Preempt(ts=10 * NS, preempting_jobid=3, victim_jobids=victims)) == expected
    assert [entry[2] for entry in hosts.log if entry[1] == "SUSP"] == suspended


def test_a_resume_of_a_job_not_suspended_changes_nothing() -> None:
    model, _ = cluster([J(1, 0, 100)])
    model.schedule_arrivals()
    at(model, 0, dispatch(1, 0), Resume(ts=0, jobid=1), Resume(ts=0, jobid=9))
    assert (model.stats.resumes, model.records[1].times_resumed, len(model.agenda)) == (0, 0, 1)


# --- instants -------------------------------------------------------------------------------


def test_one_time_is_one_instant_finishes_first_then_submissions_in_workload_order() -> None:
    jobs = [
        J(1, 0, 10),  # finishes at 10
        J(2, 0, 10),  # finishes at 10, dispatched first
        J(3, 10, 5),  # submitted at 10
        J(4, 7, 5),
        J(5, 10, 5),  # submitted at 10, after 3 (workload order)
    ]
    model, hosts = cluster(jobs)
    model.schedule_arrivals()
    assert len(model.agenda) == 1  # one submission entry at a time
    at(model, 0, dispatch(2, 0), dispatch(1, 0))
    model.agenda.run()
    assert hosts.instants == [
        (0, [], [1, 2]),
        (7, [], [4]),
        (10, [2, 1], [3, 5]),  # finishes in the order they were scheduled
    ]
    assert hosts.log[-3:] == [(10, "DONE", 2), (10, "DONE", 1), (10, "SUBMIT", (3, 5))]
    assert model.agenda.now == 10 * NS


def test_a_job_that_ends_the_instant_it_starts_makes_a_further_instant_at_that_time() -> None:
    model, hosts = cluster([J(1, 10, 0), J(2, 10, 3)], dispatching=True)  # J1.S10.R0
    model.schedule_arrivals()
    model.agenda.run()
    assert hosts.instants == [(10, [], [1, 2]), (10, [1], []), (13, [2], [])]
    assert hosts.log == [(10, "SUBMIT", (1, 2)), (10, "DONE", 1), (13, "DONE", 2)]


def test_a_called_off_finish_makes_no_instant() -> None:
    model, hosts = cluster([J(1, 0, 100)])
    model.schedule_arrivals()
    at(model, 0, dispatch(1, 0))
    at(model, 10, Preempt(ts=10 * NS, preempting_jobid=2, victim_jobids=(1,)))
    model.agenda.run()
    assert hosts.instants == [(0, [], [1])]  # nothing at 100 s
    assert model.records[1].left_suspended


# --- what a controller turns away ---------------------------------------------------------------


def test_a_job_of_a_closed_queue_is_refused_at_submission() -> None:
    model, hosts = cluster([J(1, 0, 10, "closed"), J(2, 0, 10)])
    model.schedule_arrivals()
    model.agenda.run()
    assert hosts.log == [(0, "SUBMIT", (2,))]
    assert (model.records[1].rejected, model.records[1].rejected_reason) == (True, "queue_closed")
    assert (model.pending, model.stats.done) == (1, 1)


def test_a_job_pended_as_larger_than_the_cluster_is_turned_away() -> None:
    model, hosts = cluster([J(1, 0, 10), J(2, 0, 10)])
    model.schedule_arrivals()
    larger = PendingReason(main=PendingCode.JOB_LARGER_THAN_CLUSTER)
    busy = PendingReason(main=PendingCode.NOT_ENOUGH_SLOTS)
    at(model, 0, Pend(ts=0, jobid=1, reason=larger), Pend(ts=0, jobid=2, reason=busy))
    assert hosts.log == [(0, "SUBMIT", (1, 2)), (0, "EXIT", 1)]
    record = model.records[1]
    assert (record.rejected, record.rejected_reason) == (True, "larger_than_cluster")
    assert (model.pending, model.stats.done, model.records[2].rejected) == (1, 1, False)


# --- jobs from elsewhere: inputs, a restored core, run plans ---------------------------------


def test_a_job_with_no_run_time_known_never_ends() -> None:
    model, _ = cluster([])
    model.accept([JobSpec(jobid=7, queue="normal", submit_ts=0)])
    assert (model.records[7].run_s, model.pending) == (0, 1)
    at(model, 0, dispatch(7, 0))
    assert (model.endless, model.endless_running, len(model.agenda)) == ({7}, 1, 0)
    at(model, 5, Preempt(ts=5 * NS, preempting_jobid=8, victim_jobids=(7,)))
    assert (model.endless_running, model.suspended) == (0, 1)
    at(model, 9, Resume(ts=9 * NS, jobid=7))
    assert (model.endless_running, model.running, model.records[7].suspended_s) == (1, 1, 4)


def test_a_run_plan_says_how_a_job_ends() -> None:
    plans = {7: RunPlan(20 * NS, exit=True), 8: RunPlan(90 * NS, limited=False)}
    model, hosts = cluster([], run_plans=plans)
    model.accept(
        [
            JobSpec(jobid=7, queue="normal", submit_ts=0),  # fails after 20 s
            JobSpec(jobid=8, queue="short", submit_ts=0),  # its limit already applied
        ]
    )
    assert (model.records[7].run_s, model.records[8].run_s) == (20, 90)
    at(model, 0, dispatch(7, 0), dispatch(8, 0))
    model.agenda.run()
    assert hosts.log == [(20, "EXIT", 7), (90, "DONE", 8)]
    assert (model.records[7].killed_by_runlimit, model.records[8].killed_by_runlimit) == (
        False,
        False,
    )


def test_take_over_a_restored_cores_jobs() -> None:
    plans = {1: RunPlan(40 * NS), 2: RunPlan(30 * NS)}
    model, hosts = cluster([], run_plans=plans)
    model.agenda.run(until=100 * NS)  # the snapshot's time
    for jobid in (1, 2, 3):
        model.record(JobSpec(jobid=jobid, queue="normal", submit_ts=0))
    model.take_over(1, JobState.RUN)  # 40 s left
    model.take_over(2, JobState.SUSP, suspended_since=90 * NS)
    model.records[2].suspend(90)  # its record's part is the emulator's (a what-if's history)
    model.take_over(3, JobState.PEND)
    assert (model.pending, model.running, model.suspended) == (1, 1, 1)
    assert model.runs[2].since_ns == 90 * NS
    at(model, 110, Resume(ts=110 * NS, jobid=2))
    model.agenda.run()
    assert hosts.log == [(140, "DONE", 1), (140, "DONE", 2)]  # 2: 30 s from 110 s
    assert (model.records[2].suspended_s, model.runs, model.running) == (20, {}, 0)


# --- the end of virtual time ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("priority", "item", "message"),
    [
        (EventPriority.FINISH, 4, "job 4 ends at"),
        (EventPriority.SUBMIT, 4, "job 4 is submitted at"),
        (EventPriority.INPUT, 0, "input event 1 at"),
        (EventPriority.ROUND, 0, "the round at"),
    ],
    ids=["a finish", "a submission", "an input", "a round"],
)
def test_an_entry_past_the_end_of_virtual_time_is_named(
    priority: EventPriority, item: int, message: str
) -> None:
    model, _ = cluster([])
    with pytest.raises(SimulationTimeError, match=message + " 18,446,744,073 s is past the end"):
        model.timeline.schedule(2**64, priority, item)


def test_a_submission_past_the_end_is_refused_before_anything_runs() -> None:
    model, hosts = cluster([J(1, 0, 1), J(2, 2**64 // NS + 1, 1), J(3, 2**64 // NS + 2, 1)])
    with pytest.raises(SimulationTimeError, match="job 2 is submitted at"):
        model.schedule_arrivals()
    assert (hosts.log, len(model.agenda)) == ([], 0)
