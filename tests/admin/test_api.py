"""The admin API on an in-memory backend: auth, recording control, name confinement,
recordings, status, health, metrics and the OpenAPI document."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from xce_admin.app import AdminSettings, ConfigError, create_app
from xce_schemas.admin import CoreStatus

from tests.admin.fakes import AUTH, TOKEN, FakeBackend

PROTECTED = [
    ("POST", "/scheduler/record/start"),
    ("POST", "/scheduler/record/stop"),
    ("GET", "/scheduler/recordings/a.jsonl"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED, ids=[p for _, p in PROTECTED])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": "Bearer"},
    ],
    ids=["no header", "wrong token", "basic scheme", "longer token", "empty bearer"],
)
def test_protected_endpoints_need_the_token(
    client: TestClient, backend: FakeBackend, method: str, path: str, headers: dict[str, str]
) -> None:
    response = client.request(method, path, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["detail"] in (
        "this endpoint needs 'Authorization: Bearer <XCE_ADMIN_TOKEN>'",
        "wrong token",
    )
    assert backend.commands == []


def test_start_stop_and_status(client: TestClient, backend: FakeBackend) -> None:
    started = client.post("/scheduler/record/start", json={"name": "night"}, headers=AUTH)
    assert started.status_code == 200
    assert started.json()["state"] == "recording" and started.json()["name"] == "night.jsonl.gz"
    assert backend.commands[-1].name == "night.jsonl.gz"  # checked and suffixed before sending
    again = client.post("/scheduler/record/start", headers=AUTH)
    assert again.status_code == 409
    assert again.json() == {"detail": "the recorder is recording 'night.jsonl.gz'; stop it first"}
    status = client.get("/scheduler/record/status").json()
    assert status["state"] == "recording" and status["recorder_up"] is True
    stopped = client.post("/scheduler/record/stop", headers=AUTH)
    assert stopped.status_code == 200 and stopped.json()["state"] == "stopping"
    assert client.post("/scheduler/record/stop", headers=AUTH).json() == {"detail": "not recording"}
    assert client.get("/scheduler/record/status").json()["last_file"] == "night.jsonl.gz"


def test_start_without_a_body_lets_the_recorder_name_the_file(
    client: TestClient, backend: FakeBackend
) -> None:
    response = client.post("/scheduler/record/start", headers=AUTH)
    assert response.status_code == 200
    assert backend.commands[-1].name is None
    assert response.json()["name"].startswith("rec-")


@pytest.mark.parametrize(
    "name",
    ["../x", "/etc/passwd", "a/../../b", "..", ".hidden", "x\x00", "a b", "é", "night\n"],
    ids=[
        "parent",
        "absolute",
        "nested parent",
        "dot dot",
        "hidden",
        "NUL",
        "space",
        "non-ASCII",
        "final newline",
    ],
)
def test_start_refuses_names_outside_the_directory(
    client: TestClient, backend: FakeBackend, name: str
) -> None:
    response = client.post("/scheduler/record/start", json={"name": name}, headers=AUTH)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"recording name {name!r}")
    assert backend.commands == []


def test_list_and_download(client: TestClient, recordings: Path, tmp_path: Path) -> None:
    (recordings / "b.jsonl.gz").write_bytes(gzip.compress(b'{"type":"HEADER"}\n'))
    (recordings / "a.jsonl").write_bytes(b'{"type":"HEADER"}\n')
    (recordings / "readme.txt").write_text("no")
    (tmp_path / "outside.jsonl").write_text("secret\n")
    listed = client.get("/scheduler/recordings").json()["recordings"]
    assert [(r["name"], r["size_bytes"]) for r in listed] == [
        ("a.jsonl", 18),
        ("b.jsonl.gz", (recordings / "b.jsonl.gz").stat().st_size),
    ]
    got = client.get("/scheduler/recordings/b.jsonl.gz", headers=AUTH)
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/gzip"
    assert 'filename="b.jsonl.gz"' in got.headers["content-disposition"]
    assert gzip.decompress(got.content) == b'{"type":"HEADER"}\n'
    plain = client.get("/scheduler/recordings/a.jsonl", headers=AUTH)
    assert plain.headers["content-type"] == "application/x-ndjson"
    missing = client.get("/scheduler/recordings/none.jsonl", headers=AUTH)
    assert missing.status_code == 404 and missing.json() == {
        "detail": "no recording named 'none.jsonl'"
    }


@pytest.mark.parametrize(
    "path",
    [
        "/scheduler/recordings/..%2Foutside.jsonl",
        "/scheduler/recordings/%2E%2E%2Foutside.jsonl",
        "/scheduler/recordings/sub/outside.jsonl",
        "/scheduler/recordings/%2Fetc%2Fpasswd",
        "/scheduler/recordings/%2E%2E",
        "/scheduler/recordings/.part.c.jsonl.gz",
        "/scheduler/recordings/readme.txt",
    ],
    ids=[
        "encoded slash",
        "encoded dots",
        "sub path",
        "absolute",
        "dot dot",
        "hidden",
        "not a recording",
    ],
)
def test_download_refuses_paths(client: TestClient, recordings: Path, path: str) -> None:
    (recordings / "readme.txt").write_text("no")
    response = client.get(path, headers=AUTH)
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith("recording name ")


def test_scheduler_status_shows_the_core_and_the_recorder(
    client: TestClient, backend: FakeBackend
) -> None:
    status = client.get("/scheduler/status").json()
    assert (status["core"], status["core_state"]) == (None, "absent")
    backend.core = CoreStatus(
        seq=12,
        heartbeat=time.time() - 0.5,
        last_round_ts=30_000_000_000,
        round_seconds=0.002,
        pending=3,
        running=5,
        suspended=1,
        lag_seconds=0.01,
        events_waiting=0,
        updated=time.time() - 1.5,
    )
    status = client.get("/scheduler/status").json()
    core = status["core"]
    assert (core["seq"], core["last_round_ts"], core["pending"], core["running"]) == (
        12,
        30_000_000_000,
        3,
        5,
    )
    assert 1.0 < core["age_seconds"] < 60
    assert 0.0 < core["heartbeat_age_seconds"] < core["age_seconds"]
    assert (status["core_state"], status["problem"]) == ("scheduling", None)
    assert status["max_round_age_seconds"] == 10.0
    assert status["recorder"]["state"] == "idle"


#: (last round, heartbeat) seconds ago (None: never), what the admin API makes of it
#: with the default limit of 10 s, and how its problem line starts.
CORE_CASES = {
    "a round a second ago": (1.0, 1.0, "scheduling", None),
    "the core runs, no round for 29 s": (29.0, 0.5, "no_rounds", "the core service runs"),
    "the core runs, no round yet": (None, 0.5, "no_rounds", "the core service runs"),
    "dead for 29 s": (29.0, 29.0, "down", "the core service is down or stuck"),
    "an older core, dead for 29 s": (29.0, None, "down", "the core service is down or stuck"),
    "never ran": None,
}


@pytest.mark.parametrize("case", list(CORE_CASES.values()), ids=list(CORE_CASES))
def test_health_fails_when_the_core_does_not_schedule(
    client: TestClient,
    backend: FakeBackend,
    case: tuple[float | None, float | None, str, str | None] | None,
) -> None:
    """Item 12: /health is 200 only while the core's last round is within the limit;
    the heartbeat tells a dead core from one that gets no rounds."""
    now = time.time()
    if case is None:
        backend.core = None
        state, problem = "absent", "the core service never wrote its status"
    else:
        round_ago, beat_ago, state, problem = case
        backend.core = CoreStatus(
            seq=7,
            last_round_ts=None if round_ago is None else 1,
            updated=0.0 if round_ago is None else now - round_ago,
            heartbeat=0.0 if beat_ago is None else now - beat_ago,
        )
    health = client.get("/health")
    assert health.status_code == (200 if state == "scheduling" else 503)
    body = health.json()
    assert (body["status"], body["core"]) == (
        "ok" if state == "scheduling" else "degraded",
        state,
    )
    assert (body["problem"] or "").startswith(problem or ""), body["problem"]
    assert (body["problem"] is None) == (problem is None)
    status = client.get("/scheduler/status").json()
    assert status["core_state"] == state
    assert (status["problem"] or "").startswith(problem or "")


def test_the_round_age_limit_is_a_setting(backend: FakeBackend, recordings: Path) -> None:
    backend.core = CoreStatus(seq=1, last_round_ts=1, updated=time.time() - 3, heartbeat=0.0)
    for limit, code in ((5.0, 200), (2.0, 503)):
        settings = AdminSettings(token=TOKEN, recordings_dir=recordings, max_round_age_s=limit)
        with TestClient(create_app(settings, backend)) as test_client:
            assert test_client.get("/health").status_code == code
    with pytest.raises(ConfigError, match="--max-round-age must be a positive number"):
        AdminSettings(token=TOKEN, max_round_age_s=0)


def test_a_server_that_does_not_answer_is_a_503_with_its_name(
    client: TestClient, backend: FakeBackend
) -> None:
    backend.down = True
    response = client.post("/scheduler/record/start", headers=AUTH)
    assert response.status_code == 503
    assert response.json() == {
        "detail": "the recorder service is not running (nobody answers on xce.recorder.control)"
    }
    assert client.get("/scheduler/status").status_code == 503
    health = client.get("/health")
    assert health.status_code == 503
    assert health.json() == {
        "status": "degraded",
        "redis": False,
        "nats": False,
        "core": "unknown",
        "problem": "Redis does not answer",
    }


def test_health_and_metrics(client: TestClient, backend: FakeBackend) -> None:
    backend.core = CoreStatus(seq=1, last_round_ts=1, updated=time.time(), heartbeat=time.time())
    assert client.get("/health").json() == {
        "status": "ok",
        "redis": True,
        "nats": True,
        "core": "scheduling",
        "problem": None,
    }
    client.post("/scheduler/record/stop")  # 401
    client.get("/scheduler/recordings/x.jsonl", headers=AUTH)  # 404
    client.get("/nowhere")
    text = client.get("/metrics").text
    assert 'xce_admin_requests_total{endpoint="/health",status="200"} 1.0' in text
    assert 'xce_admin_requests_total{endpoint="/scheduler/record/stop",status="401"} 1.0' in text
    assert (
        'xce_admin_requests_total{endpoint="/scheduler/recordings/{name:path}",status="404"} 1.0'
        in text
    )
    assert 'xce_admin_requests_total{endpoint="unmatched",status="404"} 1.0' in text
    assert 'xce_admin_request_duration_seconds_count{endpoint="/health"} 1.0' in text


def test_the_openapi_document_describes_every_endpoint(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert set(paths) == {
        "/scheduler/record/start",
        "/scheduler/record/stop",
        "/scheduler/record/status",
        "/scheduler/recordings",
        "/scheduler/recordings/{name}",
        "/scheduler/status",
        "/health",
        "/metrics",
    }
    start = paths["/scheduler/record/start"]["post"]
    assert {"200", "400", "401", "409", "503"} <= set(start["responses"])
    assert start["security"] == [{"HTTPBearer": []}]
    schemas = spec["components"]["schemas"]
    assert schemas["RecorderOut"]["title"] == "Recorder status"
    assert schemas["RecorderOut"]["examples"]
    assert schemas["StartRequest"]["properties"]["name"]["description"].startswith(
        "The recording's file name"
    )


def test_no_token_no_server() -> None:
    with pytest.raises(ConfigError, match="XCE_ADMIN_TOKEN is not set"):
        AdminSettings(token="")
    with pytest.raises(ConfigError, match="XCE_ADMIN_TOKEN is not set"):
        create_app(AdminSettings(token="  "))
