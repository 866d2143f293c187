"""Why a connection or a bind failed, in the few words a one-line error ends with.

Client libraries wrap the operating system's error in their own (redis-py's
``ConnectionError("Error 111 connecting to ...")``, nats-py's ``NoServersError``);
an operator wants the cause, worded the same for every service:
``connection refused``, ``host name lookup failed (Name or service not known)``.
"""

from __future__ import annotations

import os
import socket
import ssl

#: How far ``root_reason`` follows a chain of errors looking for the OS error.
_CHAIN_DEPTH = 8


def reason(exc: BaseException) -> str:
    """Why ``exc`` happened, in a few words: ``connection refused``, ``address
    already in use``, ``host name lookup failed (...)``, ``no answer in time``; else
    the error's own text (its class name when it has none)."""
    if isinstance(exc, socket.gaierror):
        return f"host name lookup failed ({exc.strerror})"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.errno:
        try:
            text = os.strerror(exc.errno)
        except ValueError:
            text = ""
        if text and not text.startswith("Unknown error"):
            return text[:1].lower() + text[1:]
    return str(exc) or type(exc).__name__


def root_reason(exc: BaseException) -> str:
    """``reason`` of the OS error behind ``exc`` (a client library's error raised
    from it or while handling it, ``from None`` not), else of ``exc`` itself."""
    seen: BaseException | None = exc
    for _ in range(_CHAIN_DEPTH):
        if seen is None:
            break
        if isinstance(seen, OSError):
            return reason(seen)
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return reason(exc)


#: The server's first refusal of a publish or subscription in this process
#: (``connect_nats`` notes it): a service started with another service's key sees it
#: once, then only a request that gets no answer in time. A process runs one service,
#: so one slot; ``run_service`` clears it at start and adds it to the error it stops
#: with.
_denials: list[str] = []


def note_denial(text: str) -> None:
    """Keep ``text`` (one line naming the refused subject) unless one is kept."""
    if not _denials:
        _denials.append(text)


def take_denial() -> str | None:
    """The refusal ``note_denial`` kept (None: none), forgetting it."""
    return _denials.pop() if _denials else None
