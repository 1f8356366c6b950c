"""Locality metrics of allocations, per job and aggregated.

Leung, Phillips, Bunde et al. (CLUSTER 2002) §2.3 and §3 define the
one-dimensional *span* metrics; the three-dimensional ones are those of their
§3 ("Metrics"); the average pairwise L1 distance is SST's (sum over unordered
pairs of the L1 distance, divided by the number of pairs).

Per job ``j`` with processors ``M_j`` (``p = |M_j|``):

linear_span
    ``max r − min r + 1`` over the ranks ``r`` of ``M_j`` in the curve ordering (§2.3).
ring_span
    ``|P| − max(max_i (r_{i+1} − r_i − 1), |P| − 1 − r_{p−1} + r_0)`` (§2.3, ranks sorted).
stretch_span
    ring span / p (§3: "average span divided by the number of processors").
bbox_volume, bbox_sides
    Extent of the allocation in each dimension — ``max − min + 1`` on a mesh
    dimension, the shortest arc covering the coordinates on a wrapped one —
    multiplied together (volume) and summed (sum of sides).
bbox_cube
    ``(largest extent)^d``; ``bbox_cube_ratio`` divides it by the smallest
    cube any allocation of ``p`` processors could have on this machine: ``s^d``
    for the least ``s`` with ``Π_i min(s, D_i) ≥ p`` (Figure 1, top).
components
    Connected components of the subgraph the job's processors induce on the machine's links.
pairwise_l1
    Mean over unordered pairs of the hop distance (L1 on a mesh; the shorter
    way round on wrapped dimensions).  Undefined (NaN) for p = 1.
mean_hops
    Mean over ordered pairs of the number of hops under the topology's
    routing (dimension-order routing on meshes and tori is minimal, so there
    it equals pairwise_l1; on other topologies ``topology.distance``, which
    the Topology contract defines as the route's hop count, tabulated once
    per machine up to :data:`MAX_TABLE_NODES` nodes — NaN beyond).
hop_bytes
    All-to-all hop-bytes: Σ over ordered pairs of hops × ``message_bytes``.

Spans use the allocator's ordering when it has one, else node-id order.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import InternalError, InvalidArgument
from ..topology.base import Grid, Subcubes, Topology

__all__ = [
    "linear_span",
    "ring_span",
    "job_locality",
    "locality_summary",
    "smallest_cube",
    "JOB_METRICS",
    "LocalityStream",
]

#: per-job metrics, in output order
JOB_METRICS = (
    "linear_span",
    "ring_span",
    "stretch_span",
    "bbox_volume",
    "bbox_sides",
    "bbox_cube",
    "bbox_cube_ratio",
    "components",
    "pairwise_l1",
    "mean_hops",
    "hop_bytes",
)


def linear_span(ranks: Any) -> int:
    """``max r − min r + 1`` (Leung et al. §2.3).

    >>> linear_span([3, 7, 4])
    5
    """
    r = np.asarray(ranks)
    return int(r.max() - r.min() + 1)


def ring_span(ranks: Any, n: int) -> int:
    """Ring span of ``ranks`` on a ring of ``n`` ranks, by the formula of §2.3.

    >>> ring_span([0, 1, 9], 10), ring_span([0, 5], 10), ring_span([4], 10)
    (3, 6, 1)
    """
    r = np.sort(np.asarray(ranks, dtype=np.int64))
    inner = int((np.diff(r) - 1).max()) if r.size > 1 else -1
    return int(n - max(inner, n - 1 - int(r[-1]) + int(r[0])))


def smallest_cube(p: int, dims: Sequence[int]) -> int:
    """Volume ``s^d`` of the smallest bounding cube an allocation of ``p`` processors can have on a box ``dims``."""
    d = len(dims)
    s = max(1, math.ceil(round(p ** (1.0 / d), 9)))
    while s > 1 and math.prod(min(s - 1, D) for D in dims) >= p:
        s -= 1
    while math.prod(min(s, D) for D in dims) < p:
        s += 1
    return s**d


#: largest machine (nodes) for which other topologies get an all-pairs hop table for pairwise metrics
MAX_TABLE_NODES = 4096


@lru_cache(maxsize=8)
def _adjacency(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency (indptr, indices) from ``topology.neighbors`` (cached on the immutable topology)."""
    rows = [np.asarray(sorted(topology.neighbors(v)), dtype=np.int64) for v in range(topology.n_nodes)]
    indptr = np.zeros(topology.n_nodes + 1, dtype=np.int64)
    np.cumsum([r.size for r in rows], out=indptr[1:])
    indices = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    return indptr, indices


@lru_cache(maxsize=4)
def _distance_matrix(topology: Topology) -> np.ndarray | None:
    """Hop counts under the topology's routing (``topology.distance``) for all pairs, or None if too large."""
    n = topology.n_nodes
    if n > MAX_TABLE_NODES:
        return None
    d = np.zeros((n, n), dtype=np.int32)
    for a in range(n):
        for b in range(a + 1, n):
            d[a, b] = d[b, a] = topology.distance(a, b)
    return d


