"""The admin HTTP API (FastAPI): recording control, recordings, scheduler status, health
and metrics (Req 10 AC 9).

| method and path | auth | what |
|---|---|---|
| ``POST /scheduler/record/start`` | token | start recording (optional ``{"name": FILE}``) |
| ``POST /scheduler/record/stop`` | token | stop recording; the file appears once exported |
| ``GET /scheduler/record/status`` | | the recorder's state |
| ``GET /scheduler/recordings`` | | the recordings in the recordings directory |
| ``GET /scheduler/recordings/{name}`` | token | download one |
| ``GET /scheduler/status`` | | the core (last round, jobs, lag; does it schedule?), the recorder |
| ``GET /health`` | | 200 when Redis and NATS answer and the core schedules, else 503 |
| ``GET /metrics`` | | Prometheus metrics (``xce_admin_*``) |

"token" means ``Authorization: Bearer <XCE_ADMIN_TOKEN>``: without it, or with another
token, the answer is 401, given before any of the request's body is read
(``guard``). Downloads need it too, since a recording holds every job's user and
request. A body larger than ``--max-body-bytes`` (64 KiB) is answered 413. Recording
names are single file names in the recordings directory
(``xce_schemas.admin.recording_name``); anything else, a path or ``..`` above all,
is refused with 400.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, status
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from xce_schemas.admin import (
    MAX_NAME_LENGTH,
    RecorderCommand,
    RecordingNameError,
    recording_name,
)

from xce_admin.backend import Backend, LiveBackend, RecordingsDir, Unavailable
from xce_admin.guard import RequestGuard, require_token
from xce_admin.metrics import AdminMetrics, MetricsMiddleware
from xce_admin.models import (
    FILE_PATTERN,
    CoreOut,
    CoreState,
    ErrorOut,
    HealthOut,
    RecorderOut,
    RecordingFile,
    RecordingList,
    SchedulerStatusOut,
    StartRequest,
    core_state,
)
from xce_admin.settings import AdminSettings, ConfigError

__all__ = ["AdminMetrics", "AdminSettings", "ConfigError", "create_app"]

# --- dependencies -----------------------------------------------------------------------


def get_settings(request: Request) -> AdminSettings:
    """The app's settings."""
    settings: AdminSettings = request.app.state.settings
    return settings


def get_backend(request: Request) -> Backend:
    """The app's backend (tests override this dependency)."""
    backend: Backend = request.app.state.backend
    return backend


def get_recordings(settings: Annotated[AdminSettings, Depends(get_settings)]) -> RecordingsDir:
    """The recordings directory."""
    return RecordingsDir(settings.recordings_dir)


BackendDep = Annotated[Backend, Depends(get_backend)]

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No bearer token, or a wrong one."},
    413: {"model": ErrorOut, "description": "A body larger than --max-body-bytes."},
    503: {"model": ErrorOut, "description": "NATS, Redis or the recorder does not answer."},
}

# --- routers ----------------------------------------------------------------------------

record = APIRouter(prefix="/scheduler/record", tags=["recording"])


@record.post(
    "/start",
    summary="Start recording",
    description="Snapshot the core's whole state and record every later event and "
    "decision, with a SNAPSHOT every N events (the recorder's "
    "--record-snapshot-interval). Answered once the start SNAPSHOT is written.",
    response_model=RecorderOut,
    dependencies=[Depends(require_token)],
    responses={
        400: {"model": ErrorOut, "description": "A bad file name (a path, '..', a character)."},
        409: {"model": ErrorOut, "description": "Already recording, or the name is taken."},
        502: {"model": ErrorOut, "description": "The recorder could not start."},
        **_ERRORS,
    },
)
async def start_recording(backend: BackendDep, body: StartRequest | None = None) -> RecorderOut:
    """``xceadmin scheduler record start [FILE]``."""
    name = body.name if body is not None else None
    if name is not None:
        try:
            name = recording_name(name)
        except RecordingNameError as exc:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
    return await _command(backend, RecorderCommand(action="start", name=name))


async def _command(backend: Backend, command: RecorderCommand) -> RecorderOut:
    """Send ``command`` to the recorder; its status, or 409 (the recorder refused:
    a conflict) or 502 (it failed) with its reason."""
    reply = await backend.command(command)
    if not reply.ok:
        code = status.HTTP_409_CONFLICT if reply.conflict else status.HTTP_502_BAD_GATEWAY
        raise HTTPException(code, reply.error or "refused")
    return RecorderOut.of(reply.status, time.time())


@record.post(
    "/stop",
    summary="Stop recording",
    description="Record the events up to the stream's end now, then export the "
    "recording to its file; the answer comes at once (state 'stopping'), the file "
    "is listed once the recorder is idle again.",
    response_model=RecorderOut,
    dependencies=[Depends(require_token)],
    responses={409: {"model": ErrorOut, "description": "Not recording."}, **_ERRORS},
)
async def stop_recording(backend: BackendDep) -> RecorderOut:
    """``xceadmin scheduler record stop``."""
    return await _command(backend, RecorderCommand(action="stop"))


@record.get(
    "/status",
    summary="Recording status",
    response_model=RecorderOut,
    responses={503: _ERRORS[503]},
)
async def recording_status(backend: BackendDep) -> RecorderOut:
    """The recorder's state as it last published it."""
    return RecorderOut.of(await backend.recorder_status(), time.time())


recordings = APIRouter(prefix="/scheduler/recordings", tags=["recordings"])


