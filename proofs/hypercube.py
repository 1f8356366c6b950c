"""Proofs about the hypercube allocators and E-cube routing (Turner 1997, §3.2–§3.3).

Independent specifications, written here and never taken from the code
under test:

* **E-cube routing** (:func:`ecube_definition`): from the current node,
  correct the lowest-order bit in which it differs from the destination;
  repeat.  A hop is the channel ``(node, dimension, ±1)``, +1 for a bit
  going 0 → 1.
* **Subcube membership**: node ``v`` is in the cube ``(free, value)`` iff
  ``v & ~free == value``; its nodes are enumerated from that alone.
* **The binary-reflected Gray code**: ``g(i) = i ^ (i >> 1)``.

What each theorem assumes and derives:

=====================  ========================================================  ============
row                    assumed (taken from the implementation) → derived here    method
=====================  ========================================================  ============
E-cube code            the code's ``ecube_route`` / ``ecube_channels`` output;   exhaustive
                       checked equal to :func:`ecube_definition` for every pair
Lemma 1                nothing: the route is unrolled from the definition in      model
                       Z3 (bit-vectors of width n); derived: the route uses
                       channel (C, d) iff Lemma 1's three conditions; it stays
                       in any subcube holding S and D, and ends at D
channel sets           the code's ``channels_within`` / ``shared_channels``       exhaustive
                       output; checked equal to channel sets of routes
                       enumerated from the definition
BRGC dilation 1        nothing: a lemma about ``g`` (symbolic, widths 1..64);     model
                       linked to the code: ``brgc``, ``embed_mesh``, the Gray
                       curve and the Gray-code allocator's table equal ``g``
                       (exhaustive)
AFL embedding          the AFL allocator's mesh nodes and ``embed_mesh``;         exhaustive
                       derived: neighbouring mesh positions sit on addresses
                       one bit apart, all distinct, exactly the allocated nodes
tiling                 the allocated nodes and leftover cubes; Z3 over every      symbolic
                       k-bit node: each in exactly one of mesh / leftovers
Theorem 1              the same output; channels by Lemma 1 (proved above);       symbolic
                       Z3 over every S1, D1 (mesh) and S2, D2 (one leftover)
=====================  ========================================================  ============

The mesh's membership is written as its cluster-partition cubes (Figure
3.7, what AFL deallocation uses) after checking exactly that their nodes,
enumerated from the definition of a cube, are the allocated nodes.

A failed proof returns the counterexample in the problem's own terms.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..alloc.base import Request
from ..alloc.hypercube import AFLAllocator
from ..alloc.hypercube.embedding import ceil_log2, cluster_partition, deposit_cube
from ..topology.hypercube import Hypercube, Subcube
from .base import ProofResult, refuted

__all__ = [
    "afl_output",
    "prove_mesh_tiling",
    "prove_theorem1",
    "prove_afl_mesh",
    "prove_brgc_dilation",
    "prove_lemma1",
    "ecube_definition",
    "prove_ecube_code",
    "definition_channels",
    "prove_channel_sets",
    "channel_set_cases",
    "prove_gray_code_link",
    "prove_embedding_dilation",
    "cube_nodes",
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


def cube_nodes(cube: tuple[int, int], n: int) -> np.ndarray:
    """Nodes of the cube ``(free, value)`` in Qn, from the definition: every ``v`` with ``v & ~free == value``."""
    free, value = cube
    v = np.arange(1 << n, dtype=np.int64)
    return v[(v & ~free) == value]


def _mesh_cubes_match(nodes: np.ndarray, mesh_cubes, k: int) -> bool:
    listed = np.sort(np.concatenate([cube_nodes(c, k) for c in mesh_cubes])) if mesh_cubes else np.zeros(0, np.int64)
    return np.array_equal(listed, np.asarray(nodes))


# The tiling and Theorem 1 are proved for thousands of meshes (6,144 up to
# Q10), each a small QF_BV problem. They are written as SMT-LIB text and
# checked in one incremental solver, each in a push/pop scope of its own:
# building them term by term through the Python API and a fresh solver per
# problem cost about four times as long, nearly all of it outside the solving
# (31 s against 8 s for the Q10 meshes). The formulas are the same.


class _Checker:
    """One QF_BV solver for many small problems; each problem's constants get names of their own.

    The solver's SMT-LIB parser keeps every declaration, also after a pop, so
    each problem's constants carry a fresh suffix; the solver is renewed
    every ``RENEW`` problems so that they do not pile up.
    """

    RENEW = 1000

    def __init__(self) -> None:
        import z3

        self._solver = z3.SolverFor("QF_BV")
        self._n = 0

    def check(self, names: Sequence[str], width: int, assertions: Sequence[str]) -> dict[str, int] | None:
        """``None`` if the assertions over bit-vector constants ``names`` are unsatisfiable, else a model."""
        import z3

        self._n += 1
        if self._n % self.RENEW == 0:
            # a new solver now and then: the old one keeps every declaration
            self._solver = z3.SolverFor("QF_BV")
        sfx = f"!{self._n}"
        decl = "".join(f"(declare-const {n}{sfx} (_ BitVec {width}))" for n in names)
        body = "".join(f"(assert {a.format(**{n: n + sfx for n in names})})" for a in assertions)
        s = self._solver
        s.push()
        try:
            s.from_string(decl + body)
            if not refuted(s):
                return None
            m = s.model()
            return {n: m.eval(z3.BitVec(n + sfx, width), model_completion=True).as_long() for n in names}
        finally:
            s.pop()


def _bv(value: int, width: int) -> str:
    return f"(_ bv{value} {width})"


def _smt_in_cube(var: str, cube: tuple[int, int], width: int) -> str:
    """``var & ~free == value`` (subcube membership by its definition), as SMT-LIB; ``var`` is a format field."""
    free, value = cube
    mask = ((1 << width) - 1) ^ free
    return f"(= (bvand {{{var}}} {_bv(mask, width)}) {_bv(value, width)})"


def _smt_any(terms: Sequence[str]) -> str:
    if not terms:
        return "false"
    return terms[0] if len(terms) == 1 else "(or " + " ".join(terms) + ")"


def prove_mesh_tiling(x: int, y: int, out=None, *, checker: _Checker | None = None) -> ProofResult:
    """Mesh nodes and leftover subcubes are pairwise disjoint and cover exactly the k-cube.

    Z3 looks for a k-bit node in none or in more than one of: the mesh (its
    cluster-partition cubes), each leftover cube. ``checker`` shares one
    solver across many meshes (:func:`hypercube_rows`).
    """
    t0 = time.perf_counter()
    k, nodes, lefts, mesh_cubes = out or afl_output(x, y)
    if not _mesh_cubes_match(nodes, mesh_cubes, k):
        return ProofResult("mesh+leftovers tile the k-cube", False, time.perf_counter() - t0, f"{x}x{y}", {"mesh cubes": "cluster partition differs from the allocated nodes"})
    w = max(k, 1)
    members = [_smt_any([_smt_in_cube("node", c, w) for c in mesh_cubes])] + [_smt_in_cube("node", c, w) for c in lefts]
    facts = [f"(not ((_ pbeq 1 {' '.join(['1'] * len(members))}) {' '.join(members)}))"]
    if k < w:
        facts.append(f"(= {{node}} {_bv(0, w)})")
    model = (checker or _Checker()).check(["node"], w, facts)
    if model is not None:
        node = model["node"]
        inside = lambda c: node & (((1 << w) - 1) ^ c[0]) == c[1]  # noqa: E731  (membership by the definition)
        where = (["mesh"] if any(inside(c) for c in mesh_cubes) else []) + [str(Subcube(k, *c)) for c in lefts if inside(c)]
        return ProofResult("mesh+leftovers tile the k-cube", False, time.perf_counter() - t0, f"{x}x{y}", {"node": node, "in": where})
    return ProofResult("mesh+leftovers tile the k-cube", True, time.perf_counter() - t0, f"{x}x{y}", None, {"k": k, "leftovers": len(lefts), "method": "symbolic"})


def prove_theorem1(x: int, y: int, out=None, *, checker: _Checker | None = None) -> ProofResult:
    """Theorem 1: no E-cube channel is used both inside the mesh and inside any leftover cube.

    Z3 looks for S1, D1 in the mesh and S2, D2 in one leftover cube whose
    routes share a channel: by Lemma 1, a dimension d where ``S1 >> d ==
    S2 >> d``, ``D1 mod 2^(d+1) == D2 mod 2^(d+1)`` and bit d of S1 and D1
    differ.
    """
    t0 = time.perf_counter()
    k, nodes, lefts, mesh_cubes = out or afl_output(x, y)
    name = "Theorem 1: mesh and leftovers share no E-cube channel"
    if not _mesh_cubes_match(nodes, mesh_cubes, k):
        return ProofResult(name, False, time.perf_counter() - t0, f"{x}x{y}", {"mesh cubes": "cluster partition differs from the allocated nodes"})
    if k == 0 or not lefts:
        return ProofResult(name, True, time.perf_counter() - t0, f"{x}x{y}", None, {"k": k, "leftovers": 0, "method": "symbolic"})
    shares = [
        f"(and (= ((_ extract {k - 1} {d}) {{S1}}) ((_ extract {k - 1} {d}) {{S2}}))"
        f" (= ((_ extract {d} 0) {{D1}}) ((_ extract {d} 0) {{D2}}))"
        f" (not (= ((_ extract {d} {d}) {{S1}}) ((_ extract {d} {d}) {{D1}}))))"
        for d in range(k)
    ]
    facts = [
        _smt_any([_smt_in_cube("S1", c, k) for c in mesh_cubes]),
        _smt_any([_smt_in_cube("D1", c, k) for c in mesh_cubes]),
        _smt_any([f"(and {_smt_in_cube('S2', c, k)} {_smt_in_cube('D2', c, k)})" for c in lefts]),
        _smt_any(shares),
    ]
    model = (checker or _Checker()).check(["S1", "D1", "S2", "D2"], k, facts)
    if model is not None:
        return ProofResult(name, False, time.perf_counter() - t0, f"{x}x{y}", model)
    return ProofResult(name, True, time.perf_counter() - t0, f"{x}x{y}", None, {"k": k, "leftovers": len(lefts), "method": "symbolic"})


def prove_afl_mesh(x: int, y: int, *, checker: _Checker | None = None) -> tuple[ProofResult, ProofResult]:
    out = afl_output(x, y)
    checker = checker or _Checker()
    return prove_mesh_tiling(x, y, out, checker=checker), prove_theorem1(x, y, out, checker=checker)


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
    if refuted(s):
        return ProofResult(name, False, time.perf_counter() - t0, f"n={n}", {"i": s.model().eval(i).as_long()})
    return ProofResult(name, True, time.perf_counter() - t0, f"n={n}", None, {"method": "model"})


def ecube_definition(s: int, d: int) -> list[tuple[int, int, int]]:
    """The E-cube route from ``s`` to ``d`` by its definition: the channels ``(node, dimension, direction)``.

    From the current node, correct the lowest-order bit in which it differs
    from ``d``; repeat until there.  Direction +1 for a bit going 0 → 1.

    >>> ecube_definition(0b0100, 0b1010)
    [(4, 1, 1), (6, 2, -1), (2, 3, 1)]
    """
    out = []
    v = s
    while v != d:
        diff = v ^ d
        low = diff & -diff
        dim = low.bit_length() - 1
        out.append((v, dim, 1 if not v & low else -1))
        v ^= low
    return out


def prove_ecube_code(n: int) -> ProofResult:
    """The code's E-cube routes equal the definition, for every ordered pair of nodes of Qn (exhaustive).

    Checks ``topoalloc.topology.hypercube.ecube_route`` (the nodes),
    ``ecube_channels`` (the channels) and ``Hypercube.route``.
    """
    from ..topology.hypercube import ecube_channels, ecube_route

    t0 = time.perf_counter()
    name = "E-cube: the code's routes = the definition"
    q = Hypercube(n)
    for a in range(1 << n):
        for b in range(1 << n):
            want = ecube_definition(a, b)
            nodes = [a] + [c[0] ^ (1 << c[1]) for c in want]
            got_nodes = ecube_route(a, b)
            got = [tuple(c) for c in ecube_channels(a, b)]
            if got_nodes != nodes or got != want or q.route(a, b) != nodes:
                return ProofResult(name, False, time.perf_counter() - t0, f"n={n}", {"pair": (a, b), "code": got, "definition": want})
    return ProofResult(name, True, time.perf_counter() - t0, f"n={n}", None, {"cases": 1 << (2 * n), "method": "exhaustive"})


def prove_lemma1(n: int) -> ProofResult:
    """Lemma 1, subcube closure and arrival, from the definition of E-cube routing, for all n-bit S, D, C, d and subcubes.

    The route is unrolled in Z3 exactly as :func:`ecube_definition` walks it
    (n steps: ``v ← v ^ lowbit(v ^ D)``, a step using channel ``(v, d)`` when
    ``lowbit(v ^ D) = 2^d``).  Z3 then proves, over all values: the route
    uses channel ``(C, d)`` iff (1) bit d of S and D differ, (2) ``S >> d ==
    C >> d`` and (3) ``D mod 2^d == C mod 2^d`` (Lemma 1); every node of the
    route lies in any subcube ``(free, value)`` holding S and D; after n
    steps the route is at D.
    """
    import z3

    t0 = time.perf_counter()
    name = "Lemma 1: E-cube channel conditions; routes stay in their subcube"
    w = n + 1  # one spare bit so that 1 << d never overflows
    S, D, C, F, V, d = (z3.BitVec(v, w) for v in ("S", "D", "C", "free", "value", "d"))
    top = z3.BitVecVal((1 << n) - 1, w)
    one = z3.BitVecVal(1, w)
    bit = one << d
    low = bit - 1  # bits below d
    incube = lambda v: v & ~F == V  # noqa: E731
    v = S
    uses, stays = [], []
    for _ in range(n):
        diff = v ^ D
        lowbit = diff & -diff
        uses.append(z3.And(diff != 0, lowbit == bit, v == C))
        stays.append(incube(v))
        v = v ^ lowbit
    lemma = z3.And(z3.LShR(S, d) == z3.LShR(C, d), D & low == C & low, z3.LShR(S ^ D, d) & 1 == 1)
    dom = z3.And(z3.ULE(S, top), z3.ULE(D, top), z3.ULE(C, top), z3.ULT(d, n))
    s = z3.Solver()
    s.add(dom, z3.Or(uses) != lemma)
    if refuted(s):
        m = s.model()
        return ProofResult(name, False, time.perf_counter() - t0, f"n={n}", {k: m.eval(x).as_long() for k, x in (("S", S), ("D", D), ("C", C), ("d", d))})
    s = z3.Solver()
    s.add(dom, z3.ULE(F, top), V & F == 0, z3.ULE(V, top), incube(S), incube(D), z3.Not(z3.And(*stays, v == D)))
    if refuted(s):
        m = s.model()
        return ProofResult(name, False, time.perf_counter() - t0, f"n={n}", {k: m.eval(x).as_long() for k, x in (("S", S), ("D", D), ("free", F), ("value", V))})
    return ProofResult(name, True, time.perf_counter() - t0, f"n={n}", None, {"method": "model"})


def definition_channels(nodes, n: int) -> set[tuple[int, int, int]]:
    """Every channel used by an E-cube route between two nodes of ``nodes``, routes enumerated by the definition."""
    arr = sorted({int(v) for v in nodes})
    out: set[tuple[int, int, int]] = set()
    for a in arr:
        for b in arr:
            out.update(ecube_definition(a, b))
    return out


def prove_channel_sets(n: int, node_sets: list, *, label: str = "") -> ProofResult:
    """The code's channel sets equal those of routes enumerated from the definition (exhaustive).

    For every node set A given: ``channels_within(A, n)`` equals the
    channels of every route inside A; for every pair (A, B) of consecutive
    sets, ``shared_channels(A, B, n)`` equals the intersection of the two.
    """
    from ..topology.hypercube import channels_within, shared_channels

    t0 = time.perf_counter()
    name = "channel sets: the code's = routes enumerated from the definition"
    defs = [definition_channels(a, n) for a in node_sets]
    for a, want in zip(node_sets, defs):
        got = {tuple(c) for c in channels_within(np.asarray(sorted(a), dtype=np.int64), n)}
        if got != want:
            return ProofResult(name, False, time.perf_counter() - t0, label or f"n={n}", {"set": sorted(a)[:16], "code_only": sorted(got - want)[:4], "definition_only": sorted(want - got)[:4]})
    for i in range(len(node_sets) - 1):
        a, b = node_sets[i], node_sets[i + 1]
        got = {tuple(c) for c in shared_channels(np.asarray(sorted(a), dtype=np.int64), np.asarray(sorted(b), dtype=np.int64), n)}
        want = defs[i] & defs[i + 1]
        if got != want:
            return ProofResult(name, False, time.perf_counter() - t0, label or f"n={n}", {"sets": (sorted(a)[:8], sorted(b)[:8]), "code_only": sorted(got - want)[:4], "definition_only": sorted(want - got)[:4]})
    return ProofResult(name, True, time.perf_counter() - t0, label or f"n={n}", None, {"cases": len(node_sets), "method": "exhaustive"})


def channel_set_cases(max_n: int, seed: int = 0) -> list[tuple[int, list, str]]:
    """The node sets the channel-set row checks: every subset of Q3; every AFL mesh of Q1..Q``max_n``
    with each of its leftover cubes (nodes from the definition of a cube); seeded random subsets of Q4..Q``max_n``."""
    import random

    cases = [(3, [[v for v in range(8) if mask >> v & 1] for mask in range(1, 256)], "every subset of Q3")]
    for x, y in mesh_shapes(max_n):
        k, nodes, lefts, _ = afl_output(x, y)
        if k == 0:
            continue
        sets = [list(map(int, nodes))] + [cube_nodes(c, k).tolist() for c in lefts]
        cases.append((k, sets, f"{x}x{y} mesh and leftovers"))
    rng = random.Random(seed)
    for n in range(4, max_n + 1):
        sets = [rng.sample(range(1 << n), rng.randint(1, 1 << (n - 1))) for _ in range(20)]
        cases.append((n, sets, f"20 random subsets of Q{n}"))
    return cases


def prove_gray_code_link(max_n: int, max_bits: int = 16) -> ProofResult:
    """The code's Gray codes equal ``g(i) = i ^ (i >> 1)``, the formula the BRGC lemma is about (exhaustive).

    Checked: ``embedding.brgc(i)`` for every ``i < 2^max_bits``; the Gray
    curve ``curves.gray(2^b)`` for every ``b <= max_bits``; the mesh
    embedding ``embed_mesh(X, Y)`` = ``g(x) · 2^m + g(y)`` for every mesh
    fitting Q``max_n``; the Gray-code allocator's blocks (consecutive ``g``
    values from multiples of half a block, cyclically) for every n <= 8.
    """
    from ..alloc.hypercube.allocators import GrayCodeAllocator, _gray_order
    from ..topology.hypercube import Hypercube
    from ..alloc.hypercube.embedding import brgc, embed_mesh
    from ..curves.grid import gray

    t0 = time.perf_counter()
    name = "the code's Gray codes = g"
    g = lambda i: i ^ (i >> 1)  # noqa: E731
    idx = np.arange(1 << max_bits, dtype=np.int64)
    code = np.array([brgc(int(i)) for i in idx], dtype=np.int64)
    if not np.array_equal(code, g(idx)):
        i = int(np.flatnonzero(code != g(idx))[0])
        return ProofResult(name, False, time.perf_counter() - t0, "brgc", {"i": i, "code": int(code[i]), "g": int(g(i))})
    for b in range(max_bits + 1):
        if not np.array_equal(np.asarray(gray(1 << b)), g(np.arange(1 << b, dtype=np.int64))):
            return ProofResult(name, False, time.perf_counter() - t0, f"curves.gray({1 << b})", {"bits": b})
    for x, y in mesh_shapes(max_n):
        t, m = ceil_log2(x), ceil_log2(y)
        want = (g(np.arange(x, dtype=np.int64))[:, None] << m) | g(np.arange(y, dtype=np.int64))[None, :]
        if not np.array_equal(np.asarray(embed_mesh(x, y)), want):
            return ProofResult(name, False, time.perf_counter() - t0, f"embed_mesh({x}, {y})", {"mesh": (x, y)})
    blocks = 0
    for n in range(0, 9):
        N = 1 << n
        if not np.array_equal(np.asarray(_gray_order(n)), g(np.arange(N, dtype=np.int64))):
            return ProofResult(name, False, time.perf_counter() - t0, f"gray_code allocator order n={n}", {"n": n})
        placer = GrayCodeAllocator(Hypercube(n))
        for k in range(n + 1):
            size = 1 << k
            starts = [0] if k == n else list(range(0, N, max(1, size // 2)))
            for st in starts:
                # only this window free: the allocator must place exactly it (a wrong start, step or order leaves it unplaced or moves it)
                window = np.array([g((st + j) % N) for j in range(size)], dtype=np.int64)
                busy = np.ones(N, dtype=bool)
                busy[window] = False
                placed = placer._place(busy, k)
                got = None if placed is None else placed[0]
                blocks += 1
                if got is None or not np.array_equal(np.sort(np.asarray(got)), np.sort(window)):
                    return ProofResult(name, False, time.perf_counter() - t0, f"gray_code allocator n={n}, k={k}, start {st}", {"n": n, "k": k, "start": st})
    cases = (1 << max_bits) + max_bits + 1 + len(mesh_shapes(max_n)) + blocks
    return ProofResult(name, True, time.perf_counter() - t0, f"i < 2^{max_bits}, meshes <= Q{max_n}", None, {"cases": cases, "method": "exhaustive"})


def prove_embedding_dilation(x: int, y: int) -> ProofResult:
    """The AFL allocator's X×Y mesh: neighbouring mesh positions one bit apart, positions distinct, exactly the allocated nodes (exhaustive)."""
    from ..alloc.hypercube.embedding import embed_mesh

    t0 = time.perf_counter()
    name = "AFL embedding is dilation 1"
    k, nodes, _, _ = afl_output(x, y)
    emb = np.asarray(embed_mesh(x, y), dtype=np.int64)
    one_bit = lambda a, b: np.all(((a ^ b) != 0) & (((a ^ b) & ((a ^ b) - 1)) == 0))  # noqa: E731
    ok = emb.shape == (x, y) and one_bit(emb[1:, :], emb[:-1, :]) and one_bit(emb[:, 1:], emb[:, :-1])
    ok = ok and np.unique(emb).size == x * y and np.array_equal(np.sort(emb.ravel()), np.asarray(nodes))
    if not ok:
        return ProofResult(name, False, time.perf_counter() - t0, f"{x}x{y}", {"mesh": (x, y)})
    return ProofResult(name, True, time.perf_counter() - t0, f"{x}x{y}", None, {"k": k, "method": "exhaustive"})


