"""Z3 proofs about the subtorus allocators' own output (Mao, Chen & Watson).

Every proof calls the implementation (``partition``, ``initial_available_set``,
``convert``, ``PartitionAllocator``) and hands what it produced to Z3:

* :func:`prove_pieces_partition` — the pieces are pairwise disjoint and cover
  the semitorus exactly: Z3 looks for a node of the box whose number of
  covering pieces is not 1, or a node outside it covered at all;
* :func:`prove_scheme` — that, plus: exactly one piece is the one allocated and
  it has 2^k nodes, and NEP makes 1 + log2(|S|/2^k) pieces;
* :func:`prove_preprocessing` — the initial available set partitions the torus;
* :func:`prove_conversion` — the job's virtual torus is a dilation-1 embedding:
  a bijection onto the allocation, every virtual edge a physical link;
* :func:`prove_buddy_merge` — after a random allocate sequence, releasing
  everything rebuilds exactly the initial available set.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Iterator, Sequence

import numpy as np

from ..alloc.base import Request
from ..alloc.partition import PartitionAllocator, convert, initial_available_set
from ..alloc.partition.schemes import partition
from ..topology.torus import Semitorus, Torus
from .base import ProofResult

__all__ = [
    "prove_pieces_partition",
    "prove_scheme",
    "prove_preprocessing",
    "prove_conversion",
    "prove_buddy_merge",
    "semitorus_shapes",
    "prove_all_schemes",
    "wrap_patterns",
    "torus_rows",
    "NAMED_MACHINES",
]


def _coords(d: int):
    import z3

    return [z3.Int(f"x{i}") for i in range(d)]


def _in_box(x, st: Semitorus):
    import z3

    return z3.And([z3.And(xi >= o, xi < o + s) for xi, o, s in zip(x, st.offset, st.sides)])


def _grid_projections(pieces: Sequence[Semitorus]) -> list[list[tuple[int, int]]] | None:
    """If the pieces are exactly the product of their per-dimension intervals, those intervals."""
    d = len(pieces[0].offset)
    proj = [sorted({(p.offset[i], p.sides[i]) for p in pieces}) for i in range(d)]
    n = 1
    for axis in proj:
        n *= len(axis)
    keys = {(p.offset, p.sides) for p in pieces}
    if n != len(pieces) or len(keys) != len(pieces):
        return None
    # distinct pieces, as many as the product, each a member of the product: the sets are equal
    index = [dict(axis) for axis in proj]
    if all(index[i].get(p.offset[i]) == p.sides[i] for p in pieces for i in range(d)):
        return proj
    return None


def prove_pieces_partition(pieces: Sequence[Semitorus], whole: Sequence[Semitorus], *, name: str = "partition", size: str = "") -> ProofResult:
    """Z3: every point of the boxes ``whole`` lies in exactly one of ``pieces``; no other point lies in any.

    General form: one query for a point whose number of covering pieces is
    wrong.  When the pieces form a grid (the list is exactly the product of
    its per-dimension intervals — checked exactly first) and ``whole`` is one
    box, the question splits by dimension: the product partitions the box iff
    every dimension's intervals partition its side, which Z3 checks as a chain
    (in order of their starts, each interval starts where the previous ends,
    from the side's start to its end).
    This keeps Equal Partitions of thousands of pieces fast.
    """
    import z3

    t0 = time.perf_counter()
    d = len(pieces[0].offset)
    grid = _grid_projections(pieces) if len(whole) == 1 and len(pieces) > 16 else None
    if grid is not None:
        w = whole[0]
        for i, axis in enumerate(grid):
            # intervals partition [a, b) iff, taken in order of their starts, the first starts at a,
            # each starts where the previous ends, and the last ends at b: Z3 looks for a broken link
            ivs = sorted(axis)
            ends = [w.offset[i]] + [o + sz for o, sz in ivs]
            starts = [o for o, _ in ivs] + [w.offset[i] + w.sides[i]]
            links = [z3.IntVal(a) == z3.IntVal(b) for a, b in zip(ends, starts)]
            sol = z3.Solver()
            broken = [z3.Bool(f"l{j}") for j in range(len(links))]
            for b, link in zip(broken, links):
                sol.add(b == z3.Not(link))
            sol.add(z3.Or(broken))
            if sol.check() == z3.sat:
                m = sol.model()
                j = next(j for j, b in enumerate(broken) if z3.is_true(m.eval(b)))
                ce = {"dimension": i, "gap_or_overlap_at": ends[j], "next_start": starts[j]}
                return ProofResult(name, False, time.perf_counter() - t0, size, ce)
        return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces), "method": "grid"})
    x = _coords(d)
    count = z3.Sum([z3.If(_in_box(x, p), 1, 0) for p in pieces]) if len(pieces) > 1 else z3.If(_in_box(x, pieces[0]), 1, 0)
    inside = z3.Or([_in_box(x, w) for w in whole])
    s = z3.Solver()
    s.add(z3.If(inside, count != 1, count != 0))
    if s.check() == z3.sat:
        m = s.model()
        pt = tuple(m.eval(xi, model_completion=True).as_long() for xi in x)
        covering = [i for i, p in enumerate(pieces) if all(o <= c < o + sz for c, o, sz in zip(pt, p.offset, p.sides))]
        ce = {"point": pt, "covered_by_pieces": covering, "inside_whole": any(all(o <= c < o + sz for c, o, sz in zip(pt, w.offset, w.sides)) for w in whole)}
        return ProofResult(name, False, time.perf_counter() - t0, size, ce)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces), "method": "points"})


def _shape_str(st: Semitorus) -> str:
    return "x".join(map(str, st.sides))


def prove_scheme(scheme: str, st: Semitorus, k: int, nep_order: str = "exhaust-largest") -> ProofResult:
    """Prove the EP/NEP partition of ``st`` for 2^k nodes (see the module notes)."""
    t0 = time.perf_counter()
    pieces, at = partition(st, k, scheme, nep_order)
    name = f"{scheme} partition"
    size = f"{_shape_str(st)}, m=2^{k}"
    res = prove_pieces_partition(pieces, [st], name=name, size=size)
    if not res.holds:
        return res
    problems = {}
    if pieces[at].size != 1 << k:
        problems["allocated_piece_size"] = pieces[at].size
    if not 0 <= at < len(pieces):
        problems["allocated_index"] = at
    expected = 1 + st.order - k
    if scheme == "nep" and len(pieces) != expected:
        problems["pieces"] = {"got": len(pieces), "expected": expected}
    if scheme == "ep" and (len(pieces) != 1 << (st.order - k) or any(p.sides != pieces[0].sides for p in pieces)):
        problems["ep_pieces"] = [p.sides for p in pieces[:4]]
    if problems:
        return ProofResult(name, False, time.perf_counter() - t0, size, problems)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces)})


def prove_preprocessing(machine: Torus) -> ProofResult:
    """Z3: the initial available set partitions the machine's box ``0 <= x_i < dims_i``."""
    import z3

    pieces = initial_available_set(machine)

    t0 = time.perf_counter()
    x = _coords(machine.ndim)
    count = z3.Sum([z3.If(_in_box(x, p), 1, 0) for p in pieces]) if len(pieces) > 1 else z3.If(_in_box(x, pieces[0]), 1, 0)
    inside = z3.And([z3.And(xi >= 0, xi < n) for xi, n in zip(x, machine.dims)])
    s = z3.Solver()
    s.add(z3.If(inside, count != 1, count != 0))
    name, size = "preprocessing", machine.spec()
    if s.check() == z3.sat:
        m = s.model()
        pt = tuple(m.eval(xi, model_completion=True).as_long() for xi in x)
        return ProofResult(name, False, time.perf_counter() - t0, size, {"point": pt})
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces)})


