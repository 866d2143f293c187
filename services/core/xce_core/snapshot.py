"""``save_snapshot``: the whole core state as plain JSON (Req 10 AC 16).

The snapshot lists, in their table order (which is the order decisions depend on):
configuration, queues, hosts with used slots, jobs with state and allocation,
resources and their values, counters, the session count, the clock and the PRNG
state. Everything is JSON-native (ints, strings, lists, dicts), so a SNAPSHOT line
is readable and diffable.
"""

from __future__ import annotations

from typing import Any

from xce_core.core import SchedCore

#: Version of the snapshot layout.
SNAPSHOT_VERSION = 1


def save_snapshot(core: SchedCore) -> dict[str, Any]:
    """The whole state of ``core``, as a JSON-ready dict.

    Returns:
        ``{"version", "ts", "config", "queues", "hosts", "jobs", "resources",
        "resvals", "counters", "clock", "prng", "picker"}``; times in ns.
    """
    state = core.state
    version, internal, gauss = core.prng.getstate()
    return {
        "version": SNAPSHOT_VERSION,
        "ts": core.last_ts,
        "config": state.config.model_dump(mode="json"),
        "queues": [
            {
                "name": q.name,
                "priority": q.priority,
                "job_pick_plugin": q.job_pick_plugin,
                "project_name": q.project_name,
            }
            for q in state.queues.values()
        ],
        "hosts": [
            {"name": h.name, "slots": h.slots, "used": h.used, "status": h.status.value}
            for h in state.host_order
        ],
        "jobs": [
            {
                "jobid": j.jobid,
                "queue": j.queue,
                "user": j.user,
                "project": j.project,
                "priority": j.priority,
                "tasks": j.tasks,
                "resreq": j.resreq,
                "submit_ts": j.submit_ts,
                "queue_ts": j.queue_ts,
                "state": j.state.value,
                "alloc": None if j.alloc is None else j.alloc.model_dump(mode="json"),
                "rusage": j.rusage,
                "pend_reason": None
                if j.pend_reason is None
                else j.pend_reason.model_dump(mode="json"),
            }
            for j in state.jobs.values()
        ],
        "resources": [r.model_dump(mode="json") for r in state.resources.values()],
        "resvals": [
            {"resource": resource, "host": host or None, "value": value}
            for (resource, host), value in state.resvals.items()
        ],
        "counters": {
            "next_instid": state.next_instid,
            "sessions": state.sessions,
            "events": core.events,
        },
        "clock": {"now": core.clock.now(), "speed": str(core.clock.speed)},
        "prng": {"seed": core.prng_seed, "state": [version, list(internal), gauss]},
        "picker": core.picker.name,
    }
