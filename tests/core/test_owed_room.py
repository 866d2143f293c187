"""Room owed to a job is held for it (issue 15 item 4), under every backfill policy,
``greedy`` included: a session has a book whenever a policy reserves, a preemption
is in flight or a job suspended by a preemption waits to be resumed; under
``greedy`` that book holds only owed room (no greedy job gets a reservation of its
own), and with nothing owed there is none, as in the first release.

* A preemptor's suspended victims' room is its own until it starts: no other job
  takes it between two victims' suspensions, nor while its queue holds it
  (inactive, outside its run windows), so one preemption is enough.
* A job suspended by a preemption gets its hosts back first: a job of equal or
  lower priority takes that room only if, by its run limit, it ends before the
  room is expected to be free for the suspended job; a job of higher priority may.
"""

from __future__ import annotations

from typing import Any

import pytest
from xce_core.backfill import backfills
from xce_core.core import SchedCore
from xce_schemas import JobState, PendingCode

#: Every backfill policy (``hybrid`` with a depth of 2).
POLICIES = ["greedy", "easy", "hybrid", "conservative", "strict"]

NS = 1_000_000_000


class Cluster:
    """A core with queues ``low`` (priority 10, jobs of priority 0) and ``high`` (50,
    jobs of priority 10, preempts ``low``) on one-slot hosts, driven by events; it
    records every decision."""

    def __init__(self, backfill: str, hosts: int = 2) -> None:
        self.decisions: list[Any] = []
        self.core = SchedCore(on_decision=self.decisions.append)
        queues = [
            {"name": "low", "priority": 10, "preemptible": True},
            {"name": "high", "priority": 50, "preemptible_queues": ["low"]},
        ]
        config: dict[str, Any] = {"queues": queues, "backfill": backfill}
        config["preempt_timeout_rounds"] = 5
        if backfill == "hybrid":
            config["reservation_depth"] = 2
        self.push("CONFIG_PUSH", 0, config=config)
        slots = [{"name": f"h{i}", "slots": 1} for i in range(hosts)]
        self.push("WORKERS_PUSH", 0, hosts=slots)

    def push(self, kind: str, ts_s: int, **payload: Any) -> None:
        self.core.push_event({"type": kind, "ts": ts_s * NS, "payload": payload})

    def submit(self, ts_s: int, jobid: int, queue: str, tasks: int, limit: int | None) -> None:
        job = {"jobid": jobid, "queue": queue, "tasks": tasks, "submit_ts": ts_s * NS}
        priority = 10 if queue == "high" else 0  # preemption ranks by job priority
        self.push("JOBS_PUSH", ts_s, jobs=[{**job, "run_limit_s": limit, "priority": priority}])

    def round(self, ts_s: int) -> None:
        self.push("BEGIN_ROUND", ts_s)

    def change(self, ts_s: int, jobid: int, state: JobState) -> None:
        self.push("JOB_STATE_CHANGE", ts_s, jobid=jobid, state=state.value)

    def high(self, ts_s: int, **spec: Any) -> None:
        """Redefine queue ``high`` (as in ``__init__``, with ``spec`` on top)."""
        queue = {"name": "high", "priority": 50, "preemptible_queues": ["low"], **spec}
        self.push("QUEUE_UPDATE", ts_s, queue=queue)

    def dispatches(self) -> dict[int, list[str]]:
        """Each job dispatched, with its hosts."""
        return {d.jobid: sorted(h.host for h in d.alloc.hosts) for d in self.kinds("DISPATCH")}

    def kinds(self, kind: str) -> list[Any]:
        return [d for d in self.decisions if d.op == kind]

    def state(self, jobid: int) -> JobState | None:
        job = self.core.state.jobs.get(jobid)
        return None if job is None else job.state


def preempt_both(backfill: str) -> Cluster:
    """Jobs 1 and 2 (low) run on h0 and h1; at 10 job 3 (high, two hosts) preempts
    both."""
    c = Cluster(backfill)
    c.submit(0, 1, "low", 1, 1000)
    c.submit(0, 2, "low", 1, 1000)
    c.round(0)
    c.submit(10, 3, "high", 2, 100)
    c.round(10)
    assert [p.victim_jobids for p in c.kinds("PREEMPT")] == [(1, 2)]
    return c


def preempt_over_two_rounds(backfill: str) -> Cluster:
    """Jobs 1 and 2 (low) run on h0 and h1; job 3 (high, two hosts) preempts both;
    job 1 suspends, then job 4 (low, one host) arrives and a round runs before job
    2 suspends."""
    c = preempt_both(backfill)
    c.change(11, 1, JobState.SUSP)
    c.submit(12, 4, "low", 1, 1000)
    c.round(12)
    return c


