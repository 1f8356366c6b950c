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
    assert expand_hostlist("n[07]") == ["n07"] and expand_hostlist("") == []


@pytest.mark.parametrize("text, words", [("a[1", "malformed"), ("a,,b", "malformed"), ("b]", "unbalanced"), ("n[0-999999999]", "names 1,000,000,000 nodes")])
def test_bad_hostlists_are_refused_before_anything_is_built(text, words):
    with pytest.raises(ValueError, match=words):
        expand_hostlist(text)


@pytest.mark.parametrize("kind, line", [("slurm-tree", "SwitchName=s0 Nodes=n[0-999999999]"), ("slurm-block", "BlockName=a Nodes=n[0-999999999]")])
def test_a_huge_hostlist_is_one_error_naming_the_line(tmp_path, kind, line):
    p = tmp_path / "topology.conf"
    p.write_text("# a cluster\n" + line + "\n")
    with pytest.raises(InvalidArgument) as err:
        parse_machine(f"{kind}:{p}")
    assert f"{p}:2:" in str(err.value) and "more than this machine can simulate" in str(err.value)


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


# ---------------------------------------------------------------- topology/block

BLOCKS = Path(topoalloc.__file__).resolve().parent / "data" / "topology-block-example.conf"


def test_reads_the_example_blocks():
    from topoalloc.topology import SlurmBlock

    t = parse_machine(f"slurm-block:{BLOCKS}")
    assert isinstance(t, SlurmBlock) and t.n_nodes == 32 and t.names[:2] == ["gpu01", "gpu02"]
    assert t.block_sizes == [4, 8, 16, 32] and [a.tolist() for a in t.aggregates[:2]] == [[[i, i + 1] for i in range(8)], [[0, 2], [2, 4], [4, 6], [6, 8]]]
    assert [t.distance(0, x) for x in (1, 4)] == [2, 4]  # same block: one router; else through the top switch


def test_default_block_sizes_and_short_blocks(tmp_path):
    p = tmp_path / "topology.conf"
    p.write_text("BlockName=a Nodes=n[0-3]\nBlockName=b Nodes=n[4-6]   # a node out of service\nBlockName=c Nodes=n[7-10]\n")
    t = parse_machine(f"slurm-block:{p}")
    assert t.block_sizes == [4, 8] and t.aggregates[1].tolist() == [[0, 2]]  # three blocks: one complete pair
    a = make_allocator("block", t)
    assert a.allocate(Request(7)).nodes.tolist() == list(range(7))  # a+b have exactly 7 nodes
    assert a.allocate(Request(7)) is None  # c alone is too small, and no aggregate of 8 is left
    with pytest.raises(topoalloc.errors.RequestNeverFits):
        a.allocate(Request(9))


def test_block_placement_rules():
    a = make_allocator("block", f"slurm-block:{BLOCKS}")
    x = a.allocate(Request(3))
    assert x.info == {"level": 0, "aggregate": "b1", "base_blocks": 1} and x.nodes.tolist() == [0, 1, 2]
    # best fit among base blocks: b1 has one free node
    assert a.allocate(Request(1)).nodes.tolist() == [3]
    # six nodes: level 1 (aggregates of two blocks); b1+b2 has 4 free, b3+b4 has 8: the first with room
    six = a.allocate(Request(6))
    assert six.info == {"level": 1, "aggregate": "b3..b4", "base_blocks": 2} and six.nodes.tolist() == [8, 9, 10, 11, 12, 13]
    # two nodes: level 0; blocks with room: b2, b5..b8 (4 free) and b4 (2 free): best fit is b4
    two = a.allocate(Request(2))
    assert two.nodes.tolist() == [14, 15]  # b4 has exactly 2 free: best fit
    # a job of 12 spans the fewest base blocks: in b5..b8 (16 free) it takes three whole blocks
    twelve = a.allocate(Request(12))
    assert twelve.info["level"] == 2 and twelve.info["base_blocks"] == 3 and twelve.nodes.tolist() == list(range(16, 28))
    with pytest.raises(topoalloc.errors.RequestNeverFits):
        a.allocate(Request(33))


