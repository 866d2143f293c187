"""The operations contract of the live services: recording control, recorder and core
status documents, and the rule for recording file names (Req 10 AC 9-10).

- recording control: NATS requests on ``RECORDER_CONTROL_SUBJECT``, a
  ``RecorderCommand`` answered by a ``RecorderReply``;
- the recorder's state: the Redis hash ``RECORDER_STATUS_KEY``, a ``RecorderStatus``
  with every field as text;
- the recording being written: the Redis stream ``recording_key(name)``, one entry a
  line, fields ``line`` (the JSONL bytes) and ``seq`` (the event sequence);
- the core service's state: the Redis hash ``CORE_STATUS_KEY``, a ``CoreStatus``.

A recording's name is its file name in the recorder's recordings directory; only the
names ``recording_name`` accepts are ever used, so a name can never leave it.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import Field

from xce_schemas.base import WireModel

#: NATS subject the recorder answers control requests on (request/reply).
RECORDER_CONTROL_SUBJECT: Final = "xce.recorder.control"
#: Redis hash of the recorder's state (``RecorderStatus``).
RECORDER_STATUS_KEY: Final = "xce:recorder:status"
#: Prefix of the Redis stream holding one recording while it is written.
RECORDING_KEY_PREFIX: Final = "xce:recording:"
#: Redis hash of the core service's state (``CoreStatus``): its heartbeat, about every
#: second, and its figures after each round.
CORE_STATUS_KEY: Final = "xce:core:status"

#: The suffixes a recording file has (``.gz``: gzip-compressed).
RECORDING_SUFFIXES: Final = (".jsonl", ".jsonl.gz")
#: The suffix a name without one gets.
DEFAULT_SUFFIX: Final = ".jsonl.gz"
#: Longest recording name, characters (suffix included).
MAX_NAME_LENGTH: Final = 128

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class RecordingNameError(ValueError):
    """A recording name that is refused; the message says why, in one line."""


def recording_name(name: str) -> str:
    """The recording file name ``name`` stands for, confined to one directory.

    A name is a single file name: ASCII letters, digits, ``.``, ``_`` and ``-``,
    starting with a letter or digit, no ``..``, at most ``MAX_NAME_LENGTH``
    characters. A name not ending in ``.jsonl`` or ``.jsonl.gz`` gets ``.jsonl.gz``.

    Returns:
        The file name, e.g. ``"night"`` → ``"night.jsonl.gz"``.

    Raises:
        RecordingNameError: an empty name, a path (``/``, ``\\``), ``..``, a leading
            ``.`` or ``-``, any other character, or a name too long.
    """
    if not name:
        raise RecordingNameError("a recording name cannot be empty")
    if "/" in name or "\\" in name:
        raise RecordingNameError(
            f"recording name {name!r} is a path; give a file name only (no '/' or '\\')"
        )
    if ".." in name:
        raise RecordingNameError(f"recording name {name!r} contains '..'")
    if not _NAME.fullmatch(name):  # fullmatch: "$" lets a final "\n" through
        raise RecordingNameError(
            f"recording name {name!r} must start with a letter or digit and hold only "
            "letters, digits, '.', '_' and '-'"
        )
    if not name.endswith(RECORDING_SUFFIXES):
        name += DEFAULT_SUFFIX
    if len(name) > MAX_NAME_LENGTH:
        raise RecordingNameError(
            f"recording name is {len(name)} characters long; at most {MAX_NAME_LENGTH}"
        )
    return name


def recording_key(name: str) -> str:
    """The Redis stream of recording ``name``: ``xce:recording:<file name>``.

    Raises:
        RecordingNameError: as ``recording_name``.
    """
    return RECORDING_KEY_PREFIX + recording_name(name)


class RecorderCommand(WireModel):
    """A control request to the recorder, on ``RECORDER_CONTROL_SUBJECT``.

    Attributes:
        action: ``start`` a recording, ``stop`` it, or ask its ``status``.
        name: ``start`` only: the file name (``recording_name`` rules); None: the
            recorder makes one from the wall time (``rec-20240102T030405Z.jsonl.gz``).
    """

    action: Literal["start", "stop", "status"]
    name: str | None = None


RecorderState = Literal["idle", "recording", "stopping", "exporting"]


class RecorderStatus(WireModel):
    """The recorder's state (Redis hash ``RECORDER_STATUS_KEY``; the control reply).

    Attributes:
        state: ``idle``, ``recording`` (lines go to Redis), ``stopping`` (asked to
            stop: the events up to the stream's end at that moment are still being
            recorded) or ``exporting`` (the recording is being written to its file).
        name: the recording being written or exported (None when idle).
        start_seq: the ``XCE_EVENTS`` sequence its start SNAPSHOT covers (when idle,
            this and the counts below are those of the last recording).
        seq: the last event sequence recorded.
        lines: lines recorded so far.
        snapshots: SNAPSHOT lines among them.
        started: wall time recording started, ISO 8601 UTC.
        last_file: the last recording exported (file name), if any.
        last_error: why the last recording or export failed, if it did.
        heartbeat: wall time of the recorder's last update, s since the epoch.
        recording_id: the id the core service publishes the recording's lines under
            (``xce_schemas.bus.record_subject``), while one is on.
    """

    state: RecorderState = "idle"
    name: str | None = None
    start_seq: int = Field(default=0, ge=0)
    seq: int = Field(default=0, ge=0)
    lines: int = Field(default=0, ge=0)
    snapshots: int = Field(default=0, ge=0)
    started: str | None = None
    last_file: str | None = None
    last_error: str | None = None
    heartbeat: float = 0.0
    recording_id: str | None = None


class RecorderReply(WireModel):
    """The recorder's answer to a ``RecorderCommand``.

    Attributes:
        ok: the command was done.
        error: why not (``already recording 'x.jsonl.gz'``), when ``ok`` is false.
        conflict: the refusal is about the state (already recording, not recording,
            a recording of that name exists), not the request itself.
        status: the recorder's state after the command.
    """

    ok: bool
    error: str | None = None
    conflict: bool = False
    status: RecorderStatus


class CoreStatus(WireModel):
    """The core service's state (Redis hash ``CORE_STATUS_KEY``): its heartbeat, and
    the figures of its last scheduling round.

    The service writes ``heartbeat`` and ``seq`` about every second while it runs
    (``HEARTBEAT_S`` of ``xce_driver.live.core_service``), whether events come or not,
    and the whole hash after each batch of events with a ``BEGIN_ROUND``. The bridge
    sends a ``BEGIN_ROUND`` every round interval even to an idle cluster, so an old
    ``updated`` with a recent ``heartbeat`` means the core runs but no round reaches
    it (the bridge is down, or nothing reaches ``XCE_EVENTS``); both old: the core
    service is down or stuck.

    Attributes:
        seq: the last ``XCE_EVENTS`` sequence handled (a message of one event or
            of a batch).
        heartbeat: wall time the service last showed it runs, s since the epoch (0:
            never, e.g. a service of an earlier version).
        last_round_ts: virtual time of the last round (its ``BEGIN_ROUND`` ts), ns
            (None: no round yet).
        round_seconds: wall time that round took, s.
        pending, running, suspended: job counts after it.
        lag_seconds: wall time from the round's event entering the stream to the core
            finishing it, s.
        events_waiting: messages in the stream not yet delivered to the core (a
            batch message holds several events).
        updated: wall time the core finished the last round (wrote these figures),
            s since the epoch (0: no round yet).
        term: the leader's lease term (``xce_kit.lease``: numbers only grow; a
            new one means another core service took over; None: a lone core, or a
            service of an earlier version).
        holder: the leading core service's id, ``host:pid`` (None: as ``term``).
            Standbys never write this hash.
    """

    seq: int = Field(default=0, ge=0)
    heartbeat: float = 0.0
    last_round_ts: int | None = Field(default=None, ge=0)
    round_seconds: float = Field(default=0.0, ge=0)
    pending: int = Field(default=0, ge=0)
    running: int = Field(default=0, ge=0)
    suspended: int = Field(default=0, ge=0)
    lag_seconds: float = Field(default=0.0, ge=0)
    events_waiting: int = Field(default=0, ge=0)
    updated: float = 0.0
    term: int | None = Field(default=None, ge=1)
    holder: str | None = None


def to_hash(model: RecorderStatus | CoreStatus) -> dict[str, str]:
    """The Redis hash fields of a status document: each field as text, None left out."""
    return {k: str(v) for k, v in model.model_dump().items() if v is not None}


def recorder_status_from_hash(raw: dict[bytes, bytes] | dict[str, str]) -> RecorderStatus:
    """Read ``RecorderStatus`` back from its Redis hash (an empty hash: idle).

    Raises:
        pydantic.ValidationError: a field that is not of its type (naming it).
    """
    return RecorderStatus.model_validate(_text(raw))


def core_status_from_hash(raw: dict[bytes, bytes] | dict[str, str]) -> CoreStatus | None:
    """Read ``CoreStatus`` back from its Redis hash; None for an empty hash (the core
    service never wrote one).

    Raises:
        pydantic.ValidationError: a field missing or not of its type (naming it).
    """
    return CoreStatus.model_validate(_text(raw)) if raw else None


def _text(raw: dict[bytes, bytes] | dict[str, str]) -> dict[str, str]:
    return {
        (k.decode() if isinstance(k, bytes) else k): (
            v.decode(errors="replace") if isinstance(v, bytes) else v
        )
        for k, v in raw.items()
    }
