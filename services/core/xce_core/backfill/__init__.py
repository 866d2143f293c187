"""Backfill: for which blocked jobs a session reserves room, when, and the room it
holds for them while it goes on (DESIGN "Time-aware scheduling").

* ``policy``: the policies, small objects registered by name, and whose each job's is;
* ``book``: one session's reservations and the free room they hold now;
* ``profile``: free slots over time, on which reservations on counts are planned;
* ``owed``: room owed to a preemptor and to a resumed job;
* ``memo``: what one session's planning leaves the next to reuse;
* ``times``: run limits and expected ends as backfilling counts them.
"""

from xce_core.backfill.book import ReservationBook
from xce_core.backfill.memo import PlanMemo
from xce_core.backfill.owed import owe_preemptors, owe_resumes
from xce_core.backfill.policy import BackfillFactory, Policy, backfills, policy_of
from xce_core.backfill.profile import FreeProfile
from xce_core.backfill.times import expected_end, run_limit_ns

__all__ = [
    "BackfillFactory",
    "FreeProfile",
    "PlanMemo",
    "Policy",
    "ReservationBook",
    "backfills",
    "expected_end",
    "owe_preemptors",
    "owe_resumes",
    "policy_of",
    "run_limit_ns",
]
