"""Starting a recording: its name free, the core service asked to make it, and its
first lines (HEADER and the SNAPSHOT at the start position) read.

A start that fails half-way leaves nothing behind: its consumer is dropped and the
core is asked to abandon the recording.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from nats.js import JetStreamContext
from xce_kit.retention import RetentionError
from xce_schemas.admin import recording_key
from xce_schemas.bus import RECORD_STREAM

from xce_recorder.config import RecorderOptions, StartError
from xce_recorder.core_link import CoreLink, recording_id
from xce_recorder.cursor import RecordCursor
from xce_recorder.session import Session
from xce_recorder.store import RecordingStore

#: Longest wait for a recording's first lines per fetch, s.
START_POLL_S = 0.5


async def start_session(
    name: str,
    options: RecorderOptions,
    js: JetStreamContext,
    store: RecordingStore,
    core: CoreLink,
) -> Session:
    """A new recording ``name`` (a checked file name), its first lines ready to
    store, within ``options.start_timeout_s``.

    Raises:
        StartError: a recording of that name exists (``conflict``), the core service
            does not answer or refuses, or its first lines do not come in time or
            were dropped by ``XCE_RECORD``'s limits before they were read.
        nats.errors.Error, redis.exceptions.RedisError: a server fails.
    """
    if await store.taken(name):
        raise StartError(f"a recording named {name!r} exists", conflict=True)
    deadline = time.monotonic() + options.start_timeout_s
    rid = recording_id(name)
    # The recording's messages all come after the stream's end now.
    first = (await js.stream_info(RECORD_STREAM)).state.last_seq + 1
    start_seq = await core.start(rid, name, options.snapshot_interval, options.start_timeout_s)
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cursor = RecordCursor(js, rid, first)
    session = Session(name, recording_key(name), rid, start_seq, started, cursor, seq=start_seq)
    try:
        while not session.ready and time.monotonic() < deadline:
            session.take(await cursor.fetch(options.fetch_batch, START_POLL_S))
        if not session.ready:
            raise StartError(
                f"recording {name!r} not started: its first lines did not come within "
                f"{options.start_timeout_s:g} s"
            )
    except RetentionError as exc:
        # Its first lines were dropped before they were read: a refusal the caller
        # answers, never an error that leaves the control request unanswered.
        await cursor.close()
        await core.abandon(rid)
        raise StartError(f"recording {name!r} not started: {exc}") from None
    except BaseException:
        await cursor.close()
        await core.abandon(rid)
        raise
    return session