UNEVEN = "BlockName=a Nodes=n[0-3]\nBlockName=b Nodes=n[4-6]\nBlockName=c Nodes=n[7-10]\nBlockName=d Nodes=n[11-14]\nBlockName=e Nodes=n[15-17]\nBlockSizes=4,8,16\n"


@pytest.mark.parametrize("uneven", [False, True], ids=["example", "uneven"])
def test_block_probes_are_exact_without_replay(tmp_path, uneven):
    """earliest_fit, can_allocate and EASY's guard against replay on random states (the conformance suite does the same on
    the example; "uneven": five blocks, two short, aggregates of 2 and 4: block e is only in level 0)."""
    import random

    from topoalloc.alloc.probes import ReplayGuard, replay_earliest_fit

    if uneven:
        (tmp_path / "u.conf").write_text(UNEVEN)
        machine = f"slurm-block:{tmp_path / 'u.conf'}"
    else:
        machine = f"slurm-block:{BLOCKS}"
    n = parse_machine(machine).n_nodes
    rng = random.Random(7)
    for trial in range(80):
        a = make_allocator("block", machine)
        held = []
        for _ in range(rng.randrange(3, 14)):
            x = a.allocate(Request(rng.randrange(1, 13)))
            if x is not None:
                held.append(x)
        for k in range(1, n + 1):  # the probe agrees with a real attempt on a copy
            if a._fits_empty(Request(k)):
                assert a.can_allocate(Request(k)) == (a.snapshot().allocate(Request(k)) is not None), (trial, k)
        rng.shuffle(held)
        head = Request(rng.randrange(1, min(n, 16) + 1))
        assert a.earliest_fit(head, held) == replay_earliest_fit(a, head, held)
        k = a.earliest_fit(head, held)
        if k is None:
            continue
        fast, slow = a.reservation_guard(head, held[:k]), ReplayGuard(a, head, held[:k])
        for _ in range(4):
            req = Request(rng.randrange(1, 9))
            ends_by = rng.random() < 0.4
            if not fast.may_admit(req, ends_by):
                x = a.allocate(req)
                if x is not None:
                    assert not slow.admit(x, ends_by)
                    a.release(x)
                continue
            x = a.allocate(req)
            if x is None:
                continue
            f, s = fast.admit(x, ends_by), slow.admit(x, ends_by)
            assert f == s, (trial, req, ends_by)
            if not f:
                a.release(x)


UNEVEN_FILE = Path(topoalloc.__file__).resolve().parent / "data" / "topology-block-uneven.conf"


@pytest.mark.parametrize("text, counts", [
    ("BlockName=a Nodes=n[0-3]\nBlockName=b Nodes=n[4-7]\nBlockSizes=4,8\n", True),
    ("BlockName=a Nodes=n[0-3]\nBlockName=b Nodes=n[4-7]\nBlockSizes=4\n", False),  # two maximal aggregates
    ("BlockName=a Nodes=n[0-3]\nBlockName=b Nodes=n[4-6]\nBlockSizes=4,8\n", True),  # one short block: 7 nodes, size 8
    ("BlockName=a Nodes=n[0-3]\nBlockName=b Nodes=n[4-7]\nBlockName=c Nodes=n[8-11]\nBlockSizes=4,8\n", False),  # c is outside a+b
])
def test_block_counts_exactly_when_one_aggregate_holds_the_machine(tmp_path, text, counts):
    """The factory's choice, and the promise behind it: with one aggregate holding every node, a request fits iff
    enough nodes are free (every size against a real attempt, on random states)."""
    import random

    from topoalloc.alloc.slurm_block import SlurmBlockAllocator, WholeMachineBlockAllocator

    p = tmp_path / "t.conf"
    p.write_text(text)
    a = make_allocator("block", f"slurm-block:{p}")
    assert isinstance(a, SlurmBlockAllocator) and a.counting == counts
    assert isinstance(a, WholeMachineBlockAllocator) == counts
    rng = random.Random(3)
    refused_with_room = 0
    for _ in range(60):
        a = SlurmBlockAllocator(a.topology)  # (the parent's own answers)
        for _ in range(rng.randrange(1, 6)):
            if a.free_count and a._fits_empty(Request(k := rng.randrange(1, a.free_count + 1))):
                a.allocate(Request(k))
        for k in range(1, a.free_count + 1):
            got = a.snapshot().allocate(Request(k)) if a._fits_empty(Request(k)) else None
            refused_with_room += got is None
    assert (refused_with_room == 0) == counts


