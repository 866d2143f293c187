"""A tiny fluent builder of scheduling scenarios for the core's tests (STYLE 12).

    sc = cluster().host("h1", slots=8).queue("normal", priority=30).job(1, tasks=8).build()
    assert sc.round(10) == [("DISPATCH", 1, ("h1",))]

Times given to the builder are whole seconds; events carry them as ns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xce_core.core import SchedCore
from xce_core.plugins import PluginRegistry
from xce_schemas import (
    BeginRound,
    ConfigPush,
    Decision,
    Dispatch,
    HostSpec,
    JobSpec,
    JobsPush,
    JobState,
    JobStateChange,
    Pend,
    Preempt,
    QueueSpec,
    Resume,
    SchedulerConfig,
    WorkersPush,
)
from xce_schemas.events import (
    ConfigPushPayload,
    JobsPushPayload,
    JobStateChangePayload,
    WorkersPushPayload,
)

NS = 1_000_000_000

#: A decision as tests compare it: (kind, jobid, hosts) for DISPATCH,
#: (kind, jobid, main reason code) for PEND.
Summary = tuple[str, int, Any]


def summarize(decision: Decision) -> Summary | None:
    """The comparable form of a DISPATCH, PEND, PREEMPT or RESUME decision (None for
    NEW_SESSION): PREEMPT is (kind, preempting jobid, victims), RESUME (kind, jobid,
    None)."""
    if isinstance(decision, Dispatch):
        return ("DISPATCH", decision.jobid, tuple(h.host for h in decision.alloc.hosts))
    if isinstance(decision, Pend):
        return ("PEND", decision.jobid, decision.reason.main.value)
    if isinstance(decision, Preempt):
        return ("PREEMPT", decision.preempting_jobid, decision.victim_jobids)
    if isinstance(decision, Resume):
        return ("RESUME", decision.jobid, None)
    return None


@dataclass
class Scenario:
    """A built scenario: the core, every decision it made, and helpers to drive it."""

    core: SchedCore
    decisions: list[Decision]
    now_s: int = 0

    def push(self, event: Any) -> None:
        """Push one event (a model or a dict)."""
        self.core.push_event(event)

    def round(self, at_s: int | None = None) -> list[Summary]:
        """Run a round at ``at_s`` (default: now) and return its DISPATCH/PEND summaries."""
        self.now_s = self.now_s if at_s is None else at_s
        start = len(self.decisions)
        self.core.push_event(BeginRound(ts=self.now_s * NS))
        return [s for d in self.decisions[start:] if (s := summarize(d)) is not None]

    def state_change(self, jobid: int, state: JobState, at_s: int | None = None) -> None:
        """Report a job state change (DONE, EXIT, PEND, SUSP, RUN) at ``at_s``."""
        self.now_s = self.now_s if at_s is None else at_s
        payload = JobStateChangePayload(jobid=jobid, state=state)
        self.core.push_event(JobStateChange(ts=self.now_s * NS, payload=payload))

    def finish(self, jobid: int, at_s: int | None = None) -> None:
        """Report a job DONE."""
        self.state_change(jobid, JobState.DONE, at_s)

    def submit(self, *jobs: JobSpec, at_s: int | None = None) -> None:
        """Submit more jobs at ``at_s``."""
        self.now_s = self.now_s if at_s is None else at_s
        self.core.push_event(JobsPush(ts=self.now_s * NS, payload=JobsPushPayload(jobs=jobs)))


def job_spec(
    jobid: int,
    *,
    queue: str = "normal",
    tasks: int = 1,
    priority: int = 0,
    submit_s: int = 0,
    user: str = "u1",
    resreq: str = "",
    run_limit_s: int | None = None,
    project: str | None = None,
) -> JobSpec:
    """A job submitted at ``submit_s`` (with its own run limit, s, and project, if
    given)."""
    return JobSpec(
        jobid=jobid,
        queue=queue,
        user=user,
        project=project,
        priority=priority,
        tasks=tasks,
        resreq=resreq,
        run_limit_s=run_limit_s,
        submit_ts=submit_s * NS,
    )


@dataclass
class ClusterBuilder:
    """Collects hosts, queues and jobs; ``build()`` pushes them into a new core."""

    hosts: list[HostSpec] = field(default_factory=list)
    queues: list[QueueSpec] = field(default_factory=list)
    jobs: list[JobSpec] = field(default_factory=list)
    picker: str = "builtin_fcfs"
    config_fields: dict[str, Any] = field(default_factory=dict)

    def host(
        self,
        name: str,
        slots: int = 1,
        status: str = "ok",
        *,
        type: str = "LINUX",
        model: str = "generic",
        mem: float = 0.0,
    ) -> ClusterBuilder:
        """Add a host with ``slots`` job slots (and a type, model, memory in MB)."""
        self.hosts.append(
            HostSpec(
                name=name,
                slots=slots,
                status=status,  # type: ignore[arg-type]
                type=type,
                model=model,
                max_mem_mb=mem,
            )
        )
        return self

    def hosts_n(self, count: int, slots: int = 1, prefix: str = "h") -> ClusterBuilder:
        """Add ``count`` hosts named ``h1``..``hN``."""
        for i in range(1, count + 1):
            self.host(f"{prefix}{i}", slots)
        return self

    def queue(
        self, name: str, priority: int = 30, picker: str | None = None, **fields: Any
    ) -> ClusterBuilder:
        """Add a queue (with an optional per-queue picker override, and any other
        ``QueueSpec`` field: ``preemptible_queues``, ``max_running``, ...)."""
        self.queues.append(
            QueueSpec(name=name, priority=priority, job_pick_plugin=picker, **fields)
        )
        return self

    def configure(self, **fields: Any) -> ClusterBuilder:
        """Set ``SchedulerConfig`` fields (e.g. ``preempt_timeout_rounds``)."""
        self.config_fields.update(fields)
        return self

    def job(self, jobid: int, **kwargs: Any) -> ClusterBuilder:
        """Add a job (see ``job_spec`` for the keywords)."""
        self.jobs.append(job_spec(jobid, **kwargs))
        return self

    def with_picker(self, name: str) -> ClusterBuilder:
        """Use the global picker ``name``."""
        self.picker = name
        return self

    def build(self, registry: PluginRegistry | None = None, seed: int = 1) -> Scenario:
        """A core with the configuration, hosts and jobs pushed (jobs by submit time)."""
        decisions: list[Decision] = []
        core = SchedCore(on_decision=decisions.append, prng_seed=seed, registry=registry)
        queues = tuple(self.queues) or (QueueSpec(name="normal", priority=30),)
        config = SchedulerConfig(job_pick_plugin=self.picker, queues=queues, **self.config_fields)
        core.push_event(ConfigPush(ts=0, payload=ConfigPushPayload(config=config)))
        if self.hosts:
            core.push_event(WorkersPush(ts=0, payload=WorkersPushPayload(hosts=tuple(self.hosts))))
        scenario = Scenario(core, decisions)
        by_time: dict[int, list[JobSpec]] = {}
        for spec in self.jobs:
            by_time.setdefault(spec.submit_ts, []).append(spec)
        for ts in sorted(by_time):
            scenario.submit(*by_time[ts], at_s=ts // NS)
        return scenario


def cluster() -> ClusterBuilder:
    """Start a scenario."""
    return ClusterBuilder()
