"""The admin API's request and response documents (they make its OpenAPI schema)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from xce_schemas.admin import (
    CORE_STATUS_KEY,
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


def _age(wall: float, now: float) -> float | None:
    """Seconds from wall time ``wall`` to ``now`` (None: ``wall`` is 0, never)."""
    return max(0.0, now - wall) if wall > 0 else None


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
        age = _age(status.heartbeat, now)
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


#: Default of the admin server's ``--max-round-age`` (``XCE_MAX_ROUND_AGE``), s: the
#: bridge sends a round every second (``--round-interval``), so ten missed rounds.
MAX_ROUND_AGE_S = 10.0

#: How the core is doing, as the admin API tells it (see ``core_state``).
CoreState = Literal["scheduling", "no_rounds", "down", "absent", "unknown"]


def core_state(
    status: CoreStatus | None, now: float, max_round_age_s: float
) -> tuple[CoreState, str | None]:
    """Whether the core schedules, from its status at wall time ``now`` (s since the
    epoch), and if not, why, in one line.

    The bridge sends ``BEGIN_ROUND`` every round interval even to an idle cluster,
    so a core that schedules has finished a round within ``max_round_age_s``
    (``scheduling``). Otherwise its heartbeat tells the two failures apart: recent,
    the core runs but no round reaches it (``no_rounds``: the bridge is down, or
    nothing reaches ``XCE_EVENTS``); old or none, the core service is down or stuck
    (``down``). ``absent``: the core never wrote its status.

    Returns:
        ``(state, problem)``; ``problem`` is None when scheduling.
    """
    if status is None:
        return "absent", (
            f"the core service never wrote its status ({CORE_STATUS_KEY}): it has not run "
            "against this Redis"
        )
    round_age = now - status.updated if status.updated > 0 else None
    if round_age is not None and round_age <= max_round_age_s:
        return "scheduling", None
    last = "no round yet" if round_age is None else f"last round {round_age:.1f} s ago"
    limit = f"limit {max_round_age_s:g} s"
    beat_age = now - status.heartbeat if status.heartbeat > 0 else None
    if beat_age is not None and beat_age <= max_round_age_s:
        return "no_rounds", (
            f"the core service runs (heartbeat {beat_age:.1f} s ago) but no round reaches "
            f"it ({last}, {limit}): is the bridge running?"
        )
    beat = "no heartbeat" if beat_age is None else f"heartbeat {beat_age:.1f} s ago"
    return "down", f"the core service is down or stuck ({last}, {beat}, {limit})"


class CoreOut(BaseModel):
    """The core service's state: its heartbeat and its last scheduling round."""

    model_config = ConfigDict(title="Core status")

    seq: int = Field(description="Last XCE_EVENTS sequence the core handled.")
    last_round_ts: int | None = Field(
        description="Virtual time of the last round, ns (null: no round yet)."
    )
    round_seconds: float = Field(description="Wall time the last round took, s.")
    pending: int = Field(description="Jobs pending.")
    running: int = Field(description="Jobs running.")
    suspended: int = Field(description="Jobs suspended (preempted).")
    lag_seconds: float = Field(
        description="Wall time from the round's event entering the stream to the core "
        "finishing it, s."
    )
    events_waiting: int = Field(description="Events in the stream not yet delivered to the core.")
    age_seconds: float | None = Field(
        description="Seconds since the core finished its last round (null: no round yet)."
    )
    heartbeat_age_seconds: float | None = Field(
        description="Seconds since the core service last showed it runs; it does about "
        "every second (null: never)."
    )
    term: int | None = Field(
        default=None,
        description="The leading core service's lease term; a new one means another "
        "took over (null: a lone core).",
    )
    holder: str | None = Field(
        default=None, description="The leading core service, host:pid (null: a lone core)."
    )

    @classmethod
    def of(cls, status: CoreStatus, now: float) -> CoreOut:
        """The view of ``status`` at wall time ``now`` (s since the epoch)."""
        fields = status.model_dump(exclude={"updated", "heartbeat"})
        return cls(
            **fields,
            age_seconds=_age(status.updated, now),
            heartbeat_age_seconds=_age(status.heartbeat, now),
        )


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
                        "heartbeat_age_seconds": 0.6,
                    },
                    "core_state": "scheduling",
                    "problem": None,
                    "max_round_age_seconds": 10.0,
                    "recorder": _RECORDER_EXAMPLE,
                }
            ]
        },
    )

    core: CoreOut | None = Field(
        description="The core's state; null until the core service wrote its status."
    )
    core_state: CoreState = Field(
        description="scheduling: a round within max_round_age_seconds; no_rounds: the core "
        "service runs (recent heartbeat) but no round reaches it (is the bridge running?); "
        "down: neither, the core service is down or stuck; absent: it never wrote its status."
    )
    problem: str | None = Field(description="Why the core is not scheduling, in one line.")
    max_round_age_seconds: float = Field(
        description="The oldest last round that counts as scheduling, s (--max-round-age)."
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
    """Whether the scheduler works: the servers the admin API needs answer, and the
    core schedules (HTTP 200 ``ok``; else 503 ``degraded``)."""

    model_config = ConfigDict(
        title="Health",
        json_schema_extra={
            "examples": [
                {"status": "ok", "redis": True, "nats": True, "core": "scheduling", "problem": None}
            ]
        },
    )

    status: Literal["ok", "degraded"] = Field(
        description="ok: Redis and NATS answer and the core schedules; degraded (HTTP 503): "
        "one of them does not."
    )
    redis: bool = Field(description="Redis answered a PING.")
    nats: bool = Field(description="The NATS connection is up.")
    core: CoreState = Field(
        description="As core_state of /scheduler/status (unknown: Redis does not answer)."
    )
    problem: str | None = Field(description="What is wrong, in one line (null when ok).")
