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

Router networks (:func:`dragonfly_route`, :func:`dragonfly_valiant_route`,
:func:`fattree_route`): the dragonfly's minimal routing (local, global, local;
Kim et al. 2008) with and without the VC class change at the global hop,
Valiant's routing with a class per global hop crossed, and the k-ary n-tree's
up*/down* routing with the up ports fixed by the destination's digits.
Channels are ``(from router, to router, class)``; node links (injection,
ejection) cannot lie on a cycle and are left out.

Assumed: nothing of the simulator; the routes are derived from the
definitions above.  Derived: the CDG and its acyclicity (or a cycle).
Linked to the code by :func:`simulator_routes_agree` and
:func:`simulator_router_routes_agree`.

:func:`simulator_routes_agree` then checks, separately, that the
simulator's routes (``topoalloc.network``) are exactly these routes, channel
by channel, so the proof is about the routing that actually runs.
"""

from __future__ import annotations

import functools
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
    "dragonfly_route",
    "dragonfly_valiant_route",
    "fattree_route",
    "prove_valiant_deadlock_free",
    "valiant_routes_agree",
    "prove_dragonfly_deadlock_free",
    "prove_fattree_deadlock_free",
    "simulator_router_routes_agree",
]

Channel = tuple[int, int, int, int]  # (node, dimension, direction, class)


def _coords(node: int, dims: Sequence[int]) -> list[int]:
    out = []
    for k in dims:
        out.append(node % k)
        node //= k
    return out


@functools.lru_cache(maxsize=16)
def _coord_table(dims: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Every node's coordinates (:func:`_coords`), once per machine: a CDG asks for each node's 2(n - 1) times."""
    n = 1
    for k in dims:
        n *= k
    return tuple(tuple(_coords(v, dims)) for v in range(n))


@functools.lru_cache(maxsize=16)
def _strides(dims: tuple[int, ...]) -> tuple[int, ...]:
    """How far a node's id moves for one step in each dimension (dimension 0 varies fastest)."""
    out, stride = [], 1
    for k in dims:
        out.append(stride)
        stride *= k
    return tuple(out)


def _dor_segment(dims: tuple[int, ...], wrap: Sequence[bool], node: int, i: int, t: int, dateline: bool) -> tuple[tuple[Channel, ...], int]:
    """Dimension order's walk in dimension ``i`` alone: from ``node`` until its coordinate ``i`` is ``t``.

    Returns the channels taken and the node reached. The walk depends on
    nothing else (the class starts at 0 in every dimension), so a route is
    these walks for dimensions 0, 1, ... in turn (:func:`dor_route`).
    """
    k = dims[i]
    x = _coord_table(dims)[node][i]
    delta = t - x
    if wrap[i]:
        up = delta % k
        down = k - up
        step, n = (1, up) if up <= down else (-1, down)
    else:
        step, n = (1 if delta > 0 else -1), abs(delta)
    stride = _strides(dims)[i]
    cls = 0
    out: list[Channel] = []
    for _ in range(n):
        if wrap[i] and ((step > 0 and x == k - 1) or (step < 0 and x == 0)):
            cls = 1  # the dateline: this dimension's wrap-around link
        out.append((node, i, step, cls if dateline else 0))
        nxt = (x + step) % k
        node += (nxt - x) * stride
        x = nxt
    return tuple(out), node


def dor_route(dims: Sequence[int], wrap: Sequence[bool], s: int, d: int, *, dateline: bool = False) -> list[Channel]:
    """The channels of the dimension-order route from ``s`` to ``d`` (with dateline classes if asked).

    >>> dor_route((4,), (True,), 3, 1, dateline=True)  # 3 -> 0 over the wrap link, then 0 -> 1
    [(3, 0, 1, 1), (0, 0, 1, 1)]
    """
    dims = tuple(dims)
    target = _coord_table(dims)[d]
    out: list[Channel] = []
    node = s
    for i in range(len(dims)):
        chans, node = _dor_segment(dims, wrap, node, i, target[i], dateline)
        out.extend(chans)
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

    # channels and dependencies each once, in the order they first occur (the graph's order, hence the cycle
    # reported, is what adding every route in turn gives); dicts keep that order and drop repeats cheaply
    nodes: dict[Channel, None] = {}
    edges: dict[tuple[Channel, Channel], None] = {}
    for r in routes:
        nodes.update(dict.fromkeys(r))
        edges.update(dict.fromkeys(zip(r, r[1:])))
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return g


