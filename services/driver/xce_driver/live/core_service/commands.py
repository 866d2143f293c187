"""The core's recording commands (Req 10 AC 9-10, 15): ``CoreRecordCommand``
requests on ``xce.core.record``, each done at its *position* and answered once done.

A command takes effect once the core has handled every event ``XCE_EVENTS`` held
when the command arrived. ``start`` then publishes HEADER and a SNAPSHOT of the core
on ``xce.record.<id>`` (``record_stream``); ``stop`` publishes the ``END`` message.
Before a start or stop takes effect it is written, with its position, to the Redis
key ``xce:core:recording`` (``CoreRecording``), and after it a checkpoint is
forced, which carries the recording's counters. A restarted service thus
re-applies a start or stop made after its checkpoint at exactly the same position
(``at_position``). Recording reads the core and changes nothing in it.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from pydantic import ValidationError
from redis.exceptions import RedisError
from xce_core.core import SchedCore
from xce_kit.tasks import cancel_and_wait
from xce_schemas.bus import EVENTS_STREAM, CoreRecordCommand, CoreRecording, CoreRecordReply
from xce_schemas.errors import describe

from xce_driver.live.core_service.checkpoints import Checkpoints
from xce_driver.live.metrics import CoreMetrics
from xce_driver.live.record_stream import RecordStream


class CommandHost(Protocol):
    """What the recording commands need of the core service."""

    #: The stream sequence of the last event handled.
    seq: int
    #: The recording being made, if any.
    record: RecordStream

    @property
    def core(self) -> SchedCore:
        """The scheduling core (read, never changed, by a recording)."""
        ...

    def stopping(self) -> bool:
        """Whether the service is asked to stop."""
        ...

    def turn(self) -> AbstractAsyncContextManager[None]:
        """Held while the service handles events, a checkpoint or a command."""
        ...

    async def events_end(self) -> int:
        """``XCE_EVENTS``'s last sequence now.

        Raises:
            nats.errors.Error: the stream cannot be read.
        """
        ...

    async def forced_checkpoint(self) -> None:
        """A checkpoint even of no new event, retried until written or stopping."""
        ...


@dataclass
class _Pending:
    """A recording command waiting for its position."""

    command: CoreRecordCommand
    #: The event sequence it takes effect after.
    at: int
    reply: asyncio.Future[CoreRecordReply]


class RecordingCommands:
    """The recording commands of one core service (see the module docstring).

    Args:
        host: the service.
        checkpoints: where the commands' positions are written.
        metrics: the ``xce_core_recording`` gauge.
    """

    def __init__(self, host: CommandHost, checkpoints: Checkpoints, metrics: CoreMetrics) -> None:
        self._host = host
        self.checkpoints = checkpoints
        self.metrics = metrics
        #: The last command applied, with its positions (``xce:core:recording``).
        self.recording: CoreRecording | None = None
        self._pending: list[_Pending] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def due(self, seq: int) -> bool:
        """Whether a command, or a start or stop to re-apply, takes effect after
        event ``seq`` (the events taken before must be flushed first)."""
        if self._pending and self._pending[0].at <= seq:
            return True
        doc = self.recording
        return doc is not None and seq in (doc.start_seq, doc.end_seq)

    async def on_request(self, msg: Msg) -> None:
        """A request on ``xce.core.record``: answered by a task of its own, so that a
        command waiting for its position does not hold up the next one."""
        task = asyncio.create_task(self._answer(msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, msg: Msg) -> None:
        try:
            command = CoreRecordCommand.model_validate_json(msg.data)
        except ValidationError as exc:
            reply = CoreRecordReply(
                ok=False, id="", error=f"bad recording command: {describe(exc, default='command')}"
            )
        else:
            reply = await self.command(command)
        if msg.reply:
            with contextlib.suppress(NatsError):
                await msg.respond(reply.model_dump_json().encode())

    async def command(self, command: CoreRecordCommand) -> CoreRecordReply:
        """Do one recording command once its position is reached and answer it.

        Returns:
            ``ok`` with the recording's positions, or why not (the service is
            stopping, the event stream cannot be read, Redis refused the command).
        """
        host = self._host
        if host.stopping():
            return CoreRecordReply(ok=False, id=command.id, error="the core service is stopping")
        try:
            end = await host.events_end()
        except NatsError as exc:
            return CoreRecordReply(
                ok=False, id=command.id, error=f"{EVENTS_STREAM} cannot be read: {exc}"
            )
        pending = _Pending(command, end, asyncio.get_running_loop().create_future())
        async with host.turn():
            self._pending.append(pending)
            await self._apply_due()
        return await pending.reply

    async def end_tasks(self) -> None:
        """Let the answers of refused commands go out (1 s at most), then cancel."""
        tasks = list(self._tasks)
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=1.0)
        await cancel_and_wait(*pending)

    def refuse(self, why: str) -> None:
        """Answer every command still waiting with ``why``."""
        for pending in self._pending:
            if not pending.reply.done():
                pending.reply.set_result(
                    CoreRecordReply(ok=False, id=pending.command.id, error=why)
                )
        self._pending.clear()

    async def at_position(self) -> None:
        """At the position just reached: re-apply a start or stop of
        ``xce:core:recording`` made there before a restart, then the commands due."""
        host = self._host
        doc, seq, record = self.recording, host.seq, host.record
        if doc is not None:
            run = record.state()
            if run is not None and run.id == doc.id:
                if run.end_seq is None and doc.end_seq == seq:
                    await record.end(host.core, seq)
                    await host.forced_checkpoint()
            elif doc.start_seq == seq:
                await self._end_recording(seq, write=False)
                await record.start(host.core, seq, doc)
                if doc.end_seq == seq:
                    await record.end(host.core, seq)
                await host.forced_checkpoint()
        self.metrics.recording.set(int(record.on))
        await self._apply_due()

    async def _apply_due(self) -> None:
        """Do, in order, the commands whose position is reached (``turn`` held)."""
        while self._pending and self._pending[0].at <= self._host.seq:
            pending = self._pending.pop(0)
            try:
                reply = await self._do(pending.command)
            except RedisError as exc:
                reply = CoreRecordReply(
                    ok=False, id=pending.command.id, error=f"Redis refused the command: {exc}"
                )
            if not pending.reply.done():
                pending.reply.set_result(reply)
        self.metrics.recording.set(int(self._host.record.on))

    async def _do(self, command: CoreRecordCommand) -> CoreRecordReply:
        host = self._host
        seq, run = host.seq, host.record.state()
        if command.action == "stop":
            if run is None or run.id != command.id:
                return CoreRecordReply(
                    ok=False, id=command.id, error=f"not recording {command.id!r}"
                )
            await self._end_recording(seq, write=True)
        elif run is not None and run.id == command.id:
            if run.end_seq is not None:
                return CoreRecordReply(
                    ok=False, id=command.id, error=f"recording {command.id!r} has ended"
                )
        else:
            await self._end_recording(seq, write=True)
            doc = CoreRecording(
                id=command.id,
                name=command.name,
                snapshot_interval=command.snapshot_interval,
                start_seq=seq,
            )
            await self._write(doc)
            await host.record.start(host.core, seq, doc)
            await host.forced_checkpoint()
        run = host.record.state()
        assert run is not None
        return CoreRecordReply(
            ok=True,
            id=run.id,
            start_seq=run.start_seq,
            end_seq=run.end_seq,
            messages=run.messages,
        )

    async def _end_recording(self, seq: int, *, write: bool) -> None:
        """End the recording on, if any, after event ``seq``; ``write``: note the stop
        in ``xce:core:recording`` first (not when re-applying it)."""
        host = self._host
        run = host.record.state()
        if run is None or run.end_seq is not None:
            return
        if write:
            doc = CoreRecording.model_validate(
                run.model_dump(exclude={"messages", "since_snapshot"}) | {"end_seq": seq}
            )
            await self._write(doc)
        await host.record.end(host.core, seq)
        await host.forced_checkpoint()

    async def _write(self, doc: CoreRecording) -> None:
        """Note a start or stop, with its position, before it takes effect.

        Raises:
            redis.exceptions.RedisError: Redis refused (the command is not done).
        """
        await self.checkpoints.write_recording(doc)
        self.recording = doc
