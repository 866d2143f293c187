"""Extension points of the core: one small Protocol each, and the plugin registry.

A plugin sees the core only through the read-only protocols below (``CoreView``,
``JobInfo``, ``QueueInfo``, ``HostInfo``); it returns its choices and the core applies
them. Built-in plugins are listed in ``xce_core.in_tree``; third-party ones arrive
through ``importlib.metadata`` entry points (groups ``xce.pickers`` and
``xce.preempt_policies``), read by the composition root (the driver or a service),
never by the core itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from xce_schemas import HostStatus, JobState, SchedulerConfig

from xce_core.errors import ConfigError

if TYPE_CHECKING:  # (the backfill package imports the allocators, which import this)
    from xce_core.backfill.policy import BackfillFactory

# --- read-only views ---------------------------------------------------------------


class JobInfo(Protocol):
    """A job as plugins see it. Plugins must not assign to any attribute.

    Times are ns (``start_ts``, ``suspend_ts``: 0 before; ``suspended_ns``: time
    suspended since its start, over suspensions ended so far). ``run_limit_s`` is
    the job's own run limit, s (None: not given); ``xce_core.runtime`` gives the
    one in force (its queue's too) and its expected end.
    """

    @property
    def jobid(self) -> int: ...
    @property
    def queue(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def project(self) -> str | None: ...
    @property
    def priority(self) -> int: ...
    @property
    def tasks(self) -> int: ...
    @property
    def resreq(self) -> str: ...
    @property
    def submit_ts(self) -> int: ...
    @property
    def queue_ts(self) -> int: ...
    @property
    def state(self) -> JobState: ...
    @property
    def start_ts(self) -> int: ...
    @property
    def suspend_ts(self) -> int: ...
    @property
    def suspended_ns(self) -> int: ...
    @property
    def run_limit_s(self) -> int | None: ...


class QueueInfo(Protocol):
    """A queue as plugins see it."""

    @property
    def name(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def job_pick_plugin(self) -> str | None: ...
    @property
    def project_name(self) -> str | None: ...
    @property
    def run_limit_s(self) -> int | None: ...


class HostInfo(Protocol):
    """A host as plugins see it (slots are job slots)."""

    @property
    def name(self) -> str: ...
    @property
    def position(self) -> int: ...
    @property
    def slots(self) -> int: ...
    @property
    def used(self) -> int: ...
    @property
    def free(self) -> int: ...
    @property
    def status(self) -> HostStatus: ...


class CoreView(Protocol):
    """The narrow, read-only window plugins get on the core."""

    def now(self) -> int:
        """Virtual time, ns (the core's clock)."""
        ...

    def job(self, jobid: int) -> JobInfo | None:
        """The job with this id, or None."""
        ...

    def queue(self, name: str) -> QueueInfo | None:
        """The queue with this name, or None."""
        ...

    def hosts(self) -> Sequence[HostInfo]:
        """Every host, in host order."""
        ...

    def wake_slots(self) -> int:
        """Parked jobs (``ParkingPicker``) waiting for at most this many free slots
        are to be offered now, O(1): the free slots (room reserved for other jobs
        counted as free: a plain job too large for it all is decided without it),
        or every parked job while a backfill policy still reserves for the next
        blocked job it is offered."""
        ...

    def reserved_room(self) -> tuple[int, int, int, int]:
        """For jobs parked for reserved room (``ParkingPicker``), O(1): ``(names,
        latest, outside, free)``: the number naming for whom reservations were
        made so far this session (-1: none to name, every such job is offered),
        their latest start (ns), the free slots outside the room they hold, and
        the free slots were none held. A job parked for ``(names, until)`` is to be
        offered unless ``names`` match, ``latest`` is before ``until``, and its
        slots are more than ``outside`` and at most ``free``."""
        ...

    def blocks(self, domain: int) -> bool:
        """For jobs held back under ``strict`` (``ParkingPicker``), O(policy domains):
        whether a job of backfill policy domain number ``domain`` could not start so
        far this session, so that every later job of the domain is held back. A job
        parked behind the domain is to be offered unless one has."""
        ...

    def check_cancel(self) -> None:
        """A cancellation point: raises ``SessionCancelled`` if the session was cancelled."""
        ...


# --- job picker (Req 1) -------------------------------------------------------------


class JobPicker(Protocol):
    """A job picker (``xce_job_picker_iface_t``, Req 1 AC 2) decides HOW jobs are picked.

    The core calls every hook, synchronously, in its one scheduling thread (Req 1 AC 3):

    * state-change hooks while it handles the matching event, after its own state
      changed: ``on_queue_update`` (QUEUE_UPDATE, and each queue of CONFIG_PUSH),
      ``on_job_push`` (JOBS_PUSH), ``on_job_state_change`` (JOB_STATE_CHANGE),
      ``on_job_update`` (JOB_UPDATE), ``on_config`` (CONFIG_PUSH),
      ``on_job_rusage`` (JOB_RUSAGE);
    * session hooks on BEGIN_ROUND: ``begin_session``, then ``next_job`` until it
      returns None, then ``end_session`` (Req 1 AC 4);
    * after each allocation attempt: ``on_dispatch`` or ``on_pend``;
    * ``fini`` once, when the core replaces or drops the picker;
    * ``save_state`` when a snapshot is taken (between events), and ``load_state``
      with what it returned, after a picker rebuilt from a loaded snapshot's state
      through the hooks above (Req 10 AC 16).

    Contract: hooks never block and never mutate what they are given. ``next_job``
    returns only a pending job, at most once per session, and calls
    ``view.check_cancel()`` in its loops (the cancellation points of Req 1 AC 5).
    ``begin_session`` resets the iteration cursor (Req 5 AC 6).
    """

    name: ClassVar[str]

    def fini(self) -> None: ...
    def on_config(self, config: SchedulerConfig) -> None: ...
    def on_queue_update(self, queue: QueueInfo) -> None: ...
    def on_job_push(self, job: JobInfo) -> None: ...
    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None: ...
    def on_job_update(self, job: JobInfo) -> None: ...
    def on_job_rusage(self, job: JobInfo, rusage: Mapping[str, float]) -> None: ...
    def begin_session(self) -> None: ...
    def next_job(self) -> JobInfo | None: ...
    def end_session(self) -> None: ...
    def on_dispatch(self, jobid: int) -> None: ...
    def on_pend(self, jobid: int) -> None: ...
    def save_state(self) -> dict[str, Any]: ...
    def load_state(self, state: Mapping[str, Any]) -> None: ...


class ParkingPicker(Protocol):
    """An optional capability of a picker: incremental rounds (DESIGN "Incremental
    rounds"; issue 16).

    After a pending job's turn, the core may *park* it: it proved that the job's
    turn makes no decision and changes nothing while ``CoreView.wake_slots()`` is
    below ``slots`` (``reserved`` None: it pends for too few free slots), or, for a
    job pending for reserved room, while ``CoreView.reserved_room()`` keeps it so
    (``reserved`` is ``(names, until)``, as that method says), or, for a job held
    back under ``strict`` in policy domain number ``behind``, while
    ``CoreView.blocks(behind)``. The
    picker may then leave it out of ``next_job`` while that holds (asking at each
    call: it changes within a session), and must not call it pended for those
    turns (``on_pend`` is not called for a job not returned). It must still return
    it, in its place, once that no longer holds, and forget the parking when the
    job leaves pending, changes (``on_job_update``) or ``unpark_all`` is called
    (something else the outcome rests on changed: hosts, queues, resources). A
    picker without ``park`` gets every job every round.
    """

    def park(
        self,
        jobid: int,
        slots: int,
        reserved: tuple[int, int] | None = None,
        behind: int | None = None,
    ) -> None: ...
    def unpark_all(self) -> None: ...


class PickerBase:
    """No-op defaults for every ``JobPicker`` hook, so a picker writes only what it needs.

    ``next_job`` has no sensible default and must be written.
    """

    name: ClassVar[str] = ""
    #: Whether the picker, as the global one, serves a queue that names a picker of
    #: its own (``job_pick_plugin``, Req 5 AC 2) through that picker. One that does
    #: not serves every queue itself, and the core refuses a queue naming another
    #: picker under it rather than let the name be dropped silently.
    routes_queues: ClassVar[bool] = False

    def fini(self) -> None:
        """Release what the picker holds (no-op)."""

    def on_config(self, config: SchedulerConfig) -> None:
        """A configuration was pushed (no-op)."""

    def on_queue_update(self, queue: QueueInfo) -> None:
        """A queue was added or changed (no-op)."""

    def on_job_push(self, job: JobInfo) -> None:
        """A job was submitted (no-op)."""

    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None:
        """A job changed state (no-op); ``CoreView.now()`` reads the change's time."""

    def on_job_update(self, job: JobInfo) -> None:
        """A job's priority or queue changed (no-op)."""

    def on_job_rusage(self, job: JobInfo, rusage: Mapping[str, float]) -> None:
        """A running job's usage was measured (no-op)."""

    def begin_session(self) -> None:
        """A session starts (no-op)."""

    def next_job(self) -> JobInfo | None:
        """The next job to try; must be overridden."""
        raise NotImplementedError(f"picker {self.name!r} does not implement next_job")

    def end_session(self) -> None:
        """The session ended (no-op)."""

    def on_dispatch(self, jobid: int) -> None:
        """The job was dispatched (no-op)."""

    def on_pend(self, jobid: int) -> None:
        """The job was pended for this session (no-op)."""

    def save_state(self) -> dict[str, Any]:
        """What the hooks cannot rebuild from the core's state (none): JSON-ready."""
        return {}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Take back what ``save_state`` returned (no-op)."""


@dataclass(frozen=True, slots=True)
class PickerConfig:
    """What a picker factory is given besides the view.

    Attributes:
        name: the registered name the picker was created under.
        queue: the queue it serves when created as a per-queue override (Req 5 AC 2),
            else None.
        make_picker: builds another picker of the same registry by name for a queue,
            so a picker can delegate to per-queue overrides; raises ``ConfigError``.
    """

    name: str
    queue: str | None
    make_picker: Callable[[str, str | None], JobPicker]


PickerFactory = Callable[[PickerConfig, CoreView], JobPicker]

# --- preemption policy (Req 6) ---------------------------------------------------------


class PreemptTrial(Protocol):
    """The core's trial of a victim set, on a copy of the allocation state."""

    def fits(self, victims: Sequence[int]) -> bool:
        """Whether the preemptor could be allocated once ``victims`` (jobids, all
        from the candidates) gave back what they hold. The real state never
        changes; each call stands alone."""
        ...


class PreemptPolicy(Protocol):
    """A victim-selection policy (the queue's ``preempt_policy``, Req 6 AC 2-3).

    The core calls ``select_victims`` when a job of a queue with
    ``preemptible_queues`` cannot be allocated and freeing running jobs could help.
    ``candidates`` already obey the safety rules of Req 6 AC 9, which the core
    enforces itself, outside any policy: running jobs of the preemptor's target
    queues, in a ``preemptible`` queue, of strictly lower job priority, not already
    chosen by a preemption in flight, each holding something the preemptor could use.
    The policy returns the victims to suspend (jobids from ``candidates``) or an empty
    sequence when none suffice; the core refuses any other answer, and any set
    ``trial.fits`` rejects.
    """

    name: ClassVar[str]

    def select_victims(
        self, preemptor: JobInfo, candidates: Sequence[JobInfo], trial: PreemptTrial
    ) -> Sequence[int]: ...


PreemptPolicyFactory = Callable[[CoreView], PreemptPolicy]

# --- allocation (Reqs 2-4) -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllocPlan:
    """A candidate shape for a primary request (Req 2 AC 2): ``(nhosts, slots_per_host)``.

    ``tasks`` slots spread over ``nhosts`` hosts, ``slots_per_host`` on each but the
    last, which takes the rest (``last_host_slots``, 1 to ``slots_per_host``), as LSF
    fills ``span[ptile=N]``. A ``balanced`` plan (``span[hosts=N]``) spreads them as
    evenly as possible instead: some hosts take ⌈tasks/nhosts⌉, the others one less.

    A ``packed`` plan is the tasks wherever the free slots are, as LSF places a job
    without ``span[]``: each candidate host in turn takes what it can hold, at most
    ``slots_per_host`` (all it has free when that is less), until every task is
    placed, on as many hosts as that takes (``nhosts``, the fewest it could use, is
    only a bound).

    ``shares()`` gives the plan as ``(big, big_count, small, small_count)``: hosts
    taking ``big`` slots and hosts taking ``small`` (``small_count`` may be 0); a
    packed plan has no fixed shares (``min_share()`` still holds).
    """

    nhosts: int
    slots_per_host: int
    tasks: int
    balanced: bool = False
    packed: bool = False

    @property
    def last_host_slots(self) -> int:
        """Slots on the last host of the plan."""
        return self.tasks - (self.nhosts - 1) * self.slots_per_host

    def shares(self) -> tuple[int, int, int, int]:
        """``(big, big_count, small, small_count)`` slots per host and host counts."""
        if self.balanced:
            small, extra = divmod(self.tasks, self.nhosts)
            if extra == 0:
                return small, self.nhosts, small, 0
            return small + 1, extra, small, self.nhosts - extra
        last = self.last_host_slots
        if last == self.slots_per_host:
            return last, self.nhosts, last, 0
        return self.slots_per_host, self.nhosts - 1, last, 1

    def min_share(self) -> int:
        """The fewest free slots a host needs to take part in the plan (slots): 1 for
        a packed plan, else its smallest share."""
        if self.packed:
            return 1
        big, _, small, small_count = self.shares()
        return small if small_count else big


class AllocPlanIter(Protocol):
    """A lazy plan iterator (``xce_alloc_plan_iter_t``, Req 2).

    ``next()`` makes exactly one plan, most-preferred first, and returns None once
    every plan was produced, again on every later call. ``close()`` releases all.
    """

    def next(self) -> AllocPlan | None: ...
    def close(self) -> None: ...


class HostIter(Protocol):
    """A lazy host-candidate iterator for one plan (``xce_host_iter_t``, Req 3).

    ``next()`` returns the next host that passes the plan's host filter, or None when
    there is none left; ``close()`` releases it, independently of the plan iterator.
    """

    def next(self) -> HostInfo | None: ...
    def close(self) -> None: ...
    def __iter__(self) -> Iterator[HostInfo]: ...


# --- the registry --------------------------------------------------------------------

F = TypeVar("F")


@dataclass(slots=True)
class Registry(Generic[F]):
    """A name → factory mapping for one kind of plugin ("picker", "preempt policy").

    Duplicates and unknown names are errors; there is never a silent fallback.
    """

    kind: str
    factories: dict[str, F] = field(default_factory=dict)

    def register(self, name: str, factory: F) -> None:
        """Add ``factory`` under ``name``.

        Raises:
            ConfigError: ``name`` is empty or already registered.
        """
        if not name:
            raise ConfigError(f"a {self.kind} plugin needs a name")
        if name in self.factories:
            raise ConfigError(f"{self.kind} {name!r} is registered twice")
        self.factories[name] = factory

    def get(self, name: str) -> F:
        """The factory registered as ``name``.

        Raises:
            ConfigError: naming the unknown name and listing the known ones
                (Req 1 AC 6, Req 5 AC 5).
        """
        try:
            return self.factories[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self.factories)

    def copy(self) -> Registry[F]:
        """An independent copy (registering into it leaves this one alone)."""
        return Registry(self.kind, dict(self.factories))


@dataclass(slots=True)
class PluginRegistry:
    """Every plugin registry the core needs, handed finished to ``SchedCore``:
    pickers, preemption policies and backfill policies (``backfill.policy``:
    factories ``(reservation_depth, params) -> Policy``)."""

    pickers: Registry[PickerFactory] = field(default_factory=lambda: Registry("picker"))
    preempt_policies: Registry[PreemptPolicyFactory] = field(
        default_factory=lambda: Registry("preempt policy")
    )
    backfill_policies: Registry[BackfillFactory] = field(
        default_factory=lambda: Registry("backfill policy")
    )

    def copy(self) -> PluginRegistry:
        """An independent copy."""
        return PluginRegistry(
            self.pickers.copy(), self.preempt_policies.copy(), self.backfill_policies.copy()
        )
