"""``SortedPicker``: a job picker that is an order (Req 8; issue 17).

Queues are served by priority, highest first. Queues of equal priority are served
together in one *lane*, as LSF does. Inside a lane, jobs go by job priority (highest
first), then by the picker's *order* (``SortedPicker.order``: a sort key of the job,
smallest first), then by job id (lowest first), so no two jobs ever tie. A picker
that only orders jobs is a subclass that writes ``order`` (as Kubernetes' QueueSort
plugin writes ``Less``): this class keeps the pending set, the per-queue routing,
the session cursor and incremental rounds. ``builtin_fcfs`` orders by queue time;
``pickers.orders`` holds the others.

An order that changes as jobs wait (``ages``: WFP3, UNICEP) is computed again for
every lane job once per session, at ``begin_session``, from the core's clock (never
per comparison): a session costs one pass and one sort over the pending jobs, and
within it the order stands still. An order that reads the queue's run limit
(``reads_queue``) is computed again for a queue's jobs when the queue changes.

A queue with a per-queue picker override (``job_pick_plugin``, Req 5 AC 2) is served
by a picker of that name that this picker creates and delegates to: at its priority
level the merged lane of the queues without an override comes first, then each
overridden queue in queue-name order.

All state is private and sorted (``sortedcontainers``); ``next_job`` never scans the
core's tables (Req 8 AC 3). ``begin_session`` resets the cursor; ``end_session`` and
``on_pend`` are no-ops, so a pended job keeps its place (Req 8 AC 6).

Incremental rounds (``plugins.ParkingPicker``): a lane job the core *parked* is kept
apart, grouped by the slots it waits for, and ``next_job`` passes over it while
``CoreView.wake_slots()`` is below that; one parked for reserved room is grouped by
whose reservations it pends for, then its slots, and passed over while
``CoreView.reserved_room()`` says it still pends so; one held back under ``strict``
is grouped by the policy domain it is parked behind, and passed over while
``CoreView.blocks()`` says an earlier job of that domain could not start. The walk
is a cursor over sorted keys, so a round costs the jobs it returns, not the jobs
that pend (DESIGN "Incremental rounds"). Parking rests on a job's own outcome, not
on its place, so a re-sorted lane keeps its parked jobs parked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mypy_extensions import mypyc_attr
from sortedcontainers import SortedDict, SortedList
from xce_schemas import JobState, SchedulerConfig

from xce_core.plugins import (
    CoreView,
    JobInfo,
    JobPicker,
    ParkingPicker,
    PickerBase,
    PickerConfig,
    QueueInfo,
)

#: A job's place in its lane: (-job priority, the picker's order of the job, jobid).
JobKey = tuple[int, Any, int]


@dataclass(slots=True)
class _Queue:
    """The picker's record of one queue."""

    priority: int
    override: JobPicker | None = None
    jobids: dict[int, None] = field(default_factory=dict)  # an ordered set


@dataclass(slots=True)
class _Level:
    """All queues of one priority: the merged lane and the overridden queues.

    The lane's keys are in ``lane`` unless parked; a parked key is in
    ``parked[slots]`` instead, ``slots`` being the free slots it waits for, or, when
    it pends for reserved room, in ``reserved[names][slots]``, and passed over
    while the reservations made start before ``until[names]``, or, when it is
    held back under ``strict``, in ``behind[domain]``, passed over while an earlier
    job of that policy domain could not start.
    """

    lane: SortedList = field(default_factory=SortedList)
    parked: SortedDict = field(default_factory=SortedDict)  # slots → SortedList of keys
    reserved: dict[int, SortedDict] = field(default_factory=dict)  # names → as ``parked``
    until: dict[int, int] = field(default_factory=dict)  # names → the least ``until``, ns
    behind: dict[int, SortedList] = field(default_factory=dict)  # domain number → keys
    overrides: SortedDict = field(default_factory=SortedDict)  # queue name → picker


