"""The ``order``, ``minspan`` and ``gap`` subcommands (hooked into ``topoalloc`` by ``topoalloc.cli``).

Every solver status is printed as it is: ``optimal``; ``feasible`` with the
bound and gap; ``unknown`` (no ordering within the time limit: exit status 3,
the bound still printed); ``infeasible`` / ``model_invalid`` raise
:class:`~topoalloc.errors.SolverError` and exit 2 with one line.  Nothing
falls back silently.
"""

from __future__ import annotations

import argparse
import sys

from topoalloc.outputs import print_json

__all__ = ["add_parsers", "run"]

COMMANDS = ("order", "minspan", "gap")


def _pos_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return v


def add_parsers(sub) -> None:
    o = sub.add_parser("order", help="optimal processor ordering with CP-SAT (seed 003 §2.2)", description="Find an optimal one-dimensional ordering of a machine's processors with CP-SAT and report status, objective, bound and the order.")
    o.add_argument("--topology", required=True, metavar="SPEC", help="mesh:4x4, torus:4x4, hypercube:4, petersen, or edges:FILE (one 'u v' edge per line)")
    o.add_argument("--weights", default="window:3", metavar="W", help="window:K, hamiltonian, linear-arrangement or custom:w1,w2,... (default window:3)")
    o.add_argument("--ring", action="store_true", help="ring rank distance min(k, n-k) instead of linear")
    o.add_argument("--time-limit", type=_pos_float, default=60.0, metavar="S", help="CP-SAT time limit in seconds (default 60)")
    o.add_argument("--workers", type=int, default=1, help="CP-SAT workers (default 1: deterministic when it finishes)")
    o.add_argument("--seed", type=int, default=0, help="CP-SAT random seed (default 0)")
    o.add_argument("--formulation", choices=["auto", "window", "position"], default="auto")
    o.add_argument("--no-symmetry", action="store_true", help="do not add automorphism symmetry breaking")
    o.add_argument("--flow", action="store_true", help="path-flow linking of 2-step pairs: stronger bound, slower on small machines")
    o.add_argument("--method", choices=["cpsat", "dp", "lagrange"], default="cpsat", help="cpsat (default: any weights, ring, bounds); dp: exact dynamic programming over subsets for window weights with K <= 3, linear rank distance, <= 16 nodes (1 GiB at 16); lagrange: a local-search ordering and a certified Lagrangian lower bound (window weights with K <= 3, linear rank distance, <= 64 nodes)")
    o.add_argument("--iterations", type=int, default=300, metavar="N", help="--method lagrange: subgradient steps of the bound (default 300)")
    o.add_argument("--search-iterations", type=int, default=100_000, metavar="N", help="--method lagrange: annealing moves per restart of the ordering search (default 100000)")
    o.add_argument("--restarts", type=int, default=3, metavar="R", help="--method lagrange: annealing restarts, seeds --seed, --seed+1, ... (default 3)")
    o.add_argument("--output", metavar="FILE", help="write the ordering as 'node rank' lines (for curve=FILE)")
    o.add_argument("--json", action="store_true")
    o.add_argument("--quiet", action="store_true", help="no progress display")

    m = sub.add_parser("minspan", help="offline minimum-span allocation of a random fixed-time instance", description="Solve minimum-span allocation (seed 003 §2.3) for a seeded random instance of fixed-time jobs.")
    m.add_argument("--processors", type=int, default=32)
    m.add_argument("--jobs", type=int, default=15)
    m.add_argument("--fragmenting", type=int, default=None, metavar="STEPS",
                   help="instead of --jobs random jobs: an instance that keeps the machine full for STEPS time units and is proven to admit no contiguous packing (the hard family)")
    m.add_argument("--seed", type=int, default=1, help="instance seed")
    m.add_argument("--objective", choices=["sum", "max", "sum_per_size"], default="sum")
    m.add_argument("--ring", action="store_true", help="ring span instead of linear span")
    m.add_argument("--time-limit", type=_pos_float, default=60.0, metavar="S")
    m.add_argument("--json", action="store_true")
    m.add_argument("--quiet", action="store_true", help="no progress display")

    g = sub.add_parser("gap", help="ratio online allocator / offline optimum on random instances", description="Replay seeded random fixed-time instances through an online allocator and compare its span metric to the proven CP-SAT optimum; with --mesh, run 2-D allocators under a scheduler on random jobs with W x L frames and compare their makespan or total wait to the optimal contiguous schedule.")
    g.add_argument("--heuristic", action="append", metavar="SPEC", help="registered allocator, e.g. best_fit or first_fit:span=ring (repeat for several; with --mesh, default: every 2-D heuristic)")
    g.add_argument("--processors", type=int, default=16)
    g.add_argument("--jobs", type=int, default=None, help="jobs per instance (default 10; 6 with --mesh)")
    g.add_argument("--instances", type=int, default=None, help="instances (default 50; 20 with --mesh)")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--objective", choices=["sum", "max", "sum_per_size", "makespan", "total_wait"], default=None, help="span objective (default max), or with --mesh makespan (default) or total_wait")
    g.add_argument("--mesh", metavar="WxL", default=None, help="2-D mode: the mesh (up to about 6x6), e.g. 4x4")
    g.add_argument("--family", metavar="MACHINE", default=None, help="subcube/subtorus/slice mode: hypercube:N (N <= 6), torus:AxB... (up to 128 processors) or a tpu:/tofu:/bgq: machine (up to 128 units); scores buddy, gray_code, free_list, afl, or ep, nep, or slice:rule=static and slice:rule=ocs (or --heuristic) against the optimal schedule of pieces")
    g.add_argument("--scheduler", default="fcfs", metavar="SPEC", help="with --mesh or --family: the scheduler the heuristics run under (default fcfs)")
    g.add_argument("--ring", action="store_true", help="ring span for the optimum and the measurement")
    g.add_argument("--time-limit", type=_pos_float, default=30.0, metavar="S", help="per-instance CP-SAT limit")
    g.add_argument("--adversarial", type=int, default=0, metavar="STEPS", help="also hill-climb STEPS steps for a worst instance")
    g.add_argument("--json", action="store_true")
    g.add_argument("--quiet", action="store_true", help="no progress bar")


