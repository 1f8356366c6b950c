"""The 2-D offline optimum (time × x × y, CP-SAT) and the 2-D heuristics' gaps to it."""

from __future__ import annotations

import itertools
import json
import random

import pytest

pytest.importorskip("ortools")

from topoalloc.cli import main  # noqa: E402
from topoalloc.errors import InvalidArgument, RequestNeverFits, SolverError  # noqa: E402
from topoalloc.ilp.mesh_schedule import (  # noqa: E402
    MeshJob,
    check_mesh_schedule,
    mesh_gap_study,
    mesh_schedule_objective,
    optimal_mesh_schedule,
    random_mesh_instance,
    run_online_mesh,
)


def brute_force(jobs, X, Y, objective, rotate=False):
    """Every start and placement of every job (tiny instances only)."""
    horizon = max(j.release for j in jobs) + sum(j.duration for j in jobs)
    options = []
    for j in jobs:
        frames = {(j.w, j.l)} | ({(j.l, j.w)} if rotate else set())
        opts = [(s, (x, y, w, l)) for s in range(j.release, horizon - j.duration + 1) for w, l in frames
                for x in range(X - w + 1) for y in range(Y - l + 1)]
        options.append(opts)
    best = None
    for combo in itertools.product(*options):
        starts = [c[0] for c in combo]
        places = [c[1] for c in combo]
        try:
            check_mesh_schedule(jobs, X, Y, starts, places, rotate=rotate)
        except SolverError:
            continue
        v = mesh_schedule_objective(jobs, starts, objective)
        best = v if best is None else min(best, v)
    return best


@pytest.mark.parametrize("objective", ["makespan", "total_wait"])
@pytest.mark.parametrize("seed", range(4))
def test_optimum_equals_brute_force_on_tiny_instances(objective, seed):
    rng = random.Random(seed)
    jobs = [MeshJob(rng.randint(0, 1), rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 2)) for _ in range(3)]
    for rotate in (False, True):
        X, Y = (3, 2) if not rotate else (3, 3)
        res = optimal_mesh_schedule(jobs, X, Y, objective=objective, rotate=rotate)
        assert res.status == "optimal"
        assert res.objective == brute_force(jobs, X, Y, objective, rotate)
        check_mesh_schedule(jobs, X, Y, res.starts, res.placements, rotate=rotate)


def test_rotation_can_only_help_and_space_matters():
    jobs = [(0, 3, 1, 4), (0, 3, 4, 1), (0, 3, 3, 3)]
    fixed = optimal_mesh_schedule(jobs, 4, 4)
    turned = optimal_mesh_schedule(jobs, 4, 4, rotate=True)
    assert turned.objective <= fixed.objective
    # two 2 x 2 squares side by side, then the 4 x 1 row: contiguity costs nothing here
    assert optimal_mesh_schedule([(0, 2, 2, 2), (0, 2, 2, 2), (0, 1, 4, 1)], 4, 2).objective == 3
    # an L of free cells is not a submesh: the capacity bound is not reached
    assert optimal_mesh_schedule([(0, 2, 3, 1), (0, 1, 1, 1), (0, 1, 2, 2)], 3, 2).objective == 3


@pytest.mark.parametrize("objective", ["makespan", "total_wait"])
def test_contiguous_heuristics_never_beat_the_optimum(objective):
    heuristics = ["mesh_first_fit", "mesh_best_fit", "frame_sliding", "adaptive_scan", "buddy_2d", "anca_ff", "mbs", "paging"]
    rep = mesh_gap_study(heuristics, mesh=(4, 4), jobs=6, instances=8, seed=3, objective=objective)
    d = rep.as_dict()
    assert d["unproven"] == 0 and d["instances"] == 8
    for h in heuristics:
        s = d["heuristics"][h]
        assert s["compared"] == 8
        assert s["vs_capacity_optimum"]["best"] >= 1.0 - 1e-12  # the capacity optimum bounds everyone
        if s["contiguous"]:
            assert s["vs_contiguous_optimum"]["best"] >= 1.0 - 1e-12


def test_online_replay_follows_the_simulation():
    jobs = [MeshJob(0, 2, 4, 4), MeshJob(1, 1, 1, 1)]
    starts, r = run_online_mesh("mesh_first_fit", jobs, 4, 4)
    assert starts == [0.0, 2.0] and r.scheduler.startswith("fcfs")
    starts, _ = run_online_mesh("mesh_first_fit", [MeshJob(0, 2, 2, 2), MeshJob(0, 2, 4, 2)], 4, 4)
    assert starts == [0.0, 0.0]


def test_errors_are_one_line():
    with pytest.raises(RequestNeverFits):
        optimal_mesh_schedule([(0, 1, 5, 1)], 4, 4)
    assert optimal_mesh_schedule([(0, 1, 1, 5)], 5, 4, rotate=True).objective == 1
    with pytest.raises(InvalidArgument):
        optimal_mesh_schedule([(0, 1, 0, 1)], 4, 4)
    with pytest.raises(InvalidArgument):
        optimal_mesh_schedule([(0, 1, 1)], 4, 4)
    with pytest.raises(InvalidArgument):
        optimal_mesh_schedule([(0, 1, 1, 1)], 4, 4, objective="span")
    assert random_mesh_instance(5, 3, 4, 7) == random_mesh_instance(5, 3, 4, 7)


def test_gap_cli_mesh(capsys):
    assert main(["gap", "--mesh", "4x3", "--jobs", "5", "--instances", "3", "--heuristic", "mesh_first_fit", "--heuristic", "anca_bf", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mesh"] == "4x3" and set(out["heuristics"]) == {"mesh_first_fit", "anca_bf"}
    assert out["heuristics"]["mesh_first_fit"]["contiguous"] is True
    assert main(["gap", "--mesh", "4x3", "--jobs", "4", "--instances", "2", "--objective", "total_wait"]) == 0
    assert "mesh_best_fit" in capsys.readouterr().out
    assert main(["gap", "--mesh", "4x3", "--objective", "sum"]) == 2
    assert main(["gap", "--heuristic", "best_fit", "--heuristic", "first_fit", "--instances", "1"]) == 2
