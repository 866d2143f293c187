"""builtin_fcfs picks in LSF's FCFS order (Req 8, Req 9 AC 2) and keeps it across events."""

from __future__ import annotations

from typing import ClassVar

import pytest
from xce_core.errors import ConfigError
from xce_core.in_tree import in_tree_registry
from xce_core.plugins import CoreView, JobInfo, PickerBase, PickerConfig
from xce_schemas import JobState, JobUpdate, QueueSpec, QueueUpdate
from xce_schemas.events import JobUpdatePayload, QueueUpdatePayload

from tests.builders import NS, ClusterBuilder, cluster


def dispatch_order(builder: ClusterBuilder, at_s: int = 100) -> list[int]:
    """Job ids in the order one round dispatched them (the cluster fits them all)."""
    return [jobid for kind, jobid, _ in builder.build().round(at_s) if kind == "DISPATCH"]


ORDER_CASES = [
    pytest.param(
        cluster()
        .hosts_n(8)
        .queue("normal", 30)
        .queue("high", 50)
        .job(1, queue="normal", submit_s=0)  # C01 normal, first in
        .job(2, queue="high", submit_s=5),  # C01 high, later: still first
        [2, 1],
        id="higher-priority queue first, whatever the submit time",
    ),
    pytest.param(
        cluster()
        .hosts_n(8)
        .queue("q1", 30)
        .queue("q2", 30)
        .job(1, queue="q1", submit_s=2)
        .job(2, queue="q2", submit_s=1)
        .job(3, queue="q1", submit_s=3),
        [2, 1, 3],
        id="equal-priority queues are served together, first come first served",
    ),
    pytest.param(
        cluster()
        .hosts_n(8)
        .queue("normal")
        .job(1, submit_s=0, priority=0)
        .job(2, submit_s=5, priority=10),
        [2, 1],
        id="job priority beats queue time",
    ),
    pytest.param(
        cluster().hosts_n(8).queue("normal").job(1, submit_s=7).job(2, submit_s=3),
        [2, 1],
        id="equal priority, earlier submit wins",
    ),
    pytest.param(
        cluster().hosts_n(8).queue("normal").job(7, submit_s=4).job(3, submit_s=4),
        [3, 7],
        id="full tie broken by the lower jobid",
    ),
    pytest.param(
        cluster()
        .hosts_n(8)
        .queue("low", 10)
        .queue("a", 40)
        .queue("b", 40)
        .job(1, queue="low", submit_s=0)
        .job(2, queue="b", submit_s=1, priority=5)
        .job(3, queue="a", submit_s=2, priority=5)
        .job(4, queue="a", submit_s=0),
        [2, 3, 4, 1],
        id="merged equal-priority level orders by job priority, then queue time",
    ),
]


@pytest.mark.parametrize(("builder", "expected"), ORDER_CASES)
def test_fcfs_order(builder: ClusterBuilder, expected: list[int]) -> None:
    assert dispatch_order(builder) == expected


def test_pended_job_keeps_its_place_for_the_next_round() -> None:
    sc = (
        cluster()
        .hosts_n(4)
        .queue("normal")
        .job(1, tasks=4, submit_s=0)  # C04, runs first
        .job(2, tasks=4, submit_s=1)  # C04, pends behind it
        .job(3, tasks=1, submit_s=2)  # C01, pends: no slot left
        .build()
    )
    assert sc.round(10) == [
        ("DISPATCH", 1, ("h1", "h2", "h3", "h4")),
        ("PEND", 2, "NOT_ENOUGH_SLOTS"),
        ("PEND", 3, "NOT_ENOUGH_SLOTS"),
    ]
    sc.finish(1, at_s=20)
    # Job 3 still pends for the same reason: no new PEND decision (only news is sent).
    assert sc.round(20) == [("DISPATCH", 2, ("h1", "h2", "h3", "h4"))]


