"""Fixtures of the admin API tests: the app on an in-memory backend and a temporary
recordings directory, called in-process or served by uvicorn on a loopback port."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from xce_admin.app import create_app
from xce_admin.settings import AdminSettings

from tests.admin.fakes import TOKEN, FakeBackend
from tests.live.servers import free_port


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def recordings(tmp_path: Path) -> Path:
    folder = tmp_path / "recordings"
    folder.mkdir()
    return folder


@pytest.fixture
def client(backend: FakeBackend, recordings: Path) -> Iterator[TestClient]:
    settings = AdminSettings(token=TOKEN, recordings_dir=recordings)
    with TestClient(create_app(settings, backend)) as test_client:
        yield test_client


@contextmanager
def served(app: FastAPI) -> Iterator[int]:
    """``app`` served by uvicorn on a free loopback port, in a thread; the port."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not running.started:
        assert time.monotonic() < deadline, "the admin server did not start"
        time.sleep(0.01)
    try:
        yield port
    finally:
        running.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def server(backend: FakeBackend, recordings: Path) -> Iterator[str]:
    """The admin API on a free loopback port; its URL."""
    with served(create_app(AdminSettings(token=TOKEN, recordings_dir=recordings), backend)) as port:
        yield f"http://127.0.0.1:{port}"
