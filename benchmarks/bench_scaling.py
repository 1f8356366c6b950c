"""Performance at scale: the targets of the performance issue, each printed with its measured value and met/missed.

Every run is a new process (``--one``) so that its peak memory is its own
(``wait4``'s maximum resident set size); times are the wall time of
``topoalloc.simulate`` inside it (reading the trace included), so interpreter
start-up is left out of ratios between runs; the jobs sweep fits ``simulate``'s
own time (every prefix reads the whole log).

Targets
  conservative    conservative backfilling <= 3 x EASY: CTC-SP2 on flat:338, and on mesh:26x13 with best_fit
  probes          SDSC-SP2, sizes rounded to powers of two, hypercube:7: every hypercube allocator under
                  EASY <= 3 x flat EASY (median of interleaved pairs), under conservative <= 10 x flat EASY
                  (its median run); flat EASY measured both with the compiled kernel and with the general
                  engine, engine="python"; then the AFL under EASY on the sizes as logged (live partial meshes,
                  the general engine), against flat EASY on the general engine (no bar)
  mesh2d          (the issue's "2-D mesh family as it lands"; numbers set for the hypercube only, shown for
                  comparison) SDSC-SP2 on mesh:16x8: the submesh searches and ANCA, and the 2-D Buddy on
                  mesh:16x16, under EASY (the whole log) and conservative (its first 10,000 jobs), against
                  flat EASY on the same jobs
  subtorus-sp2    (the same comparison) EP and NEP on SDSC-SP2 as torus:4x4x8, sizes rounded to powers of two
  slices          (no target: today's machines came after the issue) the slice allocators on tpu:v4 (OCS and
                  static) and bgq:sequoia, SDSC-SP2's first 10,000 jobs scaled to the machine, EASY and
                  conservative (its plan on free units), against flat EASY and conservative on as many nodes
  orders          (the hypercube's EASY bar for comparison) EASY in SJF and LPT order with keyed allocators on the
                  general engine (the subtorus, 2-D mesh and slice families, and the free list with
                  engine="python"), SDSC-SP2's whole log (slices: its first 10,000 jobs scaled), against flat
                  EASY in the same order and against the same allocator in FCFS order
  subtorus        (no target of its own: the Mao sweep's heavy cells, see bench_experiments.py mao) SDSC-SP2
                  as Mao, Chen & Watson run it (sizes x8 on QCDOC, x2 on JLAB, rounded to powers of two,
                  times x1.2): EP and NEP under EASY and FCFS, against flat EASY on the same torus
  center          (no target: the issue's "every allocator") the center-based allocators (MC1x1, Gen-Alg, MM)
                  with every metric, SDSC-BLUE's first CENTER_JOBS jobs on mesh:48x24 under EASY: the compiled
                  search against the numpy path (the reference), interleaved pairs
  subcube         (no target: the issue's "every allocator") the AFL on the sizes as logged (the general engine:
                  meshes that do not fill their cubes), CTC-SP2 on hypercube:9 and SDSC-BLUE on hypercube:11, the
                  first SUBCUBE_JOBS jobs of each under EASY: complete recognition compiled against its numpy path
                  (the reference), interleaved pairs
  locality        SDSC-BLUE on mesh:48x24, best_fit:curve=hilbert, all metrics <= 2 x without metrics and
                  <= 400 MB; NASA scaled to mesh:256x256, torus:24x24x24x12 and hypercube:17 with all
                  metrics <= 60 s and <= 2 GB each
  large           (the issue's title: "up to Fugaku-size machines, in seconds"; no number of its own) every
                  allocator family on a machine of today's size, NASA (the bundled trace) scaled to it, EASY and
                  conservative, one run each, read against target 4's bounds for its metric runs (60 s, 2 GB)
  jobs            time against jobs (SDSC-BLUE prefixes): log-log slope <= 1.1 for every scheduler on
                  flat, mesh, torus and hypercube machines (conservative also prints its plan's changes,
                  the reservations made or moved, and their own slope against jobs)
  size            time against machine size (NASA scaled to 32x32 ... 256x256 meshes, all metrics):
                  slope <= 0.5

Usage: python benchmarks/bench_scaling.py [--only GROUP ...] [--easy-only] [--quick] [--plot PNG]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = Path(os.environ.get("TOPOALLOC_TRACES", HERE.parents[0].parent / "shared" / "traces"))
CTC, SP2, BLUE, NASA = "CTC-SP2-1996-3.1-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz", "SDSC-BLUE-2000-4.2-cln.swf.gz", "default"  # NASA: the bundled trace


def one(spec: dict) -> dict:
    """Run one simulation in this process; spec keys: trace, jobs, and simulate()'s keyword arguments."""
    import numpy as np

    import topoalloc
    from topoalloc.workload import default_trace_path, read_swf

    t0 = time.perf_counter()
    repeat_below = spec.pop("repeat_below", 1.0)
    if not spec.pop("center_compiled", True):  # the center allocators' numpy path, the reference (bench: center)
        import topoalloc.alloc.center as center

        center.USE_COMPILED = False
    if not spec.pop("subcube_compiled", True):  # complete subcube recognition's numpy path, the reference (bench: subcube)
        import topoalloc.alloc.hypercube.allocators as subcubes

        subcubes.USE_COMPILED = False
    name = spec.pop("trace")
    w = read_swf(default_trace_path() if name == "default" else TRACES / name)
    jobs = spec.pop("jobs", None)
    if jobs is not None:
        w = w.take(np.arange(min(len(w), jobs)))
    t1 = time.perf_counter()
    r = topoalloc.simulate(w, **spec)
    sim = time.perf_counter() - t1
    s = r.summary()
    seconds = time.perf_counter() - t0
    # a simulation shorter than `repeat_below` seconds (default one) is timed again (best of SHORT_REPEATS):
    # at that length one run measures the machine's moment as much as the code
    runs = SHORT_REPEATS if sim < repeat_below else 1
    for _ in range(runs - 1):
        t1 = time.perf_counter()
        topoalloc.simulate(w, **spec)
        sim = min(sim, time.perf_counter() - t1)
    return {"seconds": seconds, "sim_seconds": sim, "runs": runs, "jobs": s["jobs"], "mean_wait": s["mean_wait"], "queue": mean_queue(r.submit, r.start),
            "changes": r.reservation_changes, "pairwise_l1": s.get("mean_pairwise_l1")}


