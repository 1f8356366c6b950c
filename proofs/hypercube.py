"""Z3 proofs about the hypercube allocators (Turner 1997, §3.2–§3.3).

From the implementation's own output (:class:`~topoalloc.alloc.hypercube.AFLAllocator`
allocating one X×Y mesh on a fresh k-cube, ``k = ⌈log₂X⌉ + ⌈log₂Y⌉``):

* :func:`prove_mesh_tiling` — the mesh's nodes and the leftover subcubes are
  pairwise disjoint and together exactly the k-cube (every leftover is a
  subcube by construction: an address over {0, 1, *});
* :func:`prove_theorem1` — **Theorem 1**: no channel is used both by an E-cube
  message between two mesh nodes and by one between two nodes of any leftover
  cube.  By Lemma 1 the route S → D uses the channel leaving node C across
  dimension d iff bit d of S and D differ, ``S >> d == C >> d`` and
  ``D mod 2**d == C mod 2**d``; so two routes S1 → D1 and S2 → D2 share a
  channel iff, for some d, S1 and S2 agree on bits ≥ d, D1 and D2 agree on
  bits ≤ d, and S1, D1 differ at bit d.  Z3 looks for such S1, D1 in the
  mesh and S2, D2 in one leftover.

Symbolically in n (bit-vectors of width n, no enumeration of nodes):

* :func:`prove_brgc_dilation` — consecutive n-bit BRGC codewords (cyclically)
  differ in exactly one bit;
* :func:`prove_lemma1` — the node an E-cube route (lowest differing bit
  first) is at before it corrects bit d is ``(S with bits < d from D)``; it
  uses the channel (C, d) exactly under Lemma 1's three conditions, and every
  node of a route between two nodes of a subcube lies in the subcube.

A failed proof returns Z3's model as the counterexample.
"""

from __future__ import annotations

import time

import numpy as np

from ..alloc.base import Request
from ..alloc.hypercube import AFLAllocator
from ..alloc.hypercube.embedding import ceil_log2, cluster_partition, deposit_cube
from ..topology.hypercube import Hypercube, Subcube
from .base import ProofResult

__all__ = [
    "afl_output",
    "prove_mesh_tiling",
    "prove_theorem1",
    "prove_afl_mesh",
    "prove_brgc_dilation",
    "prove_lemma1",
    "mesh_shapes",
    "hypercube_rows",
]


def afl_output(x: int, y: int) -> tuple[int, np.ndarray, list[tuple[int, int]], list[tuple[int, int]]]:
    """``(k, mesh nodes, leftover cubes, mesh cubes)`` as the AFL allocator produces them on a fresh k-cube.

    The mesh cubes are the cluster partitioning algorithm's output (Figure
    3.7, what AFL deallocation uses); the proofs use them to write mesh
    membership compactly, after checking that their nodes are exactly the
    allocated nodes (an exact set comparison, raised as a failed proof if not).
    """
    k = ceil_log2(x) + ceil_log2(y)
    a = AFLAllocator(Hypercube(k))
    got = a.allocate(Request(x * y, (x, y)))
    mesh_cubes = [deposit_cube(c, got.info["cube"]) for c in cluster_partition(x, y)]
    return k, got.nodes, list(got.info["leftover"]), mesh_cubes


def _mesh_cubes_match(nodes: np.ndarray, mesh_cubes, k: int) -> bool:
    listed = np.sort(np.concatenate([Subcube(k, *c).nodes() for c in mesh_cubes])) if mesh_cubes else np.zeros(0, np.int64)
    return np.array_equal(listed, np.asarray(nodes))


def _runs(nodes: np.ndarray) -> list[tuple[int, int]]:
    arr = np.asarray(nodes, dtype=np.int64)
    if arr.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(arr) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [arr.size - 1]])
    return [(int(arr[s]), int(arr[e])) for s, e in zip(starts, ends)]


def _in_runs(v, runs, width):
    import z3

    terms = [v == z3.BitVecVal(lo, width) if lo == hi else z3.And(z3.UGE(v, lo), z3.ULE(v, hi)) for lo, hi in runs]
    return z3.Or(terms) if len(terms) != 1 else terms[0]


def _in_cube(v, cube, width):
    free, value = cube
    mask = ((1 << width) - 1) ^ free
    return v & mask == value


