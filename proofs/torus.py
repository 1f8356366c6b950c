"""Proofs about the subtorus allocators' own output (Mao, Chen & Watson).

Every proof runs the implementation (``partition``, ``initial_available_set``,
``convert``, ``PartitionAllocator``) and checks what it produced against a
specification written here, from first principles, never by calling the
helper under test:

* **boxes** — a piece is the box ``offset_i <= x_i < offset_i + side_i``;
  its number of nodes is the product of its sides (never its cached
  ``size``/``order`` fields); its node ids are enumerated from the box and the
  machine's dimensions, first dimension fastest (:func:`box_node_ids`,
  :func:`node_coords`), never from ``Torus.box_nodes``/``Torus.coords``;
* **rings** — a side of 1 or 2 is a ring by convention; a longer side is a
  ring only where it spans a ring of its parent (:func:`expected_wrap`) —
  ultimately a whole wrapped machine dimension (:func:`machine_wrap_problem`);
* **links** — two machine nodes are linked iff their coordinates differ in
  one dimension, by 1, or by ``n - 1`` across a wrapped dimension of size
  ``n > 2``; the virtual torus's edges come from the definition of a torus
  of its shape (:func:`virtual_torus_edges`), not ``Conversion.virtual_edges``.

What each theorem assumes (takes from the implementation) and derives:

====================  ==============================================================  ===========
row                   assumed → derived                                               method
====================  ==============================================================  ===========
EP / NEP              the scheme's output for S at the **symbolic offset**            symbolic per
                      ``(o0, o1, ...)`` (:class:`SymbolicInt`: the schemes only add   case (Z3 over
                      positions to offsets, so their output is terms); Z3 proves      all points and
                      over all points and all offsets that the pieces partition S;    offsets); images
                      exact: 2^k nodes allocated, the piece count, every side a       of it exact
                      power of two, every piece's rings from geometry
EP / NEP wrap flags   the output for every wrap pattern of S → every piece's          exhaustive
                      rings from geometry (exact)
preprocessing         the initial available set → Z3 over all points: it              symbolic
                      partitions the machine; exact: each segment's rings are
                      the machine's
conversion            the virtual shape, the torus claim and the embedding →          exhaustive
                      bijection onto the box's node ids; every virtual edge
                      (wrap edges of every claimed ring included) a machine link
allocator runs        a seeded run of ``PartitionAllocator`` → every grant is         exhaustive
                      its box, of the rounded size, with real rings and a
                      dilation-1 job torus in the real machine; held + free
                      blocks (pieces of pieces) partition the machine after
                      every step; releasing all rebuilds the initial set
====================  ==============================================================  ===========

Every orientation (the argument behind the EP/NEP rows).  The shapes are the
2,509 exponent tuples with up to 6 dimensions and up to 2^12 nodes; up to
orientation (non-increasing sides) there are 226.  For each of the 226, Z3
proves every k on the implementation's output at a symbolic offset.  For
every other orientation and every k the implementation is run on the
oriented shape (at the symbolic offset too) and :func:`is_permutation_image`
checks, exactly, that its output is the coordinate-permuted image of the
canonical output: the same pieces as a list without repeats (offsets —
``o_i + c`` with the same constants —, sides and wrap flags permuted) and
the image of the allocated piece as the allocated piece.  A coordinate
permutation is a bijection of Z^d that maps boxes to boxes and the
canonical S onto the oriented S, and preserves sizes, counts and the ring
rule; so every fact proved of the canonical output holds for the image.
Any case whose output is not such an image is proved by Z3 directly (the
report says how many).  Nothing is sampled.

Conversions are not orientation-equivariant (the grouping of dimensions and
the Hamiltonian cycle depend on dimension order), so every conversion case is
proved on its own: one orientation per shape with every wrap pattern by
default (1,516 cases per mode), every orientation with ``full`` (21,224).
Conversions of semitori away from the origin, inside larger machines and
after several allocations, are checked by the allocator runs.

How the queries are built.  Formulas are SMT-LIB text over ``x0, x1, ...``
(a point), ``o0, o1, ...`` (a symbolic offset) and ``case`` (which batched
case), parsed by Z3 into one solver that is reused with push/pop
(:class:`_Refuter`).  Measured, constructing Python-level Z3 terms and a
fresh solver per case cost several times Z3's own decision; with text and
one solver most of the remaining time is the implementation computing its
output (EP's thousands of pieces, the conversions' embeddings).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Iterator, Sequence
from operator import attrgetter, itemgetter

import numpy as np

from ..alloc.base import Request
from ..alloc.partition import Conversion, PartitionAllocator, convert, initial_available_set
from ..alloc.partition.schemes import partition
from ..topology.torus import Semitorus, Torus
from .base import ProofResult, refuted

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
    "RUN_MACHINES",
    "SymbolicInt",
    "NotAffine",
    "symbolic_semitorus",
    "geometric_size",
    "expected_wrap",
    "scalar_problems",
    "prove_scheme_wraps",
    "node_coords",
    "box_node_ids",
    "machine_wrap_problem",
    "virtual_torus_edges",
    "conversion_problem",
]


def _num(v: int) -> str:
    """An SMT-LIB integer literal."""
    v = int(v)
    return str(v) if v >= 0 else f"(- {-v})"


_XS = tuple(f"x{i}" for i in range(64))
_OS = tuple(f"o{i}" for i in range(64))


class NotAffine(TypeError):
    """The implementation did something with a symbolic offset other than add or scale it."""


class SymbolicInt:
    """An integer ``Σ coef·o_i + const`` over symbolic offsets ``o_i``: what the implementation computes with.

    The partition schemes are run on a semitorus whose offset is
    ``(o0, o1, ...)`` — SMT-LIB integer constants, not numbers.  Their
    arithmetic on offsets (adding a piece's position, scaling) builds these
    terms; Z3 then decides the proof for **every** value of the offset at
    once.  Anything else — comparing, branching on, hashing or indexing with
    an offset — raises :class:`NotAffine`, reported as a failed proof: the
    argument "one query covers every offset" would not apply.

    Examples
    --------
    >>> o = SymbolicInt.var(0)
    >>> (o + 4).smt(), (2 * o + 1 - o).smt(), (o - o + 3).smt()
    ('(+ o0 4)', '(+ o0 1)', '3')
    """

    __slots__ = ("coefs", "const")

    def __init__(self, coefs: tuple[tuple[int, int], ...], const: int) -> None:
        object.__setattr__(self, "coefs", tuple((i, c) for i, c in coefs if c))
        object.__setattr__(self, "const", int(const))

    @classmethod
    def var(cls, i: int) -> "SymbolicInt":
        """The offset variable ``o_i``."""
        return cls(((i, 1),), 0)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("SymbolicInt is immutable")

    @staticmethod
    def _lift(other: object) -> "SymbolicInt":
        if isinstance(other, SymbolicInt):
            return other
        if isinstance(other, (int, np.integer)) and not isinstance(other, bool):
            return SymbolicInt((), int(other))
        raise NotAffine(f"arithmetic of a symbolic offset with {type(other).__name__}")

    @classmethod
    def _make(cls, coefs: tuple[tuple[int, int], ...], const: int) -> "SymbolicInt":
        new = object.__new__(cls)
        object.__setattr__(new, "coefs", coefs)
        object.__setattr__(new, "const", const)
        return new

    def __add__(self, other: object) -> "SymbolicInt":
        if type(other) is int:  # the common case, kept cheap: the schemes add positions to offsets
            return SymbolicInt._make(self.coefs, self.const + other)
        o = self._lift(other)
        acc = dict(self.coefs)
        for i, c in o.coefs:
            acc[i] = acc.get(i, 0) + c
        return SymbolicInt(tuple(sorted(acc.items())), self.const + o.const)

    __radd__ = __add__

    def __neg__(self) -> "SymbolicInt":
        return SymbolicInt(tuple((i, -c) for i, c in self.coefs), -self.const)

    def __sub__(self, other: object) -> "SymbolicInt":
        return self + (-self._lift(other))

    def __rsub__(self, other: object) -> "SymbolicInt":
        return self._lift(other) + (-self)

    def __mul__(self, other: object) -> "SymbolicInt":
        if isinstance(other, (int, np.integer)) and not isinstance(other, bool):
            return SymbolicInt(tuple((i, c * int(other)) for i, c in self.coefs), self.const * int(other))
        raise NotAffine(f"a symbolic offset multiplied by {type(other).__name__}")

    __rmul__ = __mul__

    def _refuse(self, *args: object) -> "SymbolicInt":
        raise NotAffine("the implementation compared, hashed, divided or indexed with a symbolic offset")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __index__ = __int__ = __hash__ = _refuse  # type: ignore[assignment]
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __and__ = __or__ = __xor__ = __lshift__ = __rshift__ = _refuse  # type: ignore[assignment]

    def key(self) -> tuple:
        """A sortable, hashable identity of the term (for the exact comparisons of the proof itself)."""
        return (self.coefs, self.const)

    def smt(self) -> str:
        terms = [f"o{i}" if c == 1 else f"(* {_num(c)} o{i})" for i, c in self.coefs]
        if not terms:
            return _num(self.const)
        if self.const:
            terms.append(_num(self.const))
        return terms[0] if len(terms) == 1 else "(+ " + " ".join(terms) + ")"

    def __repr__(self) -> str:
        return self.smt()


def _term(v: "int | SymbolicInt") -> str:
    """SMT-LIB text of an integer or a symbolic offset term."""
    return v.smt() if isinstance(v, SymbolicInt) else _num(v)


def _key(v: "int | SymbolicInt") -> tuple:
    """A sortable identity of an integer or a symbolic term (integers are terms without variables)."""
    return v.key() if isinstance(v, SymbolicInt) else ((), int(v))


def symbolic_semitorus(sides: Sequence[int], wrapped: Sequence[bool]) -> Semitorus:
    """The semitorus with the given sides and wrap flags at the symbolic offset ``(o0, o1, ...)``."""
    return Semitorus(tuple(SymbolicInt.var(i) for i in range(len(sides))), tuple(sides), tuple(wrapped))


def _box_smt(offset: Sequence["int | SymbolicInt"], sides: Sequence[int]) -> str:
    """SMT-LIB: the point ``(x0, x1, ...)`` lies in the box ``offset + [0, sides)``.

    Box membership from first principles: ``offset_i <= x_i < offset_i + side_i``
    in every dimension (offsets may be symbolic).
    """
    return "(and " + " ".join(f"(<= {_term(o)} {x}) (< {x} {_term(o + s)})" for x, o, s in zip(_XS, offset, sides)) + ")"


def geometric_size(st: Semitorus) -> int:
    """Number of nodes of a box, from its sides alone (never the cached ``size``/``order`` fields)."""
    n = 1
    for s in st.sides:
        n *= int(s)
    return n


def _log2_exact(n: int) -> int | None:
    """``log2(n)`` if ``n`` is a power of two, else None."""
    return n.bit_length() - 1 if n >= 1 and n & (n - 1) == 0 else None


class _Refuter:
    """One Z3 solver, reused: each query is pushed, decided and popped.

    Formulas arrive as SMT-LIB text over the integer constants ``x0, x1, ...``
    (a point), ``o0, o1, ...`` (a symbolic offset) and ``case`` (which of
    several batched cases), parsed by Z3's own
    parser (``z3.parse_smt2_string``).  Building the formulas as text and
    reusing one solver is what makes tens of thousands of proofs affordable:
    creating Python-level Z3 objects and a fresh solver per case cost several
    times more than Z3's decision itself.
    """

    def __init__(self) -> None:
        import z3

        self.z3 = z3
        self.solver = z3.Solver()
        self.decls = {name: z3.Int(name) for name in _XS + _OS + ("case",)}
        self._subsets: dict[tuple[str, ...], dict] = {}
        #: per machine (dims, wrap), the coordinate differences (keyed as in :func:`_prove_links`) Z3 has proved links
        self.links: dict[tuple[tuple[int, ...], tuple[bool, ...]], set[int]] = {}

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
            if not refuted(s):  # unsat; Ctrl-C or an unknown answer raises
                return None
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


def _grid_projections(pieces: Sequence[Semitorus]) -> list[list[tuple["int | SymbolicInt", int]]] | None:
    """If the pieces are exactly the product of their per-dimension intervals, those intervals.

    Exact: the intervals are compared as terms (:func:`_key`), so pieces at
    symbolic offsets are handled too.
    """
    d = len(pieces[0].offset)
    proj_keys: list[dict[tuple, tuple["int | SymbolicInt", int]]] = [{} for _ in range(d)]
    for p in pieces:
        for i in range(d):
            proj_keys[i].setdefault((_key(p.offset[i]), p.sides[i]), (p.offset[i], p.sides[i]))
    n = 1
    for axis in proj_keys:
        n *= len(axis)
    keys = {tuple((_key(o), sd) for o, sd in zip(p.offset, p.sides)) for p in pieces}
    if n != len(pieces) or len(keys) != len(pieces):
        return None
    # distinct pieces, as many as the product, each a member of the product: the sets are equal
    index = [{k[0]: k[1] for k in axis} for axis in proj_keys]
    if all(index[i].get(_key(p.offset[i])) == p.sides[i] for p in pieces for i in range(d)):
        return [[axis[k] for k in sorted(axis)] for axis in proj_keys]
    return None


def _cover_count(boxes: Sequence[str]) -> str:
    return boxes[0] if len(boxes) == 1 else "(+ " + " ".join(boxes) + ")"


#: Above this many intervals on one axis of a grid, the axis is proved by its chain (see :func:`_chain_violation`)
CHAIN_MIN_INTERVALS = 64


def _chain_violation(axis: Sequence[tuple["int | SymbolicInt", int]], lo: "int | SymbolicInt", hi: "int | SymbolicInt") -> str:
    """SMT-LIB: the intervals ``[o, o + side)`` of ``axis``, in the given order, are not a chain from ``lo`` to ``hi``.

    Lemma (stated here, not in the code under proof): nonempty intervals
    ``I_0, ..., I_{n-1}`` with ``start(I_0) = lo``, ``end(I_j) = start(I_{j+1})``
    and ``end(I_{n-1}) = hi`` partition ``[lo, hi)``, and cover nothing
    outside it.  The order is only a certificate (the intervals sorted by
    their terms): a wrong order can make the proof fail, never make it hold.
    Z3 decides the equalities for every value of a symbolic offset.  The
    point-counting form (a sum of one indicator per interval) is exact too,
    but Z3's time on it grows faster than quadratically in the number of
    intervals (109 s for 2,048 unit intervals); the chain is linear.
    """
    terms = [f"(<= {_term(o + sz)} {_term(o)})" for o, sz in axis]  # an empty interval
    terms.append(f"(distinct {_term(axis[0][0])} {_term(lo)})")
    terms += [f"(distinct {_term(o + sz)} {_term(nxt)})" for (o, sz), (nxt, _) in zip(axis, axis[1:])]
    terms.append(f"(distinct {_term(axis[-1][0] + axis[-1][1])} {_term(hi)})")
    return "(or " + " ".join(terms) + ")"


def _partition_violation(pieces: Sequence[Semitorus], whole: Sequence[Semitorus]) -> tuple[str, str, list | None]:
    """SMT-LIB text of "the pieces do not partition ``whole``", the method, and (grid) the axes.

    ``points``: a point ``x`` of ``whole`` covered by a number of pieces other
    than 1, or a point outside covered at all.  ``grid`` (the pieces are
    exactly the product of their per-dimension intervals, checked exactly, and
    ``whole`` is one box): a product of intervals partitions a box iff in each
    dimension the intervals partition the box's side, so the formula says: for
    some dimension ``i``, some coordinate ``x_i`` is covered by a number of
    that dimension's intervals other than 1 (inside the side) or 0 (outside).
    Both forms leave the point (and a symbolic offset) to Z3: it decides over
    all their values.
    """
    grid = _grid_projections(pieces) if len(whole) == 1 and len(pieces) > 16 else None
    if grid is not None:
        w = whole[0]
        axes = []
        for i, axis in enumerate(grid):
            lo, hi = w.offset[i], w.offset[i] + w.sides[i]
            if len(axis) > CHAIN_MIN_INTERVALS:
                axes.append(_chain_violation(axis, lo, hi))
                continue
            x = _XS[i]
            ivs = [f"(ite (and (<= {_term(o)} {x}) (< {x} {_term(o + sz)})) 1 0)" for o, sz in axis]
            count = _cover_count(ivs)
            inside = f"(and (<= {_term(lo)} {x}) (< {x} {_term(hi)}))"
            axes.append(f"(ite {inside} (distinct {count} 1) (distinct {count} 0))")
        return (axes[0] if len(axes) == 1 else "(or " + " ".join(axes) + ")"), "grid", grid
    count = _cover_count([f"(ite {_box_smt(p.offset, p.sides)} 1 0)" for p in pieces])
    inside = _box_smt(whole[0].offset, whole[0].sides) if len(whole) == 1 else "(or " + " ".join(_box_smt(w.offset, w.sides) for w in whole) + ")"
    return f"(ite {inside} (distinct {count} 1) (distinct {count} 0))", "points", None


def _is_symbolic(pieces: Sequence[Semitorus]) -> bool:
    return any(isinstance(o, SymbolicInt) for p in pieces for o in p.offset)


def _read_vars(d: int, symbolic: bool) -> tuple[str, ...]:
    return _XS[:d] + (_OS[:d] if symbolic else ())


def _value(v: "int | SymbolicInt", model: dict[str, int]) -> int:
    """An integer or a symbolic term evaluated at Z3's model of the offsets."""
    if isinstance(v, SymbolicInt):
        return v.const + sum(c * model.get(f"o{i}", 0) for i, c in v.coefs)
    return int(v)


def _grid_counterexample(grid: Sequence[Sequence[tuple["int | SymbolicInt", int]]], whole: Semitorus, offset: dict[str, int]) -> tuple[int, int] | None:
    """(axis, coordinate) covered by a wrong number of that axis's intervals, at the model's offset; None if none.

    The cover count is constant between consecutive interval ends, so the
    breakpoints (every start and end, and the box's own) are the only
    coordinates to look at.
    """
    for i, axis in enumerate(grid):
        ivs = [(_value(o, offset), _value(o, offset) + sz) for o, sz in axis]
        lo = _value(whole.offset[i], offset)
        hi = lo + whole.sides[i]
        for x in sorted({v for iv in ivs for v in iv} | {lo, hi}):
            want = 1 if lo <= x < hi else 0
            if sum(1 for a, b in ivs if a <= x < b) != want:
                return i, x
    return None


def prove_pieces_partition(pieces: Sequence[Semitorus], whole: Sequence[Semitorus], *, name: str = "partition", size: str = "") -> ProofResult:
    """Z3: every point of the boxes ``whole`` lies in exactly one of ``pieces``; no other point lies in any.

    General form: one query for a point whose number of covering pieces is
    wrong.  When the pieces form a grid (the list is exactly the product of
    its per-dimension intervals — checked exactly first) and ``whole`` is one
    box, the question splits by dimension: the product partitions the box iff
    every dimension's intervals partition its side, which Z3 decides for
    every coordinate value.  This keeps Equal Partitions of thousands of
    pieces fast; an axis of more than :data:`CHAIN_MIN_INTERVALS` intervals
    is decided by its chain (:func:`_chain_violation`).  Offsets may be symbolic (:class:`SymbolicInt`): the proof
    then holds for every value of the offset.
    """
    t0 = time.perf_counter()
    d = len(pieces[0].offset)
    symbolic = _is_symbolic(pieces) or _is_symbolic(whole)
    formula, method, grid = _partition_violation(pieces, whole)
    model = _refuter().refute(formula, _read_vars(d, symbolic))
    if model is not None:
        pt = tuple(model[x] for x in _XS[:d])
        offset = {f"o{i}": model[f"o{i}"] for i in range(d)} if symbolic else {}

        def inside(c: Sequence[int], box: Semitorus, axes: Sequence[int]) -> bool:
            return all(_value(box.offset[i], offset) <= c[i] < _value(box.offset[i], offset) + box.sides[i] for i in axes)

        # grid: only the failing dimension's coordinate is meaningful
        axes = list(range(d))
        if method == "grid":
            wrong = _grid_counterexample(grid, whole[0], offset)
            if wrong is not None:
                axes = [wrong[0]]
                pt = tuple(wrong[1] if i == wrong[0] else pt[i] for i in range(d))
        covering = [i for i, p in enumerate(pieces) if inside(pt, p, axes)]
        ce = {"point": pt if method != "grid" else {f"x{i}": pt[i] for i in axes}, "covered_by_pieces": covering[:8], "inside_whole": any(inside(pt, w, axes) for w in whole)}
        if symbolic:
            ce["offset"] = tuple(offset[f"o{i}"] for i in range(d))
        return ProofResult(name, False, time.perf_counter() - t0, size, ce)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces), "method": "symbolic", "encoding": method, "every_offset": symbolic})


