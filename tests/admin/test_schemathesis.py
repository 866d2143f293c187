"""Schemathesis over the admin API's OpenAPI document (in-process ASGI, in-memory
backend): no generated request, authorized or not, gets a server error, and every
answer matches the document (status codes, content types, bodies)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings
from xce_admin.app import AdminSettings, create_app

from tests.admin.fakes import AUTH, TOKEN, FakeBackend

_FOLDER = Path(tempfile.mkdtemp(prefix="xce-admin-schemathesis-"))
(_FOLDER / "night.jsonl").write_bytes(b'{"type":"HEADER"}\n')
APP = create_app(AdminSettings(token=TOKEN, recordings_dir=_FOLDER), FakeBackend())

schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_authorized_requests_match_the_document(case: schemathesis.Case) -> None:
    case.call_and_validate(headers=AUTH)


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_unauthorized_requests_match_the_document(case: schemathesis.Case) -> None:
    case.call_and_validate(headers={"Authorization": "Bearer not-the-token"})
