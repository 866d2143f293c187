"""Lazy allocation-plan iterators (``xce_alloc_plan_iter_t``, Req 2).

``SinglePlanIter`` is the trivial iterator of ``seqjob`` (one plan, 1 host × 1 slot,
also named ``SeqPlanIter``) and of a ``span[]`` that allows one shape only.
``ParPlanIter`` is the combinatorial iterator of ``parjob`` (Req 4 AC 1): for N tasks,
1 host × N, 2 hosts × ⌈N/2⌉, …, N hosts × 1, skipping a plan whose allocation is no
different from an earlier one (k hosts × ⌈N/k⌉ uses only ⌈N/⌈N/k⌉⌉ hosts, so two
values of k with the same ⌈N/k⌉ describe the same allocation).
"""

from __future__ import annotations

from xce_core.plugins import AllocPlan, AllocPlanIter

#: seqjob's plan: 1 host × 1 slot.
ONE_BY_ONE = AllocPlan(1, 1, 1)


class SinglePlanIter:
    """An iterator of exactly one plan: seqjob's 1 host × 1 slot (Req 2, seqjob
    rewrap), or the one shape a ``span[]`` section allows."""

    __slots__ = ("_done", "_plan")

    def __init__(self, plan: AllocPlan = ONE_BY_ONE) -> None:
        self._plan = plan
        self._done = False

    def next(self) -> AllocPlan | None:
        """The plan the first time, None ever after."""
        if self._done:
            return None
        self._done = True
        return self._plan

    def close(self) -> None:
        """Nothing to release; further ``next()`` calls return None."""
        self._done = True


class ParPlanIter:
    """Plans for ``tasks`` slots, fewest hosts first (Req 4 AC 1, Req 2 AC 2-5).

    Each ``next()`` computes one plan from the last one and nothing else, so at most
    ~2√N plans are ever made for N tasks, one per call.

    Raises:
        ValueError: ``tasks`` < 1.
    """

    __slots__ = ("_k", "_last_per_host", "_tasks")

    def __init__(self, tasks: int) -> None:
        if tasks < 1:
            raise ValueError(f"a plan needs at least one task, not {tasks}")
        self._tasks = tasks
        self._k = 0  # hosts asked for by the last plan tried
        self._last_per_host = 0

    def next(self) -> AllocPlan | None:
        """The next distinct plan, or None once all were produced (stable)."""
        tasks = self._tasks
        while self._k < tasks:
            self._k += 1
            per_host = -(-tasks // self._k)  # ⌈N/k⌉
            if per_host == self._last_per_host:
                continue  # same allocation as the previous plan
            self._last_per_host = per_host
            return AllocPlan(-(-tasks // per_host), per_host, tasks)
        return None

    def close(self) -> None:
        """Nothing to release; further ``next()`` calls return None."""
        self._k = self._tasks


#: The seqjob plan iterator is the single-plan iterator of 1 host × 1 slot.
SeqPlanIter = SinglePlanIter

_seq: type[AllocPlanIter] = SinglePlanIter
_par: type[AllocPlanIter] = ParPlanIter
