"""Slices of whole units: TPU pods (static torus or optical circuit switches), Tofu-D, Blue Gene/Q.

One coarse-grained allocator serves the machines of
:mod:`topoalloc.topology.units`: a job of ``p`` nodes needs ``n = ⌈p /
unit⌉`` units, a *shape rule* turns ``n`` into a volume ``V ≥ n`` and the
box shapes of that volume it may take, and an *allocation rule* places them:

``rule=static``
    The slice is a box of units, contiguous in the unit grid (round the wrap
    links where the machine has them).  Its own torus has wrap-around links
    only in the dimensions it spans (and, on Blue Gene/Q, in those where it
    is one midplane thick, since a midplane loops its links back); elsewhere
    it is a mesh.  This is the static 3-D torus the TPU v4 paper compares
    its optical switches with, a Blue Gene/Q partition (a box of midplanes,
    a torus in a dimension only when it uses the whole cable loop) and a
    Fugaku job (a 3-D rectangle of Tofu units).
``rule=ocs``
    Optical circuit switching (Jouppi et al., ISCA 2023, §2): any ``V`` free
    units are wired into the slice's torus, wrap-around included, so a
    request fits iff ``V`` units are free.  With ``twist=true`` on a TPU pod,
    slices of ``k × k × 2k`` and ``k × 2k × 2k`` chips are wired as twisted
    tori, as Cloud TPU v4 offers them (:mod:`topoalloc.topology.slicenet`).

Shape rules (``shapes=``), each naming how a size becomes a slice:

``pow2``
    TPU slices: the number of units rounded up to a power of two, as the
    most cubic box (4×4×8, 4×8×8, 8×8×8, 8×8×16, ... chips in cubes of
    4×4×4); if no box of that volume fits the grid, the smallest volume above
    it that does.  The default on TPU pods.
``cubic``
    The least volume ``≥ n`` of a box that fits the grid, as its most cubic
    shape (smallest difference between the longest and shortest side, ties
    to the first in order).  The default on Tofu and Blue Gene/Q.
``all``
    Every box shape of that least volume.

The candidates are the chosen shape's orientations that fit the grid, in
lexicographic order of their sides; the static rule places the first
candidate that has a free position, at its first free position in unit-id
order (first grid dimension fastest).  Both rules give a job the same
number of units, so they differ only in where the units may lie.

Probes (:mod:`topoalloc.alloc.probes`), exact and cheap, on the unit grid
(never on nodes, never by replay):

* static: each unit gets the number of releases after which it is free
  (0 if free now, none if never); the box maximum of that array over every
  placement of every candidate shape, by sliding-window maxima one
  dimension at a time (a doubling table per dimension, shared between
  shapes with equal leading sides), gives ``earliest_fit`` in one sweep;
  ``can_allocate`` is the same on the busy map.  The reservation guard finds
  the head's placements in the units free at the shadow time once; a
  candidate keeps the reservation iff its box (where the allocator would put
  it, asked without taking) misses one of them — arithmetic on offsets.
* ocs: counts of free units, as EASY's extra nodes.

The box searches run compiled when the extension is built (``_cboxes.c``):
the map "free for ``s_0`` units along dimension 0" is made first, then from
it "... and for ``s_1`` along dimension 1", and so on — O(d × units) per
shape whatever its size, stopping at the first dimension that leaves
nothing free.  The maps are bit sets (one 64-bit word per line of the first
dimension, windows ANDed by doubling) when the first side is at most 64
units, else bytes from runs of free units.  ``earliest_fit`` asks at the
release that frees the head's volume in all, then at steps doubling from
it, then bisects.  The numpy searches above (placement tables for small
machines, sliding windows for large ones) are the reference: same boxes, in
the same order (tested against each other and against boxes enumerated
from the definition).

Requests of one slice volume ``V`` are interchangeable (``fit_key`` = ``V``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Literal, NamedTuple, Self

import numpy as np

from ..errors import InvalidArgument
from ..registry import ALLOCATORS
from ..topology.base import Topology
from ..topology.slicenet import slice_net, twist_kind
from ..topology.units import UnitTorus
from .base import Allocation, Allocator, Grant, Memo, Request
from .probes import ReservationGuard

try:  # the compiled box search (an optional extension: without a C compiler the numpy search runs, same answers)
    import topoalloc.alloc._cboxes as _cboxes
except ImportError:  # pragma: no cover - depends on the build
    _cboxes = None

#: the slice allocator searches boxes with the compiled extension when it is built and this is true
#: (tests turn it off to check the numpy searches, which are the reference, against the compiled one)
USE_COMPILED = True

__all__ = ["SliceAllocator", "slice_shapes", "SHAPE_RULES"]

SHAPE_RULES = ("pow2", "cubic", "all")
_NEVER = np.iinfo(np.int32).max


def slice_shapes(topology: UnitTorus, n: int, rule: str) -> tuple[int, np.ndarray]:
    """The volume ``V`` and the candidate box shapes ``(m, d)`` for a job of ``n`` units under a shape rule.

    >>> from topoalloc.topology import parse_machine
    >>> v, s = slice_shapes(parse_machine("tpu:v4"), 5, "pow2")
    >>> v, s.tolist()
    (8, [[2, 2, 2]])
    >>> v, s = slice_shapes(parse_machine("tpu:v4"), 16, "pow2")
    >>> v, s.tolist()
    (16, [[2, 2, 4], [2, 4, 2], [4, 2, 2]])
    """
    if rule not in SHAPE_RULES:
        raise InvalidArgument("shapes", rule, f"one of {', '.join(SHAPE_RULES)}")
    shapes, vol = topology.boxes
    if n > topology.n_units or n < 1:
        return 0, shapes[:0]
    target = 1 << (n - 1).bit_length() if rule == "pow2" else n
    i = int(np.searchsorted(vol, target, "left"))
    if i == vol.size:  # rounding to a power of two overshot the machine: the least volume that fits
        i = int(np.searchsorted(vol, n, "left"))
    v = int(vol[i])
    cands = shapes[vol == v]
    if rule == "all":
        return v, cands
    active = np.array([g > 1 for g in topology.grid])
    sides = cands[:, active] if active.any() else cands
    spread = sides.max(axis=1) - sides.min(axis=1)
    best = cands[int(np.argmin(spread))]
    canon = np.sort(best[active]) if active.any() else best
    keep = np.array([np.array_equal(np.sort(c[active]) if active.any() else c, canon) for c in cands])
    return v, cands[keep]


def _window_max(a: np.ndarray, axis: int, s: int, g: int, cyclic: bool) -> np.ndarray:
    """Maximum over every window of ``s`` consecutive entries along ``axis`` (cyclically if asked).

    The result's length along ``axis`` is the number of placements: ``g``
    (cyclic, ``s < g``), ``g - s + 1`` (not cyclic) or 1 (``s == g``).
    """
    if s == 1:
        return a
    if s == g:
        return a.max(axis=axis, keepdims=True)
    nd = a.ndim

    def sl(lo: int, hi: int) -> tuple[slice, ...]:
        idx = [slice(None)] * nd
        idx[axis] = slice(lo, hi)
        return tuple(idx)

    if cyclic:
        a = np.concatenate([a, a[sl(0, s - 1)]], axis=axis)
    length = a.shape[axis]
    m, w = a, 1
    while 2 * w <= s:  # from windows of w to windows of 2w
        cur = m.shape[axis]
        m = np.maximum(m[sl(0, cur - w)], m[sl(w, cur)])
        w *= 2
    # m[i] = max of a[i .. i + w - 1]; two overlapping windows of w cover one of s
    out = length - s + 1
    return np.maximum(m[sl(0, out)], m[sl(s - w, s - w + out)])


#: most nodes of static boxes whose units, nodes and info the slice allocator keeps for the next grant of that box
BOX_CACHE_NODES = 1 << 22

#: largest placement table (rows × volume unit ids) kept per unit count; larger ones use the window search
TABLE_ENTRIES = 1 << 20

#: most grants' unit masks the static plan keeps (:meth:`SliceAllocator._mask_of`), and about the most bytes their
#: tokens and masks take; past either they are made again
TOKEN_MASKS = 1 << 10
TOKEN_MASK_BYTES = 1 << 24


class _TokenMasks(Memo[int, tuple[np.ndarray, int]]):
    """:meth:`SliceAllocator._mask_of`'s memo, with the bytes its entries hold (``nbytes``), shared as a memo is."""

    __slots__ = ("nbytes",)

    def __init__(self) -> None:
        super().__init__()
        self.nbytes = 0


