"""Room owed to a job is held for it (issue 15 item 4), under every backfill policy
but ``greedy`` (which keeps the first release's results).

* A preemptor's suspended victims' room is its own until it starts: no other job
  takes it between two victims' suspensions, so one preemption is enough.
* A job suspended by a preemption gets its hosts back first: a job of equal or
  lower priority takes that room only if, by its run limit, it ends before the
  room is expected to be free for the suspended job; a job of higher priority may.
"""

from __future__ import annotations

from typing import Any

import pytest
from xce_core.core import SchedCore
from xce_schemas import JobState, PendingCode

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
        config = {"queues": queues, "backfill": backfill, "preempt_timeout_rounds": 5}
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

    def kinds(self, kind: str) -> list[Any]:
        return [d for d in self.decisions if d.op == kind]

    def state(self, jobid: int) -> JobState | None:
        job = self.core.state.jobs.get(jobid)
        return None if job is None else job.state


def preempt_over_two_rounds(backfill: str) -> Cluster:
    """Jobs 1 and 2 (low) run on h0 and h1; job 3 (high, two hosts) preempts both;
    job 1 suspends, then job 4 (low, one host) arrives and a round runs before job
    2 suspends."""
    c = Cluster(backfill)
    c.submit(0, 1, "low", 1, 1000)
    c.submit(0, 2, "low", 1, 1000)
    c.round(0)
    c.submit(10, 3, "high", 2, 100)
    c.round(10)
    assert [p.victim_jobids for p in c.kinds("PREEMPT")] == [(1, 2)]
    c.change(11, 1, JobState.SUSP)
    c.submit(12, 4, "low", 1, 1000)
    c.round(12)
    return c


@pytest.mark.parametrize("backfill", ["easy", "conservative", "strict"])
def test_a_preemptors_freed_room_waits_for_it_and_one_preemption_is_enough(
    backfill: str,
) -> None:
    c = preempt_over_two_rounds(backfill)
    assert c.state(4) is JobState.PEND  # the room job 1 freed is job 3's
    assert c.core.state.reservations[3].hosts == (("h0", 1),)
    c.change(13, 2, JobState.SUSP)
    c.round(13)
    dispatches = {d.jobid: sorted(h.host for h in d.alloc.hosts) for d in c.kinds("DISPATCH")}
    assert dispatches[3] == ["h0", "h1"]
    assert len(c.kinds("PREEMPT")) == 1  # never a second for the same need
    assert 4 not in dispatches


def test_greedy_keeps_the_first_releases_behaviour() -> None:
    """Under greedy the freed room goes to the next job that fits (as before this
    issue): job 4 takes it, and job 3 must preempt again."""
    c = preempt_over_two_rounds("greedy")
    assert c.state(4) is JobState.RUN
    c.change(13, 2, JobState.SUSP)
    c.round(13)
    assert [p.victim_jobids for p in c.kinds("PREEMPT")] == [(1, 2), (4,)]


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


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
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


def test_a_higher_priority_job_may_take_a_suspended_jobs_room() -> None:
    c = resume_waits("easy")
    c.submit(20, 5, "high", 1, 1000)
    c.round(20)
    assert c.state(5) is JobState.RUN


def test_the_suspended_job_resumes_when_its_room_is_free() -> None:
    c = resume_waits("easy")
    c.submit(20, 4, "low", 1, 50)
    c.round(20)
    c.change(70, 4, JobState.DONE)
    c.change(110, 2, JobState.DONE)
    c.round(110)
    assert [r.jobid for r in c.kinds("RESUME")] == [1]


def test_greedy_lets_a_long_job_fill_the_suspended_jobs_hosts() -> None:
    c = resume_waits("greedy")
    c.submit(20, 3, "low", 1, 500)
    c.round(20)
    assert c.state(3) is JobState.RUN
