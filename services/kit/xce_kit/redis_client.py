"""Redis clients of the live services, authenticated from the environment.

A Redis URL names where Redis is, never who the service is: a URL that carries a
password (``redis://:secret@host``) is refused where it is given (``check_redis_url``,
used by the ``--redis`` option type), since a command line shows in process lists;
the user and password come from ``XCE_REDIS_USERNAME`` and
``XCE_REDIS_PASSWORD_FILE`` (``xce_kit.auth``).
"""

from __future__ import annotations

import re
from typing import Any

import redis.asyncio as aioredis

from xce_kit.auth import (
    REDIS_PASSWORD_FILE_VAR,
    REDIS_USERNAME_VAR,
    CredentialsError,
    redis_credentials,
)

#: A URL whose user part holds a password (``scheme://user:password@``), read from the
#: text itself: a URL that does not parse may still carry one.
_PASSWORD_IN_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@]*:[^/?#@]*@")


def check_redis_url(url: str) -> str:
    """``url``, when it carries no password.

    Raises:
        xce_kit.auth.CredentialsError: it carries one (the message does not repeat it).
    """
    if _PASSWORD_IN_USERINFO.match(url) or "password=" in url.partition("?")[2]:
        raise CredentialsError(
            f"a Redis URL must not carry a password (it would show in process lists): "
            f"put it in a file named by {REDIS_PASSWORD_FILE_VAR} "
            f"(and the user in {REDIS_USERNAME_VAR})"
        )
    return url


def redis_from_url(url: str, **kwargs: Any) -> aioredis.Redis:
    """An asyncio Redis client of ``url`` that authenticates with the credentials the
    environment names (``xce_kit.auth.redis_credentials``); ``kwargs`` go to
    ``redis.asyncio.Redis.from_url`` (timeouts, retries).

    Raises:
        xce_kit.auth.CredentialsError: ``url`` carries a password
            (``check_redis_url``), or the password file cannot be read.
    """
    credentials = redis_credentials()
    options: dict[str, Any] = dict(kwargs)
    if credentials.password is not None:
        options["password"] = credentials.password
        if credentials.username is not None:
            options["username"] = credentials.username
    return aioredis.Redis.from_url(check_redis_url(url), **options)
