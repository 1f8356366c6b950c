"""Machine families on real traces under EASY: what optical circuit switches gain, and one table per family.

Traces (Parallel Workloads Archive, cleaned logs): NASA iPSC/860, SDSC-SP2,
CTC-SP2, SDSC-BLUE; the first ``--jobs`` jobs of each (default 20,000), sizes
scaled to the machine by the *proportional* rule (every size × machine nodes
/ the trace's MaxProcs), then ``--clean``.  Allocation on the machines of
units is the slice allocator; a job's size becomes units by the machine's
shape rule (TPU: ``pow2``; Tofu-D and Blue Gene/Q: ``cubic``).

Columns: jobs simulated, mean wait (s), mean bounded slowdown, utilization
(Σ size·run over the span, with size the *requested* processors, so rounding
up to whole units shows as lost utilization), and mean pairwise hops
(``mean_pairwise_l1``: mean over jobs of ≥ 2 nodes of the average hop
distance between their nodes on the node torus).  For ``rule=ocs`` that hop
figure is measured where the cubes lie in the pod's grid; the optical
switches wire them into the slice's own torus, so it overstates the hops a
job's messages take (the slice's own torus would give the same figure as the
static rule's most compact box).

``--only twist``: on the TPU v4 pod, each slice's *own* network (``mean_slice_hops``: the
mean over jobs of the average hop distance between a slice's chips on the torus, mesh or
twisted torus it is wired as) under the static rule, OCS, and OCS with twisted tori for
the k×k×2k and k×2k×2k slices; and the plain and twisted figures of every v4 slice shape.

``--only routers-network``: the placement policies on the dragonfly and the fat tree with the
network simulator: after its run every job sends 64 one-packet messages between random pairs
of its processes (flit level, wormhole, three VCs; the dragonfly under minimal and under Valiant's
routing, the fat tree under up*/down*), and the table gains the mean communication time, packet
latency and blocking per job (cycles; one cycle = one second).

Usage: python benchmarks/bench_families.py [--jobs N] [--only ocs|families|routers|routers-network|slurm|slurm-conservative|twist]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

TRACES = Path(os.environ.get("TOPOALLOC_TRACES", Path(__file__).resolve().parents[1].parent / "shared" / "traces"))
LOGS = [("NASA", "NASA-iPSC-1993-3.1-cln.swf"), ("SDSC-SP2", "SDSC-SP2-1998-4.2-cln.swf.gz"), ("CTC-SP2", "CTC-SP2-1996-3.1-cln.swf.gz"), ("SDSC-BLUE", "SDSC-BLUE-2000-4.2-cln.swf.gz")]
FAMILIES = [
    ("TPU v4 pod (tpu:v4), static torus", "tpu:v4", "slice:rule=static"),
    ("TPU v4 pod (tpu:v4), optical circuit switches", "tpu:v4", "slice:rule=ocs"),
    ("Fugaku, Tofu-D (tofu:fugaku)", "tofu:fugaku", "slice"),
    ("Sequoia, Blue Gene/Q (bgq:sequoia)", "bgq:sequoia", "slice"),
]


def run(trace: Path, jobs: int, machine: str, allocator: str, *, racks_of: int | None = None, scheduler: str = "easy", most: int | None = None) -> dict:
    """One simulation's summary, sizes scaled to the machine's nodes (to ``most`` if given); ``racks_of``: also the mean
    number of racks (node id // racks_of) per job of >= 2 nodes."""
    import topoalloc
    from topoalloc.topology import parse_machine
    from topoalloc.workload import read_swf

    w = read_swf(trace)
    w = w.take(np.arange(min(jobs, len(w))))
    n = parse_machine(machine).n_nodes
    factor = (most or n) / (w.max_procs or int(w.size.max()))
    t0 = time.perf_counter()
    r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler=scheduler, clean=True, scale_sizes=factor, record_allocations=racks_of is not None)
    s = r.summary()
    s["seconds"] = time.perf_counter() - t0
    s["changes"] = r.reservation_changes
    if racks_of is not None:
        spans = [np.unique(r.nodes_of(j) // racks_of).size for j in range(len(r)) if r.allocated_size[j] >= 2]
        s["racks_per_job"] = float(np.mean(spans)) if spans else float("nan")
    return s


def row(name: str, s: dict) -> str:
    return (f"| {name} | {s['jobs']:,} | {s['mean_wait']:,.0f} | {s['mean_bounded_slowdown']:,.1f} | {s['utilization']:.3f} | "
            f"{s.get('mean_pairwise_l1', float('nan')):.2f} | {s['seconds']:.1f} |")


HEAD = "| trace | jobs | mean wait (s) | mean bounded slowdown | utilization | mean pairwise hops | seconds |\n|---|---:|---:|---:|---:|---:|---:|"


ROUTER_MACHINES = [("dragonfly:p=4,a=8,h=4", "a dragonfly of 33 groups × 8 routers × 4 nodes (1,056 nodes)"), ("fattree:k=8,n=3", "an 8-ary 3-tree (512 nodes)")]
POLICIES = ["contiguous", "random_nodes", "random_routers", "round_robin"]


def routers(jobs: int) -> None:
    """Placement policies on router networks: NASA and SDSC-SP2, first ``jobs`` jobs, sizes scaled proportionally."""
    print(f"first {jobs:,} jobs, sizes scaled proportionally, EASY, --clean\n")
    for machine, what in ROUTER_MACHINES:
        print(f"### `{machine}`: {what}\n")
        print("| trace | policy | jobs | mean wait (s) | utilization | mean pairwise hops | seconds |\n|---|---|---:|---:|---:|---:|---:|")
        for label, file in LOGS[:2]:
            for policy in POLICIES:
                s = run(TRACES / file, jobs, machine, policy)
                print(f"| {label} | {policy} | {s['jobs']:,} | {s['mean_wait']:,.0f} | {s['utilization']:.3f} | {s['mean_pairwise_l1']:.2f} | {s['seconds']:.1f} |", flush=True)
        print()


#: --only routers-network: what every job sends after its run (service = run time + communication, one cycle = one
#: second of the trace): 64 messages of one 8-flit packet between uniform random pairs of its processes, so the
#: messages cross the whole placement; flit-level wormhole, 4-flit buffers, three VCs (Valiant's routing on the
#: dragonfly needs a class per global hop; every run gets the same three), router delay 1.
ROUTER_NETWORK = {"traffic": "random-pairs:messages=64", "service": "add", "contention": False}
ROUTER_CONFIG = "wormhole:packet=8,buffers=4,vcs=3,router_delay=1,mode=flit"


def routers_network(jobs: int) -> None:
    """Placement policies on router networks with the network simulator: the four logs, communication time per job
    (the dragonfly under minimal and under Valiant's routing, the fat tree under its up*/down* routing)."""
    import topoalloc
    from topoalloc.topology import parse_machine
    from topoalloc.workload import read_swf

    print(f"first {jobs:,} jobs, sizes scaled proportionally, EASY, --clean; every job then sends 64 one-packet messages between random pairs of its processes ({ROUTER_CONFIG})\n")
    for machine, what in ROUTER_MACHINES:
        routings = ["minimal", "valiant"] if machine.startswith("dragonfly") else ["minimal"]
        print(f"### `{machine}`: {what}\n")
        print("| trace | policy | routing | jobs | mean wait (s) | utilization | mean pairwise hops | comm time (cycles) | packet latency | packet blocking | seconds |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        n = parse_machine(machine).n_nodes
        for label, file in LOGS:
            w = read_swf(TRACES / file)
            w = w.take(np.arange(min(jobs, len(w))))
            factor = n / (w.max_procs or int(w.size.max()))
            for policy in POLICIES:
                for routing in routings:
                    t0 = time.perf_counter()
                    network = ROUTER_CONFIG + ("" if routing == "minimal" else ",routing=valiant")
                    r = topoalloc.simulate(w, machine=machine, allocator=policy, scheduler="easy", clean=True, scale_sizes=factor, network=network, **ROUTER_NETWORK)
                    s = r.summary()
                    net = s["network"]
                    print(f"| {label} | {policy} | {routing} | {s['jobs']:,} | {s['mean_wait']:,.0f} | {s['utilization']:.3f} | {s['mean_pairwise_l1']:.2f} | "
                          f"{net['mean_comm_time']:.1f} | {net['mean_packet_latency']:.1f} | {net['mean_packet_blocking']:.2f} | {time.perf_counter() - t0:.1f} |", flush=True)
        print()


def slurm_files(folder: Path) -> tuple[str, str, str]:
    """An NVL72-style cluster of 16 racks × 18 nodes (288 nodes), written three ways: as topology/block
    (BlockSizes 18, 36, ..., 288), as topology/tree (a leaf switch per rack, one per 4 racks, a root), and as
    topology/block whose largest blocks are half the machine (BlockSizes 18 ... 144: a job spans at most 8 racks,
    and the allocator is no longer a counting one)."""
    racks = 16
    block = [f"BlockName=rack{r:02d} Nodes=n[{r * 18:03d}-{r * 18 + 17:03d}]" for r in range(racks)]
    (folder / "block144.conf").write_text("\n".join([*block, "BlockSizes=18,36,72,144"]) + "\n")
    block.append("BlockSizes=18,36,72,144,288")
    tree = [f"SwitchName=leaf{r:02d} Nodes=n[{r * 18:03d}-{r * 18 + 17:03d}]" for r in range(racks)]
    tree += [f"SwitchName=mid{m} Switches=leaf[{4 * m:02d}-{4 * m + 3:02d}]" for m in range(racks // 4)]
    tree.append(f"SwitchName=root Switches=mid[0-{racks // 4 - 1}]")
    (folder / "block.conf").write_text("\n".join(block) + "\n")
    (folder / "tree.conf").write_text("\n".join(tree) + "\n")
    return f"slurm-block:{folder / 'block.conf'}", f"slurm-tree:{folder / 'tree.conf'}", f"slurm-block:{folder / 'block144.conf'}"


def _slurm_cases(jobs: int, what: str, columns: list[str]) -> Iterator[tuple[str, str, str, str, str, int | None]]:
    """The 16-rack cluster written three ways, in a temporary folder, and a table's head: (trace label, trace file,
    placement, machine, allocator, largest job) for every log and placement (topology/block, topology/block to 144
    nodes, topology/tree, any free nodes)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        block, tree, half = slurm_files(Path(d))
        print(f"first {jobs:,} jobs of each trace, sizes scaled proportionally to 288 nodes (to 144 where the largest block is "
              f"144), {what}--clean; 16 racks x 18 nodes\n")
        print("| trace | placement | " + " | ".join(columns) + " |")
        print("|---|---|" + "---:|" * len(columns))
        for label, file in LOGS:
            for placement, machine, alloc, most in (("topology/block", block, "block", None), ("topology/block, blocks to 144", half, "block", 144),
                                                    ("topology/tree", tree, "tree", None), ("any free nodes", tree, "flat", None)):
                yield label, file, placement, machine, alloc, most


def slurm(jobs: int) -> None:
    """Slurm's topology plugins on one cluster: block placement against tree placement and any free nodes."""
    columns = ["jobs", "mean wait (s)", "mean bounded slowdown", "utilization", "racks per job", "seconds"]
    for label, file, what, machine, alloc, most in _slurm_cases(jobs, "EASY, ", columns):
        s = run(TRACES / file, jobs, machine, alloc, racks_of=18, most=most)
        print(f"| {label} | {what} | {s['jobs']:,} | {s['mean_wait']:,.0f} | {s['mean_bounded_slowdown']:,.1f} | {s['utilization']:.3f} | "
              f"{s['racks_per_job']:.2f} | {s['seconds']:.1f} |", flush=True)


def slurm_conservative(jobs: int) -> None:
    """Slurm's topology plugins under conservative backfilling against EASY: the block plugin's plan runs on free
    nodes per base block (a StatePlan) where no block holds the whole machine, the tree plugin's, any free nodes' and
    the block plugin's with a whole-machine block on counts."""
    columns = ["jobs", "EASY s", "conservative s", "× EASY", "mean wait, conservative (s)", "plan changes", "µs per change"]
    for label, file, what, machine, alloc, most in _slurm_cases(jobs, "", columns):
        e = run(TRACES / file, jobs, machine, alloc, most=most)
        c = run(TRACES / file, jobs, machine, alloc, scheduler="conservative", most=most)
        print(f"| {label} | {what} | {c['jobs']:,} | {e['seconds']:.2f} | {c['seconds']:.2f} | {c['seconds'] / e['seconds']:.1f} | "
              f"{c['mean_wait']:,.0f} | {c['changes']:,} | {1e6 * c['seconds'] / max(1, c['changes']):.1f} |", flush=True)


def twist(jobs: int) -> None:
    """The slices' own networks on a TPU v4 pod: static, OCS, OCS with twisted tori."""
    import topoalloc
    from topoalloc.topology import parse_machine
    from topoalloc.topology.slicenet import slice_net, twist_kind
    from topoalloc.workload import read_swf

    print("### Every TPU v4 slice shape of the `pow2` rule: plain and twisted torus (chips)\n")
    print("| cubes | chips | mean hops, torus | diameter | mean hops, twisted | diameter | change |\n|---:|---|---:|---:|---:|---:|---:|")
    for cubes, sides in [(1, (4, 4, 4)), (2, (4, 4, 8)), (4, (4, 8, 8)), (8, (8, 8, 8)), (16, (8, 8, 16)), (32, (8, 16, 16)), (64, (16, 16, 16))]:
        p = slice_net(sides, (True,) * 3)
        if twist_kind(sides) is None:
            print(f"| {cubes} | {'x'.join(map(str, sides))} | {p.mean_hops:.3f} | {p.diameter} | (not twistable) | | |")
            continue
        t = slice_net(sides, (True,) * 3, True)
        print(f"| {cubes} | {'x'.join(map(str, sides))} | {p.mean_hops:.3f} | {p.diameter} | {t.mean_hops:.3f} | {t.diameter} | {(t.mean_hops / p.mean_hops - 1) * 100:+.1f} % |")
    print(f"\n### The slices' own networks on real traces (`tpu:v4`, first {jobs:,} jobs, sizes scaled proportionally, EASY, --clean)\n")
    print("| trace | jobs | mean slice hops static | OCS | OCS twisted | twisted vs OCS | jobs on a twisted slice | mean wait static / OCS / twisted (s) | seconds (3 runs) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    n = parse_machine("tpu:v4").n_nodes
    for label, file in LOGS:
        w = read_swf(TRACES / file)
        w = w.take(np.arange(min(jobs, len(w))))
        factor = n / (w.max_procs or int(w.size.max()))
        got = []
        t0 = time.perf_counter()
        for alloc in ("slice:rule=static", "slice:rule=ocs", "slice:rule=ocs,twist=true"):
            r = topoalloc.simulate(w, machine="tpu:v4", allocator=alloc, scheduler="easy", clean=True, scale_sizes=factor)
            got.append((r, r.summary()))
        sec = time.perf_counter() - t0
        (_, st), (ro, oc), (rt, tw) = got
        assert np.array_equal(ro.start, rt.start), "the twist must not change the schedule"
        share = float((rt.slice_hops < ro.slice_hops).mean())
        change = (tw["mean_slice_hops"] / oc["mean_slice_hops"] - 1) * 100
        print(f"| {label} | {st['jobs']:,} | {st['mean_slice_hops']:.3f} | {oc['mean_slice_hops']:.3f} | {tw['mean_slice_hops']:.3f} | {change:+.1f} % | {share:.1%} | "
              f"{st['mean_wait']:,.0f} / {oc['mean_wait']:,.0f} / {tw['mean_wait']:,.0f} | {sec:.1f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--only", choices=["ocs", "families", "routers", "routers-network", "slurm", "slurm-conservative", "twist"], default=None)
    args = p.parse_args()
    if args.only == "routers":
        routers(args.jobs)
        return
    if args.only == "routers-network":
        routers_network(args.jobs)
        return
    if args.only == "slurm":
        slurm(args.jobs)
        return
    if args.only == "slurm-conservative":
        slurm_conservative(args.jobs)
        return
    if args.only == "twist":
        twist(args.jobs)
        return
    print(f"first {args.jobs:,} jobs of each trace, sizes scaled proportionally, EASY, --clean\n")
    results: dict[tuple[str, str], dict] = {}
    families = FAMILIES[:2] if args.only == "ocs" else FAMILIES
    for title, machine, allocator in families:
        for label, file in LOGS:
            results[(title, label)] = run(TRACES / file, args.jobs, machine, allocator)
    if args.only != "families":
        print("### What optical circuit switches gain on a TPU v4 pod (OCS against the static torus)\n")
        print("| trace | mean wait static (s) | mean wait OCS (s) | wait change | utilization static | utilization OCS | change |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, _ in LOGS:
            st, oc = results[(FAMILIES[0][0], label)], results[(FAMILIES[1][0], label)]
            dw = (oc["mean_wait"] - st["mean_wait"]) / st["mean_wait"] * 100 if st["mean_wait"] else float("nan")
            du = (oc["utilization"] - st["utilization"]) * 100
            print(f"| {label} | {st['mean_wait']:,.0f} | {oc['mean_wait']:,.0f} | {dw:+.1f} % | {st['utilization']:.3f} | {oc['utilization']:.3f} | {du:+.1f} points |")
        print()
    if args.only != "ocs":
        for title, _, allocator in families:
            print(f"### {title}, allocator `{allocator}`\n")
            print(HEAD)
            for label, _ in LOGS:
                print(row(label, results[(title, label)]))
            print()


if __name__ == "__main__":
    main()
