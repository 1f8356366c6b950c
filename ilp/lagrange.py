"""Proven lower bounds for window orderings: a Lagrangian relaxation over locally distinct walks.

The problem is the one of :mod:`~topoalloc.ilp.ordering` with a window of at
most three ranks and linear rank distance:

    cost(π) = Σ_i  w1·d(π_i, π_{i+1}) + w2·d(π_i, π_{i+2}) + w3·d(π_i, π_{i+3})

CP-SAT stalls near a bound of 101–129 on the 16-node machines and the exact
DP (:mod:`~topoalloc.ilp.dp`) stops at 16 nodes (2^n · n^3 table).  This
module bounds larger machines (25–64 nodes) and certifies the bound.

Relaxation
----------
Drop "every node exactly once" and keep only *local distinctness*: a walk
``s_1 .. s_n`` of ``n`` nodes in which every five consecutive entries are
distinct.  Every ordering is such a walk with the same cost (the cost of
appending ``s_i`` depends on ``s_{i-3..i-1}`` only), so the least walk cost
is a lower bound.  Five, not four: with four, the walk may go round one
4-cycle for ever at the least possible price per step.  With five it cannot
come back to the node it left four steps before, and on meshes, tori and
hypercubes, where two nodes at distance 2 share at most two neighbours, no
two consecutive windows can both be 4-cycles — the counting argument behind
the 4×4 optima (141 on the mesh, 138 on the torus and the 4-cube).

The global constraint comes back as a Lagrangian penalty.  For integers
``λ_v`` and a scale ``S`` ≥ 1, let

    L(λ) = min over locally distinct walks s of  S·cost(s) + Σ_i λ_{s_i}.

An ordering π visits every node once, so ``S·cost(π) + Σ_v λ_v ≥ L(λ)`` and

    cost(π) ≥ ⌈(L(λ) − Σ_v λ_v) / S⌉       for every ordering π.       (★)

``L(λ)`` is a shortest path over states (the last four nodes), computed
exactly in int64 by :func:`walk_relaxation`: n − 4 layers of n^4 states, each
the minimum over the dropped node with the appended node excluded (kept as
the least and second-least predecessor).  Any integer ``λ`` gives a valid
bound, so ``λ`` is a *certificate*: :func:`certify_bound` re-derives the bound
from it in one pass, and the committed table of proven orderings
(:data:`~topoalloc.ilp.frontier.FRONTIER_FILE`) stores ``λ`` beside every bound.

``λ`` is searched by subgradient ascent (Polyak steps towards the best known
ordering's cost; the subgradient is each node's visit count minus one).  When
the best walk visits every node once it is an ordering whose cost equals the
bound: it is then optimal, and :func:`lagrangian_bound` returns it.

Upper bounds come from :func:`local_search_ordering`: simulated annealing over
segment reversals and segment moves from the cheapest reference curve, with a
seeded generator (deterministic).

Assumed: the weights are non-negative and the distance is the graph's hop
distance (:mod:`~topoalloc.ilp.graphs`).  Derived: (★), by the argument above;
the tests check it against brute force on every small graph they try and
against the DP's proven optima at 16 nodes, and check the DP pass against an
enumeration of every locally distinct walk on tiny graphs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from topoalloc.errors import InternalError, InvalidArgument

from .graphs import MachineGraph, machine_graph
from .ordering import OrderingResult, Weights, brute_force_ordering, ordering_cost, parse_weights

__all__ = [
    "WalkBound",
    "walk_relaxation",
    "certify_bound",
    "lagrangian_bound",
    "local_search_ordering",
    "lagrange_ordering",
    "LAGRANGE_MAX_NODES",
]

#: Largest machine bounded (n^4 int64 states per layer: 134 MB at 64 nodes, about 0.6 GB in all).
LAGRANGE_MAX_NODES = 64
#: Walk entries that must be distinct: every run of this many consecutive nodes.
DISTINCT = 5

_INF = np.int64(1) << np.int64(50)


@dataclass(frozen=True)
class WalkBound:
    """A proven lower bound with its certificate.

    ``bound`` holds for every linear ordering of ``machine`` under ``weights``
    by (★) with the integer ``multipliers`` and ``scale``; ``walk`` is the
    relaxation's least walk at those multipliers, and ``order`` that walk when
    it visits every node once (then an optimal ordering, cost = ``bound``).
    """

    machine: str
    n: int
    weights: str
    bound: int
    multipliers: tuple[int, ...]
    scale: int
    memory: int
    walk: tuple[int, ...]
    order: tuple[int, ...] | None
    iterations: int
    seconds: float

    def as_dict(self) -> dict:
        d = asdict(self)
        for key in ("multipliers", "walk"):
            d[key] = list(d[key])
        d["order"] = list(self.order) if self.order is not None else None
        return d


def _window3(ws: Weights, argument: str = "weights", mg: MachineGraph | None = None) -> tuple[int, int, int]:
    """w1, w2, w3 — refused unless a window of at most three ranks whose step costs (on ``mg``) fit int32."""
    if ws.edges_rank or ws.K is None or ws.K > 3:
        raise InvalidArgument(argument, ws.spec, "a window of at most 3 ranks (window:1..3, hamiltonian, custom:w1,w2,w3) with linear rank distance")
    w = ws.w(1), ws.w(2), ws.w(3)
    if mg is not None and sum(w) * int(np.max(mg.dist, initial=0)) >= 1 << 31:
        raise InvalidArgument(argument, ws.spec, "w1 + w2 + w3 times the diameter below 2^31 (the step costs are int32)")
    return w


def _graph(machine: object, argument: str = "machine") -> MachineGraph:
    mg = machine if isinstance(machine, MachineGraph) else machine_graph(machine, argument=argument)
    if mg.n > LAGRANGE_MAX_NODES:
        raise InvalidArgument(argument, mg.name, f"at most {LAGRANGE_MAX_NODES} nodes for the Lagrangian bound (n^4 states per layer); it has {mg.n}")
    return mg


class _Relaxation:
    """The layered shortest path of the module docstring, for one machine and weights.

    A state is the walk's last ``memory`` nodes, pairwise distinct; appending a
    node drops the oldest and must differ from it, so every ``memory + 1``
    consecutive entries are distinct (``memory=4``: the module's five).
    """

    def __init__(self, D: np.ndarray, w: tuple[int, int, int], memory: int = DISTINCT - 1):
        n = self.n = D.shape[0]
        m = self.m = memory
        self.w = w1, w2, w3 = tuple(np.int64(x) for x in w)
        D = self.D = np.asarray(D, dtype=np.int64)
        self.step_max = int(sum(w)) * int(D.max(initial=0))  # the most one appended node can cost
        if self.step_max >= 1 << 31:  # pragma: no cover - callers check it first, naming their argument
            raise InternalError("step costs beyond int32")
        ax = [np.arange(n).reshape((1,) * k + (n,) + (1,) * (m - 1 - k)) for k in range(m)]
        bad = np.zeros((n,) * m, dtype=bool)
        for i in range(m):
            for j in range(i + 1, m):
                bad |= ax[i] == ax[j]
        self.bad = bad
        # appending e after (b, c, d): w1·d(d, e) + w2·d(c, e) + w3·d(b, e), over the new state's last four places
        C = w3 * D[:, None, None, :] + w2 * D[None, :, None, :] + w1 * D[None, None, :, :]
        self.C = C.astype(np.int32).reshape((1,) * (m - 4) + (n,) * 4)
        # the first m nodes: every pair at most three ranks apart
        C0 = np.zeros((n,) * m, dtype=np.int64)
        for i in range(m):
            for k, wk in ((1, w1), (2, w2), (3, w3)):
                if i + k < m and wk:
                    C0 += wk * D[ax[i], ax[i + k]]
        self.C0 = C0
        self.ax = ax
        self.rest = np.indices((n,) * (m - 1), sparse=True)

    def solve(self, lam: np.ndarray, scale: int) -> tuple[int, tuple[int, ...]]:
        """``L(λ)`` and a least walk (ties: lowest indices, deterministic)."""
        n, m = self.n, self.m
        lam = np.asarray(lam, dtype=np.int64)
        # every finite value stays far below INF, so an unreachable state never wins a minimum
        if scale * n * self.step_max + n * int(np.abs(lam).max(initial=0)) >= 1 << 47:
            raise InvalidArgument("scale", scale, "scale * n * (w1 + w2 + w3) * diameter + n * max|multiplier| below 2^47 (exact int64 with room below the 2^50 sentinel)")
        S = np.int64(scale)
        T = S * self.C0
        for a in self.ax:
            T += lam[a]
        T[self.bad] = _INF
        step = S * self.C.astype(np.int64) + lam[self.ax[-1]]
        step = np.broadcast_to(step, T.shape).copy()
        step[self.bad] = _INF
        back = []
        for _ in range(m, n):
            arg1 = T.argmin(axis=0)
            m1 = np.take_along_axis(T, arg1[None], 0)[0]
            np.put_along_axis(T, arg1[None], _INF, axis=0)  # T is replaced below
            arg2 = T.argmin(axis=0)
            m2 = np.take_along_axis(T, arg2[None], 0)[0]
            new = m1[..., None] + step
            # the appended node may not be the dropped one: where it is the least, take the second
            at = (*self.rest, arg1)
            new[at] = m2 + step[at]
            np.minimum(new, _INF, out=new)
            T = new
            back.append((arg1.astype(np.int16), arg2.astype(np.int16)))
        flat = int(T.argmin())
        value = int(T.flat[flat])
        if value >= _INF:  # pragma: no cover - n > memory nodes always admit a distinct walk
            raise InternalError("no locally distinct walk")
        state = [int(x) for x in np.unravel_index(flat, T.shape)]
        walk = list(reversed(state))
        for arg1, arg2 in reversed(back):
            x = int(arg1[tuple(state[:-1])])
            if x == state[-1]:
                x = int(arg2[tuple(state[:-1])])
            state = [x] + state[:-1]
            walk.append(x)
        return value, tuple(reversed(walk))


def walk_relaxation(machine: object, weights: "str | Weights", multipliers: Sequence[int], scale: int = 1, *, memory: int = DISTINCT - 1) -> tuple[int, tuple[int, ...]]:
    """``L(λ)`` of the module docstring and a least locally distinct walk.

    ``multipliers`` are integers, one per node; the walk has ``n`` entries,
    every ``memory + 1`` consecutive ones distinct (default five).  Needs
    ``n > memory``.  ``memory=5`` gives a stronger bound at n times the work
    and memory.
    """
    mg = _graph(machine)
    w = _window3(parse_weights(weights), mg=mg)
    lam = _multipliers(multipliers, mg.n)
    _scale(scale)
    _memory(memory, mg)
    return _Relaxation(mg.dist, w, memory).solve(lam, scale)


def _memory(memory: int, mg: MachineGraph) -> None:
    if isinstance(memory, bool) or memory not in (4, 5):
        raise InvalidArgument("memory", memory, "4 or 5 (the walk's distinct window is memory + 1)")
    if mg.n <= memory:
        raise InvalidArgument("machine", mg.name, f"more than {memory} nodes for the walk relaxation with memory {memory} (use brute force below)")
    need = 6 * 8 * mg.n**memory
    if need > 4 << 30:
        raise InvalidArgument("memory", memory, f"at most 4 GiB of states; {mg.name} with memory {memory} needs about {need / 2**30:.1f} GiB")


def _multipliers(multipliers: Sequence[int], n: int) -> np.ndarray:
    lam = list(multipliers)
    if len(lam) != n or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in lam):
        raise InvalidArgument("multipliers", multipliers, f"{n} integers, one per node")
    if any(abs(int(x)) >= 1 << 40 for x in lam):
        raise InvalidArgument("multipliers", multipliers, "integers of magnitude below 2^40")
    return np.array([int(x) for x in lam], dtype=np.int64)


def _scale(scale: int) -> None:
    if isinstance(scale, bool) or not isinstance(scale, int) or not 1 <= scale <= 1 << 20:
        raise InvalidArgument("scale", scale, "an integer in 1..2^20")


def _bound_of(value: int, lam: np.ndarray, scale: int) -> int:
    return -((int(lam.sum()) - value) // scale)  # ⌈(value − Σλ) / scale⌉ in exact integers


def certify_bound(machine: object, weights: "str | Weights", multipliers: Sequence[int], scale: int, *, memory: int = DISTINCT - 1) -> int:
    """The lower bound (★) that ``multipliers``, ``scale`` and ``memory`` certify, re-derived in one pass."""
    mg = _graph(machine)
    lam = _multipliers(multipliers, mg.n)
    value, _ = walk_relaxation(mg, weights, lam.tolist(), scale, memory=memory)
    return _bound_of(value, lam, scale)


def lagrangian_bound(
    machine: object,
    weights: "str | Weights" = "window:3",
    *,
    iterations: int = 300,
    upper: int | None = None,
    scale: int = 1000,
    start: Sequence[float] | None = None,
    memory: int = DISTINCT - 1,
    progress: "Callable[[float, float | None, float], None] | None" = None,
) -> WalkBound:
    """Search multipliers by subgradient ascent; return the best bound found and its certificate.

    Parameters
    ----------
    machine, weights
        As for :func:`~topoalloc.ilp.ordering.optimal_ordering`; a window of at
        most three ranks, linear rank distance, at most
        :data:`LAGRANGE_MAX_NODES` nodes.
    iterations : int
        Subgradient steps (each one pass of :func:`walk_relaxation`).
    upper : int, optional
        The cost of a known ordering: Polyak's step aims at it, and the search
        stops once the bound reaches it.  Without it, a local search's cost.
    scale : int
        ``S`` of (★): multipliers are rounded to multiples of 1/S.
    start : sequence of float, optional
        Multipliers (in cost units) to start from, e.g. a previous run's.
    memory : int
        4 (default: every five consecutive walk entries distinct) or 5 (six;
        n times the work and memory, a stronger bound).
    progress : callable, optional
        Called after every step with (seconds, ``upper``, best bound so far).

    The search is deterministic: same arguments, same result.
    """
    t0 = time.perf_counter()
    mg = _graph(machine)
    ws = parse_weights(weights)
    w = _window3(ws, mg=mg)
    _scale(scale)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise InvalidArgument("iterations", iterations, "a positive integer")
    n = mg.n
    if n <= memory:
        cost, order = brute_force_ordering(mg, ws)
        return WalkBound(mg.name, n, ws.spec, cost, (0,) * n, 1, memory, tuple(order), tuple(order), 0, time.perf_counter() - t0)
    _memory(memory, mg)
    lam = np.zeros(n) if start is None else np.asarray(start, dtype=float).copy()
    if lam.shape != (n,) or not np.all(np.isfinite(lam)) or np.abs(lam).max(initial=0) * scale >= 2.0**40:
        raise InvalidArgument("start", start, f"{n} finite numbers, one per node, each times the scale below 2^40")
    if upper is None:
        upper, _ = local_search_ordering(mg, ws)
    rel = _Relaxation(mg.dist, w, memory)
    best: tuple[int, float, np.ndarray, tuple[int, ...]] | None = None
    theta, stall, it = 1.0, 0, 0
    for it in range(1, iterations + 1):
        if np.abs(lam).max(initial=0) * scale >= 2.0**40:  # pragma: no cover - steps stay near the costs
            break
        L = np.round(lam * scale).astype(np.int64)
        value, walk = rel.solve(L, scale)
        exact = (value - int(L.sum())) / scale
        if best is None or exact > best[1] + 1e-9:
            best, stall = (_bound_of(value, L, scale), exact, L.copy(), walk), 0
        else:
            stall += 1
            if stall >= 10:
                theta, stall = theta / 2, 0
        if progress is not None:
            progress(time.perf_counter() - t0, upper, best[0])
        g = np.bincount(np.asarray(walk), minlength=n) - 1
        if not g.any() or best[0] >= upper or theta < 1e-4:
            break
        lam += theta * max(upper - exact, 0.5) / float(g @ g) * g
    assert best is not None
    bound, _, L, walk = best
    perm: tuple[int, ...] | None = walk if len(set(walk)) == n else None
    if perm is not None and ordering_cost(mg, perm, ws) != bound:
        raise InternalError(f"the relaxation's ordering of {mg.name} costs {ordering_cost(mg, perm, ws)}, its bound says {bound}")
    return WalkBound(mg.name, n, ws.spec, bound, tuple(int(x) for x in L), scale, memory, walk, perm, it, time.perf_counter() - t0)


def _cost_vec(D: np.ndarray, o: np.ndarray, w: Sequence[int]) -> int:
    return int(sum(wk * D[o[:-k], o[k:]].sum() for k, wk in enumerate(w, 1) if wk and k < len(o)))


def local_search_ordering(
    machine: object,
    weights: "str | Weights" = "window:3",
    *,
    iterations: int = 100_000,
    restarts: int = 3,
    seed: int = 0,
    start: Sequence[int] | None = None,
) -> tuple[int, tuple[int, ...]]:
    """A good ordering by simulated annealing (an upper bound; never a proof by itself).

    Moves: reverse a segment, or cut a segment (maybe reversed) and insert it
    elsewhere; the temperature falls linearly from 3 to 0.05 hop-weights.  It
    starts from ``start`` or the cheapest reference curve (row-major, snake,
    Hilbert, Z-order, Gray code), else a greedy walk; each restart uses seed
    ``seed + r``.  Any window weights with linear rank distance.  Returns
    ``(cost, order)``, the cost by :func:`~topoalloc.ilp.ordering.ordering_cost`.
    """
    from .ordering import greedy_ordering
    from .references import reference_orderings

    mg = machine if isinstance(machine, MachineGraph) else machine_graph(machine)
    ws = parse_weights(weights)
    if ws.edges_rank or ws.K is None:
        raise InvalidArgument("weights", ws.spec, "window weights (linear arrangement is not supported by the local search)")
    for name, v in (("iterations", iterations), ("restarts", restarts), ("seed", seed)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "seed" else 1):
            raise InvalidArgument(name, v, "a positive integer" if name != "seed" else "a non-negative integer")
    n = mg.n
    D = np.asarray(mg.dist, dtype=np.int64)
    w = ws.window
    if start is None:
        cands = list(reference_orderings(mg).values()) or [greedy_ordering(mg)]
        start = min(cands, key=lambda o: _cost_vec(D, np.asarray(o), w))
    best_o = np.asarray(start, dtype=np.int64)
    if sorted(best_o.tolist()) != list(range(n)):
        raise InvalidArgument("start", start, f"a permutation of 0..{n - 1}")
    best_c = _cost_vec(D, best_o, w)
    if n >= 4:
        for r in range(restarts):
            c, o = _anneal(D, best_o, w, iterations, seed + r)
            if c < best_c:
                best_c, best_o = c, o
    order = tuple(int(v) for v in best_o)
    cost = ordering_cost(mg, order, ws)
    if cost != best_c:  # pragma: no cover - the vector cost is the evaluator's sum
        raise InternalError(f"local search cost {best_c} disagrees with the evaluator's {cost}")
    return cost, order


def _anneal(D: np.ndarray, start: np.ndarray, w: Sequence[int], iterations: int, seed: int) -> tuple[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = len(start)
    o = start.copy()
    c = _cost_vec(D, o, w)
    best_c, best_o = c, o.copy()
    cuts = rng.integers(0, n + 1, size=(iterations, 3))
    coins = rng.random((iterations, 3))
    for t in range(iterations):
        i, j = sorted((int(cuts[t, 0]), int(cuts[t, 1])))
        if j - i < 2:
            continue
        if coins[t, 0] < 0.5:
            p = np.concatenate([o[:i], o[i:j][::-1], o[j:]])
        else:
            seg = o[i:j] if coins[t, 1] < 0.5 else o[i:j][::-1]
            rest = np.concatenate([o[:i], o[j:]])
            k = int(cuts[t, 2]) % (len(rest) + 1)
            p = np.concatenate([rest[:k], seg, rest[k:]])
        pc = _cost_vec(D, p, w)
        temp = 3.0 * (1 - t / iterations) + 0.05
        if pc <= c or coins[t, 2] < math.exp((c - pc) / temp):
            o, c = p, pc
            if c < best_c:
                best_c, best_o = c, o.copy()
    return best_c, best_o


def lagrange_ordering(
    machine: object,
    weights: "str | Weights" = "window:3",
    *,
    iterations: int = 300,
    search_iterations: int = 100_000,
    restarts: int = 3,
    seed: int = 0,
    progress: "Callable[[float, float | None, float], None] | None" = None,
) -> tuple[OrderingResult, WalkBound]:
    """A local-search ordering and the Lagrangian bound: ``optimal`` when they meet.

    Returns the :class:`~topoalloc.ilp.ordering.OrderingResult`
    (``formulation="lagrange"``; ``bound`` proven by the returned
    :class:`WalkBound`'s certificate) and the bound itself.
    """
    t0 = time.perf_counter()
    mg = _graph(machine)
    ws = parse_weights(weights)
    _window3(ws, mg=mg)
    if mg.n < DISTINCT:  # every ordering can be tried
        wb = lagrangian_bound(mg, ws)
        cost, order = wb.bound, wb.walk
    else:
        # the search first: Polyak's steps aim at its cost, and a loose target slows the bound down
        cost, order = local_search_ordering(mg, ws, iterations=search_iterations, restarts=restarts, seed=seed)
        wb = lagrangian_bound(mg, ws, iterations=iterations, upper=cost, progress=progress)
    if wb.order is not None and wb.bound < cost:  # the relaxation found a better ordering
        cost, order = wb.bound, wb.order
    if wb.bound > cost:
        raise InternalError(f"bound {wb.bound} above the ordering's cost {cost} on {mg.name}")
    status = "optimal" if wb.bound == cost else "feasible"
    res = OrderingResult(
        machine=mg.name, n=mg.n, weights=ws.spec, ring=False, status=status, order=order, objective=cost, bound=wb.bound,
        seconds=time.perf_counter() - t0, formulation="lagrange", symmetry=False, workers=1, seed=seed,
    )
    return res, wb