@pytest.mark.parametrize("backfill", POLICIES)
def test_a_preemptors_freed_room_waits_for_it_and_one_preemption_is_enough(
    backfill: str,
) -> None:
    c = preempt_over_two_rounds(backfill)
    assert c.state(4) is JobState.PEND  # the room job 1 freed is job 3's
    assert c.core.state.reservations[3].hosts == (("h0", 1),)
    c.change(13, 2, JobState.SUSP)
    c.round(13)
    dispatches = c.dispatches()
    assert dispatches[3] == ["h0", "h1"]
    assert len(c.kinds("PREEMPT")) == 1  # never a second for the same need
    assert 4 not in dispatches


def test_under_greedy_a_job_arriving_between_two_suspensions_leaves_the_freed_host() -> None:
    """Under greedy too (the first release gave h0 to job 4, and job 3 had to
    preempt it as well): job 4 pends for the room held for job 3, by name."""
    c = preempt_over_two_rounds("greedy")
    assert c.state(4) is JobState.PEND and c.state(1) is JobState.SUSP
    reason = c.core.state.jobs[4].pend_reason
    assert reason is not None and reason.main is PendingCode.RESERVED
    assert "job 3" in reason.detail
    assert 4 not in c.dispatches()
    c.change(13, 2, JobState.SUSP)
    c.round(13)
    assert [p.victim_jobids for p in c.kinds("PREEMPT")] == [(1, 2)]
    assert c.dispatches()[3] == ["h0", "h1"]
    assert c.state(4) is JobState.PEND  # the cluster is full: nothing to take


#: What holds queue ``high`` in ``test_a_held_preemptor_keeps_...``: inactive, or
#: outside its run window (the clock is at 00:00 on a Thursday).
HOLDS = {"inactive": {"active": False}, "run window": {"run_windows": ["1:00-2:00"]}}


@pytest.mark.parametrize("hold", HOLDS)
@pytest.mark.parametrize("backfill", POLICIES)
def test_a_held_preemptor_keeps_its_preemption_and_its_victims_room(
    backfill: str, hold: str
) -> None:
    """Job 3 preempts jobs 1 and 2, then its queue holds it for a round while they
    suspend: the preemption stays in flight (no second PREEMPT of the same victims),
    the victims stay suspended, and the room they freed waits for job 3, not for
    job 4 (low, one host), which would fit there."""
    c = preempt_both(backfill)
    c.high(11, **HOLDS[hold])
    c.round(11)
    reason = c.core.state.jobs[3].pend_reason
    assert reason is not None and reason.main in (
        PendingCode.QUEUE_INACTIVE,
        PendingCode.QUEUE_WINDOW,
    )
    c.change(12, 1, JobState.SUSP)
    c.change(12, 2, JobState.SUSP)
    c.submit(12, 4, "low", 1, 1000)
    c.round(12)
    assert 4 not in c.dispatches()  # the room jobs 1 and 2 freed is job 3's
    assert not c.kinds("RESUME")  # the victims of a preemption in flight wait
    reason = c.core.state.jobs[4].pend_reason
    assert reason is not None and reason.main is PendingCode.RESERVED
    assert "job 3" in reason.detail
    c.high(13)
    c.round(13)
    assert [p.victim_jobids for p in c.kinds("PREEMPT")] == [(1, 2)]
    dispatches = c.dispatches()
    assert dispatches[3] == ["h0", "h1"]
    assert 4 not in dispatches
    assert c.core.state.preemptions == {}  # done: it started


def test_a_held_preemptors_victims_that_never_suspend_are_given_up() -> None:
    """The timeout runs while the queue holds the preemptor: its preemption is given
    up (the victims still running ignored it), and the victims are never chosen
    again."""
    c = Cluster("greedy")
    c.submit(0, 1, "low", 2, 1000)
    c.round(0)
    c.submit(10, 3, "high", 1, 100)
    c.round(10)
    c.high(11, active=False)
    for ts in range(11, 15):  # rounds 3 to 6: four rounds after the preemption
        c.round(ts)
        assert 3 in c.core.state.preemptions
    c.round(15)  # the fifth: preempt_timeout_rounds
    assert 3 not in c.core.state.preemptions
    assert c.core.preemptions_given_up == 1
    assert c.core.state.jobs[1].ignored_preemption
    c.high(16)
    c.round(16)
    assert len(c.kinds("PREEMPT")) == 1 and c.state(3) is JobState.PEND


