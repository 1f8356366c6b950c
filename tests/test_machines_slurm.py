"""Slurm topology.conf switch trees and the topology/tree placement."""

from __future__ import annotations

from pathlib import Path

import pytest

import topoalloc
from topoalloc.alloc import Request
from topoalloc.api import make_allocator, simulate
from topoalloc.errors import InvalidArgument
from topoalloc.topology import SlurmTree, parse_machine
from topoalloc.topology.slurm import expand_hostlist

EXAMPLE = Path(topoalloc.__file__).resolve().parent / "data" / "topology-example.conf"


def test_reads_the_example_tree():
    t = parse_machine(f"slurm-tree:{EXAMPLE}")
    assert isinstance(t, SlurmTree) and t.n_nodes == 16 and t.names[:2] == ["tux0", "tux1"]
    assert t.level.tolist() == [0, 0, 0, 0, 1, 1, 2]
    assert [t.distance(0, x) for x in (1, 5, 13)] == [2, 4, 6]


def test_best_fit_on_the_lowest_level():
    a = make_allocator("tree", f"slurm-tree:{EXAMPLE}")
    assert a.allocate(Request(3)).info == {"switch": "s0", "level": 0}
    assert a.allocate(Request(2)).nodes.tolist() == [4, 5]  # leaves with room: s1, s2, s3 tie at 4 free
    six = a.allocate(Request(6))
    assert six.info == {"switch": "m1", "level": 1} and six.nodes.tolist() == [8, 9, 10, 11, 12, 13]
    assert a.allocate(Request(1)).nodes.tolist() == [3]  # best fit: the leaf with one free node


def test_simulates_the_bundled_trace():
    r = simulate(machine=f"slurm-tree:{EXAMPLE}", allocator="tree", scheduler="easy", clean=True)
    assert r.summary()["jobs"] > 10_000


def test_hostlists():
    assert expand_hostlist("n[1-3,7]x,m") == ["n1x", "n2x", "n3x", "n7x", "m"]
    assert expand_hostlist("c[009-011]") == ["c009", "c010", "c011"]


@pytest.mark.parametrize("text,line,what", [
    ("SwitchName=s0 Nodes=a[0-1]\nSwitchName=s1 Node=b0\n", 2, "unknown key 'Node'"),
    ("SwitchName=s0 Nodes=a[0-1]\nNodes=b0\n", 2, "without SwitchName"),
    ("SwitchName=s0 Nodes=a[0-1]\nSwitchName=s1 Nodes=a1\nSwitchName=t Switches=s[0-1]\n", 2, "hangs off"),
    ("SwitchName=s0 Nodes=a[3-1]\n", 1, "bad range"),
    ("SwitchName=s0 Nodes=a0\nSwitchName=t Switches=s[0-1]\n", 2, "undefined switch 's1'"),
    ("SwitchName=s0 Nodes=a0\nSwitchName=s1 Nodes=a1\n", 2, "2 trees"),
    ("SwitchName=s0 Nodes=a0\nSwitchName=s0 Nodes=a1\n", 2, "defined again"),
])
def test_bad_files_name_file_and_line(tmp_path, text, line, what):
    p = tmp_path / "topology.conf"
    p.write_text(text)
    with pytest.raises(InvalidArgument) as err:
        parse_machine(f"slurm-tree:{p}")
    msg = str(err.value)
    assert f"{p}:{line}:" in msg and what in msg, msg
