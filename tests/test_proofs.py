"""Proofs run by plain pytest; the packaging makes topoalloc.proofs / topoalloc.ilp importable."""

from __future__ import annotations

import os
import random

import pytest

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


# ------------------------------------------------ Z3's "unknown" is never a proof


class _FakeSolver:
    def __init__(self, verdict: str, reason: str = ""):
        import z3

        self.verdict, self.reason = verdict, reason
        self.ctx, self.params = z3.main_ctx(), {}

    def set(self, *args, **kwargs):
        self.params.update(dict(zip(args[::2], args[1::2])), **kwargs)

    def check(self):
        import z3

        return {"sat": z3.sat, "unsat": z3.unsat, "unknown": z3.unknown}[self.verdict]

    def reason_unknown(self) -> str:
        return self.reason


def test_only_unsat_proves_and_unknown_raises():
    from topoalloc.proofs.base import ProofInconclusive, refuted

    fake = _FakeSolver("sat")
    assert refuted(fake) is True
    assert fake.params == {"ctrl_c": False}  # Z3's own SIGINT handler off: it can deadlock (proofs/base.py)
    assert refuted(_FakeSolver("unsat")) is False
    with pytest.raises(KeyboardInterrupt):
        refuted(_FakeSolver("unknown", "interrupted from keyboard"))
    # Ctrl-C in an incremental solver (after a push), as the torus proofs' refuter is
    with pytest.raises(KeyboardInterrupt):
        refuted(_FakeSolver("unknown", "canceled"))
    with pytest.raises(ProofInconclusive, match="timeout"):
        refuted(_FakeSolver("unknown", "timeout"))
    with pytest.raises(ProofInconclusive, match="no reason given"):
        refuted(_FakeSolver("unknown"))


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to this process from a timer thread (POSIX signals)")
@pytest.mark.parametrize("handler", ["python's", "quiet"])
@pytest.mark.parametrize("incremental", [False, True], ids=["fresh solver", "after a push"])
def test_ctrl_c_during_a_z3_check_is_not_a_proof(incremental, handler):
    """Ctrl-C stops a Z3 check at once; the proofs raise KeyboardInterrupt, never a verdict.

    The query asks for two factors below 2^31 of the prime 2^61 - 1: unsat,
    and bit-blasting it takes far longer than the half second after which
    the signal comes. Z3 answers the interrupted check ``unknown``
    ("canceled" after a push, "interrupted" from a fresh solver), which :func:`refuted` raises as KeyboardInterrupt: seen
    alone with a SIGINT handler that does not raise (``quiet``); with Python's
    own, its KeyboardInterrupt may come first.
    """
    import signal
    import threading
    import time

    import z3

    from topoalloc.proofs.base import refuted

    x, y = z3.BitVecs("x y", 64)
    s = z3.SolverFor("QF_BV")
    if incremental:
        s = z3.Solver()
        s.push()
    s.add(x * y == (1 << 61) - 1, z3.UGT(x, 1), z3.UGT(y, 1), z3.ULT(x, 1 << 31), z3.ULT(y, 1 << 31))
    previous = signal.signal(signal.SIGINT, (lambda *a: None) if handler == "quiet" else signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt, match="^Z3: (canceled|interrupted)" if handler == "quiet" else None):
            refuted(s)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 5
