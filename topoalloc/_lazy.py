"""Names a package resolves on first use (PEP 562): one helper for every package that defers its imports."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["attach"]


def attach(package: str, homes: dict[str, str], public: Iterable[str] = (), *, submodules: bool = False) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: each name of ``homes`` is imported from its
    submodule (``homes[name]``) the first time it is asked for, then kept in the package's namespace.

    With ``submodules``, any other name is tried as a subpackage or submodule (``topoalloc.alloc``).
    ``public`` names are listed by ``dir()`` even before they are loaded.
    """
    listed = set(public) | set(homes)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is not None:
            value = getattr(importlib.import_module(f".{home}", package), name)
        elif submodules and not name.startswith("__"):
            try:
                value = importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | listed)

    return __getattr__, __dir__