def _shape_str(st: Semitorus) -> str:
    return "x".join(map(str, st.sides))


def expected_wrap(piece: Semitorus, parent: Semitorus, i: int) -> bool:
    """Whether ``piece`` may claim a ring in dimension ``i``, from geometry alone.

    A side of 1 or 2 is a ring by convention (no link beyond the one between
    its nodes).  A longer side is a ring only through its parent's wrap link,
    so only if it spans the parent's whole side and the parent has that ring.
    The partition schemes document that they keep the parent's ring exactly
    then; the proofs check equality, so a ring claimed without its link and a
    ring dropped for no reason both fail.
    """
    return piece.sides[i] <= 2 or (piece.sides[i] == parent.sides[i] and parent.wrapped[i])


def _piece_shapes(pieces: Sequence[Semitorus]) -> dict[tuple[tuple[int, ...], tuple[bool, ...]], int]:
    """Each distinct (sides, wrap flags) of the pieces, with the index of the first piece that has it, in piece order.

    A piece's scalar facts (its sides powers of two, its rings from geometry)
    depend on these two alone, not on its offset: checking one piece of each
    is checking every piece, and the first failing one found this way is the
    first failing piece.  (EP's pieces share one shape: thousands of pieces,
    one check.)
    """
    shapes: dict[tuple[tuple[int, ...], tuple[bool, ...]], int] = {}
    for j, p in enumerate(pieces):
        shapes.setdefault((p.sides, p.wrapped), j)
    return shapes