@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative"])
def test_whole_machine_block_keeps_the_parents_schedule(sched):
    """The counting variant changes only the probes: the same start and the same nodes for every job as the parent
    (its general paths: guard, earliest_fit, conservative's plan on free nodes per base block)."""
    import numpy as np

    from topoalloc.alloc.slurm_block import SlurmBlockAllocator, WholeMachineBlockAllocator
    from topoalloc.workload import read_swf
    from topoalloc.workload.header import default_trace_path

    t = parse_machine(f"slurm-block:{BLOCKS}")
    w = read_swf(default_trace_path())
    w = w.take(np.arange(1500))
    runs = [simulate(w, machine=t, allocator=cls(t), scheduler=sched, clean=True, scale_sizes=0.25, record_allocations=True)
            for cls in (WholeMachineBlockAllocator, SlurmBlockAllocator)]
    fast, slow = runs
    assert np.array_equal(fast.start, slow.start)
    assert all(np.array_equal(fast.nodes_of(j), slow.nodes_of(j)) for j in range(len(fast)))
    assert len(fast) > 1000


def test_block_simulates_the_bundled_trace_under_every_scheduler():
    for sched in ("fcfs", "easy", "conservative"):
        r = simulate(machine=f"slurm-block:{BLOCKS}", allocator="block", scheduler=sched, clean=True, scale_sizes=0.25)
        assert r.summary()["jobs"] > 10_000


@pytest.mark.parametrize("text,line,what", [
    ("BlockName=a Nodes=n[0-3]\nBlockName=b Node=m0\n", 2, "unknown key 'Node'"),
    ("BlockName=a Nodes=n[0-3]\nBlockName=b Nodes=n3\n", 2, "in block 'a' already"),
    ("BlockName=a Nodes=n[0-3]\nBlockName=a Nodes=m0\n", 2, "defined again"),
    ("BlockName=a Nodes=n[0-3]\nBlockName=b Nodes=m[0-3]\nBlockSizes=4,12\n", 3, "larger power of two"),
    ("BlockName=a Nodes=n[0-3]\nBlockSizes=2\n", 2, "has 4 nodes"),
    ("BlockName=a Nodes=n[0-3]\nBlockSizes=4,8\n", 2, "the file has 1"),
    ("BlockName=a Nodes=n[0-3]\nBlockSizes=4,x\n", 2, "expected node counts"),
    ("BlockName=a Nodes=n[0-3]\nSwitchName=s Nodes=m0\n", 2, "slurm-tree:"),
    ("BlockName=a\n", 1, "has no Nodes"),
])
def test_bad_block_files_name_file_and_line(tmp_path, text, line, what):
    p = tmp_path / "topology.conf"
    p.write_text(text)
    with pytest.raises(InvalidArgument) as err:
        parse_machine(f"slurm-block:{p}")
    msg = str(err.value)
    assert f"{p}:{line}:" in msg and what in msg, msg


def test_a_block_file_read_as_a_tree_says_so(tmp_path):
    p = tmp_path / "topology.conf"
    p.write_text("BlockName=a Nodes=n[0-3]\n")
    with pytest.raises(InvalidArgument, match="slurm-block:"):
        parse_machine(f"slurm-tree:{p}")


@pytest.mark.parametrize("kind", ["slurm-tree", "slurm-block"])
def test_a_binary_file_is_one_error_naming_the_line(tmp_path, kind):
    p = tmp_path / "topology.conf"
    p.write_bytes(b"# fine\n\xff\xfe binary")
    with pytest.raises(InvalidArgument) as err:
        parse_machine(f"{kind}:{p}")
    assert f"{p}:2:" in str(err.value) and "binary" in str(err.value)
