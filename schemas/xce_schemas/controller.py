"""The controller-facing contract of the live scheduler: what a cluster controller
publishes, and where it hears the decisions.

A controller (LSF's ``mbatchd`` role, or ``xce-sched emulate``) publishes JSON,
UTF-8, one subject per kind; the controller bridge (``xce-bridge``) validates each
one, stamps it with the time and puts the core event on ``xce.events.<TYPE>``.
Payloads carry **no** ``ts``: in live mode the bridge owns time (its wall clock, ns,
never going back), so a controller's clock cannot make the core reject an event.

| subject (``ctl_subject(kind)``) | payload (JSON) | core event |
|---|---|---|
| ``xce.ctl.config`` | ``ConfigPushPayload`` ``{"config": {...}}`` | ``CONFIG_PUSH`` |
| ``xce.ctl.jobs`` | ``JobsSubmit`` ``{"jobs": [JobRequest, ...]}`` | ``JOBS_PUSH`` |
| ``xce.ctl.hosts`` | ``WorkersPushPayload`` ``{"hosts": [...]}`` | ``WORKERS_PUSH`` |
| ``xce.ctl.resources`` | ``ResourcesPushPayload`` | ``RESOURCES_PUSH`` |
| ``xce.ctl.resvals_full`` | ``ResvalsPayload`` ``{"values": [...]}`` | ``RESVALS_FULL`` |
| ``xce.ctl.resvals_delta`` | ``ResvalsPayload`` | ``RESVALS_DELTA`` |
| ``xce.ctl.job_state`` | ``JobStateChangePayload`` | ``JOB_STATE_CHANGE`` |
| ``xce.ctl.job_update`` | ``JobUpdatePayload`` | ``JOB_UPDATE`` |
| ``xce.ctl.queue`` | ``QueueUpdatePayload`` ``{"queue": {...}}`` | ``QUEUE_UPDATE`` |
| ``xce.ctl.job_rusage`` | ``JobRusagePayload`` | ``JOB_RUSAGE`` |

A job's ``submit_ts`` is the time the bridge stamps on its ``JOBS_PUSH``.

**Delivery: at least once each way, de-duplicated, in order.**

*Controller → bridge.* The stream ``XCE_CONTROLLER`` (``CTL_STREAM``) captures
``xce.ctl.*`` (one token: the forwarded decisions, two tokens deeper, are not in
it). A controller publishes each message with a JetStream publish carrying the
header ``Nats-Msg-Id`` = ``<controller>:<run>:<n>`` (``ctl_msg_id``: unique over the
stream's duplicate window, ``CTL_DUPLICATE_WINDOW_S``), one at a time, and sends it
again with the same id until the stream acknowledges it (JetStream drops the
copies); a message is acknowledged once it is stored, so it survives a NATS server
restart. (A plain NATS publish on the subject is stored too, but at most once.) The
bridge reads the stream in stream order through its durable pull consumer
(``BRIDGE_CTL_DURABLE``), puts the core event on ``XCE_EVENTS`` and only then
acknowledges the message. Every event the bridge publishes carries the headers
``Xce-Ctl-Seq`` (``CTL_SEQ_HEADER``: every controller message up to this stream
sequence is an event or a dead letter already) and ``Xce-Ctl-Epoch``
(``CTL_EPOCH_HEADER``: the creation time of ``XCE_CONTROLLER``, µs, so a stream
made anew is not taken for the old one); a restarted bridge goes on after that
position, so a message delivered again (a lost acknowledgement, a bridge restart)
never becomes a second event. An event of a controller message has the message id
``xce-bridge:ctl:<epoch>:<seq>`` (``ctl_event_msg_id``).

*Bridge → controller.* Every decision of the core is forwarded, in the order of
``XCE_DECISIONS``, as its JSON on ``xce.ctl.decisions.<OP>`` (``ctl_decision_subject``),
captured by the stream ``XCE_CTL_DECISIONS`` (``CTL_DECISIONS_STREAM``) with
``Nats-Msg-Id`` and ``Xce-Decision-Id`` both carrying the decision's id on the
decision stream (``xce-core:<event seq>:<index>``); the bridge acknowledges a
decision of ``XCE_DECISIONS`` only once the forward is stored, so a decision
forwarded twice (a bridge restart) is dropped by the stream within its duplicate
window. A controller consumes ``XCE_CTL_DECISIONS`` with a durable consumer, in
stream order, and ignores a decision id it has already acted on.

A message the bridge cannot use goes to ``xce.deadletter.bridge`` (a
``bus.DeadLetter``) with the reason, and is acknowledged.
"""

