"""The admin API's request and response documents (they make its OpenAPI schema)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from xce_schemas.admin import (
    DEFAULT_SUFFIX,
    MAX_NAME_LENGTH,
    CoreStatus,
    RecorderState,
    RecorderStatus,
)

#: The names ``recording_name`` accepts, as a JSON Schema pattern (no ``..``).
NAME_PATTERN = r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]*$"
#: A recording file name (``recording_name`` with its suffix), as a JSON Schema pattern.
FILE_PATTERN = r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]*\.jsonl(\.gz)?$"
#: The longest name that stays within ``MAX_NAME_LENGTH`` once suffixed.
NAME_MAX = MAX_NAME_LENGTH - len(DEFAULT_SUFFIX)

#: A recorder that updated its status longer ago than this is reported down, s.
RECORDER_ALIVE_S = 10.0

_RECORDER_EXAMPLE: dict[str, JsonValue] = {
    "state": "recording",
    "name": "night-run.jsonl.gz",
    "start_seq": 1200,
    "seq": 1314,
    "lines": 402,
    "snapshots": 2,
    "started": "2024-05-01T22:00:03Z",
    "last_file": None,
    "last_error": None,
    "recorder_up": True,
    "heartbeat_age_seconds": 0.4,
}


class ErrorOut(BaseModel):
    """Why a request was refused, in one line."""

    model_config = ConfigDict(
        title="Error",
        json_schema_extra={"examples": [{"detail": "recording name '../x' contains '..'"}]},
    )

    detail: str = Field(description="What went wrong, in one line for a person.")


class StartRequest(BaseModel):
    """Start recording (``xceadmin scheduler record start [FILE]``)."""

    model_config = ConfigDict(
        title="Start recording",
        extra="forbid",
        json_schema_extra={"examples": [{"name": "night-run"}, {}]},
    )

    name: str | None = Field(
        default=None,
        title="File name",
        description="The recording's file name in the recordings directory: letters, "
        "digits, '.', '_' and '-', starting with a letter or digit, no path. Without "
        "'.jsonl' or '.jsonl.gz' it gets '.jsonl.gz'. Omitted: rec-<UTC time>.jsonl.gz.",
        examples=["night-run", "kth.jsonl"],
        # Documented, and checked by the handler (a 400 naming the rule), not by
        # pydantic (a 422 that would not say why a path is refused).
        json_schema_extra={"pattern": NAME_PATTERN, "maxLength": NAME_MAX},
    )


class RecorderOut(BaseModel):
    """The recorder service's state."""

    model_config = ConfigDict(
        title="Recorder status",
        json_schema_extra={"examples": [_RECORDER_EXAMPLE]},
    )

    state: RecorderState = Field(
        description="idle; recording (lines go to Redis); stopping (recording the "
        "events up to the stop); exporting (writing the file)."
    )
    name: str | None = Field(description="The recording in progress, if any.")
    start_seq: int = Field(
        description="XCE_EVENTS sequence of the start SNAPSHOT (idle: of the last recording)."
    )
    seq: int = Field(description="Last event sequence recorded.")
    lines: int = Field(description="Lines recorded (HEADER, SNAPSHOTs, events, decisions).")
    snapshots: int = Field(description="SNAPSHOT lines among them.")
    started: str | None = Field(description="When recording started, ISO 8601 UTC.")
    last_file: str | None = Field(description="The last recording exported, a file name.")
    last_error: str | None = Field(description="Why the last recording or export failed.")
    recorder_up: bool = Field(
        description=f"The recorder updated its state within the last {RECORDER_ALIVE_S:g} s."
    )
    heartbeat_age_seconds: float | None = Field(
        description="Seconds since the recorder's last update (null: never seen)."
    )

    @classmethod
    def of(cls, status: RecorderStatus, now: float) -> RecorderOut:
        """The view of ``status`` at wall time ``now`` (s since the epoch)."""
        age = max(0.0, now - status.heartbeat) if status.heartbeat > 0 else None
        return cls(
            state=status.state,
            name=status.name,
            start_seq=status.start_seq,
            seq=status.seq,
            lines=status.lines,
            snapshots=status.snapshots,
            started=status.started,
            last_file=status.last_file,
            last_error=status.last_error,
            recorder_up=age is not None and age < RECORDER_ALIVE_S,
            heartbeat_age_seconds=age,
        )


class CoreOut(BaseModel):
    """The core service's state after its last scheduling round."""

    model_config = ConfigDict(title="Core status")

    seq: int = Field(description="Last XCE_EVENTS sequence the core handled.")
    last_round_ts: int = Field(description="Virtual time of the last round, ns.")
    round_seconds: float = Field(description="Wall time the last round took, s.")
    pending: int = Field(description="Jobs pending.")
    running: int = Field(description="Jobs running.")
    suspended: int = Field(description="Jobs suspended (preempted).")
    lag_seconds: float = Field(
        description="Wall time from the round's event entering the stream to the core "
        "finishing it, s."
    )
    events_waiting: int = Field(description="Events in the stream not yet delivered to the core.")
    age_seconds: float = Field(description="Seconds since the core last wrote this status.")

    @classmethod
    def of(cls, status: CoreStatus, now: float) -> CoreOut:
        """The view of ``status`` at wall time ``now`` (s since the epoch)."""
        fields = status.model_dump(exclude={"updated"})
        return cls(**fields, age_seconds=max(0.0, now - status.updated))


class SchedulerStatusOut(BaseModel):
    """The scheduler at a glance: the core and the recorder."""

    model_config = ConfigDict(
        title="Scheduler status",
        json_schema_extra={
            "examples": [
                {
                    "core": {
                        "seq": 5310,
                        "last_round_ts": 1714600800000000000,
                        "round_seconds": 0.012,
                        "pending": 41,
                        "running": 230,
                        "suspended": 2,
                        "lag_seconds": 0.003,
                        "events_waiting": 0,
                        "age_seconds": 0.6,
                    },
                    "recorder": _RECORDER_EXAMPLE,
                }
            ]
        },
    )

    core: CoreOut | None = Field(
        description="The core's state; null until the core service finished a round."
    )
    recorder: RecorderOut


class RecordingFile(BaseModel):
    """One recording in the recordings directory."""

    model_config = ConfigDict(title="Recording file")

    name: str = Field(description="File name (download it at /scheduler/recordings/{name}).")
    size_bytes: int = Field(description="Size of the file, bytes.")
    modified: str = Field(description="Last modified, ISO 8601 UTC.")


class RecordingList(BaseModel):
    """Every recording in the recordings directory, by name."""

    model_config = ConfigDict(
        title="Recordings",
        json_schema_extra={
            "examples": [
                {
                    "recordings": [
                        {
                            "name": "night-run.jsonl.gz",
                            "size_bytes": 1048576,
                            "modified": "2024-05-02T06:00:10Z",
                        }
                    ]
                }
            ]
        },
    )

    recordings: list[RecordingFile]


class HealthOut(BaseModel):
    """Whether the admin server and the servers it needs answer."""

    model_config = ConfigDict(
        title="Health",
        json_schema_extra={"examples": [{"status": "ok", "redis": True, "nats": True}]},
    )

    status: Literal["ok", "degraded"] = Field(
        description="ok: Redis and NATS answer; degraded: one does not."
    )
    redis: bool = Field(description="Redis answered a PING.")
    nats: bool = Field(description="The NATS connection is up.")
