"""The core service's handler: a message of ``XCE_EVENTS`` decoded, its events
pushed into ``SchedCore`` in order, their decisions and rejections collected for
publishing. No I/O here: what the service stores and acknowledges is its own
(``service``); this is the ``decode → core → publish`` of one message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from nats.aio.msg import Msg
from xce_core.core import SchedCore
from xce_core.errors import CoreError
from xce_core.plugins import PluginRegistry
from xce_core.snapshot import load_snapshot
from xce_kit.publisher import Outgoing
from xce_schemas import CoreEvent, Decision
from xce_schemas.bus import DeadLetter
from xce_schemas.snapshot import CoreSnapshot

from xce_driver.live.event_codec import Taken, data_of, decode_message
from xce_driver.live.metrics import CoreMetrics

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """Events taken into the core whose outcome is not flushed yet."""

    #: Their decisions, in (event seq, index) order, not yet on ``XCE_DECISIONS``.
    decisions: list[Outgoing] = field(default_factory=list)
    #: The dead letter of each event rejected, with its message id.
    letters: list[tuple[DeadLetter, str]] = field(default_factory=list)
    #: How many events were taken.
    events: int = 0
    #: The ``ts`` of the last ``BEGIN_ROUND`` taken (None: none).
    round_ts: int | None = None
    #: The delivery of the highest stream sequence seen, and that sequence.
    last: Msg | None = None
    last_seq: int = 0

    def delivered(self, msg: Msg, seq: int) -> None:
        """Note a delivery to acknowledge at the flush (the highest one covers all)."""
        if seq > self.last_seq:
            self.last, self.last_seq = msg, seq


@dataclass(slots=True)
class Handled:
    """One event of a message, pushed into the core (or not).

    Attributes:
        taken: the event as decoded.
        event: the event the core took (None: it was not one, or was rejected).
        reason: why it was rejected (None: taken), one line.
    """

    taken: Taken
    event: CoreEvent | None
    reason: str | None


class EventHandler:
    """Owns the ``SchedCore`` and pushes events into it.

    Args:
        registry: the plugins a configuration may name.
        prng_seed: seed of a fresh core's PRNG.
        metrics: where rounds, cache hits, preemptions and job counts go.
    """

    def __init__(self, registry: PluginRegistry, prng_seed: int, metrics: CoreMetrics) -> None:
        self.registry = registry
        self.metrics = metrics
        #: The decisions of the event just handled (cleared before each event).
        self.out: list[Decision] = []
        self.core = SchedCore(self.out.append, prng_seed, registry=registry)
        #: Wall time the last ``BEGIN_ROUND`` took, s.
        self.round_s = 0.0

    def restore(self, snapshot: CoreSnapshot) -> None:
        """Replace the core with the one ``snapshot`` (a checkpoint's) describes.

        Raises:
            xce_core.errors.CoreError: the snapshot cannot be loaded (malformed, or
                it names a plugin this install lacks).
        """
        self.core = load_snapshot(snapshot, self.out.append, registry=self.registry)

    def handle(self, seq: int, subject: str, data: bytes) -> Iterator[Handled]:
        """Push the event(s) of message ``seq`` into the core, in order, yielding each
        one's outcome while ``out`` holds its decisions."""
        for taken in self._decode(seq, subject, data):
            self.out.clear()
            event = taken.event
            if isinstance(event, str):
                yield Handled(taken, None, event)
                continue
            reason = self._apply(event)
            if reason is None:
                yield Handled(taken, event, None)
            elif taken.index is None:
                yield Handled(taken, None, reason)
            else:  # the core refused one event of a batch
                yield Handled(taken, None, f"event {taken.index} of the batch: {reason}")

    @staticmethod
    def _decode(seq: int, subject: str, data: bytes) -> list[Taken]:
        """``decode_message``; a message whose decoding fails in an unforeseen way (a
        bug) is one rejection with the error, never a stop: a stop would meet the
        same message again at every restart."""
        try:
            return decode_message(subject, data)
        except Exception as exc:
            log.exception("event seq %d on %s could not be decoded", seq, subject)
            return [Taken(f"message could not be decoded: {exc!r}", subject, data)]

    def _apply(self, event: CoreEvent) -> str | None:
        """Push ``event`` into the core; the reason it was rejected, or None."""
        core, metrics = self.core, self.metrics
        hits, preemptions, given_up = core.cache_hits, core.preemptions, core.preemptions_given_up
        started = time.perf_counter()
        try:
            core.push_event(event)
        except CoreError as exc:
            return str(exc)
        except Exception as exc:  # a bug: reported and dead-lettered, never a stop
            log.exception("%s at ts=%d failed inside the core", event.type, event.ts)
            return f"{event.type} failed inside the core: {exc!r}"
        finally:
            if event.type == "BEGIN_ROUND":
                self.round_s = time.perf_counter() - started
                metrics.round_duration.observe(self.round_s)
                metrics.rounds.inc()
                metrics.cache_hits.inc(max(0, core.cache_hits - hits))
                metrics.preemptions.inc(core.preemptions - preemptions)
                metrics.preemptions_given_up.inc(core.preemptions_given_up - given_up)
                metrics.job_states((job.queue, job.state) for job in core.state.jobs.values())
        return None


def dead_letter(seq: int, taken: Taken, reason: str) -> tuple[DeadLetter, str]:
    """The dead letter of an event of message ``seq`` and its message id (one per
    event: ``xce-core:dl:<seq>``, and ``:<index>`` for one of a batch)."""
    letter = DeadLetter.of(taken.subject, reason, data_of(taken), seq, taken.event_id)
    suffix = "" if taken.index is None else f":{taken.index}"
    return letter, f"xce-core:dl:{seq}{suffix}"
