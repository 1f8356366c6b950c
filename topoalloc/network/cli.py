"""``topoalloc network``: synthetic traffic on one machine, one load or a sweep (parser in ``topoalloc.cli``)."""

from __future__ import annotations

import argparse
import json
import sys

from ..topology import parse_machine
from .config import NetworkConfig
from .plots import bisection_bound, plot_latency_throughput, plot_link_utilization
from .sim import parse_sweep, run_traffic, sweep
from .tables import network_tables

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    top = parse_machine(args.topology)
    tables = network_tables(top)
    cfg = NetworkConfig(
        packet=args.packet,
        buffers=args.buffers,
        vcs=args.vcs,
        router_delay=args.router_delay,
        switching=args.switching,
        mode=args.mode,
        engine=args.engine,
    )
    opts = dict(config=cfg, cycles=args.cycles, warmup=args.warmup, drain=args.drain, seed=args.seed)
    bound = bisection_bound(tables) if args.traffic == "uniform" else None
    if args.sweep:
        res = sweep(top, args.traffic, parse_sweep(args.sweep), **opts)
        out = res.summary()
        out["bisection_bound"] = None if bound is None else round(bound, 6)
        path = args.plot or "network-sweep.png"
        plot_latency_throughput(res, path, bound=bound)
        out["plot"] = path
        if args.heatmap and res.points:
            plot_link_utilization(res.points[-1], tables, args.heatmap)
            out["heatmap"] = args.heatmap
        if args.json:
            json.dump(out, sys.stdout, indent=2)
            sys.stdout.write("\n")
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
    if args.heatmap:
        plot_link_utilization(one, tables, args.heatmap)
        out["heatmap"] = args.heatmap
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for k, v in out.items():
            print(f"{k:22s} {v}")
    return 0
