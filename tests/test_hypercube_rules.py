"""Rules of the free list and the AFL pinned by scenarios the generated mutants needed (the proofs issue, item 3).

Each test here kills a mutant of ``alloc/hypercube`` that random sequences rarely
reach; the scenario was found by a search against the mutant and cut down by
hand, and the assertion says which rule it pins.
"""

from __future__ import annotations

from topoalloc.alloc import Request
from topoalloc.alloc.hypercube import AFLAllocator
from topoalloc.topology import Hypercube


def run(ops: list[tuple], allocator: AFLAllocator) -> list:
    """Apply ("mesh", X, Y), ("size", p) and ("rel", i) (release the i-th held grant); the grants held."""
    held = []
    for op in ops:
        if op[0] == "rel":
            allocator.release(held.pop(op[1]))
        else:
            req = Request(op[1] * op[2], shape=(op[1], op[2])) if op[0] == "mesh" else Request(op[1])
            got = allocator.allocate(req)
            assert got is not None, op
            held.append(got)
    return held


def test_a_release_merges_with_a_safe_mate_after_an_unsafe_one():
    """Free-list deallocation tries every complementary cube, lowest bit first, and skips a merge that would
    break a live mesh's contention freedom — it does not give up at the first unsafe one.

    A 3×10 mesh lives in the 6-cube 0******, with leftovers 0**111*, 0**10**, 0100*** and 010110*.  Jobs of
    4 and 2 nodes took 00*111* and 010111* from the first leftover (its other pieces, 011111* among them,
    stay on the auxiliary list, unowned), a 1-node job took and gave back half of the last.  When the
    2-node job ends, its mate on bit 1, 010110*, would make 01011**, which straddles two leftovers
    (unsafe); its mate on bit 4, 011111*, makes 01*111*, inside one leftover: that merge is made, and
    011111* leaves the auxiliary list.
    """
    a = AFLAllocator(Hypercube(7), pieces="as_is")
    ops = [("mesh", 10, 2), ("rel", 0), ("size", 16), ("rel", 0), ("mesh", 3, 10), ("size", 32), ("rel", 1), ("size", 1), ("rel", 1),
           ("size", 4), ("size", 2)]
    held = run(ops, a)
    assert held[-1].info["cube"] == (1, 46)  # 010111*
    assert "010110*" in [str(c) for c in a.free_cubes("fl")] and "011111*" in [str(c) for c in a.free_cubes("afl")]
    a.release(held.pop())
    assert [str(c) for c in a.free_cubes("fl")] == ["1******", "01*111*", "010110*"]
    assert [str(c) for c in a.free_cubes("afl")] == ["0**10**", "0100***"]


def test_free_list_probes_at_the_edges_of_the_machine():
    """A request of the whole machine fits the empty machine and, once every running job ends, a full one; a
    request larger than the machine never fits (``can_allocate`` says False, it does not fail)."""
    from topoalloc.alloc.hypercube import FreeListAllocator

    for cls in (FreeListAllocator, AFLAllocator):
        for n in (3, 5):
            a = cls(Hypercube(n))
            whole = Request(1 << n)
            assert a.can_allocate(whole) and a.earliest_fit(whole, []) == 0
            assert not a.can_allocate(Request((1 << n) + 1)) and not a.can_allocate(Request(1 << (n + 1)))
            held = [a.allocate(Request(1 << (n - 1))), a.allocate(Request(1 << (n - 2)))]
            assert not a.can_allocate(whole)
            assert a.earliest_fit(whole, held) == 2 and a.earliest_fit(whole, held[:1]) is None


def test_afl_with_list_recognition_fits_from_the_auxiliary_list():
    """With ``recognition="lists"`` only the lists are looked at: after a 3×3 mesh takes the whole Q4, its
    leftovers (a 2-cube, a 1-cube and a node) are on the auxiliary list only, and a 4-node request fits there."""
    a = AFLAllocator(Hypercube(4), recognition="lists")
    mesh = a.allocate(Request(9, shape=(3, 3)))
    assert mesh is not None and mesh.info["cube"] == (15, 0)
    assert not a.free_cubes("fl") and [c.dim for c in a.free_cubes("afl")] == [2, 1, 0]
    assert a.can_allocate(Request(4)) and a.can_allocate(Request(2, shape=(2, 1)))
    got = a.allocate(Request(4))
    assert got is not None and len(got.nodes) == 4
