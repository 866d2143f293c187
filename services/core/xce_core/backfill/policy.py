"""Backfill policies as small objects, registered by name (DESIGN "Time-aware
scheduling"; flux-sched's qmanager queue policies).

Order and policy are separate: the picker decides the order in which pending jobs
are tried; the policy decides what a job that does not fit does to the jobs behind
it. A policy is a ``Policy``: how many blocked jobs a round reserves for (its
*reservation depth*), whether a blocked job holds back every later one (``strict``),
whether a plain job's reservation is a count of slots (``backfill.profile``) rather
than named hosts, whether jobs that pend for room may be parked between rounds, and
its parameters. The five built-ins are five factories of it; a third party registers
more under the entry-point group ``xce.backfill_policies`` (``xce_driver.plugins``),
each entry point naming a ``BackfillFactory``. The wire carries a policy's name, a
hybrid's ``reservation_depth`` and ``backfill_params``; the factory checks them.

A policy is global (``SchedulerConfig.backfill``) with a per-queue override
(``QueueSpec.backfill``); a queue that overrides counts its own depth (its
*domain*), the others share the global one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, cast

from xce_core.errors import ConfigError

if TYPE_CHECKING:  # (the state holds the policies: no import loop)
    from xce_core.state import ClusterState, Queue

#: A policy's parameters as the wire carries them (``backfill_params``); values are
#: read as objects (``bool | int`` is ``int`` to the compiled core).
Params = Mapping[str, object]

#: The depth of a policy that reserves for every blocked job.
ALL = 1 << 62


@dataclass(frozen=True, slots=True)
class Policy:
    """A job's backfill policy.

    Attributes:
        name: its registered name (``greedy``, ``easy``, ...).
        depth: how many blocked jobs of its domain get a reservation in a round (0:
            none, first fit; ``ALL``: every one).
        domain: the domain that depth is counted in: the queue that overrides, or
            None (the scheduler's).
        blocks: a blocked job holds back every later job of its domain (they pend
            ``ORDER_BLOCKED``): head-of-line blocking.
        on_counts: a plain job's reservation is a count of slots over its window on
            the free profile, its hosts chosen when it starts; else it names hosts.
        parks: jobs of its domain that pend for too few free slots, or for room
            reserved for others, may be parked between rounds (incremental rounds)
            instead of being offered every round.
        compress: with ``on_counts``, Mu'alem and Feitelson's compression: every
            reservation stands in the profile while the others are planned, so a
            reservation moves earlier only into room nobody was promised, and never
            later (with exact run limits); without it, the reservations are planned
            afresh each round in queue order.
    """

    name: str
    depth: int
    domain: str | None = None
    blocks: bool = False
    on_counts: bool = False
    parks: bool = True
    compress: bool = False

    @property
    def reserves(self) -> bool:
        """Whether its blocked jobs get reservations or hold back later jobs (a round
        of it needs a reservation book)."""
        return self.depth > 0 or self.blocks


class BackfillFactory(Protocol):
    """Makes a policy from its configuration (the registry's entry).

    Args:
        depth: the configuration's ``reservation_depth`` (None: not given).
        params: its ``backfill_params``.

    Raises:
        ConfigError: a depth or a parameter the policy does not take, or lacks,
            named in one line.
    """

    def __call__(self, depth: int | None, params: Params) -> Policy: ...


def check_params(name: str, params: Params, known: tuple[str, ...] = ()) -> None:
    """Refuse a parameter ``name``'s policy does not take.

    Raises:
        ConfigError: naming the parameter and the ones it takes.
    """
    for key in params:
        if key not in known:
            takes = ", ".join(known) if known else "none"
            raise ConfigError(
                f"backfill policy {name!r} takes no parameter {key!r} (it takes: {takes})"
            )


def _no_depth(name: str, depth: int | None) -> None:
    if depth is not None:
        raise ConfigError(f"backfill policy {name!r} takes no reservation_depth")


def _compress(name: str, params: Params) -> bool:
    check_params(name, params, ("compress",))
    if "compress" not in params:
        return False
    # (An object, and no default: ``bool | int`` is ``int`` to the compiled core,
    # which would make a default False, or a value True, a number.)
    value: object = params["compress"]
    if not isinstance(value, bool):
        raise ConfigError(f"backfill policy {name!r}: compress is true or false")
    return value


def greedy(depth: int | None, params: Params) -> Policy:
    """``greedy``: every job that fits starts, in order (first fit; no reservation)."""
    _no_depth("greedy", depth)
    check_params("greedy", params)
    return Policy("greedy", 0)


def strict(depth: int | None, params: Params) -> Policy:
    """``strict``: no job starts after one that does not fit (head-of-line blocking;
    flux-sched's ``fcfs``); the blocked job reserves, and its followers are parked
    behind it, not by slots."""
    _no_depth("strict", depth)
    check_params("strict", params)
    return Policy("strict", 1, blocks=True, parks=False)


def easy(depth: int | None, params: Params) -> Policy:
    """``easy``: the first job that does not fit gets a reservation naming hosts
    (busy-now hosts first: the textbook's extra slots); later jobs start only when
    they do not delay it (Lifka 1995)."""
    _no_depth("easy", depth)
    check_params("easy", params)
    return Policy("easy", 1)


def hybrid(depth: int | None, params: Params) -> Policy:
    """``hybrid``: the first ``reservation_depth`` jobs that do not fit get
    reservations, on counts; parameter ``compress``."""
    if depth is None or depth < 1:
        raise ConfigError("backfill hybrid needs a reservation_depth (1 or more)")
    compress = _compress("hybrid", params)
    # (Under compression a reservation must be planned again each round, at its
    # job's turn: its jobs are not parked.)
    return Policy("hybrid", depth, on_counts=True, parks=not compress, compress=compress)


def conservative(depth: int | None, params: Params) -> Policy:
    """``conservative``: every job that does not fit gets a reservation, on counts
    (Mu'alem and Feitelson 2001); parameter ``compress``. Its jobs are not parked:
    each is planned every round."""
    _no_depth("conservative", depth)
    compress = _compress("conservative", params)
    return Policy("conservative", ALL, on_counts=True, parks=False, compress=compress)


#: The built-in policies by name (``xce_core.in_tree``).
BUILT_IN: dict[str, BackfillFactory] = {
    "greedy": greedy,
    "strict": strict,
    "easy": easy,
    "hybrid": hybrid,
    "conservative": conservative,
}

#: The policy of a core that has no configuration yet.
GREEDY = Policy("greedy", 0)


def make_policy(factory: BackfillFactory, name: str, depth: int | None, params: Params) -> Policy:
    """The policy a registered ``factory`` makes of a configuration's depth and
    parameters, named ``name`` (its registered name, whatever the factory called it).
    A third party's factory that fails is a configuration error like any other, in
    one line: it never reaches the core's caller as a traceback.

    Raises:
        ConfigError: the factory refused the depth or parameters, failed, or made
            something that is not a ``Policy``.
    """
    try:
        # (Called as returning an object, so that what a third party's factory
        # returns is checked below, compiled or not: mypyc checks a declared type.)
        policy = cast(Callable[[int | None, Params], object], factory)(depth, params)
    except ConfigError:
        raise
    except Exception as exc:  # a plugin's bug, named plainly
        raise ConfigError(
            f"backfill policy {name!r} cannot be made: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(policy, Policy):
        raise ConfigError(
            f"backfill policy {name!r} cannot be made: its factory returned "
            f"{type(policy).__name__}, not a Policy"
        )
    return policy if policy.name == name else replace(policy, name=name)


def in_domain(policy: Policy, domain: str | None) -> Policy:
    """``policy`` counting its depth in ``domain`` (a queue's name, or None)."""
    return policy if policy.domain == domain else replace(policy, domain=domain)


def policy_of(state: ClusterState, queue: Queue) -> Policy:
    """The backfill policy of ``queue``'s jobs: the queue's own, else the scheduler's
    (as the core resolved them from the configuration: ``ClusterState.policies``)."""
    policies = state.policies
    return policies.get(queue.name if queue.backfill is not None else None, GREEDY)


def backfills(state: ClusterState) -> bool:
    """Whether a session on ``state`` needs a book: some queue's policy is other
    than ``greedy`` (it reserves), or room may be owed (a preemption is in flight,
    or a job suspended by a preemption waits to be resumed: ``owe_preemptors``,
    ``owe_resumes``), under every policy. Else none: first fit, as the first
    release did."""
    if state.preemptions or state.to_resume:
        return True
    return any(policy.reserves for policy in state.policies.values())