def _wrap_problem(pieces: Sequence[Semitorus], parent: Semitorus, shapes: dict | None = None) -> dict | None:
    for j in (_piece_shapes(pieces) if shapes is None else shapes).values():
        p = pieces[j]
        for i in range(len(p.sides)):
            want = expected_wrap(p, parent, i)
            if bool(p.wrapped[i]) != want:
                return {"piece": j, "dimension": i, "claimed_ring": bool(p.wrapped[i]), "geometry": want, "sides": p.sides, "parent_sides": parent.sides}
    return None


def _scheme_case(scheme: str, st: Semitorus, k: int, nep_order: str) -> tuple[list[Semitorus], int, dict]:
    """The implementation's output for one case and :func:`scalar_problems` of it."""
    try:
        pieces, at = partition(st, k, scheme, nep_order)
    except NotAffine as exc:
        return [], 0, {"not_affine_in_the_offset": str(exc)}
    return pieces, at, scalar_problems(scheme, st, k, pieces, at)


def scalar_problems(scheme: str, st: Semitorus, k: int, pieces: Sequence[Semitorus], at: int) -> dict:
    """The exact checks of one scheme output's scalar facts; empty when all hold.

    Every fact is computed from geometry in this module, never from the
    pieces' cached ``size``/``order`` fields: every side a power of two; the
    allocated piece has ``2^k`` nodes (the product of its sides); EP makes
    ``|S|/2^k`` pieces of one shape, NEP ``1 + log2(|S|/2^k)``; every piece's
    wrap flags are those of :func:`expected_wrap`.  The partition itself is
    left to Z3 (:func:`_scheme_violation`).
    """
    problems: dict = {}
    if not 0 <= at < len(pieces):
        problems["allocated_index"] = at
        return problems
    shapes = _piece_shapes(pieces)  # (each distinct shape checked once: see there)
    bad_sides = [sides for sides, _ in shapes if any(_log2_exact(int(sd)) is None for sd in sides)]
    if bad_sides:
        problems["sides_not_powers_of_two"] = bad_sides[:4]
    whole = _log2_exact(geometric_size(st))
    got = geometric_size(pieces[at])
    if got != 1 << k:
        problems["allocated_piece_size"] = {"product_of_sides": got, "expected": 1 << k}
    if whole is not None:
        if scheme == "ep" and (len(pieces) != 1 << (whole - k) or len({sides for sides, _ in shapes}) != 1):
            problems["ep_pieces"] = {"got": len(pieces), "expected": 1 << (whole - k), "shapes": sorted({sides for sides, _ in shapes})[:4]}
        if scheme == "nep" and len(pieces) != 1 + whole - k:
            problems["pieces"] = {"got": len(pieces), "expected": 1 + whole - k}
    wrap = _wrap_problem(pieces, st, shapes)
    if wrap is not None:
        problems["wrap"] = wrap
    return problems


