"""Machines read from Slurm's ``topology.conf``: a switch tree (``topology/tree``) or blocks (``topology/block``).

topology/tree
-------------

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

topology/block
--------------
Blocks of nodes that share a fast local fabric (NVLink domains, racks)::

    BlockName=b1 Nodes=gpu[01-04]
    BlockName=b2 Nodes=gpu[05-08]
    BlockSizes=4,8

Keys: ``BlockName`` with ``Nodes`` (one base block per line) and at most one
``BlockSizes`` line (the base block size, then power-of-two multiples: the
sizes of the aggregated blocks a job may span).  See :class:`SlurmBlock`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import InvalidArgument
from ..registry import TOPOLOGIES
from .indirect import RouterNetwork

__all__ = ["SlurmTree", "SlurmBlock", "expand_hostlist", "read_topology_conf", "read_block_conf"]


class TopologyConfError(InvalidArgument):
    """A topology.conf that cannot be read (the message names file and line)."""

    def __init__(self, path: str, line: int, what: str):
        ValueError.__init__(self, f"{path}:{line}: {what}")
        self.name, self.value, self.expected = "topology.conf", f"{path}:{line}", what


def expand_hostlist(text: str) -> list[str]:
    """Slurm's hostlist expressions: ``tux[0-2,5]`` → tux0 tux1 tux2 tux5; ``n[01-03]`` keeps the padding.

    The expression is parsed and its names counted before any is built: one
    that names more nodes than this machine could simulate (``n[0-999999999]``)
    is refused at once (:data:`~topoalloc.limits.NODE_BYTES` per node against
    the memory budget).

    >>> expand_hostlist("tux[0-2,5],head")
    ['tux0', 'tux1', 'tux2', 'tux5', 'head']
    >>> expand_hostlist("n[08-10]")
    ['n08', 'n09', 'n10']
    """
    from ..limits import NODE_BYTES, format_bytes, memory_budget

    # (head, [(first, last, zero-padding width)], tail) per part; a plain name is one range of its own
    pieces: list[tuple[str, list[tuple[int, int, int]], str]] = []
    count = 0
    parts = re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text)
    if ",".join(parts) != text:  # something the grammar skipped: an unbalanced bracket, an empty name
        raise ValueError(f"malformed hostlist {text!r} (unbalanced brackets or an empty name)")
    for part in parts:
        m = re.fullmatch(r"([^\[]*)\[([^\]]+)\](.*)", part)
        if not m:
            if "[" in part or "]" in part:
                raise ValueError(f"unbalanced brackets in {part!r}")
            pieces.append((part, [], ""))
            count += 1
            continue
        head, body, tail = m.groups()
        ranges = []
        for rng in body.split(","):
            lo, dash, hi = rng.partition("-")
            hi = hi if dash else lo
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ValueError(f"bad range {rng!r} in {part!r}")
            ranges.append((int(lo), int(hi), len(lo) if lo.startswith("0") else 0))
            count += int(hi) - int(lo) + 1
        pieces.append((head, ranges, tail))
    if count * NODE_BYTES > memory_budget():
        raise ValueError(f"{text[:60]!r} names {count:,} nodes, more than this machine can simulate "
                         f"(about {format_bytes(count * NODE_BYTES)}; TOPOALLOC_MEMORY_LIMIT sets the limit)")
    out: list[str] = []
    for head, ranges, tail in pieces:
        if not ranges:
            out.append(head)
        for lo, hi, width in ranges:
            out.extend(f"{head}{i:0{width}d}{tail}" for i in range(lo, hi + 1))
    return out


#: the keys of each plugin's lines (lower case), as the documentation spells them
_KEYS = {"tree": ("SwitchName", "Nodes", "Switches", "LinkSpeed"), "block": ("BlockName", "Nodes", "BlockSizes")}


def _conf_lines(path: str, plugin: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {lower-case key: value}) of every non-empty line of a topology.conf for ``plugin`` (tree or block).

    A key of the other plugin's file says which machine kind reads it; any other unknown key is an error.
    """
    try:
        raw_bytes = Path(path).read_bytes()
    except OSError as exc:
        raise TopologyConfError(path, 0, f"cannot read the file ({exc.strerror})") from None
    try:
        text = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = raw_bytes.count(b"\n", 0, exc.start) + 1
        raise TopologyConfError(path, bad_line, f"byte 0x{raw_bytes[exc.start]:02x} is not UTF-8: not a topology.conf (is this a binary file?)") from None
    mine = {k.lower() for k in _KEYS[plugin]}
    other = next(p for p in _KEYS if p != plugin)
    theirs = {k.lower() for k in _KEYS[other]} - mine
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
            if key in theirs:
                raise TopologyConfError(path, no, f"{k}= belongs to a topology/{other} file: read it as slurm-{other}:{path}")
            if key not in mine:
                raise TopologyConfError(path, no, f"unknown key {k!r} ({', '.join(_KEYS[plugin])})")
            fields[key] = v
        yield no, fields


def read_topology_conf(path: str) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]]]:
    """(switch names in file order, switch → child switches, switch → nodes)."""
    switches: list[str] = []
    children: dict[str, list[str]] = {}
    nodes: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    for no, fields in _conf_lines(path, "tree"):
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


# ---------------------------------------------------------------- topology/block


