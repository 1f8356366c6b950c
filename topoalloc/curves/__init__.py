"""Curve orderings: node ↔ rank bijections for one-dimensional allocation.

``make_ordering("hilbert", topology)`` builds (and caches per topology) the
ordering a spec names; the spec may also be the path of an ordering file
(``node rank`` lines).  Registered curves:

========== ============================================================
row_major  node-id order (x fastest): Cplant 1.9's order; any topology
snake      boustrophedon (grids); unit steps on every box
hilbert    continuous generalised Hilbert in 2-D (any W×H); Skilling n-D otherwise
hilbert_nd Skilling's n-D curve in any dimension (cut to size off 2^b cubes)
zorder     Morton order (grids, cut to size)
gray       binary-reflected Gray code on node ids (any machine of 2^k nodes)
========== ============================================================
"""

from __future__ import annotations

import os
from functools import lru_cache

from ..errors import InvalidArgument, UnknownName
from ..registry import Registry
from ..topology.base import Grid, Topology
from . import grid
from .base import Ordering
from .io import format_ordering, read_ordering, write_ordering

__all__ = ["Ordering", "CURVES", "make_ordering", "read_ordering", "write_ordering", "format_ordering", "curve_names"]

#: curve name -> factory(topology) -> Ordering
CURVES: Registry[Ordering] = Registry("curve", fixed=("topology",))


def _grid_dims(topology: Topology, curve: str) -> tuple[int, ...]:
    if not isinstance(topology, Grid):
        raise InvalidArgument("curve", curve, f"a curve defined on {topology.spec()} (the {curve} curve needs a grid machine: mesh or torus)")
    return tuple(topology.dims)


@CURVES.register("row_major")
def _row_major(topology: Topology) -> Ordering:
    """Node-id order; on grids x fastest ("left-to-right, top-to-bottom", Cplant 1.9)."""
    return Ordering(grid.row_major((topology.n_nodes,)), "row_major")


@CURVES.register("snake")
def _snake(topology: Topology) -> Ordering:
    """Boustrophedon: rows alternate direction; layers reverse the whole 2-D snake."""
    return Ordering(grid.snake(_grid_dims(topology, "snake")), "snake")


@CURVES.register("hilbert")
def _hilbert(topology: Topology) -> Ordering:
    """Generalised continuous Hilbert (2-D any W×H); Skilling's n-D Hilbert otherwise."""
    return Ordering(grid.hilbert(_grid_dims(topology, "hilbert")), "hilbert")


@CURVES.register("hilbert_nd")
def _hilbert_nd(topology: Topology) -> Ordering:
    """Skilling's n-D Hilbert in every dimension, including 2-D (cut to size off 2^b cubes)."""
    return Ordering(grid.hilbert_nd(_grid_dims(topology, "hilbert_nd")), "hilbert_nd")


@CURVES.register("zorder")
def _zorder(topology: Topology) -> Ordering:
    """Morton (Z) order of the coordinates, cut to size."""
    return Ordering(grid.zorder(_grid_dims(topology, "zorder")), "zorder")


@CURVES.register("gray")
def _gray(topology: Topology) -> Ordering:
    """Binary-reflected Gray code on node ids 0..2^k-1 (hypercubes; any machine of 2^k nodes)."""
    return Ordering(grid.gray(topology.n_nodes), "gray")


_ALIASES = {"row-major": "row_major", "rowmajor": "row_major", "none": "row_major", "z-order": "zorder", "z_order": "zorder", "morton": "zorder"}


def curve_names() -> list[str]:
    return CURVES.names()


@lru_cache(maxsize=256)
def _cached(name: str, topology: Topology) -> Ordering:
    return CURVES.get(name)(topology)


def make_ordering(curve: "str | os.PathLike[str] | Ordering", topology: Topology) -> Ordering:
    """The ordering ``curve`` names on ``topology`` (cached per topology and name).

    Parameters
    ----------
    curve : str, path or Ordering
        A registered name (``"hilbert"``, ``"snake"`` ...; ``"row-major"``,
        ``"z-order"`` and ``"none"`` are accepted aliases), the path of an
        ordering file, or an :class:`Ordering` of the right size.
    topology : Topology

    Raises
    ------
    InvalidArgument
        Unknown curve name that is not a file either, a curve the topology
        cannot carry, or an ordering of the wrong size.
    TraceFormatError
        A malformed ordering file (naming file and line).
    """
    if isinstance(curve, Ordering):
        ordering = curve
    else:
        text = os.fspath(curve)
        name = _ALIASES.get(text.lower(), text.lower())
        if name in CURVES:
            ordering = _cached(name, topology)
        elif os.path.exists(text):
            ordering = read_ordering(text, topology.n_nodes)
        else:
            raise InvalidArgument("curve", text, f"a curve name ({', '.join(CURVES.names())}) or an existing ordering file")
    if len(ordering) != topology.n_nodes:
        raise InvalidArgument("curve", ordering.name, f"an ordering of {topology.n_nodes} nodes (it has {len(ordering)})")
    return ordering


del UnknownName