def _coords(topology: Grid, nodes: np.ndarray) -> np.ndarray:
    """Coordinates of ``nodes`` by arithmetic on the ids (no per-machine table), one dimension at a time:
    numpy divides by a scalar several times faster than by a broadcast array."""
    out = np.empty((nodes.size, len(topology.dims)), dtype=np.int64)
    for i, (st, d) in enumerate(zip(topology.strides, topology.dims)):
        out[:, i] = (nodes // st) % d if st > 1 else nodes % d
    return out


_PATHS: dict[int, tuple[Any, Topology, np.ndarray]] = {}


def _on_a_path(topology: Grid, ordering: Any, ranks: np.ndarray, offsets: np.ndarray, lin: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Which jobs hold consecutive ranks (linear span = size) along which every step goes to a grid
    neighbour: such a job is a path, one connected piece.  Curves like Hilbert's and the snake step to a
    neighbour nearly everywhere, so a linear allocator's contiguous grants skip the graph search (the
    numpy path's shortcut; the compiled path searches every job by runs of consecutive ids, see
    :func:`_grid_stats_compiled`).

    The steps are looked at once per ordering: ``bad[r]`` counts the steps before rank ``r`` that do not
    go to a neighbour, and ranks ``a .. a+p-1`` form a path iff ``bad[a + p - 1] == bad[a]``."""
    key = id(ordering)
    got = _PATHS.get(key)
    if got is None or got[0] is not ordering or got[1] is not topology:
        n = topology.n_nodes
        node_at = np.arange(n, dtype=np.int64) if ordering is None else np.asarray(ordering.node_at_rank, dtype=np.int64)
        c = _coords(topology, node_at)
        step = np.abs(np.diff(c, axis=0))
        for i, (D, w) in enumerate(zip(topology.dims, topology.wrap)):
            if w:
                step[:, i] = np.minimum(step[:, i], D - step[:, i])
        bad = np.zeros(n, dtype=np.int64)
        np.cumsum(step.sum(axis=1) != 1, out=bad[1:])
        if len(_PATHS) >= 2:
            _PATHS.pop(next(iter(_PATHS)))
        got = _PATHS[key] = (ordering, topology, bad)
    bad = got[2]
    ok = (p > 0) & (lin == p)
    if not ok.any():
        return ok
    first = np.zeros(p.size, dtype=np.int64)
    has = p > 0
    first[has] = np.minimum.reduceat(ranks, offsets[:-1][has])
    last = np.where(ok, first + p - 1, first)
    return ok & (bad[last] == bad[first])


def _segment_ids(offsets: np.ndarray) -> np.ndarray:
    sizes = np.diff(offsets)
    return np.repeat(np.arange(sizes.size), sizes)


def _spans(ranks: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Linear and ring spans of every job (CSR), vectorised."""
    m = offsets.size - 1
    sizes = np.diff(offsets)
    lin = np.zeros(m, dtype=np.int64)
    ring = np.zeros(m, dtype=np.int64)
    has = sizes > 0
    if not has.any():
        return lin, ring
    seg = _segment_ids(offsets).astype(np.int64)
    # ranks sorted within each job: one sort of (job, rank) keys (jobs are in order; far faster than lexsort)
    r = seg * n + ranks.astype(np.int64)
    r.sort()
    r -= seg * n
    starts = offsets[:-1][has]
    ends = offsets[1:][has] - 1
    rmin = r[starts]
    rmax = r[ends]
    lin[has] = rmax - rmin + 1
    gaps = np.full(r.size, -1, dtype=np.int64)
    if r.size > 1:
        gaps[1:] = r[1:] - r[:-1] - 1
    gaps[offsets[:-1][has]] = -1  # no gap into a job's first rank
    inner = np.maximum.reduceat(gaps, starts) if starts.size else np.zeros(0, np.int64)
    ring[has] = n - np.maximum(inner, n - 1 - rmax + rmin)
    return lin, ring


def _histogram(c: np.ndarray, seg: np.ndarray, m: int, D: int) -> np.ndarray:
    """(jobs × D) counts of each coordinate value in one dimension."""
    return np.bincount(seg * D + c, minlength=m * D).reshape(m, D)


def _dim_extent(hist: np.ndarray, wrapped: bool) -> np.ndarray:
    """Per job, extent in one dimension: max − min + 1, or the shortest covering arc if wrapped."""
    m, D = hist.shape
    occ = hist > 0
    has = occ.any(axis=1)
    first = occ.argmax(axis=1)
    if not wrapped:
        last = D - 1 - occ[:, ::-1].argmax(axis=1)
        return np.where(has, last - first + 1, 0)
    maxgap = np.zeros(m, dtype=np.int64)
    last = np.full(m, -1, dtype=np.int64)
    for c in range(D):
        col = occ[:, c]
        gap = np.where(col & (last >= 0), c - last, 0)
        np.maximum(maxgap, gap, out=maxgap)
        last = np.where(col, c, last)
    np.maximum(maxgap, np.where(has, first + D - last, 0), out=maxgap)  # the wrap gap
    return np.where(has, D - maxgap + 1, 0)


def _pairwise_sum(hist: np.ndarray, wrapped: bool) -> np.ndarray:
    """Per job, Σ over unordered pairs of the distance in one dimension (from coordinate histograms)."""
    D = hist.shape[1]
    h = hist.astype(np.float64)
    a = np.arange(D)
    dist = np.abs(a[:, None] - a[None, :])
    if wrapped:
        dist = np.minimum(dist, D - dist)
    return ((h @ dist) * h).sum(axis=1) / 2.0


def _component_labels(k: int, a: np.ndarray, b: np.ndarray, *, use_scipy: bool | None = None) -> np.ndarray:
    """For a graph on ``0..k-1`` with edges ``(a[i], b[i])``: each vertex's smallest component member.

    SciPy's ``connected_components`` is used when SciPy is installed (it is
    not a dependency); otherwise min-label propagation with pointer jumping
    in numpy.  The two are compared by the tests.
    """
    if use_scipy is None or use_scipy:
        try:
            from scipy.sparse import coo_array
            from scipy.sparse.csgraph import connected_components
        except ImportError:
            if use_scipy:
                raise
        else:
            g = coo_array((np.ones(a.size, dtype=np.int8), (a, b)), shape=(k, k)).tocsr()
            _, comp = connected_components(g, directed=False)
            first = np.full(comp.max() + 1 if k else 0, k, dtype=np.int64)
            np.minimum.at(first, comp, np.arange(k))
            return first[comp]
    label = np.arange(k)
    if a.size:
        a, b = np.concatenate([a, b]), np.concatenate([b, a])  # both directions
        by = np.argsort(a, kind="stable")
        a, b = a[by], b[by]
        heads = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
        owners = a[heads]
        while True:
            lo = np.minimum.reduceat(label[b], heads)
            new = label.copy()
            np.minimum(new[owners], lo, out=lo)
            new[owners] = lo
            new = new[new]  # pointer jumping: labels are vertices of the same component, label[x] <= x
            new = new[new]
            if np.array_equal(new, label):
                break
            label = new
    return label


try:  # components on grids and hypercubes, compiled (an optional extension: without it numpy does the same)
    import topoalloc.metrics._cmetrics as _cmetrics
except ImportError:  # pragma: no cover - built without a C compiler
    _cmetrics = None

#: work arrays of the compiled components (stamp, index, last token) per machine size, the last two sizes
_WORK: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _grid_form(topology: Topology) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """``(dims, strides, wrap)`` of a grid or hypercube (a hypercube is the grid 2 x 2 x ... x 2), else None."""
    if isinstance(topology, Subcubes):
        return (2,) * topology.n, tuple(1 << b for b in range(topology.n)), (0,) * topology.n
    if isinstance(topology, Grid):
        return tuple(topology.dims), tuple(topology.strides), tuple(int(w) for w in topology.wrap)
    return None


def _work(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compiled components' work arrays for machines of ``n`` nodes: ``(stamp, index, last token)``."""
    work = _WORK.get(n)
    if work is None:
        if len(_WORK) >= 2:
            _WORK.pop(next(iter(_WORK)))
        work = _WORK[n] = (np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32), np.zeros(1, dtype=np.int64))
    return work


def _components_compiled(nodes: np.ndarray, seg: np.ndarray, m: int, topology: Topology) -> np.ndarray | None:
    """:func:`_components` by union-find in C on grids and hypercubes (``None``: not built, or another topology)."""
    form = _grid_form(topology)
    if _cmetrics is None or form is None or len(form[0]) > 32:
        return None
    work = _work(topology.n_nodes)
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(seg, minlength=m), out=offsets[1:])
    out = np.zeros(m, dtype=np.int64)
    coords = _coord_table(topology) if isinstance(topology, Grid) else None  # (hypercubes: shifts already)
    _cmetrics.components(np.ascontiguousarray(nodes, dtype=np.int64), offsets, *form, *work, out, coords)
    return out