def mean_queue(submit, start) -> float:
    """The mean, over the jobs' arrivals, of how many jobs are waiting at that instant: submitted by
    then and started after it (a job that starts the moment it arrives is not waiting).

    A pass of a backfilling scheduler looks at the queue, so its work grows with the queue as well as
    with the jobs; this is the workload's side of that, measured on the schedule the run made.
    """
    import numpy as np

    sub = np.sort(np.asarray(submit, dtype=float), kind="stable")
    if not sub.size:
        return 0.0
    started = np.sort(np.asarray(start, dtype=float))
    waiting = np.searchsorted(sub, sub, side="right") - np.searchsorted(started, sub, side="right")
    return float(waiting.mean())


#: how many times a simulation shorter than a second is timed (its best time is reported as ``sim_seconds``)
SHORT_REPEATS = 5


#: a run still going after this many seconds is stopped and reported as not finished (``--limit``)
LIMIT = 900.0


def run(spec: dict) -> dict:
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen([sys.executable, __file__, "--one", json.dumps(spec)], stdout=out, stderr=err)
        deadline = time.monotonic() + LIMIT
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    proc.kill()
                    _, status, usage = os.wait4(proc.pid, 0)
                    return {"error": f"not finished within {LIMIT:.0f} s (--limit): stopped", "mb": usage.ru_maxrss / 1024}
                time.sleep(0.02)
        except BaseException:  # (Ctrl-C: the run is not left behind)
            proc.kill()
            proc.wait()
            raise
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status):
            lines = err.read().strip().splitlines()
            return {"error": lines[-1] if lines else f"exit status {os.waitstatus_to_exitcode(status)}", "mb": usage.ru_maxrss / 1024}
        res = json.loads(out.read())
        res["mb"] = usage.ru_maxrss / 1024
        return res


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def show(label: str, res: dict) -> None:
    if "error" in res:
        print(f"  {label:58s} FAILED: {res['error']}")
    else:
        print(f"  {label:58s} {res['seconds']:8.2f} s  {res['mb']:7.0f} MB  ({res['jobs']:,} jobs, mean wait {res['mean_wait']:.1f})")


def conservative() -> None:
    """Each case as PAIRS interleaved pairs of new processes, EASY then conservative; the ratio is taken
    pair by pair on the in-process time (reading the trace and the first simulation) and its median is
    the verdict. The simulations' own ratio (best of SHORT_REPEATS each, reading left out) is printed too."""
    print(f"conservative <= 3 x EASY (in-process: read + simulate; median of {PAIRS} interleaved pairs)")
    for label, kw in (("CTC-SP2 flat:338", {"machine": "flat:338", "allocator": "flat"}), ("CTC-SP2 mesh:26x13 best_fit", {"machine": "mesh:26x13", "allocator": "best_fit", "locality": False})):
        pairs = [(run({"trace": CTC, "scheduler": "easy", "clean": True, **kw}), run({"trace": CTC, "scheduler": "conservative", "clean": True, **kw})) for _ in range(PAIRS)]
        failed = [r for pair in pairs for r in pair if "error" in r]
        if failed:
            show(f"{label}", failed[0])
            continue
        ratios = [c["seconds"] / e["seconds"] for e, c in pairs]
        for i, name in enumerate(("easy", "conservative")):
            runs = [pair[i] for pair in pairs]
            mid = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
            show(f"{label} {name} (median run)", mid)
        ratio = statistics.median(ratios)
        sim_c, sim_e = (min(pair[i]["sim_seconds"] for pair in pairs) for i in (1, 0))
        print(f"  -> ratio per pair {', '.join(f'{r:.2f}' for r in ratios)}; median {ratio:.2f} (target <= 3): {verdict(ratio <= 3)}")
        print(f"     the simulations alone (best of {SHORT_REPEATS}, reading left out): {sim_c:.3f} s / {sim_e:.3f} s = {sim_c / sim_e:.1f} x")