def test_job_update_reorders_on_priority_and_queue_change() -> None:
    sc = (
        cluster()
        .hosts_n(8)
        .queue("normal", 30)
        .queue("high", 50)
        .queue("low", 10)
        .job(1, submit_s=0)
        .job(2, submit_s=1)
        .job(3, submit_s=2)
        .build()
    )
    sc.push(JobUpdate(ts=3 * NS, payload=JobUpdatePayload(jobid=3, priority=99)))
    sc.push(JobUpdate(ts=3 * NS, payload=JobUpdatePayload(jobid=1, queue="low")))
    sc.push(JobUpdate(ts=3 * NS, payload=JobUpdatePayload(jobid=2, queue="high")))
    assert [jobid for _, jobid, _ in sc.round(10)] == [2, 3, 1]


def test_queue_priority_change_moves_its_jobs() -> None:
    sc = (
        cluster()
        .hosts_n(8)
        .queue("a", 50)
        .queue("b", 30)
        .job(1, queue="a", submit_s=0)
        .job(2, queue="b", submit_s=1)
        .build()
    )
    sc.push(
        QueueUpdate(ts=2 * NS, payload=QueueUpdatePayload(queue=QueueSpec(name="b", priority=60)))
    )
    assert [jobid for _, jobid, _ in sc.round(10)] == [2, 1]


def test_requeued_job_goes_back_with_its_new_queue_time() -> None:
    sc = cluster().hosts_n(1).queue("normal").job(1, submit_s=0).job(2, submit_s=1).build()
    assert sc.round(5)[0] == ("DISPATCH", 1, ("h1",))
    sc.state_change(1, JobState.PEND, at_s=6)  # requeued: queue time is now 6 s
    assert sc.round(7) == [("DISPATCH", 2, ("h1",)), ("PEND", 1, "NOT_ENOUGH_SLOTS")]


def test_killed_pending_job_is_never_picked() -> None:
    sc = cluster().hosts_n(2).queue("normal").job(1).job(2).build()
    sc.state_change(1, JobState.EXIT, at_s=1)
    assert sc.round(2) == [("DISPATCH", 2, ("h1",))]


class Lifo(PickerBase):
    """A test picker: newest job first (a stand-in for a third-party plugin)."""

    name: ClassVar[str] = "lifo"

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        self.jobs: dict[int, JobInfo] = {}
        self.order: list[JobInfo] = []

    def on_job_push(self, job: JobInfo) -> None:
        if job.state is JobState.PEND:
            self.jobs[job.jobid] = job

    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None:
        if new_state is not JobState.PEND:
            self.jobs.pop(job.jobid, None)

    def on_job_update(self, job: JobInfo) -> None:
        self.jobs.pop(job.jobid, None)

    def begin_session(self) -> None:
        self.order = sorted(self.jobs.values(), key=lambda j: (j.queue_ts, j.jobid), reverse=True)

    def next_job(self) -> JobInfo | None:
        return self.order.pop(0) if self.order else None

    def on_dispatch(self, jobid: int) -> None:
        self.jobs.pop(jobid, None)


def registry_with_lifo():  # type: ignore[no-untyped-def]
    registry = in_tree_registry()
    registry.pickers.register(Lifo.name, Lifo)
    return registry


def test_per_queue_override_serves_that_queue_with_its_own_picker() -> None:
    sc = (
        cluster()
        .hosts_n(8)
        .queue("normal", 30)
        .queue("batch", 30, picker="lifo")
        .queue("top", 50)
        .job(1, queue="batch", submit_s=0)
        .job(2, queue="batch", submit_s=1)
        .job(3, queue="normal", submit_s=2)
        .job(4, queue="normal", submit_s=3)
        .job(5, queue="top", submit_s=4)
        .build(registry=registry_with_lifo())
    )
    # top first; at priority 30 the merged FCFS lane, then the overridden queue (LIFO).
    assert [jobid for _, jobid, _ in sc.round(10)] == [5, 3, 4, 2, 1]


