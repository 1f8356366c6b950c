"""Components from other packages: ``--plugin MODULE`` and the ``topoalloc.plugins`` entry points.

A plugin is any importable module that registers allocators, topologies,
schedulers or metrics when it is imported (``@ALLOCATORS.register(...)``).
Installed packages announce theirs as entry points::

    [project.entry-points."topoalloc.plugins"]
    mine = "my_package.allocators"

:func:`load_plugins` imports every announced module and the ones named; the
command line calls it before it looks any name up.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.metadata import entry_points

from .errors import InvalidArgument

__all__ = ["GROUP", "load_plugins"]

GROUP = "topoalloc.plugins"


def load_plugins(modules: Iterable[str] = (), *, entry_point_group: str = GROUP) -> list[str]:
    """Import the plugin ``modules`` and every module announced in ``entry_point_group``; return their names.

    Raises
    ------
    InvalidArgument
        A module that cannot be imported (naming it and the reason).
    """
    loaded = []
    for ep in entry_points(group=entry_point_group):
        try:
            ep.load()
        except Exception as exc:  # a broken third-party plugin: say which, do not hide it
            raise InvalidArgument(f"entry point {ep.name}", ep.value, f"an importable plugin module ({type(exc).__name__}: {exc})") from None
        loaded.append(ep.value)
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise InvalidArgument("--plugin", name, f"an importable module ({exc})") from None
        loaded.append(name)
    return loaded