def _ascending_ids(coords: list[np.ndarray], strides: tuple[int, ...], compiled: bool = False) -> np.ndarray:
    """Every id ``sum(c_i * strides[i])`` with ``c_i`` from ``coords[i]`` (each ascending), ascending:
    with strides growing with ``i`` and each ``c_i * strides[i] < strides[i + 1]``, the last dimension
    taken outermost orders them.  ``compiled``: written in one pass by ``_cboxes.ascending_ids`` (the
    numpy path, one broadcast sum per dimension, is the reference; tests compare them)."""
    if compiled and _cboxes is not None:
        cs = [np.ascontiguousarray(c, dtype=np.int64) for c in coords]
        out = np.empty(math.prod(c.size for c in cs), dtype=np.int64)
        _cboxes.ascending_ids(cs, strides, out)
        return out
    ids = np.zeros(1, dtype=np.int64)
    for c, st in zip(reversed(coords), reversed(strides)):
        ids = (ids[:, None] + c.astype(np.int64)[None, :] * st).reshape(-1)
    # an array of its own (not a view of the last 2-D sum): the base allocator keeps a read-only
    # array that owns its data as it is (Grant), and the locality stream remembers it by identity
    return ids if ids.base is None else ids.copy()


class _BoxCache:
    """Static boxes granted before, by (shape, offset): their units, sorted nodes and info, pure functions
    of the box shared by every grant of it; at most :data:`BOX_CACHE_NODES` nodes kept, then started afresh."""

    def __init__(self) -> None:
        self._boxes: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[np.ndarray, np.ndarray, dict[str, Any]]] = {}
        self._nodes = 0

    def get(self, box: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]] | None:
        return self._boxes.get(box)

    def put(self, box: tuple[tuple[int, ...], tuple[int, ...]], value: tuple[np.ndarray, np.ndarray, dict[str, Any]], nodes: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        if self._nodes + nodes > BOX_CACHE_NODES:
            self._boxes.clear()
            self._nodes = 0
        self._boxes[box] = value
        self._nodes += nodes
        return value


class _Placements(NamedTuple):
    units: np.ndarray  #: (rows, volume) unit ids of every placement
    shape: np.ndarray  #: per row, the index of its candidate shape
    offset: np.ndarray  #: per row, the box's offset in the unit grid
    shapes: np.ndarray


class SliceAllocator(Allocator):
    """Whole-unit slices on TPU pods, Tofu-D and Blue Gene/Q (see the module notes).

    Parameters
    ----------
    topology : UnitTorus
    rule : {"static", "ocs"}
        Contiguous boxes of units, or any free units wired by optical circuit switches.
    shapes : {"pow2", "cubic", "all"}, optional
        The shape rule (default: ``pow2`` on TPU pods, ``cubic`` elsewhere).
    twist : bool
        With ``rule="ocs"`` on a TPU pod: wire slices of ``k × k × 2k`` and
        ``k × 2k × 2k`` chips as twisted tori (:mod:`topoalloc.topology.slicenet`);
        other shapes stay plain tori.  Placement is unchanged: only the slice's
        own network, and so its hop distances, differ.

    Every grant records its slice's own network in ``info``: ``sides`` (in
    nodes), ``torus`` (per job dimension), ``twisted`` and ``slice_hops``, the
    mean hop distance between its nodes on that network — which the
    simulation keeps per job (``SimulationResult.slice_hops``, summary
    ``mean_slice_hops``).  Under OCS that is the distance the job sees; the
    pod-grid locality metrics measure where the cubes happen to lie.

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a = SliceAllocator(parse_machine("tpu:v4"))
    >>> got = a.allocate(Request(100))   # 2 cubes, a 4x4x8-chip slice
    >>> got.size, got.info["shape"], got.info["torus"], round(got.info["slice_hops"], 3)
    (128, (1, 1, 2), (False, False, False), 5.165)
    >>> t = SliceAllocator(parse_machine("tpu:v4"), "ocs", twist=True).allocate(Request(100))
    >>> t.info["sides"], t.info["twisted"], round(t.info["slice_hops"], 3)   # plain torus: 4.031
    ((4, 4, 8), True, 3.465)
    """

    name = "slice"
    claims = frozenset({"whole_units"})

    def __init__(self, topology: Topology, rule: str = "static", shapes: str | None = None, *, twist: bool = False):
        super().__init__(topology)
        top = self.topology
        if not isinstance(top, UnitTorus):  # accepts() has said so already; for the type checker
            raise InvalidArgument("topology", topology, "a machine of units (tpu:, tofu:, bgq:)")
        if rule not in ("static", "ocs"):
            raise InvalidArgument("rule", rule, "'static' or 'ocs'")
        if shapes is None:
            shapes = "pow2" if top.family == "tpu" else "cubic"
        if shapes not in SHAPE_RULES:
            raise InvalidArgument("shapes", shapes, f"one of {', '.join(SHAPE_RULES)}")
        if not isinstance(twist, bool):
            raise InvalidArgument("twist", twist, "true or false")
        if twist and (top.family != "tpu" or rule != "ocs"):
            raise InvalidArgument("twist", twist, "only with rule=ocs on a TPU pod (twisted tori are wired by its optical circuit switches)")
        # (measuring a twisted slice takes fewer bytes per chip than the machine check of the base class
        # allowed for, BFS_BYTES_PER_NODE < NODE_BYTES; slice_net checks the budget itself)
        self.twist = twist
        self.units = top
        self.rule = rule
        self.shapes = shapes
        self.name = f"slice-{rule}"
        self._unit_busy = np.zeros(top.n_units, dtype=bool)
        self._free_units = top.n_units
        self._cands: dict[int, tuple[int, np.ndarray]] = {}
        self._cands_by_size: dict[int, tuple[int, np.ndarray]] = {}  # (the same entries, by request size)
        self._tables: dict[int, _Placements | None] = {}
        #: placement tables up to this many entries (0: always the window search; for tests)
        self.table_entries = TABLE_ENTRIES
        self._placed: dict[int, tuple[tuple[int, ...], tuple[int, ...]] | None] = {}  # volume -> box, in state _placed_in
        # states are numbered: every grant and release makes a new one, except that releasing the last grant
        # before anything else changed returns to the state before it (EASY's refused candidates)
        self._version = 0
        self._versions = 0
        self._undo: tuple[Any, int, int] | None = None  # (token of the last grant, state before, state after)
        self._failed_since_grant = False
        self._placed_in = 0
        # volumes the static search failed to place, with the release count then: until the next release the
        # busy map only gains units, so the same count fails again (no search needed)
        self._releases = 0
        self._failed: dict[int, int] = {}
        # the volumes that failed since the last release (at release count _fails_at), and which volumes'
        # failures imply others' (a pure function of the candidate shapes: shared with snapshots)
        self._fails: list[tuple[int, np.ndarray]] = []
        self._fails_at = 0
        self._implies: dict[tuple[int, int], bool] = {}
        #: the last release-time map: (state, serials of the releases, map) (see :meth:`_release_map`)
        self._last_map: tuple[int, list[int], np.ndarray] | None = None
        self._boxes = _BoxCache()  # pure: shared with snapshots
        self._box_masks: Memo[tuple[tuple[int, ...], tuple[int, ...]], int] = Memo()  # box -> its units as bits (pure)
        self._token_masks = _TokenMasks()  # id of a grant's units -> (them, their bits)
        self._all_units = (1 << top.n_units) - 1
        self._grid_f = top.grid  # unit ids first dimension fastest = Fortran order over the grid
        self._axes = [i for i, g in enumerate(top.grid) if g > 1]
        #: whether the compiled box search (``_cboxes.c``) answers; else the placement tables and the window search
        self.compiled = USE_COMPILED and _cboxes is not None
        self._wrap_i = tuple(int(w) for w in top.wrap)

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Machines of units: tpu:, tofu:, bgq:."""
        return isinstance(topology, UnitTorus)

    # ------------------------------------------------------------ shapes
    def units_needed(self, size: int) -> int:
        return -(-size // self.units.unit_size)

    def candidates(self, size: int) -> tuple[int, np.ndarray]:
        """``(V, shapes)`` for a request of ``size`` nodes (memoised per unit count, and per size)."""
        got = self._cands_by_size.get(size)
        if got is None:
            n = self.units_needed(size)
            got = self._cands.get(n)
            if got is None:
                got = self._cands[n] = slice_shapes(self.units, n, self.shapes)
            self._cands_by_size[size] = got
        return got

    def _fits_empty(self, request: Request) -> bool:
        return self.candidates(request.size)[0] > 0

    def fit_key(self, request: Request) -> Hashable | None:
        """The slice volume ``V``: the candidate shapes are a function of it (:func:`slice_shapes`), so
        requests of one volume get one answer whatever their sizes (5 to 8 cubes under ``pow2``)."""
        return self._volume(request)

    # -------------------------------------------------------- box search
    def _box_maxima(self, values: np.ndarray, shapes: np.ndarray) -> list[np.ndarray]:
        """Per candidate shape, the maximum of ``values`` (a grid array) over every placement."""
        top = self.units
        memo: dict[tuple[int, ...], np.ndarray] = {(): values}
        out = []
        for shape in shapes.tolist():
            cur = values
            prefix: tuple[int, ...] = ()
            for ax in self._axes:
                prefix = prefix + (shape[ax],)
                hit = memo.get(prefix)
                if hit is None:
                    hit = memo[prefix] = _window_max(cur, ax, shape[ax], top.grid[ax], top.wrap[ax])
                cur = hit
            out.append(cur)
        return out

    def _table(self, size: int) -> "_Placements | None":
        """Every placement of every candidate box for ``size`` nodes as rows of unit ids, if small enough.

        Rows come in the order the sliding-window search visits them (shape
        by shape, offsets first grid dimension fastest), so both searches
        choose the same box.  ``None`` when rows × volume would exceed
        :data:`TABLE_ENTRIES` (then the window search answers).
        """
        v, shapes = self.candidates(size)
        if v in self._tables:
            return self._tables[v]
        top = self.units
        d = len(top.grid)
        counts = []
        for shape in shapes.tolist():
            c = 1
            for i in range(d):
                c *= 1 if shape[i] == top.grid[i] else (top.grid[i] if top.wrap[i] else top.grid[i] - shape[i] + 1)
            counts.append(c)
        table = None
        if v and sum(counts) * v <= self.table_entries:
            rows, which, offs = [], [], []
            ust = np.array(top.unit_strides, dtype=np.int64)
            grid = np.array(top.grid, dtype=np.int64)
            for k, shape in enumerate(shapes.tolist()):
                ranges = [np.arange(1) if shape[i] == top.grid[i] else np.arange(top.grid[i] if top.wrap[i] else top.grid[i] - shape[i] + 1) for i in range(d)]
                off = np.stack([g.ravel(order="F") for g in np.meshgrid(*ranges, indexing="ij")], axis=1)
                rel = np.stack([g.ravel() for g in np.meshgrid(*[np.arange(x) for x in shape], indexing="ij")], axis=1)
                units = ((off[:, None, :] + rel[None, :, :]) % grid) @ ust
                rows.append(units.astype(np.int32))
                which.append(np.full(len(off), k))
                offs.append(off)
            table = _Placements(np.concatenate(rows), np.concatenate(which), np.concatenate(offs), shapes)
        self._tables[v] = table
        return table

    def _grid(self, flat: np.ndarray) -> np.ndarray:
        return flat.reshape(self._grid_f, order="F")

    def _box_units(self, shape: tuple[int, ...], offset: tuple[int, ...]) -> np.ndarray:
        """The box's unit ids, ascending (see :meth:`_box_nodes`)."""
        top = self.units
        return self._box_ids(shape, offset, (1,) * len(top.grid), top.unit_strides)

    def _box_nodes(self, shape: tuple[int, ...], offset: tuple[int, ...]) -> np.ndarray:
        """The box's node ids, ascending, made in order rather than sorted (see :meth:`_box_ids`)."""
        top = self.units
        return self._box_ids(shape, offset, top.unit, top.strides)

    def _box_ids(self, shape: tuple[int, ...], offset: tuple[int, ...], unit: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
        """Per dimension the coordinates the box's units cover (``unit`` each), sorted (a few dozen);
        ids are mixed-radix numbers with dimension 0 the least significant, so combining them last
        dimension outermost ascends."""
        coords = []
        for s, o, g, u in zip(shape, offset, self.units.grid, unit):
            units = (o + np.arange(s)) % g
            coords.append(np.sort((units[:, None] * u + np.arange(u)[None, :]).ravel()))
        return _ascending_ids(coords, strides, self.compiled)

    def _free_placements(self, free: np.ndarray, shapes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Every placement of a candidate box for ``size`` nodes whose units are all ``free``:
        ``(sides, offsets)``, one row per placement (in no particular order)."""
        if self.compiled:
            rec = np.frombuffer(_cboxes.all_boxes((~free).view(np.uint8), 0, self.units.grid, self._wrap_i, shapes), dtype=np.int64)
            rec = rec.reshape(-1, len(self.units.grid) + 1)
            return np.ascontiguousarray(shapes[rec[:, 0]], dtype=np.int64), np.ascontiguousarray(rec[:, 1:])
        table = self._table(size)
        if table is not None:
            rows = np.flatnonzero(free[table.units].all(axis=1))
            return shapes[table.shape[rows]].astype(np.int64), table.offset[rows].astype(np.int64)
        blocked = self._grid((~free).view(np.uint8))
        sides, offs = [], []
        for shape, m in zip(shapes, self._box_maxima(blocked, shapes)):
            at = np.stack(np.nonzero(m == 0), axis=1).astype(np.int64)  # the window's index is its offset
            offs.append(at)
            sides.append(np.broadcast_to(np.asarray(shape, dtype=np.int64), at.shape))
        return np.concatenate(sides), np.concatenate(offs)

    def _box_of(self, allocation: Allocation) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The box (sides, offset in units) of a static grant, from its ``info``."""
        info = allocation.info
        shape = tuple(info["shape"])
        return shape + (1,) * (len(self.units.grid) - len(shape)), tuple(info["offset"])

    # ----------------------------------------------------------- allocate
    def _allocate(self, request: Request) -> Grant | None:
        v, shapes = self.candidates(request.size)
        if v == 0 or v > self._free_units:
            return None
        top = self.units
        if self.rule == "ocs":
            units = np.flatnonzero(~self._unit_busy)[:v]
            shape = tuple(int(s) for s in shapes[0][: top.job_dims])
            info: dict[str, Any] = {"shape": shape, "units": v, "torus": (True,) * top.job_dims}
            self._own_network(info, tuple(int(s) for s in shapes[0]))
        else:
            found = self._static_place(request.size)
            if found is None:
                return None
            hit = self._boxes.get(found)
            if hit is None:
                shape, offset = found
                units = self._box_units(shape, offset)
                units.flags.writeable = False
                nodes = self._box_nodes(shape, offset)
                nodes.flags.writeable = False
                torus = tuple(bool(shape[i] == top.grid[i] and top.wrap[i]) or (top.unit_torus and shape[i] == 1) for i in range(top.job_dims))
                info = {"shape": shape[: top.job_dims], "offset": offset, "units": v, "torus": torus}
                self._own_network(info, shape)
                hit = self._boxes.put(found, (units, nodes, info), nodes.size)
            units, nodes, info = hit
            info = dict(info)
            self._grant_units(units, v)
            return Grant(nodes, info, units)
        self._grant_units(units, v)
        return Grant(np.sort(top.unit_nodes[units].ravel()), info, units)

    def _grant_units(self, units: np.ndarray, v: int) -> None:
        self._unit_busy[units] = True
        self._free_units -= v
        units.flags.writeable = False
        before = self._version
        self._versions += 1
        self._version = self._versions
        self._undo = (units, before, self._version)
        self._failed_since_grant = False

    def _own_network(self, info: dict[str, Any], shape: tuple[int, ...]) -> None:
        """Record the slice's own network in ``info``: its sides in nodes (``sides``), whether it is
        twisted, and its mean hop distance (``slice_hops``, over distinct pairs of its nodes; see
        :mod:`topoalloc.topology.slicenet`).  Dimensions beyond the job's (a Tofu unit's a, b, c) are
        whole inside every slice and rings where the machine's are."""
        top = self.units
        sides = tuple(int(s) * u for s, u in zip(shape, top.unit))
        torus = tuple(info["torus"]) + tuple(top.wrap[top.job_dims :])
        twisted = self.twist and twist_kind(sides) is not None
        net = slice_net(sides, torus, twisted)
        info["sides"] = sides
        info["twisted"] = twisted
        info["slice_hops"] = net.mean_hops

    def _static_place(self, size: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The static rule's box (shape, offset) for ``size`` nodes in the current state, or None.

        Remembered per volume while the busy map is unchanged (states are
        numbered; a grant given back before anything else changed returns to
        the number before it); a failure is remembered until the next release
        (allocations only take units, so no box of that count can appear
        before one; giving back a grant is no release for failures found
        before it).
        """
        v, shapes = self.candidates(size)  # the shapes are a function of the volume: one answer per volume
        if self._failed.get(v) == self._releases:
            return None
        if self._version != self._placed_in:
            self._placed.clear()
            self._placed_in = self._version
        if v in self._placed:
            return self._placed[v]
        found = None if self._implied_failure(v, shapes) else self._first_box(size, shapes)
        self._placed[v] = found
        if found is None:
            self._failed[v] = self._releases
            self._failed_since_grant = True
            if self._fails_at != self._releases:
                self._fails, self._fails_at = [], self._releases
            self._fails.append((v, shapes))
        return found

    def _implied_failure(self, v: int, shapes: np.ndarray) -> bool:
        """Whether a volume that failed since the last release had, inside every candidate shape of
        ``v``, one of its own: a free box of that shape would hold a free box of the other at its
        offset, so ``v`` has none either (no search)."""
        if self._fails_at != self._releases:
            return False
        implies = self._implies
        for u, su in self._fails:
            hit = implies.get((u, v))
            if hit is None:
                inside = np.all(su[None, :, :] <= shapes[:, None, :], axis=2)  # [t, s]: shape s of u fits in shape t of v
                hit = implies[(u, v)] = bool(np.any(inside, axis=1).all())
            if hit:
                return True
        return False

    def _first_box(self, size: int, shapes: np.ndarray, busy: np.ndarray | None = None) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The first free box (shape by shape, offsets first grid dimension fastest), searched now (or on the
        busy map ``busy``): compiled (``_cboxes.first_box``), else in the placement table, else by the sliding
        windows."""
        if busy is None:
            busy = self._unit_busy
        if self.compiled:
            hit = _cboxes.first_box(busy.view(np.uint8), 0, self.units.grid, self._wrap_i, shapes)
            return None if hit is None else (tuple(int(x) for x in shapes[hit[0]]), hit[1])
        table = self._table(size)
        if table is not None:
            ok = np.flatnonzero(~busy[table.units].any(axis=1))
            if not ok.size:
                return None
            r = int(ok[0])
            return tuple(int(x) for x in shapes[table.shape[r]]), tuple(int(x) for x in table.offset[r])
        blocked = self._grid(busy.view(np.uint8))
        for shape_arr, m in zip(shapes, self._box_maxima(blocked, shapes)):
            free_at = np.flatnonzero(m.ravel(order="F") == 0)
            if free_at.size:
                return tuple(int(s) for s in shape_arr), tuple(int(o) for o in np.unravel_index(int(free_at[0]), m.shape, order="F"))
        return None

    def _release(self, allocation: Allocation, token: Any) -> None:
        self._unit_busy[token] = False
        self._free_units += int(token.size)
        undo, self._undo = self._undo, None
        if undo is not None and undo[0] is token and undo[2] == self._version:
            # the last grant given back before anything else changed: the state before it, whose
            # remembered failures still hold (it has no unit free that it had not when they were found)
            self._version = undo[1]
            if self._failed_since_grant:  # found with that grant's units busy: they may fit now
                self._releases += 1
            return
        self._versions += 1
        self._version = self._versions
        self._releases += 1

    def _copy_state(self, clone: Self) -> None:
        clone._unit_busy = self._unit_busy.copy()  # the memo of shapes is pure: shared
        clone._placed = dict(self._placed)
        clone._failed = dict(self._failed)
        clone._fails = list(self._fails)

    # ------------------------------------------------ the plan on free units
    def future_plan(self, now: float, releases: list[tuple[float, Allocation]], request: Callable[[int], Request],
                    priority: Callable[[int], int]) -> Any:
        """Conservative's plan, not on snapshots: on unit counts under OCS, on sets of free units under the
        static rule.

        OCS grants ``V`` free units wherever they are (the lowest-numbered), so a request fits exactly when
        ``V`` units are free: the plan is a :class:`~topoalloc.sched.plan.CountingProfile` of free units
        (:class:`_UnitCounts`).  The static rule places by a pure function of the busy units and the volume,
        the first free box of the volume's candidate shapes (what :meth:`_static_place` remembers is a
        memo of that search): the plan is a :class:`~topoalloc.sched.plan.StatePlan` whose state is the
        set of free units as an int (bit ``u``: unit ``u``), a grant's token its units' bits, a release
        giving those bits back, its counting pre-check in units.  Both give the answers replay on
        snapshots gives (tests compare schedules, and the static plan answer by answer).
        """
        if self.rule == "ocs":
            return _UnitCounts(now, self._free_units, [(t, int(self._tokens[a.serial].size)) for t, a in releases], self._volume_of_size)
        from ..sched.plan import StatePlan, _BitsModel

        return StatePlan(now, _BitsModel(self, cells=self._volume), releases, request, priority)

    def _volume_of_size(self, size: int) -> int:
        return self.candidates(size)[0]

    def _volume(self, request: Request) -> int:
        return self._volume_of_size(request.size)

    @property
    def _free(self) -> int:
        """The free units as an int, bit ``u`` for unit ``u``."""
        return self._bits_of(~self._unit_busy)

    @staticmethod
    def _bits_of(flags: np.ndarray) -> int:
        return int.from_bytes(np.packbits(flags, bitorder="little").tobytes(), "little")

    def _mask_of(self, allocation: Allocation) -> int:
        """The units a grant holds, as bits: remembered by the token (a read-only units array; a static grant's is
        its box's, shared by every grant of that box), which the memo holds, so that no other object takes its id
        while it is there; an entry is taken only for that very token (an allocator pickled to another process
        brings keys that were addresses there).  A static plan asks this twice of every running job at every pass
        (its token and its count); bounded as :data:`TOKEN_MASKS` entries and about :data:`TOKEN_MASK_BYTES` (the
        tokens it holds and their masks), then started again."""
        units = self._tokens[allocation.serial]
        memo = self._token_masks
        got = memo.get(id(units))
        extra = self.units.n_units // 8 + 100  # (an entry's bytes besides its token's)
        if got is not None:
            if got[0] is units:
                return got[1]
            memo.nbytes -= got[0].nbytes + extra  # (replaced below)
        size = units.nbytes + extra
        if len(memo) >= TOKEN_MASKS or memo.nbytes + size > TOKEN_MASK_BYTES:
            memo.clear()
            memo.nbytes = 0
        mask = self._units_mask(units)
        memo[id(units)] = (units, mask)
        memo.nbytes += size
        return mask

    def _units_mask(self, units: np.ndarray) -> int:
        flags = np.zeros(self.units.n_units, dtype=bool)
        flags[units] = True
        return self._bits_of(flags)

    frame_for = fit_key  # (the static plan's frame: placement depends on the request through its volume alone)

    def _placement_on(self, free: int, request: Request) -> int | None:
        """The units (as bits) :meth:`allocate` would take for ``request`` under the static rule with the free
        units ``free``, or None (the static plan's placement; OCS plans on counts)."""
        v, shapes = self.candidates(request.size)
        if v == 0 or v > free.bit_count():
            return None
        n = self.units.n_units
        # the busy units, unpacked from the complement's bytes (0 or 1 each: a bool view, no copy)
        busy = np.unpackbits(np.frombuffer((free ^ self._all_units).to_bytes((n + 7) // 8, "little"), dtype=np.uint8), count=n, bitorder="little").view(bool)
        found = self._first_box(request.size, shapes, busy)
        if found is None:
            return None
        mask = self._box_masks.get(found)
        if mask is None:
            mask = self._box_masks[found] = self._units_mask(self._box_units(*found))
        return mask

    # ------------------------------------------------------------- probes
    def can_allocate(self, request: Request) -> bool:
        v, shapes = self.candidates(request.size)
        if v == 0 or v > self._free_units:
            return False
        if self.rule == "ocs":
            return True
        return self._static_place(request.size) is not None

    def _release_map(self, releases: Iterable[Allocation]) -> tuple[np.ndarray, np.ndarray]:
        """Per unit, after how many releases it is free (0 now, ``_NEVER`` if not released); and the
        units each release frees.  Remembered with the state and the releases' serials for the
        reservation guard that follows (:class:`_ShadowMapGuard`), which needs the map again."""
        tokens = self._tokens
        serials = [a.serial for a in releases]
        if self.compiled:  # (one pass in C: numpy's assignments cost more than the work, ~10 tokens a map)
            toks = [tokens[s] for s in serials]
            t = np.empty(self._unit_busy.size, dtype=np.int32)
            sizes = np.empty(len(toks), dtype=np.int64)
            _cboxes.release_map(self._unit_busy.view(np.uint8), toks, t, sizes)
        else:
            t = self._unit_busy.view(np.uint8) * np.int32(_NEVER)  # (one pass: 0 or _NEVER, int32)
            sizes = np.zeros(len(serials), dtype=np.int64)
            for k, s in enumerate(serials):
                tok = tokens[s]
                t[tok] = k + 1
                sizes[k] = tok.size
        t.flags.writeable = False
        self._last_map = (self._version, serials, t)
        return t, sizes

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        v, shapes = self.candidates(request.size)
        if v == 0:
            return None
        if self.rule == "ocs":
            free = self._free_units
            if v <= free:
                return 0
            for k, alloc in enumerate(releases, 1):
                free += int(self._tokens[alloc.serial].size)
                if v <= free:
                    return k
            return None
        if v <= self._free_units and self._static_place(request.size) is not None:
            return 0
        t, sizes = self._release_map(releases)
        k = sizes.size
        if self.compiled:
            # the least k with a box free after k releases (a box's time is its latest unit's); not before
            # the release that frees V units in all (k0): asked there first (the usual answer), then
            # steps doubling from it, then bisection
            grid, wrap = self.units.grid, self._wrap_i
            k0 = int(np.searchsorted(self._free_units + np.cumsum(sizes), v)) + 1
            if k0 > k:
                return None
            lo, hi, step = k0 - 1, k0, 1  # no box at lo (too few units, or asked: none now)
            while _cboxes.first_box(t, hi, grid, wrap, shapes) is None:
                if hi == k:
                    return None
                lo, hi, step = hi, min(k, hi + step), 2 * step
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _cboxes.first_box(t, mid, grid, wrap, shapes) is None:
                    lo = mid
                else:
                    hi = mid
            return hi
        table = self._table(request.size)
        if table is not None:
            best = int(t[table.units].max(axis=1).min())
            return None if best == _NEVER else best
        best = min(int(m.min()) for m in self._box_maxima(self._grid(t), shapes))
        return None if best == _NEVER else best

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        if self.rule == "ocs":
            return _UnitCountGuard(self, head, releases)
        return _ShadowMapGuard(self, head, releases)


class _UnitCounts:
    """Conservative's plan for OCS slices: a :class:`~topoalloc.sched.plan.CountingProfile` of free units, each
    request taking its slice volume (the scheduler speaks in nodes: sizes become volumes here)."""

    def __init__(self, now: float, free_units: int, releases: list[tuple[float, int]], volume: Callable[[int], int]):
        from ..sched.plan import CountingProfile

        self._p = CountingProfile(now, free_units, releases)
        self._volume = volume

    def add(self, job: int, t: float, size: int, dur: float) -> None:
        self._p.add(job, t, self._volume(size), dur)

    def remove(self, job: int) -> None:
        self._p.remove(job)

    def feasible(self) -> bool:
        return self._p.feasible()

    def moves_earlier(self, job: int) -> bool:
        return self._p.moves_earlier(job)

    def earliest(self, job: int, size: int, dur: float, not_after: float | None = None) -> float:
        return self._p.earliest(job, self._volume(size), dur, not_after)


class _UnitCountGuard(ReservationGuard):
    """OCS: EASY's extra nodes, counted in units.  Reusable: a fresh guard's extra units are the
    kept one's (admitted jobs ending after the shadow time subtracted, the others freed again by then)."""

    reusable = True

    def __init__(self, allocator: SliceAllocator, head: Request, releases: Iterable[Allocation]):
        super().__init__(allocator, head, releases)
        self.slices = allocator
        tokens = allocator._tokens
        freed = sum(int(tokens[a.serial].size) for a in self.releases)
        self.extra = allocator._free_units + freed - allocator.candidates(head.size)[0]

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        v = self.slices.candidates(request.size)[0]
        if v > self.slices._free_units:
            return False  # it does not fit now (allocate would say so)
        return ends_by_shadow or v <= self.extra

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            if self.extra >= 0:
                self.releases.append(allocation)
                return True
            return False
        v = int(self.slices.token_of(allocation).size)
        if v <= self.extra:
            self.extra -= v
            return True
        return False


class _ShadowMapGuard(ReservationGuard):
    """Static boxes: every placement of the head's box in the units free at the shadow time.

    The placements are found once (the box search on the shadow-time map).  A
    candidate ending after the shadow time keeps its box busy then, so it
    keeps the reservation iff some placement does not meet its box: boxes on
    the unit grid meet iff their intervals meet in every dimension (cyclic
    ones round the wrap links), arithmetic on offsets and sides.
    ``may_admit`` asks the allocator where the candidate would go (its box
    search, remembered per state) without taking anything, so it refuses
    exactly what ``admit`` would; an admitted candidate's box removes the
    placements it meets.

    Compiled, on grids whose first side is at most 64 units, the placements
    are bits (one word per shape and line of the first dimension,
    ``_cboxes.placement_map``); the placements a box meets form a box of
    offsets (per dimension the cyclic interval ``o_B - s + 1 .. o_B + s_B -
    1``), so counting and removing them are bit operations on its lines
    (``_cboxes.map_clear_of``).  Otherwise (and without the extension) the
    placements are rows of sides and offsets.

    Reusable (:attr:`ReservationGuard.reusable`): a fresh guard's placements
    are those in the units free at the shadow time, which are the kept
    guard's units less the boxes of admitted jobs ending after it: the
    placements the kept guard has left; its spare units likewise.  Refusals
    repeat in the same state: the box search is a function of it, and a job
    no longer ending by the shadow time only meets more tests.
    """

    reusable = True

    #: placements tested per step while looking for one a candidate's box does not meet
    CHUNK = 512

    def __init__(self, allocator: SliceAllocator, head: Request, releases: Iterable[Allocation]):
        super().__init__(allocator, head, releases)
        self.slices = allocator
        last = allocator._last_map
        n = len(self.releases)
        if last is not None and last[0] == allocator._version and len(last[1]) >= n and last[1][:n] == [a.serial for a in self.releases]:
            free = last[2] <= n  # the map earliest_fit made in this state: free after the first n releases
        else:
            free = ~allocator._unit_busy
            tokens = allocator._tokens
            for a in self.releases:
                free[tokens[a.serial]] = True
        self.free = free
        self.v, self.shapes = allocator.candidates(head.size)
        self.spare = int(free.sum()) - self.v  # units free at the shadow beyond the head's
        self._place: tuple[np.ndarray, np.ndarray] | None = None  # (sides, offsets) of the head's placements
        self._grid = np.array(allocator.units.grid, dtype=np.int64)
        #: compiled, on a grid whose first side fits a word: the placements as bits (``_cboxes.placement_map``)
        self._bits = allocator.compiled and allocator.units.grid[0] <= 64
        self._map: np.ndarray | None = None
        self._counts = np.full(len(self.shapes), -1, dtype=np.int64)  # placements per shape in _map (-1: not counted yet)

    def _placement_map(self) -> np.ndarray:
        """The head's placements as bits per shape and line (see ``_cboxes.placement_map``)."""
        if self._map is None:
            if self.v > 0 and self.spare >= 0:
                a = self.slices
                raw = _cboxes.placement_map((~self.free).view(np.uint8), 0, a.units.grid, a._wrap_i, self.shapes)
                self._map = np.frombuffer(raw, dtype=np.uint64)
            else:
                self._map = np.zeros(0, dtype=np.uint64)
        return self._map

    def _clear_count(self, box: tuple[tuple[int, ...], tuple[int, ...]], remove: bool, any_only: bool = False) -> int:
        """How many of the head's placements the box does not meet (bits); with ``remove``, and some
        left, the ones it meets are dropped; with ``any_only``, 1 as soon as one is found (else 0).
        The placements per shape are counted once and kept up to date (``_counts``)."""
        m = self._placement_map()
        if not m.size:
            return 0
        return int(_cboxes.map_clear_of(m, self.shapes, self.slices.units.grid, box[0], box[1], remove, self._counts, any_only))

    def _placements(self) -> tuple[np.ndarray, np.ndarray]:
        if self._place is None:
            if self.v > 0 and self.spare >= 0:
                self._place = self.slices._free_placements(self.free, self.shapes, self.head.size)
            else:
                d = len(self._grid)
                self._place = (np.zeros((0, d), np.int64), np.zeros((0, d), np.int64))
        return self._place

    def _clear_of(self, box: tuple[tuple[int, ...], tuple[int, ...]], lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Which of the head's placements ``lo:hi`` the box does not meet."""
        sides, offs = self._placements()
        if self.slices.compiled and lo == 0 and hi is None:
            out = np.empty(sides.shape[0], dtype=np.uint8)
            _cboxes.clear_mask(sides, offs, self.slices.units.grid, box[0], box[1], out)
            return out.view(bool)
        sides, offs = sides[lo:hi], offs[lo:hi]
        bs = np.array(box[0], dtype=np.int64)
        bo = np.array(box[1], dtype=np.int64)
        g = self._grid
        meet = (((bo - offs) % g) < sides) | (((offs - bo) % g) < bs)
        return ~meet.all(axis=1)

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        a = self.slices
        v = a.candidates(request.size)[0]
        if v > a._free_units:
            return False  # it does not fit now (allocate would say so; no box search needed)
        if ends_by_shadow:
            return a._static_place(request.size) is not None  # (remembered per state: allocate asks it again)
        if v > self.spare:
            return False  # not enough units at the shadow time
        box = a._static_place(request.size)
        if box is None:
            return False  # it does not fit now (allocate would say so)
        if self._bits:
            return self._clear_count(box, False, True) > 0
        sides, offs = self._placements()
        n = sides.shape[0]
        if a.compiled:
            return bool(_cboxes.first_clear(sides, offs, a.units.grid, box[0], box[1], 0, n) >= 0)
        for lo in range(0, n, self.CHUNK):
            if self._clear_of(box, lo, lo + self.CHUNK).any():
                return True
        return False

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            if (self._placement_map().any() if self._bits else self._placements()[0].shape[0]):
                self.releases.append(allocation)
                return True
            return False
        a = self.slices
        if self._bits:
            if not self._clear_count(a._box_of(allocation), True):
                return False
            self.spare -= int(a.token_of(allocation).size)
            return True
        keep = self._clear_of(a._box_of(allocation))
        if not keep.any():
            return False
        sides, offs = self._placements()
        self._place = (sides[keep], offs[keep])
        self.spare -= int(a.token_of(allocation).size)
        return True


@ALLOCATORS.register("slice", accepts=SliceAllocator.accepts)
def _make_slice(topology: Topology, rule: Literal["static", "ocs"] = "static", shapes: Literal["pow2", "cubic", "all"] | None = None, twist: bool = False) -> SliceAllocator:
    """Whole-unit slices on tpu:/tofu:/bgq: machines; rule=static (a box of units) | ocs (any free units, optically wired); shapes=pow2|cubic|all; twist=true: twisted tori for kxkx2k and kx2kx2k TPU slices (rule=ocs)."""
    return SliceAllocator(topology, rule, shapes, twist=twist)