def grid_cdg(dims: Sequence[int], wrap: Sequence[bool], *, dateline: bool = False):
    """The channel dependency graph of dimension-order routing on a mesh/torus (networkx DiGraph).

    The graph of every route between two distinct nodes, added in turn
    (:func:`_cdg`), built without listing each route in full: a route is its
    per-dimension walks (:func:`_dor_segment`), and a walk that an earlier
    route took added its channels and its own dependencies then. So each walk
    is computed and added once per machine, and each route adds only the
    dependencies where one walk hands over to the next. Channels and
    dependencies come out in the same order as from the full routes (the
    tests compare the two graphs, order included), hence the same cycle
    reported.
    """
    import networkx as nx

    dims = tuple(int(k) for k in dims)
    wrap = tuple(bool(w) for w in wrap)
    table = _coord_table(dims)
    walks: dict[tuple[int, int, int], tuple[tuple[Channel, ...], int]] = {}
    nodes: dict[Channel, None] = {}
    edges: dict[tuple[Channel, Channel], None] = {}
    for s in range(len(table)):
        for d in range(len(table)):
            if s == d:
                continue
            target = table[d]
            node, last = s, None
            for i, t in enumerate(target):
                key = (node, i, t)
                got = walks.get(key)
                new = got is None
                if new:
                    got = walks[key] = _dor_segment(dims, wrap, node, i, t, dateline)
                chans, node = got
                if chans:
                    if last is not None:  # the hand-over, before the walk's own dependencies, as in the route
                        edges[(last, chans[0])] = None
                    if new:
                        nodes.update(dict.fromkeys(chans))
                        edges.update(dict.fromkeys(zip(chans, chans[1:])))
                    last = chans[-1]
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return g


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
    """Check that the simulator's route tables give exactly the routes (and VC classes) derived here.

    Compares, for every ordered pair of distinct nodes, the channels of
    ``topoalloc.network`` 's route (``NetworkTables.route_channels``) with
    :func:`dor_route` / :func:`ecube_route_bits` (channels as ``(node,
    dimension, direction, class)``) or, on a dragonfly or fat tree,
    :func:`dragonfly_route` / :func:`fattree_route` (``(from router, to
    router, class)``), and the class the engines give each hop
    (:func:`topoalloc.network.engine.hop_classes`) with the class defined
    here.  An exact comparison; the counterexample is the first pair that
    differs.
    """
    from ..network.engine import hop_classes, uses_dateline
    from ..network.config import NetworkConfig
    from ..network.tables import network_tables
    from ..topology.hypercube import Hypercube
    from ..topology.indirect import Dragonfly, FatTree

    t0 = time.perf_counter()
    tables = network_tables(topology)
    dateline = uses_dateline(topology, NetworkConfig(vcs=vcs))
    n = topology.n_nodes
    C = tables.n_links
    routers = isinstance(topology, (Dragonfly, FatTree))
    where = [int(r) for r in tables.node_router]

    def definition(s: int, d: int) -> list:
        if isinstance(topology, Dragonfly):
            return dragonfly_route(topology.a, topology.h, topology.groups, where[s], where[d], classes=dateline)
        if isinstance(topology, FatTree):
            per = topology.k ** (topology.n - 1)
            return fattree_route(topology.k, topology.n, where[s] % per, where[d] % per)
        if isinstance(topology, Hypercube):
            return ecube_route_bits(topology.n, s, d)
        return dor_route(topology.dims, topology.wrap, s, d, dateline=dateline)

    cases = 0
    for s in range(n):
        for d in range(n):
            if s == d:
                continue
            chans = tables.route_channels(s, d)[1:-1]
            classes = hop_classes(tables, chans, dateline) if dateline else [0] * len(chans)
            if routers:
                got = [(int(tables.chan_src[c]), int(tables.chan_dst[c]), k) for c, k in zip(chans, classes)]
            else:
                got = [(int(tables.chan_src[c]), int(tables.chan_dim[c]), int(tables.chan_dir[c]), k) for c, k in zip(chans, classes)]
            want = [tuple(w) for w in definition(s, d)]
            cases += 1
            if got != want or any(c >= C for c in chans):
                ce = {"pair": [s, d], "simulator": got, "definition": want}
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


