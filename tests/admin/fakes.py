"""An in-memory backend for the admin API: a recorder state machine, a core status."""

from __future__ import annotations

import time

from xce_admin.backend import Unavailable
from xce_schemas.admin import CoreStatus, RecorderCommand, RecorderReply, RecorderStatus

TOKEN = "s3cret-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class FakeBackend:
    """Answers as the recorder would: start when idle, stop when recording (then idle
    at once with the file named), refusals marked as conflicts."""

    def __init__(self) -> None:
        self.status = RecorderStatus(heartbeat=time.time())
        self.core: CoreStatus | None = None
        self.commands: list[RecorderCommand] = []
        self.down = False

    def _reply(self, error: str | None = None) -> RecorderReply:
        return RecorderReply(
            ok=error is None, error=error, conflict=error is not None, status=self.status
        )

    async def command(self, command: RecorderCommand) -> RecorderReply:
        if self.down:
            raise Unavailable(
                "the recorder service is not running (nobody answers on xce.recorder.control)"
            )
        self.commands.append(command)
        if command.action == "start":
            if self.status.state != "idle":
                return self._reply(f"the recorder is recording {self.status.name!r}; stop it first")
            name = command.name or "rec-20240101T000000Z.jsonl.gz"
            self.status = RecorderStatus(
                state="recording", name=name, started="2024-01-01T00:00:00Z", heartbeat=time.time()
            )
        elif command.action == "stop":
            if self.status.state != "recording":
                return self._reply("not recording")
            self.status = self.status.model_copy(update={"state": "stopping"})
            reply = self._reply()
            self.status = RecorderStatus(last_file=self.status.name, heartbeat=time.time())
            return reply
        return self._reply()

    async def recorder_status(self) -> RecorderStatus:
        if self.down:
            raise Unavailable("Redis at redis://nowhere does not answer")
        return self.status

    async def core_status(self) -> CoreStatus | None:
        if self.down:
            raise Unavailable("Redis at redis://nowhere does not answer")
        return self.core

    async def health(self) -> tuple[bool, bool]:
        return (not self.down, not self.down)
