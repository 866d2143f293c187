"""Errors the core raises. Each names what was wrong; none leaves state half-changed."""

from __future__ import annotations


class CoreError(Exception):
    """Base of the errors the scheduling core raises on bad input or plugin bugs."""


class EventError(CoreError, ValueError):
    """A malformed or inconsistent event, rejected before any state changed.

    The message names the event type and the offending field, e.g.
    ``JOBS_PUSH rejected: payload.jobs[0].queue: unknown queue 'nosuch'``
    (DESIGN invariant 5).
    """


class ConfigError(EventError):
    """A configuration that cannot be applied, e.g. an unknown plugin name.

    Raised instead of falling back silently (Req 1 AC 6, Req 5 AC 5); the message
    lists the known names. It is an ``EventError``: a configuration event naming an
    unknown plugin is rejected like any other bad event, nothing changed.
    """


class PluginError(CoreError, RuntimeError):
    """A plugin broke its contract (e.g. a picker returned a job that is not pending)."""


class SessionCancelled(CoreError):
    """Raised at a cancellation point when the current session has been cancelled.

    The core catches it in the session loop; plugins let it propagate.
    """
