"""Every core event updates state as Req 10 AC 4 says; bad ones change nothing (invariant 5)."""

from __future__ import annotations

from typing import Any

import pytest
from xce_core.errors import ConfigError, EventError
from xce_core.snapshot import save_snapshot
from xce_schemas import JobState

from tests.builders import NS, Scenario, cluster


def base() -> Scenario:
    sc = cluster().host("h1", 2).host("h2", 2).queue("normal", 30).job(1, tasks=3).job(2).build()
    sc.push(
        {
            "type": "RESOURCES_PUSH",
            "ts": 0,
            "payload": {
                "resources": [
                    {"name": "scratch", "value_type": "numeric"},
                    {"name": "arch", "value_type": "string"},
                    {"name": "lic", "value_type": "numeric", "consumable": True, "shared": True},
                ]
            },
        }
    )
    assert sc.round(1) == [("DISPATCH", 1, ("h1", "h2")), ("DISPATCH", 2, ("h2",))]
    return sc


BAD_EVENTS: list[tuple[dict[str, Any], str]] = [
    (
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {"jobs": [{"jobid": 5, "queue": "normal", "submit_ts": 0, "tasks": 0}]},
        },
        r"JOBS_PUSH rejected: payload\.jobs\[0\]\.tasks: Input should be greater than or equal to 1",
    ),
    (
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {"jobs": [{"jobid": 5, "queue": "nosuch", "submit_ts": 0}]},
        },
        r"JOBS_PUSH rejected: payload\.jobs\[0\]\.queue: unknown queue 'nosuch'",
    ),
    (
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {
                "jobs": [
                    {"jobid": 5, "queue": "normal", "submit_ts": 0},
                    {"jobid": 1, "queue": "normal", "submit_ts": 0},
                ]
            },
        },
        r"JOBS_PUSH rejected: payload\.jobs\[1\]\.jobid: job 1 already exists",
    ),
    (
        {"type": "JOBS_PUSH", "ts": 2 * NS, "payload": {"jobs": [{"jobid": 5, "queue": "normal"}]}},
        r"JOBS_PUSH rejected: payload\.jobs\[0\]\.submit_ts: Field required",
    ),
    (
        {
            "type": "JOBS_PUSH",
            "ts": 0,
            "payload": {"jobs": [{"jobid": 5, "queue": "normal", "submit_ts": 0}]},
        },
        r"JOBS_PUSH rejected: ts: 0 is earlier than 1000000000",
    ),
    (
        {"type": "NO_SUCH_EVENT", "ts": 2 * NS, "payload": {}},
        r"event rejected: type: 'NO_SUCH_EVENT' is not an event type; expected one of CONFIG_PUSH, ",
    ),
    (
        {"type": "JOB_STATE_CHANGE", "ts": 2 * NS, "payload": {"jobid": 99, "state": "DONE"}},
        r"JOB_STATE_CHANGE rejected: payload\.jobid: unknown job 99",
    ),
    (
        {"type": "JOB_STATE_CHANGE", "ts": 2 * NS, "payload": {"jobid": 1, "state": "FINISHED"}},
        r"JOB_STATE_CHANGE rejected: payload\.state: Input should be 'PEND', 'RUN'",
    ),
    (
        {"type": "WORKERS_PUSH", "ts": 2 * NS, "payload": {"hosts": [{"name": "h1", "slots": 1}]}},
        r"WORKERS_PUSH rejected: payload\.hosts\[0\]\.slots: host 'h1' cannot shrink to 1 slots while jobs hold 2",
    ),
    (
        {
            "type": "WORKERS_PUSH",
            "ts": 2 * NS,
            "payload": {"hosts": [{"name": "h9", "slots": 1}, {"name": "h9", "slots": 2}]},
        },
        r"WORKERS_PUSH rejected: payload\.hosts\[1\]: host 'h9' listed twice",
    ),
    (
        {
            "type": "WORKERS_PUSH",
            "ts": 2 * NS,
            "payload": {"hosts": [{"name": "bad name", "slots": 1}]},
        },
        r"WORKERS_PUSH rejected: payload\.hosts\[0\]\.name: String should match pattern",
    ),
    (
        {
            "type": "RESVALS_DELTA",
            "ts": 2 * NS,
            "payload": {"values": [{"resource": "nosuch", "host": "h1", "value": 1}]},
        },
        r"RESVALS_DELTA rejected: payload\.values\[0\]\.resource: unknown resource 'nosuch'",
    ),
    (
        {
            "type": "RESVALS_FULL",
            "ts": 2 * NS,
            "payload": {"values": [{"resource": "scratch", "host": "h7", "value": 1}]},
        },
        r"RESVALS_FULL rejected: payload\.values\[0\]\.host: unknown host 'h7'",
    ),
    (
        {
            "type": "RESVALS_DELTA",
            "ts": 2 * NS,
            "payload": {"values": [{"resource": "scratch", "host": "h1", "value": "lots"}]},
        },
        r"RESVALS_DELTA rejected: payload\.values\[0\]\.value: 'scratch' is numeric, not 'lots'",
    ),
    (
        {
            "type": "RESVALS_DELTA",
            "ts": 2 * NS,
            "payload": {"values": [{"resource": "lic", "host": "h1", "value": 4}]},
        },
        r"RESVALS_DELTA rejected: payload\.values\[0\]\.host: 'lic' is shared: no host",
    ),
    (
        {"type": "JOB_UPDATE", "ts": 2 * NS, "payload": {"jobid": 1, "queue": "nosuch"}},
        r"JOB_UPDATE rejected: payload\.queue: unknown queue 'nosuch'",
    ),
    (
        {"type": "JOB_RUSAGE", "ts": 2 * NS, "payload": {"jobid": 77, "rusage": []}},
        r"JOB_RUSAGE rejected: payload\.jobid: unknown job 77",
    ),
    (
        {
            "type": "CONFIG_PUSH",
            "ts": 2 * NS,
            "payload": {"config": {"queues": [{"name": "other"}]}},
        },
        r"CONFIG_PUSH rejected: payload\.config\.queues: queue 'normal' is dropped but job 1 is in it",
    ),
    (
        {
            "type": "CONFIG_PUSH",
            "ts": 2 * NS,
            "payload": {"config": {"queues": [{"name": "normal"}, {"name": "normal"}]}},
        },
        r"CONFIG_PUSH rejected: payload\.config\.queues\[1\]: duplicate 'normal'",
    ),
    (
        {
            "type": "JOBS_PUSH",
            "ts": "3",
            "payload": {"jobs": [{"jobid": 5, "queue": "normal", "submit_ts": 0}]},
        },
        r"JOBS_PUSH rejected: ts: Input should be a valid integer",
    ),
    (
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {"jobs": [{"jobid": "77", "queue": "normal", "submit_ts": 0}]},
        },
        r"JOBS_PUSH rejected: payload\.jobs\[0\]\.jobid: Input should be a valid integer",
    ),
    (
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {"jobs": [{"jobid": 5, "queue": "normal", "submit_ts": 0, "tasks": True}]},
        },
        r"JOBS_PUSH rejected: payload\.jobs\[0\]\.tasks: Input should be a valid integer",
    ),
    (
        {
            "type": "WORKERS_PUSH",
            "ts": 2 * NS,
            "payload": {"hosts": [{"name": "h5", "slots": 2.0}]},
        },
        r"WORKERS_PUSH rejected: payload\.hosts\[0\]\.slots: Input should be a valid integer",
    ),
    (
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {"jobs": [{"jobid": 5, "queue": "normal", "submit_ts": 2**62}]},
        },
        r"JOBS_PUSH rejected: payload\.jobs\[0\]\.submit_ts: 4611686018427387904 is later than the event's ts 2000000000",
    ),
    (
        {"type": 5, "ts": 2 * NS, "payload": {}},
        r"event rejected: type: 5 is not an event type; expected one of CONFIG_PUSH",
    ),
    (
        {"type": "BEGIN_ROUND", "ts": -5, "payload": {}},
        r"BEGIN_ROUND rejected: ts: Input should be greater than or equal to 0",
    ),
    (
        {
            "type": "RESOURCES_PUSH",
            "ts": 2 * NS,
            "payload": {"resources": [{"name": "x", "extra": 1}]},
        },
        r"RESOURCES_PUSH rejected: payload\.resources\[0\]\.extra: Extra inputs are not permitted",
    ),
]