def _scheme_violation(scheme: str, st: Semitorus, k: int, pieces: Sequence[Semitorus], at: int) -> str:
    """SMT-LIB: the pieces do not partition S (the scalar facts are checked exactly by :func:`_scheme_case`)."""
    return _partition_violation(pieces, [st])[0]


def _scheme_input(st: Semitorus, symbolic: bool) -> Semitorus:
    return symbolic_semitorus(st.sides, st.wrapped) if symbolic else st


def prove_scheme(scheme: str, st: Semitorus, k: int, nep_order: str = "exhaust-largest", *, symbolic_offset: bool = True) -> ProofResult:
    """Prove the EP/NEP partition of ``st``'s shape for 2^k nodes (see the module notes).

    With ``symbolic_offset`` (default) the implementation partitions the
    semitorus with ``st``'s sides and wrap flags at the symbolic offset
    ``(o0, o1, ...)`` and Z3 proves the partition for every offset;
    otherwise at ``st``'s own offset.
    """
    t0 = time.perf_counter()
    st = _scheme_input(st, symbolic_offset)
    pieces, at, problems = _scheme_case(scheme, st, k, nep_order)
    name = f"{scheme} partition"
    size = f"{_shape_str(st)}, m=2^{k}"
    if problems:
        return ProofResult(name, False, time.perf_counter() - t0, size, problems)
    res = prove_pieces_partition(pieces, [st], name=name, size=size)
    if not res.holds:
        return res
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces), "cases": 1, "method": "symbolic"})


def prove_scheme_shape(scheme: str, st: Semitorus, ks: Sequence[int] | None = None, nep_order: str = "exhaust-largest", *, outputs: dict | None = None, symbolic_offset: bool = True) -> ProofResult:
    """Every case ``k in ks`` (default: every k, 0 <= k <= order) of one shape in ONE Z3 query.

    The query is the disjunction over the cases of ``case = i ∧ (case i's
    pieces do not partition S)``, with S at the symbolic offset; unsat proves
    every case for every offset.  On sat, Z3's model names the failing case,
    which :func:`prove_scheme` then proves alone to report its
    counterexample.  ``outputs`` (k -> (pieces, at)) may pass the
    implementation's output when the caller already has it (for the same
    input semitorus).
    """
    t0 = time.perf_counter()
    st = _scheme_input(st, symbolic_offset)
    order = _log2_exact(geometric_size(st)) or 0
    ks = list(range(order + 1)) if ks is None else list(ks)
    name = f"{scheme} partition"
    size = f"{_shape_str(st)}, m=2^{ks[0]}..2^{ks[-1]}" if len(ks) > 1 else f"{_shape_str(st)}, m=2^{ks[0]}"
    terms = []
    for i, k in enumerate(ks):
        if outputs is not None and k in outputs:
            pieces, at = outputs[k]
            problems = scalar_problems(scheme, st, k, pieces, at)
        else:
            pieces, at, problems = _scheme_case(scheme, st, k, nep_order)
        if problems:
            return ProofResult(name, False, time.perf_counter() - t0, f"{_shape_str(st)}, m=2^{k}", problems)
        terms.append(f"(and (= case {i}) {_scheme_violation(scheme, st, k, pieces, at)})")
    d = len(st.sides)
    model = _refuter().refute(terms[0] if len(terms) == 1 else "(or " + " ".join(terms) + ")", ("case",) + _read_vars(d, _is_symbolic([st])))
    if model is not None:
        r = prove_scheme(scheme, st, ks[model["case"]], nep_order, symbolic_offset=False)
        ce = r.counterexample if not r.holds else {"case": ks[model["case"]], "note": "Z3 found the batched case wrong"}
        return ProofResult(name, False, time.perf_counter() - t0, r.size, ce)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"cases": len(ks), "method": "symbolic"})


