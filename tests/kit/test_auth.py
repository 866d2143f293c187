"""Credentials from the environment (``xce_kit.auth``, ``xce_kit.redis_client``): a
bad one is one line naming the variable and the file, never what the file holds; a
Redis URL that carries a password is refused where it is given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xce_kit.auth import (
    CREDS_VAR,
    REDIS_PASSWORD_FILE_VAR,
    REDIS_USERNAME_VAR,
    SEED_FILE_VAR,
    TLS_CA_VAR,
    TLS_CERT_VAR,
    TLS_KEY_VAR,
    CredentialsError,
    nats_credentials,
    redis_credentials,
)
from xce_kit.bus_config import new_seed, public_key, write_secret
from xce_kit.redis_client import check_redis_url, redis_from_url

SECRET = "correct-horse-battery-staple"


@pytest.fixture
def seed_file(tmp_path: Path) -> Path:
    path = tmp_path / "core.nk"
    write_secret(path, new_seed())
    return path


def test_a_seed_file_gives_the_key_its_inbox_and_nkey_option(seed_file: Path) -> None:
    credentials = nats_credentials({SEED_FILE_VAR: str(seed_file)})
    key = public_key(seed_file.read_bytes(), seed_file)
    assert credentials.public_key == key
    assert credentials.connect_options() == {
        "nkeys_seed": str(seed_file),
        "inbox_prefix": f"_INBOX.{key}",
    }


def test_a_creds_file_gives_its_seed_s_key(tmp_path: Path, seed_file: Path) -> None:
    seed = seed_file.read_text()
    creds = tmp_path / "user.creds"
    creds.write_text(
        "-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QifQ.e30.c2ln\n------END NATS USER JWT------\n\n"
        f"-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
    )
    creds.chmod(0o600)
    credentials = nats_credentials({CREDS_VAR: str(creds)})
    assert credentials.public_key == public_key(seed.encode(), seed_file)
    assert credentials.connect_options()["user_credentials"] == str(creds)


def test_nothing_set_means_no_credentials() -> None:
    assert nats_credentials({}).connect_options() == {}
    assert redis_credentials({}) == redis_credentials({REDIS_PASSWORD_FILE_VAR: " "})


def _secret_file(tmp_path: Path, text: str, name: str = "secret") -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {SEED_FILE_VAR: "/nonexistent/core.nk"},
            r"^XCE_NATS_NKEY_SEED_FILE=/nonexistent/core\.nk: No such file or directory$",
        ),
        ({SEED_FILE_VAR: "{secret}"}, r"^XCE_NATS_NKEY_SEED_FILE=.*/secret: not an nkey seed$"),
        ({CREDS_VAR: "{secret}"}, r"^XCE_NATS_CREDS=.*/secret: no user nkey seed in it"),
        ({SEED_FILE_VAR: "{seed}", CREDS_VAR: "{seed}"}, r"^set XCE_NATS_NKEY_SEED_FILE or"),
        ({TLS_CERT_VAR: "{seed}"}, r"^XCE_NATS_TLS_CERT is set but XCE_NATS_TLS_KEY is not"),
        ({TLS_KEY_VAR: "{seed}"}, r"^XCE_NATS_TLS_KEY is set but XCE_NATS_TLS_CERT is not"),
        ({TLS_CA_VAR: "/nonexistent/ca.pem"}, r"^XCE_NATS_TLS_CA=/nonexistent/ca\.pem: not a"),
    ],
    ids=[
        "a missing seed file",
        "a file that is no seed",
        "a creds file without a seed",
        "both a seed and a creds file",
        "a certificate without its key",
        "a key without its certificate",
        "a missing CA file",
    ],
)
def test_bad_nats_credentials_are_one_line_naming_the_variable_never_the_secret(
    tmp_path: Path, seed_file: Path, env: dict[str, str], message: str
) -> None:
    secret = _secret_file(tmp_path, SECRET)
    paths = {"{secret}": str(secret), "{seed}": str(seed_file)}
    resolved = {key: paths.get(value, value) for key, value in env.items()}
    with pytest.raises(CredentialsError, match=message) as refused:
        nats_credentials(resolved)
    assert "\n" not in str(refused.value)
    assert SECRET not in str(refused.value)
    assert seed_file.read_text() not in str(refused.value)


def test_a_tls_key_that_is_no_key_is_named(tmp_path: Path) -> None:
    junk = _secret_file(tmp_path, SECRET, "client-key.pem")
    env = {TLS_CERT_VAR: str(junk), TLS_KEY_VAR: str(junk)}
    with pytest.raises(CredentialsError, match=r"^XCE_NATS_TLS_CERT=.*: not a certificate") as bad:
        nats_credentials(env).connect_options()
    assert SECRET not in str(bad.value)


def test_the_redis_password_comes_from_its_file_without_the_line_break(tmp_path: Path) -> None:
    path = _secret_file(tmp_path, SECRET + "\n")
    credentials = redis_credentials(
        {REDIS_USERNAME_VAR: "core", REDIS_PASSWORD_FILE_VAR: str(path)}
    )
    assert (credentials.username, credentials.password) == ("core", SECRET)
    assert SECRET not in repr(credentials)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({REDIS_USERNAME_VAR: "core"}, r"^XCE_REDIS_USERNAME is set but XCE_REDIS_PASSWORD_FILE"),
        (
            {REDIS_PASSWORD_FILE_VAR: "/nonexistent/pw"},
            r"^XCE_REDIS_PASSWORD_FILE=/nonexistent/pw: ",
        ),
        ({REDIS_PASSWORD_FILE_VAR: "{empty}"}, r"^XCE_REDIS_PASSWORD_FILE=.*: the file is empty$"),
        ({REDIS_PASSWORD_FILE_VAR: "{two}"}, r"^XCE_REDIS_PASSWORD_FILE=.*: more than one line$"),
    ],
    ids=["a user without a password", "a missing file", "an empty file", "two lines"],
)
def test_bad_redis_credentials_are_one_line_naming_the_variable(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    files = {
        "{empty}": str(_secret_file(tmp_path, "\n", "empty")),
        "{two}": str(_secret_file(tmp_path, f"{SECRET}\n{SECRET}\n", "two")),
    }
    with pytest.raises(CredentialsError, match=message) as refused:
        redis_credentials({key: files.get(value, value) for key, value in env.items()})
    assert SECRET not in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        f"redis://:{SECRET}@redis:6379/0",
        f"redis://core:{SECRET}@redis/0",
        f"rediss://h/0?password={SECRET}",
    ],
    ids=["password only", "user and password", "password in the query"],
)
def test_a_redis_url_with_a_password_is_refused_without_repeating_it(url: str) -> None:
    with pytest.raises(CredentialsError, match="XCE_REDIS_PASSWORD_FILE") as refused:
        check_redis_url(url)
    assert SECRET not in str(refused.value)
    with pytest.raises(CredentialsError):
        redis_from_url(url)


def test_a_redis_url_without_a_password_is_taken() -> None:
    assert check_redis_url("redis://core@redis:6379/0") == "redis://core@redis:6379/0"


def test_a_service_refuses_a_redis_password_on_its_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "xce_driver.live.core_service", "--redis", f"redis://:{SECRET}@h/0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert SECRET not in done.stderr + done.stdout
    [line] = done.stderr.splitlines()
    assert line.startswith("xce-core-service: error: argument --redis: a Redis URL must not carry")