#: rough bytes a CP-SAT model and its search take per literal (for the size checks)
_BYTES_PER_LITERAL = 600


def _machine(spec: str):
    from topoalloc.errors import InvalidArgument

    if spec.startswith("edges:"):
        from topoalloc.errors import TraceFormatError
        from topoalloc.textfiles import read_text

        path = spec[len("edges:"):]
        edges = []
        for lineno, line in enumerate(read_text(path, what="an edge list of 'u v' lines").splitlines(), 1):
            text = line.split("#", 1)[0].split()
            if not text:
                continue
            if len(text) != 2:
                raise TraceFormatError(path, lineno, f"expected one 'u v' edge, got {len(text)} fields")
            try:
                edges.append((int(text[0]), int(text[1])))
            except ValueError:
                raise TraceFormatError(path, lineno, f"expected two integer node ids, got {line.strip()!r}") from None
        return edges
    return spec


def _check_positive(args, *names: str) -> None:
    from topoalloc.errors import InvalidArgument

    for name in names:
        v = getattr(args, name.replace("-", "_"))
        if v < 1:
            raise InvalidArgument(f"--{name}", v, "a positive integer")


def _solver_progress(args, label: str):
    from topoalloc.progress import Progress

    bar = Progress(label, enabled=not args.quiet)

    def update(seconds: float, best: float | None, bound: float) -> None:
        bar.update(seconds, None, "" if best is None else f"best {best:g}, bound {bound:g}")

    return bar, update