def node_coords(nodes: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """Coordinates of node ids, from first principles: the first dimension fastest (``node = Σ c_i·Π_{j<i} dims_j``)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    out = np.empty((nodes.size, len(dims)), dtype=np.int64)
    rest = nodes.copy()
    for i, n in enumerate(dims):
        out[:, i] = rest % n
        rest //= n
    return out


def box_node_ids(offset: Sequence[int], sides: Sequence[int], dims: Sequence[int]) -> np.ndarray:
    """Sorted node ids of the box ``offset + [0, sides)`` of a machine ``dims``, from first principles."""
    ids = np.zeros(1, dtype=np.int64)
    stride = 1
    for o, s, n in zip(offset, sides, dims):  # every id so far, plus each coordinate of the next dimension
        ids = (ids[:, None] + np.arange(int(o), int(o) + int(s), dtype=np.int64)[None, :] * stride).ravel()
        stride *= int(n)
    return np.sort(ids)


def machine_wrap_problem(p: Semitorus, machine: Torus) -> dict | None:
    """A ring ``p`` claims without the machine's wrap link, or a ring it has and does not claim; else None.

    From geometry: a side of 1 or 2 is a ring by convention; a longer side is
    a ring exactly when it spans the whole machine dimension (offset 0, side
    = the dimension) and the machine wraps that dimension.
    """
    for i, (o, sd, w) in enumerate(zip(p.offset, p.sides, p.wrapped)):
        real = sd <= 2 or (int(o) == 0 and sd == machine.dims[i] and machine.wrap[i])
        if bool(w) != real:
            return {"dimension": i, "claimed_ring": bool(w), "wrap_link_exists": real, "piece": p.describe()}
    return None


def prove_preprocessing(machine: Torus) -> ProofResult:
    """Z3: the initial available set partitions the machine's box ``0 <= x_i < dims_i``; its wrap flags follow geometry.

    The partition is decided by Z3 over every point (symbolic); every
    segment's sides are powers of two and its wrap flags are those of
    :func:`machine_wrap_problem` (exact).
    """
    pieces = initial_available_set(machine)
    t0 = time.perf_counter()
    name, size = "preprocessing", machine.spec()
    for p in pieces:
        if any(_log2_exact(int(sd)) is None for sd in p.sides):
            return ProofResult(name, False, time.perf_counter() - t0, size, {"sides_not_powers_of_two": p.sides})
        wrap = machine_wrap_problem(p, machine)
        if wrap is not None:
            return ProofResult(name, False, time.perf_counter() - t0, size, {"wrap": wrap})
    count = _cover_count([f"(ite {_box_smt(p.offset, p.sides)} 1 0)" for p in pieces])
    inside = _box_smt((0,) * machine.ndim, machine.dims)
    model = _refuter().refute(f"(ite {inside} (distinct {count} 1) (distinct {count} 0))", _XS[: machine.ndim])
    if model is not None:
        return ProofResult(name, False, time.perf_counter() - t0, size, {"point": tuple(model[x] for x in _XS[: machine.ndim])})
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(pieces), "method": "symbolic"})


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


#: a coordinate difference is keyed by one integer below this (else the differences are grouped row by row)
_KEY_LIMIT = 1 << 62


def _prove_links(machine: Torus, nodes: np.ndarray, a: np.ndarray, b: np.ndarray) -> int | None:
    """Z3: every pair (nodes[a[t]], nodes[b[t]]) of physical nodes is a link.  Returns a failing t, or None.

    The pairs are grouped by coordinate difference (exactly, with numpy); Z3
    decides the link property for each distinct difference that occurs, all
    in one query (``case = i`` selects the difference).  The property depends
    on the machine and the difference alone (:func:`_link_formula`), so a
    difference Z3 has proved a link of this machine (``wrap`` and ``dims``
    alike) is not asked again in this process: the conversions of every wrap
    pattern of a shape, and both modes, meet the same few differences on the
    same machine.  A difference found not to be a link is never remembered.
    """
    if a.size == 0:
        return None
    dims = [int(n) for n in machine.dims]
    xyz = node_coords(nodes, dims)  # each node's coordinates, once
    if math.prod(2 * n - 1 for n in dims) < _KEY_LIMIT:
        # one integer per difference: digits diff_i + n_i - 1 in radix 2 n_i - 1, the first the most significant.
        # It is linear in the coordinates, so it is a difference of node keys plus a constant:
        # key(x - y) = K(x) - K(y) + C, with K(x) = sum x_i R_i
        radix = [1] * len(dims)
        for i in range(len(dims) - 2, -1, -1):
            radix[i] = radix[i + 1] * (2 * dims[i + 1] - 1)
        node_key = xyz @ np.asarray(radix, dtype=np.int64)
        key = node_key[a] - node_key[b] + sum((n - 1) * r for n, r in zip(dims, radix))
        known = _refuter().links.setdefault((tuple(dims), tuple(bool(w) for w in machine.wrap)), set())
        fresh = [int(k) for k in np.unique(key) if int(k) not in known]  # (a sort; few distinct values)
        if not fresh:
            return None
        first = np.array([int(np.argmax(key == k)) for k in fresh], dtype=np.int64)
    else:  # (a machine too large for one 64-bit integer per difference: nothing remembered)
        known, fresh = None, []
        first = np.unique(xyz[a] - xyz[b], axis=0, return_index=True)[1]
    rows = xyz[a[first]] - xyz[b[first]]
    terms = [f"(and (= case {i}) (not {_link_formula(machine, row.tolist())}))" for i, row in enumerate(rows)]
    model = _refuter().refute(terms[0] if len(terms) == 1 else "(or " + " ".join(terms) + ")", ("case",))
    if model is not None:
        return int(first[model["case"]])
    if known is not None:
        known.update(fresh)
    return None


def virtual_torus_edges(shape: Sequence[int], rings: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every edge of the virtual torus (or mesh) ``shape``, from its definition: ``(a, b, dimension)`` arrays.

    Virtual ids put the first dimension fastest.  Along dimension ``j`` of
    size ``n`` each node is joined to the next (``x -> x + 1``); if ``rings``
    (the job is told it has a torus) and ``n > 2``, also the wrap edge
    ``n - 1 -> 0``.  A ring of 2 is its one edge.
    """
    M = 1
    for n in shape:
        M *= int(n)
    v = np.arange(M, dtype=np.int64)
    a_parts, b_parts, dims = [], [], []
    stride = 1
    for j, n in enumerate(shape):
        x = (v // stride) % n
        nxt = x + 1 < n
        if rings and n > 2:  # every node has its edge to the next, the last of a ring back to the first: in node order
            a_parts.append(v)
            b_parts.append(np.where(nxt, v + stride, v - (n - 1) * stride))
        else:
            a_parts.append(v[nxt])
            b_parts.append(v[nxt] + stride)
        dims.append(np.full(len(a_parts[-1]), j))
        stride *= int(n)
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)  # noqa: E731
    return cat(a_parts), cat(b_parts), cat(dims)


def prove_conversion(st: Semitorus, machine: Torus, mode: str) -> ProofResult:
    """The conversion's embedding is a bijection onto the allocation and maps every
    virtual edge (wrap edges included) to a physical link of the machine (dilation 1).

    Assumed: nothing of the implementation but its output (the virtual shape,
    whether it claims a torus, the embedding).  Derived here: the
    allocation's node ids from the box (:func:`box_node_ids`), the virtual
    edges from the definition of a torus of that shape
    (:func:`virtual_torus_edges`: every dimension of size > 2 a ring when a
    torus is claimed), and whether two machine nodes are linked from their
    coordinates (:func:`node_coords`, :func:`_link_formula`: one coordinate
    differs, by 1, or by ``n - 1`` across a wrapped machine dimension of
    size ``n > 2``).  So a ring the job is promised without the machine's
    wrap link fails.  The bijection and the size are exact comparisons; the
    links go to Z3 grouped by coordinate difference, i.e. Z3 is given
    constants: the method is exhaustive.
    """
    t0 = time.perf_counter()
    conv = convert(st, machine, mode)
    name, size = f"conversion ({mode})", f"{st.describe()} -> {'x'.join(map(str, conv.shape))}"
    problem, links = conversion_problem(conv, st, machine)
    if problem is not None:
        return ProofResult(name, False, time.perf_counter() - t0, size, problem)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"virtual_shape": conv.shape, "torus": conv.torus, "method": "exhaustive", "checked_links": links})


