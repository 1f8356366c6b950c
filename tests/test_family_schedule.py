"""Exact baselines of the subcube, subtorus and slice families: the pieces, the CP-SAT optimum against brute force, the gap study."""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
import sys
import zlib

import pytest

from topoalloc.errors import InvalidArgument, SolverError
from topoalloc.ilp.family_schedule import check_family_schedule, family_gap_study, optimal_family_schedule, pieces
from topoalloc.ilp.schedule import SchedJob, schedule_objective


@pytest.mark.parametrize("n", range(1, 6))
def test_hypercube_pieces_are_every_subcube(n):
    for k in range(n + 1):
        got = pieces(f"hypercube:{n}", 1 << k)
        assert len(got) == math.comb(n, k) * 2 ** (n - k) == len(set(got))
        for p in got:  # a subcube: 2^k nodes whose addresses differ in exactly k bits
            diff = 0
            for v in p:
                diff |= v ^ p[0]
            assert len(p) == 1 << k and bin(diff).count("1") == k


def test_sizes_round_up_to_a_power_of_two():
    assert pieces("hypercube:3", 3) == pieces("hypercube:3", 4)
    assert pieces("hypercube:2", 5) == []


def test_torus_pieces_wrap_only_where_the_machine_does():
    ring = pieces("torus:4", 2)
    assert (0, 3) in ring and len(ring) == 4  # wraps round the ring
    line = pieces("mesh:4", 2)
    assert (0, 3) not in line and len(line) == 3
    # boxes of 4 on a 4x2 torus: 4x1 (2 rows, whole ring: 1 start each), 2x2 (4 starts x 1 start of the whole side)
    boxes = pieces("torus:4x2", 4)
    assert len(boxes) == 2 + 4 and all(len(b) == 4 for b in boxes)


def _brute(jobs, machine, objective, horizon):
    """The best objective over every start and every piece of every job (tiny instances only)."""
    cands = [pieces(machine, j.size) for j in jobs]
    best = None
    for starts in itertools.product(*[range(j.release, horizon - j.duration + 1) for j in jobs]):
        for chosen in itertools.product(*cands):
            ok = True
            for a, b in itertools.combinations(range(len(jobs)), 2):
                if set(chosen[a]) & set(chosen[b]) and starts[a] < starts[b] + jobs[b].duration and starts[b] < starts[a] + jobs[a].duration:
                    ok = False
                    break
            if ok:
                v = schedule_objective(jobs, list(starts), objective)
                best = v if best is None else min(best, v)
    return best


@pytest.mark.parametrize("machine", ["hypercube:2", "torus:4", "mesh:2x2", "tpu:4x1x1,cube=1", "tpu:3x1x1,cube=1"])
@pytest.mark.parametrize("objective", ["makespan", "total_wait"])
def test_optimum_equals_brute_force(machine, objective):
    from topoalloc.topology import parse_machine

    rng = random.Random(zlib.crc32(f"{machine} {objective}".encode()))  # (hash() of a str changes per process)
    sizes = [s for s in (1, 2, 3, 4) if s <= parse_machine(machine).n_nodes]
    for _ in range(6):
        jobs = [SchedJob(rng.randint(0, 2), rng.randint(1, 2), rng.choice(sizes)) for _ in range(3)]
        horizon = max(j.release for j in jobs) + sum(j.duration for j in jobs)
        r = optimal_family_schedule(jobs, machine, objective=objective, time_limit=20)
        assert r.status == "optimal"
        assert r.objective == _brute(jobs, machine, objective, horizon), (jobs, r)


def test_the_independent_check_rejects_shared_processors_and_foreign_pieces():
    jobs = [SchedJob(0, 2, 2), SchedJob(0, 2, 2)]
    check_family_schedule(jobs, "hypercube:2", [0, 0], [(0, 1), (2, 3)])
    with pytest.raises(SolverError, match="both hold processor 1"):
        check_family_schedule(jobs, "hypercube:2", [0, 1], [(0, 1), (1, 3)])
    with pytest.raises(SolverError, match="not an allowed piece"):
        check_family_schedule(jobs, "hypercube:2", [0, 0], [(0, 3), (1, 2)])  # 0 and 3 differ in two bits