@pytest.mark.parametrize(
    ("event", "message"),
    BAD_EVENTS,
    ids=[
        "job with zero tasks",
        "job in an unknown queue",
        "duplicate jobid in a batch",
        "job without submit time",
        "ts goes back",
        "unknown event type",
        "state change of unknown job",
        "unknown state name",
        "host shrinks below its used slots",
        "host listed twice",
        "host name with a space",
        "value of an unknown resource",
        "value on an unknown host",
        "string value for a numeric resource",
        "shared resource given a host",
        "job moved to an unknown queue",
        "usage of an unknown job",
        "config drops a queue in use",
        "config with a queue twice",
        "ts as a string",
        "jobid as a string",
        "tasks as a boolean",
        "slots as a float",
        "submit time in the future",
        "type that is not a name",
        "negative ts",
        "unknown field",
    ],
)
def test_bad_event_is_rejected_by_name_and_changes_nothing(
    event: dict[str, Any], message: str
) -> None:
    sc = base()
    before = save_snapshot(sc.core)
    with pytest.raises(EventError, match=message):
        sc.push(event)
    assert save_snapshot(sc.core) == before
    # The core goes on scheduling as if the bad event never came.
    sc.finish(1, at_s=3)
    assert sc.round(3) == []


@pytest.mark.parametrize(
    ("transition", "message"),
    [
        ((JobState.RUN,), r"job 3 is pending: only DISPATCH starts it"),
        ((JobState.SUSP,), r"job 3 is pending: it cannot be suspended"),
    ],
    ids=["pending job reported running", "pending job reported suspended"],
)
def test_impossible_state_changes_are_rejected(transition: tuple[JobState], message: str) -> None:
    sc = base()
    sc.push(
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {"jobs": [{"jobid": 3, "queue": "normal", "submit_ts": 2 * NS}]},
        }
    )
    before = save_snapshot(sc.core)
    with pytest.raises(EventError, match=message):
        sc.state_change(3, transition[0], at_s=2)
    assert save_snapshot(sc.core) == before


