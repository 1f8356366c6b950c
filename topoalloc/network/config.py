"""The network's parameters as one frozen value (:class:`NetworkConfig`) and its spec grammar."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from ..errors import InvalidArgument

__all__ = ["NetworkConfig", "MODES", "SWITCHING", "ENGINES", "ROUTINGS"]

#: simulation granularity: cycle-accurate flits, or the packet-level model (worms holding channels)
MODES = ("flit", "packet")
#: switching: wormhole, virtual cut-through, store-and-forward
SWITCHING = ("wormhole", "vct", "saf")
#: ``auto`` uses the compiled engine when it was built, else the pure-Python reference
ENGINES = ("auto", "c", "python")
#: routing: the machine's own (minimal) routing, or Valiant's through a random intermediate group (dragonfly)
ROUTINGS = ("minimal", "valiant")


def _int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InvalidArgument(name, value, f"an integer >= {low}")
    return int(value)


@dataclass(frozen=True, slots=True)
class NetworkConfig:
    """Parameters of the simulated interconnect.

    Parameters
    ----------
    packet : int
        Flits per packet ``P`` (a message is one packet); >= 1.
    buffers : int
        Input buffer depth ``B`` in flits, per virtual channel, at every
        router input (including the injection port); >= 1.  Virtual
        cut-through and store-and-forward need ``B >= P``.
    vcs : int
        Virtual channels per physical channel ``V`` (default 1).  On a torus
        with ``V >= 2`` the VCs split into two dateline classes (the lower
        ``V // 2`` before the wrap-around link of the current dimension, the
        rest from it on), which makes dimension-order routing deadlock-free.
    router_delay : int
        ``R``: a flit that enters an input buffer in cycle ``c`` may leave it
        in cycle ``c + R + 1`` at the earliest (one cycle on the link, ``R`` in
        the router); >= 0.
    switching : {"wormhole", "vct", "saf"}
        Wormhole: a header takes a free virtual channel; virtual cut-through:
        only when the downstream buffer has room for the whole packet;
        store-and-forward: in addition, a packet leaves a router only once
        its tail has arrived there.
    mode : {"flit", "packet"}
        ``flit``: cycle-accurate flit-level simulation with credit-based flow
        control.  ``packet``: the packet-level model (see
        :mod:`topoalloc.network.engine`): faster, approximate.
    deadlock_cycles : int
        If flits are in the network and none moves for this many cycles, the
        run stops with :class:`~topoalloc.errors.NetworkDeadlock` naming the
        cycle of waiting channels.  Must exceed ``R + 2``.
    dateline : bool or None
        Use virtual-channel classes.  ``None`` (default): where the routing
        needs them and ``V`` allows (``True`` there needs enough VCs): on tori
        the two dateline classes with ``V >= 2``; on a dragonfly a class change
        at each global hop, two classes under minimal routing (``V >= 2``),
        three under Valiant's (``V >= 3``, the lowest ``V // 3`` VCs before
        the first global hop, the next ``V // 3`` from it, the rest from the
        second).  Meshes, hypercubes and trees ignore it.
    routing : {"minimal", "valiant"}
        ``minimal`` (default): the machine's own routing.  ``valiant``
        (dragonfly only; Kim et al., ISCA 2008, §4.2): every packet between two
        routers goes minimally to a random intermediate group — to the router
        its source group's global link lands on there — then minimally to its
        destination (:meth:`Dragonfly.valiant_route`): local, global, local,
        global, local at most.  The group is drawn
        uniformly among the groups other than the source's and the
        destination's, from ``valiant_seed`` and the packet's id (the same
        packets get the same groups however they are added); with no such
        group the packet routes minimally.
    valiant_seed : int
        Seed of Valiant's intermediate groups (>= 0).
    engine : {"auto", "c", "python"}
        Which implementation runs the cycles.  Both give identical results;
        ``python`` is the reference, ``c`` the compiled extension.

    Examples
    --------
    >>> NetworkConfig.parse("wormhole:packet=8,buffers=4")
    NetworkConfig(packet=8, buffers=4, vcs=1, router_delay=1, switching='wormhole', mode='flit', deadlock_cycles=1000, dateline=None, engine='auto', routing='minimal', valiant_seed=0)
    """

    packet: int = 8
    buffers: int = 16
    vcs: int = 1
    router_delay: int = 1
    switching: str = "wormhole"
    mode: str = "flit"
    deadlock_cycles: int = 1000
    dateline: bool | None = None
    engine: str = "auto"
    routing: str = "minimal"
    valiant_seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "packet", _int("packet", self.packet, 1))
        object.__setattr__(self, "buffers", _int("buffers", self.buffers, 1))
        object.__setattr__(self, "vcs", _int("vcs", self.vcs, 1))
        object.__setattr__(self, "router_delay", _int("router_delay", self.router_delay, 0))
        object.__setattr__(self, "deadlock_cycles", _int("deadlock_cycles", self.deadlock_cycles, 1))
        object.__setattr__(self, "valiant_seed", _int("valiant_seed", self.valiant_seed, 0))
        if self.routing not in ROUTINGS:
            raise InvalidArgument("routing", self.routing, f"one of {', '.join(ROUTINGS)}")
        if self.switching not in SWITCHING:
            raise InvalidArgument("switching", self.switching, f"one of {', '.join(SWITCHING)}")
        if self.mode not in MODES:
            raise InvalidArgument("mode", self.mode, f"one of {', '.join(MODES)}")
        if self.engine not in ENGINES:
            raise InvalidArgument("engine", self.engine, f"one of {', '.join(ENGINES)}")
        if self.switching != "wormhole" and self.buffers < self.packet:
            raise InvalidArgument("buffers", self.buffers, f"at least packet={self.packet} flits for {self.switching} switching")
        if self.deadlock_cycles <= self.router_delay + 2:
            raise InvalidArgument("deadlock_cycles", self.deadlock_cycles, f"more than router_delay + 2 = {self.router_delay + 2} cycles")
        if self.dateline is not None and not isinstance(self.dateline, bool):
            raise InvalidArgument("dateline", self.dateline, "True, False or None (automatic)")
        if self.dateline and self.vcs < 2:
            raise InvalidArgument("dateline", self.dateline, f"vcs >= 2 (got vcs={self.vcs})")

    # names accepted in a spec string, e.g. "wormhole:packet=8,buffers=4,vcs=2"
    _SPEC_KEYS = ("packet", "buffers", "vcs", "router_delay", "mode", "deadlock_cycles", "dateline", "engine", "routing", "valiant_seed")

    @classmethod
    def parse(cls, spec: str) -> "NetworkConfig":
        """Build from ``SWITCHING[:key=value,...]`` (the ``--network`` grammar).

        ``SWITCHING`` is ``wormhole``, ``vct`` or ``saf``; keys are the
        constructor's (``packet``, ``buffers``, ``vcs``, ``router_delay``,
        ``mode``, ``deadlock_cycles``, ``dateline``, ``engine``, ``routing``,
        ``valiant_seed``).
        """
        from .. import spec as _spec

        parsed = _spec.parse(spec, argument="network")
        if parsed.name not in SWITCHING:
            raise InvalidArgument("network", spec, f"SWITCHING[:key=value,...] with SWITCHING one of {', '.join(SWITCHING)}")
        unknown = sorted(set(parsed.options) - set(cls._SPEC_KEYS))
        if unknown or parsed.args:
            raise InvalidArgument("network", spec, f"key=value options among {', '.join(cls._SPEC_KEYS)}" + (f" (not {', '.join(unknown)})" if unknown else ""))
        _, kwargs = _spec.bind(cls, parsed, kind="network", argument="network", fixed=("switching",))
        return cls(switching=parsed.name, **kwargs)

    def spec(self) -> str:
        """The spec string that rebuilds this configuration."""
        parts = [f"packet={self.packet}", f"buffers={self.buffers}", f"vcs={self.vcs}", f"router_delay={self.router_delay}", f"mode={self.mode}"]
        if self.deadlock_cycles != 1000:
            parts.append(f"deadlock_cycles={self.deadlock_cycles}")
        if self.dateline is not None:
            parts.append(f"dateline={str(self.dateline).lower()}")
        if self.routing != "minimal":
            parts.append(f"routing={self.routing}")
        if self.valiant_seed:
            parts.append(f"valiant_seed={self.valiant_seed}")
        return f"{self.switching}:" + ",".join(parts)

    @property
    def worm_span(self) -> int:
        """``L``: how many channels behind its header a blocked worm's tail can be held (packet-level model).

        Wormhole: ``ceil(P / B) - 1`` (a worm of ``P`` flits fills ``ceil(P/B)``
        buffers); virtual cut-through and store-and-forward: 0 (the whole
        packet fits in one buffer).
        """
        if self.switching != "wormhole":
            return 0
        return -(-self.packet // self.buffers) - 1