from __future__ import annotations

from typing import Any, Final, cast

from pydantic import Field, TypeAdapter

from xce_schemas.base import WireModel
from xce_schemas.decisions import DECISION_OPS
from xce_schemas.events import (
    ConfigPush,
    ConfigPushPayload,
    CoreEvent,
    JobRequest,
    JobRusage,
    JobRusagePayload,
    JobSpec,
    JobsPush,
    JobsPushPayload,
    JobStateChange,
    JobStateChangePayload,
    JobUpdate,
    JobUpdatePayload,
    QueueUpdate,
    QueueUpdatePayload,
    ResourcesPush,
    ResourcesPushPayload,
    ResvalsDelta,
    ResvalsFull,
    ResvalsPayload,
    WorkersPush,
    WorkersPushPayload,
)

CTL_PREFIX: Final = "xce.ctl."
#: What the bridge subscribes to: every controller kind (one subject token).
CTL_SUBJECTS: Final = CTL_PREFIX + "*"
CTL_DECISIONS_PREFIX: Final = CTL_PREFIX + "decisions."
#: Every forwarded decision (``xce.ctl.decisions.<OP>``).
CTL_DECISIONS_SUBJECTS: Final = CTL_DECISIONS_PREFIX + "*"
#: The header of a forwarded decision that carries its ``XCE_DECISIONS`` message id.
DECISION_ID_HEADER: Final = "Xce-Decision-Id"
#: The dead-letter source name of the bridge (``xce.deadletter.bridge``).
BRIDGE_SOURCE: Final = "bridge"

#: The stream of controller messages (subjects ``CTL_SUBJECTS``).
CTL_STREAM: Final = "XCE_CONTROLLER"
#: The stream of forwarded decisions (subjects ``CTL_DECISIONS_SUBJECTS``).
CTL_DECISIONS_STREAM: Final = "XCE_CTL_DECISIONS"
#: Duplicate window of ``XCE_CONTROLLER`` when a service creates it, s: a
#: controller's retries of one message within it are stored once.
CTL_DUPLICATE_WINDOW_S: Final = 600.0
#: Duplicate window of ``XCE_CTL_DECISIONS`` when a service creates it, s: a decision
#: forwarded again within it (a bridge restart) is stored once.
CTL_DECISIONS_DUPLICATE_WINDOW_S: Final = 3600.0
#: The bridge's durable consumer of ``XCE_CONTROLLER``.
BRIDGE_CTL_DURABLE: Final = "xce-bridge-ctl"
#: Header of every bridge event: the ``XCE_CONTROLLER`` sequence it covers.
CTL_SEQ_HEADER: Final = "Xce-Ctl-Seq"
#: Header of every bridge event: the creation time of ``XCE_CONTROLLER``, µs.
CTL_EPOCH_HEADER: Final = "Xce-Ctl-Epoch"


def ctl_msg_id(controller: str, run: str, n: int) -> str:
    """A controller message's ``Nats-Msg-Id``: ``<controller>:<run>:<n>``.

    Args:
        controller: the controller's name (``xce-sched-emulate``).
        run: unique per run of the controller (e.g. its start time in hex), so a
            controller started again within the duplicate window is not dropped.
        n: the message's number in the run (≥ 1).

    Raises:
        ValueError: an empty name or run, or ``n`` below 1.
    """
    if not controller or not run or n < 1:
        raise ValueError(f"no controller message id for {controller!r}, {run!r}, {n}")
    return f"{controller}:{run}:{n}"


def ctl_event_msg_id(epoch: str, seq: int) -> str:
    """The ``Nats-Msg-Id`` on ``XCE_EVENTS`` of the event made from the controller
    message at sequence ``seq`` of ``XCE_CONTROLLER`` created at ``epoch`` (µs):
    ``xce-bridge:ctl:<epoch>:<seq>``.

    Raises:
        ValueError: a sequence below 1.
    """
    if seq < 1:
        raise ValueError(f"no event id for controller seq {seq}")
    return f"xce-bridge:ctl:{epoch}:{seq}"


