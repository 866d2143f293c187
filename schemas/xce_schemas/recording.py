"""The lines of a recording (replay file, Req 10 AC 15): JSONL, one object a line.

``HEADER`` comes first, then ``SNAPSHOT`` lines, event lines (the eleven core events
as they are) and ``DECISION`` lines, each with ``ts`` in integer nanoseconds; a
complete recording ends with one ``END`` line (format 1.1), so a file cut short (an
interrupted ``simulate --record``, a recorder that lost its core) is told from a
whole one.

An *event file* (``xce-sched events``; what ``replay --sim-alt-events`` reads) has the
same lines, and ``RUN_TIME`` lines: how long a job runs once started, which the
what-if's cluster emulator needs and the core never sees.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import Field, Strict, TypeAdapter

from xce_schemas.base import WireModel
from xce_schemas.decisions import Decision
from xce_schemas.events import (
    BeginRound,
    ConfigPush,
    JobId,
    JobRusage,
    JobsPush,
    JobStateChange,
    JobUpdate,
    QueueUpdate,
    ResourcesPush,
    ResvalsDelta,
    ResvalsFull,
    SchedulerConfig,
    StrictBool,
    TimestampNs,
    WorkersPush,
)

#: The recording format version this package writes (1.1: the ``END`` and
#: ``RUN_TIME`` lines, the HEADER's ``round_interval_s``).
RECORDING_VERSION = "1.1"


class Header(WireModel):
    """First line of every recording: format version and configuration hash.

    Attributes:
        version: the format version (``RECORDING_VERSION`` when written here).
        config_hash: ``config_hash`` of the configuration in effect at the start.
        start_ts: the core's time at the start, ns.
        start_wall: when the recording was made, wall clock, ISO 8601 UTC.
        round_interval_s: how the recording's rounds came, for a what-if to make
            its own the same way: the round interval of ``simulate
            --round-interval``, s; None: a round at every change (``simulate``'s
            default), or see ``rounds``.
        rounds: ``controller`` when the rounds are the controller's events (a live
            recording: the bridge's ticks), which a what-if pushes as they are;
            None: ``simulate``'s emulator made them (see ``round_interval_s``).
    """

    type: Literal["HEADER"] = "HEADER"
    version: str
    config_hash: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    start_ts: TimestampNs
    start_wall: str
    round_interval_s: Annotated[int, Field(ge=1)] | None = None
    rounds: Literal["controller"] | None = None


class Snapshot(WireModel):
    """The whole core state at ``ts``, as plain JSON (Req 10 AC 16)."""

    type: Literal["SNAPSHOT"] = "SNAPSHOT"
    ts: TimestampNs
    data: dict[str, Any]


class DecisionLine(WireModel):
    """A decision the core emitted, recorded for ``--sim-verify``."""

    type: Literal["DECISION"] = "DECISION"
    ts: TimestampNs
    payload: Decision


class End(WireModel):
    """The last line of a complete recording (format 1.1): whatever follows the HEADER
    was written whole. ``ts``: the core's time when the recording ended, ns."""

    type: Literal["END"] = "END"
    ts: TimestampNs


class RunTimePayload(WireModel):
    """``RUN_TIME``: job ``jobid`` runs ``run_ns`` ns once started (time suspended
    left out); with ``exit``, it then ends with EXIT (it fails) instead of DONE."""

    jobid: JobId
    run_ns: Annotated[int, Strict(), Field(ge=0, lt=2**63)]
    exit: StrictBool = False


class RunTime(WireModel):
    """How long a job of an event file runs: what the cluster emulator of a what-if
    needs (``replay --sim-alt-events``) and the core never sees. ``ts``: the job's
    submission time, ns (where the line stands in the file)."""

    type: Literal["RUN_TIME"] = "RUN_TIME"
    ts: TimestampNs
    payload: RunTimePayload


RecordingLine = Annotated[
    Header
    | Snapshot
    | DecisionLine
    | End
    | RunTime
    | ConfigPush
    | JobsPush
    | WorkersPush
    | ResourcesPush
    | ResvalsFull
    | ResvalsDelta
    | JobStateChange
    | JobUpdate
    | QueueUpdate
    | JobRusage
    | BeginRound,
    Field(discriminator="type"),
]

RECORDING_LINE_ADAPTER: TypeAdapter[RecordingLine] = TypeAdapter(RecordingLine)


def parse_recording_line(text: str | bytes) -> RecordingLine:
    """Validate one JSONL line of a recording.

    Raises:
        pydantic.ValidationError: naming the line type and the offending field.
    """
    return RECORDING_LINE_ADAPTER.validate_json(text)


#: Fields added to the configuration since recording format 1.0: left out of the
#: hash while at their default, so a configuration that does not use them hashes as
#: it did (older recordings keep matching their snapshots).
_LATER_FIELDS: dict[str, Any] = {
    "backfill": "greedy",
    "reservation_depth": None,
    "backfill_params": {},
}
_LATER_QUEUE_FIELDS: dict[str, Any] = {
    "backfill": None,
    "reservation_depth": None,
    "backfill_params": {},
}


def config_hash(config: SchedulerConfig) -> str:
    """The HEADER's configuration hash: ``sha256:`` + hex digest of the config's JSON.

    The JSON is pydantic's, whose key order is the model's field order, so the same
    configuration always gives the same hash; fields added later are left out while
    at their default (``_LATER_FIELDS``).
    """
    top = {name for name, default in _LATER_FIELDS.items() if getattr(config, name) == default}
    queues = {
        index: {
            name for name, default in _LATER_QUEUE_FIELDS.items() if getattr(queue, name) == default
        }
        for index, queue in enumerate(config.queues)
    }
    exclude: dict[str | int, Any] = {name: True for name in top}
    if any(queues.values()):
        exclude["queues"] = {index: names for index, names in queues.items() if names}
    text = config.model_dump_json(exclude=exclude)  # type: ignore[arg-type]
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
