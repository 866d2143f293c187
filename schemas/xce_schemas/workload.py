"""One line of a JSON-lines workload: a job to simulate (``docs/workloads.md``).

A JSON-lines workload (``.jsonl``, ``.jsonl.gz``) holds one JSON object a line, a
``WorkloadJob``; ``xce_driver.workloads.jsonl`` reads it. Unlike an SWF trace, a job
can carry an LSF resource requirement string (``resreq``), its own queue, user,
project, run limit and priority. Times are whole seconds from the workload's time 0.
Unknown fields are refused, and numbers are strict: ``"4"`` or ``4.0`` is not a
count of tasks.

The resource requirement string is checked here only for its length: the driver
parses it with the core's parser when it reads the file (the schemas do not depend
on the core).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from xce_schemas.base import WireModel
from xce_schemas.events import Count, JobId, Name, Priority

#: Times of a workload stay below this many seconds (10**10 s, the year 2286), so that
#: every event time in ns fits 64 bits with room to spare (as an SWF trace's).
WORKLOAD_MAX_TIME_S = 10**10

#: Whole seconds, 0 or more and below ``WORKLOAD_MAX_TIME_S`` (strict).
Seconds = Annotated[int, Strict(), Field(ge=0, lt=WORKLOAD_MAX_TIME_S)]


class WorkloadJob(WireModel):
    """A job of a JSON-lines workload: one line of the file.

    Attributes:
        jobid: the job's id, unique in the file (0 to 2**64 - 1).
        submit_s: when it is submitted, s from the workload's time 0.
        run_s: how long it runs once started, s (submit_s + run_s below 10**10).
        tasks: slots it asks for, 1 or more.
        queue: the queue it is submitted to.
        user: the submitting user.
        project: the project charged (fair share), if any.
        resreq: its LSF resource requirement string (``bsub -R``), e.g.
            ``select[mem>4000] rusage[mem=2000] span[hosts=1]``; empty for none.
        run_limit_s: its run limit, s (LSF ``bsub -W``: the estimate backfilling
            trusts); None: none given, its queue's ``run_limit_s`` applies.
        priority: its job priority inside its queue (LSF ``-sp``, 32-bit); None: its
            queue's priority.
    """

    jobid: JobId
    submit_s: Seconds
    run_s: Seconds
    tasks: Annotated[Count, Field(ge=1)]
    queue: Name = "normal"
    user: Name = "nobody"
    project: Name | None = None
    resreq: str = Field(default="", max_length=65536)
    run_limit_s: Annotated[int, Strict(), Field(ge=1, lt=WORKLOAD_MAX_TIME_S)] | None = None
    priority: Priority | None = None

    @field_validator("run_s")
    @classmethod
    def _ends_in_time(cls, run_s: int, info: ValidationInfo) -> int:
        """submit_s + run_s stays below ``WORKLOAD_MAX_TIME_S`` (said of ``run_s``;
        nothing when ``submit_s`` itself was refused)."""
        submit_s = info.data.get("submit_s")
        if submit_s is not None and submit_s + run_s >= WORKLOAD_MAX_TIME_S:
            raise PydanticCustomError(
                "ends_too_late",
                "submit_s + run_s must stay below {limit} s (the year 2286)",
                {"limit": f"{WORKLOAD_MAX_TIME_S:,}"},
            )
        return run_s