def subtorus() -> None:
    print("subtorus allocators on SDSC-SP2 as the Mao sweep runs them (c = 1.2), against flat EASY")
    for label, machine, scale in (("QCDOC", "torus:2x2x2x4x4x8", 8), ("JLAB", "torus:2x2x2x6x8", 2)):
        base = {"trace": SP2, "clean": True, "round_pow2": True, "locality": False, "machine": machine, "scale_sizes": scale, "work_multiple": 1.2}
        flat = run({**base, "allocator": "flat", "scheduler": "easy"})
        show(f"{label} flat EASY", flat)
        for alloc in ("ep", "nep"):
            for sched in ("easy", "fcfs"):
                r = run({**base, "allocator": alloc, "scheduler": sched})
                show(f"{label} {alloc} {sched}", r)


EASY_ONLY = False


def probes() -> None:
    """Every hypercube allocator against flat EASY on the same log.  A run under EASY and flat EASY's each take a
    fraction of a second, where one run measures the machine's moment as much as the code: each EASY case is
    PAIRS interleaved pairs (flat EASY, then the allocator), the ratio taken pair by pair and its median the
    verdict.  A conservative case takes seconds and runs once, against the median of every flat EASY run
    (PAIRS per allocator).  The general engine's flat EASY (seconds) runs once, a second reference."""
    print("hypercube allocators on SDSC-SP2 (round-pow2), hypercube:7, vs flat EASY")
    base = {"trace": SP2, "clean": True, "round_pow2": True, "locality": False}
    flat = {**base, "machine": "flat:128", "allocator": "flat", "scheduler": "easy"}
    flat_p = run({**flat, "engine": "python"})
    show("flat EASY (general engine)", flat_p)
    flats: list[dict] = []
    rows = []
    for alloc in ("buddy", "gray_code", "free_list", "afl"):
        pairs = [(run(flat), run({**base, "machine": "hypercube:7", "allocator": alloc, "scheduler": "easy"})) for _ in range(PAIRS)]
        flats.extend(f for f, _ in pairs)
        rows.append((alloc, pairs, None if EASY_ONLY else run({**base, "machine": "hypercube:7", "allocator": alloc, "scheduler": "conservative"})))
    flat_c = _median_run(flats)
    show(f"flat EASY (compiled kernel; the median of {len(flats)} runs)", flat_c)
    # conservative on the flat machine, the same jobs: what the cheapest exact plan (counts) costs on this log, and the
    # work its plan defines (reservations made or moved), for the hypercube's conservative runs to be read against
    flat_cons = None if EASY_ONLY else run({**flat, "scheduler": "conservative"})
    if flat_cons is not None:
        show("flat conservative (compiled kernel, counts; a reference)", flat_cons)
        if "error" not in flat_cons and "error" not in flat_c:
            print(f"  -> {flat_cons['seconds'] / flat_c['seconds']:.1f} x flat EASY; {_per_change(flat_cons)}")
    for alloc, pairs, cons in rows:
        easy = _median_run([r for _, r in pairs])
        show(f"hypercube:7 {alloc} easy (median run)", easy)
        if "error" not in easy and "error" not in flat_c:
            ratios, ratio = pair_ratios(pairs)
            b = easy["seconds"] / flat_p["seconds"] if "error" not in flat_p else math.nan
            print(f"  -> {ratio:.1f} x flat (kernel; median of {PAIRS} interleaved pairs, {ratios[0]:.2f} .. {ratios[-1]:.2f}), "
                  f"{b:.1f} x flat (general engine); target <= 3: {verdict(ratio <= 3)} / {verdict(b <= 3)}")
        if cons is None:
            continue
        show(f"hypercube:7 {alloc} conservative", cons)
        if "error" not in cons and "error" not in flat_c:
            a = cons["seconds"] / flat_c["seconds"]
            b = cons["seconds"] / flat_p["seconds"] if "error" not in flat_p else math.nan
            print(f"  -> {a:.1f} x flat (kernel, its median run), {b:.1f} x flat (general engine); target <= 10: {verdict(a <= 10)} / {verdict(b <= 10)}")
            print(f"     {_per_change(cons)}")
    # the AFL on the sizes as logged: meshes that do not fill their cube leave live leftovers, which the kernel does not
    # keep, so this runs on the general engine; its probes read the busy mask and the live meshes (no snapshot replayed)
    afl = run({**base, "round_pow2": False, "machine": "hypercube:7", "allocator": "afl", "scheduler": "easy"})
    flat_l = run({**flat, "round_pow2": False, "engine": "python"})
    show("hypercube:7 afl easy, sizes as logged (general engine)", afl)
    show("flat EASY on the same jobs (general engine)", flat_l)
    if "error" not in afl and "error" not in flat_l:
        print(f"  -> {afl['seconds'] / flat_l['seconds']:.1f} x flat EASY (general engine); no bar (target 3 names power-of-two sizes): "
              "no snapshot replayed")


def _per_change(r: dict) -> str:
    """A conservative run's plan changes (reservations made or moved) and its simulation's time per change."""
    return f"reservations made or moved {r['changes']:,}, {r['sim_seconds'] / r['changes'] * 1e6:.2f} us of simulate per change"


