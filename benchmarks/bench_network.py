"""Network simulator benchmarks, each figure beside its target.

1. Speed: 8x8 mesh, uniform, rate 0.2, P=8, B=16, V=1, 20,000 cycles.  Flit level
   <= 2 s on one core; packet level >= 10x faster than flit level at the same load.
   Timed end to end (``run_traffic``: traffic generation, simulation, statistics) and
   engine only (``Network.run`` on packets generated beforehand), for the compiled
   engine and the pure-Python reference; plus ``topoalloc network ... --json`` as a
   new process.  Minimum and median of ``--repeat`` runs.
2. Packet level against flit level at low, medium and high load (same seed, same packets).
3. Scaling: engine time against cycles x flits in the network, several machines and loads;
   a plot (``--figures``).
4. The latency-throughput curve of the 8x8 mesh (``--sweep``): saturation beside the
   bisection bound 4/k; a plot.
5. The coupled run: 1,000 jobs on mesh:20x20 under FCFS, all-to-all, 20 messages of
   8 flits per job, at loads up to near saturation: flit level <= 30 s.
6. NASA iPSC/860 on mesh:16x8 coupled to the network: best_fit on the Hilbert curve
   against row-major, what each placement costs in communication time.

Usage: python benchmarks/bench_network.py [--repeat 7] [--figures benchmarks/figures/network]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # keep numpy's BLAS threads off the second core

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from topoalloc.network import Network, NetworkConfig, compiled_available, network_tables, run_traffic, sweep
from topoalloc.network.plots import bisection_bound, plot_latency_throughput
from topoalloc.network.sim import parse_sweep
from topoalloc.network.traffic import bernoulli_packets, make_traffic
from topoalloc.topology import parse_machine

MACHINE, RATE, CYCLES = "mesh:8x8", 0.2, 20000


def timed(fn, repeat):
    ts = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return min(ts), statistics.median(ts), out


def engine_only(mode, engine, packets, repeat):
    top = parse_machine(MACHINE)
    cfg = NetworkConfig(mode=mode, engine=engine)
    c, s, d = packets
    ts = []
    for _ in range(repeat):
        net = Network(top, cfg)
        net.add_packets(c, s, d)
        t0 = time.perf_counter()
        net.run(CYCLES + 2000)
        ts.append(time.perf_counter() - t0)
    return min(ts), statistics.median(ts)


def speed(repeat):
    print(f"\n## 1. Speed: {MACHINE}, uniform, rate {RATE}, P=8, B=16, V=1, {CYCLES} cycles (seconds: min / median of {repeat})\n")
    top = parse_machine(MACHINE)
    network_tables(top)  # built once per process (route table from Topology.route): not part of a run
    packets = bernoulli_packets(make_traffic("uniform", top), RATE, 8, 0, CYCLES, np.random.default_rng(1))
    engines = (["c"] if compiled_available() else []) + ["python"]
    rows = {}
    print("| engine | mode | end to end (run_traffic) | engine only (Network.run) |")
    print("|---|---|---:|---:|")
    for engine in engines:
        reps = repeat if engine == "c" else max(1, min(3, repeat))
        for mode in ("flit", "packet"):
            cfg = NetworkConfig(mode=mode, engine=engine)
            lo, med, _ = timed(lambda: run_traffic(MACHINE, "uniform", RATE, config=cfg, cycles=CYCLES, seed=1), reps)
            elo, emed = engine_only(mode, engine, packets, reps)
            rows[(engine, mode)] = (lo, med, elo, emed)
            print(f"| {engine} | {mode} | {lo:.4f} / {med:.4f} | {elo:.4f} / {emed:.4f} |")
    best = engines[0]
    f, p = rows[(best, "flit")], rows[(best, "packet")]
    print(f"\nflit level ({best}): {f[1]:.3f} s end to end (target <= 2 s: {'met' if f[1] <= 2 else 'missed'})")
    print(f"packet level ({best}) vs flit level: {f[3] / p[3]:.1f}x engine only, {f[1] / p[1]:.1f}x end to end (target >= 10x: {'met' if f[3] / p[3] >= 10 else 'missed'})")
    cli = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "topoalloc", "network", "--topology", MACHINE, "--traffic", "uniform", "--rate", str(RATE), "--packet", "8", "--buffers", "16", "--vcs", "1", "--cycles", str(CYCLES), "--json"], check=True, capture_output=True, cwd=tempfile.gettempdir())
        cli.append(time.perf_counter() - t0)
    print(f"CLI 'topoalloc network ... --json' in a new process: {min(cli):.3f} / {statistics.median(cli):.3f} s (imports included)")


def error_table(rates=(0.05, 0.2, 0.3, 0.35)):
    print(f"\n## 2. Packet level against flit level ({MACHINE}, uniform, P=8, B=16, V=1, {CYCLES} cycles, seed 1)\n")
    print("| load | rate | latency flit | latency packet | error | p99 flit | p99 packet | blocking flit | blocking packet | accepted flit | accepted packet |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    names = {0.05: "low", 0.2: "medium", 0.3: "high", 0.35: "near saturation"}
    for rate in rates:
        a = run_traffic(MACHINE, "uniform", rate, cycles=CYCLES, seed=1)
        b = run_traffic(MACHINE, "uniform", rate, config=NetworkConfig(mode="packet"), cycles=CYCLES, seed=1)
        err = (b.latency_mean - a.latency_mean) / a.latency_mean
        print(f"| {names.get(rate, '')} | {rate} | {a.latency_mean:.2f} | {b.latency_mean:.2f} | {err:+.1%} | {a.latency_p99:.0f} | {b.latency_p99:.0f} | {a.blocking_mean:.2f} | {b.blocking_mean:.2f} | {a.accepted:.4f} | {b.accepted:.4f} |")


def scaling(figures):
    print("\n## 3. Scaling: engine time against cycles x flits in the network (compiled flit engine)\n")
    cases = [(m, r, cyc) for m in ("mesh:4x4", "mesh:8x8", "mesh:16x16", "torus:8x8") for r in (0.05, 0.15, 0.3) for cyc in (5000, 20000)]
    rows = []
    print("| machine | rate | cycles | flit-cycles (1e6) | flit moves (1e6) | router-cycles (1e6) | seconds | ns per flit-cycle | ns per flit move |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec, rate, cyc in cases:
        top = parse_machine(spec)
        cfg = NetworkConfig(vcs=2 if spec.startswith("torus") else 1)
        pk = bernoulli_packets(make_traffic("uniform", top), rate, 8, 0, cyc, np.random.default_rng(1))
        net = Network(top, cfg)
        net.add_packets(*pk)
        t0 = time.perf_counter()
        net.run(cyc + 3000)
        dt = time.perf_counter() - t0
        r = net.results()
        ok = r["t_done"] >= 0
        # flits in the network summed over cycles: each packet's P flits stay from injection to ejection (cycles x active flits)
        flit_cycles = float(8 * (r["t_done"][ok] - r["t_inject"][ok]).sum())
        moves = float(8 * (r["hops"][ok] + 2).sum())  # every flit crosses injection, its links and ejection
        router_cycles = float(net.now * top.n_nodes)
        rows.append((spec, rate, flit_cycles, moves, router_cycles, dt))
        print(f"| {spec} | {rate} | {cyc} | {flit_cycles / 1e6:.2f} | {moves / 1e6:.2f} | {router_cycles / 1e6:.2f} | {dt:.4f} | {dt / flit_cycles * 1e9:.1f} | {dt / moves * 1e9:.1f} |")
    fc, mv, rc, ys = (np.asarray([r[i] for r in rows]) for i in (2, 3, 4, 5))
    a = float((mv * ys).sum() / (mv * mv).sum())  # least squares through 0: seconds = a x flit moves
    rel = np.abs(a * mv - ys) / ys
    print(f"\nfit: seconds = {a * 1e9:.1f} ns x flit moves (flits moving per cycle x cycles); relative error median {np.median(rel):.0%}, max {rel.max():.0%}")
    print(f"cost per flit-cycle ranges {(ys / fc).min() * 1e9:.1f}..{(ys / fc).max() * 1e9:.1f} ns: a blocked flit costs little, a moving one ~{a * 1e9:.0f} ns")
    if figures:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
        for rate, marker in ((0.05, "o"), (0.15, "s"), (0.3, "^")):
            sel = [i for i, r in enumerate(rows) if r[1] == rate]
            a1.scatter(fc[sel], ys[sel], marker=marker, label=f"rate {rate}")
            a2.scatter(mv[sel], ys[sel], marker=marker, label=f"rate {rate}")
        xs = np.array([mv.min() * 0.7, mv.max() * 1.4])
        a2.plot(xs, a * xs, ":", color="grey", label=f"{a * 1e9:.0f} ns per flit move")
        a1.set_xlabel("cycles x flits in the network (flit-cycles)")
        a2.set_xlabel("flit moves (cycles x flits moving per cycle)")
        a1.set_title("against all flits present (blocked ones too)")
        a2.set_title("against moving flits")
        for ax in (a1, a2):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_ylabel("engine seconds")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8)
        fig.suptitle("compiled flit engine: mesh 4x4, 8x8, 16x16 and torus 8x8, 5,000 and 20,000 cycles")
        fig.tight_layout()
        path = os.path.join(figures, "scaling.png")
        fig.savefig(path, dpi=110)
        print(f"plot: {path}")


def curve(figures, repeat_seed=1):
    print(f"\n## 4. Latency-throughput curve: {MACHINE}, uniform, P=8, B=16, V=1, {CYCLES} cycles, sweep 0.02:0.5:0.02\n")
    top = parse_machine(MACHINE)
    out = {}
    for mode in ("flit", "packet"):
        res = sweep(top, "uniform", parse_sweep("0.02:0.5:0.02"), config=NetworkConfig(mode=mode), cycles=CYCLES, seed=repeat_seed)
        out[mode] = res
        print(f"{mode}: saturation at offered {res.saturation_rate} (accepted < 95% of offered), saturation throughput {res.max_accepted:.4f}, mean latency > 3x zero-load ({res.zero_load_latency:.2f}) from {res.latency_knee}")
        if figures:
            path = os.path.join(figures, f"latency_throughput_8x8_{mode}.png")
            plot_latency_throughput(res, path, bound=bisection_bound(network_tables(top)))
            print(f"plot: {path}")
    print(f"bisection bound 4/k = {bisection_bound(network_tables(top)):.3f}")
    print("\n| rate | offered (measured) | flit: accepted | flit: latency | packet: accepted | packet: latency |")
    print("|---:|---:|---:|---:|---:|---:|")
    for a, b in zip(out["flit"].points, out["packet"].points):
        print(f"| {a.rate:.2f} | {a.offered:.4f} | {a.accepted:.4f} | {a.latency_mean:.1f} | {b.accepted:.4f} | {b.latency_mean:.1f} |")
    below = [p for p in out["flit"].points if not p.saturated]
    print(f"\nflit level below saturation: largest |accepted - offered| = {max(abs(p.accepted - p.offered) for p in below):.4f}")


def coupled(n_jobs=1000, repeat=3):
    """The scheduler-coupled run: service time emerges from the traffic (topoalloc.simulate(network=...))."""
    import topoalloc
    from topoalloc.workload.synthetic import Exponential, mesh_workload

    print(f"\n## 5. Coupled run: {n_jobs} jobs on mesh:20x20, FCFS, best_fit:curve=hilbert, all-to-all, 20 messages of 8 flits, B=4 (target: flit level <= 30 s)\n")
    print("Sides W, L exponential with mean 10, cut to 1..20 (seed 001's workload); Poisson arrivals; the service time is the")
    print("communication (trace run time ignored); time unit = one cycle.  'nominal' sets the arrival rate (load 1 at that mean service).\n")
    print("| nominal service | mode | seconds (min / median) | utilization | mean wait | mean comm time | mean packet blocking |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for nominal in (30, 40, 80):
        w = mesh_workload(n_jobs, load=1.0, x=Exponential(10, 20), y=Exponential(10, 20), mean_runtime=nominal, machine_nodes=400, load_definition="machine", seed=1)
        for mode in ("flit", "packet"):
            def run():
                return topoalloc.simulate(w, machine="mesh:20x20", allocator="best_fit:curve=hilbert", scheduler="fcfs",
                                          network=f"wormhole:packet=8,buffers=4,mode={mode}", traffic="all-to-all:messages=20,compute=0", contention=False)
            lo, med, r = timed(run, repeat)
            s = r.summary()
            net = s["network"]
            print(f"| {nominal} | {mode} | {lo:.2f} / {med:.2f} | {s['utilization']:.3f} | {s['mean_wait']:.1f} | {net['mean_comm_time']:.1f} | {net['mean_packet_blocking']:.3f} |")


def nasa_placements(repeat=1):
    """NASA iPSC/860 on mesh:16x8, best_fit on the Hilbert curve against row-major: what each placement costs in communication."""
    import topoalloc

    print("\n## 6. NASA iPSC/860 on mesh:16x8, EASY, best_fit:curve=hilbert vs curve=row_major, coupled to the network\n")
    print("Every job also sends all-to-all, 20 messages of 8 flits (B=4, flit level); service = trace run time + communication")
    print("(--service add); one cycle = 0.01 s of trace time (a model of the network's speed, not a measurement).\n")
    print("| curve | seconds | mean comm time (s) | mean packet latency (cycles) | mean packet blocking (cycles) | mean contention slowdown | mean pairwise L1 | mean wait (s) | mean response (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for curve in ("hilbert", "row_major"):
        t0 = time.perf_counter()
        r = topoalloc.simulate(machine="mesh:16x8", allocator=f"best_fit:curve={curve}", scheduler="easy", network="wormhole:packet=8,buffers=4",
                               traffic="all-to-all:messages=20,compute=0", cycle=0.01, service="add")
        dt = time.perf_counter() - t0
        s = r.summary()
        n = s["network"]
        print(f"| {curve} | {dt:.1f} | {n['mean_comm_time']:.4f} | {n['mean_packet_latency']:.2f} | {n['mean_packet_blocking']:.3f} | {n['mean_contention_slowdown']:.4f} | {s['mean_pairwise_l1']:.3f} | {s['mean_wait']:.2f} | {s['mean_response']:.2f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--figures", default=None, help="directory for the PNG figures")
    ap.add_argument("--only", choices=["speed", "error", "scaling", "curve", "coupled", "nasa"], action="append")
    args = ap.parse_args(argv)
    if args.figures:
        os.makedirs(args.figures, exist_ok=True)
    print(f"compiled engine available: {compiled_available()}; Python {sys.version.split()[0]}")
    parts = args.only or ["speed", "error", "scaling", "curve", "coupled", "nasa"]
    if "speed" in parts:
        speed(args.repeat)
    if "error" in parts:
        error_table()
    if "scaling" in parts:
        scaling(args.figures)
    if "curve" in parts:
        curve(args.figures)
    if "coupled" in parts:
        coupled(repeat=min(args.repeat, 3))
    if "nasa" in parts:
        nasa_placements()


if __name__ == "__main__":
    main()