def _components(nodes: np.ndarray, seg: np.ndarray, m: int, topology: Topology, *, compiled: bool = True) -> np.ndarray:
    """Connected components of each job's induced subgraph (``seg``: each node's job, non-decreasing).

    On grids and hypercubes the compiled union-find (``_cmetrics.c``) counts them; otherwise, or with
    ``compiled=False``, label propagation with pointer jumping in numpy (the reference; tests compare them).
    """
    k = nodes.size
    if k == 0:
        return np.zeros(m, dtype=np.int64)
    if compiled:
        got = _components_compiled(nodes, seg, m, topology)
        if got is not None:
            return got
    n = topology.n_nodes
    key = seg.astype(np.int64) * n + nodes
    if k < 2 or bool((key[1:] > key[:-1]).all()):  # recorded allocations are sorted within each job
        order = np.arange(k)
        skey = key
    else:
        order = np.argsort(key, kind="stable")
        skey = key[order]
    src_list, dst_list = [], []
    if isinstance(topology, Subcubes):
        for b in range(topology.n):  # neighbours differ in one bit
            src_list.append(np.arange(k))
            dst_list.append(seg.astype(np.int64) * n + (nodes ^ (1 << b)))
    elif isinstance(topology, Grid):
        coords = _coords(topology, nodes)
        for i, (D, st, w) in enumerate(zip(topology.dims, topology.strides, topology.wrap)):
            if D == 1:
                continue
            ci = coords[:, i]
            nb = np.where(ci + 1 < D, nodes + st, np.where(w, nodes - (D - 1) * st, -1))
            ok = nb >= 0
            src_list.append(np.flatnonzero(ok))
            dst_list.append(seg[ok].astype(np.int64) * n + nb[ok])
    else:
        indptr, indices = _adjacency(topology)
        deg = indptr[nodes + 1] - indptr[nodes]
        src = np.repeat(np.arange(k), deg)
        # positions indptr[v] .. indptr[v+1]-1 for every entry, concatenated
        starts = np.repeat(indptr[nodes] - np.cumsum(deg) + deg, deg)
        nbr = indices[starts + np.arange(src.size)]
        src_list.append(src)
        dst_list.append(seg[src].astype(np.int64) * n + nbr)
    src = np.concatenate(src_list) if src_list else np.zeros(0, np.int64)
    dkey = np.concatenate(dst_list) if dst_list else np.zeros(0, np.int64)
    pos = np.minimum(np.searchsorted(skey, dkey), k - 1)
    hit = skey[pos] == dkey
    a, b = src[hit], order[pos[hit]]
    label = _component_labels(k, a, b)
    roots = label == np.arange(k)
    return np.bincount(seg[roots], minlength=m).astype(np.int64)