def test_a_queue_may_name_builtin_fcfs_itself_as_its_override() -> None:
    # The override serves that one queue, FCFS; it makes no override of its own
    # (it used to, without end).
    sc = (
        cluster()
        .hosts_n(8)
        .queue("normal", 30)
        .queue("batch", 30, picker="builtin_fcfs")
        .job(1, queue="batch", submit_s=0)
        .job(2, queue="batch", submit_s=1)
        .job(3, queue="normal", submit_s=2)
        .build()
    )
    assert [jobid for _, jobid, _ in sc.round(10)] == [3, 1, 2]


def test_override_follows_a_job_moved_out_of_its_queue() -> None:
    sc = (
        cluster()
        .hosts_n(8)
        .queue("normal", 30)
        .queue("batch", 20, picker="lifo")
        .job(1, queue="batch", submit_s=0)
        .job(2, queue="batch", submit_s=1)
        .build(registry=registry_with_lifo())
    )
    sc.push(JobUpdate(ts=2 * NS, payload=JobUpdatePayload(jobid=1, queue="normal")))
    assert [jobid for _, jobid, _ in sc.round(10)] == [1, 2]


def test_unknown_override_is_a_configuration_error_listing_known_pickers() -> None:
    sc = cluster().hosts_n(1).queue("normal").build()
    update = QueueUpdate(
        ts=NS, payload=QueueUpdatePayload(queue=QueueSpec(name="x", job_pick_plugin="nosuch"))
    )
    with pytest.raises(ConfigError, match=r"unknown picker 'nosuch'; known: builtin_fcfs"):
        sc.push(update)
    assert "x" not in sc.core.state.queues


def test_a_global_picker_that_serves_every_queue_itself_refuses_a_queues_own_picker() -> None:
    """Under a global picker written on ``PickerBase`` alone, a queue's
    ``job_pick_plugin`` would be dropped silently: the configuration, and a queue
    update naming one, are refused by name, and nothing changes."""
    lifo_everywhere = cluster().hosts_n(1).queue("normal").with_picker("lifo")
    with pytest.raises(
        ConfigError,
        match=r"queue 'batch' names picker 'builtin_fcfs', but the global picker 'lifo' "
        r"serves every queue itself",
    ):
        lifo_everywhere.queue("batch", picker="builtin_fcfs").build(registry=registry_with_lifo())
    sc = cluster().hosts_n(1).queue("normal").with_picker("lifo").build(registry_with_lifo())
    update = QueueUpdate(
        ts=NS, payload=QueueUpdatePayload(queue=QueueSpec(name="x", job_pick_plugin="lifo"))
    )
    with pytest.raises(ConfigError, match=r"queue 'x' names picker 'lifo', but the global"):
        sc.push(update)
    assert "x" not in sc.core.state.queues and sc.core.picker.name == "lifo"


def test_next_job_exhaustion_is_stable() -> None:
    sc = cluster().hosts_n(1).queue("normal").job(1).build()
    picker = sc.core.picker
    picker.begin_session()
    first = picker.next_job()
    assert first is not None and first.jobid == 1
    assert [picker.next_job() for _ in range(3)] == [None, None, None]
    picker.end_session()


def test_private_state_not_the_cores_tables() -> None:
    """next_job works from the picker's own sorted state (Req 8 AC 3)."""
    sc = cluster().hosts_n(2).queue("normal").job(1).job(2, submit_s=1).build()
    sc.core.state.jobs.clear()  # the core's table is not consulted by next_job
    picker = sc.core.picker
    picker.begin_session()
    picked = [picker.next_job(), picker.next_job(), picker.next_job()]
    assert [j.jobid if j else None for j in picked] == [1, 2, None]


def test_job_push_of_a_non_pending_job_is_ignored() -> None:
    sc = cluster().hosts_n(1).queue("normal").build()
    fcfs = sc.core.picker

    class Running:
        jobid, queue, priority, queue_ts, state = 9, "normal", 0, 0, JobState.RUN

    fcfs.on_job_push(Running())  # type: ignore[arg-type]
    fcfs.begin_session()
    assert fcfs.next_job() is None
