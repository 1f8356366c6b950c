"""``topoalloc network``: synthetic traffic on one machine, one load or a sweep (parser in ``topoalloc.cli``)."""

from __future__ import annotations

import argparse
import sys

from ..outputs import print_json
from ..topology import parse_machine
from .config import NetworkConfig
from .plots import bisection_bound, plot_latency_throughput, plot_link_utilization
from .sim import parse_sweep, run_traffic, sweep
from .tables import network_tables

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    from ..errors import InvalidArgument
    from ..limits import check_memory
    from ..outputs import check_output

    plot = check_output((args.plot or "network-sweep.png") if args.sweep else args.plot, "--plot", (".png",))
    if args.plot and not args.sweep:
        raise InvalidArgument("--plot", args.plot, "--sweep as well (the plot is the latency-throughput curve of a sweep)")
    heatmap = check_output(args.heatmap, "--heatmap", (".png",))
    for name in ("cycles", "packet", "buffers", "vcs"):
        if getattr(args, name) < 1:
            raise InvalidArgument(f"--{name}", getattr(args, name), "a positive integer")
    top = parse_machine(args.topology)
    rates = parse_sweep(args.sweep) if args.sweep else [args.rate]
    # packets kept for the statistics (create, src, dst, job and the engine's per-packet state, ~100 bytes
    # each) for the highest rate, plus the route table (nodes^2 entries)
    packets = max(rates) * top.n_nodes * (args.cycles + (args.drain or args.cycles)) / max(args.packet, 1)
    check_memory(100 * packets + 16 * top.n_nodes**2, "--cycles", args.cycles, f"{args.cycles:,} cycles of {args.traffic} traffic on {top.n_nodes:,} nodes")
    tables = network_tables(top)
    cfg = NetworkConfig(
        packet=args.packet,
        buffers=args.buffers,
        vcs=args.vcs,
        router_delay=args.router_delay,
        switching=args.switching,
        mode=args.mode,
        engine=args.engine,
        routing=args.routing,
        valiant_seed=args.valiant_seed,
    )
    opts = dict(config=cfg, cycles=args.cycles, warmup=args.warmup, drain=args.drain, seed=args.seed)
    bound = bisection_bound(tables) if args.traffic == "uniform" else None
    if args.sweep:
        res = sweep(top, args.traffic, rates, **opts)
        out = res.summary()
        out["bisection_bound"] = None if bound is None else round(bound, 6)
        path = str(plot)
        plot_latency_throughput(res, path, bound=bound)
        out["plot"] = path
        if heatmap is not None and res.points:
            plot_link_utilization(res.points[-1], tables, str(heatmap))
            out["heatmap"] = args.heatmap
        if args.json:
            print_json(out)
        else:
            print(f"{out['machine']}, {out['traffic']}: zero-load latency {out['zero_load_latency']} cycles")
            print(f"  {'offered':>9} {'accepted':>9} {'latency':>10} {'p99':>8} {'blocking':>9}")
            for p in out["points"]:
                lat = "-" if p["latency_mean"] is None else f"{p['latency_mean']:10.2f}"
                p99 = "-" if p["latency_p99"] is None else f"{p['latency_p99']:8.1f}"
                blk = "-" if p["blocking_mean"] is None else f"{p['blocking_mean']:9.2f}"
                print(f"  {p['offered']:9.4f} {p['accepted']:9.4f} {lat:>10} {p99:>8} {blk:>9}{'  saturated' if p['saturated'] else ''}")
            sat = out["saturation_rate"]
            print(f"  saturation at offered {sat}; largest accepted {out['max_accepted']}; latency above 3x zero-load from {out['latency_knee']}" + (f"; bisection bound {bound:.4f}" if bound else ""))
            print(f"  plot: {path}")
        return 0
    one = run_traffic(top, args.traffic, args.rate, **opts)
    out = one.summary()
    if bound is not None:
        out["bisection_bound"] = round(bound, 6)
    if heatmap is not None:
        plot_link_utilization(one, tables, str(heatmap))
        out["heatmap"] = args.heatmap
    if args.json:
        print_json(out)
    else:
        for k, v in out.items():
            print(f"{k:22s} {v}")
    return 0
