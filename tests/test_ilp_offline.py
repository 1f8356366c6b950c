"""topoalloc.ilp.minspan, .schedule and .gap: exact optima against brute force, validators
shared with the online allocators, heuristics never below the optimum, statuses, errors."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from topoalloc.alloc.base import Allocator, Request
from topoalloc.errors import InvalidArgument, RequestNeverFits, SolverError
from topoalloc.ilp.gap import adversarial_search, gap_study, run_online
from topoalloc.ilp.minspan import (
    OBJECTIVES,
    SpanJob,
    check_instance,
    conflicts,
    greedy_min_span,
    min_span_allocation,
    objective_of,
    random_fixed_instance,
    span_of,
)
from topoalloc.ilp.schedule import MODES, SCHED_OBJECTIVES, SchedJob, check_schedule_solution, optimal_schedule, random_release_instance, schedule_objective
from topoalloc.testing.conformance import check_allocation_valid, check_invariants
from topoalloc.topology import parse_machine

# ----------------------------------------------------------------- min span


def brute_min_span(jobs, N, objective, ring):
    js = check_instance(jobs, N)
    best = None
    choices = [list(itertools.combinations(range(N), j.size)) for j in js]
    for combo in itertools.product(*choices):
        ok = all(not (conflicts(js[a], js[b]) and set(combo[a]) & set(combo[b])) for a in range(len(js)) for b in range(a + 1, len(js)))
        if ok:
            v = objective_of([span_of(c, N, ring=ring) for c in combo], [j.size for j in js], objective)
            best = v if best is None or v < best else best
    return best


TINY = [
    [(0, 4, 2), (1, 3, 1), (2, 6, 2), (4, 5, 1)],
    [(0, 2, 1), (0, 3, 1), (1, 4, 2), (2, 5, 1), (3, 5, 2)],
    [(0, 5, 1), (1, 2, 3), (2, 4, 2), (3, 3, 1)],  # a zero-length job at t=3
]


@pytest.mark.parametrize("ring", [False, True])
@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("case", range(len(TINY)))
def test_min_span_equals_brute_force(case, objective, ring):
    jobs, N = TINY[case], 5
    res = min_span_allocation(jobs, N, objective=objective, ring=ring)
    assert res.status == "optimal"
    assert res.objective == brute_min_span(jobs, N, objective, ring) == res.bound
    assert res.objective <= res.warm_start_objective


@pytest.mark.parametrize("seed", range(4))
def test_min_span_random_small_equals_brute_force(seed):
    jobs = random_fixed_instance(6, 4, seed)
    for objective in OBJECTIVES:
        assert min_span_allocation(jobs, 6, objective=objective).objective == brute_min_span(jobs, 6, objective, False)


def test_span_formulas_follow_the_paper():
    # §2.3: ring span = |P| - max(max_i r_{i+1} - r_i - 1, |P| - 1 - r_last + r_first)
    assert span_of([2, 3, 4], 8) == 3 and span_of([2, 3, 4], 8, ring=True) == 3
    assert span_of([0, 7], 8) == 8 and span_of([0, 7], 8, ring=True) == 2
    assert span_of([0, 3, 6], 8, ring=True) == 6  # free runs 1-2, 4-5 and 7: the arc 6..3 has 6 ranks
    rng = np.random.default_rng(0)
    for _ in range(200):
        r = sorted(rng.choice(10, size=rng.integers(1, 10), replace=False).tolist())
        assert len(r) <= span_of(r, 10, ring=True) <= span_of(r, 10)


def test_conflict_rule_and_zero_length_jobs():
    a, b = SpanJob(0, 2, 1), SpanJob(2, 4, 1)
    assert not conflicts(a, b)
    z = SpanJob(2, 2, 1)
    assert conflicts(b, z) and not conflicts(a, z) and conflicts(z, SpanJob(2, 2, 1))


def test_min_span_uses_the_ordering():
    jobs = [(0, 1, 2)]
    res = min_span_allocation(jobs, 4, ordering=[3, 1, 0, 2])
    assert res.spans == (2,)
    assert set(res.nodes[0]) in ({3, 1}, {0, 2}, {1, 0})


class _Prescribed(Allocator):
    """Grants exactly the nodes an offline solution chose (to run it through the allocator validators)."""

    name = "prescribed"
    claims = frozenset({"exact_size"})

    def __init__(self, topology, plan):
        super().__init__(topology)
        self.plan = plan

    def _allocate(self, request):
        return np.array(self.plan[request.job_id], dtype=np.int64)


@pytest.mark.parametrize("ring", [False, True])
def test_min_span_solution_passes_allocator_validators(ring):
    jobs = random_fixed_instance(12, 8, 3)
    res = min_span_allocation(jobs, 12, objective="sum", ring=ring, ordering=list(range(11, -1, -1)))
    top = parse_machine("mesh:12")
    alloc = _Prescribed(top, res.nodes)
    held = {}
    for t in sorted({j.start for j in jobs} | {j.end for j in jobs}):
        for i, j in enumerate(jobs):
            if j.end == t and j.start < t:
                alloc.release(held.pop(i))
                check_invariants(alloc)
        for i, j in enumerate(jobs):
            if j.start == t:
                a = alloc.allocate(Request(j.size, job_id=i))
                assert a is not None
                check_allocation_valid(a, alloc)
                check_invariants(alloc)
                held[i] = a
    assert not alloc.allocations or all(jobs[i].end > jobs[i].start for i in held)


def test_min_span_errors():
    with pytest.raises(RequestNeverFits, match="need 5"):
        min_span_allocation([(0, 2, 3), (1, 3, 2)], 4)
    with pytest.raises(RequestNeverFits):
        min_span_allocation([(0, 2, 5)], 4)
    with pytest.raises(InvalidArgument, match=r"jobs\[0\]"):
        min_span_allocation([(0, 2)], 4)
    with pytest.raises(InvalidArgument, match=r"jobs\[1\].end"):
        min_span_allocation([(0, 2, 1), (3, 1, 1)], 4)
    with pytest.raises(InvalidArgument, match="objective"):
        min_span_allocation([(0, 2, 1)], 4, objective="median")
    with pytest.raises(InvalidArgument, match="ordering"):
        min_span_allocation([(0, 2, 1)], 4, ordering=[0, 1, 2, 2])


def test_min_span_time_limit_statuses():
    jobs = random_fixed_instance(32, 15, 2)
    res = min_span_allocation(jobs, 32, objective="sum", time_limit=0.01)
    assert res.status in ("optimal", "feasible", "unknown")
    if res.spans is None:
        assert res.objective is None
    else:
        assert res.bound <= res.objective


def test_greedy_always_feasible():
    for seed in range(20):
        jobs = random_fixed_instance(10, 8, seed)
        ranks = greedy_min_span(jobs, 10)
        for a in range(8):
            assert len(ranks[a]) == jobs[a].size
            for b in range(a + 1, 8):
                assert not (conflicts(jobs[a], jobs[b]) and set(ranks[a]) & set(ranks[b]))


# ------------------------------------------------------------------ schedules


def brute_schedule(jobs, N, mode, objective):
    js = [SchedJob(*j) for j in jobs]
    H = max(j.release for j in js) + sum(j.duration for j in js)
    best = None
    starts_choices = [range(j.release, H - j.duration + 1) for j in js]
    rank_choices = [range(N - j.size + 1) if mode == "contiguous" else [0] for j in js]
    for starts in itertools.product(*starts_choices):
        for ranks in itertools.product(*rank_choices):
            try:
                check_schedule_solution(js, N, starts, ranks if mode == "contiguous" else None)
            except SolverError:
                continue
            v = schedule_objective(js, starts, objective)
            best = v if best is None or v < best else best
    return best


SCHED_TINY = [
    [(0, 2, 2), (0, 1, 3), (1, 2, 2)],
    [(0, 3, 1), (1, 1, 4), (1, 2, 2)],
    [(0, 2, 2), (0, 2, 1), (0, 1, 2)],  # flat fits 3 at once, contiguous may not
]


@pytest.mark.parametrize("objective", SCHED_OBJECTIVES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", range(len(SCHED_TINY)))
def test_schedule_equals_brute_force(case, mode, objective):
    res = optimal_schedule(SCHED_TINY[case], 4, mode=mode, objective=objective)
    assert res.status == "optimal"
    assert res.objective == brute_schedule(SCHED_TINY[case], 4, mode, objective)


@pytest.mark.parametrize("seed", range(5))
def test_contiguous_never_beats_flat_and_simulator_never_beats_optimum(seed):
    from topoalloc import simulate
    from topoalloc.workload.core import Job, Workload

    jobs = random_release_instance(8, 7, seed)
    wl = Workload.from_jobs([Job(i + 1, float(j.release), float(j.duration), j.size, float(j.duration)) for i, j in enumerate(jobs)])
    for objective in SCHED_OBJECTIVES:
        flat = optimal_schedule(jobs, 8, mode="flat", objective=objective)
        cont = optimal_schedule(jobs, 8, mode="contiguous", objective=objective)
        assert flat.status == cont.status == "optimal"
        assert cont.objective >= flat.objective
        for sched in ("fcfs", "easy"):
            r = simulate(wl, machine="flat:8", allocator="flat", scheduler=sched)
            order = np.argsort(wl.job_id)
            start = r.start[order].round().astype(int)
            online = schedule_objective(jobs, start.tolist(), objective)
            assert online >= flat.objective


def test_schedule_errors():
    with pytest.raises(RequestNeverFits):
        optimal_schedule([(0, 1, 5)], 4)
    with pytest.raises(InvalidArgument, match=r"jobs\[0\]"):
        optimal_schedule([(0, 1.5, 1)], 4)
    with pytest.raises(InvalidArgument, match="mode"):
        optimal_schedule([(0, 1, 1)], 4, mode="mesh")


def test_zero_duration_jobs_start_at_release():
    res = optimal_schedule([(3, 0, 4), (0, 5, 4)], 4, objective="total_wait")
    assert res.starts == (3, 0) and res.objective == 0


# ------------------------------------------------------------------------ gap


def test_online_replay_reuses_nodes_freed_at_the_same_instant():
    out = run_online("first_fit", [(0, 2, 4), (2, 3, 4)], 4)
    assert out.comparable and out.ranks == ((0, 1, 2, 3), (0, 1, 2, 3))


def test_online_replay_reports_refusals():
    # EP rounds 3 up to 4: not comparable, counted, never scored
    out = run_online("ep", [(0, 2, 3)], 8)
    assert not out.comparable and "granted" in out.reason


@pytest.mark.parametrize("heuristic", ["flat", "sorted_free_list", "first_fit", "best_fit", "sum_of_squares", "best_fit:span=ring"])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_heuristic_at_least_the_optimum(heuristic, objective):
    ring = "ring" in heuristic
    rep = gap_study(heuristic, processors=8, jobs=6, instances=6, seed=2, objective=objective, ring=ring)
    assert rep.unproven == 0 and len(rep.ratios) == rep.instances - rep.not_comparable > 0
    assert min(rep.ratios) >= 1.0  # gap_study also asserts online >= optimum per instance


def test_gap_is_deterministic_and_finds_a_bad_instance():
    a = gap_study("best_fit", processors=8, jobs=6, instances=5, seed=1).as_dict()
    b = gap_study("best_fit", processors=8, jobs=6, instances=5, seed=1).as_dict()
    assert a == b
    x = adversarial_search("first_fit", processors=6, jobs=5, steps=25, restarts=1, seed=3)
    y = adversarial_search("first_fit", processors=6, jobs=5, steps=25, restarts=1, seed=3)
    assert x.as_dict() == y.as_dict()
    assert x.worst >= 1.0
    if x.instance:
        on = run_online("first_fit", x.instance, 6)
        opt = min_span_allocation(x.instance, 6, objective="max")
        assert abs(float(Fraction(max(on.spans)) / opt.objective) - x.worst) < 1e-9


def test_gap_errors():
    from topoalloc.errors import UnknownName

    with pytest.raises(UnknownName):
        gap_study("no_such_allocator", instances=1)
    with pytest.raises(InvalidArgument):
        gap_study("best_fit", instances=0)


def test_feasible_solutions_report_their_true_value():
    """A time-limited (feasible) solution is scored by the allocation itself, never above the model's value."""
    jobs = random_fixed_instance(32, 15, 5)  # not contiguously packable: the full model runs
    res = min_span_allocation(jobs, 32, objective="sum_per_size", ring=False, time_limit=2)
    assert res.status in ("feasible", "optimal")
    assert res.objective == objective_of(res.spans, [j.size for j in jobs], "sum_per_size")
    assert res.bound <= res.objective