#: the 2-D mesh allocators whose probes answer on free bit sets (the submesh searches, ANCA, the 2-D Buddy), each
#: on its machine: SDSC-SP2's 128 processors as mesh:16x8; the 2-D Buddy needs square power-of-two layers: mesh:16x16
MESH2D = (("mesh:16x8", "mesh_first_fit"), ("mesh:16x8", "mesh_best_fit"), ("mesh:16x8", "frame_sliding"),
          ("mesh:16x8", "adaptive_scan"), ("mesh:16x8", "anca_ff"), ("mesh:16x8", "anca_bf"), ("mesh:16x16", "buddy_2d"))

#: the subtorus allocators (conservative replays on their forests) on SDSC-SP2's 128 processors as a torus
SUBTORUS = (("torus:4x4x8", "ep"), ("torus:4x4x8", "nep"))


#: conservative on the 2-D and subtorus families runs on this many first jobs of SDSC-SP2 (minutes each on the whole log)
MESH2D_CONSERVATIVE_JOBS = 10_000


def mesh2d() -> None:
    """The 2-D mesh family on SDSC-SP2 against flat EASY on the same jobs (:func:`_family`)."""
    _family("2-D mesh allocators", MESH2D, {})


def subtorus_sp2() -> None:
    """EP and NEP on SDSC-SP2, sizes rounded to powers of two, against flat EASY on the same jobs (:func:`_family`)."""
    _family("subtorus allocators (sizes rounded to powers of two)", SUBTORUS, {"round_pow2": True})


def _family(what: str, cases: tuple[tuple[str, str], ...], extra: dict) -> None:
    """``cases`` (machine, allocator) on SDSC-SP2 against flat EASY on the same jobs.  The issue sets numbers for
    the hypercube only (EASY <= 3 x, conservative <= 10 x flat EASY); the same bars are printed here for comparison.
    EASY runs on the whole log, conservative on its first MESH2D_CONSERVATIVE_JOBS jobs; each allocator once per
    scheduler, against the median of PAIRS flat EASY runs on the same jobs."""
    print(f"{what} on SDSC-SP2 vs flat EASY on the same jobs (the hypercube's bars for comparison); "
          f"conservative on the first {MESH2D_CONSERVATIVE_JOBS:,} jobs")
    base = {"trace": SP2, "clean": True, "locality": False, **extra}
    flat = {}
    for sched, jobs in (("easy", None), ("conservative", MESH2D_CONSERVATIVE_JOBS)):
        if sched == "conservative" and EASY_ONLY:
            continue
        cut = {} if jobs is None else {"jobs": jobs}
        flat[sched] = _median_run([run({**base, **cut, "machine": "flat:128", "allocator": "flat", "scheduler": "easy"}) for _ in range(PAIRS)])
        show(f"flat EASY, {'the whole log' if jobs is None else f'{jobs:,} jobs'} (the median of {PAIRS} runs)", flat[sched])
    for machine, alloc in cases:
        for sched, bar in (("easy", 3), ("conservative", 10)):
            if sched not in flat:
                continue
            cut = {} if sched == "easy" else {"jobs": MESH2D_CONSERVATIVE_JOBS}
            r = run({**base, **cut, "machine": machine, "allocator": alloc, "scheduler": sched})
            show(f"{machine} {alloc} {sched}", r)
            if "error" not in r and "error" not in flat[sched]:
                a = r["seconds"] / flat[sched]["seconds"]
                print(f"  -> {a:.1f} x flat EASY (the hypercube's bar: <= {bar}: {verdict(a <= bar)})", flush=True)


#: the slice allocators (conservative's plan on free units), and how many first jobs of SDSC-SP2 they run
SLICES = (("tpu:v4", "slice:rule=ocs"), ("tpu:v4", "slice"), ("bgq:sequoia", "slice"))
SLICES_JOBS = 10_000


def slices() -> None:
    """Each slice case under EASY and conservative on SDSC-SP2's first SLICES_JOBS jobs, sizes scaled from its 128
    processors to the machine's nodes, and flat EASY and conservative on a flat machine of as many nodes with the
    same jobs (references: what the counting plan costs on these queues).  One run each."""
    from topoalloc.topology import parse_machine

    print(f"slice allocators on SDSC-SP2's first {SLICES_JOBS:,} jobs, sizes scaled to the machine (no target; the hypercube's bars for comparison)")
    for machine, alloc in SLICES:
        nodes = parse_machine(machine).n_nodes
        base = {"trace": SP2, "jobs": SLICES_JOBS, "clean": True, "locality": False, "scale_sizes": nodes / 128}
        got = {}
        for m, a in ((f"flat:{nodes}", "flat"), (machine, alloc)):
            for sched in ("easy", "conservative"):
                r = got[m, sched] = run({**base, "machine": m, "allocator": a, "scheduler": sched})
                show(f"{m} {a} {sched}", r)
        flat_easy, easy, cons = got[f"flat:{nodes}", "easy"], got[machine, "easy"], got[machine, "conservative"]
        if not any("error" in r for r in (flat_easy, easy, cons)):
            print(f"  -> {alloc}: EASY {easy['seconds'] / flat_easy['seconds']:.1f} x flat EASY (bar 3: {verdict(easy['seconds'] <= 3 * flat_easy['seconds'])}), "
                  f"conservative {cons['seconds'] / flat_easy['seconds']:.1f} x (bar 10: {verdict(cons['seconds'] <= 10 * flat_easy['seconds'])}); {_per_change(cons)}", flush=True)
        if "error" not in got[f"flat:{nodes}", "conservative"]:
            print(f"     flat conservative: {_per_change(got[f'flat:{nodes}', 'conservative'])}", flush=True)


