"""Command line: ``topoalloc simulate ...``.

Every command follows the same rules:

* bad input (a missing file, a malformed trace line, an unknown allocator, a
  job wider than the machine, a size this machine cannot hold) ends the
  program with exit status 2 and one line on stderr naming the file, line,
  argument and value — never a traceback;
* output paths are checked before any work, and files are written atomically
  (:mod:`topoalloc.outputs`); if writing fails after the work, the result is
  still printed, then the error (exit 2);
* ``--json`` output is strict JSON (``null`` where a value is not defined);
* Ctrl-C prints one line (``interrupted after N s``, with the best found so
  far where there is one) and exits 130;
* long commands show a progress bar on a terminal (not with ``--quiet``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from .errors import TopoallocError
from .outputs import print_json

__all__ = ["main", "build_parser"]


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    from .workload.steps import ESTIMATE_POLICIES, FILTER_HELP, STANDARD_CLEAN

    p = argparse.ArgumentParser(prog="topoalloc", description="Processor allocation and scheduling simulation.")
    p.add_argument("--version", action="version", version=_version())
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE", help="import MODULE first, so the allocators, machines, schedulers or metrics it registers can be named (repeatable; installed plugins load by themselves)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("simulate", help="simulate a workload trace on a machine", description="Simulate a workload trace on a machine.")
    s.add_argument("--trace", metavar="PATH", help="SWF trace, plain or gzip (default: the bundled NASA iPSC/860 log)")
    s.add_argument("--machine", metavar="SPEC", help="machine, e.g. flat:128 (default: flat with the trace's MaxProcs)")
    s.add_argument("--allocator", default="flat", metavar="NAME", help="allocator, with options as name:key=value,... (default: flat)")
    s.add_argument("--scheduler", default="easy", metavar="NAME", help="fcfs, easy or conservative; queue order as e.g. easy:order=sjf (default: easy)")
    g = s.add_argument_group("filters (nothing is dropped unless asked; each reports what it did)")
    g.add_argument("--clean", action="store_true", help=f"apply the standard set: {', '.join(STANDARD_CLEAN)}")
    for name, text in FILTER_HELP.items():
        g.add_argument(f"--{name}", action="append_const", const=name, dest="filters", help=text)
    s.add_argument("--estimate", choices=ESTIMATE_POLICIES, default="double-runtime", help="estimate for a missing requested time (default: double-runtime)")
    t = s.add_argument_group("transforms (applied before the filters)")
    t.add_argument("--scale-sizes", type=_positive_float, metavar="F", help="multiply sizes by F, rounding up")
    t.add_argument("--round-pow2", action="store_true", help="round sizes up to a power of two")
    t.add_argument("--work-multiple", type=_positive_float, metavar="C", help="multiply run and requested times by C")
    t.add_argument("--keep-estimates", action="store_true", help="with --work-multiple, leave requested times as logged")
    s.add_argument("--seed", type=int, default=None, help="seed of the allocator's random choices (only for allocators that make some, e.g. random)")
    s.add_argument("--runtime-model", metavar="SPEC", default=None, help="allocation-dependent run times, e.g. locality:alpha=0.1,metric=pairwise_l1 (a model; off by default)")
    n = s.add_argument_group("communication (jobs send messages on a simulated network; service time emerges from it)")
    n.add_argument("--network", metavar="SPEC", help="wormhole|vct|saf[:packet=8,buffers=4,vcs=1,router_delay=1,mode=flit|packet]")
    n.add_argument("--traffic", metavar="SPEC", default="all-to-all:messages=20,compute=0", help="what each job sends: all-to-all, one-to-all, ring, stencil, random-pairs [:messages=M,compute=C] (default all-to-all:messages=20,compute=0)")
    n.add_argument("--cycle", type=_positive_float, default=1.0, metavar="T", help="simulation time of one network cycle (default 1)")
    n.add_argument("--service", choices=["communication", "add"], default="communication", help="a job ends when its last message is delivered, or that plus its trace run time (default communication)")
    n.add_argument("--no-contention", action="store_true", help="skip running each job alone for its contention slowdown")
    s.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    s.add_argument("--jobs-out", metavar="FILE", help="write the per-job table (.csv, or .parquet with pyarrow)")
    s.add_argument("--engine", choices=["auto", "compiled", "python"], default="auto",
                   help="auto: the compiled kernel where it applies, else the general engine, saying why on stderr; compiled: the kernel or an "
                        "error saying why not; python: the general engine, the reference (the same results; default auto)")
    s.add_argument("--quiet", action="store_true", help="no progress bar and no filter report on stderr")

    pt = sub.add_parser("partition", help="partition a semitorus (EP or NEP) and show the pieces", description="Allocate one request on a fresh torus and print the available set and the allocated piece.")
    pt.add_argument("--scheme", choices=["ep", "nep"], default="nep")
    pt.add_argument("--shape", required=True, metavar="AxBx...", help="the torus, first side fastest (e.g. 2x4x4x8)")
    pt.add_argument("--nodes", required=True, type=int, metavar="M", help="processors requested (rounded up to a power of two)")
    pt.add_argument("--mesh", action="store_true", help="a mesh (no wrap-around links) instead of a torus")
    pt.add_argument("--convert", choices=["collapse", "pair"], default="collapse", help="semitorus-to-torus conversion (default: collapse)")
    pt.add_argument("--nep-order", choices=["exhaust-largest", "balanced"], default="exhaust-largest")
    pt.add_argument("--json", action="store_true")

    pr = sub.add_parser("prove", help="run the Z3 proofs and print what was proved", description="Run the Z3 proofs about the allocators' own output.")
    pr.add_argument("family", choices=["torus", "hypercube", "deadlock"], help="which proofs")
    pr.add_argument("--full", action="store_true", help="torus: also prove the conversions in every orientation of every shape (slow); deadlock: larger machines")
    pr.add_argument("--max-dims", type=int, default=None, help="torus: largest number of semitorus dimensions (default 6, at most 8)")
    pr.add_argument("--max-order", type=int, default=None, help="torus: largest semitorus, 2^ORDER nodes (default 12, at most 20); hypercube: largest cube dimension the meshes fit (default 10, at most 16)")
    pr.add_argument("--workers", type=int, default=1, help="torus: processes for the conversion proofs (default 1, at most the processors; results do not depend on it)")
    pr.add_argument("--json", action="store_true")
    pr.add_argument("--quiet", action="store_true", help="no progress display on stderr")

    cv = sub.add_parser("curve", help="print or write a curve ordering of a machine", description="Build a curve ordering and print it as 'node rank' lines (or write it to a file), with its non-unit step fraction on stderr.")
    cv.add_argument("curve", metavar="CURVE", help="row_major, snake, hilbert, hilbert_nd, zorder, gray, or an ordering file")
    cv.add_argument("--machine", required=True, metavar="SPEC", help="a machine, e.g. mesh:16x8 or mesh:8x8x5")
    cv.add_argument("--out", metavar="FILE", help="write the ordering here instead of stdout")
    af = sub.add_parser("afl", help="embed an X×Y mesh in a fresh hypercube with the AFL and show the leftover subcubes", description="Allocate one X×Y mesh on a fresh n-cube with Turner's Auxiliary Free List and print its k-cube, the mesh's nodes and the leftover subcubes.")
    af.add_argument("--cube", required=True, type=int, metavar="N", help="dimension of the hypercube (e.g. 10)")
    af.add_argument("--mesh", required=True, metavar="XxY", help="the mesh request, e.g. 20x30")
    af.add_argument("--json", action="store_true", help='print {"cube", "mesh": [[x, y, node], ...], "leftover"} as JSON')

    nw = sub.add_parser("network", help="simulate synthetic traffic on a machine's network (wormhole flits or packets)", description="Simulate synthetic traffic on a mesh, torus, hypercube or router network (dragonfly, fat tree, a Slurm tree): one load (--rate) or a latency-throughput sweep (--sweep) with its saturation point. Rates are flits per node per cycle.")
    nw.add_argument("--topology", required=True, metavar="SPEC", help="mesh:8x8, torus:4x4x4, hypercube:6, dragonfly:p=2,a=4,h=2, fattree:k=4,n=3, ...")
    nw.add_argument("--traffic", default="uniform", metavar="NAME", help="uniform, transpose, bit-complement, bit-reverse, shuffle, tornado, neighbour, hotspot[:node=N,fraction=F], group-shift (dragonfly) (default uniform)")
    nw.add_argument("--rate", type=float, default=0.1, help="offered load in flits per node per cycle (default 0.1)")
    nw.add_argument("--packet", type=int, default=8, help="flits per packet (default 8)")
    nw.add_argument("--buffers", type=int, default=16, help="input buffer flits per virtual channel (default 16)")
    nw.add_argument("--vcs", type=int, default=1, help="virtual channels (default 1; >= 2 gives tori dateline classes and the dragonfly its class change at the global hop)")
    nw.add_argument("--router-delay", type=int, default=1, help="router delay R in cycles (default 1)")
    nw.add_argument("--switching", choices=["wormhole", "vct", "saf"], default="wormhole", help="wormhole, virtual cut-through or store-and-forward")
    nw.add_argument("--mode", choices=["flit", "packet"], default="flit", help="flit: cycle-accurate; packet: the faster packet-level model")
    nw.add_argument("--cycles", type=int, default=20000, help="cycles of injection, warm-up included (default 20000)")
    nw.add_argument("--warmup", type=int, default=None, help="unmeasured first cycles (default cycles/10)")
    nw.add_argument("--drain", type=int, default=None, help="most extra cycles to deliver the measured packets (default: cycles)")
    nw.add_argument("--sweep", metavar="START:STOP:STEP", help="sweep the rate (e.g. 0.02:0.5:0.02), draw the latency-throughput curve, find saturation")
    nw.add_argument("--plot", metavar="PNG", help="with --sweep: where to draw the curve (default network-sweep.png)")
    nw.add_argument("--heatmap", metavar="PNG", help="draw the link utilisation (of the last sweep point)")
    nw.add_argument("--routing", choices=["minimal", "valiant"], default="minimal", help="minimal (the machine's own) or Valiant's through a random intermediate group (dragonfly; needs --vcs >= 3)")
    nw.add_argument("--valiant-seed", type=int, default=0, help="seed of Valiant's intermediate groups (default 0)")
    nw.add_argument("--engine", choices=["auto", "c", "python"], default="auto", help="compiled engine or the pure-Python reference (same results)")
    nw.add_argument("--seed", type=int, default=0)
    nw.add_argument("--json", action="store_true")

    from .ilp.cli import add_parsers as _add_ilp_parsers  # order, minspan, gap (CP-SAT)

    _add_ilp_parsers(sub)

    sw = sub.add_parser("sweep", help="run every cell of an experiment spec (TOML) on Dask, storing each result as it finishes", description="Run every cell of an experiment spec not yet in the results folder: on a local Dask cluster sized to the cores (default), in this process (--workers 1), on a running Dask scheduler (--cluster tcp://HOST:PORT) or on batch jobs (--cluster slurm|pbs|sge). Re-running the same command resumes.")
    sw.add_argument("spec", metavar="SPEC", help="the experiment spec, a TOML file")
    sw.add_argument("--out", required=True, metavar="DIR", help="the results folder (created; a Parquet dataset, one file per cell)")
    _add_engine_options(sw)
    sw.add_argument("--quick", action="store_true", help="apply the spec's [quick] overrides (a smaller grid)")
    sw.add_argument("--report", action="store_true", help="write DIR/report.html when the sweep is done")

    rp = sub.add_parser("report", help="write a self-contained HTML report of a results folder", description="Write DIR/report.html (figures embedded) and the figures as PNG and SVG beside it.")
    rp.add_argument("dir", metavar="DIR", help="a results folder written by topoalloc sweep or reproduce")
    rp.add_argument("--out", metavar="HTML", help="where to write the report (default DIR/report.html)")

    rr = sub.add_parser("reproduce", help="reproduce a paper's experiments (a built-in spec) and write its report", description="Run a built-in experiment spec with the same engine as sweep, then write the report with the table of the paper's claims.")
    rr.add_argument("paper", choices=_papers(), help="which paper")
    rr.add_argument("--quick", action="store_true", help="a small grid that runs in a minute or two")
    rr.add_argument("--out", metavar="DIR", help="the results folder (default topoalloc-PAPER, or topoalloc-PAPER-quick)")
    _add_engine_options(rr)

    an = sub.add_parser("animate", help="animate a simulation: the machine's occupancy over time (GIF, MP4 or an HTML player)", description="Simulate, then draw the machine at each event: a 2-D mesh as a grid, a 3-D mesh or torus as slices, a hypercube as its Gray-code grid; each job a colour. Writes a GIF (--out x.gif), an H.264 video (--out x.mp4, with the video extra: pip install \"topoalloc[video]\") or an HTML player with a time slider (--out x.html).")
    an.add_argument("--trace", metavar="PATH", help="SWF trace (default: the bundled NASA iPSC/860 log)")
    an.add_argument("--machine", required=True, metavar="SPEC", help="mesh:AxB, mesh:AxBxC, torus:..., hypercube:N")
    an.add_argument("--allocator", default="flat", metavar="NAME")
    an.add_argument("--scheduler", default="easy", metavar="NAME")
    an.add_argument("--clean", action="store_true", help="apply the standard filters")
    an.add_argument("--jobs", type=int, default=200, metavar="N", help="animate the first N jobs (default 200)")
    an.add_argument("--frames", type=int, default=120, metavar="F", help="at most F frames, evenly spaced in time (default 120)")
    an.add_argument("--out", required=True, metavar="FILE", help="animation.gif, animation.mp4 or animation.html")

    ls = sub.add_parser("list", help="list registered allocators, schedulers, topologies and metrics")
    ls.add_argument("what", nargs="?", choices=["allocators", "schedulers", "topologies", "metrics"], default=None)
    return p


def _papers() -> list[str]:
    from .experiments.reproduce import PAPERS

    return list(PAPERS)


def _add_engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=None, metavar="N", help="worker processes (default: one per core; 1 runs in this process without Dask; with slurm|pbs|sge: batch jobs)")
    p.add_argument("--cluster", metavar="ADDRESS", help="tcp://HOST:PORT of a running Dask scheduler, or slurm, pbs, sge (needs dask-jobqueue: pip install 'topoalloc[cluster]')")
    p.add_argument("--cluster-option", action="append", default=[], metavar="KEY=VALUE", help="an option of the batch cluster (cores=4, memory=8GB, queue=..., walltime=01:00:00, account=...); repeatable")
    p.add_argument("--traces", action="append", default=[], metavar="DIR", help="a folder to look for traces named in the spec (repeatable; also $TOPOALLOC_TRACES)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _version() -> str:
    from . import __version__

    return f"topoalloc {__version__}"


def _simulate(args: argparse.Namespace, plugins: Sequence[str] = ()) -> int:
    from .outputs import check_output
    from .progress import Progress

    jobs_out = check_output(args.jobs_out, "--jobs-out", (".csv", ".parquet"))
    if args.seed is not None:
        _check_seed_used(args.allocator, args.seed)
    with Progress("simulating", enabled=not args.quiet) as progress:
        from .counts import run as run_counts  # a flat run over counts, without numpy, where it is exact

        lean = run_counts(args, plugins, progress)
        if lean is None:
            result = _simulate_general(args, progress)
    if lean is not None:
        summary, reports = lean
        from .counts import METRIC_UNITS as units
    else:
        summary, reports = result.summary(), result.reports
        from .registry import METRICS

        units = {name: METRICS.create(name).unit for name in METRICS.names()}
    for rep in reports:
        if rep.warning or not args.quiet:
            print(f"topoalloc: {rep}", file=sys.stderr)
    if lean is None and result.engine_note and not args.quiet:
        print(f"topoalloc: the general engine ran this: {result.engine_note}", file=sys.stderr)
    if args.json:
        print_json(summary)
    else:
        _print_summary(summary, units)
    sys.stdout.flush()
    if jobs_out is not None:  # after the summary: a failure here must not lose it
        _write_after("--jobs-out", jobs_out, lambda: result.write_jobs(jobs_out))
    return 0


def _simulate_general(args: argparse.Namespace, progress: Any) -> Any:
    """The run of :func:`topoalloc.api.simulate` the command ``args`` asks for."""
    from .api import simulate

    return simulate(
        args.trace,
        machine=args.machine,
        allocator=args.allocator,
        scheduler=args.scheduler,
        clean=args.clean,
        filters=args.filters or (),
        estimate=args.estimate,
        scale_sizes=args.scale_sizes,
        round_pow2=args.round_pow2,
        work_multiple=args.work_multiple,
        scale_estimates=not args.keep_estimates,
        seed=args.seed,
        progress=progress,
        runtime_model=args.runtime_model,
        network=args.network,
        traffic=args.traffic,
        cycle=args.cycle,
        service=args.service,
        contention=not args.no_contention,
        engine=args.engine,
    )


def _write_after(argument: str, path: Any, write: Any) -> None:
    """Write an extra output once the work is done; an OS failure becomes one line (exit 2)."""
    from .errors import InvalidArgument

    try:
        write()
    except OSError as exc:
        raise InvalidArgument(argument, str(path), f"a file that can be written; writing it failed: {exc.strerror or exc} (the old file, if any, is unchanged)") from None


def _check_seed_used(allocator: str, seed: int) -> None:
    """``--seed`` only where a component makes random choices: an allocator whose factory takes a seed."""
    from . import spec as _spec
    from .errors import InvalidArgument
    from .registry import ALLOCATORS

    name = _spec.parse(allocator, argument="--allocator").name
    if "seed" not in ALLOCATORS.entry(name).options(ALLOCATORS.fixed):
        random_ones = [n for n in ALLOCATORS.names() if "seed" in ALLOCATORS.entry(n).options(ALLOCATORS.fixed)]
        raise InvalidArgument("--seed", seed, f"an allocator that makes random choices ({', '.join(random_ones) or 'none is registered'}); {name!r} makes none")


def _print_summary(summary: dict, units: dict[str, str]) -> None:
    """The summary as text: the metrics ``units`` names (name to unit), then what the run adds."""
    print(f"{summary['jobs']} jobs on {summary['machine']} — allocator {summary['allocator']}, scheduler {summary['scheduler']}")
    for name, unit in units.items():
        unit = f" {unit}" if unit else ""
        print(f"  {name:24s} {summary[name]:14.4f}{unit}")
    for key, unit in (("mean_pairwise_l1", " hops"), ("mean_slice_hops", " hops"), ("mean_blocks_per_job", "")):
        if key in summary:  # locality on a topology; a slice allocator's own networks; an allocator's blocks
            print(f"  {key:24s} {summary[key]:14.4f}{unit}")
    if "reservation_changes" in summary:  # conservative: the reservations its plan made or moved
        print(f"  {'reservation_changes':24s} {summary['reservation_changes']:9d}")
    net = summary.get("network")
    if net:
        print(f"  network {net['network']}, traffic {net['traffic']}, service {net['service']}")
        for key in ("mean_comm_time", "mean_packet_latency", "mean_packet_blocking", "mean_contention_slowdown", "link_utilisation_mean"):
            value = net.get(key)
            print(f"  {key:24s} {'-' if value is None else format(value, '14.4f'):>14s}")


def _partition(args: argparse.Namespace) -> int:
    from .alloc import PartitionAllocator, Request
    from .errors import InvalidArgument
    from .topology.torus import Mesh, Torus, parse_dims

    dims = parse_dims(args.shape, argument="--shape")
    machine = Mesh(dims) if args.mesh else Torus(dims)
    if args.nodes < 1:
        raise InvalidArgument("--nodes", args.nodes, "a positive number of processors")
    a = PartitionAllocator(machine, scheme=args.scheme, convert=args.convert, nep_order=args.nep_order)
    got = a.allocate(Request(args.nodes))
    if got is None:  # cannot happen on a fresh machine: allocate raises if it never fits
        raise InvalidArgument("--nodes", args.nodes, "a request that fits")
    chosen = got.info["semitorus"]
    pieces = [dict(st.as_dict(), allocated=False) for st in a.available()]
    pieces.append(dict(chosen.as_dict(), allocated=True))
    pieces.sort(key=lambda p: (p["offset"][::-1], p["sides"]))
    conv = got.info["conversion"]
    out = {
        "machine": machine.spec(),
        "scheme": args.scheme,
        "requested": args.nodes,
        "rounded": got.info["rounded"],
        "pieces": pieces,
        "conversion": conv.as_dict(),
    }
    if args.json:
        print_json(out)
    else:
        print(f"{args.scheme.upper()} on {machine.spec()} for {args.nodes} processors (rounded to {out['rounded']}):")
        for p in pieces:
            sides = "x".join(map(str, p["sides"]))
            wr = "".join("w" if w else "-" for w in p["wrapped"])
            print(f"  {'*' if p['allocated'] else ' '} offset {tuple(p['offset'])}  sides {sides}  wrap {wr}")
        print(f"  job's torus: {'x'.join(map(str, conv.shape))} (dimensions merged: {list(map(list, conv.groups))})")
    return 0


def _prove(args: argparse.Namespace) -> int:
    from .proofs.report import run_family

    from .errors import InvalidArgument

    fam = args.family
    if args.workers < 1:
        raise InvalidArgument("--workers", args.workers, "a positive number of processes")
    cores = os.cpu_count() or 1
    if args.workers > cores:
        # each worker is a Python process with Z3 loaded (~80 MB); more than the cores only adds memory
        raise InvalidArgument("--workers", args.workers, f"at most {cores}, this machine's processors (each worker is a process with its own Z3)")
    if fam != "torus" and args.workers != 1:
        raise InvalidArgument("--workers", args.workers, f"1 for the {fam} proofs (only the torus conversions run in several processes)")
    if fam != "torus" and args.max_dims is not None:
        raise InvalidArgument("--max-dims", args.max_dims, f"no value for the {fam} proofs (it bounds semitorus dimensions: prove torus)")
    if fam == "deadlock" and args.max_order is not None:
        raise InvalidArgument("--max-order", args.max_order, "no value for the deadlock proofs (--full checks larger machines)")
    if fam == "hypercube" and args.full:
        raise InvalidArgument("--full", True, "no --full for the hypercube proofs (--max-order sets their size)")
    limits = {"torus": (12, 20), "hypercube": (10, 16)}
    max_order = args.max_order
    if fam in limits:
        default, top = limits[fam]
        max_order = default if max_order is None else max_order
        if not 1 <= max_order <= top:
            what = "semitori of 2^1 .. 2^20 nodes" if fam == "torus" else "cube dimensions 1 .. 16"
            raise InvalidArgument("--max-order", max_order, f"an order in 1..{top} ({what}: every shape up to it is enumerated, so the work doubles with each step)")
    max_dims = 6 if args.max_dims is None else args.max_dims
    if not 1 <= max_dims <= 8:
        raise InvalidArgument("--max-dims", max_dims, "a number of dimensions in 1..8")
    from .progress import Progress
    from .proofs.report import on_row

    with Progress(f"proving {fam}", enabled=not args.quiet, delay=0) as bar:
        done = [0]

        def row_done(row: dict) -> None:
            done[0] += 1
            bar.update(done[0], None, note=f"{done[0]} rows; last: {row['property'][:60]} ({'holds' if row['holds'] else 'FAILS'})")

        bar.update(0, None, note="first row")
        with on_row(row_done):
            rows = run_family(fam, full=args.full, max_dims=max_dims, max_order=max_order or 12, workers=args.workers)
    if args.json:
        print_json(rows)
    else:
        from rich.console import Console
        from rich.table import Table

        from .proofs.report import method_label

        table = Table(title=f"topoalloc proofs: {args.family}", caption="method: symbolic = Z3 over all values; exhaustive = every case, checked exactly; model = a lemma about a formula in the proof module")
        for col in ("property", "method", "cases", "largest case", "seconds", "result"):
            table.add_column(col)
        for r in rows:
            table.add_row(r["property"], method_label(r), str(r["cases"]), r["largest"], f"{r['seconds']:.2f}", "holds" if r["holds"] else f"FAILS: {r['counterexample']}")
        Console().print(table)
    return 0 if all(r["holds"] for r in rows) else 1


def _curve(args: argparse.Namespace) -> int:
    from .curves import format_ordering, make_ordering
    from .limits import NODE_BYTES, check_memory
    from .outputs import atomic_write, check_output
    from .topology import parse_machine

    out = check_output(args.out, "--out")
    top = parse_machine(args.machine)
    check_memory(top.n_nodes * NODE_BYTES, "--machine", args.machine, f"a curve over {top.n_nodes:,} nodes")
    o = make_ordering(args.curve, top)
    steps = o.steps(top)
    text = format_ordering(o, comment=f"machine {top.spec()}; non-unit steps {int((steps != 1).sum())} of {steps.size}")
    if out is not None:
        atomic_write(out, text)
    else:
        sys.stdout.write(text)
    frac = o.non_unit_step_fraction(top)
    print(f"topoalloc: {o.name} on {top.spec()}: {int((steps != 1).sum())} of {steps.size} consecutive ranks are not neighbours ({frac:.2%}); longest step {int(steps.max()) if steps.size else 0} hops", file=sys.stderr)
    return 0


def _afl(args: argparse.Namespace) -> int:
    from .alloc import Request
    from .alloc.hypercube import AFLAllocator, mesh_layout
    from .errors import InvalidArgument
    from .topology.hypercube import MAX_DIM, Hypercube, Subcube
    from .topology.torus import parse_dims

    if not 0 <= args.cube <= MAX_DIM:
        raise InvalidArgument("--cube", args.cube, f"a hypercube dimension in 0..{MAX_DIM}")
    sides = parse_dims(args.mesh, argument="--mesh")
    if len(sides) != 2:
        raise InvalidArgument("--mesh", args.mesh, "two sides XxY, e.g. 20x30")
    x, y = sides
    a = AFLAllocator(Hypercube(args.cube))
    got = a.allocate(Request(x * y, (x, y)))  # a fresh machine: raises RequestNeverFits if the mesh cannot fit
    if got is None:  # a fresh machine never says "not now"
        raise InvalidArgument("--mesh", args.mesh, f"a mesh that fits Q{args.cube}")
    n = args.cube
    leftover = [str(Subcube(n, *c)) for c in got.info["leftover"]]
    out = {
        "cube": str(Subcube(n, *got.info["cube"])),
        "mesh": mesh_layout(got),
        "leftover": leftover,
    }
    if args.json:
        print_json(out)
    else:
        cube = Subcube(n, *got.info["cube"])
        print(f"{x}x{y} mesh in Q{n}: k-cube {out['cube']} ({cube.dim}-cube, {cube.size} nodes), mesh {x * y} nodes")
        for c in leftover:
            sc = Subcube.parse(c)
            print(f"  leftover {c}  {sc.dim}-cube ({sc.size} nodes)")
    return 0


def _list(args: argparse.Namespace) -> int:
    from . import registry

    groups: dict[str, registry.Registry[Any]] = {
        "allocators": registry.ALLOCATORS,
        "schedulers": registry.SCHEDULERS,
        "topologies": registry.TOPOLOGIES,
        "metrics": registry.METRICS,
    }
    for key, reg in groups.items():
        if args.what not in (None, key):
            continue
        print(f"{key}:")
        for name, doc in reg.describe().items():
            print(f"  {name:20s} {doc}")
    return 0


class Interrupted(Exception):
    """Ctrl-C with something to say: ``message`` is printed after "interrupted after N s"."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)


