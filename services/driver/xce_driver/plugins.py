"""The composition root's plugin registry: built-ins plus entry-point plugins.

Third-party pickers register under the entry-point group ``xce.pickers``, each entry
point naming a factory ``(PickerConfig, CoreView) -> JobPicker`` (a picker class
whose ``__init__`` takes those two is one). The entry point's name is the picker's
configuration key.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from xce_core.errors import ConfigError
from xce_core.in_tree import in_tree_registry
from xce_core.plugins import PluginRegistry

PICKER_GROUP = "xce.pickers"


def load_registry() -> PluginRegistry:
    """The built-in plugins plus every installed entry-point plugin.

    Raises:
        ConfigError: an entry point cannot be loaded, or reuses a registered name.
    """
    registry = in_tree_registry()
    for entry in sorted(entry_points(group=PICKER_GROUP), key=lambda e: e.name):
        try:
            factory = entry.load()
        except Exception as exc:  # a broken third-party package, named plainly
            raise ConfigError(
                f"picker plugin {entry.name!r} ({entry.value}) cannot be loaded: {exc}"
            ) from None
        registry.pickers.register(entry.name, factory)
    return registry