def dragonfly_cases(max_a: int, max_h: int) -> list[tuple[int, int, int]]:
    """Every dragonfly ``(a, h, g)`` with ``a <= max_a``, ``h <= max_h`` and every number of groups ``1 .. a·h + 1``."""
    return [(a, h, g) for a in range(1, max_a + 1) for h in range(1, max_h + 1) for g in range(1, a * h + 2)]


def dragonfly_needs_classes(a: int, h: int, g: int) -> bool:
    """Whether minimal routing with one VC class has a dependency cycle, as the module argues it.

    A cycle needs a local hop between two global hops of different routes:
    a route arriving on router ``z`` of a group and going on locally to ``w``,
    and a route leaving from ``z`` locally to ``w`` to take ``w``'s global link
    — so at least three groups (with two, the only global link of a group both
    arrives and leaves on one router), two routers a group, and global channels
    on more than one router: the channels in use, ``0 .. g-2``, reach past
    router 0's ``h`` when ``g - 2 >= h``.
    """
    return g >= 3 and a >= 2 and g - 2 >= h


def deadlock_rows(*, max_side: dict[int, int] | None = None, max_cube: int = 8, mixed_side: dict[int, int] | None = None, max_dragonfly: tuple[int, int] = (4, 2), max_fattree: tuple[int, int] = (4, 4)) -> list[dict]:
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
    dfly = dragonfly_cases(*max_dragonfly)
    dfly_classes = [prove_dragonfly_deadlock_free(a, h, g) for a, h, g in dfly]
    dfly_plain = [
        ProofResult("one class: a cycle iff g >= 3, a >= 2 and g - 2 >= h", (not r.holds) == dragonfly_needs_classes(a, h, g), r.seconds, r.size, None if (not r.holds) == dragonfly_needs_classes(a, h, g) else {"acyclic": r.holds}, r.details)
        for (a, h, g), r in ((c, prove_dragonfly_deadlock_free(*c, classes=False)) for c in dfly)
    ]
    valiant = [prove_valiant_deadlock_free(a, h, g) for a, h, g in dfly]
    trees = [prove_fattree_deadlock_free(k, n) for k in range(2, max_fattree[0] + 1) for n in range(1, max_fattree[1] + 1)]
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
        summarise(f"dragonfly, minimal + VC class change at the global hop: CDG acyclic [a <= {max_dragonfly[0]}, h <= {max_dragonfly[1]}, every g]", dfly_classes, size),
        summarise(f"dragonfly, minimal, one class: a cycle iff g >= 3, a >= 2, g - 2 >= h [a <= {max_dragonfly[0]}, h <= {max_dragonfly[1]}, every g]", dfly_plain, size),
        summarise(f"dragonfly, Valiant + a VC class per global hop (3): CDG acyclic [a <= {max_dragonfly[0]}, h <= {max_dragonfly[1]}, every g]", valiant, size),
        summarise(f"fat tree (k-ary n-tree), up*/down*: CDG acyclic [k <= {max_fattree[0]}, n <= {max_fattree[1]}]", trees, size),
    ]


# ------------------------------------------------------------- router networks
RouterChannel = tuple[int, int, int]  # (from router, to router, class)