def read_block_conf(path: str) -> tuple[list[str], dict[str, list[str]], list[int] | None, int | None]:
    """(block names in file order, block → nodes, BlockSizes or None, line of BlockSizes) of a topology/block file.

    Lines ``BlockName=NAME Nodes=HOSTLIST`` (one base block each) and at most
    one ``BlockSizes=N,2N,4N,...`` line; ``#`` starts a comment.  Every error
    names the file and the line.
    """
    blocks: list[str] = []
    nodes: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    owner: dict[str, str] = {}
    sizes: list[int] | None = None
    sizes_line: int | None = None
    for no, fields in _conf_lines(path, "block"):
        if "blocksizes" in fields:
            if set(fields) != {"blocksizes"}:
                raise TopologyConfError(path, no, "BlockSizes= stands on a line of its own")
            if sizes is not None:
                raise TopologyConfError(path, no, f"BlockSizes= given again (first on line {sizes_line})")
            try:
                sizes = [int(x) for x in fields["blocksizes"].split(",")]
            except ValueError:
                raise TopologyConfError(path, no, f"BlockSizes={fields['blocksizes']!r}: expected node counts, e.g. 18,36,72") from None
            sizes_line = no
            continue
        name = fields.get("blockname")
        if not name:
            raise TopologyConfError(path, no, "a line without BlockName= (or BlockSizes=)")
        if name in where:
            raise TopologyConfError(path, no, f"block {name!r} defined again (first on line {where[name]})")
        if not fields.get("nodes"):
            raise TopologyConfError(path, no, f"block {name!r} has no Nodes=")
        try:
            hosts = expand_hostlist(fields["nodes"])
        except ValueError as exc:
            raise TopologyConfError(path, no, str(exc)) from None
        for h in hosts:
            if h in owner:
                raise TopologyConfError(path, no, f"node {h!r} is in block {owner[h]!r} already")
            owner[h] = name
        where[name] = no
        blocks.append(name)
        nodes[name] = hosts
    if not blocks:
        raise TopologyConfError(path, 0, "no blocks (BlockName= lines)")
    return blocks, nodes, sizes, sizes_line


class SlurmBlock(RouterNetwork):
    """The blocks of a topology/block file (Slurm's model of NVLink-style domains).

    Each base block is a router with its nodes (one hop between any two nodes
    of a block); all block routers hang off one top switch.  Aggregated blocks
    (Slurm's "block levels") are ``BlockSizes[l] / BlockSizes[0]`` consecutive
    base blocks in file order, aligned: level ``l``'s aggregate ``i`` holds base
    blocks ``i·m .. (i+1)·m - 1``; only complete aggregates exist.  Without
    ``BlockSizes`` the levels are the base block size times 1, 2, 4, ... up to
    the number of blocks.  A base block may have fewer nodes than the base size
    (nodes out of service), not more.

    Attributes
    ----------
    names, block_names : list of str
    block_sizes : list of int
        Nodes per aggregate at each level (``block_sizes[0]`` is the base size).
    block_of_node : ndarray
    aggregates : list of ndarray
        Per level, ``(n_aggregates, 2)``: first and last+1 base block of each.
    """

    kind = "slurm-block"

    def __init__(self, path: str):
        import networkx as nx

        blocks, hosts, sizes, line = read_block_conf(path)
        self.path = str(path)
        self.block_names = blocks
        base = max(len(hosts[b]) for b in blocks)
        if sizes is None:
            sizes = [base << i for i in range(len(blocks).bit_length())]
        else:
            if sizes[0] < base:
                raise TopologyConfError(path, line or 0, f"BlockSizes starts at {sizes[0]}, but block {next(b for b in blocks if len(hosts[b]) == base)!r} has {base} nodes")
            for a, b in zip(sizes, sizes[1:]):
                if b <= a or b % sizes[0] or (b // sizes[0]) & (b // sizes[0] - 1):
                    raise TopologyConfError(path, line or 0, f"BlockSizes={','.join(map(str, sizes))}: each size after the first must be the base size times a larger power of two")
            if sizes[-1] // sizes[0] > len(blocks):
                raise TopologyConfError(path, line or 0, f"BlockSizes asks for aggregates of {sizes[-1] // sizes[0]} blocks; the file has {len(blocks)}")
        self.block_sizes = list(sizes)
        graph = nx.Graph()
        top = len(blocks)
        graph.add_nodes_from(range(top + 1))
        graph.add_edges_from((k, top) for k in range(top))
        names: list[str] = []
        node_router: list[int] = []
        for i, name in enumerate(blocks):
            names.extend(hosts[name])
            node_router.extend([i] * len(hosts[name]))
        self.names = names
        self.block_of_node = np.asarray(node_router, dtype=np.int64)
        aggs = []
        for size in sizes:
            m = size // sizes[0]
            starts = np.arange(0, len(blocks) - m + 1, m, dtype=np.int64)
            aggs.append(np.stack([starts, starts + m], axis=1))
        self.aggregates = aggs
        super().__init__(graph, node_router, [0] * top + [1])

    def key(self) -> tuple:
        return ("slurm-block", self.path, tuple(self.names), tuple(self.node_router.tolist()), tuple(self.block_sizes))

    def spec(self) -> str:
        return f"slurm-block:{self.path}"


@TOPOLOGIES.register("slurm-block")
def _slurm_block_from_spec(path: str) -> SlurmBlock:
    """slurm-block:PATH — the blocks of a Slurm topology/block topology.conf (BlockName=, BlockSizes=)."""
    return SlurmBlock(path)
