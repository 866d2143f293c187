"""The composition root's plugin registry: built-ins plus entry-point plugins.

Third-party pickers register under the entry-point group ``xce.pickers``, each entry
point naming a factory ``(PickerConfig, CoreView) -> JobPicker`` (a picker class
whose ``__init__`` takes those two is one). Preemption policies register under
``xce.preempt_policies``, each naming a factory ``(CoreView) -> PreemptPolicy``;
backfill policies under ``xce.backfill_policies``, each naming a factory
``(reservation_depth, backfill_params) -> xce_core.backfill.Policy``. The entry
point's name is the plugin's configuration key (``job_pick_plugin``,
``preempt_policy``, ``backfill``).
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from xce_core.errors import ConfigError
from xce_core.in_tree import in_tree_registry
from xce_core.plugins import PluginRegistry, Registry

PICKER_GROUP = "xce.pickers"
PREEMPT_POLICY_GROUP = "xce.preempt_policies"
BACKFILL_POLICY_GROUP = "xce.backfill_policies"


def load_registry() -> PluginRegistry:
    """The built-in plugins plus every installed entry-point plugin.

    Raises:
        ConfigError: an entry point cannot be loaded, or reuses a registered name.
    """
    registry = in_tree_registry()
    groups: list[tuple[str, str, Registry[Any]]] = [
        (PICKER_GROUP, "picker", registry.pickers),
        (PREEMPT_POLICY_GROUP, "preempt policy", registry.preempt_policies),
        (BACKFILL_POLICY_GROUP, "backfill policy", registry.backfill_policies),
    ]
    for group, kind, target in groups:
        for entry in sorted(entry_points(group=group), key=lambda e: e.name):
            try:
                factory = entry.load()
            except Exception as exc:  # a broken third-party package, named plainly
                raise ConfigError(
                    f"{kind} plugin {entry.name!r} ({entry.value}) cannot be loaded: {exc}"
                ) from None
            target.register(entry.name, factory)
    return registry
