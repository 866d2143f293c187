"""Schemathesis over the admin API's OpenAPI document (in-process ASGI, in-memory
backend): no generated request, authorized or not, gets a server error, and every
answer matches the document (status codes, content types, bodies)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings
from xce_admin.app import AdminSettings, create_app
from xce_schemas.admin import CoreStatus

from tests.admin.fakes import AUTH, TOKEN, FakeBackend

_FOLDER = Path(tempfile.mkdtemp(prefix="xce-admin-schemathesis-"))
(_FOLDER / "night.jsonl").write_bytes(b'{"type":"HEADER"}\n')
_BACKEND = FakeBackend()
# A core that schedules: /health answers 200 (503 is its documented answer otherwise,
# which schemathesis would count as a server error).
_BACKEND.core = CoreStatus(seq=1, last_round_ts=1, updated=time.time(), heartbeat=time.time())
_SETTINGS = AdminSettings(token=TOKEN, recordings_dir=_FOLDER, max_round_age_s=86_400.0)
APP = create_app(_SETTINGS, _BACKEND)

schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_authorized_requests_match_the_document(case: schemathesis.Case) -> None:
    case.call_and_validate(headers=AUTH)


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_unauthorized_requests_match_the_document(case: schemathesis.Case) -> None:
    case.call_and_validate(headers={"Authorization": "Bearer not-the-token"})
