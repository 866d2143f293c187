"""The core's only clock: virtual time from two bases and a rational speed (Req 10 AC 3).

``now() = virtual_base + (monotonic_ns() - real_base) * speed``

| mode | virtual_base | real_base | speed | now() |
|---|---|---|---|---|
| discrete simulation | each event's ts | (unused) | 0 | frozen at the last event's ts |
| real-time replay | snapshot ts | wall at load | 1 | tracks the wall clock |
| fast / slow replay | snapshot ts | wall at load | N or 1/N | N× faster or slower |
| live | epoch ns at start | monotonic at start | 1 | wall-clock time |

This module is the only place in ``xce_core`` that reads a system clock; a layering
test enforces it. The three fields change together: they are held in one tuple that
is replaced whole, so a reader never sees half an update.
"""

from __future__ import annotations

import time
from fractions import Fraction


class Clock:
    """The virtual clock of the core, in integer nanoseconds.

    Args:
        virtual_base: virtual-time anchor, ns.
        speed: virtual ns per real ns; 0 (the default) freezes time between events,
            the discrete event-driven clock of simulation (Req 10 AC 12).

    Raises:
        ValueError: a negative base or speed.
    """

    __slots__ = ("_anchor",)

    def __init__(self, virtual_base: int = 0, speed: Fraction | int = 0) -> None:
        self._anchor: tuple[int, int, Fraction] = (0, 0, Fraction(0))
        self.set(virtual_base, speed)

    @classmethod
    def realtime(cls) -> Clock:
        """A clock that reads wall-clock time (epoch ns) at speed 1: live mode."""
        return cls(time.time_ns(), 1)

    @property
    def speed(self) -> Fraction:
        """Virtual ns per real ns (0: discrete)."""
        return self._anchor[2]

    def set(self, virtual_base: int, speed: Fraction | int | None = None) -> None:
        """Re-anchor: virtual time is ``virtual_base`` now, advancing at ``speed``.

        Args:
            virtual_base: ns.
            speed: new speed, or None to keep the current one.

        Raises:
            ValueError: a negative base or speed.
        """
        new_speed = self._anchor[2] if speed is None else Fraction(speed)
        if virtual_base < 0 or new_speed < 0:
            raise ValueError("clock base and speed must not be negative")
        self._anchor = (virtual_base, time.monotonic_ns(), new_speed)

    def now(self) -> int:
        """The current virtual time, ns."""
        virtual_base, real_base, speed = self._anchor
        if speed == 0:
            return virtual_base
        elapsed = time.monotonic_ns() - real_base
        return virtual_base + int(elapsed * speed)

    def observe(self, ts: int) -> None:
        """Tell the clock an event at ``ts`` (ns) arrived.

        A discrete clock (speed 0) jumps to ``ts``, never backwards; a running clock
        is left alone, since the driver owns its anchors.
        """
        virtual_base, real_base, speed = self._anchor
        if speed == 0 and ts > virtual_base:
            self._anchor = (ts, real_base, speed)