def test_unknown_picker_in_config_is_a_configuration_error() -> None:
    sc = base()
    before = save_snapshot(sc.core)
    with pytest.raises(ConfigError, match=r"unknown picker 'nosuch'; known: builtin_fcfs"):
        sc.push(
            {
                "type": "CONFIG_PUSH",
                "ts": 2 * NS,
                "payload": {
                    "config": {"job_pick_plugin": "nosuch", "queues": [{"name": "normal"}]}
                },
            }
        )
    assert save_snapshot(sc.core) == before


def used(sc: Scenario) -> dict[str, int]:
    return {h.name: h.used for h in sc.core.state.host_order}


def test_finished_and_failed_jobs_give_their_slots_back() -> None:
    sc = base()
    assert used(sc) == {"h1": 2, "h2": 2}
    sc.finish(1, at_s=2)
    assert used(sc) == {"h1": 0, "h2": 1} and 1 not in sc.core.state.jobs
    sc.state_change(2, JobState.EXIT, at_s=3)
    assert used(sc) == {"h1": 0, "h2": 0} and not sc.core.state.jobs


def test_suspend_frees_slots_and_resume_takes_the_same_hosts_again() -> None:
    sc = base()
    sc.state_change(1, JobState.SUSP, at_s=2)
    assert used(sc) == {"h1": 0, "h2": 1}
    assert sc.core.state.jobs[1].alloc is not None  # it keeps the hosts it held
    sc.state_change(1, JobState.RUN, at_s=3)
    assert used(sc) == {"h1": 2, "h2": 2}


