"""docs/extending.md, executed as written: its example allocator in one file is picked up by
the conformance suite, every scheduler and the command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import topoalloc
from topoalloc.registry import ALLOCATORS
from topoalloc.testing import CHECKS, check_schedule, parametrize_with_checks
from topoalloc.topology import parse_machine

DOC = Path(__file__).resolve().parent.parent / "docs" / "extending.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
MODULE = BLOCKS[0]


def _example(tmp_path: Path) -> Path:
    path = tmp_path / "first_block.py"
    path.write_text(MODULE)
    return path


@pytest.fixture(scope="module")
def first_block():
    ns: dict = {}
    if "first_block" not in ALLOCATORS:
        exec(compile(MODULE, str(DOC), "exec"), ns)
        return ns["FirstBlock"]
    return type(ALLOCATORS.get("first_block")(parse_machine("flat:2")))


def test_the_doc_has_the_module_and_the_test():
    assert "class FirstBlock(Allocator)" in MODULE
    assert "parametrize_with_checks" in BLOCKS[1]


MACHINES = ["mesh:4x4", "flat:7", "torus:2x3x4", "hypercube:3"]


@pytest.mark.parametrize("check", list(CHECKS.values()), ids=list(CHECKS))
@pytest.mark.parametrize("machine", MACHINES)
def test_example_passes_every_check(first_block, machine, check):
    check(lambda: first_block(parse_machine(machine)))


def test_parametrize_with_checks_gives_one_test_per_check(first_block):
    mark = parametrize_with_checks([lambda: first_block(parse_machine("mesh:4x4"))])
    ids = [p.id for p in mark.args[1]]
    assert len(ids) == len(CHECKS) and ids[0].startswith("first_block-mesh:4x4-")


@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative"])
def test_example_under_every_scheduler(first_block, sched):
    r = topoalloc.simulate(machine="mesh:16x8", allocator=first_block(parse_machine("mesh:16x8")), scheduler=sched, work_multiple=0.05)
    check_schedule(r)


def test_example_from_the_command_line(tmp_path):
    _example(tmp_path)
    env_path = f"{tmp_path}"
    p = subprocess.run(
        [sys.executable, "-m", "topoalloc", "--plugin", "first_block", "simulate", "--machine", "mesh:16x8", "--allocator", "first_block", "--scheduler", "easy", "--json", "--quiet"],
        capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["allocator"] == "first_block" and out["jobs"] == 18239


def test_unknown_plugin_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "topoalloc", "--plugin", "no_such_module_x", "list"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no_such_module_x" in p.stderr
