"""The lines of a recording (replay file, Req 10 AC 15): JSONL, one object a line.

``HEADER`` comes first, then ``SNAPSHOT`` lines, event lines (the eleven core events
as they are) and ``DECISION`` lines, each with ``ts`` in integer nanoseconds.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from xce_schemas.base import WireModel
from xce_schemas.decisions import Decision
from xce_schemas.events import (
    BeginRound,
    ConfigPush,
    JobRusage,
    JobsPush,
    JobStateChange,
    JobUpdate,
    QueueUpdate,
    ResourcesPush,
    ResvalsDelta,
    ResvalsFull,
    SchedulerConfig,
    TimestampNs,
    WorkersPush,
)

#: The recording format version this package writes.
RECORDING_VERSION = "1.0"


class Header(WireModel):
    """First line of every recording: format version and configuration hash."""

    type: Literal["HEADER"] = "HEADER"
    version: str
    config_hash: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    start_ts: TimestampNs
    start_wall: str


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


RecordingLine = Annotated[
    Header
    | Snapshot
    | DecisionLine
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


def config_hash(config: SchedulerConfig) -> str:
    """The HEADER's configuration hash: ``sha256:`` + hex digest of the config's JSON.

    The JSON is pydantic's, whose key order is the model's field order, so the same
    configuration always gives the same hash.
    """
    return "sha256:" + hashlib.sha256(config.model_dump_json().encode()).hexdigest()
