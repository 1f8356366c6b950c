"""Optimal one-dimensional processor orderings (Leung et al., seed 003 §2.2).

Problem
-------
Rank the ``n`` processors of a connected network ``0 .. n-1`` so as to
minimise

    cost(π) = Σ_{i<j} W(k(i, j), d(π_i, π_j))

where ``d`` is the hop distance in the network, ``k(i, j) = j - i`` (linear
rank distance) or ``min(j - i, n - (j - i))`` (ring rank distance, §2.3's
"minimum distance around the ring"), and ``W`` is one of the weight presets
(:func:`parse_weights`):

``window:K``
    W(k, d) = 2^(K-k)·d for k ≤ K, 0 beyond (``window:3`` is 4/2/1) — the
    "inverse exponential" w(k) of §2.2 truncated after K ranks;
``hamiltonian``
    W(1, d) = d, 0 beyond; the optimum is n-1 iff the network has a
    Hamiltonian path (§2.2's NP-completeness argument);
``linear-arrangement``
    W(k, d) = k if d == 1 else 0: Σ over links of the rank difference, the
    classic minimum linear arrangement (checked against the closed form for
    grids in the tests);
``custom:w1,w2,...``
    W(k, d) = w_k·d for k ≤ len, 0 beyond (non-negative integers).

Formulations
------------
``window`` (the default whenever the weights have a finite window K and, for a
ring, 2K < n): a *rank-free successor model*.  Booleans ``a[u, v]`` say that
``v`` directly follows ``u``; an ``AddCircuit`` over the nodes plus a dummy
(linear) or over the nodes alone (ring) makes them one Hamiltonian path/cycle.
For every k = 2..K booleans ``s_k[u, x]`` say that ``x`` is k ranks after
``u``; the clauses ``s_{k-1}[u, v] ∧ a[v, x] → s_k[u, x]`` (v a real node)
force every true k-step pair on, and the counting constraints ``Σ s_k = n - k``
(ring: n) with at most one k-successor and k-predecessor per node stop the
solver switching on spurious pairs.  The objective is
``Σ_k w_k Σ d(u, x) s_k[u, x]``.

``position``: integer ranks ``pos[v]`` with ``AllDifferent``; for every pair
the rank distance by ``AddAbsEquality`` (and ``min`` with ``n - Δ`` on a ring)
and its cost by ``AddElement`` into the pair's cost table.  Exact for every
weight preset, including linear arrangement; much weaker.

What made the difference (measured, 1 worker; see ``benchmarks/README.md``):
on the 3×3 mesh with window:3 the position model needs 23 s, the successor
model 1.3 s, and the successor model with symmetry breaking 0.15 s; the
Petersen graph is not proven in 120 s without symmetry breaking and is in
5–8 s with it.  The 16-node targets (4×4 mesh/torus, 4-cube) are not proven
in 10 minutes: the bound stalls near 101.  Symmetry breaking
(``symmetry=True``) is sound for any subgroup of the
automorphism group that the enumerated maps generate:

* linear: the first node is the smallest node of its orbit; the orbit index of
  the first node is at most that of the last (reversal); the second node is
  the smallest of its orbit under the stabiliser of the first;
* ring: the successor of node 0 is the smallest of its orbit under the
  stabiliser of node 0, and its orbit index is at most that of node 0's
  predecessor (reversal).  Rotations of a ring do not exist in the rank-free
  model.

A warm start (``AddHint``) is the cheapest of the reference orderings that
apply (the curve allocators' row-major, snake, Hilbert and Z-order on grids;
the Gray code on hypercubes; a greedy
nearest-neighbour walk on any graph), moved by an automorphism so that it
satisfies the symmetry-breaking constraints.

Every solution is checked by :func:`ordering_cost`, an independent plain
evaluation of the objective; a mismatch raises :class:`SolverError`.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from ortools.sat.python import cp_model

from topoalloc.errors import InternalError, InvalidArgument, SolverError
from topoalloc.registry import Registry

from ._solver import run_solver, check_solver_args
from .references import reference_orderings
from .graphs import MachineGraph, machine_graph

__all__ = [
    "Weights",
    "parse_weights",
    "ordering_cost",
    "brute_force_ordering",
    "OrderingResult",
    "optimal_ordering",
    "greedy_ordering",
    "save_ordering",
    "grid_linear_arrangement",
]


# --------------------------------------------------------------------- weights


@dataclass(frozen=True)
class Weights:
    """A weight preset: ``W(k, d)`` for rank distance ``k >= 1`` and hop distance ``d``.

    Parameters
    ----------
    spec : str
        The name it is known by (``"window:3"``, ``"custom:4,2,1"``, ...).
    window : tuple of int
        ``w(1), .., w(K)`` for the distance-weighted presets (W = w(k)·d).
    edges_rank : bool
        Linear arrangement: W(k, d) = k when d == 1, else 0.
    """

    spec: str
    window: tuple[int, ...] = ()
    edges_rank: bool = False

    def __post_init__(self) -> None:
        if self.edges_rank:
            if self.window:
                raise InvalidArgument("weights", self.spec, "linear arrangement takes no window")
            return
        if not self.window or any((not isinstance(w, int)) or isinstance(w, bool) or w < 0 for w in self.window):
            raise InvalidArgument("weights", self.spec, "one or more non-negative integer weights w(1), w(2), ...")
        if not any(self.window):
            raise InvalidArgument("weights", self.spec, "at least one positive weight")

    @property
    def K(self) -> int | None:
        """Largest rank distance with a positive weight (None: unbounded, linear arrangement)."""
        if self.edges_rank:
            return None
        return max(k for k, w in enumerate(self.window, 1) if w > 0)

    def w(self, k: int) -> int:
        return self.window[k - 1] if 1 <= k <= len(self.window) else 0

    def pair_cost(self, k: int, d: int) -> int:
        if self.edges_rank:
            return k if d == 1 else 0
        return self.w(k) * d

    @classmethod
    def custom(cls, weights: Sequence[int]) -> "Weights":
        ws = tuple(weights)
        return cls("custom:" + ",".join(map(str, ws)), ws)


#: Rank-distance weight presets, by spec name (the package's one spec grammar).
WEIGHTS: Registry[Weights] = Registry("weights")


@WEIGHTS.register("window")
def _window(K: int) -> Weights:
    """window:K — w(k) = 2^(K-k) for rank distances k <= K (the paper's window weights)."""
    if K < 1 or K > 30:
        raise InvalidArgument("K", K, "an integer in 1..30, e.g. window:3")
    return Weights(f"window:{K}", tuple(2 ** (K - k) for k in range(1, K + 1)))


@WEIGHTS.register("hamiltonian")
def _hamiltonian() -> Weights:
    """hamiltonian — only consecutive ranks count (a Hamiltonian path of least length)."""
    return Weights("hamiltonian", (1,))


@WEIGHTS.register("linear-arrangement")
def _linear_arrangement() -> Weights:
    """linear-arrangement — sum over the machine's links of the rank distance."""
    return Weights("linear-arrangement", (), edges_rank=True)


@WEIGHTS.register("custom")
def _custom(*w: int) -> Weights:
    """custom:w1,w2,... — the weight of rank distance k is w_k (non-negative integers)."""
    if not w:
        raise InvalidArgument("w", w, "at least one weight, e.g. custom:4,2,1")
    return Weights(f"custom:{','.join(map(str, w))}", tuple(w))


def parse_weights(spec: "str | Weights | Sequence[int]") -> Weights:
    """``"window:3"``, ``"hamiltonian"``, ``"linear-arrangement"``, ``"custom:4,2,1"`` or a sequence.

    >>> parse_weights("window:3").window
    (4, 2, 1)
    >>> parse_weights("hamiltonian").window
    (1,)
    >>> parse_weights([3, 1]).spec
    'custom:3,1'
    """
    if isinstance(spec, Weights):
        return spec
    if not isinstance(spec, str):
        try:
            ws = tuple(int(w) if float(w) == int(w) else w for w in spec)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise InvalidArgument("weights", spec, "a preset name or a sequence of non-negative integers") from None
        return Weights.custom(ws)
    return WEIGHTS.create(spec, argument="weights")


# ------------------------------------------------------------------ evaluation


def _check_order(order: Sequence[int], n: int, argument: str = "order") -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in order)
    except (TypeError, ValueError):
        raise InvalidArgument(argument, order, f"a sequence of node ids 0..{n - 1}") from None
    if len(out) != n or sorted(out) != list(range(n)):
        raise InvalidArgument(argument, order, f"a permutation of 0..{n - 1} (each node exactly once)")
    return out