def test_a_preemptor_that_can_never_run_in_its_queue_lets_its_victims_resume() -> None:
    """A slot limit lowered below its tasks holds job 3 for good: its preemption is
    dropped, and its suspended victims come back."""
    c = Cluster("greedy")
    c.submit(0, 1, "low", 1, 1000)
    c.submit(0, 2, "low", 1, 1000)
    c.round(0)
    c.submit(10, 3, "high", 2, 100)
    c.round(10)
    c.change(11, 1, JobState.SUSP)
    c.change(11, 2, JobState.SUSP)
    c.high(11, max_running=1)
    c.round(11)
    assert c.core.state.preemptions == {}
    reason = c.core.state.jobs[3].pend_reason
    assert reason is not None and reason.main is PendingCode.QUEUE_SLOT_LIMIT
    c.round(12)
    assert [r.jobid for r in c.kinds("RESUME")] == [1, 2]


def test_a_greedy_session_has_a_book_only_while_room_may_be_owed() -> None:
    """Under greedy, no book (first fit, as the first release) until a preemption is
    in flight; one while it is or while its victims wait to be resumed, holding only
    owed room; none again once they run."""
    c = Cluster("greedy")
    c.submit(0, 1, "low", 2, 1000)
    c.round(0)
    assert not backfills(c.core.state)
    c.submit(10, 2, "high", 1, 100)
    c.round(10)
    assert backfills(c.core.state)  # job 2's preemption is in flight
    c.change(10, 1, JobState.SUSP)
    c.round(10)
    assert c.state(2) is JobState.RUN and backfills(c.core.state)  # job 1 waits
    c.submit(20, 3, "low", 1, 5000)  # blocked: gets no reservation of its own
    c.round(20)
    assert c.state(3) is JobState.PEND
    assert set(c.core.state.reservations) == {1}  # job 1's hosts, owed
    c.change(110, 2, JobState.DONE)
    c.round(110)
    assert [r.jobid for r in c.kinds("RESUME")] == [1]
    assert not backfills(c.core.state) and c.core.state.reservations == {}


def resume_waits(backfill: str) -> Cluster:
    """Job 1 (low, two hosts) is suspended for job 2 (high, one host, run limit 100 s,
    on h0); h1 is free, and job 1 can resume once job 2 is expected to end (110 s)."""
    c = Cluster(backfill)
    c.submit(0, 1, "low", 2, 1000)
    c.round(0)
    c.submit(10, 2, "high", 1, 100)
    c.round(10)
    c.change(10, 1, JobState.SUSP)
    c.round(10)
    assert c.state(2) is JobState.RUN and c.state(1) is JobState.SUSP
    return c


@pytest.mark.parametrize("backfill", ["greedy", "easy", "conservative"])
def test_a_suspended_jobs_hosts_wait_for_its_resume(backfill: str) -> None:
    c = resume_waits(backfill)
    c.submit(20, 3, "low", 1, 500)  # would still run at 110 s: not over the resume
    c.submit(20, 4, "low", 1, 50)  # ends at 70 s: around it
    c.round(20)
    held = c.core.state.reservations[1]
    assert (held.start_ts, held.end_ts) == (110 * NS, (110 + 1000 - 10) * NS)  # ran 10 s
    assert held.hosts == (("h0", 1), ("h1", 1))
    assert c.state(3) is JobState.PEND and c.state(4) is JobState.RUN
    reason = c.core.state.jobs[3].pend_reason
    assert reason is not None and reason.main is PendingCode.RESERVED
    assert "job 1" in reason.detail


@pytest.mark.parametrize("backfill", ["greedy", "easy"])
def test_a_higher_priority_job_may_take_a_suspended_jobs_room(backfill: str) -> None:
    c = resume_waits(backfill)
    c.submit(20, 5, "high", 1, 1000)
    c.round(20)
    assert c.state(5) is JobState.RUN


@pytest.mark.parametrize("backfill", ["greedy", "easy"])
def test_the_suspended_job_resumes_when_its_room_is_free(backfill: str) -> None:
    c = resume_waits(backfill)
    c.submit(20, 4, "low", 1, 50)
    c.round(20)
    c.change(70, 4, JobState.DONE)
    c.change(110, 2, JobState.DONE)
    c.round(110)
    assert [r.jobid for r in c.kinds("RESUME")] == [1]
