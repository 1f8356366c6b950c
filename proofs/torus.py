"""Z3 proofs about the subtorus allocators' own output (Mao, Chen & Watson).

Every proof calls the implementation (``partition``, ``initial_available_set``,
``convert``, ``PartitionAllocator``) and hands what it produced to Z3:

* :func:`prove_pieces_partition` — the pieces are pairwise disjoint and cover
  the semitorus exactly: Z3 looks for a node of the box whose number of
  covering pieces is not 1, or a node outside it covered at all;
* :func:`prove_scheme` / :func:`prove_scheme_shape` — that, plus: the
  allocated piece has 2^k nodes, and NEP makes 1 + log2(|S|/2^k) pieces (EP:
  |S|/2^k pieces of one shape, checked exactly); ``prove_scheme_shape`` puts
  every k of one shape into one Z3 query;
* :func:`prove_scheme_orientations` — every orientation of a shape (below);
* :func:`prove_preprocessing` — the initial available set partitions the torus;
* :func:`prove_conversion` — the job's virtual torus is a dilation-1 embedding:
  a bijection onto the allocation, every virtual edge a physical link;
* :func:`prove_buddy_merge` — after a random allocate sequence, releasing
  everything rebuilds exactly the initial available set.

Every orientation (the argument behind the EP/NEP rows).  The shapes are the
2,509 exponent tuples with up to 6 dimensions and up to 2^12 nodes; up to
orientation (non-increasing sides) there are 226.  For each of the 226, Z3
proves every k on the implementation's output.  For every other orientation
and every k the implementation is run on the oriented shape and
:func:`is_permutation_image` checks, exactly (integer rows compared after a
lexicographic sort), that its output is the coordinate-permuted image of the
canonical output: the same pieces as a list without repeats (offsets, sides
and wrap flags permuted) and the image of the allocated piece as the
allocated piece.  A coordinate permutation is a bijection of Z^d that maps
boxes to boxes, the canonical S onto the oriented S, and preserves sizes and
counts; so "pairwise disjoint, exactly covering S, allocated piece of 2^k
nodes, 1 + log2(|S|/2^k) pieces" holds for the image exactly when it holds
for the canonical output, which Z3 proved.  Any case whose output is not such
an image is proved by Z3 directly (the report says how many: today none —
the implementation's tie-breaks are order-preserving, so every orientation is
an image).  Nothing is sampled: every (orientation, k) case is either an
exact image of a Z3-proved case or itself Z3-proved.

Conversions are not orientation-equivariant (the grouping of dimensions and
the Hamiltonian cycle depend on dimension order), so every conversion case is
proved on its own: one orientation per shape with every wrap pattern by
default (1,516 cases per mode), every orientation with ``full`` (21,224).

How the queries are built.  Formulas are SMT-LIB text over ``x0, x1, ...``
(a point) and ``case`` (which batched case), parsed by Z3 into one solver
that is reused with push/pop (:class:`_Refuter`).  Measured, constructing
Python-level Z3 terms and a fresh solver per case cost several times Z3's
own decision; with text and one solver most of the remaining time is the
implementation computing its output (EP's thousands of pieces, the
conversions' embeddings).
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
    "prove_scheme_shape",
    "prove_scheme_orientations",
    "is_permutation_image",
    "prove_preprocessing",
    "prove_conversion",
    "prove_buddy_merge",
    "semitorus_shapes",
    "prove_all_schemes",
    "wrap_patterns",
    "torus_rows",
    "NAMED_MACHINES",
]


def _num(v: int) -> str:
    """An SMT-LIB integer literal."""
    v = int(v)
    return str(v) if v >= 0 else f"(- {-v})"


_XS = tuple(f"x{i}" for i in range(64))


def _box_smt(offset: Sequence[int], sides: Sequence[int]) -> str:
    """SMT-LIB: the point ``(x0, x1, ...)`` lies in the box ``offset + [0, sides)``."""
    return "(and " + " ".join(f"(<= {_num(o)} {x}) (< {x} {_num(o + s)})" for x, o, s in zip(_XS, offset, sides)) + ")"


class _Refuter:
    """One Z3 solver, reused: each query is pushed, decided and popped.

    Formulas arrive as SMT-LIB text over the integer constants ``x0, x1, ...``
    (a point) and ``case`` (which of several batched cases), parsed by Z3's own
    parser (``z3.parse_smt2_string``).  Building the formulas as text and
    reusing one solver is what makes tens of thousands of proofs affordable:
    creating Python-level Z3 objects and a fresh solver per case cost several
    times more than Z3's decision itself.
    """

    def __init__(self) -> None:
        import z3

        self.z3 = z3
        self.solver = z3.Solver()
        self.decls = {name: z3.Int(name) for name in _XS + ("case",)}
        self._subsets: dict[tuple[str, ...], dict] = {}

    def refute(self, formula: str, read: Sequence[str]) -> dict[str, int] | None:
        """Ask Z3 for values satisfying ``formula`` (the negation of a property).

        ``formula`` may use ``case`` and the point coordinates named in ``read``
        (and no others).  None when unsat (the property holds); otherwise the
        model's values of ``read``.
        """
        z3, s = self.z3, self.solver
        names = tuple(read) if "case" in read else tuple(read) + ("case",)
        decls = self._subsets.get(names)
        if decls is None:  # z3 converts the declarations on every parse: pass only those used
            decls = self._subsets[names] = {n: self.decls[n] for n in names}
        s.push()
        try:
            s.add(z3.parse_smt2_string(f"(assert {formula})", decls=decls))
            verdict = s.check()
            if verdict == z3.unsat:
                return None
            if verdict != z3.sat:  # pragma: no cover - linear integer arithmetic over boxes is decidable
                raise RuntimeError(f"Z3 answered {verdict} for a proof query")
            m = s.model()
            return {name: m.eval(self.decls[name], model_completion=True).as_long() for name in read}
        finally:
            s.pop()


_REFUTER: _Refuter | None = None


def _refuter() -> _Refuter:
    global _REFUTER
    if _REFUTER is None:
        _REFUTER = _Refuter()
    return _REFUTER


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


def _partition_violation(pieces: Sequence[Semitorus], whole: Sequence[Semitorus]) -> tuple[str, str, list | None]:
    """SMT-LIB text of "the pieces do not partition ``whole``", the method, and (grid) the chains.

    ``points``: a point ``x`` of ``whole`` covered by a number of pieces other
    than 1, or a point outside covered at all.  ``grid`` (the pieces are
    exactly the product of their per-dimension intervals, checked exactly, and
    ``whole`` is one box): the product partitions the box iff each dimension's
    intervals, in order of their starts, form a chain from the side's start to
    its end; the formula says some link of some chain is broken.
    """
    grid = _grid_projections(pieces) if len(whole) == 1 and len(pieces) > 16 else None
    if grid is not None:
        w = whole[0]
        chains, links = [], []
        for i, axis in enumerate(grid):
            ivs = sorted(axis)
            ends = [w.offset[i]] + [o + sz for o, sz in ivs]
            starts = [o for o, _ in ivs] + [w.offset[i] + w.sides[i]]
            chains.append((ends, starts))
            links.extend(f"(distinct {_num(a)} {_num(b)})" for a, b in zip(ends, starts))
        return "(or " + " ".join(links) + ")", "grid", chains
    boxes = [f"(ite {_box_smt(p.offset, p.sides)} 1 0)" for p in pieces]
    count = boxes[0] if len(boxes) == 1 else "(+ " + " ".join(boxes) + ")"
    inside = _box_smt(whole[0].offset, whole[0].sides) if len(whole) == 1 else "(or " + " ".join(_box_smt(w.offset, w.sides) for w in whole) + ")"
    return f"(ite {inside} (distinct {count} 1) (distinct {count} 0))", "points", None


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
    t0 = time.perf_counter()
    d = len(pieces[0].offset)
    formula, method, chains = _partition_violation(pieces, whole)
    model = _refuter().refute(formula, _XS[:d])
    if model is not None:
        if method == "grid":
            for i, (ends, starts) in enumerate(chains):
                for a, b in zip(ends, starts):
                    if a != b:
                        ce = {"dimension": i, "gap_or_overlap_at": a, "next_start": b}
                        return ProofResult(name, False, time.perf_counter() - t0, size, ce)
        pt = tuple(model[x] for x in _XS[:d])
        covering = [i for i, p in enumerate(pieces) if all(o <= c < o + sz for c, o, sz in zip(pt, p.offset, p.sides))]
        ce = {"point": pt, "covered_by_pieces": covering, "inside_whole": any(all(o <= c < o + sz for c, o, sz in zip(pt, w.offset, w.sides)) for w in whole)}
        return ProofResult(name, False, time.perf_counter() - t0, size, ce)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces), "method": method})


def _shape_str(st: Semitorus) -> str:
    return "x".join(map(str, st.sides))


def _scheme_case(scheme: str, st: Semitorus, k: int, nep_order: str) -> tuple[list[Semitorus], int, dict]:
    """The implementation's output for one case and the exact (non-Z3) checks of its shape.

    Returned problems: allocated index out of range, EP pieces not all of one
    shape or not |S|/2^k of them.  The partition itself, the allocated piece's
    size and NEP's piece count are left to Z3.
    """
    pieces, at = partition(st, k, scheme, nep_order)
    problems: dict = {}
    if not 0 <= at < len(pieces):
        problems["allocated_index"] = at
    if scheme == "ep" and (len(pieces) != 1 << (st.order - k) or any(p.sides != pieces[0].sides for p in pieces)):
        problems["ep_pieces"] = [p.sides for p in pieces[:4]]
    return pieces, at, problems


def _scheme_violation(scheme: str, st: Semitorus, k: int, pieces: Sequence[Semitorus], at: int) -> str:
    """SMT-LIB: the case is wrong — the pieces do not partition S, or the allocated piece
    does not have 2^k nodes, or (NEP) there are not 1 + log2(|S|/2^k) pieces."""
    formula, _, _ = _partition_violation(pieces, [st])
    parts = [formula, f"(distinct {pieces[at].size} {1 << k})"]
    if scheme == "nep":
        parts.append(f"(distinct {len(pieces)} {1 + st.order - k})")
    return "(or " + " ".join(parts) + ")"


def prove_scheme(scheme: str, st: Semitorus, k: int, nep_order: str = "exhaust-largest") -> ProofResult:
    """Prove the EP/NEP partition of ``st`` for 2^k nodes (see the module notes)."""
    t0 = time.perf_counter()
    pieces, at, problems = _scheme_case(scheme, st, k, nep_order)
    name = f"{scheme} partition"
    size = f"{_shape_str(st)}, m=2^{k}"
    if problems:
        return ProofResult(name, False, time.perf_counter() - t0, size, problems)
    res = prove_pieces_partition(pieces, [st], name=name, size=size)
    if not res.holds:
        return res
    if pieces[at].size != 1 << k:
        problems["allocated_piece_size"] = pieces[at].size
    expected = 1 + st.order - k
    if scheme == "nep" and len(pieces) != expected:
        problems["pieces"] = {"got": len(pieces), "expected": expected}
    if problems:
        return ProofResult(name, False, time.perf_counter() - t0, size, problems)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces), "cases": 1, "method": "z3"})


def prove_scheme_shape(scheme: str, st: Semitorus, ks: Sequence[int] | None = None, nep_order: str = "exhaust-largest", *, outputs: dict | None = None) -> ProofResult:
    """Every case ``k in ks`` (default: every k, 0 <= k <= order) of one shape in ONE Z3 query.

    The query is the disjunction over the cases of ``case = i ∧ (case i is
    wrong)``; unsat proves every case.  On sat, Z3's model names the failing
    case, which :func:`prove_scheme` then proves alone to report its
    counterexample.  ``outputs`` (k -> (pieces, at)) may pass the
    implementation's output when the caller already has it.
    """
    t0 = time.perf_counter()
    ks = list(range(st.order + 1)) if ks is None else list(ks)
    name = f"{scheme} partition"
    size = f"{_shape_str(st)}, m=2^{ks[0]}..2^{ks[-1]}" if len(ks) > 1 else f"{_shape_str(st)}, m=2^{ks[0]}"
    terms = []
    for i, k in enumerate(ks):
        if outputs is not None and k in outputs:
            pieces, at = outputs[k]
            problems = {}
            if not 0 <= at < len(pieces) or (scheme == "ep" and (len(pieces) != 1 << (st.order - k) or any(p.sides != pieces[0].sides for p in pieces))):
                problems["exact"] = True
        else:
            pieces, at, problems = _scheme_case(scheme, st, k, nep_order)
        if problems:
            r = prove_scheme(scheme, st, k, nep_order)
            return ProofResult(name, False, time.perf_counter() - t0, r.size, r.counterexample)
        terms.append(f"(and (= case {i}) {_scheme_violation(scheme, st, k, pieces, at)})")
    model = _refuter().refute(terms[0] if len(terms) == 1 else "(or " + " ".join(terms) + ")", ("case",) + _XS[: len(st.sides)])
    if model is not None:
        r = prove_scheme(scheme, st, ks[model["case"]], nep_order)
        ce = r.counterexample if not r.holds else {"case": ks[model["case"]], "note": "Z3 found the batched case wrong"}
        return ProofResult(name, False, time.perf_counter() - t0, r.size, ce)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"cases": len(ks), "method": "z3"})


def prove_preprocessing(machine: Torus) -> ProofResult:
    """Z3: the initial available set partitions the machine's box ``0 <= x_i < dims_i``."""
    pieces = initial_available_set(machine)
    t0 = time.perf_counter()
    name, size = "preprocessing", machine.spec()
    boxes = [f"(ite {_box_smt(p.offset, p.sides)} 1 0)" for p in pieces]
    count = boxes[0] if len(boxes) == 1 else "(+ " + " ".join(boxes) + ")"
    inside = _box_smt((0,) * machine.ndim, machine.dims)
    model = _refuter().refute(f"(ite {inside} (distinct {count} 1) (distinct {count} 0))", _XS[: machine.ndim])
    if model is not None:
        return ProofResult(name, False, time.perf_counter() - t0, size, {"point": tuple(model[x] for x in _XS[: machine.ndim])})
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces)})