def dragonfly_route(a: int, h: int, g: int, ra: int, rb: int, *, classes: bool = False) -> list[RouterChannel]:
    """The router channels of the dragonfly's minimal route from router ``ra`` to router ``rb``, from the definition.

    Kim, Dally, Scott & Abts (ISCA 2008), §3 with the consecutive arrangement
    of global links: routers ``G·a .. G·a + a - 1`` form group ``G``, joined all
    to all; global channel ``c`` (``0 <= c < a·h``) of group ``G`` is owned by
    router ``c // h`` of the group and leads to group ``(G + c + 1) mod (a·h + 1)``,
    where it lands on the router owning that group's channel back to ``G``.
    Minimal routing: a local hop to the router owning the global channel to the
    destination group (none if the packet is there), the global hop, a local
    hop to the destination router (none if the global channel lands there); in
    one group, one local hop.  With ``classes`` a packet takes VC class 0 until
    its global hop and class 1 from it on (§4's VC change at the global hop).
    """
    gmax = a * h + 1
    ga, gb = ra // a, rb // a
    if ra == rb:
        return []
    if ga == gb:
        return [(ra, rb, 0)]
    out_r = ga * a + ((gb - ga - 1) % gmax) // h
    in_r = gb * a + ((ga - gb - 1) % gmax) // h
    route: list[RouterChannel] = []
    if out_r != ra:
        route.append((ra, out_r, 0))
    up = 1 if classes else 0
    route.append((out_r, in_r, up))
    if in_r != rb:
        route.append((in_r, rb, up))
    return route


def dragonfly_valiant_route(a: int, h: int, g: int, ra: int, rb: int, via: int, *, classes: int = 3) -> list[RouterChannel]:
    """Valiant's route (Kim et al. §4.2) from router ``ra`` to router ``rb`` through group ``via``, from the definition.

    Minimally to group ``via`` — ending where the source group's global
    channel to ``via`` lands there — then minimally to ``rb``.  VC class:
    the number of global hops crossed so far, capped at ``classes - 1``.
    """
    gmax = a * h + 1
    ga = ra // a
    t = ra if via == ga else via * a + ((ga - via - 1) % gmax) // h
    hops = [(x, y) for x, y, _ in dragonfly_route(a, h, g, ra, t)] + [(x, y) for x, y, _ in dragonfly_route(a, h, g, t, rb)]
    out: list[RouterChannel] = []
    crossed = 0
    for x, y in hops:
        crossed += x // a != y // a
        out.append((x, y, min(crossed, classes - 1)))
    return out