@recordings.get("", summary="List recordings", response_model=RecordingList)
async def list_recordings(
    folder: Annotated[RecordingsDir, Depends(get_recordings)],
) -> RecordingList:
    """Every finished recording in the recordings directory, by name."""
    return RecordingList(
        recordings=[
            RecordingFile(name=r.name, size_bytes=r.size_bytes, modified=r.modified)
            for r in folder.list()
        ]
    )


@recordings.get(
    "/{name:path}",
    summary="Download a recording",
    response_class=FileResponse,
    dependencies=[Depends(require_token)],
    responses={
        200: {
            "description": "The recording, JSONL (gzip-compressed for .jsonl.gz).",
            "content": {"application/gzip": {}, "application/x-ndjson": {}},
        },
        400: {"model": ErrorOut, "description": "Not a recording name (a path, '..')."},
        404: {"model": ErrorOut, "description": "No recording of that name."},
        401: _ERRORS[401],
    },
)
async def download_recording(
    name: Annotated[
        str,
        PathParam(
            description="A recording's file name, as listed.",
            examples=["night-run.jsonl.gz"],
            # Documented; checked by the handler (400 naming the rule).
            json_schema_extra={"pattern": FILE_PATTERN, "maxLength": MAX_NAME_LENGTH},
        ),
    ],
    folder: Annotated[RecordingsDir, Depends(get_recordings)],
) -> FileResponse:
    """One recording file, as it is."""
    try:
        path = folder.file(name)
    except RecordingNameError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
    if path is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no recording named {name!r}")
    media = "application/gzip" if name.endswith(".gz") else "application/x-ndjson"
    return FileResponse(path, media_type=media, filename=name)


scheduler = APIRouter(prefix="/scheduler", tags=["scheduler"])


@scheduler.get(
    "/status",
    summary="Scheduler status",
    response_model=SchedulerStatusOut,
    responses={503: _ERRORS[503]},
)
async def scheduler_status(
    backend: BackendDep, settings: Annotated[AdminSettings, Depends(get_settings)]
) -> SchedulerStatusOut:
    """The core's heartbeat and last round (time, duration, pending and running jobs,
    lag), whether it schedules (``models.core_state``), and the recorder's state."""
    now = time.time()
    core = await backend.core_status()
    recorder = await backend.recorder_status()
    state, problem = core_state(core, now, settings.max_round_age_s)
    return SchedulerStatusOut(
        core=CoreOut.of(core, now) if core is not None else None,
        core_state=state,
        problem=problem,
        max_round_age_seconds=settings.max_round_age_s,
        recorder=RecorderOut.of(recorder, now),
    )


ops = APIRouter(tags=["operations"])


@ops.get(
    "/health",
    summary="Health",
    response_model=HealthOut,
    responses={503: {"model": HealthOut, "description": "Degraded: the problem says what."}},
)
async def health(
    backend: BackendDep, settings: Annotated[AdminSettings, Depends(get_settings)]
) -> HealthOut | JSONResponse:
    """200 when Redis and NATS answer and the core schedules (a round within
    ``--max-round-age``: ``models.core_state``); else 503 with what is wrong."""
    redis_ok, nats_ok = await backend.health()
    state: CoreState = "unknown"
    problem: str | None = None
    if redis_ok:
        try:
            status_ = await backend.core_status()
        except Unavailable as exc:
            redis_ok, problem = False, str(exc)
        else:
            state, problem = core_state(status_, time.time(), settings.max_round_age_s)
    if not redis_ok:
        problem = problem or "Redis does not answer"
    elif not nats_ok:
        problem = "NATS does not answer" + (f"; {problem}" if problem else "")
    out = HealthOut(
        status="ok" if problem is None else "degraded",
        redis=redis_ok,
        nats=nats_ok,
        core=state,
        problem=problem,
    )
    if problem is None:
        return out
    return JSONResponse(out.model_dump(), status_code=status.HTTP_503_SERVICE_UNAVAILABLE)


@ops.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format."}},
)
async def metrics(request: Request) -> Response:
    """The admin server's metrics, in Prometheus' text format."""
    registry: CollectorRegistry = request.app.state.metrics.registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_503_SERVICE_UNAVAILABLE)


def create_app(settings: AdminSettings, backend: Backend | None = None) -> FastAPI:
    """The admin API, behind its ``RequestGuard`` (token, then body size, before any
    body is read).

    Args:
        settings: token, servers, recordings directory, body limit.
        backend: what it talks to; default a ``LiveBackend`` on the settings' servers
            (NATS connected in the background from startup, both closed at shutdown).
    """
    live = (
        LiveBackend(settings.redis_url, settings.nats_url, settings.command_timeout_s)
        if backend is None
        else None
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if live is not None:
            live.start()
        try:
            yield
        finally:
            if live is not None:
                await live.close()

    app = FastAPI(
        title="XCE scheduler admin API",
        version="1.0",
        description=__doc__,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.backend = live if backend is None else backend
    app.state.metrics = AdminMetrics()
    app.add_exception_handler(Unavailable, _unavailable)
    routers = (record, recordings, scheduler, ops)
    for router in routers:
        app.include_router(router)
    # The last added runs first: the metrics see every answer, the guard's too. The
    # guard matches the routers' own routes (FastAPI may wrap what it includes).
    app.add_middleware(
        RequestGuard,
        routes=[route for router in routers for route in router.routes],
        token=settings.token,
        max_body_bytes=settings.max_body_bytes,
    )
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    return app