#: every allocator family on a machine of today's size (machine, allocators): 2**17 nodes as a hypercube and as a
#: 32x32x32x4 torus (EP and NEP need sides that are powers of two), the Fugaku-like torus of target 4, a 256 x 256 mesh
#: for the 2-D family, and the slice machines at their full size
LARGE = (("hypercube:17", ("buddy", "gray_code", "free_list", "afl")),
         ("torus:32x32x32x4", ("ep", "nep")),
         ("torus:24x24x24x12", ("best_fit:curve=hilbert", "sum_of_squares:curve=hilbert", "mc1x1", "mm", "nearest")),
         ("mesh:256x256", ("mesh_first_fit", "mesh_best_fit", "frame_sliding", "adaptive_scan", "anca_ff", "anca_bf", "pald", "mbs",
                           "paging", "buddy_2d")),
         ("tofu:fugaku", ("slice",)), ("bgq:sequoia", ("slice",)), ("tpu:v5p", ("slice:rule=ocs", "slice")))


def large() -> None:
    """Each LARGE case under EASY and conservative, one run each: NASA's 128 processors scaled to the machine's
    nodes, its seconds (reading the trace included) and peak memory against target 4's bounds for its runs with
    every metric (60 s, 2 GB), which these runs, without metrics, are read against for comparison."""
    from topoalloc.topology import parse_machine

    print("every allocator family at today's machine sizes, NASA scaled to the machine (one run each; target 4's bounds, 60 s and 2 GB, for comparison)")
    worst: dict = {}
    for machine, allocs in LARGE:
        nodes = parse_machine(machine).n_nodes
        for alloc in allocs:
            for sched in ("easy", "conservative"):
                r = run({"trace": NASA, "machine": machine, "allocator": alloc, "scheduler": sched, "scale_sizes": nodes / 128, "clean": True, "locality": False})
                show(f"{machine} ({nodes:,} nodes) {alloc} {sched}", r)
                if "error" not in r and (not worst or r["seconds"] > worst["seconds"]):
                    worst = {**r, "label": f"{machine} {alloc} {sched}"}
                if "error" not in r:
                    print(f"  -> {verdict(r['seconds'] <= 60 and r['mb'] <= 2048)} (60 s, 2 GB){'' if r['changes'] is None else '; ' + _per_change(r)}", flush=True)
    if worst:
        print(f"  the longest: {worst['label']}, {worst['seconds']:.1f} s, {worst['mb']:.0f} MB")


#: keyed allocators EASY runs on the general engine (machine, allocator, extra spec): every family without a compiled
#: EASY, and the free list as the compiled kernel's reference
ORDERS = (("torus:4x4x8", "ep", {"round_pow2": True}), ("mesh:16x8", "mesh_first_fit", {}), ("mesh:16x8", "anca_bf", {}),
          ("tpu:v4", "slice", {"jobs": SLICES_JOBS, "scale_sizes": "nodes"}),
          ("hypercube:7", "free_list", {"round_pow2": True, "engine": "python"}))


def orders() -> None:
    """Each ORDERS case under EASY in FCFS, SJF and LPT order, once each, against flat EASY on as many nodes in the
    same order (the compiled kernel; the median of PAIRS runs).  In FCFS order the general engine walks the queue by
    fit key; in the other orders it does so by the queue key's ranks (before: a plain scan of every candidate)."""
    from topoalloc.topology import parse_machine

    print("EASY in SJF and LPT order on the general engine (keyed walk), SDSC-SP2 (the hypercube's EASY bar, 3 x flat EASY, for comparison)")
    for machine, alloc, extra in ORDERS:
        nodes = parse_machine(machine).n_nodes
        base = {"trace": SP2, "clean": True, "locality": False, **extra}
        if base.get("scale_sizes") == "nodes":  # (SDSC-SP2's 128 processors scaled to the machine's nodes)
            base["scale_sizes"] = nodes / 128
        runs = {}
        for order in ("fcfs", "sjf", "lpt"):
            sched = "easy" if order == "fcfs" else f"easy:order={order}"
            flat = _median_run([run({**base, "engine": "compiled", "machine": f"flat:{nodes}", "allocator": "flat", "scheduler": sched}) for _ in range(PAIRS)])
            r = runs[order] = run({**base, "machine": machine, "allocator": alloc, "scheduler": sched})
            show(f"{machine} {alloc} {sched}", r)
            if "error" in r or "error" in flat:
                continue
            a = r["seconds"] / flat["seconds"]
            own = "" if order == "fcfs" or "error" in runs["fcfs"] else f", {r['seconds'] / runs['fcfs']['seconds']:.2f} x its FCFS run"
            print(f"  -> {a:.1f} x flat EASY in the same order ({flat['seconds']:.2f} s, median of {PAIRS}; bar 3: {verdict(a <= 3)}){own}", flush=True)


def pair_ratios(pairs: list[tuple[dict, dict]]) -> tuple[list[float], float]:
    """The ratio of each interleaved pair's second run to its first (seconds), sorted, and their median."""
    ratios = sorted(b["seconds"] / a["seconds"] for a, b in pairs)
    return ratios, statistics.median(ratios)


