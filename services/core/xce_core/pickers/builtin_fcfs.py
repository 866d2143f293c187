"""``builtin_fcfs``: the default job picker (Req 8): first come, first served.

Queues are served by priority, highest first. Queues of equal priority are served
together, first come first served, as LSF does. Inside, jobs go by job priority
(highest first), then queue time (earliest first), then job id (lowest first), so
no two jobs ever tie. Everything but the order is ``SortedPicker``'s: per-queue
overrides (Req 5 AC 2), the session cursor, incremental rounds.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mypy_extensions import mypyc_attr

from xce_core.pickers.sorted import SortedPicker
from xce_core.plugins import JobInfo


# Other pickers may build on it, also when the core is compiled (mypyc).
@mypyc_attr(allow_interpreted_subclasses=True)
class BuiltinFcfs(SortedPicker):
    """The FCFS picker of Req 8: by queue time, the instant a job (re)entered its
    queue (ns)."""

    name: ClassVar[str] = "builtin_fcfs"

    def order(self, job: JobInfo, now: int) -> Any:
        """The job's queue time, ns."""
        return job.queue_ts
