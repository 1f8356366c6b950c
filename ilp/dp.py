"""Exact optimal orderings by dynamic programming over subsets (window weights, K ≤ 3).

The §2.2 objective with a window of K ≤ 3 ranks and linear rank distance,
Σ_i Σ_{k ≤ K} w(k) · d(o_i, o_{i+k}), depends, when a node is appended to a
partial order, only on the set already placed and on its last three nodes.
So the optimum is a shortest path over states ``(placed set S, a, b, c)``
(``c`` placed last, ``b`` before it, ``a`` before that): appending ``v`` costs
``w(1)·d(c, v) + w(2)·d(b, v) + w(3)·d(a, v)``.  The table has 2^n · n^3 entries
(2^16 · 16^3 = 268 million for 16 nodes, int32: 1 GiB), filled layer by layer
(|S| = 3, 4, ..., n) with numpy — one vectorised minimum over ``a`` per
(layer, appended node).  The order is read back by walking the table
backwards.  This is an exact method, not a bound: it complements CP-SAT
(:func:`~topoalloc.ilp.ordering.optimal_ordering`) where the latter cannot
close the gap — the 16-node machines (4×4 mesh and torus, 4-cube) that CP-SAT
leaves at a 27 % gap after 10 minutes.  It does not take ring rank distance or
linear arrangement (their cost is not local to the last three ranks).
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from topoalloc.errors import InternalError, InvalidArgument, SolverError

from .graphs import machine_graph
from .ordering import OrderingResult, Weights, brute_force_ordering, ordering_cost, parse_weights

__all__ = ["dp_ordering", "DP_MAX_NODES"]

#: Largest machine the table is built for (2^n · n^3 int32 entries: 1 GiB at 16).
DP_MAX_NODES = 16

_INF = np.int32(2**30)


def dp_ordering(machine: object, weights: "str | Weights" = "window:3", *, max_nodes: int = DP_MAX_NODES) -> OrderingResult:
    """The optimal linear ordering by dynamic programming (see the module docstring).

    Parameters
    ----------
    machine : Topology, spec string, networkx Graph or edge list
        As for :func:`~topoalloc.ilp.ordering.optimal_ordering`.
    weights : str or Weights
        A window preset with K ≤ 3 (``window:1..3``, ``hamiltonian``,
        ``custom:w1[,w2[,w3]]``).
    max_nodes : int
        Refuse machines larger than this (memory grows as 2^n · n^3).

    Returns
    -------
    OrderingResult
        Always ``status="optimal"`` with ``bound == objective``, checked by the
        independent evaluator; ``formulation="dp"``.  Ties between optimal
        orders go to the first found in the backward walk (deterministic).
    """
    mg = machine_graph(machine)
    ws = parse_weights(weights)
    n = mg.n
    if ws.edges_rank or ws.K is None or ws.K > 3:
        raise InvalidArgument("weights", ws.spec, "a window of at most 3 ranks for the DP (window:1..3, hamiltonian, custom:w1,w2,w3)")
    if not isinstance(max_nodes, int) or not 1 <= max_nodes <= 20:
        raise InvalidArgument("max_nodes", max_nodes, "an integer in 1..20")
    if n > max_nodes:
        raise InvalidArgument("machine", mg.name, f"at most {max_nodes} nodes for the DP (2^n * n^3 table); it has {n}")
    t0 = time.perf_counter()
    common = dict(machine=mg.name, n=n, weights=ws.spec, ring=False, formulation="dp", symmetry=False, workers=1, seed=0)
    if n <= 3:
        cost, order = brute_force_ordering(mg, ws)
        return OrderingResult(status="optimal", order=tuple(order), objective=cost, bound=cost, seconds=time.perf_counter() - t0, **common)
    D = np.asarray(mg.dist, dtype=np.int32)
    w1, w2, w3 = (np.int32(ws.w(k)) for k in (1, 2, 3))
    T = _fill(D, n, w1, w2, w3)
    full = (1 << n) - 1
    best = int(T[full].min())
    order = _walk_back(T, D, n, w1, w2, w3, full, best)
    cost = ordering_cost(mg, order, ws)
    if cost != best:  # the table and the independent evaluator must agree
        raise SolverError(f"DP ordering of {mg.name}", "invalid solution", f"the table says {best}, the independent evaluator {cost}")
    return OrderingResult(status="optimal", order=order, objective=cost, bound=cost, seconds=time.perf_counter() - t0, **common)


def _fill(D: np.ndarray, n: int, w1, w2, w3) -> np.ndarray:
    """The table T[S, a, b, c]: least cost of an order of S ending a, b, c (INF if none)."""
    T = np.full((1 << n, n, n, n), _INF, dtype=np.int32)
    for a, b, c in itertools.permutations(range(n), 3):
        T[(1 << a) | (1 << b) | (1 << c), a, b, c] = w1 * D[a, b] + w1 * D[b, c] + w2 * D[a, c]
    masks = np.arange(1 << n, dtype=np.int64)
    pop = np.zeros(1 << n, dtype=np.int64)
    for i in range(n):
        pop += (masks >> i) & 1
    for s in range(3, n):
        layer = masks[pop == s]
        for v in range(n):
            src = layer[((layer >> v) & 1) == 0]
            if src.size == 0:
                continue
            # drop a: min over a of T[S, a, b, c] + w3·d(a, v)
            cand = (T[src] + (w3 * D[:, v])[None, :, None, None]).min(axis=1)
            cand += (w2 * D[:, v])[None, :, None] + (w1 * D[:, v])[None, None, :]
            dest = src | (1 << v)
            np.minimum(T[dest, :, :, v], cand, out=cand)
            T[dest, :, :, v] = cand
    return T


def _walk_back(T: np.ndarray, D: np.ndarray, n: int, w1, w2, w3, full: int, best: int) -> tuple[int, ...]:
    S = full
    idx = np.argwhere(T[S] == best)[0]  # lowest (a, b, c) in index order among the optimal ends
    a, b, c = (int(x) for x in idx)
    rev = [c, b, a]
    while bin(S).count("1") > 3:
        prev = S & ~(1 << c)
        here = int(T[S, a, b, c])
        step = w2 * D[a, c] + w1 * D[b, c]
        for x in range(n):
            if (prev >> x) & 1 and x not in (a, b) and int(T[prev, x, a, b]) + int(w3 * D[x, c] + step) == here:
                break
        else:  # pragma: no cover - a filled table always has a predecessor
            raise InternalError("DP table has no predecessor")
        S, a, b, c = prev, x, a, b
        rev.append(a)
    return tuple(reversed(rev))
