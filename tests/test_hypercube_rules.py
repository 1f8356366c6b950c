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
