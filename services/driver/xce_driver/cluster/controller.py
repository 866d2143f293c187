"""The controller's rules, the same in both emulators: what it submits for a job
(``job_request`` over the bus, ``job_spec`` to a core in-process), which jobs it
refuses at submission (a closed queue, as ``bsub`` refuses it) and which it turns
away on the core's word (a job larger than the cluster).
"""

from __future__ import annotations

from xce_schemas import JobSpec, Pend, PendingCode, QueueSpec, QueueStatus
from xce_schemas.events import JobRequest

from xce_driver.workloads.mapping import SimJob

#: Why the emulator (as the controller) turned a job away: ``JobRecord.rejected_reason``.
REJECT_LARGER_THAN_CLUSTER = "larger_than_cluster"
REJECT_QUEUE_CLOSED = "queue_closed"
#: Pending reasons a controller answers by turning the job away (EXIT): it can never
#: run here.
TURNED_AWAY = frozenset({PendingCode.JOB_LARGER_THAN_CLUSTER})


def job_priority(job: SimJob, queue: QueueSpec | None) -> int:
    """The priority a job is submitted with: its own, else its queue's (0 for a queue
    the configuration does not define)."""
    if job.priority is not None:
        return job.priority
    return 0 if queue is None else queue.priority


def job_request(job: SimJob, queue: QueueSpec | None) -> JobRequest:
    """The request a controller sends for ``job`` (priority resolved from ``queue``)."""
    return JobRequest.model_validate(_request_fields(job, queue))


def job_spec(job: SimJob, queue: QueueSpec | None, submit_ts: int) -> JobSpec:
    """``job`` as the core takes it, submitted at ``submit_ts`` (ns): the fields of
    ``job_request`` and the submission time."""
    return JobSpec.model_validate({**_request_fields(job, queue), "submit_ts": submit_ts})


def _request_fields(job: SimJob, queue: QueueSpec | None) -> dict[str, object]:
    """The fields a submission carries for ``job``, submission time aside."""
    return {
        "jobid": job.jobid,
        "queue": job.queue,
        "user": job.user,
        "project": job.project,
        "priority": job_priority(job, queue),
        "tasks": job.tasks,
        "resreq": job.resreq,
        "run_limit_s": job.run_limit_s,
    }


def refused_at_submission(queue: QueueSpec | None) -> bool:
    """Whether a controller refuses a job of this queue at submission (``bsub`` on a
    closed queue fails); the job is then recorded as ``REJECT_QUEUE_CLOSED``."""
    return queue is not None and queue.status is QueueStatus.CLOSED


def rejected_by_controller(decision: Pend) -> bool:
    """Whether a controller answers this ``PEND`` by rejecting the job (EXIT): it can
    never run on this cluster (``REJECT_LARGER_THAN_CLUSTER``)."""
    return decision.reason.main in TURNED_AWAY
