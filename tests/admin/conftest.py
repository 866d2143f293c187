"""Fixtures of the admin API tests: the app on an in-memory backend and a temporary
recordings directory, called in-process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from xce_admin.app import AdminSettings, create_app

from tests.admin.fakes import TOKEN, FakeBackend


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
