"""Garbage collection tuned for a batch run: a simulation or a replay.

CPython's cyclic collector runs a young collection every 700 net allocations of
containers, and, as objects survive those, full collections that scan every object
alive. A batch run keeps a large heap that lives to its end (the workload, the
core's jobs, the records it builds) and allocates in bursts (a session's
reservations and plans live till the next session), so full collections scan that
heap again and again: on whole SDSC-SP2 under ``easy``, 37 full collections took
3.9-4.2 s of a 27 s run (``gc.callbacks``), against 1.3 s for all collections with
the settings below. During the run, the objects alive when it starts are left out
of collection (``gc.freeze``) and young collections run every 20,000 allocations;
both are undone when it ends. Nothing is left uncollected: garbage in cycles is
collected later, not never.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Young collections every this many net container allocations (CPython: 700), and
#: each older generation after this many collections of the one below (CPython: 10).
_THRESHOLD = (20_000, 20, 20)


@contextmanager
def batch_gc() -> Iterator[None]:
    """Run the ``with`` body under the collector settings of a batch run (the
    module's docstring says why), and restore the process's settings after, even
    on an error. Not nested: an inner use ends the outer's freeze early (only a
    loss of speed)."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
