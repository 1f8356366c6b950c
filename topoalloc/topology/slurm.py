"""A switch tree read from Slurm's ``topology.conf`` (the ``topology/tree`` plugin's file).

Each line names a switch and what hangs below it (Slurm's topology.conf
documentation)::

    SwitchName=s0 Nodes=tux[0-15]
    SwitchName=s1 Nodes=tux[16-31]
    SwitchName=top Switches=s[0-1]

Keys: ``SwitchName`` (required), ``Nodes`` or ``Switches`` (hostlist
expressions: ``tux[0-3,7]``, zero padding kept, ``a,b`` lists), ``LinkSpeed``
(accepted, unused).  ``#`` starts a comment.  The switches must form one
tree; a node hangs off exactly one switch.  Node ids follow the order the
nodes appear in the file; ``names`` keeps their host names.  Every error
names the file and the line.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .indirect import RouterNetwork

__all__ = ["SlurmTree", "expand_hostlist", "read_topology_conf"]


class TopologyConfError(InvalidArgument):
    """A topology.conf that cannot be read (the message names file and line)."""

    def __init__(self, path: str, line: int, what: str):
        ValueError.__init__(self, f"{path}:{line}: {what}")
        self.name, self.value, self.expected = "topology.conf", f"{path}:{line}", what


def expand_hostlist(text: str) -> list[str]:
    """Slurm's hostlist expressions: ``tux[0-2,5]`` → tux0 tux1 tux2 tux5; ``n[01-03]`` keeps the padding.

    >>> expand_hostlist("tux[0-2,5],head")
    ['tux0', 'tux1', 'tux2', 'tux5', 'head']
    >>> expand_hostlist("n[08-10]")
    ['n08', 'n09', 'n10']
    """
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text):
        m = re.fullmatch(r"([^\[]*)\[([^\]]+)\](.*)", part)
        if not m:
            if "[" in part or "]" in part:
                raise ValueError(f"unbalanced brackets in {part!r}")
            out.append(part)
            continue
        head, body, tail = m.groups()
        for rng in body.split(","):
            if "-" in rng:
                lo, hi = rng.split("-", 1)
                if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                    raise ValueError(f"bad range {rng!r} in {part!r}")
                width = len(lo) if lo.startswith("0") else 0
                out.extend(f"{head}{i:0{width}d}{tail}" for i in range(int(lo), int(hi) + 1))
            elif rng.isdigit():
                out.append(f"{head}{rng}{tail}")
            else:
                raise ValueError(f"bad range {rng!r} in {part!r}")
    return out


def read_topology_conf(path: str) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]]]:
    """(switch names in file order, switch → child switches, switch → nodes)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise TopologyConfError(path, 0, f"cannot read the file ({exc.strerror})") from None
    switches: list[str] = []
    children: dict[str, list[str]] = {}
    nodes: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields: dict[str, str] = {}
        for item in line.split():
            if "=" not in item:
                raise TopologyConfError(path, no, f"expected Key=Value, got {item!r}")
            k, v = item.split("=", 1)
            key = k.lower()
            if key not in ("switchname", "nodes", "switches", "linkspeed"):
                raise TopologyConfError(path, no, f"unknown key {k!r} (SwitchName, Nodes, Switches, LinkSpeed)")
            fields[key] = v
        name = fields.get("switchname")
        if not name:
            raise TopologyConfError(path, no, "a line without SwitchName=")
        if name in where:
            raise TopologyConfError(path, no, f"switch {name!r} defined again (first on line {where[name]})")
        if "nodes" not in fields and "switches" not in fields:
            raise TopologyConfError(path, no, f"switch {name!r} has neither Nodes= nor Switches=")
        try:
            kids = expand_hostlist(fields.get("switches", ""))
            hosts = expand_hostlist(fields.get("nodes", ""))
        except ValueError as exc:
            raise TopologyConfError(path, no, str(exc)) from None
        where[name] = no
        switches.append(name)
        children[name] = kids
        nodes[name] = hosts
    if not switches:
        raise TopologyConfError(path, 0, "no switches")
    seen: dict[str, str] = {}
    parent: dict[str, str] = {}
    for s in switches:
        for h in nodes[s]:
            if h in seen:
                raise TopologyConfError(path, where[s], f"node {h!r} hangs off {seen[h]!r} already")
            seen[h] = s
        for c in children[s]:
            if c not in where:
                raise TopologyConfError(path, where[s], f"switch {s!r} names an undefined switch {c!r}")
            if c in parent:
                raise TopologyConfError(path, where[s], f"switch {c!r} is below {parent[c]!r} already")
            parent[c] = s
    roots = [s for s in switches if s not in parent]
    if len(roots) != 1:
        raise TopologyConfError(path, where[roots[-1]] if roots else 0, f"the switches form {len(roots)} trees ({', '.join(roots[:4])}), not one")
    if not seen:
        raise TopologyConfError(path, 0, "no nodes")
    return switches, children, nodes


class SlurmTree(RouterNetwork):
    """The switch tree of a topology.conf (see the module notes).

    Attributes
    ----------
    path : str
    names : list of str
        Host name of every node id.
    switch_names : list of str
    level : ndarray
        Per switch: 0 for a switch with nodes only, else 1 + its children's highest level.
    leaves_below : list of ndarray
        Per switch: the switches with nodes in its subtree (itself included).
    """

    kind = "slurm-tree"

    def __init__(self, path: str):
        import networkx as nx

        switches, children, hosts = read_topology_conf(path)
        self.path = str(path)
        self.switch_names = switches
        index = {s: i for i, s in enumerate(switches)}
        graph = nx.Graph()
        graph.add_nodes_from(range(len(switches)))
        for s in switches:
            for c in children[s]:
                graph.add_edge(index[s], index[c])
        names: list[str] = []
        node_router: list[int] = []
        for s in switches:
            for h in hosts[s]:
                names.append(h)
                node_router.append(index[s])
        self.names = names
        level = np.zeros(len(switches), dtype=np.int64)
        below: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(switches)

        def visit(i: int) -> None:
            kids = [index[c] for c in children[switches[i]]]
            for c in kids:
                visit(c)
            level[i] = 1 + max((int(level[c]) for c in kids), default=-1)
            own = [i] if hosts[switches[i]] else []
            below[i] = np.array(sorted(own + [x for c in kids for x in below[c].tolist()]), dtype=np.int64)

        root = next(s for s in switches if all(s not in children[t] for t in switches))
        visit(index[root])
        self.level = level
        self.leaves_below = below
        super().__init__(graph, node_router, level)  # a switch's group is its level

    def key(self) -> tuple:
        return ("slurm-tree", self.path, tuple(self.names), tuple(self.node_router.tolist()))

    def spec(self) -> str:
        return f"slurm-tree:{self.path}"


@TOPOLOGIES.register("slurm-tree")
def _slurm_tree_from_spec(path: str) -> SlurmTree:
    """slurm-tree:PATH — the switch tree of a Slurm topology.conf (nodes on the switches' Nodes= lists)."""
    return SlurmTree(path)