#: most entries (nodes x dimensions) of a machine's coordinate table for the compiled metrics (2 bytes each)
COORD_TABLE_ENTRIES = 1 << 23

_COORD_TABLES: dict[tuple, np.ndarray] = {}


def _coord_table(topology: Grid) -> np.ndarray | None:
    """Every node's coordinates (uint16, n x d) for the compiled metrics to look up rather than divide;
    None on machines too large for :data:`COORD_TABLE_ENTRIES` (or sides beyond 16 bits).  The last two kept."""
    n, d = topology.n_nodes, len(topology.dims)
    if n * d > COORD_TABLE_ENTRIES or max(topology.dims) > 0xFFFF:
        return None
    key = (tuple(topology.dims), tuple(topology.strides))
    got = _COORD_TABLES.get(key)
    if got is None:
        if len(_COORD_TABLES) >= 2:
            _COORD_TABLES.pop(next(iter(_COORD_TABLES)))
        got = _COORD_TABLES[key] = _coords(topology, np.arange(n, dtype=np.int64)).astype(np.uint16)
        got.flags.writeable = False
    return got


def _grid_compiled(topology: Topology) -> bool:
    """Whether :func:`job_locality` measures jobs on ``topology`` in C (``_cmetrics.grid_stats``)."""
    return _cmetrics is not None and isinstance(topology, Grid) and len(topology.dims) <= 32