def _interrupted_import(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt was being handled (its context chain)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def main(argv: Sequence[str] | None = None) -> int:
    t0 = time.monotonic()
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # the exact command, for reports
    except KeyboardInterrupt:
        print(f"topoalloc: interrupted after {time.monotonic() - t0:.1f} s", file=sys.stderr)
        return 130
    try:
        from .plugins import load_plugins

        plugins = load_plugins(args.plugin)
        if args.command == "simulate":
            return _simulate(args, plugins)
        if args.command == "partition":
            return _partition(args)
        if args.command == "prove":
            return _prove(args)
        if args.command == "curve":
            return _curve(args)
        if args.command == "afl":
            return _afl(args)
        if args.command in ("sweep", "report", "reproduce", "animate"):
            from .experiments.cli import run as _run_experiments

            return _run_experiments(args)
        if args.command == "network":
            from .network.cli import run as _run_network  # imported only for this command

            return _run_network(args)
        if args.command in ("order", "minspan", "gap"):
            from .ilp.cli import run as _run_ilp

            return _run_ilp(args)
        return _list(args)
    except TopoallocError as exc:
        print(f"topoalloc: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"topoalloc: interrupted after {time.monotonic() - t0:.1f} s; {exc.message}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(f"topoalloc: interrupted after {time.monotonic() - t0:.1f} s", file=sys.stderr)
        return 130
    except ImportError as exc:
        # Ctrl-C while a compiled library initialises (OR-Tools, Z3) surfaces as its ImportError
        if _interrupted_import(exc):
            print(f"topoalloc: interrupted after {time.monotonic() - t0:.1f} s (while loading {exc.name or 'a library'})", file=sys.stderr)
            return 130
        raise
    except MemoryError:
        print("topoalloc: error: out of memory (the size checks did not foresee this run: please report it, with the command)", file=sys.stderr)
        return 2
    except BrokenPipeError:
        try:  # the reader went away (e.g. | head): no traceback from the final flush either
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