def _link_formula(machine: Torus, diff: Sequence[int]):
    """Z3 formula: two nodes whose coordinates differ by ``diff`` share a physical link.

    On a torus that depends on the difference alone: exactly one coordinate
    differs, by 1, or by n-1 across a wrapped dimension of size n > 2.
    """
    import z3

    d = machine.ndim
    dv = [z3.IntVal(int(x)) for x in diff]
    terms = []
    for i in range(d):
        step = z3.Or(dv[i] == 1, dv[i] == -1)
        if machine.wrap[i] and machine.dims[i] > 2:
            step = z3.Or(step, dv[i] == machine.dims[i] - 1, dv[i] == -(machine.dims[i] - 1))
        terms.append(z3.And([step] + [dv[j] == 0 for j in range(d) if j != i]))
    return z3.Or(terms)


def _prove_links(machine: Torus, a: np.ndarray, b: np.ndarray) -> int | None:
    """Z3: every pair (a[t], b[t]) of physical nodes is a link.  Returns a failing t, or None.

    The pairs are grouped by coordinate difference (exactly, with numpy); Z3
    decides the link property for each distinct difference that occurs.
    """
    import z3

    if a.size == 0:
        return None
    coords = machine.coords
    diffs = coords[a] - coords[b]
    uniq, first = np.unique(diffs, axis=0, return_index=True)
    flags = [z3.Bool(f"d{i}") for i in range(len(uniq))]
    s = z3.Solver()
    for fl, dvec in zip(flags, uniq):
        s.add(fl == z3.Not(_link_formula(machine, dvec)))
    s.add(z3.Or(flags))
    if s.check() == z3.sat:
        m = s.model()
        i = next(i for i, fl in enumerate(flags) if z3.is_true(m.eval(fl)))
        return int(first[i])
    return None


