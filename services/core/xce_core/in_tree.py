"""Every built-in plugin, in one literal (Kubernetes' ``NewInTreeRegistry``).

Third-party plugins are merged in by the composition root from entry points; the
core itself reads no entry points.
"""

from __future__ import annotations

from xce_core.backfill.policy import BUILT_IN as BACKFILL_POLICIES
from xce_core.pickers.builtin_fcfs import BuiltinFcfs
from xce_core.pickers.fairshare import FairShare
from xce_core.pickers.orders import ORDERS
from xce_core.plugins import PickerFactory, PluginRegistry, PreemptPolicyFactory, Registry
from xce_core.preempt.lowest_priority_first import LowestPriorityFirst

#: The picker used when the configuration names none (Req 5 AC 1, Req 8 AC 1).
DEFAULT_PICKER = BuiltinFcfs.name

#: The preemption policy of a queue whose configuration names none (Req 6 AC 3, 7).
DEFAULT_PREEMPT_POLICY = LowestPriorityFirst.name


def in_tree_registry() -> PluginRegistry:
    """A fresh registry holding every built-in plugin."""
    pickers: dict[str, PickerFactory] = {
        BuiltinFcfs.name: BuiltinFcfs,
        **ORDERS,
        FairShare.name: FairShare,
    }
    policies: dict[str, PreemptPolicyFactory] = {LowestPriorityFirst.name: LowestPriorityFirst}
    return PluginRegistry(
        pickers=Registry("picker", pickers),
        preempt_policies=Registry("preempt policy", policies),
        backfill_policies=Registry("backfill policy", dict(BACKFILL_POLICIES)),
    )