def _order(args) -> int:
    from topoalloc.errors import InvalidArgument
    from topoalloc.limits import check_memory
    from topoalloc.outputs import check_output

    from .dp import dp_ordering
    from .graphs import machine_graph
    from .ordering import optimal_ordering, parse_weights, save_ordering

    output = check_output(args.output, "--output")
    _check_positive(args, "workers")
    if args.seed < 0:
        raise InvalidArgument("--seed", args.seed, "a non-negative CP-SAT seed")
    ws = parse_weights(args.weights)
    machine = _machine(args.topology)
    if isinstance(machine, str) and machine.strip() != "petersen":
        from topoalloc.topology import parse_machine

        n = parse_machine(machine).n_nodes
    else:
        n = 10 if isinstance(machine, str) else 1 + max((max(e) for e in machine), default=0)
    K = ws.K or 1
    check_memory(_BYTES_PER_LITERAL * n * n * max(K, 2), "--topology", args.topology, f"an ordering model of {n:,} nodes")
    mg = machine_graph(machine, argument="--topology")
    if args.method == "dp":
        if args.ring:
            raise InvalidArgument("--ring", True, "linear rank distance with --method dp (ring costs are not local to the last ranks)")
        res = dp_ordering(mg, ws)
    elif args.method == "lagrange":
        if args.ring:
            raise InvalidArgument("--ring", True, "linear rank distance with --method lagrange (ring costs are not local to the last ranks)")
        _check_positive(args, "iterations", "search-iterations", "restarts")
        from .lagrange import LAGRANGE_MAX_NODES, _window3, lagrange_ordering

        if mg.n > LAGRANGE_MAX_NODES:
            raise InvalidArgument("--topology", args.topology, f"at most {LAGRANGE_MAX_NODES} nodes for --method lagrange (n^4 states per layer); it has {mg.n}")
        _window3(ws, "--weights", mg)

        bar, update = _solver_progress(args, "ordering")
        with bar:
            res, _ = lagrange_ordering(mg, ws, iterations=args.iterations, search_iterations=args.search_iterations, restarts=args.restarts, seed=args.seed, progress=update)
    else:
        bar, update = _solver_progress(args, "ordering")
        with bar:
            res = _cpsat(args, optimal_ordering, mg, ws, update)
    if output is not None and res.order is not None:
        _write_after("--output", output, lambda: save_ordering(res, output))
    code = _report_order(args, res)
    if getattr(res, "interrupted", False):
        raise _interrupted(f"best found so far: objective {res.objective} (bound {res.bound})" if res.order is not None else f"no ordering found yet (bound {res.bound})")
    return code


def _write_after(argument: str, path, write) -> None:
    from topoalloc.cli import _write_after as write_after

    write_after(argument, path, write)


def _interrupted(message: str) -> Exception:
    from topoalloc.cli import Interrupted

    return Interrupted(message)


def _cpsat(args, optimal_ordering, mg, ws, progress):
    return optimal_ordering(
        mg,
        ws,
        ring=args.ring,
        time_limit=args.time_limit,
        workers=args.workers,
        seed=args.seed,
        formulation=args.formulation,
        symmetry=not args.no_symmetry,
        flow=args.flow,
        progress=progress,
    )


def _report_order(args, res) -> int:
    if args.json:
        print_json(res.as_dict())
    else:
        print(f"{res.machine} ({res.n} nodes), weights {res.weights}, {'ring' if res.ring else 'linear'}: status {res.status}")
        if res.order is None:
            print(f"  no ordering found within {args.time_limit:g} s; proven lower bound {res.bound}")
        else:
            gap = f" (gap {100 * res.gap:.1f}%)" if res.status != "optimal" else ""
            if res.formulation == "dp":
                how = "dynamic programming"
            elif res.formulation == "lagrange":
                how = "local search; bound by the Lagrangian walk relaxation"
            elif getattr(res, "from_warm_start", False):
                how = f"the warm start {res.warm_start}: the search found nothing better"
            else:
                how = f"warm start {res.warm_start} = {res.warm_start_cost}"
            print(f"  objective {res.objective}, bound {res.bound}{gap}, {res.seconds:.2f} s, {how}")
            print("  order:", " ".join(map(str, res.order)))
    sys.stdout.flush()
    return 0 if res.order is not None else 3


