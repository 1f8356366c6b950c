"""Every doctest shipped in the package (topoalloc, topoalloc.proofs, topoalloc.ilp) runs, module by module."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import topoalloc


def _modules() -> list[str]:
    names = ["topoalloc"]
    for m in pkgutil.walk_packages(topoalloc.__path__, "topoalloc."):
        if not m.name.endswith("__main__"):
            names.append(m.name)
    for sub in ("topoalloc.proofs", "topoalloc.ilp"):
        pkg = importlib.import_module(sub)
        names.append(sub)
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, sub + ".")]
    return sorted(set(names))


MODULES = _modules()


def test_modules_found():
    assert {"topoalloc.spec", "topoalloc.ilp.ordering", "topoalloc.proofs.torus", "topoalloc.alloc.probes"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed in {name}"
