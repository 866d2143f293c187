"""``public_url``: a server URL as messages and logs may show it, without the user
name and password it may carry."""

from __future__ import annotations

import pytest
from xce_kit.options import public_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@db:6379/0", "redis://db:6379/0"),
        ("rediss://user:p%40ss@db/0?ssl_cert_reqs=none", "rediss://db/0?ssl_cert_reqs=none"),
        ("unix://:s3cret@/run/redis.sock?db=0", "unix:///run/redis.sock?db=0"),
        ("nats://admin:s3cret@n1:4222, nats://n2:4222", "nats://n1:4222,nats://n2:4222"),
        ("admin:s3cret@n1:4222", "n1:4222"),
        ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
    ],
    ids=["redis password", "user and password", "unix socket", "NATS list", "no scheme", "none"],
)
def test_credentials_are_left_out(url: str, shown: str) -> None:
    assert public_url(url) == shown
    assert "s3cret" not in public_url(url)