def prove_mesh_tiling(x: int, y: int, out=None) -> ProofResult:
    """Mesh nodes and leftover subcubes are pairwise disjoint and cover exactly the k-cube."""
    import z3

    t0 = time.perf_counter()
    k, nodes, lefts, mesh_cubes = out or afl_output(x, y)
    if not _mesh_cubes_match(nodes, mesh_cubes, k):
        return ProofResult("mesh+leftovers tile the k-cube", False, time.perf_counter() - t0, f"{x}x{y}", {"mesh cubes": "cluster partition differs from the allocated nodes"})
    w = max(k, 1)
    v = z3.BitVec("node", w)
    members = [z3.Or([_in_cube(v, c, w) for c in mesh_cubes])] + [_in_cube(v, c, w) for c in lefts]
    s = z3.SolverFor("QF_BV")
    if k < w:
        s.add(v == 0)
    s.add(z3.Not(z3.PbEq([(m, 1) for m in members], 1)))
    if s.check() == z3.sat:
        node = s.model().eval(v).as_long()
        where = [i for i, m in enumerate(members) if z3.is_true(s.model().eval(m))]
        ce = {"node": node, "in": ["mesh" if i == 0 else str(Subcube(k, *lefts[i - 1])) for i in where]}
        return ProofResult("mesh+leftovers tile the k-cube", False, time.perf_counter() - t0, f"{x}x{y}", ce)
    return ProofResult("mesh+leftovers tile the k-cube", True, time.perf_counter() - t0, f"{x}x{y}", None, {"k": k, "leftovers": len(lefts)})


def prove_theorem1(x: int, y: int, out=None) -> ProofResult:
    """Theorem 1: no E-cube channel is used both inside the mesh and inside any leftover cube."""
    import z3

    t0 = time.perf_counter()
    k, nodes, lefts, mesh_cubes = out or afl_output(x, y)
    name = "Theorem 1: mesh and leftovers share no E-cube channel"
    if not _mesh_cubes_match(nodes, mesh_cubes, k):
        return ProofResult(name, False, time.perf_counter() - t0, f"{x}x{y}", {"mesh cubes": "cluster partition differs from the allocated nodes"})
    if k == 0 or not lefts:
        return ProofResult(name, True, time.perf_counter() - t0, f"{x}x{y}", None, {"k": k, "leftovers": 0})
    s1, d1, s2, d2 = (z3.BitVec(n, k) for n in ("S1", "D1", "S2", "D2"))
    s = z3.SolverFor("QF_BV")
    s.add(z3.Or([_in_cube(s1, c, k) for c in mesh_cubes]), z3.Or([_in_cube(d1, c, k) for c in mesh_cubes]))
    s.add(z3.Or([z3.And(_in_cube(s2, c, k), _in_cube(d2, c, k)) for c in lefts]))
    shares = []
    for d in range(k):
        shares.append(z3.And(
            z3.Extract(k - 1, d, s1) == z3.Extract(k - 1, d, s2),
            z3.Extract(d, 0, d1) == z3.Extract(d, 0, d2),
            z3.Extract(d, d, s1) != z3.Extract(d, d, d1),
        ))
    s.add(z3.Or(shares))
    if s.check() == z3.sat:
        m = s.model()
        ce = {n: m.eval(v).as_long() for n, v in (("S1", s1), ("D1", d1), ("S2", s2), ("D2", d2))}
        return ProofResult(name, False, time.perf_counter() - t0, f"{x}x{y}", ce)
    return ProofResult(name, True, time.perf_counter() - t0, f"{x}x{y}", None, {"k": k, "leftovers": len(lefts)})


def prove_afl_mesh(x: int, y: int) -> tuple[ProofResult, ProofResult]:
    out = afl_output(x, y)
    return prove_mesh_tiling(x, y, out), prove_theorem1(x, y, out)


def mesh_shapes(max_n: int) -> list[tuple[int, int]]:
    """Every (X, Y) whose BRGC embedding needs at most a ``max_n``-cube."""
    out = []
    for x in range(1, (1 << max_n) + 1):
        t = ceil_log2(x)
        for y in range(1, (1 << (max_n - t)) + 1):
            out.append((x, y))
    return out


