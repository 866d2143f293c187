"""Decisions back to the controllers: every decision of ``XCE_DECISIONS``, in stream
order, to ``xce.ctl.decisions.<OP>`` (stream ``XCE_CTL_DECISIONS``, message id and
header ``Xce-Decision-Id`` = the decision's id), pipelined and chained, and
acknowledged once its forward is stored. A message on the stream without a core
decision id (``xce-core:<seq>:<index>``) is another publisher's: logged, counted
(``xce_bridge_foreign_decisions_total``), not forwarded.
"""

from __future__ import annotations

import logging
from typing import cast

from nats.aio.client import Client as NatsClient
from xce_kit.publisher import ChainedPublisher, Outgoing
from xce_kit.pull import stream_seq
from xce_kit.reader import InOrderReader, ack_last, deliveries
from xce_schemas.bus import (
    DECISIONS_PREFIX,
    DECISIONS_STREAM,
    MSG_ID_HEADER,
    parse_decision_msg_id,
)
from xce_schemas.controller import CTL_DECISIONS_STREAM, DECISION_ID_HEADER, ctl_decision_subject

from xce_driver.live.metrics import BridgeMetrics

log = logging.getLogger(__name__)


class DecisionForwarder:
    """Forwards the core's decisions to the controllers (see the module docstring).

    Args:
        nc: the connected client.
        ack_timeout_s: how long to wait for a forward's acknowledgement before
            sending it again, s.
        metrics: where forwards and foreign decisions are counted.
        position: the last ``XCE_DECISIONS`` sequence already forwarded.
    """

    def __init__(
        self, nc: NatsClient, ack_timeout_s: float, metrics: BridgeMetrics, position: int
    ) -> None:
        self._nc = nc
        self._ack_timeout_s = ack_timeout_s
        self.metrics = metrics
        #: The last ``XCE_DECISIONS`` sequence whose forward is stored.
        self.done = position
        #: Decisions forwarded in this run.
        self.forwarded = 0

    async def run(self, reader: InOrderReader) -> None:
        """Forward decisions in stream order to ``XCE_CTL_DECISIONS``; acknowledge
        each batch (``AckPolicy.ALL``) once its forwards are stored."""
        forward = ChainedPublisher(
            self._nc, CTL_DECISIONS_STREAM, ack_timeout_s=self._ack_timeout_s
        )
        while True:
            fresh, stale = await reader.next()
            batch: list[Outgoing] = []
            for item in fresh:
                op = item.subject[len(DECISIONS_PREFIX) :]
                decision_id = item.headers.get(MSG_ID_HEADER, "")
                if parse_decision_msg_id(decision_id) is None:
                    # Anyone may publish on xce.decisions.>; only the core's go out.
                    log.warning(
                        "%s seq %d on %s is not the core's (id %r); not forwarded",
                        DECISIONS_STREAM,
                        item.seq,
                        item.subject,
                        decision_id,
                    )
                    self.metrics.foreign_decisions.inc()
                    continue
                try:
                    subject = ctl_decision_subject(op)
                except ValueError:
                    log.warning("decision on %s names no op; not forwarded", item.subject)
                    continue
                headers = {DECISION_ID_HEADER: decision_id}
                batch.append(Outgoing(subject, item.data, decision_id, headers, tag=(op, item.seq)))
            # Done with every message of ``fresh`` once its forwards are stored, the
            # ones not forwarded included (else the last of them would not be
            # acknowledged until a later decision, and delivered again meanwhile).
            if fresh and (not batch or await forward.publish(batch, self._forwarded) == len(batch)):
                self.done = max(self.done, fresh[-1].seq)
            done = deliveries(fresh, stale)
            await ack_last([msg for msg in done if stream_seq(msg) <= self.done])

    def _forwarded(self, item: Outgoing) -> None:
        op, seq = cast(tuple[str, int], item.tag)
        self.done = max(self.done, seq)
        self.forwarded += 1
        self.metrics.decisions_forwarded.labels(op).inc()
