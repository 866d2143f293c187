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
from urllib.parse import parse_qs

import redis.asyncio as aioredis
from redis.asyncio.connection import URL_QUERY_ARGUMENT_PARSERS
from redis.exceptions import AuthenticationError, ResponseError

from xce_kit.auth import (
    REDIS_PASSWORD_FILE_VAR,
    REDIS_USERNAME_VAR,
    CredentialsError,
    redis_credentials,
)

#: A URL whose user part holds a password (``scheme://user:password@``), read from the
#: text itself: a URL that does not parse may still carry one.
_PASSWORD_IN_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@]*:[^/?#@]*@")
#: Query keys that name who the service is (any case; ``ssl_password`` too).
_CREDENTIAL_KEY = re.compile(r"password|username", re.IGNORECASE)


def url_query_keys(url: str) -> list[str]:
    """The query keys of ``url`` as redis-py reads them: percent-decoded by
    ``urllib.parse.parse_qs`` (so ``pass%77ord`` is ``password``), blank values kept."""
    query = url.partition("?")[2].partition("#")[0]
    return list(parse_qs(query, keep_blank_values=True))


#: Query keys redis-py's asyncio client passes on as text: to every connection (its
#: name) and to a TLS one (``rediss://``: files and checks). With those it converts
#: (``URL_QUERY_ARGUMENT_PARSERS``), they are all it takes: any other key reaches the
#: connection's constructor and fails there with a ``TypeError`` traceback.
_TEXT_KEYS = frozenset({"client_name", "lib_name", "lib_version"})
_TLS_TEXT_KEYS = frozenset(
    {"ssl_keyfile", "ssl_certfile", "ssl_cert_reqs", "ssl_ca_certs", "ssl_ca_path", "ssl_ciphers"}
)


def unknown_query_keys(url: str) -> list[str]:
    """The query keys of ``url`` (``url_query_keys``) redis-py does not take: any but
    ``URL_QUERY_ARGUMENT_PARSERS``'s and the text ones above; ``ssl_*`` keys only on a
    ``rediss://`` URL (a plain connection refuses them)."""
    taken = set(URL_QUERY_ARGUMENT_PARSERS) | _TEXT_KEYS
    if url.partition("://")[0].lower() == "rediss":
        taken |= _TLS_TEXT_KEYS
    else:
        taken = {key for key in taken if not key.startswith("ssl_")}
    return [key for key in url_query_keys(url) if key not in taken]


def check_redis_url(url: str) -> str:
    """``url``, when it carries no password: none after the user name, and no
    query key holding ``password`` or ``username`` (any case, percent-encoded or not).

    Raises:
        xce_kit.auth.CredentialsError: it carries one (the message does not repeat it).
    """
    keys = url_query_keys(url)
    if _PASSWORD_IN_USERINFO.match(url) or any(_CREDENTIAL_KEY.search(key) for key in keys):
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


#: Redis error texts that mean the login or the user's rights were refused.
_REFUSED_PREFIXES = ("WRONGPASS", "NOAUTH", "NOPERM")
#: What a transaction (``pipeline(transaction=True)``) raises when MULTI was refused.
_MULTI_REFUSED = "EXEC without MULTI"


def redis_refusal(url: str, exc: BaseException) -> str | None:
    """One line saying Redis at ``url`` refused the service's login or a command to
    its user, naming the variables that choose who it is; None when ``exc`` is no
    such refusal (a refusal will not go away by trying again; an outage may)."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, AuthenticationError):
        what = "refused the login"
    elif isinstance(exc, ResponseError) and first.startswith(_REFUSED_PREFIXES):
        what = "refused a command" if first.startswith("NOPERM") else "refused the login"
    elif isinstance(exc, ResponseError) and first == _MULTI_REFUSED:
        # redis-py's transaction drops MULTI's NOPERM and reports only EXEC's error.
        what, first = "refused a command", "NOPERM: the user may not run MULTI"
    else:
        return None
    return (
        f"Redis at {url} {what} ({first}): check {REDIS_USERNAME_VAR}, "
        f"{REDIS_PASSWORD_FILE_VAR} and the user's rights (ACL)"
    )