def prove_brgc_dilation(n: int) -> ProofResult:
    """∀ i < 2**n (n-bit vectors): g(i) and g(i+1 mod 2**n) differ in exactly one bit, g(i) = i ^ (i >> 1)."""
    import z3

    t0 = time.perf_counter()
    i = z3.BitVec("i", n)
    j = i + 1  # wraps to 0 after 2**n - 1: the cyclic pair (last, first)
    g = lambda v: v ^ z3.LShR(v, 1)  # noqa: E731
    diff = g(i) ^ g(j)
    s = z3.Solver()
    s.add(z3.Or(diff == 0, diff & (diff - 1) != 0))
    name = "BRGC: consecutive codewords differ in one bit (dilation 1)"
    if s.check() == z3.sat:
        return ProofResult(name, False, time.perf_counter() - t0, f"n={n}", {"i": s.model().eval(i).as_long()})
    return ProofResult(name, True, time.perf_counter() - t0, f"n={n}")


def prove_lemma1(n: int) -> ProofResult:
    """Lemma 1 and subcube closure of E-cube routes, for all n-bit S, D, C, d and subcubes (free, value)."""
    import z3

    t0 = time.perf_counter()
    name = "Lemma 1: E-cube channel conditions; routes stay in their subcube"
    w = n + 1  # one spare bit so that 1 << (d + 1) does not overflow
    S, D, C, F, V, d = (z3.BitVec(v, w) for v in ("S", "D", "C", "free", "value", "d"))
    top = z3.BitVecVal((1 << n) - 1, w)
    one = z3.BitVecVal(1, w)
    low = (one << d) - 1  # bits below d
    # the node the E-cube route is at before correcting bit d: bits >= d from S, bits < d from D
    here = (S & ~low) | (D & low)
    hop = z3.LShR(S ^ D, d) & 1 == 1  # the route crosses dimension d
    uses = z3.And(hop, here == C)  # the route uses channel (C, d, bit of S)
    lemma = z3.And(z3.LShR(S, d) == z3.LShR(C, d), D & low == C & low, hop)
    dom = z3.And(z3.ULE(S, top), z3.ULE(D, top), z3.ULE(C, top), z3.ULT(d, n))
    s = z3.Solver()
    s.add(dom, uses != lemma)
    if s.check() == z3.sat:
        m = s.model()
        return ProofResult(name, False, time.perf_counter() - t0, f"n={n}", {k: m.eval(v).as_long() for k, v in (("S", S), ("D", D), ("C", C), ("d", d))})
    # closure: S, D in the subcube (value fixed outside free) -> every intermediate node too
    s = z3.Solver()
    incube = lambda v: v & ~F == V  # noqa: E731
    s.add(dom, z3.ULE(F, top), V & F == 0, z3.ULE(V, top), incube(S), incube(D), z3.Not(incube(here)))
    if s.check() == z3.sat:
        m = s.model()
        return ProofResult(name, False, time.perf_counter() - t0, f"n={n}", {k: m.eval(v).as_long() for k, v in (("S", S), ("D", D), ("free", F), ("value", V), ("d", d))})
    return ProofResult(name, True, time.perf_counter() - t0, f"n={n}")


def hypercube_rows(*, max_n: int = 10, symbolic_n: int = 64) -> list[dict]:
    """Every hypercube proof, summarised (``topoalloc prove hypercube``)."""
    from .report import summarise

    shapes = mesh_shapes(max_n)
    tiling, thm = [], []
    for x, y in shapes:
        a, b = prove_afl_mesh(x, y)
        tiling.append(a)
        thm.append(b)
    largest = lambda r: (r.details.get("k", 0), r.details.get("leftovers", 0))  # noqa: E731  (the biggest cube, most leftovers)
    rows = [
        summarise(f"AFL: mesh + leftover subcubes tile the k-cube (every X×Y, k <= {max_n})", tiling, largest=largest),
        summarise(f"Theorem 1: no E-cube channel shared by mesh and a leftover (every X×Y, k <= {max_n})", thm, largest=largest),
    ]
    ns = list(range(1, symbolic_n + 1))
    rows.append(summarise("BRGC dilation 1, symbolic in the codeword (n-bit vectors)", [prove_brgc_dilation(n) for n in ns], largest=lambda r: int(r.size[2:])))
    rows.append(summarise("Lemma 1 + routes stay in subcubes, symbolic in S, D, C, d, subcube", [prove_lemma1(n) for n in ns], largest=lambda r: int(r.size[2:])))
    return rows
