"""Machine topologies and the ``--machine`` spec grammar."""

from __future__ import annotations

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .base import Topology
from .flat import FlatTopology
from .hypercube import Hypercube, Subcube
from .torus import Mesh, Semitorus, Torus

__all__ = ["Topology", "FlatTopology", "Torus", "Mesh", "Semitorus", "Hypercube", "Subcube", "parse_machine"]


def parse_machine(spec: "str | Topology") -> Topology:
    """Turn a machine spec such as ``"flat:128"`` into a :class:`Topology`.

    The grammar is ``KIND:ARG``: ``flat:N``; grid kinds take sides joined by
    ``x`` (``torus:2x2x2x6x8``, ``mesh:16x8``); ``hypercube:n`` takes the
    dimension.  A Topology passes through unchanged.

    >>> parse_machine("flat:128")
    FlatTopology(128,)
    """
    if isinstance(spec, Topology):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise InvalidArgument("machine", spec, f"KIND:ARG with KIND one of {', '.join(TOPOLOGIES.names())}, e.g. flat:128")
    kind, _, arg = spec.partition(":")
    return TOPOLOGIES.get(kind.strip())(arg.strip())
