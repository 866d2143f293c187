"""The request guard: the token is checked, and the body's size, before any of the
body is read; a body past the limit is a one-line 413 however it is sent; a path
with a control character is refused."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from xce_admin.app import create_app
from xce_admin.guard import NO_TOKEN, WRONG_TOKEN, RequestGuard, bearer_problem
from xce_admin.settings import DEFAULT_MAX_BODY_BYTES, AdminSettings

from tests.admin.conftest import served
from tests.admin.fakes import AUTH, TOKEN, FakeBackend

LIMIT = DEFAULT_MAX_BODY_BYTES
TOO_LARGE = f"request body larger than {LIMIT} bytes (the admin server's --max-body-bytes)"
HUGE = 10**12  # a Content-Length no server should start reading, bytes


class EndlessBody:
    """An ASGI ``receive`` that hands out 64 KiB chunks of a body and counts how many
    were taken: 4 MiB of them, as good as endless here (a server that read it all,
    as FastAPI does before it runs an endpoint's dependencies, fails the test on its
    answer rather than hanging it)."""

    CHUNKS = 64

    def __init__(self) -> None:
        self.taken = 0

    async def __call__(self) -> dict[str, Any]:
        self.taken += 1
        more = self.taken < self.CHUNKS
        return {"type": "http.request", "body": b"x" * 65536, "more_body": more}


def call_asgi(
    app: FastAPI, method: str, path: str, headers: dict[str, str], receive: EndlessBody
) -> tuple[int, dict[str, str], Any]:
    """One request straight through the ASGI interface: (status, headers, JSON body)."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    answer_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], answer_headers, json.loads(body)


@pytest.fixture
def app(backend: FakeBackend, recordings: Path) -> FastAPI:
    return create_app(AdminSettings(token=TOKEN, recordings_dir=recordings), backend)


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        ({}, NO_TOKEN),
        ({"Authorization": "Bearer not-the-token-at-all"}, WRONG_TOKEN),
        ({"Authorization": f"Basic {TOKEN}"}, NO_TOKEN),
    ],
    ids=["no token", "wrong token", "another scheme"],
)
@pytest.mark.parametrize(
    "length", [None, str(HUGE)], ids=["chunked, no length", "a terabyte announced"]
)
def test_no_token_is_401_before_a_byte_of_the_body_is_read(
    app: FastAPI, backend: FakeBackend, headers: dict[str, str], detail: str, length: str | None
) -> None:
    body = EndlessBody()
    sent = {"Content-Type": "application/json", **headers}
    if length is not None:
        sent["Content-Length"] = length
    code, answer, payload = call_asgi(app, "POST", "/scheduler/record/start", sent, body)
    assert (code, payload) == (401, {"detail": detail})
    assert answer["www-authenticate"] == "Bearer"
    assert body.taken == 0  # the body was never read
    assert backend.commands == []


def test_a_body_past_the_limit_is_413_before_it_is_read(app: FastAPI, backend: FakeBackend) -> None:
    """Announced too large: refused from the header, before the endpoint runs (stop
    reads no body: answering after it ran would have stopped the recording)."""
    body = EndlessBody()
    headers = {**AUTH, "Content-Length": str(LIMIT + 1)}
    code, _, payload = call_asgi(app, "POST", "/scheduler/record/stop", headers, body)
    assert (code, payload) == (413, {"detail": TOO_LARGE})
    assert body.taken == 0
    assert backend.commands == []


def test_an_endless_chunked_body_is_cut_at_the_limit(app: FastAPI, backend: FakeBackend) -> None:
    body = EndlessBody()
    code, _, payload = call_asgi(app, "POST", "/scheduler/record/start", dict(AUTH), body)
    assert (code, payload) == (413, {"detail": TOO_LARGE})
    assert body.taken == LIMIT // 65536 + 1  # read up to the limit and no further
    assert backend.commands == []