def test_gap_study_scores_both_families():
    cube = family_gap_study(["buddy", "gray_code", "free_list", "afl"], machine="hypercube:3", jobs=5, instances=4, seed=3).as_dict()
    for h in ("buddy", "gray_code", "free_list"):
        assert cube["heuristics"][h]["pieces_only"] and cube["heuristics"][h]["vs_piece_optimum"]["best"] >= 1.0
    assert not cube["heuristics"]["afl"]["pieces_only"]  # AFL grants exact sizes: it may beat the piece optimum
    tor = family_gap_study(["ep", "nep"], machine="torus:4x2", jobs=5, instances=4, seed=3).as_dict()
    assert tor["unproven"] == 0 and all(d["compared"] == 4 for d in tor["heuristics"].values())


def test_slice_pieces_are_the_static_rules_boxes_of_whole_units():
    from topoalloc.ilp.family_schedule import grants_pieces, model_cells, piece_size
    from topoalloc.topology import parse_machine

    # TPU cubes of 2x2x2 chips in a 2x2x2 grid: 9 chips round up to 2 cubes, a 1x1x2 box in one of 3 orientations x 4 positions
    ps = pieces("tpu:2x2x2,cube=2", 9)
    top = parse_machine("tpu:2x2x2,cube=2")
    assert len(ps) == 12 and all(len(p) == 16 for p in ps) and piece_size("tpu:2x2x2,cube=2", 9) == 16
    unit_of = {int(v): u for u in range(top.n_units) for v in top.unit_nodes[u]}
    assert all(len({unit_of[v] for v in p}) == 2 for p in ps)  # whole units
    # a ring of 3 units: a power of two (4) would overshoot, so 3 units, the whole ring
    assert pieces("tpu:3x1x1,cube=1", 3) == [(0, 1, 2)] and model_cells("tpu:3x1x1,cube=1")[0] == 3
    assert grants_pieces("slice") and grants_pieces("slice:rule=static") and not grants_pieces("slice:rule=ocs")
    assert not grants_pieces("slice:shapes=all") and grants_pieces("ep") and not grants_pieces("afl")


def test_gap_study_scores_the_slice_rules():
    d = family_gap_study(["slice:rule=static", "slice:rule=ocs"], machine="tpu:4x4x2,cube=1", jobs=8, instances=4, seed=2, objective="total_wait").as_dict()
    static, ocs = d["heuristics"]["slice:rule=static"], d["heuristics"]["slice:rule=ocs"]
    assert d["unproven"] == 0 and static["pieces_only"] and not ocs["pieces_only"]
    # the capacity optimum (whole units anywhere: the OCS rule's) relaxes the static one: never worse
    assert static["vs_capacity_optimum"]["best"] >= static["vs_piece_optimum"]["best"] - 1e-12 >= 1.0 - 1e-12


def test_bad_arguments():
    with pytest.raises(InvalidArgument, match="machine"):
        pieces("flat:8", 2)
    with pytest.raises(InvalidArgument, match="at most 128"):
        optimal_family_schedule([(0, 1, 1)], "hypercube:8")


def test_cli_gap_family(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "topoalloc", "gap", *a], capture_output=True, text=True, cwd=tmp_path)  # noqa: E731
    p = run("--family", "hypercube:3", "--instances", "2", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out["heuristics"]) == {"buddy", "gray_code", "free_list", "afl"}
    p = run("--family", "hypercube:9")
    assert p.returncode == 2 and "at most 128 processors" in p.stderr and "Traceback" not in p.stderr
    p = run("--family", "tpu:4x2x2,cube=1", "--instances", "2", "--json")
    assert p.returncode == 0, p.stderr
    assert set(json.loads(p.stdout)["heuristics"]) == {"slice:rule=static", "slice:rule=ocs"}
    p = run("--family", "tofu:8x8x8")
    assert p.returncode == 2 and "128 processors, or units" in p.stderr and "Traceback" not in p.stderr
    p = run("--family", "torus:4x4", "--mesh", "4x4")
    assert p.returncode == 2 and "either --mesh or --family" in p.stderr
