"""The core service: ``XCE_EVENTS`` → ``SchedCore`` → ``XCE_DECISIONS``, checkpoints in Redis.

Events come in stream order through a durable pull consumer, a fetched batch
of messages at a time; a message holds one event, or a batch of them
(``xce.events.BATCH``, what the bridge publishes; ``live.event_codec``):

1. each event is decoded and validated (``xce_schemas``) and pushed into the
   core, its decisions collected; a malformed event, or one the core rejects, is
   noted for ``xce.deadletter.core`` with the reason (DESIGN invariant 5), and the
   other events of its batch are taken all the same;
2. at the batch's end (a *flush*; earlier where a checkpoint or a recording
   command falls due inside it, or ``fetch_batch`` events were taken) the batch's
   decisions go to ``xce.decisions.<OP>`` pipelined, with
   ``Nats-Msg-Id = decision_msg_id(message seq, index)``, each
   chained to the one before it (``Nats-Expected-Last-Msg-Id``, see
   ``xce_kit.publisher.ChainedPublisher``), and the flush waits until the stream has
   every one; then the dead letters;
3. then the batch's last delivery is acknowledged (``AckPolicy.ALL``: one
   acknowledgement covers the batch);
4. every ``snapshot_every`` events or ``snapshot_seconds`` s, a checkpoint
   (``CoreCheckpoint``: the last event's sequence and ``save_snapshot(core)``) is
   written to Redis in one ``SET``;
5. after a batch with a ``BEGIN_ROUND``, the ``CoreStatus`` hash
   ``xce:core:status`` (last round, job counts, lag) that the admin API shows; and
   at least every ``HEARTBEAT_S`` while the service runs, its heartbeat there, so
   that the admin API tells a dead core from one that gets no rounds.

Batching changes no decision (the core sees the same events in the same order);
it takes the waits for acknowledgements off each event (one round trip per batch
instead of one per decision and one per event).

**Exactly the uninterrupted decision stream after a crash.** A restarted service
loads the checkpoint (sequence S; none: a fresh core, S = 0) and recreates its
consumer at S + 1, so it handles again every event after S, from exactly the state
after S (snapshot fidelity, DESIGN invariant 2): the same decisions, the same ids.
A checkpoint is written only after the decisions of every event it covers are on
the stream, so nothing before S is missing. Of the re-handled events' decisions,
those already on the stream are not published again: the chain makes the stream
take decision *n* only right after decision *n - 1*, so it holds every decision up
to the core's last one there, whose id the service reads at start (the
*watermark*, found reading back past messages the core did not write and deleted
ones) and skips up to (``xce_core_decisions_skipped_total``). The ids also make
JetStream drop any duplicate within the duplicate window (e.g. a publish
acknowledged by the server whose acknowledgement was lost). Acknowledgements only
tell the server what to deliver next; a lost one makes it redeliver an event,
which the service recognizes by its sequence and skips.

**Positions are checked, not trusted.** S and the watermark count in
``XCE_EVENTS`` as it is now: at start the service refuses (``PositionError``, exit
2, one line naming the streams, the positions and what to delete together) a
checkpoint past the stream's end, events after S gone from it, a watermark made
from an event past the stream's end or stored before its event (the stream was
made anew since), or one not after the core's decision before it. Catching up, the
core must make the watermark's decision again, byte for byte, else it stops the
same way before publishing anything past it. **Other publishers' messages** on
``XCE_DECISIONS`` or ``XCE_RECORD`` are never waited on: counted
(``xce_core_foreign_messages_total{stream}``), logged and gone past; the first
message of each batch is chained to the stream's last sequence rather than to the
id of its last message, which a message without an id, a deleted last message or
a NATS restart made unknowable (``xce_kit.publisher.ChainedPublisher``).

**Recording** (Req 10 AC 9-10, 15). The service answers ``CoreRecordCommand``
requests on ``xce.core.record`` (the recorder service sends them). A command takes
effect at a *position*: once the core has handled every event ``XCE_EVENTS`` held
when the command arrived. ``start`` then publishes HEADER and a SNAPSHOT of the core
on ``xce.record.<id>`` (stream ``XCE_RECORD``); from then on each event the core
takes is followed there by its line, its DECISION lines and, every N events, a
SNAPSHOT (``xce_driver.live.record_stream``); ``stop`` publishes the ``END``
message. Each command is answered once done. Before a start or stop takes effect
the service writes it, with its position, to the Redis key ``xce:core:recording``
(``CoreRecording``), and after it a checkpoint, which carries the recording's
counters (``RecordingRun``). A restarted service thus re-applies a start or stop
made after its checkpoint at exactly the same position, and its record stream, like
its decision stream, is that of an uninterrupted run (the record watermark and the
message ids skip and drop what is already there). Recording reads the core and
changes nothing in it: the decisions are the same with or without it.

Only one core service may consume the stream at a time (it deletes and recreates
its consumer at start): the one that holds the lease (``leadership``; the console
script contends for ``xce_kit.lease.Lease``, others wait as standbys and take over
by this very restart path; one that loses the lead stops at once, exit status 3).
The core runs on its discrete clock: all time comes from
the events' ``ts``, so a restart cannot change a decision. Positions (checkpoints,
recording starts and stops, the watermark) are message sequences: a batch is
taken whole before any of them.

**Modules**, one job each: ``handler`` (decode → core: one message's events pushed
into ``SchedCore``), ``consumer`` (the durable consumer of ``XCE_EVENTS``),
``outbox`` (decisions, recording messages and dead letters on their streams),
``checkpoints`` and ``positions`` (durability: the checkpoint in Redis, the
watermarks and the checks of where the core is), ``commands`` (the recording
command protocol), ``status`` (the admin API's status and heartbeat),
``leadership`` (when this service may work: the seam of a standby core),
``options``, ``service`` (``CoreService``: the parts put together, and the loop)
and ``cli`` (the ``xce-core-service`` console script).
"""

from xce_driver.live.core_service.cli import build_parser, main
from xce_driver.live.core_service.handler import Batch
from xce_driver.live.core_service.leadership import AlwaysLeading, Leadership, LeadershipLost
from xce_driver.live.core_service.options import (
    FAULT_POINTS,
    HEARTBEAT_S,
    RESUME_LOOKBACK,
    STOP_GRACE_S,
    CoreServiceOptions,
)
from xce_driver.live.core_service.positions import CheckpointError, PositionError
from xce_driver.live.core_service.service import CoreService

__all__ = [
    "FAULT_POINTS",
    "HEARTBEAT_S",
    "RESUME_LOOKBACK",
    "STOP_GRACE_S",
    "AlwaysLeading",
    "Batch",
    "CheckpointError",
    "CoreService",
    "CoreServiceOptions",
    "Leadership",
    "LeadershipLost",
    "PositionError",
    "build_parser",
    "main",
]
