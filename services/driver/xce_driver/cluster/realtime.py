"""The wall clock moving an agenda: the live emulator's time (SimPy's
``RealtimeEnvironment``, on an asyncio event loop).

The simulation runs its agenda as fast as it can (``Agenda.run``): time jumps to
the next entry. Live, an entry is stepped when the wall clock gets to its time,
scaled by ``speed``: a timer on the event loop wakes the agenda at its next entry,
and an input from outside (a decision off the bus) first brings the agenda up to
the wall clock's time, so it happens at that time, after everything due before it.
That is the only difference: what the entries do is the same.
"""

from __future__ import annotations

import asyncio
import math
import time

from xce_driver.cluster.agenda import Agenda
from xce_driver.cluster.jobs import NS


class WallClock:
    """Steps an agenda as the wall clock reaches its entries' times.

    Args:
        agenda: the agenda it moves; its ``now`` is where the wall clock starts.
        speed: agenda seconds per wall second, above 0 (100: a 100 s job runs 1 s).

    The timer it sets needs a running asyncio event loop (``arm``, ``advance``);
    none is needed to make one.

    Raises:
        ValueError: a speed that is not above 0.
    """

    def __init__(self, agenda: Agenda, speed: float) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be above 0, not {speed}")
        self._agenda = agenda
        self._speed = speed
        self._timer: asyncio.TimerHandle | None = None
        self._due = math.inf  # the agenda time the timer is set for
        self._wall0 = time.monotonic_ns()
        self._at0 = agenda.now

    def restart(self) -> None:
        """Start counting from now: the wall clock's now is the agenda's ``now``."""
        self._wall0 = time.monotonic_ns()
        self._at0 = self._agenda.now

    def now(self) -> int:
        """The agenda time of the wall clock now, ns."""
        return self._at0 + int((time.monotonic_ns() - self._wall0) * self._speed)

    def advance(self) -> int:
        """Step every entry due by the wall clock's time (at it too), leave the
        agenda's ``now`` there, and set the timer for the next entry; an input from
        outside calls it first, then happens at the returned time, ns."""
        agenda = self._agenda
        # ``run`` stops before its bound: one ns past now steps what is due now.
        agenda.run(until=max(self.now(), agenda.now) + 1)
        self.arm()
        return agenda.now

    def arm(self) -> None:
        """Set the timer for the agenda's next entry (none when it is empty); call
        it after scheduling from outside the agenda's own entries, whose new entry
        may come first."""
        due = self._agenda.peek()
        if due == self._due:
            return
        self.stop()
        if due == math.inf:
            return
        self._due = due
        delay_s = max(0.0, (due - self.now()) / self._speed / NS)
        self._timer = asyncio.get_running_loop().call_later(delay_s, self._wake)

    def stop(self) -> None:
        """Cancel the timer: nothing more is stepped until ``arm`` or ``advance``."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due = math.inf

    def _wake(self) -> None:
        # The timer fired: it is spent (a timer a little early steps nothing and
        # is set again for the same entry).
        self._timer = None
        self._due = math.inf
        self.advance()
