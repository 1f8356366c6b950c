"""Proofs run by plain pytest; the packaging makes topoalloc.proofs / topoalloc.ilp importable."""

from __future__ import annotations

import random

import topoalloc  # noqa: F401
from topoalloc.alloc import FlatAllocator, Request
from topoalloc.proofs import ProofResult, prove_partition
from topoalloc.topology import FlatTopology


def test_packaged_namespaces():
    import topoalloc.ilp
    import topoalloc.proofs

    assert topoalloc.proofs.__file__ and topoalloc.ilp.__file__


def test_flat_allocator_output_partitions_the_machine():
    """Held allocations and the free nodes the allocator reports partition the machine (Z3)."""
    rng = random.Random(7)
    a = FlatAllocator(FlatTopology(256))
    held = []
    for _ in range(300):
        if held and rng.random() < 0.45:
            a.release(held.pop(rng.randrange(len(held))))
        else:
            got = a.allocate(Request(rng.randint(1, 40)))
            if got is not None:
                held.append(got)
    pieces = [x.nodes.tolist() for x in held] + [a.free_nodes().tolist()]
    res = prove_partition(pieces, range(256), size="flat:256")
    assert isinstance(res, ProofResult) and res.holds, str(res)


def test_counterexamples_are_reported():
    res = prove_partition([[0, 1, 2], [2, 3]], range(4))
    assert not res.holds and res.counterexample == {"property": "disjoint", "node": 2, "pieces": [0, 1]}
    res = prove_partition([[0, 1], [3]], range(4))
    assert not res.holds and res.counterexample["node"] == 2 and res.counterexample["property"] == "cover"
    res = prove_partition([[0, 1], [2, 3, 9]], range(4))
    assert not res.holds and res.counterexample["node"] == 9


def test_every_source_package_is_installed():
    """Each folder of the source tree with an __init__.py is part of the installed package."""
    import importlib

    from .conftest import ROOT

    for init in sorted((ROOT / "topoalloc").rglob("__init__.py")):
        name = ".".join(init.parent.relative_to(ROOT).parts)
        importlib.import_module(name)
