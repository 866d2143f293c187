"""Scratch state of one scheduling session (Kubernetes' ``CycleState``).

Made at ``BEGIN_ROUND``, dropped at ``end_session``; nothing in it outlives the round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xce_core.alloc.primary import Unsatisfied
from xce_core.errors import SessionCancelled
from xce_core.state import Job


class CancelToken:
    """Cooperative cancellation of a session (the Python form of ``pthread_cancel``).

    ``cancel()`` may be called from any thread, or from the decision callback; the
    session stops at its next cancellation point (``check()``).
    """

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        """Ask the session to stop at its next cancellation point."""
        self.cancelled = True

    def check(self) -> None:
        """A cancellation point.

        Raises:
            SessionCancelled: ``cancel()`` was called.
        """
        if self.cancelled:
            raise SessionCancelled


@dataclass(slots=True)
class SessionState:
    """One session's scratch data.

    Attributes:
        number: session count since the core started (1, 2, ...).
        start_ts: the session's ``BEGIN_ROUND`` ts, ns.
        from_s: allocation ``from``: ``start_ts // 10**9`` (alloc-equality Req 4).
        token: the session's cancel token.
        tried: jobs ``next_job`` returned this session (a picker may not repeat one).
        unsatisfiable: the session's unsatisfiable-request cache (Req 7): the outcome
            of every request that failed this session, by fingerprint ``(request
            identity, tasks, user, queue, project, priority)``; the request object
            covers select, rusage, span and the shape of compound and alternative
            requests; priority is None unless the queue preempts (it decides which
            victims a job may take).
        cache_hits: how many jobs the cache pended this session.
        queue_holds: per queue, why it dispatches nothing this session (inactive,
            outside its run windows) or None.
        candidates: the safe preemption candidates by (queue, job priority), until a
            preemption takes some of them.
    """

    number: int
    start_ts: int
    token: CancelToken = field(default_factory=CancelToken)
    tried: dict[int, None] = field(default_factory=dict)
    unsatisfiable: dict[tuple[int, int, str, str, str | None, int | None], Unsatisfied] = field(
        default_factory=dict
    )
    cache_hits: int = 0
    queue_holds: dict[str, Unsatisfied | None] = field(default_factory=dict)
    candidates: dict[tuple[str, int], list[Job]] = field(default_factory=dict)

    @property
    def from_s(self) -> int:
        """The session start in whole seconds (``BEGIN_ROUND ts // 10**9``)."""
        return self.start_ts // 1_000_000_000
