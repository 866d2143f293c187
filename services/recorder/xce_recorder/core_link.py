"""The recorder's side of the core service's record protocol (``xce.core.record``).

The core service makes a recording's lines; the recorder asks it to (``start``, with
a recording id and the snapshot interval) and to stop (``stop``), with
``CoreRecordCommand`` requests answered by a ``CoreRecordReply``. A start is
answered once the core has published HEADER and the SNAPSHOT of its state at the
start position; a stop once the core has handled every event the stream held then
(its ``END`` follows on the record stream). A stop is idempotent, so it is asked
again while the core does not answer: a core restarted meanwhile lost the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
import time
from collections.abc import Callable

from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.errors import NoRespondersError
from pydantic import ValidationError
from xce_schemas.bus import CORE_RECORD_SUBJECT, CoreRecordCommand, CoreRecordReply

from xce_recorder.config import StartError

log = logging.getLogger("xce_recorder.core_link")

#: The longest wait for one answer to a stop before asking again, s.
STOP_RETRY_S = 5.0
#: Pause after a stop that failed before asking again, s.
STOP_PAUSE_S = 0.2
#: The longest wait for the core to acknowledge that a recording is abandoned, s.
ABANDON_WAIT_S = 2.0


def recording_id(name: str, suffix: str | None = None) -> str:
    """A fresh recording id for the file ``name``: the name with every character but
    letters, digits, ``_`` and ``-`` made ``_`` (at most 100), ``-``, and ``suffix``
    (default 12 random hex digits), e.g. ``night_jsonl_gz-3f9c0a1b2d4e``."""
    token = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:100]
    return f"{token}-{suffix if suffix is not None else secrets.token_hex(6)}"


class CoreLink:
    """Requests to the core service on ``CORE_RECORD_SUBJECT`` over ``nc``."""

    def __init__(self, nc: NatsClient) -> None:
        self.nc = nc

    async def request(self, command: CoreRecordCommand, timeout_s: float) -> CoreRecordReply:
        """Send ``command`` and return the core's answer.

        Raises:
            nats.errors.NoRespondersError: no core service is listening.
            TimeoutError: it did not answer within ``timeout_s``.
            nats.errors.Error: the request failed otherwise.
            pydantic.ValidationError: the answer is not a ``CoreRecordReply``.
        """
        msg = await self.nc.request(
            CORE_RECORD_SUBJECT, command.model_dump_json().encode(), timeout=max(0.05, timeout_s)
        )
        return CoreRecordReply.model_validate_json(msg.data)

    async def start(self, rid: str, name: str, snapshot_interval: int, timeout_s: float) -> int:
        """Ask the core to start recording ``rid`` (file ``name``, a SNAPSHOT every
        ``snapshot_interval`` events); the event sequence it starts at.

        Raises:
            StartError: the core service does not run, does not answer within
                ``timeout_s`` (the recording is then abandoned), answers nonsense or
                refuses (the message says which).
        """
        command = CoreRecordCommand(
            action="start", id=rid, name=name, snapshot_interval=snapshot_interval
        )
        try:
            reply = await self.request(command, timeout_s)
        except NoRespondersError:
            raise StartError(
                f"recording {name!r} not started: the core service is not running "
                f"(nobody answers on {CORE_RECORD_SUBJECT})"
            ) from None
        except TimeoutError:
            await self.abandon(rid)
            raise StartError(
                f"recording {name!r} not started: the core service did not start it within "
                f"{timeout_s:g} s"
            ) from None
        except ValidationError:
            raise StartError(
                f"recording {name!r} not started: the core answered nonsense"
            ) from None
        if not reply.ok or reply.start_seq is None:
            raise StartError(f"recording {name!r} not started: {reply.error}")
        return reply.start_seq

    async def stop(
        self, rid: str, name: str, deadline: float, ended: Callable[[], bool]
    ) -> str | None:
        """Ask the core to end recording ``rid`` (file ``name``), again while it does
        not answer, until it does, ``ended()`` or ``deadline`` (``time.monotonic``).

        Returns:
            Why the core refused (it does not know the recording), else None.
        """
        command = CoreRecordCommand(action="stop", id=rid)
        while not ended():
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                reply = await self.request(command, min(left, STOP_RETRY_S))
            except (NoRespondersError, TimeoutError):
                await asyncio.sleep(min(STOP_PAUSE_S, left))
                continue
            except (NatsError, ValidationError) as exc:
                log.warning("stop of %s: %s; retrying", rid, exc)
                await asyncio.sleep(min(STOP_PAUSE_S, left))
                continue
            if not reply.ok:
                return f"the core service refused to stop {name}: {reply.error}"
            log.info("recording %s ends at event seq %s", name, reply.end_seq)
            return None
        return None

    async def abandon(self, rid: str) -> None:
        """Ask the core to stop recording ``rid``, which nobody will store (best effort:
        a core that does not answer ends it at its next start)."""
        with contextlib.suppress(NatsError, TimeoutError, ValidationError):
            await self.request(CoreRecordCommand(action="stop", id=rid), ABANDON_WAIT_S)
