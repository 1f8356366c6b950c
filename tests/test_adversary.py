"""Adversaries of the subcube, subtorus, slice and 2-D families: deterministic, honest about the ratio they report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from topoalloc.errors import InvalidArgument
from topoalloc.ilp.adversary import family_adversary, mesh_adversary
from topoalloc.ilp.family_schedule import optimal_family_schedule, run_online
from topoalloc.ilp.mesh_schedule import mesh_schedule_objective, optimal_mesh_schedule, run_online_mesh
from topoalloc.ilp.schedule import schedule_objective


@pytest.mark.parametrize("heuristic, machine", [("buddy", "hypercube:4"), ("ep", "torus:4x2"), ("slice:rule=static", "tpu:4x2x2,cube=1")])
def test_family_adversary_reports_a_ratio_its_instance_has(heuristic, machine):
    a = family_adversary(heuristic, machine, jobs=5, steps=15, restarts=1, seed=3)
    b = family_adversary(heuristic, machine, jobs=5, steps=15, restarts=1, seed=3)
    assert a.as_dict() | {"seconds": 0} == b.as_dict() | {"seconds": 0}  # deterministic
    opt = optimal_family_schedule(a.instance, machine)
    online = schedule_objective(a.instance, [int(s) for s in run_online(heuristic, a.instance, machine)], "makespan")
    assert opt.status == "optimal" and online / opt.objective == pytest.approx(a.worst)
    assert a.worst >= 1.0  # these heuristics grant pieces: never below the piece optimum
    assert [r for _, r in a.history] == sorted(r for _, r in a.history) and a.history[-1][1] == a.worst


def test_family_adversary_climbs_above_its_start():
    a = family_adversary("buddy", "hypercube:4", jobs=6, steps=40, restarts=1, seed=1)
    assert a.history[0][0] == 0 and a.worst > a.history[0][1]  # pinned: 1.21 at the start, 1.64 after 40 steps
    assert a.worst == pytest.approx(1.6428571428571428)


def test_mesh_adversary_uses_the_rotating_optimum_for_adaptive_scan():
    a = mesh_adversary("adaptive_scan", (3, 3), jobs=4, steps=10, restarts=1, seed=2)
    opt = optimal_mesh_schedule(a.instance, 3, 3, rotate=True)
    starts, _ = run_online_mesh("adaptive_scan", a.instance, 3, 3)
    assert mesh_schedule_objective(a.instance, starts, "makespan") / opt.objective == pytest.approx(a.worst)
    assert a.worst >= 1.0


def test_bad_arguments():
    with pytest.raises(InvalidArgument, match="steps"):
        family_adversary("buddy", "hypercube:3", steps=-1)
    with pytest.raises(InvalidArgument, match="objective"):
        mesh_adversary("mbs", (3, 3), objective="max")


def test_cli_adversarial_with_family_and_mesh(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "topoalloc", "gap", *a], capture_output=True, text=True, cwd=tmp_path)  # noqa: E731
    p = run("--family", "hypercube:3", "--instances", "2", "--adversarial", "5", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out["adversarial"]) == {"buddy", "gray_code", "free_list", "afl"} and all(a["worst"] >= 0.5 for a in out["adversarial"].values())
    p = run("--mesh", "3x3", "--heuristic", "mesh_first_fit", "--instances", "1", "--jobs", "3", "--adversarial", "3")
    assert p.returncode == 0 and "adversarial search (3 steps" in p.stdout, p.stderr
    p = run("--mesh", "3x3", "--adversarial", "-2")
    assert p.returncode == 2 and "--adversarial" in p.stderr and "Traceback" not in p.stderr