def _link_formula(machine: Torus, diff: Sequence[int]) -> str:
    """SMT-LIB: two nodes whose coordinates differ by ``diff`` share a physical link.

    On a torus that depends on the difference alone: exactly one coordinate
    differs, by 1, or by n-1 across a wrapped dimension of size n > 2.
    """
    d = machine.ndim
    dv = [_num(x) for x in diff]
    terms = []
    for i in range(d):
        steps = ["1", "(- 1)"]
        if machine.wrap[i] and machine.dims[i] > 2:
            steps += [_num(machine.dims[i] - 1), _num(-(machine.dims[i] - 1))]
        step = "(or " + " ".join(f"(= {dv[i]} {s})" for s in steps) + ")"
        zeros = " ".join(f"(= {dv[j]} 0)" for j in range(d) if j != i)
        terms.append(f"(and {step} {zeros})" if zeros else step)
    return terms[0] if len(terms) == 1 else "(or " + " ".join(terms) + ")"


def _prove_links(machine: Torus, a: np.ndarray, b: np.ndarray) -> int | None:
    """Z3: every pair (a[t], b[t]) of physical nodes is a link.  Returns a failing t, or None.

    The pairs are grouped by coordinate difference (exactly, with numpy); Z3
    decides the link property for each distinct difference that occurs, all
    in one query (``case = i`` selects the difference).
    """
    if a.size == 0:
        return None
    coords = machine.coords
    diffs = coords[a] - coords[b]
    uniq, first = np.unique(diffs, axis=0, return_index=True)
    terms = [f"(and (= case {i}) (not {_link_formula(machine, dvec.tolist())}))" for i, dvec in enumerate(uniq)]
    model = _refuter().refute(terms[0] if len(terms) == 1 else "(or " + " ".join(terms) + ")", ("case",))
    if model is not None:
        return int(first[model["case"]])
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


