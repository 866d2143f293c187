"""``lowest_priority_first``: the default preemption policy (Req 6 AC 3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xce_core.plugins import CoreView, JobInfo, PreemptTrial


class LowestPriorityFirst:
    """Victims by job priority ascending, ties by most recently started first (the
    job that loses least work), then by jobid.

    Victims are taken in that rank until the preemptor fits (the shortest prefix of
    the ranking that fits, found by bisection); then every victim the
    preemptor can do without is given back, the last taken first, so the set is
    minimal: no victim can be spared (given that freeing more never makes a job fit
    less). Every step is a trial on a copy of the allocation state.
    """

    name: ClassVar[str] = "lowest_priority_first"

    def __init__(self, view: CoreView) -> None:
        self.view = view

    def select_victims(
        self, preemptor: JobInfo, candidates: Sequence[JobInfo], trial: PreemptTrial
    ) -> Sequence[int]:
        """The victims to suspend for ``preemptor``, or () when no set suffices.

        ``candidates`` obey the core's safety rules already; see ``PreemptPolicy``.
        """
        ranked = sorted(candidates, key=lambda job: (job.priority, -job.start_ts, job.jobid))
        everyone = [job.jobid for job in ranked]
        if not trial.fits(everyone):
            return ()  # Req 6 AC 5: no sufficient set exists
        # The shortest prefix of the ranking that fits, by bisection: a longer
        # prefix frees more, so fitting is monotone in the prefix length.
        low, high = 1, len(everyone)
        while low < high:
            self.view.check_cancel()
            middle = (low + high) // 2
            if trial.fits(everyone[:middle]):
                high = middle
            else:
                low = middle + 1
        chosen = everyone[:low]
        # The last one taken is needed (the prefix without it does not fit); any
        # earlier one the preemptor can do without is given back.
        for jobid in reversed(chosen[:-1]):
            self.view.check_cancel()
            fewer = [other for other in chosen if other != jobid]
            if trial.fits(fewer):
                chosen = fewer
        return tuple(chosen)