@pytest.mark.parametrize("heuristic", ["first_fit", "best_fit", "sum_of_squares", "sorted_free_list"])
@pytest.mark.parametrize("n", [6, 10])
def test_adaptive_adversary_ratio_grows_linearly(heuristic, n):
    from topoalloc.ilp.gap import adaptive_adversary

    inst = adaptive_adversary(heuristic, n)
    on = run_online(heuristic, inst, n)
    opt = min_span_allocation(inst, n, objective="max")
    assert opt.status == "optimal" and opt.objective == 2
    assert max(on.spans) == n  # ratio n/2
    ring = adaptive_adversary(heuristic + ":span=ring", n, ring=True)
    on_r = run_online(heuristic + ":span=ring", ring, n, ring=True)
    assert max(on_r.spans) == n // 2 + 1 and min_span_allocation(ring, n, objective="max", ring=True).objective == 2


def test_fragmenting_instances_admit_no_contiguous_packing_and_are_solved_by_the_full_model():
    from topoalloc.ilp.minspan import fragmenting_instance, full_machine_instance, has_contiguous_packing

    # the plain generator packs contiguously (the contiguous phase settles it); the full-machine one fills every instant
    assert all(has_contiguous_packing(random_fixed_instance(16, 10, s), 16) for s in range(5))
    inst = full_machine_instance(8, 5, 3)
    assert all(sum(j.size for j in inst if j.start <= t < j.end) == 8 for t in range(5))
    hard = fragmenting_instance(16, 10, 1)
    assert hard == fragmenting_instance(16, 10, 1)  # deterministic
    assert has_contiguous_packing(hard, 16) is False
    res = min_span_allocation(hard, 16, objective="sum", time_limit=30)
    # pinned: 22 jobs, proven optimal at 80 (every span at least its size: the trivial bound is not met)
    assert len(hard) == 22 and res.status == "optimal" and res.objective == 80 > sum(j.size for j in hard)
    assert any(s > j.size for s, j in zip(res.spans, hard))


def test_a_search_stopped_early_never_returns_worse_than_its_warm_start():
    from topoalloc.ilp.minspan import fragmenting_instance

    hard = fragmenting_instance(32, 10, 0)
    res = min_span_allocation(hard, 32, objective="sum", time_limit=1.0)
    assert res.spans is not None and res.objective <= res.warm_start_objective


def test_cli_minspan_fragmenting(tmp_path):
    import json
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "topoalloc", "minspan", "--processors", "16", "--fragmenting", "10", "--seed", "1", "--json", "--time-limit", "30"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "optimal" and len(out["jobs"]) == 22
    p = subprocess.run([sys.executable, "-m", "topoalloc", "minspan", "--fragmenting", "0"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "--fragmenting" in p.stderr and "Traceback" not in p.stderr