def hypercube_rows(*, max_n: int = 10, symbolic_n: int = 64, lemma_n: int = 16, route_n: int = 7, channel_n: int = 6) -> list[dict]:
    """Every hypercube proof, summarised (``topoalloc prove hypercube``); see the module notes for what each row assumes."""
    from .report import summarise

    shapes = mesh_shapes(max_n)
    tiling, thm, dil = [], [], []
    checker = _Checker()
    for x, y in shapes:
        a, b = prove_afl_mesh(x, y, checker=checker)
        tiling.append(a)
        thm.append(b)
        dil.append(prove_embedding_dilation(x, y))
    largest = lambda r: (r.details.get("k", 0), r.details.get("leftovers", 0))  # noqa: E731  (the biggest cube, most leftovers)
    rows = [
        summarise(f"AFL: mesh + leftover subcubes tile the k-cube (every X×Y, k <= {max_n})", tiling, largest=largest),
        summarise(f"Theorem 1: no E-cube channel shared by mesh and a leftover (every X×Y, k <= {max_n})", thm, largest=largest),
        summarise(f"AFL embedding: mesh neighbours one bit apart, exactly the allocated nodes (every X×Y, k <= {max_n})", dil, largest=largest),
    ]
    ns = list(range(1, symbolic_n + 1))
    brgc = [prove_brgc_dilation(n) for n in ns] + [prove_gray_code_link(min(max_n, 10))]
    rows.append(summarise(f"BRGC g(i) = i ^ (i >> 1): consecutive codewords differ in one bit (symbolic, widths 1..{symbolic_n}); "
                          "the code's brgc, embed_mesh, Gray curve and Gray-code allocator equal g (exhaustive)", brgc, largest=lambda r: r.details.get("cases", 0), method="model"))
    rows.append(summarise(f"E-cube: the code's routes and channels = the definition (every pair of nodes, Q0..Q{route_n})", [prove_ecube_code(n) for n in range(route_n + 1)], largest=lambda r: r.details.get("cases", 0)))
    lem = [prove_lemma1(n) for n in range(1, lemma_n + 1)]
    rows.append(summarise(f"Lemma 1 (+ routes stay in their subcube, end at D), from the definition of E-cube routing unrolled in Z3 (widths 1..{lemma_n})", lem, largest=lambda r: int(r.size[2:]), method="model"))
    chan = [prove_channel_sets(n, sets, label=label) for n, sets, label in channel_set_cases(channel_n)]
    rows.append(summarise(f"channel sets: channels_within / shared_channels = routes enumerated from the definition (every subset of Q3, every AFL mesh <= Q{channel_n} and its leftovers, random subsets)", chan, largest=lambda r: r.details.get("cases", 0)))
    return rows