#: interleaved pairs behind the conservative and locality ratios, and runs behind each size point
PAIRS = 5


#: jobs of SDSC-BLUE the center group runs (the numpy path takes about 4 ms a job for MM on mesh:48x24)
CENTER_JOBS = 5000


def center() -> None:
    """The center-based allocators place every job when metrics are on (off, their counts alone decide and the run
    takes the compiled kernel): the compiled search against the numpy path, the same run job for job (the mean
    pairwise L1 distance of the jobs' nodes compared, to the last bit), PAIRS // 2 + 1 interleaved pairs, the
    median of the ratios."""
    n = PAIRS // 2 + 1
    print(f"center-based allocators with every metric, SDSC-BLUE first {CENTER_JOBS:,} jobs, mesh:48x24, EASY: compiled / numpy ({n} interleaved pairs)")
    for alloc in ("mc1x1", "nearest", "mm"):
        kw = {"trace": BLUE, "jobs": CENTER_JOBS, "machine": "mesh:48x24", "allocator": alloc, "scheduler": "easy", "clean": True}
        got = _compiled_against_numpy(alloc, kw, "center_compiled", n)
        if got is not None:
            # (the mean wait is the flat machine's whatever the placement; the mean pairwise distance reads the placements)
            print(f"{got[0]}the same mean wait and mean pairwise L1 ({got[1][0][1].get('pairwise_l1')}) in every run: {got[2]}")


def _compiled_against_numpy(label: str, kw: dict, switch: str, n: int) -> tuple[str, list, bool] | None:
    """``n`` interleaved pairs of one run, numpy path (``switch`` False in its spec) then compiled, each side's median
    run shown: (the ratio line's start, the pairs, whether every run gave the same mean wait and mean pairwise L1),
    or None where a run failed (shown)."""
    pairs = [(run({**kw, switch: False}), run(kw)) for _ in range(n)]
    failed = [r for pair in pairs for r in pair if "error" in r]
    if failed:
        show(label, failed[0])
        return None
    for i, name in enumerate(("numpy", "compiled")):
        show(f"{label} {name} (median run)", _median_run([pair[i] for pair in pairs]))
    ratios, ratio = pair_ratios(pairs)
    same = len({(pair[i]["mean_wait"], pair[i].get("pairwise_l1")) for pair in pairs for i in (0, 1)}) == 1
    return f"  -> compiled / numpy {ratio:.2f} (per pair {', '.join(f'{r:.2f}' for r in ratios)}); ", pairs, same


#: jobs of each log the subcube group runs (the numpy path takes about 4 ms a job on SDSC-BLUE's hypercube:11)
SUBCUBE_JOBS = 20000


def subcube() -> None:
    """The AFL on the sizes as logged runs on the general engine, and its complete recognition (placements, EASY's
    guard and earliest fit) on every k-subcube: the compiled search against the numpy path, the same run job for job
    (mean wait and mean pairwise L1 compared, to the last bit), PAIRS // 2 + 1 interleaved pairs, the median ratio."""
    n = PAIRS // 2 + 1
    print(f"the AFL on the sizes as logged (general engine), first {SUBCUBE_JOBS:,} jobs, EASY: compiled / numpy recognition ({n} interleaved pairs)")
    for trace, machine in ((CTC, "hypercube:9"), (BLUE, "hypercube:11")):
        kw = {"trace": trace, "jobs": SUBCUBE_JOBS, "machine": machine, "allocator": "afl", "scheduler": "easy", "clean": True}
        label = f"{trace.split('-')[0]}-{trace.split('-')[1]} {machine} afl"
        got = _compiled_against_numpy(label, kw, "subcube_compiled", n)
        if got is not None:
            print(f"{got[0]}the same mean wait ({got[1][0][1]['mean_wait']:.1f} s) and mean pairwise L1 in every run: {got[2]}")


def locality() -> None:
    print("locality metrics streamed")
    kw = {"trace": BLUE, "machine": "mesh:48x24", "allocator": "best_fit:curve=hilbert", "scheduler": "easy", "clean": True}
    # without metrics the run takes the compiled kernel; the general engine's run without metrics is the like-for-like
    # reference.  Both runs are under a second or two, where one run measures the machine's moment as much as the
    # code: PAIRS pairs, interleaved (without, with, without, with ...), the ratio taken per pair and its median kept
    offs, ons = [], []
    for _ in range(PAIRS):
        offs.append(run({**kw, "locality": False}))
        ons.append(run({**kw, "locality": True}))
    off_py = run({**kw, "locality": False, "engine": "python"})
    bad = [r for r in (*offs, *ons, off_py) if "error" in r]
    off, on = _median_run(offs), _median_run(ons)
    show("SDSC-BLUE mesh:48x24 hilbert, no metrics (compiled kernel)", off)
    show("SDSC-BLUE mesh:48x24 hilbert, no metrics (general engine)", off_py)
    show("SDSC-BLUE mesh:48x24 hilbert, all metrics", on)
    if not bad:
        ratios, ratio = pair_ratios(list(zip(offs, ons)))
        ratio_py = on["seconds"] / off_py["seconds"]
        mb = max(r["mb"] for r in ons)
        print(f"  -> ratio {ratio:.2f} to the kernel run (median of {PAIRS} interleaved pairs; {ratios[0]:.2f} .. {ratios[-1]:.2f}), "
              f"{ratio_py:.2f} to the general engine's (target <= 2): {verdict(ratio <= 2)} / {verdict(ratio_py <= 2)}; "
              f"memory {mb:.0f} MB, the largest of the runs (target <= 400): {verdict(mb <= 400)}")
    for machine, alloc, nodes in (("mesh:256x256", "best_fit:curve=hilbert", 65536), ("torus:24x24x24x12", "best_fit:curve=hilbert", 165888), ("hypercube:17", "buddy", 131072)):
        r = run({"trace": NASA, "machine": machine, "allocator": alloc, "scheduler": "easy", "scale_sizes": nodes / 128, "locality": True})
        show(f"NASA x{nodes // 128} on {machine} {alloc}, all metrics", r)
        if "error" not in r:
            print(f"  -> {verdict(r['seconds'] <= 60)} (<= 60 s), {verdict(r['mb'] <= 2048)} (<= 2 GB)")