class JobsSubmit(WireModel):
    """``xce.ctl.jobs``: newly submitted jobs, in submission order, without times.

    Attributes:
        jobs: one or more jobs (``JobRequest``: a ``JobSpec`` without ``submit_ts``).
    """

    jobs: tuple[JobRequest, ...] = Field(min_length=1)


#: A controller payload model.
CtlPayload = (
    ConfigPushPayload
    | JobsSubmit
    | WorkersPushPayload
    | ResourcesPushPayload
    | ResvalsPayload
    | JobStateChangePayload
    | JobUpdatePayload
    | QueueUpdatePayload
    | JobRusagePayload
)

#: Controller kind (the subject's last token) → (core event model, payload model).
CTL_KINDS: Final[dict[str, tuple[type[Any], type[CtlPayload]]]] = {
    "config": (ConfigPush, ConfigPushPayload),
    "jobs": (JobsPush, JobsSubmit),
    "hosts": (WorkersPush, WorkersPushPayload),
    "resources": (ResourcesPush, ResourcesPushPayload),
    "resvals_full": (ResvalsFull, ResvalsPayload),
    "resvals_delta": (ResvalsDelta, ResvalsPayload),
    "job_state": (JobStateChange, JobStateChangePayload),
    "job_update": (JobUpdate, JobUpdatePayload),
    "queue": (QueueUpdate, QueueUpdatePayload),
    "job_rusage": (JobRusage, JobRusagePayload),
}

#: Validates the event each kind becomes (its ``ts`` is the bridge's).
_EVENT_ADAPTERS: Final[dict[str, TypeAdapter[Any]]] = {
    kind: TypeAdapter(event) for kind, (event, _) in CTL_KINDS.items()
}


def ctl_subject(kind: str) -> str:
    """The subject a controller publishes ``kind`` on: ``xce.ctl.<kind>``.

    Raises:
        ValueError: ``kind`` is not one of ``CTL_KINDS``.
    """
    if kind not in CTL_KINDS:
        raise ValueError(f"{kind!r} is not a controller kind; expected one of {tuple(CTL_KINDS)}")
    return CTL_PREFIX + kind


def ctl_kind_of(subject: str) -> str | None:
    """The kind a subject names (``xce.ctl.jobs`` → ``jobs``), or None for any other."""
    if not subject.startswith(CTL_PREFIX):
        return None
    kind = subject[len(CTL_PREFIX) :]
    return kind if kind in CTL_KINDS else None


def ctl_decision_subject(op: str) -> str:
    """The subject decisions of ``op`` are forwarded on: ``xce.ctl.decisions.<OP>``.

    Raises:
        ValueError: ``op`` is not one of ``DECISION_OPS``.
    """
    if op not in DECISION_OPS:
        raise ValueError(f"{op!r} is not a decision op; expected one of {DECISION_OPS}")
    return CTL_DECISIONS_PREFIX + op


def parse_ctl_payload(kind: str, data: dict[str, Any] | str | bytes) -> CtlPayload:
    """Validate a controller message of ``kind`` (decoded JSON object, or JSON text).

    Raises:
        KeyError: ``kind`` is not one of ``CTL_KINDS``.
        pydantic.ValidationError: naming the offending field (a ``ts`` or a job's
            ``submit_ts`` is refused as an extra field: the bridge owns time).
    """
    model = CTL_KINDS[kind][1]
    if isinstance(data, str | bytes):
        return model.model_validate_json(data)
    return model.model_validate(data)


def to_core_event(kind: str, payload: CtlPayload, ts: int) -> CoreEvent:
    """The core event of a validated controller message of ``kind`` at time ``ts``
    (ns); a submitted job's ``submit_ts`` is ``ts``.

    Raises:
        KeyError: ``kind`` is not one of ``CTL_KINDS``.
        TypeError: ``payload`` is not the model of ``kind``.
        pydantic.ValidationError: ``ts`` is not a valid ``TimestampNs``.
    """
    payload_model = CTL_KINDS[kind][1]
    if not isinstance(payload, payload_model):
        raise TypeError(f"a {type(payload).__name__} is not a {kind!r} message")
    if isinstance(payload, JobsSubmit):
        jobs = tuple(JobSpec(**job.model_dump(), submit_ts=ts) for job in payload.jobs)
        return JobsPush(ts=ts, payload=JobsPushPayload(jobs=jobs))
    return cast(CoreEvent, _EVENT_ADAPTERS[kind].validate_python({"ts": ts, "payload": payload}))