def _minspan(args) -> int:
    from topoalloc.limits import check_memory

    from .minspan import fragmenting_instance, min_span_allocation, random_fixed_instance

    _check_positive(args, "processors", "jobs")
    if args.fragmenting is not None:
        _check_positive(args, "fragmenting")
        # a full machine holds at most `processors` jobs at a time, each living at least one step
        check_memory(_BYTES_PER_LITERAL * 2 * args.processors * args.processors * args.fragmenting, "--fragmenting", args.fragmenting, f"a min-span model of {args.processors:,} processors x {args.fragmenting:,} full steps")
        inst = fragmenting_instance(args.processors, args.fragmenting, args.seed)
    else:
        check_memory(_BYTES_PER_LITERAL * 2 * args.processors * args.jobs, "--processors", args.processors, f"a min-span model of {args.processors:,} processors x {args.jobs:,} jobs")
        inst = random_fixed_instance(args.processors, args.jobs, args.seed)
    bar, update = _solver_progress(args, "min-span")
    with bar:
        res = min_span_allocation(inst, args.processors, objective=args.objective, ring=args.ring, time_limit=args.time_limit)
    d = res.as_dict()
    d["jobs"] = [[j.start, j.end, j.size] for j in inst]
    d["interrupted"] = res.interrupted
    if args.json:
        print_json(d)
    else:
        print(f"{len(inst)} jobs on {args.processors} processors, {args.objective} of {'ring' if args.ring else 'linear'} spans: status {res.status}")
        print(f"  objective {d['objective_exact']}, bound {res.bound}, greedy {res.warm_start_objective}, {res.seconds:.2f} s")
        if res.spans is not None:
            print("  spans:", " ".join(map(str, res.spans)))
    sys.stdout.flush()
    if res.interrupted:
        raise _interrupted(f"best found so far: objective {d['objective_exact']} (bound {res.bound})" if res.spans is not None else f"no allocation found yet (bound {res.bound})")
    return 0 if res.spans is not None else 3


def _gap(args) -> int:
    from topoalloc.errors import InvalidArgument
    from topoalloc.limits import check_memory
    from topoalloc.progress import Progress

    if args.mesh is not None and args.family is not None:
        raise InvalidArgument("--family", args.family, "either --mesh or --family, not both")
    if args.mesh is not None:
        return _mesh_gap(args)
    if args.family is not None:
        return _family_gap(args)
    from .gap import adversarial_search, gap_study

    if not args.heuristic or len(args.heuristic) != 1:
        raise InvalidArgument("--heuristic", args.heuristic, "one allocator spec (several only with --mesh)")
    if args.objective in ("makespan", "total_wait"):
        raise InvalidArgument("--objective", args.objective, "sum, max or sum_per_size (makespan and total_wait with --mesh)")
    heuristic = args.heuristic[0]
    objective = args.objective or "max"
    args.jobs = 10 if args.jobs is None else args.jobs
    args.instances = 50 if args.instances is None else args.instances
    _check_positive(args, "processors", "jobs", "instances")
    if args.adversarial < 0:
        raise InvalidArgument("--adversarial", args.adversarial, "a number of hill-climbing steps >= 0 (0: no adversarial search)")
    check_memory(_BYTES_PER_LITERAL * 2 * args.processors * args.jobs, "--jobs", args.jobs, f"a min-span model of {args.processors:,} processors x {args.jobs:,} jobs per instance")
    with Progress("instances", enabled=not args.quiet) as bar:
        rep = gap_study(heuristic, processors=args.processors, jobs=args.jobs, instances=args.instances, seed=args.seed, objective=objective, ring=args.ring, time_limit=args.time_limit, progress=bar)
    out = rep.as_dict()
    if args.adversarial and not rep.interrupted:
        adv = adversarial_search(heuristic, processors=args.processors, jobs=args.jobs, objective=objective, ring=args.ring, steps=args.adversarial, restarts=1, seed=args.seed, time_limit=args.time_limit)
        out["adversarial"] = adv.as_dict()
    if args.json:
        print_json(out)
    else:
        print(f"{heuristic} vs optimum, {objective} span, {args.processors} processors, {args.jobs} jobs, {out['instances']} of {args.instances} instances (seed {args.seed})")
        print(f"  compared {out['compared']}, not comparable {out['not_comparable']}, optimum unproven {out['unproven']}")
        if out["compared"]:
            print(f"  ratio mean {out['mean']:.3f}  median {out['median']:.3f}  p90 {out['p90']:.3f}  worst {out['worst']:.3f}  optimal in {100 * out['share_optimal']:.0f}%")
        if "adversarial" in out:
            print(f"  adversarial search ({args.adversarial} steps): worst ratio {out['adversarial']['worst']:.3f}")
    sys.stdout.flush()
    if rep.interrupted:
        raise _interrupted(f"{out['instances']} of {args.instances} instances done (reported above)")
    return 0