def chunks(total: int, size: int = 8192) -> Iterator[bytes]:
    """A JSON-ish body of ``total`` bytes in chunks (httpx sends it chunked)."""
    sent = 0
    while sent < total:
        piece = min(size, total - sent)
        sent += piece
        yield b" " * piece


@pytest.mark.parametrize(
    ("headers", "content", "code"),
    [
        ({"Authorization": "Bearer wrong-token-of-some-length"}, b"{" * (LIMIT * 4), 401),
        ({}, b"not json at all", 401),
        ({"Authorization": "Bearer wrong-token-of-some-length"}, b'{"name": 5}', 401),
        (AUTH, b" " * (LIMIT + 1), 413),
        (AUTH, chunks(LIMIT + 1), 413),
        (AUTH, b"not json at all", 422),
        (AUTH, b" " * 10 + b'{"name": "within"}', 200),
    ],
    ids=[
        "too large, wrong token: 401 not 413",
        "malformed, no token: 401 not 422",
        "invalid, wrong token: 401 not 422",
        "too large with the token: 413",
        "too large and chunked: 413",
        "malformed with the token: 422",
        "within the limit: taken",
    ],
)
def test_the_token_comes_first_then_the_size_then_the_body(
    client: TestClient, backend: FakeBackend, headers: dict[str, str], content: Any, code: int
) -> None:
    response = client.post(
        "/scheduler/record/start",
        content=content,
        headers={"Content-Type": "application/json", **headers},
    )
    assert response.status_code == code, response.text
    if code == 413:
        assert response.json() == {"detail": TOO_LARGE}
    assert [c.name for c in backend.commands] == (["within.jsonl.gz"] if code == 200 else [])


def test_the_limit_is_a_setting(backend: FakeBackend, recordings: Path) -> None:
    settings = AdminSettings(token=TOKEN, recordings_dir=recordings, max_body_bytes=20)
    with TestClient(create_app(settings, backend)) as small:
        fits = small.post("/scheduler/record/start", json={"name": "a"}, headers=AUTH)
        assert fits.status_code == 200
        small.post("/scheduler/record/stop", headers=AUTH)
        big = small.post("/scheduler/record/start", json={"name": "a" * 20}, headers=AUTH)
        assert big.status_code == 413
        assert big.json() == {
            "detail": "request body larger than 20 bytes (the admin server's --max-body-bytes)"
        }


def test_the_metrics_name_the_endpoint_of_a_refused_request(client: TestClient) -> None:
    client.post("/scheduler/record/start", content=b" " * (LIMIT + 1), headers=AUTH)
    client.post("/scheduler/record/stop", headers={"Authorization": "Bearer no"})
    text = client.get("/metrics").text
    assert 'xce_admin_requests_total{endpoint="/scheduler/record/start",status="413"} 1.0' in text
    assert 'xce_admin_requests_total{endpoint="/scheduler/record/stop",status="401"} 1.0' in text


