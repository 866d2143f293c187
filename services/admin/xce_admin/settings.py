"""The admin server's configuration, and where its token comes from.

The token that guards recording control and downloads comes from the environment,
``XCE_ADMIN_TOKEN``, or from a file named by ``XCE_ADMIN_TOKEN_FILE`` (a Docker or
Kubernetes secret, a file only its owner reads), never from the command line, where
every user of the host can read it in the process list. It is at least
``MIN_TOKEN_LENGTH`` printable ASCII characters; an error says what is wrong with it
and never shows it.
"""

from __future__ import annotations

import math
from argparse import ArgumentTypeError
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from xce_kit.arguments import DEFAULT_NATS_URL, DEFAULT_REDIS_URL
from xce_kit.auth import CredentialsError, read_secret_file
from xce_kit.options import redis_url

from xce_admin.models import MAX_ROUND_AGE_S

#: The environment variable holding the token.
TOKEN_ENV = "XCE_ADMIN_TOKEN"
#: The environment variable naming a file that holds the token.
TOKEN_FILE_ENV = "XCE_ADMIN_TOKEN_FILE"
#: Shortest token the server takes, characters: ``openssl rand -hex 16`` gives 32,
#: and a short one falls to guessing over the network.
MIN_TOKEN_LENGTH = 16
#: Default largest request body, bytes. The largest body the API takes is a start
#: request, ``{"name": ...}`` with a name of at most 128 characters.
DEFAULT_MAX_BODY_BYTES = 64 * 1024


class ConfigError(ValueError):
    """The admin server cannot start with this configuration (the message says why,
    in one line, without the token)."""


def check_token(token: str, source: str = TOKEN_ENV) -> str:
    """``token`` if it is long enough and made of printable ASCII without spaces
    (it travels in an HTTP header as it is).

    Args:
        token: the token.
        source: where it came from, for the error (``XCE_ADMIN_TOKEN``, a file).

    Raises:
        ConfigError: it is empty, shorter than ``MIN_TOKEN_LENGTH``, or holds a
            space, a control or a non-ASCII character; the message does not show it.
    """
    if not token.strip():
        raise ConfigError(
            f"{TOKEN_ENV} is not set: the admin API refuses to start without the token "
            f"that protects recording control (export {TOKEN_ENV}=<secret>, or "
            f"{TOKEN_FILE_ENV}=<a file holding it>)"
        )
    if not all("!" <= c <= "~" for c in token):
        raise ConfigError(
            f"{source} may hold only printable ASCII characters, no spaces "
            "(make one with: openssl rand -hex 16)"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(
            f"{source} is {len(token)} characters long; the admin API needs at least "
            f"{MIN_TOKEN_LENGTH} (make one with: openssl rand -hex 16)"
        )
    return token


def read_token(environ: Mapping[str, str]) -> str:
    """The admin token: the contents of the file ``XCE_ADMIN_TOKEN_FILE`` names
    (without the white space around it), else ``XCE_ADMIN_TOKEN``; checked by
    ``check_token``.

    Raises:
        ConfigError: both are set, neither is, the file cannot be used
            (``xce_kit.auth.read_secret_file``: missing, not a regular file, empty,
            too large), or the token is refused by ``check_token``.
    """
    file = environ.get(TOKEN_FILE_ENV)
    if file and environ.get(TOKEN_ENV):
        raise ConfigError(f"set {TOKEN_ENV} or {TOKEN_FILE_ENV}, not both")
    if not file:
        return check_token(environ.get(TOKEN_ENV, ""))
    try:
        data = read_secret_file(TOKEN_FILE_ENV, file)
    except CredentialsError as exc:
        raise ConfigError(str(exc)) from None
    token = data.decode("ascii", "replace").strip()
    return check_token(token, f"the token in {TOKEN_FILE_ENV}={file}")


@dataclass(frozen=True)
class AdminSettings:
    """The admin server's configuration.

    Attributes:
        token: the bearer token of the protected endpoints (``read_token``).
        redis_url: Redis URL.
        nats_url: NATS URL(s).
        recordings_dir: the recorder's recordings directory (shared with it).
        command_timeout_s: how long a recorder command may take, s.
        max_round_age_s: the core counts as scheduling while its last round is at
            most this old, s (``--max-round-age``, ``XCE_MAX_ROUND_AGE``); past it
            ``/health`` answers 503 and ``xceadmin scheduler status`` exits 4.
        max_body_bytes: the largest request body taken, bytes; a larger one is
            answered 413 (``--max-body-bytes``).

    Raises:
        ConfigError: a token ``check_token`` refuses, a timeout, an age or a body
            limit of 0 or less, a Redis URL that is not one.
    """

    token: str
    redis_url: str = DEFAULT_REDIS_URL
    nats_url: str = DEFAULT_NATS_URL
    recordings_dir: Path = Path("recordings")
    command_timeout_s: float = 60.0
    max_round_age_s: float = MAX_ROUND_AGE_S
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    def __post_init__(self) -> None:
        check_token(self.token, "the admin token")
        if self.command_timeout_s <= 0:
            raise ConfigError(f"command timeout must be positive, not {self.command_timeout_s}")
        if not (math.isfinite(self.max_round_age_s) and self.max_round_age_s > 0):
            raise ConfigError(
                f"--max-round-age must be a positive number of seconds, not {self.max_round_age_s}"
            )
        if self.max_body_bytes < 1:
            raise ConfigError(f"--max-body-bytes must be 1 or more, not {self.max_body_bytes}")
        try:
            redis_url(self.redis_url)
        except ArgumentTypeError as exc:
            raise ConfigError(f"--redis: {exc}") from None
