"""Machine topologies and the ``--machine`` spec grammar."""

from __future__ import annotations

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .base import Grid, Routers, Subcubes, Topology, capabilities
from .flat import FlatTopology
from .hypercube import Hypercube, Subcube
from .torus import Mesh, Semitorus, Torus
from .units import UnitTorus
from .indirect import Dragonfly, FatTree, RouterNetwork
from .slurm import SlurmBlock, SlurmTree

__all__ = ["Topology", "Grid", "Subcubes", "Routers", "capabilities", "FlatTopology", "Torus", "Mesh", "Semitorus", "Hypercube", "Subcube", "UnitTorus", "Dragonfly", "FatTree", "RouterNetwork", "SlurmTree", "SlurmBlock", "parse_machine"]


def parse_machine(spec: "str | Topology") -> Topology:
    """Turn a machine spec such as ``"flat:128"`` into a :class:`Topology`.

    Machines are written in the package's one spec grammar
    (:mod:`topoalloc.spec`): ``flat:N``; grid kinds take sides joined by
    ``x`` (``torus:2x2x2x6x8``, ``mesh:16x8``, ``torus:4x4,wrap=10``);
    ``hypercube:n`` takes the dimension.  A Topology passes through unchanged.

    >>> parse_machine("flat:128")
    FlatTopology(128,)
    >>> parse_machine("torus:4x4,wrap=00") == parse_machine("mesh:4x4")
    True
    """
    if isinstance(spec, Topology):
        return spec
    if isinstance(spec, str) and ":" not in spec and spec.strip() in TOPOLOGIES:
        raise InvalidArgument("machine", spec, f"{spec.strip()}:ARG, e.g. {_EXAMPLES.get(spec.strip(), spec.strip() + ':...')}")
    if not isinstance(spec, str) or ":" not in spec:
        raise InvalidArgument("machine", spec, f"KIND:ARG with KIND one of {', '.join(TOPOLOGIES.names())}, e.g. flat:128")
    return TOPOLOGIES.create(spec, argument="machine")


_EXAMPLES = {"flat": "flat:128", "tpu": "tpu:v4", "tofu": "tofu:fugaku", "bgq": "bgq:sequoia", "dragonfly": "dragonfly:p=2,a=4,h=2", "fattree": "fattree:k=4,n=3", "mesh": "mesh:16x8", "torus": "torus:2x2x2x6x8", "hypercube": "hypercube:7"}
