"""Every built-in plugin, in one literal (Kubernetes' ``NewInTreeRegistry``).

Third-party plugins are merged in by the composition root from entry points; the
core itself reads no entry points.
"""

from __future__ import annotations

from xce_core.pickers.builtin_fcfs import BuiltinFcfs
from xce_core.plugins import PickerFactory, PluginRegistry, Registry

#: The picker used when the configuration names none (Req 5 AC 1, Req 8 AC 1).
DEFAULT_PICKER = BuiltinFcfs.name


def in_tree_registry() -> PluginRegistry:
    """A fresh registry holding every built-in plugin."""
    pickers: dict[str, PickerFactory] = {BuiltinFcfs.name: BuiltinFcfs}
    return PluginRegistry(pickers=Registry("picker", pickers))