def _distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct values of ``keys``, ascending: ``np.unique``'s answer by a sort (numpy 2's hashing
    ``np.unique`` took ten times as long on these arrays, and half the conversion proofs' time)."""
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys


def conversion_problem(conv: Conversion, st: Semitorus, machine: Torus) -> tuple[dict | None, int]:
    """What is wrong with conversion ``conv`` of ``st`` on ``machine`` (None if nothing), and how many links were checked.

    See :func:`prove_conversion` for what is derived here.
    """
    emb = np.asarray(conv.embedding, dtype=np.int64)
    M = int(emb.size)
    nodes = geometric_size(st)
    shape_nodes = 1
    for n in conv.shape:
        shape_nodes *= int(n)
    if M != nodes or shape_nodes != nodes:
        return {"property": "size", "virtual": M, "virtual_shape_nodes": shape_nodes, "allocation": nodes}, 0
    # bijection onto the allocation: an exact comparison of node sets (no solver needed): every node of the box
    # exactly once, and nothing else (the box's ids are distinct by construction; counted over the machine's ids)
    outside = [i for i, (o, sd, n) in enumerate(zip(st.offset, st.sides, machine.dims)) if int(o) < 0 or int(o) + int(sd) > int(n)]
    if outside or len(st.sides) != len(machine.dims):  # (a box not inside the machine has no node ids to compare with)
        return {"property": "allocation outside the machine", "dimensions": outside, "offset": [int(o) for o in st.offset], "sides": list(st.sides), "machine": list(machine.dims)}, 0
    box = box_node_ids(st.offset, st.sides, machine.dims)
    inside = (emb >= 0) & (emb < machine.n_nodes)
    counts = np.bincount(emb[inside], minlength=machine.n_nodes)
    if not (inside.all() and np.all(counts[box] == 1) and int(counts.sum()) == box.size):
        dup = np.flatnonzero(counts > 1)
        return {"property": "bijection", "repeated_nodes": dup[:5].tolist(), "outside_the_allocation": sorted(set(emb.tolist()) - set(box.tolist()))[:5]}, 0
    a, b, dims = virtual_torus_edges(conv.shape, conv.torus)
    # the code's own edge list (the conformance suite checks allocations with it) must be the definition's, as sets
    # of unordered pairs: the same list pair by pair (both go node by node, dimension by dimension) is the same set;
    # otherwise the sets are compared, each pair keyed min * M + max (numpy, as set comprehensions cost a third of
    # the proof)
    code = conv.virtual_edge_array()
    lo, hi = code[:, 0], code[:, 1]
    code_lo, code_hi, def_lo, def_hi = np.minimum(lo, hi), np.maximum(lo, hi), np.minimum(a, b), np.maximum(a, b)
    if not (np.array_equal(code_lo, def_lo) and np.array_equal(code_hi, def_hi)):
        code_keys, def_keys = _distinct(code_lo * M + code_hi), _distinct(def_lo * M + def_hi)
        if not np.array_equal(code_keys, def_keys):
            pairs = lambda keys: [(int(k) // M, int(k) % M) for k in keys[:4]]  # noqa: E731
            return {"property": "virtual_edges", "code_only": pairs(np.setdiff1d(code_keys, def_keys)), "definition_only": pairs(np.setdiff1d(def_keys, code_keys))}, 0
    bad = _prove_links(machine, emb, a, b)
    if bad is not None:
        return {"property": "dilation", "virtual": (int(a[bad]), int(b[bad])), "dimension": int(dims[bad]), "physical": (int(emb[a[bad]]), int(emb[b[bad]]))}, int(a.size)
    return None, int(a.size)


def prove_buddy_merge(machine: Torus, scheme: str, seed: int = 0, steps: int = 200, *, convert_mode: str = "collapse", identify: str = "smallest", nep_order: str = "exhaust-largest", check_every: int = 1) -> ProofResult:
    """The allocator's own run: every grant, every free block and the final merge, checked from geometry.

    A seeded sequence of ``steps`` random allocations (any size up to the
    largest block, rounded up by the allocator) and releases, then every
    job released.  Checked, with everything derived in this module from
    offsets, sides and the machine's dimensions:

    * every grant: its node ids are the box of its semitorus
      (:func:`box_node_ids`), it has the rounded size (the product of its
      sides), its wrap flags are real rings of the machine
      (:func:`machine_wrap_problem`), and the job's torus is a dilation-1
      embedding in the real machine (:func:`conversion_problem`: a ring the
      job is told it has must have its wrap link);
    * every ``check_every`` steps: the held semitori and the free blocks (the
      available set, pieces of pieces after several allocations) partition
      the machine — every node in exactly one box, node ids enumerated from
      each box's offset and sides — and every free block's wrap flags are
      real rings;
    * at the end: the available set is again exactly the initial one (same
      boxes) and partitions the machine.

    A grant the base allocator refuses (busy or repeated nodes) is a failed
    proof.  Method: exhaustive along the run (exact checks of every step;
    the run itself is one seeded sequence, not every sequence).
    """
    from ..errors import AllocationError

    t0 = time.perf_counter()
    opts = "" if (convert_mode, identify, nep_order) == ("collapse", "smallest", "exhaust-largest") else f", convert={convert_mode}, identify={identify}, nep_order={nep_order}"
    name, size = f"allocator run + buddy merge ({scheme})", f"{machine.spec()}, {steps} steps, seed {seed}{opts}"
    a = PartitionAllocator(machine, scheme=scheme, convert=convert_mode, identify=identify, nep_order=nep_order)
    initial = a.available()
    rng = random.Random(seed)
    held: list = []
    checked_conv: set = set()
    grants = partitions = 0

    def fail(ce: dict, step: int) -> ProofResult:
        return ProofResult(name, False, time.perf_counter() - t0, size, {"step": step, **ce})

    def cover_problem() -> dict | None:
        boxes = [al.info["semitorus"] for al in held] + a.available()
        for b in boxes[len(held):]:
            wrap = machine_wrap_problem(b, machine)
            if wrap is not None:
                return {"property": "free block wrap", **wrap}
        # every node of the machine in exactly one box: boxes enumerated node by node from their geometry
        inside = [all(0 <= int(o) and int(o) + sd <= n for o, sd, n in zip(b.offset, b.sides, machine.dims)) for b in boxes]
        if not all(inside):
            return {"property": "a block outside the machine", "block": boxes[inside.index(False)].describe()}
        # each box's nodes counted where they are: the machine as an array with the first dimension fastest (the
        # last axis), the box its ranges offset_i .. offset_i + side_i - 1 (the ids box_node_ids gives, in place)
        grid = np.zeros(tuple(int(n) for n in reversed(machine.dims)), dtype=np.int32)
        for b in boxes:
            grid[tuple(slice(int(o), int(o) + int(sd)) for o, sd in zip(reversed(b.offset), reversed(b.sides)))] += 1
        bad = np.flatnonzero(grid.ravel() != 1)
        if bad.size:
            node = int(bad[0])
            pt = tuple(int(c) for c in node_coords(np.array([node]), machine.dims)[0])
            cover = [b.describe() for b in boxes if all(int(o) <= c < int(o) + sd for c, o, sd in zip(pt, b.offset, b.sides))]
            return {"property": "held + free partition the machine", "point": pt, "covered_by": cover[:4]}
        return None

    for step in range(steps):
        if held and rng.random() < 0.4:
            a.release(held.pop(rng.randrange(len(held))))
        else:
            want = rng.randint(1, 1 << rng.randint(0, a.max_order))
            try:
                got = a.allocate(Request(want))
            except AllocationError as exc:
                return fail({"property": "grant refused by the base allocator", "error": str(exc)}, step)
            if got is not None:
                grants += 1
                st = got.info["semitorus"]
                n = geometric_size(st)
                if any(_log2_exact(int(sd)) is None for sd in st.sides) or n < want or n != 1 << (want - 1).bit_length():
                    return fail({"property": "size", "sides": st.sides, "requested": want}, step)
                if not np.array_equal(np.asarray(got.nodes), box_node_ids(st.offset, st.sides, machine.dims)):
                    return fail({"property": "nodes are not the box", "semitorus": st.describe()}, step)
                wrap = machine_wrap_problem(st, machine)
                if wrap is not None:
                    return fail({"property": "granted semitorus wrap", **wrap}, step)
                key = (st.offset, st.sides, st.wrapped)
                if key not in checked_conv:
                    problem, _ = conversion_problem(got.info["conversion"], st, machine)
                    if problem is not None:
                        return fail({"property": "job torus", "semitorus": st.describe(), **problem}, step)
                    checked_conv.add(key)
                held.append(got)
        if check_every and step % check_every == 0:
            partitions += 1
            problem = cover_problem()
            if problem is not None:
                return fail(problem, step)
    for h in held:
        a.release(h)
    held = []
    final = a.available()
    keys = lambda blocks: sorted((b.offset, b.sides, b.wrapped) for b in blocks)  # noqa: E731
    if keys(final) != keys(initial):
        return fail({"property": "merge", "initial": [p.describe() for p in initial], "final": [p.describe() for p in final]}, steps)
    problem = cover_problem()
    if problem is not None:
        return fail(problem, steps)
    return ProofResult(name, True, time.perf_counter() - t0, size, None, {"pieces": len(final), "grants": grants, "partitions": partitions + 1, "conversions": len(checked_conv), "method": "exhaustive"})


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


def _offset_constant(o: "int | SymbolicInt", i: int) -> int | None:
    """An offset term of dimension ``i`` as an integer: itself, or ``c`` where it is ``o_i + c``.

    None for any other symbolic term (such an output is never taken for an
    image: it is proved by Z3 directly).
    """
    if isinstance(o, SymbolicInt):
        return o.const if o.coefs == ((i, 1),) else None
    return int(o)


def _by_identity(column: list) -> tuple[list[int], np.ndarray]:
    """The distinct objects of ``column`` by identity (valid while the column holds them): the index of each one's
    first place, and for every place the number of its object among them."""
    ids = np.fromiter(map(id, column), dtype=np.uint64, count=len(column))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    return first.tolist(), inverse


def _rows(pieces: Sequence[Semitorus]) -> np.ndarray | None:
    """The pieces as integer rows ``offset + sides + wrapped`` (one row per piece); None if not representable.

    With many pieces, column by column: the pieces share their terms (EP's thousands of pieces take their
    offsets from a few per dimension, and one tuple of sides and one of flags), so each distinct object of a
    column is read once (:func:`_offset_constant` for an offset term) and its value spread over the pieces that
    hold it."""
    n = len(pieces)
    if n < 64:  # (few pieces, as NEP's: numpy's set-up would cost more than it saves)
        rows = []
        for p in pieces:
            off = [_offset_constant(o, i) for i, o in enumerate(p.offset)]
            if None in off:
                return None
            rows.append((*off, *p.sides, *(int(bool(w)) for w in p.wrapped)))
        return np.array(rows, dtype=np.int64)
    offsets = list(map(attrgetter("offset"), pieces))
    sides = list(map(attrgetter("sides"), pieces))
    flags = list(map(attrgetter("wrapped"), pieces))
    d = len(offsets[0])
    if {*map(len, offsets), *map(len, sides), *map(len, flags)} != {d}:
        return None  # (pieces of other dimensions: not rows of one table)
    out = np.empty((n, 3 * d), dtype=np.int64)
    for i in range(d):
        column = list(map(itemgetter(i), offsets))
        first, inverse = _by_identity(column)
        consts = [_offset_constant(column[f], i) for f in first]
        if None in consts:
            return None
        out[:, i] = np.asarray(consts, dtype=np.int64)[inverse]
    for part, column, value in ((1, sides, int), (2, flags, lambda w: int(bool(w)))):
        first, inverse = _by_identity(column)
        table = np.array([[value(x) for x in column[f]] for f in first], dtype=np.int64)
        out[:, part * d : (part + 1) * d] = table.reshape(len(first), d)[inverse]
    return out


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
    if any(isinstance(o, SymbolicInt) for o in cp[0].offset) != any(isinstance(o, SymbolicInt) for o in op[0].offset):
        return None  # one output at a symbolic offset, the other at a number: not comparable
    orows = _rows(op)
    if orows is None or orows.shape[1] != 3 * d:
        return None
    osorted = _sorted_rows(orows)
    if len(osorted) > 1 and (np.diff(osorted, axis=0) == 0).all(axis=1).any():
        return None  # a repeated piece
    crows = _rows(cp) if _canon_rows is None else _canon_rows
    if crows is None:
        return None
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
    cst = symbolic_semitorus(tuple(1 << e for e in canon), (True,) * len(canon))
    t0 = time.perf_counter()
    try:
        cout = {k: partition(cst, k, scheme, nep_order) for k in range(order + 1)}
    except NotAffine as exc:
        r = ProofResult(f"{scheme} partition", False, time.perf_counter() - t0, _shape_str(cst), {"not_affine_in_the_offset": str(exc)})
        return [r], {"z3_shapes": 0, "image_shapes": 0, "z3_direct_shapes": 0, "z3_direct_cases": 0, "image_cases": 0}
    crows = {k: _rows(p) for k, (p, _) in cout.items()}
    base = prove_scheme_shape(scheme, cst, None, nep_order, outputs=cout, symbolic_offset=False)
    base_seconds = time.perf_counter() - t0
    base = ProofResult(base.name, base.holds, base_seconds, base.size, base.counterexample, {**base.details, "method": "symbolic"})
    results = [base]
    tally = {"z3_shapes": 1, "image_shapes": 0, "z3_direct_shapes": 0, "z3_direct_cases": 0, "image_cases": 0}
    for exps in orientations:
        exps = tuple(exps)
        if exps == canon:
            continue
        t1 = time.perf_counter()
        st = symbolic_semitorus(tuple(1 << e for e in exps), (True,) * len(exps))
        direct, outs = [], {}
        for k in range(order + 1):
            try:
                outs[k] = partition(st, k, scheme, nep_order)
            except NotAffine:
                direct.append(k)  # proved (and reported) directly
                continue
            if is_permutation_image(cout[k], outs[k], canon, exps, _canon_rows=crows[k]) is None:
                direct.append(k)
        n_image = order + 1 - len(direct)
        tally["image_cases"] += n_image
        if not direct:
            tally["image_shapes"] += 1
            results.append(ProofResult(base.name, base.holds, time.perf_counter() - t1, f"{_shape_str(st)}, m=2^0..2^{order}", base.counterexample, {"cases": order + 1, "method": "exhaustive", "how": "image", "of": _shape_str(cst)}))
            continue
        tally["z3_direct_shapes"] += 1
        tally["z3_direct_cases"] += len(direct)
        r = prove_scheme_shape(scheme, st, direct, nep_order, outputs={k: v for k, v in outs.items() if k in direct}, symbolic_offset=False)
        holds = r.holds and (base.holds or n_image == 0)
        ce = r.counterexample if not r.holds else (None if holds else base.counterexample)
        results.append(ProofResult(r.name, holds, time.perf_counter() - t1, r.size if not r.holds else f"{_shape_str(st)}, m=2^0..2^{order}", ce, {"cases": order + 1, "method": "symbolic" if n_image == 0 else "exhaustive", "how": "z3" if n_image == 0 else "image+z3", "z3_cases": direct}))
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
    from topoalloc._procs import call_in_processes

    n = min(2 * workers, len(shapes))
    chunks = [list(shapes[i::n]) for i in range(n)]
    keys = [(mode, i) for mode in modes for i in range(n)]
    # spawn, not fork: a forked child would inherit this process's Z3 context;
    # Ctrl-C terminates the workers at once instead of waiting for their chunks
    results = call_in_processes(_conversion_cases, [(chunks[i], mode) for mode, i in keys], workers, start_method="spawn")
    done = dict(zip(keys, results))
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


def prove_scheme_wraps(scheme: str, exps: Sequence[int], nep_order: str = "exhaust-largest") -> ProofResult:
    """Every wrap pattern of one shape, every k: the pieces' wrap flags are those geometry allows (exact).

    The main EP/NEP proof partitions a semitorus whose every side is a ring;
    this one runs the scheme on every wrap pattern (:func:`wrap_patterns`) and
    checks every piece's flags with :func:`expected_wrap` (and the other
    scalar facts of :func:`scalar_problems`).
    """
    t0 = time.perf_counter()
    sides = tuple(1 << e for e in exps)
    cases = 0
    for w in wrap_patterns(sides):
        st = Semitorus((0,) * len(sides), sides, w)
        for k in range(sum(exps) + 1):
            pieces, at, problems = _scheme_case(scheme, st, k, nep_order)
            cases += 1
            if problems:
                return ProofResult(f"{scheme} wrap flags", False, time.perf_counter() - t0, f"{st.describe()}, m=2^{k}", problems)
    return ProofResult(f"{scheme} wrap flags", True, time.perf_counter() - t0, f"{_shape_str(Semitorus((0,) * len(sides), sides, (True,) * len(sides)))}", None, {"cases": cases, "method": "exhaustive"})


#: machines whose allocator runs are proved (grants, free blocks, merging)
RUN_MACHINES = ((2, 2, 2, 4, 4, 8), (2, 2, 2, 6, 8), (4, 4, 4), (12, 10, 7), (3, 6, 5), (6, 6, 6, 6))
#: seeds per (machine, scheme) of the allocator runs; seed i runs with the options _RUN_OPTIONS[i % 3]
RUN_SEEDS = 3
_RUN_OPTIONS: tuple[dict[str, str], ...] = ({}, {"convert_mode": "pair"}, {"identify": "first", "nep_order": "balanced"})


def torus_rows(*, full: bool = False, max_dims: int = 6, max_order: int = 12, scheme_orientations: bool = True, workers: int = 1, wrap_order: int | None = None, run_machines: Sequence[tuple[int, ...]] | None = None, run_seeds: int | None = None, run_steps: int = 200) -> list[dict]:
    """Every torus proof, summarised (``topoalloc prove torus``).

    EP and NEP: every orientation of every shape, every k, at every offset —
    Z3 on the canonical orientation (non-increasing sides) at a symbolic
    offset, exact permutation images (or Z3 directly where the output is not
    an image) for the others (``scheme_orientations=False``: the canonical
    orientation only).  Wrap flags of the pieces for every wrap pattern of
    S: canonical orientations up to ``2^wrap_order`` nodes (default: 2^8, or
    ``max_order`` with ``full``).  Conversions: one orientation per shape and
    every wrap pattern; with ``full``, every orientation; ``workers > 1``
    proves the conversions in that many processes (same results, same
    order).  Allocator runs on ``run_machines``.
    """
    from .report import summarise

    rows = []
    groups = _orientation_groups(max_dims, max_order)
    for scheme in ("ep", "nep"):
        prop = (f"{scheme.upper()}: at every offset, pieces disjoint and cover S; from geometry: the allocated piece has 2^k nodes, "
                + ("1+log2(|S|/m) pieces" if scheme == "nep" else "|S|/m pieces of one shape") + ", wrap flags = spans a ring of S")
        res = []
        if not scheme_orientations:
            for base, _ in groups:
                res.append(prove_scheme_shape(scheme, Semitorus((0,) * len(base), tuple(1 << e for e in base), (True,) * len(base))))
            how = f"one orientation per shape: {len(groups):,} shapes, all by Z3 at a symbolic offset"
        else:
            tally: dict[str, int] = {}
            for base, orients in groups:
                r, t = prove_scheme_orientations(scheme, base, orients)
                res.extend(r)
                for key, v in t.items():
                    tally[key] = tally.get(key, 0) + v
            n = len(res)
            how = (f"every orientation: {n:,} shapes — {tally['z3_shapes']:,} by Z3 at a symbolic offset + {tally['image_shapes']:,} by exact permutation image; "
                   f"{tally['z3_direct_shapes']:,} by Z3 directly ({tally['z3_direct_cases']:,} cases)")
        rows.append(summarise(f"{prop} [{how}]", res))
    wo = (max_order if full else min(max_order, 8)) if wrap_order is None else wrap_order
    wgroups = [base for base, _ in _orientation_groups(max_dims, wo)]
    for scheme in ("ep", "nep"):
        rows.append(summarise(f"{scheme.upper()}: every piece's wrap flags follow geometry, every wrap pattern of S [{len(wgroups):,} shapes up to 2^{wo} nodes, one orientation]",
                              [prove_scheme_wraps(scheme, base) for base in wgroups]))
    machines = [tuple(d) for d in itertools.chain(
        ((a,) for a in range(1, 17)),
        itertools.product(range(1, 13), repeat=2),
        itertools.product(range(1, 9), repeat=3),
    )] + list(NAMED_MACHINES)
    rows.append(summarise("preprocessing partitions the torus (Z3, every point); segments' wrap flags are the machine's rings",
                          [prove_preprocessing(Torus(m)) for m in machines], largest=lambda r: len(r.size)))
    shapes = [o for base, orients in groups for o in (orients if full else [base])]
    conv = _prove_conversions(shapes, workers)
    for mode in ("collapse", "pair"):
        res = conv[mode]
        how = f"{'every orientation' if full else 'one orientation per shape'}: {len(shapes):,} shapes x every wrap pattern"
        rows.append(summarise(f"conversion ({mode}) is a dilation-1 embedding; every claimed ring has its wrap link [{how}]", res))
    run_machines = RUN_MACHINES if run_machines is None else run_machines
    run_seeds = RUN_SEEDS if run_seeds is None else run_seeds
    res = []
    for dims in run_machines:
        for scheme in ("ep", "nep"):
            for seed in range(run_seeds):
                res.append(prove_buddy_merge(Torus(dims), scheme, seed=seed, steps=run_steps, **_RUN_OPTIONS[seed % len(_RUN_OPTIONS)]))
    rows.append(summarise(f"allocator runs: every grant is its box, real rings, a dilation-1 job torus; held + free blocks partition the machine; "
                          f"release rebuilds the initial set [{len(run_machines)} machines x EP/NEP x {run_seeds} seeds (options varied) x {run_steps} steps]", res))
    return rows
