"""The checks a request passes before anything reads its body: the bearer token of
the endpoints that need one, then the size of the body.

FastAPI reads and parses a request's body before it runs the endpoint's
dependencies, so a token checked only by a dependency lets anyone make the server
read and parse a body of any size. ``RequestGuard`` is a pure ASGI middleware that
looks at the request line and headers alone: a path with a control character is
answered 400; an endpoint that declares ``require_token`` gets 401 without the
token before a byte of its body is read; and a body larger than the limit gets 413
(at once when ``Content-Length`` says so, else as soon as the bytes read pass it,
for a chunked body).

FastAPI's own ``max_body_size`` is not used: it wraps the whole application outside
the user middleware, so it would turn this guard's 401 for an oversized request
into a 413, and it answers an oversized ``Content-Length`` only once the endpoint
has run, after an endpoint that ignores its body (``record/stop``) has acted.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from typing import Annotated

from fastapi import Depends, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Why a request without the token is refused.
NO_TOKEN = "this endpoint needs 'Authorization: Bearer <XCE_ADMIN_TOKEN>'"
#: Why a request with another token is refused.
WRONG_TOKEN = "wrong token"
#: The header a 401 carries (RFC 6750).
CHALLENGE = {"WWW-Authenticate": "Bearer"}


def bearer_problem(authorization: bytes | None, token: bytes) -> str | None:
    """Why the ``Authorization`` header value ``authorization`` (raw bytes; None:
    no header) does not carry ``token``, in one line; None when it does. The
    comparison takes the same time wherever the two first differ."""
    scheme, _, given = (authorization or b"").partition(b" ")
    given = given.strip()
    if scheme.lower() != b"bearer" or not given:
        return NO_TOKEN
    if not hmac.compare_digest(given, token):
        return WRONG_TOKEN
    return None


#: The security scheme the OpenAPI document shows on the endpoints that need the token.
_bearer = HTTPBearer(
    auto_error=False,
    description="XCE_ADMIN_TOKEN, the admin server's token: Authorization: Bearer <token>.",
)


def require_token(
    request: Request,
    _shown: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """The dependency that marks an endpoint as needing the token: ``RequestGuard``
    checks it before the body is read, and this checks it again (so the endpoint
    stays protected if the app is ever served without the guard). It reads the
    token from ``request.app.state.settings``; ``_shown`` only puts the bearer
    scheme in the OpenAPI document.

    Raises:
        HTTPException: 401, naming what is missing or wrong.
    """
    raw = request.headers.get("authorization")
    # Starlette decodes headers as Latin-1: encoding back gives the bytes sent.
    given = None if raw is None else raw.encode("latin-1")
    problem = bearer_problem(given, request.app.state.settings.token.encode())
    if problem is not None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, problem, headers=CHALLENGE)


class BodyTooLarge(HTTPException):
    """A request body past the limit (413). Raised from the guard's ``receive``
    while the endpoint reads the body; FastAPI passes an ``HTTPException`` met
    while reading a body through untouched, so it is answered as one."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413,  # Content Too Large (RFC 9110); older Starlettes name it otherwise
            f"request body larger than {limit} bytes (the admin server's --max-body-bytes)",
        )


#: A control character (C0, DEL): no path of the API holds one.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _needs_token(route: BaseRoute) -> bool:
    return any(d.dependency is require_token for d in getattr(route, "dependencies", ()))


def _content_length(headers: Headers) -> int | None:
    """The ``Content-Length`` header's value (None: none, or not a number: the HTTP
    server refuses those itself)."""
    text = headers.get("content-length")
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _error(code: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, code, headers)


class RequestGuard:
    """Token first, then body size, before the application sees the request (see
    the module docstring).

    Args:
        app: the application inside.
        routes: the application's routes; those that depend on ``require_token``
            (declared on the route or on its ``APIRouter``) need the token.
        token: the token, as it is sent.
        max_body_bytes: the largest body taken, bytes.
    """

    def __init__(
        self, app: ASGIApp, *, routes: Sequence[BaseRoute], token: str, max_body_bytes: int
    ) -> None:
        self.app = app
        self.routes = routes
        self.token = token.encode()
        self.max_body_bytes = max_body_bytes

    def _route(self, scope: Scope) -> BaseRoute | None:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return route
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = self._route(scope)
        refusal = self._refusal(scope, route)
        if refusal is None:
            await self.app(scope, self._limited(receive), send)
            return
        if route is not None:
            scope["route"] = route  # so the request metrics name the endpoint
        # Answered without calling ``receive``: the body stays unread.
        await refusal(scope, receive, send)

    def _refusal(self, scope: Scope, route: BaseRoute | None) -> JSONResponse | None:
        """The answer a request gets from its request line and headers alone (400, 401
        or 413, a one-line ``{"detail": ...}``), or None to let it in."""
        headers = Headers(scope=scope)
        if _CONTROL.search(scope["path"]):
            # Starlette matches routes with "$", which lets a final "\n" through and
            # drops it: ``/scheduler/recordings/a.jsonl%0A`` would name ``a.jsonl``.
            return _error(status.HTTP_400_BAD_REQUEST, "the path holds a control character")
        if route is not None and _needs_token(route):
            raw = headers.get("authorization")
            problem = bearer_problem(None if raw is None else raw.encode("latin-1"), self.token)
            if problem is not None:
                return _error(status.HTTP_401_UNAUTHORIZED, problem, CHALLENGE)
        length = _content_length(headers)
        if length is not None and length > self.max_body_bytes:
            too_large = BodyTooLarge(self.max_body_bytes)
            return _error(too_large.status_code, too_large.detail)
        return None

    def _limited(self, receive: Receive) -> Receive:
        """``receive`` that raises ``BodyTooLarge`` once the body read passes the
        limit (a chunked body has no ``Content-Length`` to check first)."""
        limit = self.max_body_bytes
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        return limited