def _rows(pieces: Sequence[Semitorus]) -> np.ndarray:
    """The pieces as integer rows ``offset + sides + wrapped`` (one row per piece)."""
    return np.array([p.offset + p.sides + p.wrapped for p in pieces], dtype=np.int64)


def _sorted_rows(a: np.ndarray) -> np.ndarray:
    return a[np.lexsort(a.T[::-1])]


def _permutations_onto(canon: Sequence[int], oriented: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every ``pi`` with ``oriented[j] == canon[pi[j]]``; the order-preserving one first."""
    used: set[int] = set()
    stable = []
    for e in oriented:
        i = next(i for i, c in enumerate(canon) if c == e and i not in used)
        used.add(i)
        stable.append(i)
    yield tuple(stable)
    for pi in itertools.permutations(range(len(canon))):
        if pi != tuple(stable) and all(oriented[j] == canon[pi[j]] for j in range(len(canon))):
            yield pi


def is_permutation_image(canon_out: tuple[Sequence[Semitorus], int], oriented_out: tuple[Sequence[Semitorus], int], canon_exps: Sequence[int], oriented_exps: Sequence[int], *, _canon_rows: np.ndarray | None = None) -> tuple[int, ...] | None:
    """Exact check: the oriented output is the coordinate-permuted image of the canonical one.

    Returns a permutation ``pi`` (oriented dimension j = canonical dimension
    ``pi[j]``) such that the oriented pieces, as a list without repeats, are
    exactly the images of the canonical pieces (offset, sides and wrap flags
    permuted), and the allocated piece is the image of the canonical allocated
    piece; None if no permutation does.  Exact integer comparison (numpy rows,
    sorted lexicographically).
    """
    cp, cat = canon_out
    op, oat = oriented_out
    d = len(canon_exps)
    if len(cp) != len(op) or not 0 <= oat < len(op) or not 0 <= cat < len(cp) or len(oriented_exps) != d:
        return None
    orows = _rows(op)
    if orows.shape[1] != 3 * d:
        return None
    osorted = _sorted_rows(orows)
    if len(osorted) > 1 and (np.diff(osorted, axis=0) == 0).all(axis=1).any():
        return None  # a repeated piece
    crows = _rows(cp) if _canon_rows is None else _canon_rows
    for pi in _permutations_onto(canon_exps, oriented_exps):
        cols = list(pi) + [d + i for i in pi] + [2 * d + i for i in pi]
        img = crows[:, cols]
        if np.array_equal(img[cat], orows[oat]) and np.array_equal(_sorted_rows(img), osorted):
            return pi
    return None


def prove_scheme_orientations(scheme: str, canon_exps: Sequence[int], orientations: Sequence[Sequence[int]], nep_order: str = "exhaust-largest") -> tuple[list[ProofResult], dict[str, int]]:
    """Every orientation of one shape, for every k: Z3 on the canonical shape, exact images for the rest.

    The canonical shape (non-increasing exponents) is proved by Z3
    (:func:`prove_scheme_shape`).  For each other orientation and each k the
    implementation is run on the oriented shape and its output compared,
    exactly, with the coordinate-permuted image of the canonical output
    (:func:`is_permutation_image`).  A coordinate permutation is a bijection
    of Z^d mapping boxes to boxes and the canonical S onto the oriented S, and
    it preserves sizes and the number of pieces, so disjointness, exact cover,
    the allocated piece's size and NEP's piece count carry over.  Every case
    that is not such an image is proved by Z3 directly.  Returns one result
    per orientation and a tally of how each was proved.
    """
    canon = tuple(canon_exps)
    order = sum(canon)
    cst = Semitorus((0,) * len(canon), tuple(1 << e for e in canon), (True,) * len(canon))
    t0 = time.perf_counter()
    cout = {k: partition(cst, k, scheme, nep_order) for k in range(order + 1)}
    crows = {k: _rows(p) for k, (p, _) in cout.items()}
    base = prove_scheme_shape(scheme, cst, None, nep_order, outputs=cout)
    base_seconds = time.perf_counter() - t0
    base = ProofResult(base.name, base.holds, base_seconds, base.size, base.counterexample, {**base.details, "method": "z3"})
    results = [base]
    tally = {"z3_shapes": 1, "image_shapes": 0, "z3_direct_shapes": 0, "z3_direct_cases": 0, "image_cases": 0}
    for exps in orientations:
        exps = tuple(exps)
        if exps == canon:
            continue
        t1 = time.perf_counter()
        st = Semitorus((0,) * len(exps), tuple(1 << e for e in exps), (True,) * len(exps))
        direct, outs = [], {}
        for k in range(order + 1):
            outs[k] = partition(st, k, scheme, nep_order)
            if is_permutation_image(cout[k], outs[k], canon, exps, _canon_rows=crows[k]) is None:
                direct.append(k)
        n_image = order + 1 - len(direct)
        tally["image_cases"] += n_image
        if not direct:
            tally["image_shapes"] += 1
            results.append(ProofResult(base.name, base.holds, time.perf_counter() - t1, f"{_shape_str(st)}, m=2^0..2^{order}", base.counterexample, {"cases": order + 1, "method": "image", "of": _shape_str(cst)}))
            continue
        tally["z3_direct_shapes"] += 1
        tally["z3_direct_cases"] += len(direct)
        r = prove_scheme_shape(scheme, st, direct, nep_order, outputs=outs)
        holds = r.holds and (base.holds or n_image == 0)
        ce = r.counterexample if not r.holds else (None if holds else base.counterexample)
        results.append(ProofResult(r.name, holds, time.perf_counter() - t1, r.size if not r.holds else f"{_shape_str(st)}, m=2^0..2^{order}", ce, {"cases": order + 1, "method": "z3" if n_image == 0 else "image+z3", "z3_cases": direct}))
    return results, tally


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


def _orientation_groups(max_dims: int, max_order: int) -> list[tuple[tuple[int, ...], list[tuple[int, ...]]]]:
    """Each shape up to orientation with all its orientations."""
    return [(base, sorted(set(itertools.permutations(base)))) for base in semitorus_shapes(max_dims, max_order)]


def _conversion_cases(shapes: Sequence[tuple[int, ...]], mode: str) -> list[ProofResult]:
    """Every wrap pattern of every shape (exponent tuples), one conversion mode."""
    res = []
    for exps in shapes:
        sides = tuple(1 << e for e in exps)
        machine = Torus(sides)
        for w in wrap_patterns(sides):
            res.append(prove_conversion(Semitorus((0,) * len(sides), sides, w), machine, mode))
    return res


def _prove_conversions(shapes: Sequence[tuple[int, ...]], workers: int) -> dict[str, list[ProofResult]]:
    """Both conversion modes on every shape; with ``workers > 1`` in that many processes.

    The shapes are dealt round-robin into ``2 * workers`` chunks per mode; the
    results are put back in the order of ``shapes``, so the output does not
    depend on ``workers``.
    """
    modes = ("collapse", "pair")
    if workers <= 1 or len(shapes) < 2:
        return {mode: _conversion_cases(shapes, mode) for mode in modes}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    n = min(2 * workers, len(shapes))
    chunks = [list(shapes[i::n]) for i in range(n)]
    # spawn, not fork: a forked child would inherit this process's Z3 context
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {(mode, i): pool.submit(_conversion_cases, chunk, mode) for mode in modes for i, chunk in enumerate(chunks)}
        done = {key: f.result() for key, f in futures.items()}
    out: dict[str, list[ProofResult]] = {}
    for mode in modes:
        # re-interleave: shape j of the input is shape j // n of chunk j % n
        per_shape: list[list[ProofResult]] = [[] for _ in shapes]
        for i, chunk in enumerate(chunks):
            it = iter(done[(mode, i)])
            for j, exps in enumerate(chunk):
                per_shape[i + j * n] = [next(it) for _ in wrap_patterns(tuple(1 << e for e in exps))]
        out[mode] = [r for rs in per_shape for r in rs]
    return out


def torus_rows(*, full: bool = False, max_dims: int = 6, max_order: int = 12, scheme_orientations: bool = True, workers: int = 1) -> list[dict]:
    """Every torus proof, summarised (``topoalloc prove torus``).

    EP and NEP: every orientation of every shape, every k — Z3 on the
    canonical orientation (non-increasing sides), exact permutation images
    (or Z3 directly where the output is not an image) for the others
    (``scheme_orientations=False``: the canonical orientation only).
    Conversions: one orientation per shape and every wrap pattern; with
    ``full``, every orientation and every wrap pattern; ``workers > 1`` proves
    the conversions in that many processes (same results, same order).
    """
    from .report import summarise

    rows = []
    groups = _orientation_groups(max_dims, max_order)
    for scheme in ("ep", "nep"):
        prop = f"{scheme.upper()}: pieces disjoint, cover S, one allocated with 2^k nodes" + (", 1+log2(|S|/m) pieces" if scheme == "nep" else "")
        res = []
        if not scheme_orientations:
            for base, _ in groups:
                res.append(prove_scheme_shape(scheme, Semitorus((0,) * len(base), tuple(1 << e for e in base), (True,) * len(base))))
            how = f"one orientation per shape: {len(groups):,} shapes, all by Z3"
        else:
            tally: dict[str, int] = {}
            for base, orients in groups:
                r, t = prove_scheme_orientations(scheme, base, orients)
                res.extend(r)
                for key, v in t.items():
                    tally[key] = tally.get(key, 0) + v
            n = len(res)
            how = (f"every orientation: {n:,} shapes — {tally['z3_shapes']:,} by Z3 + {tally['image_shapes']:,} by exact permutation image; "
                   f"{tally['z3_direct_shapes']:,} by Z3 directly ({tally['z3_direct_cases']:,} cases)")
        rows.append(summarise(f"{prop} [{how}]", res))
    machines = [tuple(d) for d in itertools.chain(
        ((a,) for a in range(1, 17)),
        itertools.product(range(1, 13), repeat=2),
        itertools.product(range(1, 9), repeat=3),
    )] + list(NAMED_MACHINES)
    rows.append(summarise("preprocessing partitions the torus [by Z3]", [prove_preprocessing(Torus(m)) for m in machines], largest=lambda r: len(r.size)))
    shapes = [o for base, orients in groups for o in (orients if full else [base])]
    conv = _prove_conversions(shapes, workers)
    for mode in ("collapse", "pair"):
        res = conv[mode]
        how = f"{'every orientation' if full else 'one orientation per shape'}: {len(shapes):,} shapes x every wrap pattern, all by Z3"
        rows.append(summarise(f"conversion ({mode}) is a dilation-1 embedding [{how}]", res))
    res = []
    for dims in ((2, 2, 2, 4, 4, 8), (2, 2, 2, 6, 8), (4, 4, 4), (12, 10, 7)):
        for scheme in ("ep", "nep"):
            for seed in range(3):
                res.append(prove_buddy_merge(Torus(dims), scheme, seed=seed))
    rows.append(summarise("buddy merging rebuilds the initial available set [by Z3]", res))
    return rows