def fattree_route(k: int, n: int, x: int, y: int) -> list[RouterChannel]:
    """The switch channels of the k-ary n-tree's route from leaf switch ``x`` to leaf switch ``y``, from the definition.

    Switch ``(w, l)`` (an (n-1)-digit base-k word ``w``, level ``l``) is router
    ``l·k^(n-1) + w`` and joins ``(w', l+1)`` iff ``w`` and ``w'`` differ at
    most in digit ``l`` (Petrini & Vanneschi, IPPS 1997).  Let ``L`` be one
    more than the highest digit where ``x`` and ``y`` differ.  Up: from level
    ``l`` to ``l + 1`` digit ``l`` becomes ``y``'s, for ``l = 0 .. L-1`` (so the
    climb ends on ``(y, L)``); down: from ``(y, l)`` to ``(y, l-1)``.  One VC
    class.
    """
    per = k ** (n - 1)

    def digit(w: int, i: int) -> int:
        return (w // k**i) % k

    L = max((i + 1 for i in range(n - 1) if digit(x, i) != digit(y, i)), default=0)
    route: list[RouterChannel] = []
    w = x
    for level in range(L):
        w2 = w + (digit(y, level) - digit(w, level)) * k**level
        route.append((level * per + w, (level + 1) * per + w2, 0))
        w = w2
    for level in range(L, 0, -1):
        route.append((level * per + y, (level - 1) * per + y, 0))
    return route


def _router_verdict(name: str, size: str, g, t0: float) -> ProofResult:
    import networkx as nx

    details = {"channels": g.number_of_nodes(), "dependencies": g.number_of_edges(), "method": "exhaustive"}
    if nx.is_directed_acyclic_graph(g):
        return ProofResult(name, True, time.perf_counter() - t0, size, None, details)
    cycle = [u for u, _ in nx.find_cycle(g)]
    ce = {"cycle": [{"from_router": c[0], "to_router": c[1], "class": c[2]} for c in cycle]}
    return ProofResult(name, False, time.perf_counter() - t0, size, ce, details)


def prove_dragonfly_deadlock_free(a: int, h: int, g: int | None = None, *, classes: bool = True) -> ProofResult:
    """Decide whether minimal routing on the dragonfly ``(a, h, g)`` has an acyclic CDG (every router pair's route).

    Terminals per router do not matter: injection channels have no
    predecessor and ejection channels no successor, so no cycle passes them.

    >>> prove_dragonfly_deadlock_free(2, 1, 3).holds
    True
    >>> prove_dragonfly_deadlock_free(2, 1, 3, classes=False).holds
    False
    """
    g = a * h + 1 if g is None else g
    t0 = time.perf_counter()
    R = a * g
    cdg = _cdg(dragonfly_route(a, h, g, x, y, classes=classes) for x in range(R) for y in range(R) if x != y)  # type: ignore[arg-type]
    name = "CDG acyclic (dragonfly minimal" + (", VC class change at the global hop)" if classes else ", one class)")
    return _router_verdict(name, f"dragonfly:p=1,a={a},h={h},g={g}", cdg, t0)


def prove_valiant_deadlock_free(a: int, h: int, g: int | None = None, *, classes: int = 3) -> ProofResult:
    """Decide whether Valiant's routing on the dragonfly ``(a, h, g)`` has an acyclic CDG: every pair of routers
    through every intermediate group other than theirs, with ``classes`` VC classes (3: one per global hop crossed).

    >>> prove_valiant_deadlock_free(2, 1, 3).holds, prove_valiant_deadlock_free(2, 1, 3, classes=2).holds
    (True, False)
    """
    g = a * h + 1 if g is None else g
    t0 = time.perf_counter()
    R = a * g
    routes = (dragonfly_valiant_route(a, h, g, x, y, v, classes=classes) for x in range(R) for y in range(R) if x != y for v in range(g) if v not in (x // a, y // a))
    return _router_verdict(f"CDG acyclic (dragonfly Valiant, {classes} VC classes)", f"dragonfly:p=1,a={a},h={h},g={g}", _cdg(routes), t0)  # type: ignore[arg-type]


def valiant_routes_agree(topology) -> ProofResult:
    """``Dragonfly.valiant_route`` (what the simulator routes by) equals :func:`dragonfly_valiant_route` for every
    pair of nodes and every intermediate group (router by router)."""
    t0 = time.perf_counter()
    a, h, g = topology.a, topology.h, topology.groups
    where = [int(r) for r in topology.node_router]
    cases = 0
    for s in range(topology.n_nodes):
        for d in range(topology.n_nodes):
            for v in range(g):
                got = topology.valiant_route(s, d, v)
                want = [where[s]] + [y for _, y, _ in dragonfly_valiant_route(a, h, g, where[s], where[d], v)]
                cases += 1
                if got != want:
                    return ProofResult("Valiant routes = definition", False, time.perf_counter() - t0, topology.spec(), {"pair": [s, d], "via": v, "topology": got, "definition": want}, {"cases": cases, "method": "exhaustive"})
    return ProofResult("Valiant routes = definition", True, time.perf_counter() - t0, topology.spec(), None, {"cases": cases, "method": "exhaustive"})


def prove_fattree_deadlock_free(k: int, n: int) -> ProofResult:
    """Decide whether up*/down* routing on the k-ary n-tree has an acyclic CDG (every pair of leaf switches)."""
    t0 = time.perf_counter()
    per = k ** (n - 1)
    cdg = _cdg(fattree_route(k, n, x, y) for x in range(per) for y in range(per) if x != y)  # type: ignore[arg-type]
    return _router_verdict("CDG acyclic (fat tree up*/down*)", f"fattree:k={k},n={n}", cdg, t0)


def simulator_router_routes_agree(topology, *, vcs: int = 2) -> ProofResult:
    """:func:`simulator_routes_agree` on a dragonfly or fat tree (channels ``(from router, to router, class)``)."""
    return simulator_routes_agree(topology, vcs=vcs)
