"""Where the admin token comes from and what it must be: the environment or a file,
never the command line; 16 printable ASCII characters at least; every refusal one
line that never shows the token, and ``xce-admin`` exits 2 on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from xce_admin import server
from xce_admin.settings import (
    MIN_TOKEN_LENGTH,
    AdminSettings,
    ConfigError,
    check_token,
    read_token,
)

GOOD = "0123456789abcdef0123"


def test_the_token_comes_from_the_environment() -> None:
    assert read_token({"XCE_ADMIN_TOKEN": GOOD}) == GOOD


def test_the_token_comes_from_a_file(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text(GOOD + "\n")  # the line break an editor or echo adds
    file.chmod(0o600)
    assert read_token({"XCE_ADMIN_TOKEN_FILE": str(file)}) == GOOD


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("", "XCE_ADMIN_TOKEN is not set: the admin API refuses to start"),
        ("   ", "XCE_ADMIN_TOKEN is not set: the admin API refuses to start"),
        (
            "short-secret",
            f"XCE_ADMIN_TOKEN is 12 characters long; the admin API needs at least {MIN_TOKEN_LENGTH}",
        ),
        ("x" * (MIN_TOKEN_LENGTH - 1), "is 15 characters long"),
        ("with a space in it 0123", "may hold only printable ASCII characters, no spaces"),
        ("tab\tinside-the-token-0123", "may hold only printable ASCII characters"),
        ("caf\u00e9-caf\u00e9-caf\u00e9-caf\u00e9", "may hold only printable ASCII characters"),
    ],
    ids=["empty", "blank", "12 characters", "one short", "a space", "a tab", "non-ASCII"],
)
def test_a_token_that_is_not_one_is_refused_without_being_shown(token: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        read_token({"XCE_ADMIN_TOKEN": token})
    if token.strip():
        assert token not in str(refused.value)
    assert "\n" not in str(refused.value)
    with pytest.raises(ConfigError):
        AdminSettings(token=token)


def test_exactly_the_minimum_is_taken() -> None:
    assert check_token("x" * MIN_TOKEN_LENGTH) == "x" * MIN_TOKEN_LENGTH


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "XCE_ADMIN_TOKEN_FILE={file}: No such file or directory"),
        ("dir", "XCE_ADMIN_TOKEN_FILE={file}: not a regular file"),
        ("", "XCE_ADMIN_TOKEN_FILE={file}: the file is empty"),
        ("\n", "XCE_ADMIN_TOKEN_FILE={file}: the file is empty"),
        ("tooshort\n", "the token in XCE_ADMIN_TOKEN_FILE={file} is 8 characters long"),
        ("two words-0123456789", "the token in XCE_ADMIN_TOKEN_FILE={file} may hold only"),
        ("x" * 70_000, "XCE_ADMIN_TOKEN_FILE={file}: 70000 bytes, too large"),
    ],
    ids=["missing", "a directory", "empty", "a blank line", "short", "two words", "too large"],
)
def test_a_token_file_that_cannot_be_used_is_one_line(
    tmp_path: Path, content: str | None, message: str
) -> None:
    file = tmp_path / "token"
    if content == "dir":
        file.mkdir()
    elif content is not None:
        file.write_text(content)
    with pytest.raises(ConfigError) as refused:
        read_token({"XCE_ADMIN_TOKEN_FILE": str(file)})
    text = str(refused.value)
    assert text.startswith(message.format(file=file)) or message.format(file=file) in text, text
    assert "\n" not in text
    if content and content.strip() and content != "dir":
        assert content.strip() not in text


def test_both_sources_at_once_are_refused(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text(GOOD)
    with pytest.raises(ConfigError, match="set XCE_ADMIN_TOKEN or XCE_ADMIN_TOKEN_FILE, not both"):
        read_token({"XCE_ADMIN_TOKEN": GOOD, "XCE_ADMIN_TOKEN_FILE": str(file)})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_body_bytes", 0, "--max-body-bytes must be 1 or more, not 0"),
        ("command_timeout_s", 0.0, "command timeout must be positive"),
        ("redis_url", "http://x", "--redis: 'http://x' is not a Redis URL"),
    ],
    ids=["no body", "no timeout", "not Redis"],
)
def test_other_settings_are_checked(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AdminSettings(token=GOOD, **{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"XCE_ADMIN_TOKEN": "secret"}, "XCE_ADMIN_TOKEN is 6 characters long"),
        ({}, "XCE_ADMIN_TOKEN is not set"),
        ({"XCE_ADMIN_TOKEN_FILE": "/nonexistent/token"}, "XCE_ADMIN_TOKEN_FILE=/nonexistent/token"),
    ],
    ids=["short", "unset", "no such file"],
)
def test_xce_admin_refuses_to_start_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    environ: dict[str, str],
    message: str,
) -> None:
    for name in ("XCE_ADMIN_TOKEN", "XCE_ADMIN_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert server.main(["--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"xce-admin: error: {message}") and err.count("\n") == 1, err
    assert environ.get("XCE_ADMIN_TOKEN", "\0") not in err  # the token is never shown


def test_the_token_is_no_option() -> None:
    options = {o for action in server.build_parser()._actions for o in action.option_strings}
    assert not {o for o in options if "token" in o}
    assert {"--nats", "--redis", "--log-level", "--max-body-bytes", "--host"} <= options
    assert not {"--metrics-port", "--stream-max-age"} & options  # not the admin's
    assert server.build_parser().parse_args([]).host == "127.0.0.1"
