"""Deadlock freedom of the network's routing: the channel dependency graph is acyclic (Dally & Seitz).

Dally and Seitz (1987): a deterministic routing function is deadlock-free on
a wormhole network iff its *channel dependency graph* (CDG) has no cycle.
The CDG has a vertex per (virtual) channel and an edge ``c → c'`` whenever
some route uses ``c'`` right after ``c``.

This module derives every route **from the definition of the routing**, not
from the simulator or :mod:`topoalloc.topology`:

* dimension order on meshes and tori: correct dimension 0 first, then 1, ...;
  in a wrapped dimension of size ``k`` go the shorter way round, the positive
  way on a tie (``k`` even, distance ``k/2``);
* E-cube on hypercubes: correct the differing address bits lowest first;
* dateline virtual channels on tori: a packet travels in class 0 and moves
  to class 1 when it takes the wrap-around link of the dimension it is
  correcting (``k-1 → 0`` going up, ``0 → k-1`` going down), keeping class 1
  to the end of that dimension; each new dimension starts in class 0.

Channels are ``(node, dimension, direction, class)``.  The check is an exact
graph computation (every ordered pair of nodes, every route, then
:func:`networkx.is_directed_acyclic_graph`; a cycle, if any, comes from
:func:`networkx.find_cycle`).  For one machine size the property is a finite
statement about a finite graph, so an exact graph check decides it outright;
Z3 would be asked the same finite question (a ranking of the channels) and
answer it more slowly, with nothing gained in trust.  What is proved is
therefore "acyclic for every machine up to the bound the tests name", not
for all sizes: every mesh, every torus and every partially wrapped torus
(some dimensions wrapped, as ``torus:4x5,wrap=01``) with those sides, in
every orientation.  Method: exhaustive (every route of every machine named).

Assumed: nothing of the simulator; the routes are derived from the
definitions above.  Derived: the CDG and its acyclicity (or a cycle).
Linked to the code by :func:`simulator_routes_agree`.

:func:`simulator_routes_agree` then checks, separately, that the
simulator's routes (``topoalloc.network``) are exactly these routes, channel
by channel, so the proof is about the routing that actually runs.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Sequence

from .base import ProofResult

__all__ = [
    "dor_route",
    "ecube_route_bits",
    "grid_cdg",
    "hypercube_cdg",
    "prove_grid_deadlock_free",
    "prove_hypercube_deadlock_free",
    "simulator_routes_agree",
    "grid_shapes",
    "mixed_wrap_cases",
    "deadlock_rows",
]

Channel = tuple[int, int, int, int]  # (node, dimension, direction, class)


def _coords(node: int, dims: Sequence[int]) -> list[int]:
    out = []
    for k in dims:
        out.append(node % k)
        node //= k
    return out


def _node(coords: Sequence[int], dims: Sequence[int]) -> int:
    node, stride = 0, 1
    for c, k in zip(coords, dims):
        node += c * stride
        stride *= k
    return node


def dor_route(dims: Sequence[int], wrap: Sequence[bool], s: int, d: int, *, dateline: bool = False) -> list[Channel]:
    """The channels of the dimension-order route from ``s`` to ``d`` (with dateline classes if asked).

    >>> dor_route((4,), (True,), 3, 1, dateline=True)  # 3 -> 0 over the wrap link, then 0 -> 1
    [(3, 0, 1, 1), (0, 0, 1, 1)]
    """
    cur = _coords(s, dims)
    target = _coords(d, dims)
    out: list[Channel] = []
    for i, k in enumerate(dims):
        delta = target[i] - cur[i]
        if wrap[i]:
            up = delta % k
            down = k - up
            step, n = (1, up) if up <= down else (-1, down)
        else:
            step, n = (1 if delta > 0 else -1), abs(delta)
        cls = 0
        for _ in range(n):
            x = cur[i]
            if wrap[i] and ((step > 0 and x == k - 1) or (step < 0 and x == 0)):
                cls = 1  # the dateline: this dimension's wrap-around link
            out.append((_node(cur, dims), i, step, cls if dateline else 0))
            cur[i] = (x + step) % k
    return out


def ecube_route_bits(n: int, s: int, d: int) -> list[Channel]:
    """The channels of the E-cube route in the n-cube: differing bits, lowest first."""
    out: list[Channel] = []
    v = s
    for b in range(n):
        if (v ^ d) >> b & 1:
            out.append((v, b, 1 if not v >> b & 1 else -1, 0))
            v ^= 1 << b
    return out


def _cdg(routes: Iterable[list[Channel]]):
    import networkx as nx

    g = nx.DiGraph()
    for r in routes:
        g.add_nodes_from(r)
        g.add_edges_from(zip(r, r[1:]))
    return g


def grid_cdg(dims: Sequence[int], wrap: Sequence[bool], *, dateline: bool = False):
    """The channel dependency graph of dimension-order routing on a mesh/torus (networkx DiGraph)."""
    n = 1
    for k in dims:
        n *= k
    return _cdg(dor_route(dims, wrap, s, d, dateline=dateline) for s in range(n) for d in range(n) if s != d)


def hypercube_cdg(n: int):
    """The channel dependency graph of E-cube routing on the n-cube."""
    N = 1 << n
    return _cdg(ecube_route_bits(n, s, d) for s in range(N) for d in range(N) if s != d)


def _verdict(name: str, size: str, g, t0: float) -> ProofResult:
    import networkx as nx

    details = {"channels": g.number_of_nodes(), "dependencies": g.number_of_edges(), "method": "exhaustive"}
    if nx.is_directed_acyclic_graph(g):
        return ProofResult(name, True, time.perf_counter() - t0, size, None, details)
    cycle = [u for u, _ in nx.find_cycle(g)]
    ce = {"cycle": [{"node": c[0], "dimension": c[1], "direction": c[2], "class": c[3]} for c in cycle]}
    return ProofResult(name, False, time.perf_counter() - t0, size, ce, details)


def _describe(dims: Sequence[int], wrap: Sequence[bool]) -> str:
    sides = "x".join(map(str, dims))
    if all(wrap):
        return f"torus:{sides}"
    if not any(wrap):
        return f"mesh:{sides}"
    return f"torus:{sides},wrap=" + "".join("1" if w else "0" for w in wrap)


def prove_grid_deadlock_free(dims: Sequence[int], wrap: Sequence[bool] | None = None, *, dateline: bool = False) -> ProofResult:
    """Decide whether dimension-order routing on the mesh/torus ``dims`` has an acyclic CDG.

    ``holds`` is True when it does; otherwise ``counterexample["cycle"]`` lists
    the channels of a dependency cycle.

    >>> prove_grid_deadlock_free((4, 4), (True, True)).holds
    False
    >>> prove_grid_deadlock_free((4, 4), (True, True), dateline=True).holds
    True
    """
    dims = tuple(int(k) for k in dims)
    wrap = (False,) * len(dims) if wrap is None else tuple(bool(w) for w in wrap)
    t0 = time.perf_counter()
    g = grid_cdg(dims, wrap, dateline=dateline)
    name = "CDG acyclic (dimension order" + (", dateline VCs)" if dateline else ")")
    return _verdict(name, _describe(dims, wrap), g, t0)


def prove_hypercube_deadlock_free(n: int) -> ProofResult:
    """Decide whether E-cube routing on the n-cube has an acyclic CDG."""
    t0 = time.perf_counter()
    return _verdict("CDG acyclic (E-cube)", f"hypercube:{n}", hypercube_cdg(n), t0)


def grid_shapes(max_side: dict[int, int]) -> list[tuple[int, ...]]:
    """Every shape with ``d`` dimensions and sides ``1..max_side[d]`` (all orientations)."""
    out = []
    for d, m in sorted(max_side.items()):
        out.extend(itertools.product(range(1, m + 1), repeat=d))
    return out


def simulator_routes_agree(topology, *, vcs: int = 2) -> ProofResult:
    """Check that the simulator's route tables give exactly the routes (and dateline classes) derived here.

    Compares, for every ordered pair of distinct nodes, the channels of
    ``topoalloc.network`` 's route (``NetworkTables.route_channels``) with
    :func:`dor_route` / :func:`ecube_route_bits`, and on tori the dateline
    class the engines give each hop (:func:`topoalloc.network.engine.hop_classes`)
    with the class defined here.  An exact comparison; the counterexample is
    the first pair that differs.
    """
    from ..network.engine import hop_classes, uses_dateline
    from ..network.config import NetworkConfig
    from ..network.tables import network_tables
    from ..topology.hypercube import Hypercube

    t0 = time.perf_counter()
    tables = network_tables(topology)
    dateline = uses_dateline(topology, NetworkConfig(vcs=vcs))
    n = topology.n_nodes
    C = tables.n_links
    cases = 0
    for s in range(n):
        for d in range(n):
            if s == d:
                continue
            chans = tables.route_channels(s, d)[1:-1]
            got = [(int(tables.chan_src[c]), int(tables.chan_dim[c]), int(tables.chan_dir[c])) for c in chans]
            if isinstance(topology, Hypercube):
                want = ecube_route_bits(topology.n, s, d)
            else:
                want = dor_route(topology.dims, topology.wrap, s, d, dateline=dateline)
            classes = hop_classes(tables, chans, dateline) if dateline else [0] * len(chans)
            got4 = [g + (k,) for g, k in zip(got, classes)]
            cases += 1
            if got4 != [tuple(w) for w in want] or any(c >= C for c in chans):
                ce = {"pair": [s, d], "simulator": got4, "definition": want}
                return ProofResult("simulator routes = definition", False, time.perf_counter() - t0, topology.spec(), ce, {"cases": cases, "method": "exhaustive"})
    return ProofResult("simulator routes = definition", True, time.perf_counter() - t0, topology.spec(), None, {"cases": cases, "method": "exhaustive"})


def mixed_wrap_cases(max_side: dict[int, int]) -> list[tuple[tuple[int, ...], tuple[bool, ...]]]:
    """Every shape of ``grid_shapes(max_side)`` with two or more dimensions, with every wrap pattern
    that wraps some dimensions and not others (the tori ``torus:AxB,wrap=01`` and the like)."""
    out = []
    for s in grid_shapes({d: m for d, m in max_side.items() if d >= 2}):
        for w in itertools.product((False, True), repeat=len(s)):
            if any(w) and not all(w):
                out.append((s, w))
    return out


def deadlock_rows(*, max_side: dict[int, int] | None = None, max_cube: int = 8, mixed_side: dict[int, int] | None = None) -> list[dict]:
    """Run the family and summarise it as rows (what, how many cases, largest, time, verdict).

    Meshes, tori and partially wrapped tori with dateline classes must be
    acyclic; without dateline classes a torus (fully or partially wrapped)
    must have a cycle exactly when some wrapped side is at least 4 (shorter
    rings route at most one hop per dimension).  Every row is an exact graph
    check of every route, i.e. exhaustive over the machines it names.
    """
    from .report import summarise

    max_side = {1: 16, 2: 8, 3: 4} if max_side is None else max_side
    mixed_side = {2: min(max_side.get(2, 0), 6), 3: min(max_side.get(3, 0), 3)} if mixed_side is None else mixed_side
    shapes = grid_shapes(max_side)
    meshes = [prove_grid_deadlock_free(s) for s in shapes]
    tori = [prove_grid_deadlock_free(s, (True,) * len(s), dateline=True) for s in shapes]
    plain = [prove_grid_deadlock_free(s, (True,) * len(s)) for s in shapes]
    expect_cycle = [max(s) >= 4 for s in shapes]
    mixed = mixed_wrap_cases(mixed_side)
    mixed_dl = [prove_grid_deadlock_free(s, w, dateline=True) for s, w in mixed]
    mixed_plain = [prove_grid_deadlock_free(s, w) for s, w in mixed]
    mixed_expect = [any(wi and k >= 4 for wi, k in zip(w, s)) for s, w in mixed]

    def cycle_iff(results: list[ProofResult], expected: list[bool]) -> list[ProofResult]:
        return [
            ProofResult("without dateline: cycle iff a wrapped side >= 4", (not r.holds) == e, r.seconds, r.size, None if (not r.holds) == e else {"acyclic": r.holds}, r.details)
            for r, e in zip(results, expected)
        ]

    cubes = [prove_hypercube_deadlock_free(n) for n in range(0, max_cube + 1)]
    size = lambda r: r.details.get("channels", 0)  # noqa: E731
    bound = ", ".join(f"{d}-D sides <= {m}" for d, m in sorted(max_side.items()))
    mbound = ", ".join(f"{d}-D sides <= {m}" for d, m in sorted(mixed_side.items()) if m)
    return [
        summarise(f"mesh, dimension order: CDG acyclic [{bound}]", meshes, size),
        summarise(f"torus, dimension order + dateline VCs: CDG acyclic [{bound}]", tori, size),
        summarise(f"torus without dateline VCs: a cycle iff some side >= 4 [{bound}]", cycle_iff(plain, expect_cycle), size),
        summarise(f"partially wrapped torus + dateline VCs: CDG acyclic [{mbound}, every mixed wrap pattern]", mixed_dl, size),
        summarise(f"partially wrapped torus without dateline VCs: a cycle iff a wrapped side >= 4 [{mbound}]", cycle_iff(mixed_plain, mixed_expect), size),
        summarise(f"hypercube, E-cube: CDG acyclic [Q0..Q{max_cube}]", cubes, size),
    ]