def prove_conversion(st: Semitorus, machine: Torus, mode: str) -> ProofResult:
    """Z3: the conversion's embedding is a bijection onto the allocation and maps every
    virtual edge (wrap edges included) to a physical link of the machine (dilation 1).

    The embedding is read from the implementation's output.  If it is a
    product — ``emb[v] = emb[0] + Σ_j f_j(v_j)`` over the virtual dimensions,
    checked exactly for every virtual node — then a virtual edge along
    dimension ``j`` joins two nodes whose coordinates differ only where
    ``f_j`` moves them, so it is enough for Z3 to check the ring steps of each
    ``f_j`` (plus the wrap step of each ring).  Otherwise every virtual edge is
    handed to Z3 — grouped by coordinate difference, since on a torus whether
    two nodes are linked depends only on that.  That the embedding is a bijection onto the semitorus's
    nodes is an exact comparison of node sets, done before.
    """

    t0 = time.perf_counter()
    conv = convert(st, machine, mode)
    emb = conv.embedding.astype(np.int64)
    name, size = f"conversion ({mode})", f"{st.describe()} -> {'x'.join(map(str, conv.shape))}"
    M = int(emb.size)
    coords = machine.coords
    if M != st.size:
        return ProofResult(name, False, time.perf_counter() - t0, size, {"property": "size", "virtual": M, "allocation": st.size})
    # bijection onto the allocation: an exact comparison of node sets (no solver needed)
    if not np.array_equal(np.sort(emb), machine.box_nodes(st.offset, st.sides)):
        dup = np.flatnonzero(np.bincount(emb, minlength=machine.n_nodes) > 1)
        return ProofResult(name, False, time.perf_counter() - t0, size, {"property": "bijection", "repeated_nodes": dup[:5].tolist()})
    lo = np.array(st.offset)
    hi = lo + np.array(st.sides)
    outside = np.flatnonzero(((coords[emb] < lo) | (coords[emb] >= hi)).any(axis=1))
    if outside.size:
        return ProofResult(name, False, time.perf_counter() - t0, size, {"property": "inside", "virtual": int(outside[0])})
    # product structure?
    shape = conv.shape
    strides = np.cumprod((1,) + shape[:-1])
    v = np.arange(M)
    f = [emb[np.arange(n) * stride] - emb[0] for n, stride in zip(shape, strides)]
    rebuilt = emb[0] + sum(fj[(v // stride) % n] for fj, n, stride in zip(f, shape, strides))
    pairs: list[tuple[int, int, tuple]] = []
    if np.array_equal(rebuilt, emb):
        method = "ring steps"
        for j, (n, stride) in enumerate(zip(shape, strides)):
            ring = [int(emb[x * stride]) for x in range(n)]
            pairs.extend((ring[x], ring[x + 1], (j, x, x + 1)) for x in range(n - 1))
            if n > 2 and conv.torus:  # a torus claims every virtual dimension is a ring
                pairs.append((ring[n - 1], ring[0], (j, n - 1, 0)))
    else:
        method = "every edge"
        pairs = [(int(emb[a]), int(emb[b]), (a, b)) for a, b in conv.virtual_edges()]
        if conv.torus and len(pairs) != sum(M if n > 2 else M // 2 for n in shape if n > 1):
            return ProofResult(name, False, time.perf_counter() - t0, size, {"property": "edges", "virtual_edges": len(pairs)})
    bad = _prove_links(machine, np.array([p for p, _, _ in pairs], dtype=np.int64), np.array([q for _, q, _ in pairs], dtype=np.int64))
    if bad is not None:
        p, q, where = pairs[bad]
        return ProofResult(name, False, time.perf_counter() - t0, size, {"property": "dilation", "virtual": where, "physical": (p, q)})
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"virtual_shape": shape, "torus": conv.torus, "method": method, "checked_links": len(pairs)})


def prove_buddy_merge(machine: Torus, scheme: str, seed: int = 0, steps: int = 200) -> ProofResult:
    """Random allocations and releases, then release all: the available set is again the initial one.

    Z3 proves the final free set partitions the machine exactly like the initial set
    (same boxes): each initial piece is covered by exactly one final free piece and
    the two lists have the same length.
    """
    t0 = time.perf_counter()
    a = PartitionAllocator(machine, scheme=scheme)
    initial = a.available()
    rng = random.Random(seed)
    held = []
    for _ in range(steps):
        if held and rng.random() < 0.4:
            a.release(held.pop(rng.randrange(len(held))))
        else:
            got = a.allocate(Request(1 << rng.randint(0, a.max_order)))
            if got is not None:
                held.append(got)
    for h in held:
        a.release(h)
    final = a.available()
    name, size = f"buddy merge ({scheme})", f"{machine.spec()}, {steps} steps"
    if len(final) != len(initial) or sorted(p.sides for p in final) != sorted(p.sides for p in initial):
        return ProofResult(name, False, time.perf_counter() - t0, size, {"initial": [p.describe() for p in initial], "final": [p.describe() for p in final]})
    res = prove_pieces_partition(final, initial, name=name, size=size)
    return ProofResult(name, res.holds, time.perf_counter() - t0, size, res.counterexample, {"pieces": len(final)})


def semitorus_shapes(max_dims: int = 6, max_order: int = 12, *, orientations: bool = False) -> Iterator[tuple[int, ...]]:
    """Exponent tuples of semitorus shapes: up to ``max_dims`` sides >= 2 and ``2^max_order`` nodes.

    Without ``orientations`` one tuple per shape up to orientation (non-increasing
    exponents); with it, every ordering.
    """
    for h in range(1, max_dims + 1):
        for total in range(h, max_order + 1):
            for combo in itertools.combinations_with_replacement(range(1, total + 1), h):
                if sum(combo) != total:
                    continue
                base = tuple(sorted(combo, reverse=True))
                if orientations:
                    yield from sorted(set(itertools.permutations(base)))
                else:
                    yield base


def prove_all_schemes(max_dims: int = 6, max_order: int = 12, *, orientations: bool = False, wraps: str = "all") -> list[ProofResult]:
    """EP and NEP on every shape and every k; one result per (scheme, shape, k)."""
    out = []
    for exps in semitorus_shapes(max_dims, max_order, orientations=orientations):
        sides = tuple(1 << e for e in exps)
        wrapped = (True,) * len(sides) if wraps == "all" else (False,) * len(sides)
        st = Semitorus((0,) * len(sides), sides, wrapped)
        for k in range(0, sum(exps) + 1):
            for scheme in ("ep", "nep"):
                out.append(prove_scheme(scheme, st, k))
    return out


def wrap_patterns(sides: Sequence[int]) -> Iterator[tuple[bool, ...]]:
    """Every distinct wrap-flag pattern of a semitorus (sides of 1 or 2 are always rings)."""
    free = [i for i, sd in enumerate(sides) if sd > 2]
    for bits in itertools.product((False, True), repeat=len(free)):
        w = [True] * len(sides)
        for i, b in zip(free, bits):
            w[i] = b
        yield tuple(w)


#: machines whose preprocessing is proved besides the systematic small ones
NAMED_MACHINES = ((2, 2, 2, 4, 4, 8), (2, 2, 2, 6, 8), (3, 6, 5), (12, 10, 7), (6, 6, 6, 6), (2, 3, 4, 5, 6, 7))


def torus_rows(*, full: bool = False, max_dims: int = 6, max_order: int = 12) -> list[dict]:
    """Every torus proof, summarised (``topoalloc prove torus``)."""
    from .report import summarise

    rows = []
    shapes = list(semitorus_shapes(max_dims, max_order, orientations=full))
    for scheme in ("ep", "nep"):
        res = []
        for exps in shapes:
            st = Semitorus((0,) * len(exps), tuple(1 << e for e in exps), (True,) * len(exps))
            res.extend(prove_scheme(scheme, st, k) for k in range(sum(exps) + 1))
        rows.append(summarise(f"{scheme.upper()}: pieces disjoint, cover S, one allocated with 2^k nodes" + (", 1+log2(|S|/m) pieces" if scheme == "nep" else ""), res))
    machines = [tuple(d) for d in itertools.chain(
        ((a,) for a in range(1, 17)),
        itertools.product(range(1, 13), repeat=2),
        itertools.product(range(1, 9), repeat=3),
    )] + list(NAMED_MACHINES)
    rows.append(summarise("preprocessing partitions the torus", [prove_preprocessing(Torus(m)) for m in machines], largest=lambda r: len(r.size)))
    for mode in ("collapse", "pair"):
        res = []
        for exps in shapes:
            sides = tuple(1 << e for e in exps)
            machine = Torus(sides)
            for w in wrap_patterns(sides):
                res.append(prove_conversion(Semitorus((0,) * len(sides), sides, w), machine, mode))
        rows.append(summarise(f"conversion ({mode}) is a dilation-1 embedding", res))
    res = []
    for dims in ((2, 2, 2, 4, 4, 8), (2, 2, 2, 6, 8), (4, 4, 4), (12, 10, 7)):
        for scheme in ("ep", "nep"):
            for seed in range(3):
                res.append(prove_buddy_merge(Torus(dims), scheme, seed=seed))
    rows.append(summarise("buddy merging rebuilds the initial available set", res))
    return rows