# Orders are subclasses, also when the core is compiled (mypyc).
@mypyc_attr(allow_interpreted_subclasses=True)
class SortedPicker(PickerBase):
    """A picker that is an order: queues by priority, each lane by job priority,
    then ``order``, then job id, with per-queue overrides (Req 5 AC 2) and
    incremental rounds (``ParkingPicker``). A subclass sets ``name`` and writes
    ``order``; it registers as any picker does (``PluginRegistry``, or the entry
    point group ``xce.pickers``).

    Args:
        config: the factory's config; ``make_picker`` builds override pickers.
        view: the core's read-only view (the clock, queues, cancellation points).
    """

    name: ClassVar[str] = ""
    routes_queues: ClassVar[bool] = True
    #: The order changes as jobs wait: computed again once per session.
    ages: ClassVar[bool] = False
    #: The order reads the job's queue (its run limit): computed again for the
    #: queue's jobs when the queue changes.
    reads_queue: ClassVar[bool] = False

    def order(self, job: JobInfo, now: int) -> Any:
        """The job's sort key in its lane, smallest first (after job priority; job
        id breaks ties): any value the order's keys compare with, the same for the
        same job and ``now``. ``now`` is the core's clock (virtual time, ns) for an
        order that ``ages``, and 0 for one that does not (its keys must not change
        with time)."""
        raise NotImplementedError(f"picker {self.name!r} writes no order")

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        self._view = view
        self._make_picker = config.make_picker
        # Serving one queue as its override, it is that queue's picker: it makes none.
        self._serves = config.queue
        self._queues: dict[str, _Queue] = {}
        self._levels: SortedDict = SortedDict()  # -priority → _Level
        self._keys: dict[int, JobKey] = {}  # jobid → key, jobs in a lane
        self._jobs: dict[int, JobInfo] = {}  # jobid → job, every tracked job
        self._owner: dict[int, str] = {}  # jobid → queue name, every tracked job
        # jobid → (its slots, the names it pends for or None, the job it is parked
        # behind or None), parked lane jobs
        self._parked: dict[int, tuple[int, int | None, int | None]] = {}
        # A parked job just offered: it stays parked if the core parks it again
        # before the next offer, else it is unparked then.
        self._offered: int | None = None
        self._level_pos = 0
        self._lane = 0  # 0: the lane; i > 0: the (i-1)-th override
        self._cursor: JobKey | None = None  # the last key the lane walk returned
        self._exhausted = False
        self._overrides = 0  # queues served by an override picker
        self._config: SchedulerConfig | None = None  # the last ``on_config``

    # --- state-change hooks --------------------------------------------------------

    def on_config(self, config: SchedulerConfig) -> None:
        """Forward the configuration to the override pickers (and keep it for those
        made later)."""
        self._config = config
        for queue in self._queues.values():
            if queue.override is not None:
                queue.override.on_config(config)

    def on_queue_update(self, queue: QueueInfo) -> None:
        """Add or redefine a queue; its jobs move if its priority or override changed.

        Raises:
            ConfigError: the override names an unknown picker (nothing changes).
        """
        old = self._queues.get(queue.name)
        override_name = queue.job_pick_plugin if self._serves is None else None
        if old is not None and old.priority == queue.priority:
            old_name = None if old.override is None else old.override.name
            if old_name == override_name:
                if old.override is not None:
                    old.override.on_queue_update(queue)
                elif self.reads_queue:  # (its run limit may have changed)
                    for job in [self._jobs[jobid] for jobid in old.jobids]:
                        self._untrack(job.jobid)
                        self._track(job)
                return
        override = None
        if override_name is not None:
            override = self._make_picker(override_name, queue.name)
            if self._config is not None:
                override.on_config(self._config)  # (as the core does a new picker)
            override.on_queue_update(queue)
        moved = [] if old is None else [self._jobs[jobid] for jobid in old.jobids]
        for job in moved:
            self._untrack(job.jobid)
        if old is not None:
            self._drop_queue(queue.name, old)
        self._queues[queue.name] = _Queue(queue.priority, override)
        level = self._levels.get(-queue.priority)
        if level is None:
            level = self._levels[-queue.priority] = _Level()
        if override is not None:
            level.overrides[queue.name] = override
            self._overrides += 1
        for job in sorted(moved, key=self._key):
            self._track(job)

    def on_job_push(self, job: JobInfo) -> None:
        """Add a pending job to its queue's candidates."""
        if job.state is JobState.PEND:
            self._track(job)

    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None:
        """Drop a job that left PEND; take back one that returned to PEND; tell the
        override picker of its queue of a change of one of its jobs that runs (it
        dispatched it: it may follow it to its end, as a fair share does)."""
        tracked = job.jobid in self._owner
        if new_state is JobState.PEND and not tracked:
            self._track(job)
        elif new_state is not JobState.PEND and tracked:
            self._untrack(job.jobid, new_state)
        elif not tracked and (override := self._override_for(job.queue)) is not None:
            override.on_job_state_change(job, new_state)

    def on_job_update(self, job: JobInfo) -> None:
        """Re-place a job whose priority or queue changed."""
        owner = self._owner.get(job.jobid)
        if owner is not None:
            override = self._queues[owner].override
            if owner == job.queue and override is not None:
                override.on_job_update(job)  # same override queue: it re-places the job
                return
            self._untrack(job.jobid, update=job)
        if job.state is JobState.PEND:
            self._track(job)

    def on_job_rusage(self, job: JobInfo, rusage: Mapping[str, float]) -> None:
        """Forward to the override picker of the job's queue, if any."""
        override = self._override_for(job.queue)
        if override is not None:
            override.on_job_rusage(job, rusage)

    # --- session hooks -------------------------------------------------------------

    def begin_session(self) -> None:
        """Reset the cursor to the head of the highest-priority level; an order that
        ``ages`` is computed again for every lane job, at the session's time."""
        if self.ages and self._keys:
            self._resort()
        self._level_pos = 0
        self._lane = 0
        self._cursor = None
        self._exhausted = False
        for queue in self._queues.values():
            if queue.override is not None:
                queue.override.begin_session()

    def next_job(self) -> JobInfo | None:
        """The next pending job in the order, or None when all are exhausted; a
        parked job only while at least the slots it waits for are free."""
        self._settle()
        if self._exhausted:
            return None
        levels = self._levels
        while self._level_pos < len(levels):
            self._view.check_cancel()
            level: _Level = levels.peekitem(self._level_pos)[1]
            if self._lane == 0:
                key = self._next_key(level)
                if key is not None:
                    self._cursor = key
                    return self._jobs[key[2]]
                self._lane = 1
                self._cursor = None
            overrides = level.overrides
            while self._lane <= len(overrides):
                override: JobPicker = overrides.peekitem(self._lane - 1)[1]
                job = override.next_job()
                if job is not None:
                    return job
                self._lane += 1
            self._level_pos += 1
            self._lane = 0
        self._exhausted = True
        return None

    def _next_key(self, level: _Level) -> JobKey | None:
        """The lane's first key after the cursor among the unparked jobs and the
        parked ones waiting for no more than ``wake_slots()``; a parked job so
        returned is ``_offered`` (unparked unless the core parks it again).

        Nothing joins a lane during a session (jobs arrive between rounds), so the
        walk sees the lane as it stood when the session reached it, less the jobs
        that left it.
        """
        cursor = self._cursor
        lane = level.lane
        at = 0 if cursor is None else lane.bisect_right(cursor)
        best: JobKey | None = lane[at] if at < len(lane) else None
        parked, reserved, behind = level.parked, level.reserved, level.behind
        if not parked and not reserved and not behind:
            return best
        groups: list[SortedList] = []
        if parked:
            groups += [parked[slots] for slots in parked.irange(maximum=self._view.wake_slots())]
        if behind:
            blocks = self._view.blocks
            groups += [group for domain, group in behind.items() if not blocks(domain)]
        if reserved:
            names, latest, outside, free = self._view.reserved_room()
            for pends_for, by_slots in reserved.items():
                if pends_for != names or latest >= level.until[pends_for]:
                    groups += by_slots.values()  # other reservations: each is to be tried
                    continue
                groups += [by_slots[slots] for slots in by_slots.irange(maximum=outside)]
                groups += [by_slots[slots] for slots in by_slots.irange(minimum=free + 1)]
        offered = None
        for group in groups:
            at = 0 if cursor is None else group.bisect_right(cursor)
            if at < len(group) and (best is None or group[at] < best):
                best = group[at]
                offered = best[2]
        self._offered = offered
        return best

    def park(
        self,
        jobid: int,
        slots: int,
        reserved: tuple[int, int] | None = None,
        behind: int | None = None,
    ) -> None:
        """The core proved the lane job's turn changes nothing while
        ``wake_slots()`` is below ``slots`` (or, with ``reserved``, while
        ``reserved_room()`` keeps it pending; with ``behind``, while ``blocks(behind)``;
        ``plugins.ParkingPicker``): pass over it till then. A job of an override
        queue (or one not tracked) is left as it is."""
        key = self._keys.get(jobid)
        record = (slots, None if reserved is None else reserved[0], behind)
        if jobid == self._offered:
            if self._parked[jobid] == record:
                self._offered = None  # parked as it was (its ``until`` only later)
                return
            self._unpark(self._level_of(jobid), jobid)
        if key is None or jobid in self._parked:
            return
        level = self._level_of(jobid)
        level.lane.remove(key)
        if behind is not None:
            group = level.behind.get(behind)
            if group is None:
                group = level.behind[behind] = SortedList()
            group.add(key)
            self._parked[jobid] = record
            return
        if reserved is None:
            by_slots = level.parked
        else:
            names, until = reserved
            by_slots = level.reserved.get(names)
            if by_slots is None:
                by_slots = level.reserved[names] = SortedDict()
                level.until[names] = until
            elif until < level.until[names]:
                level.until[names] = until
        group = by_slots.get(slots)
        if group is None:
            group = by_slots[slots] = SortedList()
        group.add(key)
        self._parked[jobid] = record

    def unpark_all(self) -> None:
        """Something a parked job's outcome rests on changed: visit them all again."""
        self._offered = None
        if not self._parked:
            return
        for level in self._levels.values():
            for group in level.parked.values():
                level.lane.update(group)
            level.parked.clear()
            for by_slots in level.reserved.values():
                for group in by_slots.values():
                    level.lane.update(group)
            level.reserved.clear()
            level.until.clear()
            for group in level.behind.values():
                level.lane.update(group)
            level.behind.clear()
        self._parked.clear()

    def _settle(self) -> None:
        """Unpark the job offered last, which the core did not park again (it is
        parked until then: every way out of ``_parked`` clears ``_offered``)."""
        jobid = self._offered
        if jobid is not None:
            self._unpark(self._level_of(jobid), jobid)

    def _level_of(self, jobid: int) -> _Level:
        """The level of a lane job."""
        level: _Level = self._levels[-self._queues[self._owner[jobid]].priority]
        return level

    def _unpark(self, level: _Level, jobid: int) -> None:
        """Move a parked job back among the lane's unparked jobs."""
        level.lane.add(self._unparked(level, jobid))

    def _unparked(self, level: _Level, jobid: int) -> JobKey:
        """Take a parked job out of its group (and out of ``_offered``): its key."""
        if jobid == self._offered:
            self._offered = None
        slots, names, domain = self._parked.pop(jobid)
        key = self._keys[jobid]
        if domain is not None:
            behind: SortedList = level.behind[domain]
            behind.remove(key)
            if not behind:
                del level.behind[domain]
            return key
        by_slots = level.parked if names is None else level.reserved[names]
        group: SortedList = by_slots[slots]
        group.remove(key)
        if not group:
            del by_slots[slots]
            if not by_slots and names is not None:
                del level.reserved[names], level.until[names]
        return key

    def end_session(self) -> None:
        """Forward the end of the session to the override pickers."""
        self._settle()
        for queue in self._queues.values():
            if queue.override is not None:
                queue.override.end_session()

    def on_dispatch(self, jobid: int) -> None:
        """Remove a dispatched job from the candidates for good."""
        if jobid in self._owner:
            self._untrack(jobid, JobState.RUN)

    def on_pend(self, jobid: int) -> None:
        """Keep a pended job in place; an override picker hears of it."""
        if self._overrides:
            override = self._override_of(jobid)
            if override is not None:
                override.on_pend(jobid)

    def save_state(self) -> dict[str, Any]:
        """The override pickers' own states, by queue name.

        Everything else is rebuilt exactly from the core's state by the hooks: the
        keys depend only on the jobs, their queues and the clock.
        """
        states = {}
        for name, queue in self._queues.items():
            if queue.override is not None and (state := queue.override.save_state()):
                states[name] = state
        return {"overrides": states} if states else {}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Give each override picker back its saved state."""
        for name, saved in state.get("overrides", {}).items():
            queue = self._queues.get(name)
            if queue is not None and queue.override is not None:
                queue.override.load_state(saved)

    def fini(self) -> None:
        """Release the override pickers."""
        for queue in self._queues.values():
            if queue.override is not None:
                queue.override.fini()
        self._queues.clear()
        self._levels.clear()
        self._keys.clear()
        self._jobs.clear()
        self._owner.clear()
        self._parked.clear()
        self._offered = None

    # --- internals -----------------------------------------------------------------

    def _key(self, job: JobInfo, now: int | None = None) -> JobKey:
        """The job's place in its lane at ``now`` (ns; None: the clock's, read only
        for an order that ``ages``)."""
        if now is None:
            now = self._view.now() if self.ages else 0
        return (-job.priority, self.order(job, now), job.jobid)

    def _resort(self) -> None:
        """Compute every lane job's key again and sort each level anew, parked jobs
        in the groups they were parked in (their parking rests on their outcome,
        not on their place): one pass and one sort per level."""
        jobs, parked, owner, order = self._jobs, self._parked, self._owner, self.order
        now = self._view.now() if self.ages else 0
        level_of = {name: -queue.priority for name, queue in self._queues.items()}
        keys: dict[int, JobKey] = {}
        lanes: dict[int, list[JobKey]] = {number: [] for number in self._levels}
        groups: dict[int, dict[tuple[int, int | None, int | None], list[JobKey]]] = {}
        for jobid in self._keys:
            job = jobs[jobid]
            key = keys[jobid] = (-job.priority, order(job, now), jobid)
            record = parked.get(jobid)
            if record is None:
                lanes[level_of[owner[jobid]]].append(key)
            else:
                groups.setdefault(level_of[owner[jobid]], {}).setdefault(record, []).append(key)
        self._keys = keys
        for number, level in self._levels.items():
            level.lane = SortedList(lanes[number])
            until = level.until
            level.parked, level.reserved, level.behind = SortedDict(), {}, {}
            level.until = {}
            for (slots, names, behind), members in groups.get(number, {}).items():
                group = SortedList(members)
                if behind is not None:
                    level.behind[behind] = group
                    continue
                if names is None:
                    level.parked[slots] = group
                    continue
                if names not in level.reserved:
                    level.reserved[names] = SortedDict()
                    level.until[names] = until[names]
                level.reserved[names][slots] = group

    def _override_of(self, jobid: int) -> JobPicker | None:
        owner = self._owner.get(jobid)
        return None if owner is None else self._queues[owner].override

    def _override_for(self, name: str) -> JobPicker | None:
        """The override picker of queue ``name`` (None: none, or not a queue served)."""
        queue = self._queues.get(name)
        return None if queue is None else queue.override

    def _track(self, job: JobInfo) -> None:
        queue = self._queues.get(job.queue)
        if queue is None:
            return  # not a queue this picker serves
        queue.jobids[job.jobid] = None
        self._jobs[job.jobid] = job
        self._owner[job.jobid] = job.queue
        if queue.override is not None:
            queue.override.on_job_push(job)
            return
        key = self._key(job)
        self._keys[job.jobid] = key
        self._levels[-queue.priority].lane.add(key)

    def _untrack(
        self, jobid: int, new_state: JobState | None = None, update: JobInfo | None = None
    ) -> None:
        """Forget a job; its override picker hears why (state change, dispatch, update)."""
        queue = self._queues[self._owner.pop(jobid)]
        del queue.jobids[jobid]
        job = self._jobs.pop(jobid)
        if queue.override is not None:
            if update is not None:
                queue.override.on_job_update(update)
            elif new_state is JobState.RUN:
                queue.override.on_dispatch(jobid)
            elif new_state is not None:
                queue.override.on_job_state_change(job, new_state)
            return
        level: _Level = self._levels[-queue.priority]
        if jobid in self._parked:
            self._unparked(level, jobid)
        else:
            level.lane.remove(self._keys[jobid])
        del self._keys[jobid]

    def _drop_queue(self, name: str, queue: _Queue) -> None:
        level: _Level = self._levels[-queue.priority]
        if queue.override is not None:
            del level.overrides[name]
            queue.override.fini()
            self._overrides -= 1
        del self._queues[name]
        if not any(q.priority == queue.priority for q in self._queues.values()):
            del self._levels[-queue.priority]


_: type[JobPicker] = SortedPicker
_parks: type[ParkingPicker] = SortedPicker
