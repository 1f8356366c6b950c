"""Machines allocated in whole units: TPU pods (cubes), Fugaku's Tofu-D (Tofu units), Blue Gene/Q (midplanes).

Each is a torus of nodes (a :class:`~topoalloc.topology.torus.Torus`, so
coordinates, hop distance, dimension-order routing and the network simulator
work on it unchanged) cut into equal boxes, the *units* a scheduler hands
out: a job gets a box (or, with optical circuit switches, any set) of whole
units.  The unit grid is the node grid divided by the unit's sides.

Families and their sources
--------------------------
``tpu:AxBxC[,cube=4]``, ``tpu:v4``, ``tpu:v5p``
    TPU v4 (Jouppi et al., "TPU v4: An Optically Reconfigurable
    Supercomputer for Machine Learning with Hardware Support for
    Embeddings", ISCA 2023): 4×4×4-chip cubes joined through optical
    circuit switches; a pod is 64 cubes, 4,096 chips (``tpu:v4`` = a 4×4×4
    grid of cubes, 16×16×16 chips).  TPU v5p (Google Cloud's v5p system
    documentation): 8,960 chips = 140 cubes per pod, the largest slice 96
    cubes (16×16×24 chips).  The v5p pod is wired by OCS, so it has no
    physical cube grid; for the static rule ``tpu:v5p`` lays its 140 cubes
    out as a 4×5×7 grid (16×20×28 chips) — a modelling choice, not a
    documented layout.  Chips form a torus in every dimension.
``tofu:XxYxZ``, ``tofu:fugaku``
    Tofu-D (Ajima et al., "The Tofu Interconnect D", IEEE CLUSTER 2018):
    six coordinates X×Y×Z×a×b×c, the Tofu unit a×b×c = 2×3×2 = 12 nodes;
    X, Y, Z and b are rings, a and c are of size 2.  Fugaku is 24×23×24 units
    = 158,976 nodes (``tofu:fugaku``).  Node ids put X fastest, then Y, Z,
    a, b, c.
``bgq:AxBxCxDxE[,midplane=4x4x4x4x2]``, ``bgq:sequoia``
    Blue Gene/Q (Chen et al., "The IBM Blue Gene/Q Interconnection Network
    and Message Unit", SC 2011; IBM Redbook SG24-7872, "Blue Gene/Q Hardware
    Overview"): a 5-D torus of nodes A×B×C×D×E with E = 2, built of
    midplanes of 4×4×4×4×2 = 512 nodes; two midplanes make a rack.  The
    sides are given in nodes and must be multiples of the midplane's.
    Sequoia (``bgq:sequoia``) is 16×16×16×12×2 nodes: a 4×4×4×3×1 grid of
    midplanes, 192 midplanes = 96 racks = 98,304 nodes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .torus import Torus, parse_dims

__all__ = ["UnitTorus", "tpu_pod", "tofu_machine", "bgq_machine", "NAMED"]


class UnitTorus(Torus):
    """A torus of nodes allocated in whole units (boxes of ``unit`` nodes).

    Parameters
    ----------
    family : {"tpu", "tofu", "bgq"}
        The machine family (its spec name).
    dims : sequence of int
        Node sides, first dimension fastest.
    unit : sequence of int
        The unit's sides in nodes (one per dimension, each dividing ``dims``).
    wrap : sequence of bool
        Wrap links per node dimension.
    unit_torus : bool
        Whether a single unit is a torus in each of its own dimensions (a
        Blue Gene/Q midplane loops its links back; a TPU cube does not by
        itself).

    Attributes
    ----------
    grid : tuple of int
        Units per dimension (``dims[i] // unit[i]``).
    n_units, unit_size : int
    unit_nodes : ndarray, shape (n_units, unit_size)
        The sorted node ids of every unit; unit ids put the first grid
        dimension fastest, like node ids.
    """

    def __init__(self, family: str, dims: Sequence[int], unit: Sequence[int], wrap: Sequence[bool], *, unit_torus: bool = False):
        dims = tuple(int(d) for d in dims)
        unit = tuple(int(u) for u in unit)
        if len(unit) != len(dims) or any(u < 1 or d % u for d, u in zip(dims, unit)):
            raise InvalidArgument("unit", unit, f"{len(dims)} positive sides dividing the machine's sides {dims}")
        super().__init__(dims, wrap)
        self.family = family
        self.unit = unit
        self.unit_torus = bool(unit_torus)
        self.grid = tuple(d // u for d, u in zip(dims, unit))
        self.n_units = int(math.prod(self.grid))
        self.unit_size = int(math.prod(unit))
        self.kind = family  # type: ignore[misc]  # the spec name, per instance
        #: the dimensions a job's slice is shaped in (Tofu: X, Y, Z; the others: all)
        self.job_dims = 3 if family == "tofu" else self.ndim

    def key(self) -> tuple:
        return (self.family, self.dims, self.wrap, self.unit, self.unit_torus)

    def spec(self) -> str:
        if self.family == "tpu":
            c = self.unit[0]
            return f"tpu:{'x'.join(map(str, self.grid))}" + ("" if c == 4 else f",cube={c}")
        if self.family == "tofu":
            return f"tofu:{'x'.join(map(str, self.grid[:3]))}"
        mid = "" if self.unit == (4, 4, 4, 4, 2) else f",midplane={'x'.join(map(str, self.unit))}"
        return f"bgq:{'x'.join(map(str, self.dims))}{mid}"

    def __repr__(self) -> str:
        return f"UnitTorus({self.spec()!r})"

    @property
    def unit_grid_wrap(self) -> tuple[bool, ...]:
        """Whether units can be joined round the wrap links in each grid dimension."""
        return self.wrap

    @cached_property
    def unit_nodes(self) -> np.ndarray:
        """(n_units, unit_size) node ids of every unit (cached on the immutable topology)."""
        ids = np.arange(self.n_units, dtype=np.int64)
        first = np.zeros(self.n_units, dtype=np.int64)  # the first node of every unit
        for g, u, st, ust in zip(self.grid, self.unit, self.strides, self.unit_strides):
            first += ((ids // ust) % g) * u * st
        inner = self.box_nodes((0,) * self.ndim, self.unit)
        out = first[:, None] + inner[None, :]
        out.flags.writeable = False
        return out

    @cached_property
    def unit_of(self) -> np.ndarray:
        """The unit of every node."""
        out = np.empty(self.n_nodes, dtype=np.int64)
        out[self.unit_nodes] = np.arange(self.n_units, dtype=np.int64)[:, None]
        out.flags.writeable = False
        return out

    @cached_property
    def unit_strides(self) -> tuple[int, ...]:
        return tuple(int(math.prod(self.grid[:i])) for i in range(len(self.grid)))

    @cached_property
    def boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """Every box shape of units that fits the grid: (shapes (m, d), volumes (m,)), by volume."""
        shapes = np.array(list(itertools.product(*[range(1, g + 1) for g in self.grid])), dtype=np.int64)
        vol = shapes.prod(axis=1)
        order = np.lexsort((*(shapes[:, i] for i in reversed(range(shapes.shape[1]))), vol))
        shapes, vol = shapes[order], vol[order]
        shapes.flags.writeable = False
        vol.flags.writeable = False
        return shapes, vol


def _check_positive(text: str, name: str, n: int) -> tuple[int, ...]:
    dims = parse_dims(text, argument="machine")
    if len(dims) != n:
        raise InvalidArgument("machine", text, f"{n} sides joined by 'x' for {name}")
    return dims


#: named machines: spec name -> positional value it stands for
NAMED = {"tpu": {"v4": "4x4x4", "v5p": "4x5x7"}, "tofu": {"fugaku": "24x23x24"}, "bgq": {"sequoia": "16x16x16x12x2"}}


def tpu_pod(cubes: Sequence[int], cube: int = 4) -> UnitTorus:
    """A TPU pod of ``cubes`` (A×B×C) cubes of ``cube``³ chips, a chip torus in every dimension."""
    if cube < 1:
        raise InvalidArgument("cube", cube, "a positive number of chips per cube side")
    dims = tuple(int(c) * cube for c in cubes)
    return UnitTorus("tpu", dims, (cube,) * 3, (True,) * 3)


def tofu_machine(units: Sequence[int]) -> UnitTorus:
    """Tofu-D: X×Y×Z Tofu units of a×b×c = 2×3×2 nodes; X, Y, Z, b rings; a, c of size 2."""
    x, y, z = (int(u) for u in units)
    return UnitTorus("tofu", (x, y, z, 2, 3, 2), (1, 1, 1, 2, 3, 2), (True, True, True, False, True, False))


def bgq_machine(dims: Sequence[int], midplane: Sequence[int] = (4, 4, 4, 4, 2)) -> UnitTorus:
    """Blue Gene/Q: a 5-D node torus built of midplanes (sides in nodes, multiples of the midplane's)."""
    return UnitTorus("bgq", dims, midplane, (True,) * 5, unit_torus=True)


@TOPOLOGIES.register("tpu")
def _tpu_from_spec(cubes: str, cube: int = 4) -> UnitTorus:
    """tpu:AxBxC[,cube=4] — a TPU pod of A×B×C cubes of 4×4×4 chips; tpu:v4 (4x4x4 cubes, 4,096 chips), tpu:v5p (140 cubes as 4x5x7)."""
    text = NAMED["tpu"].get(cubes.lower(), cubes)
    return tpu_pod(_check_positive(text, "tpu (cubes per dimension), or v4 / v5p", 3), cube)


@TOPOLOGIES.register("tofu")
def _tofu_from_spec(units: str) -> UnitTorus:
    """tofu:XxYxZ — Tofu-D, X×Y×Z units of 2×3×2 nodes; tofu:fugaku (24x23x24 units, 158,976 nodes)."""
    text = NAMED["tofu"].get(units.lower(), units)
    return tofu_machine(_check_positive(text, "tofu (Tofu units per dimension), or fugaku", 3))


@TOPOLOGIES.register("bgq")
def _bgq_from_spec(nodes: str, midplane: str = "4x4x4x4x2") -> UnitTorus:
    """bgq:AxBxCxDxE[,midplane=4x4x4x4x2] — Blue Gene/Q, a 5-D node torus of midplanes; bgq:sequoia (16x16x16x12x2, 192 midplanes)."""
    text = NAMED["bgq"].get(nodes.lower(), nodes)
    dims = _check_positive(text, "bgq (nodes per dimension), or sequoia", 5)
    mid = _check_positive(midplane, "the midplane", 5)
    if any(d % m for d, m in zip(dims, mid)):
        raise InvalidArgument("machine", f"bgq:{nodes},midplane={midplane}", f"node sides that are multiples of the midplane's {midplane}")
    return bgq_machine(dims, mid)
