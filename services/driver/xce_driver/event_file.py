"""Event files: a workload's submissions and run times, the ALT of a what-if.

``write_event_file`` writes what a controller would send for a workload, in the
recording format (``xce_driver.recording``): a HEADER (the configuration's hash, so a
what-if refuses a file made for another configuration), then, at each submission
instant, the ``JOBS_PUSH`` that ``simulate``'s emulator pushes there, followed by a
``RUN_TIME`` line per job (how long it runs once started, which the what-if's
emulator needs and the core never sees), and END. A job submitted to a closed queue
is left out, as ``bsub`` refuses it. ``xce-sched events`` is its command; ``replay
BASE --sim-alt-events FILE`` reads it (``xce_driver.whatif``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from xce_schemas import JobsPush, RunTime, RunTimePayload, SchedulerConfig
from xce_schemas.events import JobsPushPayload

from xce_driver.cluster.controller import job_spec, refused_at_submission
from xce_driver.cluster.jobs import NS
from xce_driver.recording import RecordingWriter
from xce_driver.workloads.mapping import MappedWorkload


@dataclass(frozen=True, slots=True)
class EventFileSummary:
    """What ``write_event_file`` wrote: jobs submitted, jobs left out because their
    queue is closed, and the lines in all."""

    jobs: int
    refused_queue_closed: int
    lines: int


def write_event_file(
    workload: MappedWorkload, config: SchedulerConfig, path: str | Path
) -> EventFileSummary:
    """Write the event file of ``workload`` under ``config`` to ``path`` (``.gz``
    compresses).

    Args:
        workload: the jobs (submit and run times in s from ``origin_s``).
        config: the configuration the base recording was made with (its hash goes
            in the HEADER; its queues give job priorities and closed queues).
        path: the file to write.

    Raises:
        OSError: the file cannot be written (``filename`` is its path).
    """
    queues = {queue.name: queue for queue in config.queues}
    origin_ns = workload.origin_s * NS
    jobs = refused = 0
    last_ts = origin_ns
    with RecordingWriter(path) as writer:
        writer.header(config, origin_ns)
        for submit_s, group in itertools.groupby(workload.jobs, key=lambda job: job.submit_s):
            ts = last_ts = origin_ns + submit_s * NS
            specs, runs = [], []
            for job in group:
                queue = queues.get(job.queue)
                if refused_at_submission(queue):
                    refused += 1
                    continue
                specs.append(job_spec(job, queue, ts))
                runs.append(
                    RunTime(ts=ts, payload=RunTimePayload(jobid=job.jobid, run_ns=job.run_s * NS))
                )
            if not specs:
                continue
            writer.event(JobsPush(ts=ts, payload=JobsPushPayload(jobs=tuple(specs))))
            for run in runs:
                writer.run_time(run)
            jobs += len(specs)
        writer.end(last_ts)
    return EventFileSummary(jobs, refused, writer.lines)