def _median_run(runs: list[dict]) -> dict:
    """The run of median time among ``runs`` (an error if any failed), with the largest peak memory among them."""
    bad = [r for r in runs if "error" in r]
    if bad:
        return bad[0]
    out = dict(sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2])
    out["mb"] = max(r["mb"] for r in runs)
    return out


def slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


#: the jobs sweep times every point shorter than this many seconds as the best of SHORT_REPEATS runs
JOBS_REPEAT_BELOW = 30.0


def jobs_scaling(quick: bool, curves: dict) -> None:
    # the whole log is read for every prefix, so the simulation's own time is what is fitted
    # (``sim_seconds``: ``simulate`` alone); with the reading in, a constant would flatten every slope.
    # Every point of a curve is timed alike, the best of SHORT_REPEATS runs (up to JOBS_REPEAT_BELOW s a
    # run): a best of five against a single run would tilt the fit (points near one second were timed
    # either way, and the conservative slopes on counts moved by 0.3 from run to run with it).  A curve
    # whose points could not all be (longer runs: one each) says so.
    print(f"time against jobs (SDSC-BLUE prefixes, seconds of simulate alone, best of {SHORT_REPEATS} runs under {JOBS_REPEAT_BELOW:.0f} s; log-log slope <= 1.1)")
    sizes = [25_000, 60_000, 120_000, 243_306] if not quick else [25_000, 60_000]
    machines = [("flat:1152", "flat"), ("mesh:48x24", "best_fit:curve=hilbert"), ("torus:12x12x8", "best_fit:curve=hilbert"), ("hypercube:10", "buddy")]
    for machine, alloc in machines:
        for sched in ("fcfs", "easy", "conservative"):
            xs, ys, work, runs, changes = [], [], [], [], []
            for n in sizes:
                r = run({"trace": BLUE, "jobs": n, "machine": machine, "allocator": alloc, "scheduler": sched, "clean": True, "round_pow2": machine.startswith("hypercube"), "locality": False, "repeat_below": JOBS_REPEAT_BELOW})
                if "error" in r:
                    show(f"{machine} {alloc} {sched} {n:,} jobs", r)
                    break
                xs.append(r["jobs"])
                ys.append(r["sim_seconds"])
                work.append(r["jobs"] * r["queue"])
                runs.append(r["runs"])
                changes.append(r["changes"])
                made = "" if r["changes"] is None else f"  reservations made or moved {r['changes']:>11,}"
                print(f"    {machine} {alloc} {sched} {r['jobs']:>7,} jobs  {r['sim_seconds']:8.3f} s  (best of {r['runs']})  mean queue at arrival {r['queue']:7.1f}{made}", flush=True)
            if len(xs) >= 2:
                s = slope(xs, ys)
                curves[f"{machine} {sched}"] = (xs, ys)
                # against jobs × mean queue: the slope a scheduler whose pass is linear in the queue would
                # show as 1 whatever the log's queue does (SDSC-BLUE's grows in its second half)
                unequal = "" if len(set(runs)) == 1 else f"; points timed unequally (best of {', '.join(map(str, runs))} runs)"
                print(f"  {machine:14s} {alloc:24s} {sched:13s} " + " ".join(f"{y:8.3f}" for y in ys) + f"  slope {s:.2f}: {verdict(s <= 1.1)}"
                      f"  (against jobs x mean queue: {slope(work, ys):.2f}{unequal})", flush=True)
                if None not in changes and min(changes) > 0:
                    curves[f"changes {machine} {sched}"] = (xs, changes)
                    # conservative's plan: the reservations it makes or moves are the algorithm's own work (each is
                    # a change of the schedule it keeps), so a simulator that makes each change pays at least one
                    # step for it; the time's slope against the changes says how far the rest of a pass adds to that
                    print(f"  {'':14s} {'':24s} {'':13s} its plan's changes: slope {slope(xs, changes):.2f} against jobs;"
                          f" the time against the changes: slope {slope(changes, ys):.2f}", flush=True)