@pytest.mark.parametrize(
    "path",
    ["/scheduler/recordings/a.jsonl%0A", "/scheduler/recordings/a%0D.jsonl", "/health%00"],
    ids=["final newline", "carriage return", "NUL"],
)
def test_a_path_with_a_control_character_is_refused(
    client: TestClient, recordings: Path, path: str
) -> None:
    """Starlette's route patterns end in "$", which matches before a final newline:
    without this check ``a.jsonl%0A`` downloads ``a.jsonl``."""
    (recordings / "a.jsonl").write_text("{}\n")
    response = client.get(path, headers=AUTH)
    assert response.status_code == 400
    assert response.json() == {"detail": "the path holds a control character"}


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (None, NO_TOKEN),
        (b"", NO_TOKEN),
        (b"Bearer", NO_TOKEN),
        (b"Bearer ", NO_TOKEN),
        (b"Token " + TOKEN.encode(), NO_TOKEN),
        (b"Bearer " + TOKEN.encode()[:-1], WRONG_TOKEN),
        (b"Bearer " + TOKEN.encode() + b"x", WRONG_TOKEN),
        (b"Bearer caf\xc3\xa9-not-ascii-token", WRONG_TOKEN),
        (b"Bearer " + TOKEN.encode(), None),
        (b"bearer " + TOKEN.encode(), None),
    ],
    ids=[
        "no header",
        "empty",
        "scheme alone",
        "scheme and a space",
        "another scheme",
        "one character short",
        "one character more",
        "non-ASCII bytes",
        "the token",
        "scheme in lower case",
    ],
)
def test_bearer_problem(header: bytes | None, problem: str | None) -> None:
    assert bearer_problem(header, TOKEN.encode()) == problem


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Read one HTTP/1.1 answer (with a Content-Length) from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, f"connection closed before an answer: {data!r}"
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    while len(body) < int(headers["content-length"]):
        piece = sock.recv(65536)
        assert piece, "connection closed in the answer's body"
        body += piece
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    ("authorization", "code", "detail"),
    [
        (None, 401, NO_TOKEN),
        ("Bearer wrong-token-of-some-length", 401, WRONG_TOKEN),
        (f"Bearer {TOKEN}", 413, TOO_LARGE),
    ],
    ids=["no token", "wrong token", "the token"],
)
def test_a_real_server_answers_a_terabyte_post_after_its_first_kilobyte(
    backend: FakeBackend, recordings: Path, authorization: str | None, code: int, detail: str
) -> None:
    """uvicorn, a real socket: the request announces 10**12 bytes and sends 1 KiB; the
    answer comes without the rest (a server that read the body would wait for it:
    the socket's timeout would fail the test)."""
    app = create_app(AdminSettings(token=TOKEN, recordings_dir=recordings), backend)
    head = (
        "POST /scheduler/record/start HTTP/1.1\r\nHost: admin\r\n"
        f"Content-Type: application/json\r\nContent-Length: {HUGE}\r\n"
        + (f"Authorization: {authorization}\r\n" if authorization else "")
        + "\r\n"
    ).encode()
    with served(app) as port, socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + b"{" * 1024)
        got, headers, body = read_answer(sock)
    assert (got, json.loads(body)) == (code, {"detail": detail})
    assert headers["content-type"] == "application/json"
    assert backend.commands == []


def test_a_real_server_cuts_a_chunked_body_at_the_limit(
    backend: FakeBackend, recordings: Path
) -> None:
    app = create_app(AdminSettings(token=TOKEN, recordings_dir=recordings), backend)
    head = (
        "POST /scheduler/record/start HTTP/1.1\r\nHost: admin\r\n"
        f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        f"Authorization: Bearer {TOKEN}\r\n\r\n"
    ).encode()
    chunk = b"%x\r\n%s\r\n" % (16384, b" " * 16384)
    with served(app) as port, socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + chunk * (LIMIT // 16384 + 1))  # past the limit, never ended
        got, _, body = read_answer(sock)
    assert (got, json.loads(body)) == (413, {"detail": TOO_LARGE})
    assert backend.commands == []


def test_without_the_guard_the_dependency_still_refuses(
    backend: FakeBackend, recordings: Path
) -> None:
    """``require_token`` checks again, so an endpoint stays protected if the app is
    ever served without the guard (later, after the body: the guard's job)."""
    app = create_app(AdminSettings(token=TOKEN, recordings_dir=recordings), backend)
    app.user_middleware = [m for m in app.user_middleware if m.cls is not RequestGuard]
    with TestClient(app) as bare:
        for headers, detail in (({}, NO_TOKEN), ({"Authorization": "Bearer nope"}, WRONG_TOKEN)):
            refused = bare.post("/scheduler/record/stop", headers=headers)
            assert (refused.status_code, refused.json()) == (401, {"detail": detail})
        assert bare.post("/scheduler/record/stop", headers=AUTH).status_code == 409
    assert [c.action for c in backend.commands] == ["stop"]
