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


def test_afl_guard_with_mesh_candidates_is_replay():
    """EASY's guard of the AFL, with mesh requests (partial meshes leave leftovers that go live): every admit
    equals replay on a copy — the head fits once the releases (and the candidate, if it ends by the shadow
    time) have ended.  The conformance suite's requests are sizes only; a candidate placed as a partial mesh
    goes live at the shadow time, and the guard then reads the subcubes it makes unsafe."""
    import random

    from topoalloc.alloc.hypercube import FreeListAllocator
    from topoalloc.errors import InvalidArgument, RequestNeverFits
    from topoalloc.testing.conformance import _truth_after, _truth_earliest, _truth_fits

    shapes = [(3, 3), (3, 2), (2, 3), (5, 3), (3, 5), (2, 2), (4, 2), (5, 2), (6, 5), (7, 3)]
    meshes_met = 0
    for seed in range(60):
        rng = random.Random(seed)
        n = rng.choice((5, 6))
        a = AFLAllocator(Hypercube(n), recognition=rng.choice(("complete", "lists")))
        held = []
        # half the histories without meshes: no leftovers live when the guard is made, until a
        # candidate's leftovers go live
        meshes = 0.6 if seed % 2 else 0.0

        def request(meshes=0.6):
            while True:
                if rng.random() < meshes:
                    x, y = rng.choice(shapes)
                    req = Request(x * y, shape=(x, y))
                else:
                    req = Request(rng.choice((1, 2, 3, 4, 6, 8)))
                try:
                    a.check_request(req)
                except RequestNeverFits:
                    continue
                return req

        for _ in range(rng.randrange(4, 14)):
            if held and rng.random() < 0.3:
                a.release(held.pop(rng.randrange(len(held))))
            elif (got := a.allocate(request(meshes))) is not None:
                held.append(got)
        rng.shuffle(held)
        heads = [r for r in (request() for _ in range(6)) if not _truth_fits(a, r)]
        if not heads:
            continue
        head = rng.choice(heads)
        k = _truth_earliest(a, head, held)
        if k is None:
            continue
        releases = list(held[:k])
        guard = a.reservation_guard(head, list(releases))
        for _ in range(8):
            req = request()
            if not _truth_fits(a, req):
                continue
            alloc = a.allocate(req)
            ends_by = rng.random() < 0.5
            want = _truth_after(a, releases + ([alloc] if ends_by else []), head)
            meshes_met += bool(alloc.info.get("leftover"))
            assert guard.admit(alloc, ends_by) == want, (seed, req, ends_by)
            if want and ends_by:
                releases.append(alloc)
            elif not want:
                a.release(alloc)
    assert meshes_met >= 20  # partial meshes met the guard
    with __import__("pytest").raises(InvalidArgument) as e:
        FreeListAllocator(Hypercube(3), recognition="greedy")
    assert (e.value.name, e.value.value, e.value.expected) == ("recognition", "greedy", "'complete' or 'lists'")
    with __import__("pytest").raises(InvalidArgument) as e:
        AFLAllocator(Hypercube(3), pieces="split")
    assert (e.value.name, e.value.value, e.value.expected) == ("pieces", "split", "'merge' or 'as_is'")
    for recognition in ("complete", "lists"):  # the AFL passes its recognition on to the free list
        assert AFLAllocator(Hypercube(3), recognition=recognition).recognition == recognition
    with __import__("pytest").raises(InvalidArgument) as e:  # the rule is checked when the allocator is made
        FreeListAllocator(Hypercube(3), shape_rule="round")
    assert (e.value.name, e.value.value) == ("shape_rule", "round")


def test_a_hypercube_refuses_a_dimension_out_of_range_by_name():
    import pytest

    from topoalloc.errors import InvalidArgument
    from topoalloc.topology.hypercube import MAX_DIM

    for n in (-1, MAX_DIM + 1, 2.5):
        with pytest.raises(InvalidArgument) as e:
            Hypercube(n)
        assert (e.value.name, e.value.value, e.value.expected) == ("n", n, f"a hypercube dimension in 0..{MAX_DIM}")