def _mesh_gap(args) -> int:
    from topoalloc.errors import InvalidArgument
    from topoalloc.topology.torus import parse_dims

    from .mesh_schedule import MESH_HEURISTICS, mesh_gap_study

    sides = parse_dims(args.mesh, argument="--mesh")
    if len(sides) != 2:
        raise InvalidArgument("--mesh", args.mesh, "two sides WxL, e.g. 4x4")
    objective = args.objective or "makespan"
    if objective not in ("makespan", "total_wait"):
        raise InvalidArgument("--objective", objective, "makespan or total_wait with --mesh")
    if args.ring:
        raise InvalidArgument("--ring", True, "the span options without --mesh")
    _check_adversarial(args)
    heuristics = args.heuristic or list(MESH_HEURISTICS)
    jobs = args.jobs = 6 if args.jobs is None else args.jobs
    instances = args.instances = 20 if args.instances is None else args.instances
    _check_positive(args, "jobs", "instances")
    from topoalloc.limits import check_memory

    # six literals per pair of jobs (the pairwise disjunctions)
    check_memory(_BYTES_PER_LITERAL * 6 * jobs * jobs, "--jobs", jobs, f"a pairwise 2-D model of {jobs:,} jobs")
    rep = mesh_gap_study(heuristics, mesh=(sides[0], sides[1]), jobs=jobs, instances=instances, seed=args.seed, objective=objective, scheduler=args.scheduler, time_limit=args.time_limit)
    out = rep.as_dict()
    if args.adversarial:
        from .adversary import mesh_adversary

        out["adversarial"] = {h: mesh_adversary(h, (sides[0], sides[1]), jobs=jobs, objective=objective, scheduler=args.scheduler, steps=args.adversarial,
                                                restarts=1, seed=args.seed, time_limit=args.time_limit).as_dict() for h in heuristics}
    if args.json:
        print_json(out)
        return 0
    print(f"2-D heuristics under {args.scheduler} vs the optimal contiguous schedule, {objective}, mesh {out['mesh']}, {jobs} jobs, {instances} instances (seed {args.seed})")
    print(f"  optimum unproven {out['unproven']}; {out['seconds']:.1f} s")
    print(f"  {'heuristic':28s} {'contig.':>7s} {'mean':>7s} {'median':>7s} {'worst':>7s} {'best':>7s} {'optimal':>8s}  {'vs capacity: mean':>18s}")
    for h, d in out["heuristics"].items():
        c, k = d["vs_contiguous_optimum"], d["vs_capacity_optimum"]
        if not d["compared"]:
            print(f"  {h:28s} {'yes' if d['contiguous'] else 'no':>7s}  (no proven instance)")
            continue
        print(f"  {h:28s} {'yes' if d['contiguous'] else 'no':>7s} {c['mean']:7.3f} {c['median']:7.3f} {c['worst']:7.3f} {c['best']:7.3f} {100 * c['share_optimal']:7.0f}%  {k['mean']:18.3f}")
    _print_adversaries(out, args.adversarial, "(release, duration, w, l)")
    return 0


def _check_adversarial(args) -> None:
    from topoalloc.errors import InvalidArgument

    if args.adversarial < 0:
        raise InvalidArgument("--adversarial", args.adversarial, "a number of hill-climbing steps >= 0 (0: no adversarial search)")


def _print_adversaries(out: dict, steps: int, fields: str) -> None:
    if not out.get("adversarial"):
        return
    print(f"  adversarial search ({steps} steps from one random instance each; worst ratio and the instance, jobs as {fields}):")
    for h, a in out["adversarial"].items():
        worst = "no proven instance" if a["worst"] is None else f"{a['worst']:.3f}"
        print(f"    {h:26s} {worst}  {a['instance']}")


