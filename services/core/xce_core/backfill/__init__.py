"""Backfill: for which blocked jobs a session reserves room, when, and the room it
holds for them while it goes on (DESIGN "Time-aware scheduling").

* ``policy``: the policies, small objects registered by name;
* ``book``: one session's reservations and the free room they hold now;
* ``profile``: free slots over time, on which reservations on counts are planned.
"""

from xce_core.backfill.book import (
    PlanMemo,
    ReservationBook,
    backfills,
    expected_end,
    policy_of,
    run_limit_ns,
)
from xce_core.backfill.policy import BackfillFactory, Policy
from xce_core.backfill.profile import FreeProfile

__all__ = [
    "BackfillFactory",
    "FreeProfile",
    "PlanMemo",
    "Policy",
    "ReservationBook",
    "backfills",
    "expected_end",
    "policy_of",
    "run_limit_ns",
]