def _grid_stats_compiled(topology: Grid, nodes: np.ndarray, offsets: np.ndarray, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Linear and ring spans, per-dimension extents, pairwise distance sums and connected components of
    every job on a grid, job by job in C (``_cmetrics.grid_stats``): the definitions of :func:`_spans`,
    :func:`_dim_extent`, :func:`_pairwise_sum` and :func:`_components`, in exact integers (tests compare
    them with the numpy path).  A job that fills its bounding box is one piece without a search; the others
    are searched by union-find over runs of consecutive ids (see ``count_components`` in ``_cmetrics.c``)."""
    m = offsets.size - 1
    d = len(topology.dims)
    spans = np.empty((m, 2), dtype=np.int64)
    ext = np.empty((m, d), dtype=np.int64)
    pairs = np.empty(m, dtype=np.int64)
    comps = np.empty(m, dtype=np.int64)
    assert _cmetrics is not None
    _cmetrics.grid_stats(nodes, offsets, np.ascontiguousarray(ranks, dtype=np.int64), topology.n_nodes, tuple(topology.dims),
                         tuple(topology.strides), tuple(int(w) for w in topology.wrap), _coord_table(topology), spans, ext, pairs,
                         comps, *_work(topology.n_nodes))
    return spans[:, 0], spans[:, 1], ext, pairs, comps


def _cube_compiled(topology: Topology) -> bool:
    """Whether :func:`job_locality` measures spans and bit counts on ``topology`` in C (``_cmetrics.cube_stats``)."""
    return _cmetrics is not None and isinstance(topology, Subcubes) and hasattr(_cmetrics, "cube_stats")


def _cube_stats_compiled(topology: Topology, nodes: np.ndarray, offsets: np.ndarray, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Linear and ring spans and, per job and bit, how many of its nodes have the bit set, on a hypercube,
    job by job in C (``_cmetrics.cube_stats``; the bit counts over runs of consecutive ids, O(runs x bits)).
    ``None``: not a hypercube, not built, or some job's nodes not sorted (the numpy path then)."""
    if not _cube_compiled(topology):
        return None
    assert _cmetrics is not None and isinstance(topology, Subcubes)
    m = offsets.size - 1
    spans = np.empty((m, 2), dtype=np.int64)
    ones = np.empty((m, topology.n), dtype=np.int64)
    if not _cmetrics.cube_stats(nodes, offsets, np.ascontiguousarray(ranks, dtype=np.int64), topology.n_nodes, topology.n, spans, ones):
        return None
    return spans[:, 0], spans[:, 1], ones


def job_locality(result: Any = None, *, topology: Topology | None = None, allocations: tuple[np.ndarray, np.ndarray] | None = None, ordering: Any = None, sizes: Any = None, message_bytes: float = 1.0, compiled: bool = True) -> dict[str, np.ndarray]:
    """Every per-job metric of :data:`JOB_METRICS`, as arrays indexed like the jobs.

    Parameters
    ----------
    result : SimulationResult, optional
        Supplies the topology (from its machine spec), the recorded
        allocations and the allocator's ordering; or pass them explicitly:
    topology, allocations (CSR pair ``(nodes, offsets)``), ordering
    message_bytes : float
        Bytes each process sends each other process in the all-to-all (hop-bytes).
    compiled : bool
        On grids, the spans, extents and pairwise sums job by job in C when the
        extension is built (``_cmetrics.grid_stats``); ``False``: the vectorised
        numpy path, the reference (same numbers, tested).

    Returns
    -------
    dict of name -> array
        Grid-only metrics (bounding box, cube) are NaN on other topologies;
        ``pairwise_l1`` and ``mean_hops`` are NaN for single-processor jobs.
    """
    if result is not None:
        topology = topology or result.topology
        allocations = allocations or result.allocations
        ordering = ordering if ordering is not None else getattr(result, "ordering", None)
    if allocations is None:
        raise InvalidArgument("allocations", None, "recorded allocations (simulate with record_allocations=True)")
    if topology is None:
        raise InvalidArgument("topology", None, "the machine the allocations are on")
    flat, offsets = allocations
    nodes = np.asarray(flat, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    m = offsets.size - 1
    n = topology.n_nodes
    p = np.diff(offsets)
    ranks = nodes if ordering is None else ordering.rank_of[nodes]
    fast = compiled and _grid_compiled(topology)
    cube_ones = None  # on a hypercube, measured in C: each job's count of nodes with each bit set
    comps_i = None  # on a grid, measured in C with the rest
    if fast:
        assert isinstance(topology, Grid)
        lin, ring, ext_i, pair_i, comps_i = _grid_stats_compiled(topology, nodes, offsets, ranks)
    else:
        got = _cube_stats_compiled(topology, nodes, offsets, ranks) if compiled else None
        if got is not None:
            lin, ring, cube_ones = got
        else:
            lin, ring = _spans(ranks, offsets, n)
    out: dict[str, np.ndarray] = {"linear_span": lin.astype(float), "ring_span": ring.astype(float)}
    with np.errstate(invalid="ignore", divide="ignore"):
        out["stretch_span"] = np.where(p > 0, ring / np.maximum(p, 1), np.nan)
    pairs = p * (p - 1) / 2.0
    if isinstance(topology, Grid):
        if fast:
            ext_a = ext_i.astype(float)
            pair_sum = pair_i.astype(float)
        else:
            coords = _coords(topology, nodes)
            seg = _segment_ids(offsets)
            ext = []
            pair_sum = np.zeros(m)
            for i, (D, w) in enumerate(zip(topology.dims, topology.wrap)):
                hist = _histogram(coords[:, i], seg, m, D)
                ext.append(_dim_extent(hist, w))
                pair_sum += _pairwise_sum(hist, w)
            ext_a = np.stack(ext, axis=1).astype(float)
        d = len(topology.dims)
        out["bbox_volume"] = ext_a.prod(axis=1)
        out["bbox_sides"] = ext_a.sum(axis=1)
        out["bbox_cube"] = ext_a.max(axis=1) ** d
        uniq, inv = np.unique(np.maximum(p, 1), return_inverse=True)
        mins = np.array([smallest_cube(int(s), topology.dims) for s in uniq.tolist()], dtype=float)[inv]
        out["bbox_cube_ratio"] = out["bbox_cube"] / mins
        hop_sum = pair_sum
        # a job that fills its bounding box (arcs on wrapped dimensions) is one connected
        # piece: only the others need the graph search (subtorus allocators: none do); so is
        # a job on consecutive ranks whose every step is to a neighbour (a path); the compiled
        # path has counted every job's components already (without a search for a full box)
        full_box = None if fast else (out["bbox_volume"] == p) | _on_a_path(topology, ordering, ranks, offsets, lin, p)
    else:
        full_box = None
        nanv = np.full(m, np.nan)
        for key in ("bbox_volume", "bbox_sides", "bbox_cube", "bbox_cube_ratio"):
            out[key] = nanv.copy()
        hop_sum = np.zeros(m)
        if isinstance(topology, Subcubes):
            # hops are a popcount: over unordered pairs, bit b differs for (ones in b) x (zeros in b) pairs;
            # every bit of every node at once, summed per job by one reduceat over the jobs' first nodes
            has = p > 0
            if has.any():
                if cube_ones is not None:
                    ones = cube_ones.astype(float)
                else:
                    bits = (nodes[:, None] >> np.arange(topology.n, dtype=np.int64)) & 1
                    ones = np.zeros((m, topology.n))
                    ones[has] = np.add.reduceat(bits, offsets[:-1][has], axis=0)
                hop_sum = (ones * (p[:, None] - ones)).sum(axis=1)
                # a job of 2^k distinct nodes whose ids vary in exactly k bits is a whole subcube: one piece
                varying = ((ones > 0) & (ones < p[:, None])).sum(axis=1)
                full_box = has & (p == (np.int64(1) << varying))
        else:
            dist = _distance_matrix(topology)
            if dist is None:
                hop_sum[:] = np.nan
            else:
                for j in np.flatnonzero(p >= 2).tolist():
                    js = nodes[offsets[j] : offsets[j + 1]]
                    hop_sum[j] = dist[np.ix_(js, js)].sum() / 2.0
    if comps_i is not None:
        out["components"] = comps_i.astype(float)
    elif full_box is None or not full_box.any():
        out["components"] = _components(nodes, _segment_ids(offsets), m, topology).astype(float)
    else:
        seg = _segment_ids(offsets)
        rest = ~full_box[seg]
        comps = _components(nodes[rest], seg[rest], m, topology).astype(float)
        comps[full_box & (p > 0)] = 1.0
        out["components"] = comps
    with np.errstate(invalid="ignore", divide="ignore"):
        out["pairwise_l1"] = np.where(p >= 2, hop_sum / np.maximum(pairs, 1), np.nan)
        out["mean_hops"] = out["pairwise_l1"].copy()
    out["hop_bytes"] = 2.0 * hop_sum * message_bytes
    return out


def _agg(values: np.ndarray, size: np.ndarray, run: np.ndarray) -> dict[str, float]:
    ok = np.isfinite(values)
    if not ok.any():
        return {"mean": float("nan"), "max": float("nan"), "mean_per_proc": float("nan"), "runtime_weighted_mean": float("nan"), "sum_x_runtime": float("nan")}
    v, s, t = values[ok], size[ok].astype(float), run[ok].astype(float)
    tw = float(t.sum())
    return {
        "mean": float(v.mean()),
        "max": float(v.max()),
        "mean_per_proc": float((v / s).mean()),
        "runtime_weighted_mean": float((v * t).sum() / tw) if tw > 0 else float(v.mean()),
        "sum_x_runtime": float((v * t).sum()),
    }


def locality_summary(result: Any, **kwargs: Any) -> dict[str, Any]:
    """Aggregates of every per-job metric, plus ``mean_pairwise_l1``.

    ``mean_pairwise_l1`` is the mean, over jobs with at least two processors,
    of each job's average pairwise L1 distance (SST's figure).  Each metric
    gets its mean, maximum, mean of value / size, run-time-weighted mean and
    Σ value × run time (§2.3's "sums weighted by the processing times").
    """
    per = job_locality(result, **kwargs)
    size = np.asarray(result.size)
    run = np.asarray(getattr(result, "actual_run", None) if getattr(result, "actual_run", None) is not None else result.run)
    l1 = per["pairwise_l1"]
    multi = np.isfinite(l1)
    out = {
        "mean_pairwise_l1": float(l1[multi].mean()) if multi.any() else float("nan"),
        "locality": {name: _agg(per[name], size, run) for name in JOB_METRICS},
    }
    return out


class _Running:
    """Running aggregates of one per-job metric over the finite values seen (see :func:`_agg`)."""

    __slots__ = ("count", "total", "high", "per_proc", "weighted", "weight")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.high = -math.inf
        self.per_proc = 0.0
        self.weighted = 0.0
        self.weight = 0.0

    def add(self, values: np.ndarray, size: np.ndarray, run: np.ndarray) -> None:
        ok = np.isfinite(values)
        if not ok.any():
            return
        v, s, t = values[ok], size[ok].astype(float), run[ok].astype(float)
        self._absorb(int(v.size), float(v.sum()), float(v.max()), float((v / s).sum()), float((v * t).sum()), float(t.sum()))

    def _absorb(self, count: int, total: float, high: float, per_proc: float, weighted: float, weight: float) -> None:
        """Fold in the sums of a run's finite values (their count, sum, max, sum per processor, sum × run time, and
        the sum of their run times)."""
        self.count += count
        self.total += total
        self.high = max(self.high, high)
        self.per_proc += per_proc
        self.weighted += weighted
        self.weight += weight

    @staticmethod
    def add_block(aggs: "list[_Running]", table: np.ndarray, size: np.ndarray, run: np.ndarray) -> None:
        """``aggs[i].add(table[i], size, run)`` for every row i, in one pass over the rows with no value that is
        not finite: numpy sums each row of a C-contiguous table as it sums that row alone, pairwise along it, so
        the totals are the same to the last bit; the other rows one by one.  (Runs of a few jobs of many nodes
        each, as on a machine of 65,536 nodes, made twelve adds of a handful of values per run, most of a
        run's time.)"""
        table = np.ascontiguousarray(table, dtype=np.float64)
        ok = np.isfinite(table)
        whole = ok.all(axis=1)
        if whole.any():
            s, t = size.astype(float), run.astype(float)
            rows = table if whole.all() else table[whole]
            total, high = rows.sum(axis=1).tolist(), rows.max(axis=1).tolist()
            per_proc, weighted = (rows / s).sum(axis=1).tolist(), (rows * t).sum(axis=1).tolist()
            weight = float(t.sum())
            n = int(table.shape[1])
            for i, a in enumerate(np.flatnonzero(whole).tolist()):
                aggs[a]._absorb(n, total[i], high[i], per_proc[i], weighted[i], weight)
        for a in np.flatnonzero(~whole).tolist():
            aggs[a].add(table[a], size, run)

    def result(self) -> dict[str, float]:
        if not self.count:
            nan = float("nan")
            return {"mean": nan, "max": nan, "mean_per_proc": nan, "runtime_weighted_mean": nan, "sum_x_runtime": nan}
        mean = self.total / self.count
        return {
            "mean": mean,
            "max": self.high,
            "mean_per_proc": self.per_proc / self.count,
            "runtime_weighted_mean": self.weighted / self.weight if self.weight > 0 else mean,
            "sum_x_runtime": self.weighted,
        }


def _immutable(a: np.ndarray) -> bool:
    """Read-only and owning its data (so no other array can change it): the arrays the stream remembers,
    the same rule as the base allocator's for grants it keeps uncopied (:class:`~topoalloc.alloc.base.Grant`)."""
    return not a.flags.writeable and a.flags.owndata


class LocalityStream:
    """Locality metrics of jobs as they finish, in batches: memory bounded by the batch, not the run.

    The simulation hands every finished job's nodes to :meth:`add`; every
    :attr:`batch_nodes` nodes (or :attr:`batch_jobs` jobs) the batch is
    measured with the vectorised :func:`job_locality` and folded into
    running aggregates, so a run of a
    million jobs on a machine of a hundred thousand nodes keeps a few arrays
    of one batch.  :meth:`summary` has the same keys as
    :func:`locality_summary` (the aggregates are the same, summed batch by
    batch, so they may differ from it in the last bits).

    Parameters
    ----------
    topology : Topology
    ordering : Ordering, optional
        The allocator's curve (spans are measured in it), else node ids.
    batch_nodes : int, optional
        Nodes gathered before a batch is measured.  Default: 1 Mi nodes on
        grids and hypercubes measured in C (``_cmetrics``: work per job, so
        fewer, larger batches only save the per-batch work; on Fugaku-size
        machines a job has ~18,000 nodes, and batches of 64 Ki nodes were
        measured four jobs at a time), 64 Ki nodes elsewhere (numpy's
        temporaries grow with the batch: a hypercube's bits in numpy are
        8 bytes × dimension per node, and past the caches larger batches were
        slower: NASA on hypercube:17 took 76 s with 1 Mi nodes, 40 s with 64 Ki).
    batch_jobs : int
        Jobs gathered before a batch is measured, whatever their nodes.

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> s = LocalityStream(parse_machine("mesh:4x4"))
    >>> s.add(np.array([0, 1, 4, 5]), 10.0)
    >>> s.add(np.array([2, 15]), 10.0)
    >>> s.summary()["mean_pairwise_l1"]  # (4/3 + 4) / 2: a 2x2 square, and two nodes 4 hops apart
    2.6666666666666665
    """

    #: most nodes of the read-only arrays whose metrics are remembered (kept alive by it; then started afresh)
    MEMO_NODES = 1 << 22

    def __init__(self, topology: Topology, ordering: Any = None, *, batch_nodes: int | None = None, batch_jobs: int = 1 << 14):
        self.topology = topology
        self.ordering = ordering
        if batch_nodes is None:
            batch_nodes = 1 << 20 if _grid_compiled(topology) or _cube_compiled(topology) else 1 << 16
        self.batch_nodes = batch_nodes
        self.batch_jobs = batch_jobs
        self._nodes: list[np.ndarray] = []
        self._run: list[float] = []
        self._pending = 0
        self._aggs = {name: _Running() for name in JOB_METRICS}
        # measured jobs not yet summed (see FOLD_NODES): pieces of a run, each its table of metrics (a row each, a
        # column per job), its jobs' sizes and run times; and how many nodes and jobs they hold
        self._carry: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._carry_nodes = 0
        self._carry_jobs = 0
        self.jobs = 0
        # metrics of immutable node arrays measured before, by identity (the array is kept, so its id is
        # not reused): allocators hand out the same immutable array for every grant of one box
        self._memo: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._memo_nodes = 0

    def add(self, nodes: np.ndarray, run: float) -> None:
        """One finished job: its nodes and its run (service) time."""
        self._nodes.append(nodes)
        self._run.append(run)
        self._pending += int(nodes.size)  # (remembered arrays too: batches, and so the sums, do not depend on the memo)
        self.jobs += 1
        if self._pending >= self.batch_nodes or len(self._nodes) >= self.batch_jobs:
            self.flush()

    def _measure(self, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
        """:func:`job_locality` of the jobs ``arrays``, each job's row looked up when the same read-only
        array was measured before (the metrics are a function of the node set and the ordering)."""
        m = len(arrays)
        memo = self._memo
        rows: list[np.ndarray | None] = [None] * m
        todo = []  # jobs to measure, and which of `part` (the distinct arrays among them) each is
        which = []
        part: list[np.ndarray] = []
        seen: dict[int, int] = {}
        for j, a in enumerate(arrays):
            hit = memo.get(id(a))
            if hit is not None and hit[0] is a:
                rows[j] = hit[1]
                continue
            todo.append(j)
            if not _immutable(a):  # may change: measured as it is now, every time
                which.append(len(part))
                part.append(a)
            else:
                k = seen.get(id(a))
                if k is None:
                    k = seen[id(a)] = len(part)
                    part.append(a)
                which.append(k)
        if not todo:
            table = np.stack(rows)  # type: ignore[arg-type]
            return {name: np.ascontiguousarray(table[:, i]) for i, name in enumerate(JOB_METRICS)}
        sizes = np.fromiter((a.size for a in part), dtype=np.int64, count=len(part))
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        flat = np.concatenate(part).astype(np.int64)
        per = job_locality(topology=self.topology, allocations=(flat, offsets), ordering=self.ordering)
        computed = np.stack([per[name] for name in JOB_METRICS], axis=1)
        if len(todo) == m and len(part) == m:
            table = computed
        else:
            table = np.empty((m, len(JOB_METRICS)))
            table[todo] = computed[which]
            hits = [j for j in range(m) if rows[j] is not None]
            if hits:
                table[hits] = np.stack([rows[j] for j in hits])  # type: ignore[misc]
        for r, a in enumerate(part):
            if _immutable(a) and a.size <= self.MEMO_NODES:
                if self._memo_nodes + a.size > self.MEMO_NODES:
                    memo.clear()
                    self._memo_nodes = 0
                memo[id(a)] = (a, computed[r].copy())
                self._memo_nodes += a.size
        return {name: np.ascontiguousarray(table[:, i]) for i, name in enumerate(JOB_METRICS)}

    def room(self) -> tuple[int, int]:
        """How many more nodes and jobs may come before the gathered batch is measured: :meth:`add` measures
        it right after the job that brings the nodes to :attr:`batch_nodes` or the jobs to :attr:`batch_jobs`.
        A caller that hands over jobs in runs ending exactly there (:meth:`add_batch`) forms the same batches."""
        return self.batch_nodes - self._pending, self.batch_jobs - len(self._nodes)

    def add_batch(self, flat: np.ndarray, offsets: np.ndarray, run: np.ndarray) -> None:
        """Jobs finished one after another, job ``i`` on nodes ``flat[offsets[i]:offsets[i + 1]]`` (int64,
        sorted, fresh): the same as :meth:`add` of each in turn, so the same batches and the same sums.

        When the jobs end exactly where :meth:`add` would measure (see :meth:`room`), they are measured
        straight from ``flat``, without an array per job (:meth:`measure_rows`, :meth:`add_rows`);
        otherwise (a last, partial run of jobs included) they are added one by one, as copies."""
        m = len(offsets) - 1
        if m <= 0:
            return
        sizes = np.diff(np.asarray(offsets, dtype=np.int64))
        if self._aligned(sizes, final=False):
            o0 = int(offsets[0])
            self.add_rows(self.measure_rows(flat[o0 : int(offsets[-1])], np.asarray(offsets, dtype=np.int64) - o0), sizes, run)
            return
        bounds = offsets.tolist()
        runs = np.asarray(run, dtype=np.float64).tolist()
        for i in range(m):
            self.add(flat[bounds[i] : bounds[i + 1]].copy(), runs[i])

    def measure_rows(self, flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The metrics of the jobs ``flat[offsets[i]:offsets[i + 1]]``, one row per job, columns in the order
        of :data:`JOB_METRICS`: the table :meth:`flush` measures (a job's row depends on its nodes alone)."""
        per = job_locality(topology=self.topology, allocations=(flat, offsets), ordering=self.ordering)
        return np.stack([per[name] for name in JOB_METRICS], axis=1)

    def _aligned(self, sizes: np.ndarray, final: bool) -> bool:
        m = sizes.size
        before = int(sizes[:-1].sum())
        return not self._nodes and before < self.batch_nodes and m - 1 < self.batch_jobs and (final or before + int(sizes[-1]) >= self.batch_nodes or m >= self.batch_jobs)

    def add_rows(self, table: np.ndarray, sizes: np.ndarray, run: np.ndarray, *, final: bool = False) -> None:
        """Jobs already measured (``table``: :meth:`measure_rows`' rows) that end exactly where :meth:`add`
        would measure a batch (:meth:`room`), or, with ``final``, the last jobs of the run: folded as
        :meth:`flush` folds that batch.

        Raises
        ------
        InternalError
            If the jobs do not form such a batch (the sums would then differ from job-by-job adds)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        if not sizes.size:
            return
        if not self._aligned(sizes, final):
            raise InternalError(f"add_rows: {sizes.size} jobs of {int(sizes.sum())} nodes do not form the stream's next batch (room {self.room()})")
        self.jobs += int(sizes.size)
        self._fold({name: table[:, i] for i, name in enumerate(JOB_METRICS)}, sizes, np.asarray(run, dtype=np.float64))

    #: The aggregates are summed over runs of jobs, each ending right after the job that brings its nodes to
    #: FOLD_NODES or its jobs to FOLD_JOBS, whatever batches the jobs were measured in: so the sums are the same
    #: to the last bit whatever :attr:`batch_nodes` and :attr:`batch_jobs` are (their defaults differ with and
    #: without the compiled extension, and numpy sums an array pairwise).  The values are the pure-Python
    #: path's default batch, whose sums are as before.
    FOLD_NODES = 1 << 16
    FOLD_JOBS = 1 << 14

    def _fold(self, per: dict[str, np.ndarray], sizes: np.ndarray, run: np.ndarray) -> None:
        block = np.stack([per[name] for name in JOB_METRICS])  # (metrics, jobs): a run's table is a slice of its rows
        m = int(sizes.size)
        nodes = np.cumsum(sizes)  # the nodes of the jobs up to each one
        i = 0
        while i < m:
            before = int(nodes[i - 1]) if i else 0
            # the job that ends the run: the first from i whose nodes, or whose count, bring the run (its carry
            # included, always short of both) to FOLD_NODES or FOLD_JOBS; m if none does
            e = min(int(np.searchsorted(nodes, before + self.FOLD_NODES - self._carry_nodes, side="left")), i + self.FOLD_JOBS - self._carry_jobs - 1)
            k = min(e + 1, m)
            self._carry.append((block[:, i:k], sizes[i:k], run[i:k]))
            if e < m:
                self._sum_carry(self._aggs)
                self._carry = []
                self._carry_nodes = self._carry_jobs = 0
            else:
                self._carry_nodes += int(nodes[-1]) - before
                self._carry_jobs += m - i
            i = k

    def _sum_carry(self, aggs: dict[str, _Running]) -> None:
        """Fold the jobs carried into ``aggs`` as one run (the carry itself unchanged)."""
        parts = self._carry
        if len(parts) == 1:
            table, size, run = parts[0]
        else:
            table = np.concatenate([p[0] for p in parts], axis=1)  # (metrics, jobs), each metric a row
            size, run = np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])
        size = np.maximum(size, 1)
        _Running.add_block([aggs[name] for name in JOB_METRICS], table, size, run)

    def flush(self) -> None:
        """Measure the jobs gathered so far and fold them into the aggregates."""
        if not self._nodes:
            return
        sizes = np.fromiter((a.size for a in self._nodes), dtype=np.int64, count=len(self._nodes))
        per = self._measure(self._nodes)
        self._fold(per, sizes, np.asarray(self._run, dtype=np.float64))
        self._nodes.clear()
        self._run.clear()
        self._pending = 0

    def summary(self) -> dict[str, Any]:
        """``{"mean_pairwise_l1": ..., "locality": {metric: aggregates}}`` over every job added."""
        self.flush()
        aggs = self._aggs
        if self._carry:  # (summed into copies: a summary asked mid-run leaves the runs as they were)
            aggs = {name: copy.copy(a) for name, a in aggs.items()}
            self._sum_carry(aggs)
        # (the mean pairwise L1 distance is the pairwise_l1 metric's mean, summed once)
        return {"mean_pairwise_l1": aggs["pairwise_l1"].result()["mean"], "locality": {name: aggs[name].result() for name in JOB_METRICS}}