def ordering_cost(machine: object, order: Sequence[int], weights: "str | Weights" = "window:3", *, ring: bool = False) -> int:
    """The objective of ``order`` (node ids in rank order), evaluated pair by pair.

    Deliberately the plainest possible loop over all pairs of ranks, sharing
    nothing with the models, so that it can validate them.

    >>> ordering_cost("mesh:3x1", [0, 1, 2], "window:2")  # 2·1 + 2·1 + 1·2
    6
    """
    mg = machine_graph(machine)
    ws = parse_weights(weights)
    n = mg.n
    order = _check_order(order, n)
    dist = mg.dist
    total = 0
    for i in range(n):
        for j in range(i + 1, n):
            k = j - i
            if ring:
                k = min(k, n - k)
            total += ws.pair_cost(k, int(dist[order[i], order[j]]))
    return total


def brute_force_ordering(machine: object, weights: "str | Weights" = "window:3", *, ring: bool = False) -> tuple[int, tuple[int, ...]]:
    """Exhaustive optimum (cost, first optimal order in lexicographic order) for ``n <= 10``.

    Only orders whose first node is smaller than their last are scanned
    (reversal preserves the cost), and on a ring only those starting at node 0
    (rotation does too).  Vectorised with numpy over all permutations.
    """
    mg = machine_graph(machine)
    ws = parse_weights(weights)
    n = mg.n
    if n > 10:
        raise InvalidArgument("machine", mg.name, "at most 10 nodes for brute force")
    if n == 1:
        return 0, (0,)
    perms = _permutations(n, ring)
    dist = mg.dist
    cost = np.zeros(len(perms), dtype=np.int64)
    for i in range(n):
        for j in range(i + 1, n):
            k = j - i
            if ring:
                k = min(k, n - k)
            if ws.edges_rank:
                cost += k * (dist[perms[:, i], perms[:, j]] == 1)
            else:
                wk = ws.w(k)
                if wk:
                    cost += wk * dist[perms[:, i], perms[:, j]]
    best = int(cost.min())
    first = perms[np.flatnonzero(cost == best)[0]]
    return best, tuple(int(v) for v in first)


