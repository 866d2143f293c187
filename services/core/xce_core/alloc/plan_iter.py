"""Lazy allocation-plan iterators (``xce_alloc_plan_iter_t``, Req 2).

``SinglePlanIter`` is the trivial iterator of ``seqjob`` (one plan, 1 host × 1 slot,
also named ``SeqPlanIter``) and of a ``span[]`` that allows one shape only.
``ParPlanIter`` is the combinatorial iterator of ``parjob`` (Req 4 AC 1): for N tasks,
1 host × N, 2 hosts × ⌈N/2⌉, …, N hosts × 1, one plan per distinct ⌈N/k⌉ (k hosts ×
⌈N/k⌉ fills only ⌈N/⌈N/k⌉⌉ hosts, so two values of k with the same ⌈N/k⌉ describe the
same allocation), then the packed plan: the tasks wherever the free slots are, as LSF
places a job without ``span[]``, which fits whenever the free slots add up to N.
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

    The sequence: for each distinct m = ⌈N/k⌉, k = 1 … N, from m = N down to 1, the
    plan ⌈N/m⌉ hosts × m (the last host takes the rest); then, for N > 1, the packed
    plan ``AllocPlan(1, N, N, packed=True)``, which takes the free slots where they
    are (it fits whenever the free slots add up to N, so no job without ``span[]``
    pends for the shape of its plans). Each ``next()`` computes one plan from the
    last one in O(1): from m, the next distinct value is ⌈N/k⌉ at the first k with
    ⌈N/k⌉ < m, k = ⌈N/(m − 1)⌉. At most ~2√N + 1 plans are made for N tasks.

    With ``largest_share`` (the most free slots any host has), the plans of more
    slots per host are not made: no host could take their first share, so none of
    them could fit, and the first plan made is the largest m ≤ ``largest_share`` of
    the sequence, ⌈N/⌈N/largest_share⌉⌉. The rest of the sequence is the same.

    Raises:
        ValueError: ``tasks`` < 1.
    """

    __slots__ = ("_largest", "_per_host", "_tasks")

    def __init__(self, tasks: int, largest_share: int | None = None) -> None:
        if tasks < 1:
            raise ValueError(f"a plan needs at least one task, not {tasks}")
        self._tasks = tasks
        self._largest = tasks if largest_share is None else max(1, min(largest_share, tasks))
        # Slots per host of the last plan made: 0 before the first, then N … 1;
        # -1 once the packed plan was made (or none is left).
        self._per_host = 0

    def next(self) -> AllocPlan | None:
        """The next distinct plan, or None once all were produced (stable)."""
        tasks, last = self._tasks, self._per_host
        if last > 1:
            # ⌈N/k⌉ ≤ m − 1 ⟺ k ≥ N/(m − 1): jump straight to that k.
            per_host = -(-tasks // -(-tasks // (last - 1)))
        elif last == 0:
            per_host = -(-tasks // -(-tasks // self._largest))
        elif last == 1 and tasks > 1:
            self._per_host = -1
            return AllocPlan(1, tasks, tasks, packed=True)
        else:
            self._per_host = -1
            return None
        self._per_host = per_host
        return AllocPlan(-(-tasks // per_host), per_host, tasks)

    def close(self) -> None:
        """Nothing to release; further ``next()`` calls return None."""
        self._per_host = -1


#: The seqjob plan iterator is the single-plan iterator of 1 host × 1 slot.
SeqPlanIter = SinglePlanIter

_seq: type[AllocPlanIter] = SinglePlanIter
_par: type[AllocPlanIter] = ParPlanIter