def size_scaling(quick: bool, curves: dict) -> None:
    print(f"time against machine size (NASA scaled, all metrics; slope <= 0.5; each point the median of {PAIRS} runs, in rounds)")
    sides = [32, 64, 128, 256] if not quick else [32, 64]
    specs = {side: {"trace": NASA, "machine": f"mesh:{side}x{side}", "allocator": "best_fit:curve=hilbert", "scheduler": "easy", "scale_sizes": side * side / 128, "locality": True} for side in sides}
    runs: dict[int, list[dict]] = {side: [] for side in sides}
    for _ in range(PAIRS):  # rounds over the sizes, so that a change of the machine's load hits every size alike
        for side in sides:
            runs[side].append(run(specs[side]))
    xs, ys = [], []
    for side in sides:
        r = _median_run(runs[side])
        show(f"mesh:{side}x{side}", r)
        if "error" in r:
            break
        xs.append(side * side)
        ys.append(r["seconds"])
    if len(xs) >= 2:
        s = slope(xs, ys)
        curves["NASA, mesh size"] = (xs, ys)
        fits = [slope(xs, [runs[side][k]["seconds"] for side in sides[: len(xs)]]) for k in range(PAIRS)]
        print(f"  slope {s:.2f} (target <= 0.5): {verdict(s <= 0.5)}; the rounds' own slopes {min(fits):.2f} .. {max(fits):.2f}")


def plot(curves: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(18, 5))
    colours: dict[str, str] = {}
    styles = {"fcfs": ":", "easy": "--", "conservative": "-"}

    def panel(label: str) -> int:
        return 1 if label.startswith("NASA") else 2 if label.startswith("changes ") else 0

    for label, (xs, ys) in curves.items():
        machine, _, sched = label.removeprefix("changes ").rpartition(" ")
        colour = colours.setdefault(machine, f"C{len(colours)}")
        axes[panel(label)].loglog(xs, ys, marker="o", color=colour, linestyle=styles.get(sched, "-"), label=label.removeprefix("changes "))
    for i in (0, 2):
        mine = [(xs, ys) for k, (xs, ys) in curves.items() if panel(k) == i]
        if mine:
            # a guide of slope 1 through the smallest first point: a curve steeper than it is superlinear
            x0, y0 = min(((xs[0], ys[0]) for xs, ys in mine), key=lambda p: p[1])
            x1 = max(xs[-1] for xs, ys in mine)
            axes[i].loglog([x0, x1], [y0, y0 * x1 / x0], color="grey", linewidth=3, alpha=0.3, label="slope 1")
    axes[0].set(xlabel="jobs (SDSC-BLUE prefix)", ylabel="seconds", title="time against jobs")
    axes[1].set(xlabel="nodes (NASA scaled)", ylabel="seconds", title="time against machine size, all metrics")
    axes[2].set(xlabel="jobs (SDSC-BLUE prefix)", ylabel="reservations made or moved",
                title="conservative: reservations made or moved")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # (a sweep of one kind leaves the other panel empty)
            ax.legend(fontsize=7)
    fig.tight_layout()
    from topoalloc.outputs import atomic_output

    with atomic_output(path) as tmp:  # (an interrupted or failed write leaves no half-written PNG)
        fig.savefig(tmp, dpi=120)
    print(f"plot: {path}")


def main() -> int:
    global EASY_ONLY, LIMIT
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(json.loads(sys.argv[2]))))
        return 0
    groups = {"conservative": conservative, "center": center, "subcube": subcube, "probes": probes, "subtorus": subtorus, "subtorus-sp2": subtorus_sp2, "mesh2d": mesh2d, "slices": slices, "orders": orders, "locality": locality, "large": large}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=[*groups, "jobs", "size"], help="run only these groups")
    ap.add_argument("--quick", action="store_true", help="fewer points for the slopes")
    ap.add_argument("--easy-only", action="store_true", help="probes, mesh2d: EASY only (conservative takes seconds to minutes per allocator)")
    ap.add_argument("--limit", type=float, default=LIMIT, metavar="SECONDS", help=f"stop a run after this long and report it unfinished (default {LIMIT:.0f})")
    ap.add_argument("--plot", default=None, metavar="PNG", help="write the scaling curves here")
    args = ap.parse_args()
    EASY_ONLY = args.easy_only
    if not args.limit > 0:
        ap.error(f"argument --limit: expected a positive number of seconds, got {args.limit}")
    LIMIT = args.limit
    from topoalloc.errors import InvalidArgument
    from topoalloc.outputs import check_output

    try:  # checked before the sweep, which takes minutes
        check_output(args.plot, "--plot", (".png",))
    except InvalidArgument as e:
        ap.error(str(e))
    try:
        return _run(args, groups)
    except KeyboardInterrupt:
        print("bench_scaling: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # (the plot's folder refused the file after all)
        print(f"bench_scaling: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, groups: dict) -> int:
    import numpy

    import topoalloc

    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {numpy.__version__}, topoalloc {topoalloc.__version__}; load average {os.getloadavg()[0]:.2f}")
    want = args.only or [*groups, "jobs", "size"]
    curves: dict = {}
    for g in want:
        if g in groups:
            groups[g]()
        elif g == "jobs":
            jobs_scaling(args.quick, curves)
        else:
            size_scaling(args.quick, curves)
        print(f"# load average {os.getloadavg()[0]:.2f}")
    if args.plot and curves:
        plot(curves, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