@functools.lru_cache(maxsize=4)
def _permutations(n: int, ring: bool) -> np.ndarray:
    if ring:
        rest = np.array(list(itertools.permutations(range(1, n))), dtype=np.int8).reshape(-1, n - 1)
        perms = np.concatenate([np.zeros((len(rest), 1), dtype=np.int8), rest], axis=1)
    else:
        perms = np.array(list(itertools.permutations(range(n))), dtype=np.int8)
    perms = perms[perms[:, 0] < perms[:, -1]].astype(np.intp)
    perms.flags.writeable = False
    return perms


def greedy_ordering(machine: object, start: int = 0) -> tuple[int, ...]:
    """Nearest-neighbour walk: from ``start`` go to the closest unvisited node (ties: smallest id)."""
    mg = machine_graph(machine)
    dist = mg.dist
    order = [start]
    left = set(range(mg.n)) - {start}
    while left:
        cur = order[-1]
        nxt = min(left, key=lambda v: (dist[cur, v], v))
        order.append(nxt)
        left.remove(nxt)
    return tuple(order)


def grid_linear_arrangement(m: int, n: int) -> int:
    """Minimum linear arrangement of the m×n grid graph (closed form).

    Muradyan & Piliposyan (1980), re-derived by Fishburn, Tetali & Winkler,
    "Optimal linear arrangement of a rectangular grid", Discrete Math. 213
    (2000) 123–139: for m ≥ n ≥ 2,

        min L = m(n² + n − 1) − n − t(2t² − 6nt + 3n² + 3n − 2)/3

    with t ∈ {1, .., ⌊n/2⌋} maximising 2t³ − 6nt² + (3n² + 3n − 2)t.  A path
    (n = 1) has m − 1.

    >>> [grid_linear_arrangement(k, k) for k in (2, 3, 4, 5)]
    [6, 24, 60, 116]
    """
    if m < n:
        m, n = n, m
    if n < 1:
        raise InvalidArgument("n", n, "positive grid sides")
    if n == 1:
        return m - 1
    t = max(range(1, n // 2 + 1), key=lambda t: 2 * t**3 - 6 * n * t**2 + (3 * n**2 + 3 * n - 2) * t)
    num = t * (2 * t**2 - 6 * n * t + 3 * n**2 + 3 * n - 2)
    if num % 3:
        raise InternalError(f"closed-form bound for a {m}x{n} grid is not an integer ({num}/3)")
    return m * (n**2 + n - 1) - n - num // 3


# ------------------------------------------------------------------- results


@dataclass(frozen=True)
class OrderingResult:
    """Outcome of :func:`optimal_ordering`.

    ``order`` lists node ids in rank order (None when ``status`` is
    ``unknown``: no solution within the time limit); ``objective`` is its cost
    by the independent evaluator; ``bound`` the best proven lower bound (equal
    to ``objective`` when ``status == "optimal"``).
    """

    machine: str
    n: int
    weights: str
    ring: bool
    status: str
    order: tuple[int, ...] | None
    objective: int | None
    bound: int
    seconds: float
    formulation: str
    symmetry: bool
    workers: int
    seed: int
    warm_start: str | None = None
    warm_start_cost: int | None = None
    #: the user stopped the search (Ctrl-C): the result is the best found by then, not a time-out
    interrupted: bool = False
    #: the order is the warm start itself: the search found nothing better in time
    from_warm_start: bool = False

    @property
    def gap(self) -> float | None:
        if self.objective is None:
            return None
        return 0.0 if self.objective == 0 else (self.objective - self.bound) / self.objective

    def as_dict(self) -> dict:
        d = asdict(self)
        d["order"] = list(self.order) if self.order is not None else None
        d["gap"] = self.gap
        return d


# -------------------------------------------------------------------- models


class _Model:
    """One CP-SAT model of the ordering problem, with how to read an order back."""

    def __init__(self, mg: MachineGraph, ws: Weights, ring: bool, formulation: str, symmetry: bool, flow: bool = False):
        self.mg, self.ws, self.ring, self.symmetry, self.flow = mg, ws, ring, symmetry, flow
        self.m = cp_model.CpModel()
        self.formulation = formulation
        if formulation == "window":
            self._build_window()
        else:
            self._build_position()

    # ---- window (successor) model
    def _build_window(self) -> None:
        mg, ws, ring, m = self.mg, self.ws, self.ring, self.m
        n = mg.n
        D = mg.dist
        K = ws.K
        if K is None:
            raise InternalError("the window formulation needs window weights")
        ext = range(n) if ring else range(n + 1)
        a = {(u, v): m.new_bool_var(f"a{u}_{v}") for u in ext for v in ext if u != v}
        m.add_circuit([(u, v, lit) for (u, v), lit in a.items()])
        self.a = a
        obj = [ws.w(1) * int(D[u, v]) * a[u, v] for u in range(n) for v in range(n) if u != v and ws.w(1)]
        prev = {(u, v): a[u, v] for u in range(n) for v in range(n) if u != v}
        self.s = {1: prev}
        for k in range(2, K + 1):
            if not ring and k > n - 1:
                break
            s = {(u, x): m.new_bool_var(f"s{k}_{u}_{x}") for u in range(n) for x in range(n) if u != x}
            for (u, v), lit in prev.items():
                for x in range(n):
                    if x != u and x != v:
                        m.add_bool_or([lit.negated(), a[v, x].negated(), s[u, x]])
            m.add(sum(s.values()) == (n if ring else n - k))
            for u in range(n):
                out = [s[u, x] for x in range(n) if x != u]
                inn = [s[x, u] for x in range(n) if x != u]
                if ring:
                    m.add_exactly_one(out)
                    m.add_exactly_one(inn)
                else:
                    m.add_at_most_one(out)
                    m.add_at_most_one(inn)
            if ws.w(k):
                obj.extend(ws.w(k) * int(D[u, x]) * lit for (u, x), lit in s.items())
            if k == 2 and self.flow:
                self._add_flow(ext, a, s)
            self.s[k] = s
            prev = s
        m.minimize(sum(obj))
        if self.symmetry and n > 2:
            self._break_window_symmetry()

    def _add_flow(self, ext, a, s2) -> None:
        """Path-flow linking: y[u, v, x] = a[u, v] ∧ a[v, x] as a flow, and s2[u, x] = Σ_v y[u, v, x].

        Every arc has exactly one successor arc and one predecessor arc on the
        circuit, so ``Σ_x y[u, v, x] = a[u, v]`` and ``Σ_u y[u, v, x] = a[v, x]``;
        the 2-step pairs are then sums of path variables, which tightens the
        linear relaxation (the proven bound of the 4×4 mesh rises to the
        parity level within a minute) at the price of (n+1)³ booleans.
        """
        m, n = self.m, self.mg.n
        y = {}
        for u in ext:
            for v in ext:
                if v == u:
                    continue
                for x in ext:
                    if x != u and x != v:
                        y[u, v, x] = m.new_bool_var(f"y{u}_{v}_{x}")
        for u in ext:
            for v in ext:
                if u == v:
                    continue
                m.add(sum(y[u, v, x] for x in ext if x != u and x != v) == a[u, v])
                m.add(sum(y[x, u, v] for x in ext if x != u and x != v) == a[u, v])
        for (u, x), lit in s2.items():
            m.add(lit == sum(y[u, v, x] for v in range(n) if v != u and v != x))

    def _break_window_symmetry(self) -> None:
        mg, m, a, n = self.mg, self.m, self.a, self.mg.n
        if not self.ring:
            N = n
            orb = mg.orbit_reps()
            reps = sorted(set(orb.values()))
            for v in range(n):
                if orb[v] != v:
                    m.add(a[N, v] == 0)
            first = m.new_int_var(0, n - 1, "first_orbit")
            last = m.new_int_var(0, n - 1, "last_orbit")
            m.add(first == sum(orb[v] * a[N, v] for v in range(n)))
            m.add(last == sum(orb[v] * a[v, N] for v in range(n)))
            m.add(first <= last)
            for r in reps:
                orb2 = mg.orbit_reps((r,))
                for v in range(n):
                    if v != r and orb2[v] != v:
                        m.add_implication(a[N, r], a[r, v].negated())
        else:
            orb2 = mg.orbit_reps((0,))
            for v in range(1, n):
                if orb2[v] != v:
                    m.add(a[0, v] == 0)
            succ = m.new_int_var(0, n - 1, "succ0_orbit")
            pred = m.new_int_var(0, n - 1, "pred0_orbit")
            m.add(succ == sum(orb2[v] * a[0, v] for v in range(1, n)))
            m.add(pred == sum(orb2[v] * a[v, 0] for v in range(1, n)))
            m.add(succ <= pred)

    def canonical(self, order: tuple[int, ...]) -> tuple[int, ...] | None:
        """Move an order by reversal / automorphisms so it meets the symmetry breaking (None if not found)."""
        mg, n = self.mg, self.mg.n
        if not self.symmetry or n <= 2:
            return order
        auts = mg.automorphisms
        if self.formulation == "position":
            if self.ring:
                i = order.index(0)
                return order[i:] + order[:i]
            orb = mg.orbit_reps()
            for g in auts:
                if g[order[0]] == orb[order[0]]:
                    return tuple(g[v] for v in order)
            return None
        if not self.ring:
            orb = mg.orbit_reps()
            if orb[order[0]] > orb[order[-1]]:
                order = order[::-1]
            for g in auts:
                if g[order[0]] == orb[order[0]]:
                    o1 = tuple(g[v] for v in order)
                    r = o1[0]
                    orb2 = mg.orbit_reps((r,))
                    for h in auts:
                        if h[r] == r and h[o1[1]] == orb2[o1[1]]:
                            return tuple(h[v] for v in o1)
                    return None
            return None
        i = order.index(0)
        order = order[i:] + order[:i]
        orb2 = mg.orbit_reps((0,))
        if orb2[order[1]] > orb2[order[-1]]:
            order = (order[0],) + order[1:][::-1]
        for h in auts:
            if h[0] == 0 and h[order[1]] == orb2[order[1]]:
                return tuple(h[v] for v in order)
        return None

    def hint(self, order: tuple[int, ...]) -> None:
        n = self.mg.n
        if self.formulation == "position":
            for r, v in enumerate(order):
                self.m.add_hint(self.pos[v], r)
            return
        succ_pairs = {}
        for k, s in self.s.items():
            on = set()
            for i in range(n if self.ring else n - k):
                on.add((order[i], order[(i + k) % n]))
            for key, lit in s.items():
                if k == 1:
                    continue
                self.m.add_hint(lit, key in on)
            succ_pairs[k] = on
        chain = list(order) if self.ring else [n, *order, n]
        arcs = {(chain[i], chain[i + 1]) for i in range(len(chain) - 1)}
        if self.ring:
            arcs.add((order[-1], order[0]))
        for key, lit in self.a.items():
            self.m.add_hint(lit, key in arcs)

    # ---- position model
    def _build_position(self) -> None:
        mg, ws, ring, m = self.mg, self.ws, self.ring, self.m
        n = mg.n
        D = mg.dist
        pos = [m.new_int_var(0, n - 1, f"pos{v}") for v in range(n)]
        self.pos = pos
        m.add_all_different(pos)
        obj = []
        range(n)
        for u in range(n):
            for v in range(u + 1, n):
                d = int(D[u, v])
                table = [0] + [ws.pair_cost(min(k, n - k) if ring else k, d) for k in range(1, n)]
                if not any(table):
                    continue
                delta = m.new_int_var(1, n - 1, f"delta{u}_{v}")
                m.add_abs_equality(delta, pos[u] - pos[v])
                c = m.new_int_var(min(table[1:]), max(table), f"c{u}_{v}")
                m.add_element(delta, table, c)
                obj.append(c)
        m.minimize(sum(obj))
        if self.symmetry and n > 2:
            if ring:
                m.add(pos[0] == 0)
            else:
                orb = mg.orbit_reps()
                for v in range(n):
                    if orb[v] != v:
                        m.add(pos[v] != 0)

    def read(self, solver: cp_model.CpSolver) -> tuple[int, ...]:
        n = self.mg.n
        if self.formulation == "position":
            ranks = [solver.value(p) for p in self.pos]
            order = [0] * n
            for v, r in enumerate(ranks):
                order[r] = v
            return tuple(order)
        succ = {u: v for (u, v), lit in self.a.items() if solver.boolean_value(lit)}
        cur = 0 if self.ring else succ[n]
        out = []
        for _ in range(n):
            out.append(cur)
            cur = succ[cur]
        return tuple(out)


def _pick_formulation(formulation: str, ws: Weights, ring: bool, n: int) -> str:
    if formulation not in ("auto", "window", "position"):
        raise InvalidArgument("formulation", formulation, "'auto', 'window' or 'position'")
    K = ws.K
    window_ok = K is not None and n >= 3 and (not ring or 2 * K < n)
    if formulation == "window" and not window_ok:
        raise InvalidArgument("formulation", formulation, "weights with a finite window K, n >= 3 and, on a ring, 2K < n; use 'position'")
    if formulation == "auto":
        return "window" if window_ok else "position"
    return formulation


def optimal_ordering(
    machine: object,
    weights: "str | Weights | Sequence[int]" = "window:3",
    *,
    ring: bool = False,
    time_limit: float | None = 60.0,
    workers: int = 1,
    seed: int = 0,
    formulation: str = "auto",
    symmetry: bool = True,
    warm_start: "str | Sequence[int] | None" = "auto",
    flow: bool = False,
    progress: "Callable[[float, float | None, float], None] | None" = None,
) -> OrderingResult:
    """Solve the ordering problem of §2.2 with CP-SAT; see the module docstring.

    Parameters
    ----------
    machine : Topology, spec string, networkx Graph or edge list
        See :func:`~topoalloc.ilp.graphs.machine_graph` (``"hypercube:N"``
        and ``"petersen"`` are understood too).
    weights : str, Weights or sequence of int
        ``window:K``, ``hamiltonian``, ``linear-arrangement``, ``custom:...``.
    ring : bool
        Ring rank distance ``min(k, n - k)`` instead of linear ``k``.
    time_limit : float or None
        Seconds; None for no limit.
    workers : int
        CP-SAT workers (default 1: on the small instances measured one
        worker proves fastest, 0.3 s for the 3×3 mesh against 0.6 s with 2
        and 2.3 s with 8 on a loaded 2-core machine).  ``workers=1`` with a run that ends before the limit
        is reproducible to the byte; with more, only a proven optimal
        objective is (the order may be another optimum).
    seed : int
        CP-SAT ``random_seed``.
    formulation : {"auto", "window", "position"}
    symmetry : bool
        Add the automorphism symmetry breaking.
    warm_start : "auto", None or an order
        ``"auto"``: the cheapest reference ordering (curves, Gray code, greedy).
    flow : bool
        Add the path-flow linking of the 2-step pairs to the window model
        (stronger bound, slower on small instances; at most 40 nodes).

    Returns
    -------
    OrderingResult
        ``status`` is ``optimal``, ``feasible`` (with its gap) or ``unknown``
        (no solution in time and no warm start; ``order`` None).  When the
        search ends (time limit or Ctrl-C: ``interrupted``) with nothing better
        than the warm start, the warm start is returned as ``feasible``.

    Raises
    ------
    SolverError
        CP-SAT reports the model invalid or infeasible (every permutation is a
        solution, so that would be a bug), or a solution fails validation.
    """
    mg = machine_graph(machine)
    ws = parse_weights(weights)
    check_solver_args(time_limit, workers, seed)
    n = mg.n
    if not isinstance(ring, bool):
        raise InvalidArgument("ring", ring, "True or False")
    form = _pick_formulation(formulation, ws, ring, n)
    common = dict(machine=mg.name, n=n, weights=ws.spec, ring=ring, formulation=form, symmetry=symmetry, workers=workers, seed=seed)
    if n <= 2:
        order = tuple(range(n))
        cost = ordering_cost(mg, order, ws, ring=ring)
        return OrderingResult(status="optimal", order=order, objective=cost, bound=cost, seconds=0.0, **common)
    if flow and (form != "window" or n > 40):
        raise InvalidArgument("flow", flow, "the window formulation on at most 40 nodes")
    model = _Model(mg, ws, ring, form, symmetry, flow)
    ws_name: str | None = None
    ws_cost: int | None = None
    ws_order: tuple[int, ...] | None = None
    if warm_start is not None:
        if isinstance(warm_start, str):
            if warm_start != "auto":
                raise InvalidArgument("warm_start", warm_start, "'auto', None or an order (sequence of node ids)")
            cands = dict(reference_orderings(mg))
            cands["greedy"] = greedy_ordering(mg)
        else:
            cands = {"given": _check_order(warm_start, n, "warm_start")}
        scored = sorted((ordering_cost(mg, o, ws, ring=ring), name, o) for name, o in cands.items())
        ws_cost, ws_name, best = scored[0]
        ws_order = tuple(int(v) for v in best)
        canon = model.canonical(best)
        if canon is not None:
            model.hint(canon)
        else:
            ws_name = f"{ws_name} (not usable: no automorphism found to canonicalise it)"
    out = run_solver(model.m, time_limit=time_limit, workers=workers, seed=seed, what=f"ordering of {mg.name}", progress=progress)
    solver = out.solver
    if out.status == "infeasible":
        raise SolverError(f"ordering of {mg.name}", "infeasible", "every permutation is a solution; the model or its symmetry breaking is wrong")
    bound = int(math.ceil(solver.best_objective_bound - 1e-6))
    extra = dict(seconds=out.seconds, warm_start=ws_name, warm_start_cost=ws_cost, interrupted=out.interrupted, **common)
    if not out.has_solution:
        if ws_order is None or ws_cost is None:
            return OrderingResult(status=out.status, order=None, objective=None, bound=bound, **extra)
        # the search found nothing in time, but the warm start is an ordering in hand
        return OrderingResult(status="feasible", order=ws_order, objective=ws_cost, bound=min(bound, ws_cost), from_warm_start=True, **extra)
    order = model.read(solver)
    order = _check_order(order, n)
    cost = ordering_cost(mg, order, ws, ring=ring)
    if cost != round(solver.objective_value):
        raise SolverError(f"ordering of {mg.name}", out.status, f"independent evaluation gives {cost}, the model {solver.objective_value}")
    if out.status == "optimal":
        bound = cost
    elif ws_order is not None and ws_cost is not None and ws_cost < cost:
        return OrderingResult(status="feasible", order=ws_order, objective=ws_cost, bound=min(bound, ws_cost), from_warm_start=True, **extra)
    return OrderingResult(status=out.status, order=order, objective=cost, bound=min(bound, cost), **extra)


# ---------------------------------------------------------------------- files


def save_ordering(result: OrderingResult, path: "str | os.PathLike") -> None:
    """Write a solved ordering as a ``node rank`` file that the curve allocators read (``curve=PATH``).

    The header comment records the machine, weights, status, objective and bound.
    """
    from topoalloc.curves import Ordering, write_ordering

    if result.order is None:
        raise InvalidArgument("result", result.status, "a result with an ordering (status optimal or feasible)")
    note = (
        f"optimal ordering of {result.machine}: weights {result.weights}, {'ring' if result.ring else 'linear'} rank distance\n"
        f"status {result.status}, objective {result.objective}, bound {result.bound}, formulation {result.formulation}"
    )
    write_ordering(Ordering(result.order, f"cpsat-{result.weights}"), path, note)