def _family_gap(args) -> int:
    from topoalloc.errors import InvalidArgument
    from topoalloc.topology import Hypercube, Torus, parse_machine
    from topoalloc.topology.units import UnitTorus

    from .family_schedule import MAX_PROCESSORS, family_gap_study, model_cells

    top = parse_machine(args.family)
    if not isinstance(top, (Hypercube, Torus)):
        raise InvalidArgument("--family", args.family, "a hypercube:N, torus:AxB... or tpu:/tofu:/bgq: machine")
    cells, cell_pieces = model_cells(args.family)
    if cells > MAX_PROCESSORS:
        raise InvalidArgument("--family", args.family, f"a machine of at most {MAX_PROCESSORS} processors, or units on a machine of units (the exact model has a constraint per processor and piece)")
    objective = args.objective or "makespan"
    if objective not in ("makespan", "total_wait"):
        raise InvalidArgument("--objective", objective, "makespan or total_wait with --family")
    if args.ring:
        raise InvalidArgument("--ring", True, "the span options without --family")
    _check_adversarial(args)
    if args.heuristic:
        heuristics = args.heuristic
    elif isinstance(top, Hypercube):
        heuristics = ["buddy", "gray_code", "free_list", "afl"]
    elif isinstance(top, UnitTorus):
        heuristics = ["slice:rule=static", "slice:rule=ocs"]
    else:
        heuristics = ["ep", "nep"]
    jobs = args.jobs = 6 if args.jobs is None else args.jobs
    instances = args.instances = 20 if args.instances is None else args.instances
    _check_positive(args, "jobs", "instances")
    from topoalloc.limits import check_memory

    # one Boolean and one optional interval per (job, piece), referenced once per processor (unit) of the piece
    sizes = [1 << k for k in range(top.n_nodes.bit_length())] if not isinstance(top, UnitTorus) else [top.unit_size * n for n in range(1, top.n_units + 1)]
    literals = max(len(p) * (1 + len(p[0])) for p in (cell_pieces(size) for size in sizes) if p)
    check_memory(_BYTES_PER_LITERAL * jobs * literals, "--jobs", jobs, f"a piece model of {jobs:,} jobs on {args.family}")
    rep = family_gap_study(heuristics, machine=args.family, jobs=jobs, instances=instances, seed=args.seed, objective=objective, scheduler=args.scheduler, time_limit=args.time_limit)
    out = rep.as_dict()
    if args.adversarial:
        from .adversary import family_adversary

        out["adversarial"] = {h: family_adversary(h, args.family, jobs=jobs, objective=objective, scheduler=args.scheduler, steps=args.adversarial,
                                                  restarts=1, seed=args.seed, time_limit=args.time_limit).as_dict() for h in heuristics}
    if args.json:
        print_json(out)
        return 0
    what = "slices of the static rule" if isinstance(top, UnitTorus) else "power-of-two pieces"
    print(f"heuristics under {args.scheduler} vs the optimal schedule of {what}, {objective}, {args.family}, {jobs} jobs, {instances} instances (seed {args.seed})")
    if isinstance(top, UnitTorus):
        print("  (capacity optimum: the same whole units anywhere, i.e. the optical-circuit-switch rule's optimum)")
    print(f"  optimum unproven {out['unproven']}; {out['seconds']:.1f} s")
    print(f"  {'heuristic':20s} {'pieces':>6s} {'mean':>7s} {'median':>7s} {'worst':>7s} {'best':>7s} {'optimal':>8s}  {'vs capacity: mean':>18s}")
    for h, d in out["heuristics"].items():
        c, k = d["vs_piece_optimum"], d["vs_capacity_optimum"]
        if not d["compared"]:
            print(f"  {h:20s} {'yes' if d['pieces_only'] else 'no':>6s}  (no proven instance)")
            continue
        if c["mean"] is None:
            print(f"  {h:20s} {'yes' if d['pieces_only'] else 'no':>6s}  waits on all {c['infinite']} instances the optimum finishes without waiting")
            continue
        extra = f"  (+{c['infinite']} where only the optimum waits 0)" if c["infinite"] else ""
        cap = "-" if k["mean"] is None else f"{k['mean']:.3f}"
        print(f"  {h:20s} {'yes' if d['pieces_only'] else 'no':>6s} {c['mean']:7.3f} {c['median']:7.3f} {c['worst']:7.3f} {c['best']:7.3f} {100 * c['share_optimal']:7.0f}%  {cap:>18s}{extra}")
    _print_adversaries(out, args.adversarial, "(release, duration, size)")
    return 0


def run(args) -> int:
    return {"order": _order, "minspan": _minspan, "gap": _gap}[args.command](args)
