"""``fairshare``: jobs ordered by their user's and project's fair share (issue 17).

Usage is charged from the slots of running jobs over time (slot-seconds, virtual
time), to the job's user inside its project and to the project, and decays
exponentially: with ``formula`` ``slurm`` it halves every ``half_life_s``
(``PriorityDecayHalfLife``); with ``lsf`` an hour of use counts as 0.1 hour after
``hist_hours`` (``HIST_HOURS``). Between two changes of a user's running slots the
decayed usage is exact: ``U(t + Δ) = U(t)·e^(−λΔ) + slots·(1 − e^(−λΔ))/λ``.

The order (``xce_schemas.fairshare.FairShareConfig``):

* ``slurm`` (classic fair share inside Slurm's multifactor priority, highest
  first): ``weight_fairshare × 2^(−U/S) + weight_age × min(wait / max_age_s, 1) +
  weight_size × tasks / cluster slots``, where ``U`` is the user's decayed usage
  over everyone's (0 while nobody has used anything) and ``S`` its normalised
  share: its project's shares over all projects' shares, times its shares over its
  project's users' shares;
* ``lsf`` (LSF's hierarchical fair share, highest first): by the project's dynamic
  priority, then the user's inside it: ``shares / (cpu_time × cpu_time_factor +
  run_time × run_time_factor + (1 + slots running) × run_job_factor)``,
  ``run_time`` the decayed usage in slot-hours, ``cpu_time`` the decayed CPU hours
  that ``JOB_RUSAGE`` reported (its ``cpu_time`` entry, s, cumulative per job).

A job without a project is in the project ``""`` (the default one). Projects and
users known are those the configuration names and those of jobs seen. Queues by
priority, job priority first and job id last are ``SortedPicker``'s; the order ages
(usage and waits move), so it is computed again once per session.

The accounts and the running jobs are the picker's state: they travel in the
snapshot (``save_state``) and over a configuration push that names the same
pickers (the core hands the rebuilt picker its predecessor's state).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from xce_schemas import FairShareConfig, FairShareFormula, JobState, SchedulerConfig

from xce_core.pickers.sorted import SortedPicker
from xce_core.plugins import CoreView, JobInfo, PickerConfig

NS = 1_000_000_000

#: An account: [decayed usage (slot-s) at ``since``, ``since`` (ns), slots running,
#: decayed CPU time (s) at ``since``, from ``JOB_RUSAGE``'s ``cpu_time``].
Account = list[Any]

#: The default project (of a job that names none).
NO_PROJECT = ""


class FairShare(SortedPicker):
    """The ``fairshare`` picker (see the module docstring).

    Args:
        config: the factory's config.
        view: the core's read-only view (the clock, jobs, hosts).
    """

    name: ClassVar[str] = "fairshare"
    ages: ClassVar[bool] = True

    def __init__(self, config: PickerConfig, view: CoreView) -> None:
        super().__init__(config, view)
        self._fairshare = FairShareConfig()
        self._decay = 0.0  # λ, per s
        self._set_decay()
        # (project,) or (project, user) → account; () → everyone's
        self._accounts: dict[tuple[str, ...], Account] = {(): [0.0, 0, 0, 0.0]}
        self._users: dict[str, dict[str, None]] = {}  # project → its users seen
        self._running: dict[int, tuple[str, str, int]] = {}  # jobid → (project, user, slots)
        self._cpu_seen: dict[int, float] = {}  # running jobid → its last cpu_time, s
        # Figures at one instant (ns), made as asked: decayed usage by account,
        # normalised shares by (project, user), and the cluster's slots (-1: not yet).
        self._at = -1
        self._usage: dict[tuple[str, ...], float] = {}
        self._shares: dict[tuple[str, str], float] = {}
        self._slots = -1

    # --- configuration and accounts -------------------------------------------------

    def on_config(self, config: SchedulerConfig) -> None:
        """Take the fair-share configuration (its defaults when it gives none)."""
        self._fairshare = config.fairshare or FairShareConfig()
        self._set_decay()
        super().on_config(config)

    def _set_decay(self) -> None:
        fairshare = self._fairshare
        if fairshare.formula is FairShareFormula.LSF:
            self._decay = math.log(10) / (fairshare.hist_hours * 3600)
        else:
            self._decay = math.log(2) / fairshare.half_life_s

    def _account(self, key: tuple[str, ...]) -> Account:
        account = self._accounts.get(key)
        if account is None:
            account = self._accounts[key] = [0.0, 0, 0, 0.0]
            self._at = -1  # (the shares known changed)
            if len(key) == 2:
                self._users.setdefault(key[0], {})[key[1]] = None
        return account

    def _advance(self, account: Account, now: int) -> None:
        """Bring an account's usage to ``now`` (ns)."""
        usage, since, slots, cpu = account
        if now > since:
            account[0] = self._decayed(usage, since, slots, now)
            account[3] = self._decayed(cpu, since, 0, now)
            account[1] = now

    def _decayed(self, usage: float, since: int, slots: int, now: int) -> float:
        """Usage (slot-s) at ``since`` with ``slots`` running, decayed to ``now``."""
        if now <= since:
            return usage
        kept = math.exp(-self._decay * (now - since) / NS)
        return usage * kept + slots * (1.0 - kept) / self._decay

    def _charge(self, project: str, user: str, slots: int = 0, cpu: float = 0.0) -> None:
        """From now, charge the user, its project and everyone ``slots`` more (fewer
        when negative) running slots and ``cpu`` s of CPU time used."""
        now = self._view.now()
        for key in ((), (project,), (project, user)):
            account = self._account(key)
            self._advance(account, now)
            account[2] += slots
            account[3] += cpu

    def _start(self, job: JobInfo) -> None:
        """Charge a job that runs (now, or again), unless it is charged already."""
        if job.jobid not in self._running:
            entry = self._running[job.jobid] = (job.project or NO_PROJECT, job.user, job.tasks)
            self._charge(entry[0], entry[1], entry[2])

    def _stop(self, jobid: int) -> None:
        """Stop charging a job (it ended, was suspended or is pending again)."""
        entry = self._running.pop(jobid, None)
        if entry is not None:
            self._cpu_seen.pop(jobid, None)
            self._charge(entry[0], entry[1], -entry[2])

    # --- hooks ----------------------------------------------------------------------

    def on_job_push(self, job: JobInfo) -> None:
        """Know the job's user and project, stop charging it if it ran (back to
        pending: a queue's picker hears of that so), then as ``SortedPicker``."""
        self._account((job.project or NO_PROJECT, job.user))
        self._account((job.project or NO_PROJECT,))
        self._stop(job.jobid)
        super().on_job_push(job)

    def on_dispatch(self, jobid: int) -> None:
        """Charge the started job's slots from now, then as ``SortedPicker``."""
        job = self._view.job(jobid)
        if job is not None:
            self._start(job)
        super().on_dispatch(jobid)

    def on_job_state_change(self, job: JobInfo, new_state: JobState) -> None:
        """Stop charging a job that ended, went back to pending or was suspended;
        charge one resumed again. Then as ``SortedPicker``."""
        if new_state is JobState.RUN:
            self._start(job)
        else:
            self._stop(job.jobid)
        super().on_job_state_change(job, new_state)

    def on_job_rusage(self, job: JobInfo, rusage: Mapping[str, float]) -> None:
        """Charge the CPU time a running job used since its last measure (its
        ``cpu_time``, s, cumulative) to its user, its project and everyone (LSF's
        ``cpu_time``); then as ``SortedPicker``."""
        cpu = rusage.get("cpu_time")
        entry = self._running.get(job.jobid)
        if cpu is not None and entry is not None and math.isfinite(cpu):
            used = cpu - self._cpu_seen.get(job.jobid, 0.0)
            self._cpu_seen[job.jobid] = max(cpu, self._cpu_seen.get(job.jobid, 0.0))
            if used > 0:
                self._charge(entry[0], entry[1], cpu=used)
                self._at = -1
        super().on_job_rusage(job, rusage)

    def begin_session(self) -> None:
        """Forget the figures of the last instant, then as ``SortedPicker`` (which
        orders every job again)."""
        self._at = -1
        super().begin_session()

    def save_state(self) -> dict[str, Any]:
        """The accounts and the running jobs, with the override pickers' states."""
        state = super().save_state()
        state["accounts"] = [[list(key), *account] for key, account in self._accounts.items()]
        state["running"] = [
            [jobid, *entry, self._cpu_seen.get(jobid, 0.0)]
            for jobid, entry in self._running.items()
        ]
        return state

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Take the accounts and running jobs back (order as saved)."""
        super().load_state(state)
        if "accounts" in state:
            self._accounts, self._users = {}, {}
            for key, usage, since, slots, cpu in state["accounts"]:
                account = [float(usage), int(since), int(slots), float(cpu)]
                self._account(tuple(key))[:] = account
            self._running, self._cpu_seen = {}, {}
            for jobid, project, user, slots, cpu in state.get("running", ()):
                self._running[int(jobid)] = (str(project), str(user), int(slots))
                if cpu:
                    self._cpu_seen[int(jobid)] = float(cpu)
            self._at = -1
            if self._keys:
                self._resort()

    # --- the order ------------------------------------------------------------------

    def order(self, job: JobInfo, now: int) -> Any:
        """``(−priority, queue time)`` under ``slurm``; ``(−project's dynamic
        priority, −user's, queue time)`` under ``lsf``."""
        project = job.project or NO_PROJECT
        fairshare = self._fairshare
        if fairshare.formula is FairShareFormula.LSF:
            return (
                -self._dynamic((project,), fairshare.projects, now),
                -self._dynamic((project, job.user), fairshare.users, now),
                job.queue_ts,
            )
        priority = fairshare.weight_fairshare * self._factor(project, job.user, now)
        if fairshare.weight_age:
            waited = max(now - job.submit_ts, 0) / NS
            priority += fairshare.weight_age * min(waited / fairshare.max_age_s, 1.0)
        if fairshare.weight_size:
            slots = self._cluster_slots()
            priority += fairshare.weight_size * (min(job.tasks / slots, 1.0) if slots else 0.0)
        return (-priority, job.queue_ts)

    def factors(self, job: JobInfo, now: int | None = None) -> dict[str, float]:
        """The figures the job's place rests on at ``now`` (ns; None: the clock's),
        as ``sprio`` and ``bhpart`` show them: its user's and project's decayed
        usage (slot-s) and shares, and under ``slurm`` its normalised share and
        usage, fair-share factor and priority, under ``lsf`` the project's and
        user's dynamic priorities."""
        now = self._view.now() if now is None else now
        project = job.project or NO_PROJECT
        fairshare = self._fairshare
        out = {
            "user_usage_slot_s": self._used((project, job.user), now),
            "project_usage_slot_s": self._used((project,), now),
            "user_shares": float(fairshare.users.get(job.user, fairshare.default_shares)),
            "project_shares": float(fairshare.projects.get(project, fairshare.default_shares)),
        }
        key = self.order(job, now)
        if fairshare.formula is FairShareFormula.LSF:
            out["user_cpu_time_s"] = self._cpu((project, job.user), now)
            out["project_dynamic_priority"], out["user_dynamic_priority"] = -key[0], -key[1]
        else:
            total = self._used((), now)
            out["normalised_share"] = self._share(project, job.user)
            out["normalised_usage"] = out["user_usage_slot_s"] / total if total > 0 else 0.0
            out["fairshare_factor"] = self._factor(project, job.user, now)
            out["priority"] = -key[0]
        return out

    def _at_instant(self, now: int) -> None:
        """Start a new instant's figures when ``now`` moved (or a session began)."""
        if self._at != now:
            self._at, self._usage, self._shares, self._slots = now, {}, {}, -1

    def _used(self, key: tuple[str, ...], now: int) -> float:
        """An account's decayed usage at ``now`` (slot-s; 0 for one never seen)."""
        self._at_instant(now)
        used = self._usage.get(key)
        if used is None:
            account = self._accounts.get(key)
            used = (
                0.0 if account is None else self._decayed(account[0], account[1], account[2], now)
            )
            self._usage[key] = used
        return used

    def _cpu(self, key: tuple[str, ...], now: int) -> float:
        """An account's decayed CPU time at ``now`` (s; 0 for one never seen)."""
        account = self._accounts.get(key)
        return 0.0 if account is None else self._decayed(account[3], account[1], 0, now)

    def _factor(self, project: str, user: str, now: int) -> float:
        """Slurm's classic fair-share factor ``2^(−U/S)``."""
        total = self._used((), now)
        used = self._used((project, user), now) / total if total > 0 else 0.0
        return float(2.0 ** (-used / self._share(project, user)))

    def _cluster_slots(self) -> int:
        """Slots of every host (for the size factor), once an instant."""
        if self._slots < 0:
            self._slots = sum(host.slots for host in self._view.hosts())
        return self._slots

    def _share(self, project: str, user: str) -> float:
        """The user's normalised share: its project's over all projects', times its
        own over its project's users' (projects and users known now)."""
        share = self._shares.get((project, user))
        if share is None:
            fairshare = self._fairshare
            default = fairshare.default_shares
            projects = {*self._users, *fairshare.projects, project}
            all_projects = sum(fairshare.projects.get(p, default) for p in projects)
            users = {*self._users.get(project, ()), user}
            in_project = sum(fairshare.users.get(u, default) for u in users)
            share = self._shares[(project, user)] = (
                fairshare.projects.get(project, default)
                / all_projects
                * fairshare.users.get(user, default)
                / in_project
            )
        return share

    def _dynamic(self, key: tuple[str, ...], shares: Mapping[str, int], now: int) -> float:
        """LSF's dynamic priority of a project (``(project,)``) or a user in it."""
        fairshare = self._fairshare
        account = self._accounts.get(key)
        running = 0 if account is None else account[2]
        hours = self._used(key, now) / 3600
        cpu_hours = self._cpu(key, now) / 3600
        denominator = (
            cpu_hours * fairshare.cpu_time_factor
            + hours * fairshare.run_time_factor
            + (1 + running) * fairshare.run_job_factor
        )
        own = shares.get(key[-1], fairshare.default_shares)
        return own / denominator if denominator > 0 else float(own)
