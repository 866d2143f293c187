"""The fair-share configuration (issue 17): shares, usage decay and priority weights,
part of the scheduler configuration (``SchedulerConfig.fairshare``) and of a
``--policy-config`` file.

Shares are hierarchical, project then user (LSF's hierarchical fair share, Slurm's
account then user associations): a project's share of the cluster is its shares over
all projects' shares; a user's share inside a project is its shares over the
project's users' shares. A project or user the configuration does not name has
``default_shares``. Usage is slot-seconds of running jobs, decayed in virtual time.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, Strict

from xce_schemas.base import WireModel

#: A name of a project or user (as ``events.Name``).
_Name = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9_.:@+\-]+$")]

#: A number of shares, 1 or more.
Shares = Annotated[int, Strict(), Field(ge=1, le=2**31 - 1)]

#: A duration, s: 1 s to 10**10 s.
_Seconds = Annotated[int, Strict(), Field(ge=1, le=10**10)]

#: A factor or weight, 0 or more.
_Factor = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)]


class FairShareFormula(StrEnum):
    """How shares and decayed usage give a job's priority."""

    SLURM = "slurm"  # classic fair-share factor 2^(-U/S) inside multifactor weights
    LSF = "lsf"  # LSF's dynamic priority, project then user


class FairShareConfig(WireModel):
    """Fair share for the ``fairshare`` picker.

    Attributes:
        formula: ``slurm``: priority = ``weight_fairshare`` × 2^(−U/S) +
            ``weight_age`` × min(wait / ``max_age_s``, 1) + ``weight_size`` ×
            tasks / cluster slots, U the user's decayed usage over everyone's and S
            its normalised share (its project's share × its share in the project);
            ``lsf``: by the project's dynamic priority, then the user's:
            shares / (CPU time × ``cpu_time_factor`` + run time ×
            ``run_time_factor`` + (1 + slots running) × ``run_job_factor``), run time
            in decayed slot-hours, CPU time in decayed hours of the ``cpu_time``
            that ``JOB_RUSAGE`` reports (s, cumulative per job).
        half_life_s: ``slurm``: usage halves every this many s (``PriorityDecayHalfLife``;
            default 7 days).
        hist_hours: ``lsf``: an hour of use counts as 0.1 hour after this many hours
            (``HIST_HOURS``; default 5).
        projects: shares by project.
        users: shares by user (inside its project).
        default_shares: the shares of a project or user not named.
        cpu_time_factor, run_time_factor, run_job_factor: ``lsf``'s
            ``CPU_TIME_FACTOR`` (0.7), ``RUN_TIME_FACTOR`` (0.7) and
            ``RUN_JOB_FACTOR`` (3).
        weight_fairshare, weight_age, weight_size, max_age_s: ``slurm``'s
            ``PriorityWeightFairshare`` (1000), ``PriorityWeightAge`` (0),
            ``PriorityWeightJobSize`` (0) and ``PriorityMaxAge`` (7 days).

    A model holding mappings: equal configurations compare equal, but it is not
    hashable (nothing hashes a configuration).
    """

    formula: FairShareFormula = FairShareFormula.SLURM
    half_life_s: _Seconds = 7 * 86_400
    hist_hours: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)] = 5.0
    projects: dict[_Name, Shares] = Field(default_factory=dict)
    users: dict[_Name, Shares] = Field(default_factory=dict)
    default_shares: Shares = 1
    cpu_time_factor: _Factor = 0.7
    run_time_factor: _Factor = 0.7
    run_job_factor: _Factor = 3.0
    weight_fairshare: _Factor = 1000.0
    weight_age: _Factor = 0.0
    weight_size: _Factor = 0.0
    max_age_s: _Seconds = 7 * 86_400