def test_resume_without_room_is_rejected() -> None:
    sc = base()
    sc.state_change(1, JobState.SUSP, at_s=2)
    sc.push(
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {"jobs": [{"jobid": 3, "queue": "normal", "submit_ts": 2 * NS}]},
        }
    )
    assert sc.round(2) == [("DISPATCH", 3, ("h1",))]
    sc.push(
        {
            "type": "JOBS_PUSH",
            "ts": 2 * NS,
            "payload": {"jobs": [{"jobid": 4, "queue": "normal", "submit_ts": 2 * NS}]},
        }
    )
    assert sc.round(2) == [("DISPATCH", 4, ("h1",))]
    with pytest.raises(
        EventError, match=r"job 1 cannot resume: 0 slots free on host 'h1', it needs 2"
    ):
        sc.state_change(1, JobState.RUN, at_s=3)


def test_requeue_frees_slots_and_sets_a_new_queue_time() -> None:
    sc = base()
    sc.state_change(2, JobState.PEND, at_s=5)
    job = sc.core.state.jobs[2]
    assert (job.state, job.alloc, job.queue_ts, used(sc)["h2"]) == (JobState.PEND, None, 5 * NS, 1)


def test_repeated_report_is_a_no_op() -> None:
    sc = base()
    before = save_snapshot(sc.core).hosts
    sc.state_change(1, JobState.RUN, at_s=2)
    assert save_snapshot(sc.core).hosts == before


def test_hosts_resources_values_rusage_and_queue_updates_are_kept() -> None:
    sc = base()
    sc.push(
        {
            "type": "WORKERS_PUSH",
            "ts": 2 * NS,
            "payload": {
                "hosts": [
                    {"name": "h3", "slots": 4},
                    {"name": "h1", "slots": 3, "status": "closed"},
                ]
            },
        }
    )
    state = sc.core.state
    assert [(h.name, h.slots, h.status.value) for h in state.host_order] == [
        ("h1", 3, "closed"),
        ("h2", 2, "ok"),
        ("h3", 4, "ok"),
    ]
    assert state.capacity == 9 and state.free_index.total_free == 4  # closed h1 offers none
    sc.push(
        {
            "type": "RESVALS_FULL",
            "ts": 2 * NS,
            "payload": {
                "values": [
                    {"resource": "scratch", "host": "h1", "value": 4000},
                    {"resource": "lic", "value": 3},
                ]
            },
        }
    )
    sc.push(
        {
            "type": "RESVALS_DELTA",
            "ts": 2 * NS,
            "payload": {"values": [{"resource": "arch", "host": "h2", "value": "x86_64"}]},
        }
    )
    assert state.resvals == {("scratch", "h1"): 4000, ("lic", ""): 3, ("arch", "h2"): "x86_64"}
    sc.push({"type": "RESVALS_FULL", "ts": 2 * NS, "payload": {"values": []}})
    assert state.resvals == {}
    sc.push(
        {
            "type": "JOB_RUSAGE",
            "ts": 2 * NS,
            "payload": {"jobid": 1, "rusage": [{"resource": "mem", "value": 512.5}]},
        }
    )
    assert state.jobs[1].rusage == {"mem": 512.5}
    sc.push(
        {
            "type": "QUEUE_UPDATE",
            "ts": 2 * NS,
            "payload": {"queue": {"name": "night", "priority": 5, "project_name": "p1"}},
        }
    )
    assert state.queues["night"].project_name == "p1"


def test_closed_host_pends_with_its_host_reason() -> None:
    sc = (
        cluster().host("h1", 1, status="closed").host("h2", 1).queue("normal").job(1).job(2).build()
    )
    sc.round(1)
    pend = sc.decisions[-1]
    assert pend.op == "PEND"
    # Occupancy of h2 is the main reason; the entries list hosts that cannot take
    # the job as they are.
    assert pend.reason.main.value == "NOT_ENOUGH_SLOTS"
    assert [(h.host, h.code.value) for h in pend.reason.hosts] == [("h1", "HOST_CLOSED")]
