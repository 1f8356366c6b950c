"""Generated-mutant score of the algorithm modules, with mutmut (issue: proofs that catch real bugs, item 3).

mutmut (3.x) generates every mutant of the chosen modules (operators swapped,
constants moved by one, conditions negated, arguments and strings changed),
and runs, for each, the tests that reached the mutated function, in a forked
process; a mutant is *killed* when one of them fails.  This script runs it
group by group — each group is some modules and the default-tier test files
that exercise them — in a scratch copy of the checkout, so that the
repository is never touched:

* the copy is the committed tree (``git archive HEAD``) plus the compiled
  extensions built in place, with ``proofs/`` and ``ilp/`` moved under
  ``topoalloc/`` (their installed names), so every import in the tests comes
  from mutmut's mutated copy, never from the checkout;
* pytest runs without xdist and with the default tier's markers, each mutant
  in a fresh process (mutmut's fork server, warmed up with the third-party
  libraries only): a worker forked from the process that ran the suite
  inherits its caches and can skip the mutated code altogether.

It prints, per group and in all, the mutants killed, survived, without a test
and timed out, and the score (killed + killed at start + timed out) / (the same
+ survived): a mutant that makes a test hang is detected, and "killed at start"
is a survivor that fails the group's tests when run again with the mutant
active from the interpreter's start (:func:`recheck_kills`).  Mutants that no test
of the group reaches are not in the score; the "no tests" column shows them.  Survivors
listed in ``benchmarks/mutation_equivalent.txt``, each with the argument why no test can
tell it from the original, are counted as "equivalent" and left out of the score.  ``--list-survivors`` prints every survivor's diff
(``mutmut show``) so they can be argued as equivalent or killed by a new test.

Usage::

    pip install -e ".[mutation]"                                    # mutmut
    python benchmarks/mutation_score.py --groups curves linear      # some groups
    python benchmarks/mutation_score.py                             # every group (hours)
    python benchmarks/mutation_score.py --groups hypercube --keep runs      # keep the copy and verdicts
    python benchmarks/mutation_score.py --groups hypercube --keep runs --resume   # after an interruption or
                                    # a change: only the mutants without a verdict, then every survivor again
    python benchmarks/mutation_score.py --groups hypercube --keep runs --reuse --list-survivors  # judge again
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the conformance checks of an allocator's probes and guard against replay (the groups of allocators with probes)
PROBE_CHECKS = ("earliest_fit", "reservation_guard", "schedules_equal_replay", "max_request_now", "can_allocate", "fit_keys")

#: group -> (modules mutated, default-tier tests run against them)
GROUPS: dict[str, tuple[list[str], list[str]]] = {
    "curves": (["topoalloc/curves/grid.py"], ["tests/test_curves.py"]),
    "linear": (["topoalloc/alloc/linear/allocator.py"], ["tests/test_linear_alloc.py"]),
    # EASY's probes and guard of the subtorus allocators are checked against replay by the conformance
    # suite (earliest fit, the guard, the schedules), as well as by test_torus's own comparisons
    "partition": (
        ["topoalloc/alloc/partition/schemes.py", "topoalloc/alloc/partition/conversion.py", "topoalloc/alloc/partition/allocator.py"],
        [
            "tests/test_torus.py", "tests/test_proofs_torus.py", "tests/test_partition_rules.py",
            *(f"tests/conformance/test_allocators.py::test_conformance[{a}-{m}-{check}]"
              for a in ("ep", "nep") for m in ("torus:8", "torus:2x3x4", "mesh:5x3") for check in PROBE_CHECKS),
        ],
    ),
    "hypercube": (
        ["topoalloc/alloc/hypercube/embedding.py", "topoalloc/alloc/hypercube/allocators.py", "topoalloc/topology/hypercube.py"],
        [
            "tests/test_hypercube.py", "tests/test_proofs_hypercube.py", "tests/test_hypercube_rules.py",
            # the probes and guards against replay, as for the partition group
            *(f"tests/conformance/test_allocators.py::test_conformance[{a}-{m}-{check}]"
              for a in ("buddy", "gray_code", "free_list", "afl") for m in ("hypercube:4", "hypercube:5") for check in PROBE_CHECKS),
        ],
    ),
    # the keyed walk (EASY._backfill_indexed and its key index) runs only for allocators that
    # are not counting: its questions (test_keyed_walk), the conformance suite's schedules against
    # replay on one machine per family, and the kept-guard and probe tests of the slices, subcubes
    # and subtori; the compiled kernel is the counting path's reference
    "sched": (
        ["topoalloc/sched/easy.py", "topoalloc/sched/conservative.py"],
        [
            "tests/test_keyed_walk.py",
            *(f"tests/conformance/test_allocators.py::test_conformance[{case}-schedules_equal_replay]" for case in (
                "ep-torus:2x3x4", "nep-mesh:5x3", "mesh_first_fit-mesh:5x3", "anca_ff-torus:2x3x4", "buddy-hypercube:4",
                "free_list-hypercube:4", "afl-hypercube:4", "gray_code-hypercube:4", "slice-tofu:3x2x2", "slice-tpu:4x2x3,cube=1",
                "buddy_2d-mesh:4x4", "sum_of_squares-slurm-block:topology-block-example.conf")),
            "tests/test_schedulers_unit.py", "tests/test_golden.py", "tests/test_properties.py", "tests/test_fastpath.py",
            "tests/test_machines_units.py::test_kept_guard_on_long_queues",
            "tests/test_machines_units.py::test_kept_guard_equals_fresh_passes_and_replay",
            "tests/test_hypercube.py::test_kept_mask_guard_equals_fresh_passes_and_replay",
            "tests/test_torus.py::test_easy_probe_equals_general_replay",
            "tests/test_torus.py::test_easy_probe_equals_general_replay_long_queues",
            "tests/test_torus.py::test_easy_replay_equals_overlay_probe",
        ],
    ),
}

#: third-party modules the fork server imports before forking the mutants (none of topoalloc's)
PRELOAD = [
    "numpy", "pytest", "_pytest.python", "hypothesis", "hypothesis.strategies", "hypothesis.stateful",
    "hypothesis.extra.numpy", "sortedcontainers", "networkx", "z3", "ortools.sat.python.cp_model",
]
PRELOAD_FILE = "mutmut_preload.txt"

#: surviving mutants argued equivalent, one per line with the argument
EQUIVALENT_FILE = Path(__file__).with_name("mutation_equivalent.txt")

#: the default tier's marker expression (mutmut's runs and the second run of the survivors)
DEFAULT_TIER = "not slow and not mutation"

_STATUS = re.compile(r"^\s*(\S+): (.+)$")


def _scratch(dest: Path) -> None:
    """The committed tree at ``dest``, compiled extensions copied in, proofs/ and ilp/ under topoalloc/."""
    dest.mkdir(parents=True)
    _extract_tree(dest)


def _extract_tree(dest: Path) -> None:
    """The committed tree extracted over ``dest``, compiled extensions copied in, proofs/ and ilp/ moved under topoalloc/."""
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    for so in ROOT.glob("topoalloc/**/*.so"):
        shutil.copy2(so, dest / so.relative_to(ROOT))
    for top in ("proofs", "ilp"):
        shutil.rmtree(dest / "topoalloc" / top, ignore_errors=True)
        shutil.move(str(dest / top), str(dest / "topoalloc" / top))


def _default_tier_addopts(pyproject: str) -> str:
    """The project's pytest options, the default tier's markers in them, without xdist."""
    return re.sub(r"^addopts = .*$", f"addopts = \"--import-mode=importlib -m '{DEFAULT_TIER}'\"", pyproject, flags=re.M)


def _configure(dest: Path, modules: list[str], tests: list[str]) -> None:
    text = _default_tier_addopts((dest / "pyproject.toml").read_text())
    quoted = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"  # noqa: E731
    text += (
        "\n[tool.mutmut]\n"
        'source_paths = ["topoalloc/"]\n'
        f"only_mutate = {quoted(modules)}\n"
        f"pytest_add_cli_args_test_selection = {quoted(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
        # every mutant in a process that ran nothing before it: forked from mutmut's own process
        # (which ran the suite once to see which tests reach which function) a mutant inherits
        # the caches that run filled (the curves' lru_cache, for one) and the mutated function
        # is never called — 80 false survivors of 207 on curves/grid.py before this
        'process_isolation = "forkserver"\n'
        # a mutant is "timed out" when its tests take over 2 x 3 = 6 times their CPU time on the
        # original plus 6 s (mutmut's default, 30 times, spent minutes on every mutant that loops)
        'timeout_multiplier = 3.0\n'
        # the fork server imports the third-party libraries only (never topoalloc): each mutant
        # starts with numpy, hypothesis, Z3 and OR-Tools loaded and imports the mutated code itself
        'forkserver_warmup = "import"\n'
        f'preload_modules_file = "{PRELOAD_FILE}"\n'
    )
    (dest / "pyproject.toml").write_text(text)
    (dest / PRELOAD_FILE).write_text("\n".join(PRELOAD) + "\n")


def _refresh(dest: Path, modules: list[str]) -> None:
    """Bring a kept copy to the committed tree, keeping mutmut's verdicts where they still hold.

    The sources and tests are extracted over the copy; the mutated modules get a new mtime, so
    mutmut derives their mutants again and drops the verdicts of every function whose code
    changed (it keeps a verdict by the function's hash); its copies of the other package files
    are removed, so it copies them again.  The copy's ``[tool.mutmut]`` section is kept as it
    was: a different test selection makes mutmut discard every verdict.  Tests added to the
    group since are run on every survivor by the second run (:func:`second_run_tests`).
    """
    config = (dest / "pyproject.toml").read_text()
    section = config[config.index("\n[tool.mutmut]\n"):]
    shutil.rmtree(dest / "topoalloc")
    _extract_tree(dest)
    (dest / "pyproject.toml").write_text(_default_tier_addopts((dest / "pyproject.toml").read_text()) + section)
    now = time.time()
    for m in modules:
        os.utime(dest / m, (now, now))
    for f in (dest / "mutants" / "topoalloc").rglob("*"):
        if f.is_file() and str(f.relative_to(dest / "mutants")) not in modules and not f.name.endswith(".meta"):
            f.unlink()
    shutil.rmtree(dest / "mutants" / "tests", ignore_errors=True)


def run_group(name: str, children: int, keep: Path | None, list_survivors: bool, reuse: bool = False, resume: bool = False,
              recheck: str | None = None, check_timeouts: bool = False) -> Counter:
    work = Path(tempfile.mkdtemp(prefix=f"mutation-{name}-")) if keep is None else keep / name
    try:
        return _judge_group(name, work, children, list_survivors, reuse, resume, recheck, check_timeouts)
    finally:
        if keep is None:  # also when interrupted or failed: no scratch copy is left behind
            shutil.rmtree(work, ignore_errors=True)


def _judge_group(name: str, work: Path, children: int, list_survivors: bool, reuse: bool, resume: bool = False,
                 recheck: str | None = None, check_timeouts: bool = False) -> Counter:
    modules, tests = GROUPS[name]
    dest = work / "repo"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONSAFEPATH"] = "1"  # the scratch copy's modules come from mutmut's tree only
    t0 = time.perf_counter()
    if resume and (dest / "mutants").is_dir():
        judged_with(work)  # (before mutmut lists the tests added since)
        _refresh(dest, modules)
    if resume or not (reuse and (dest / "mutants").is_dir()):
        if not (dest / "mutants").is_dir():
            _scratch(dest)
            _configure(dest, modules, tests)
        run = subprocess.run(["mutmut", "run", "--max-children", str(children)], cwd=dest, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if run.returncode != 0:  # mutmut prints its reason last, on standard output
            last = (run.stdout.strip().splitlines() or ["no message"])[-1]
            raise RunError(f"group {name}: mutmut run failed with exit status {run.returncode} in {dest}: {last}")
    baseline = judged_with(work)
    out = subprocess.run(["mutmut", "results", "--all", "true"], cwd=dest, env=env, capture_output=True, text=True).stdout
    counts: Counter = Counter()
    survivors = []
    equivalent = load_equivalent()
    verdicts = [(m.group(1), m.group(2)) for m in map(_STATUS.match, out.splitlines()) if m]
    # the survivors' second runs, ``children`` at a time (each is a pytest process of its own),
    # each verdict kept in the group's folder as soon as it is known (see SecondRuns)
    kept = SecondRuns(work / SECOND_RUN_FILE, _function_hashes(dest), recheck)
    if check_timeouts:  # a "timed out" verdict run again alone, with time to spare (see check_timeout)
        slow = [m for m, st in verdicts if st == "timeout" and kept.get(m + TIMEOUT_TAG, recheck=False) is None]
        with ThreadPoolExecutor(max_workers=children) as pool:
            for m, detected in zip(slow, pool.map(lambda m: check_timeout(dest, m), slow)):
                kept.put(m + TIMEOUT_TAG, detected)
        verdicts = [(m, "survived" if st == "timeout" and not kept.known(m + TIMEOUT_TAG) else st) for m, st in verdicts]
    todo = [m for m, st in verdicts if st == "survived" and kept.get(m) is None]
    collected = collect_tests(dest, tests) if todo else None
    with ThreadPoolExecutor(max_workers=children) as pool:
        for m, killed in zip(todo, pool.map(lambda m: recheck_kills(dest, m, tests, collected, baseline), todo)):
            kept.put(m, killed)
    second = {m: kept.known(m) for m, st in verdicts if st == "survived"}
    for mutant, status in verdicts:
        if status == "survived" and second[mutant]:
            status = "killed at start"
            if mutant in equivalent:
                print(f"  {mutant} is listed equivalent in {EQUIVALENT_FILE.name} but a test kills it: remove it", flush=True)
        elif status == "survived" and mutant in equivalent:
            status = "equivalent"  # argued in EQUIVALENT_FILE
        counts[status] += 1
        if status == "survived":
            survivors.append(mutant)
    _print_group(name, counts, time.perf_counter() - t0)
    if kept.reused:
        print(f"  {kept.reused} second-run verdicts taken from {work / SECOND_RUN_FILE} (their functions unchanged)")
    for m in survivors:
        print(f"  survived: {m}")
    if list_survivors:
        for s in survivors:
            print(subprocess.run(["mutmut", "show", s], cwd=dest, env=env, capture_output=True, text=True).stdout)
    return counts


#: the second runs' verdicts, in a group's folder
SECOND_RUN_FILE = "second_run.json"


def _function_hashes(dest: Path) -> dict[str, str]:
    """mutmut's hash of each mutated function's code, by the mutants' name stem (module.function)."""
    out: dict[str, str] = {}
    root = dest / "mutants"
    for meta in root.rglob("*.py.meta"):
        module = str(meta.relative_to(root))[: -len(".py.meta")].replace(os.sep, ".")
        try:
            hashes = json.loads(meta.read_text()).get("hash_by_function_name", {})
        except (ValueError, AttributeError) as e:
            raise RunError(f"{meta}: not mutmut's record of a module ({e.__class__.__name__}): remove the group's folder and run it again") from None
        out.update({f"{module}.{f}": h for f, h in hashes.items()})
    return out


class SecondRuns:
    """The second runs' verdicts of a kept group, written after each one (an interrupted judgement
    resumes where it stopped), each with mutmut's hash of the mutated function.

    A verdict is taken again while its function's hash is unchanged: a kill always (tests are
    added, not weakened: remove the file to judge every survivor afresh after weakening one), a
    survival only when the mutant's name does not match ``recheck`` (by default every survival is
    run again: a test added since may kill it; ``--recheck REGEX`` runs again only the survivors
    the new tests aim at).
    """

    def __init__(self, path: Path, hashes: dict[str, str], recheck: str | None = None):
        self.path, self.hashes = path, hashes
        self.recheck = re.compile(recheck if recheck is not None else "")
        self.reused = 0
        self._lock = threading.Lock()
        self.verdicts: dict[str, dict] = {}
        if path.is_file():
            try:
                self.verdicts = dict(json.loads(path.read_text()))
            except (ValueError, TypeError) as e:
                raise RunError(f"{path}: not this script's record of second runs ({e.__class__.__name__}): remove it") from None

    def _hash(self, mutant: str) -> str | None:
        return self.hashes.get(mutant.rsplit("__mutmut_", 1)[0])

    def get(self, mutant: str, *, recheck: bool = True) -> bool | None:
        """The kept verdict (True: killed) if it still holds, else None (run it again).  With
        ``recheck=False`` a kept survival is taken whatever ``--recheck`` says."""
        v = self.verdicts.get(mutant)
        if not isinstance(v, dict) or v.get("hash") != self._hash(mutant) or v.get("hash") is None:
            return None
        if recheck and not v.get("killed") and self.recheck.search(mutant):
            return None
        self.reused += 1
        return bool(v.get("killed"))

    def known(self, mutant: str) -> bool:
        """The verdict on record (put in this run or kept), False if none."""
        return bool(self.verdicts.get(mutant, {}).get("killed", False))

    def put(self, mutant: str, killed: bool) -> None:
        with self._lock:
            self.verdicts[mutant] = {"hash": self._hash(mutant), "killed": killed}
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.verdicts, indent=0, sort_keys=True))
            tmp.replace(self.path)


class RunError(Exception):
    """Bad input or a failed step, reported in one line (exit status 2)."""


#: the test ids mutmut knew when it judged the group's mutants, in a group's folder
JUDGED_WITH_FILE = "judged_with.json"


def _mutmut_reach(dest: Path) -> dict[str, list[str]] | None:
    """mutmut's statistics: the tests reaching each mutated function (None: no statistics yet)."""
    stats_file = dest / "mutants" / "mutmut-stats.json"
    if not stats_file.is_file():
        return None
    try:
        return dict(json.loads(stats_file.read_text()).get("tests_by_mangled_function_name", {}))
    except (ValueError, AttributeError, TypeError) as e:  # (not JSON, not UTF-8, not an object)
        raise RunError(f"{stats_file}: not mutmut's statistics ({e.__class__.__name__}): remove the group's folder and run it again") from None


def _mutmut_seen(dest: Path) -> set[str] | None:
    """Every test id mutmut's statistics record (None: no statistics yet)."""
    reach = _mutmut_reach(dest)
    return None if reach is None else {t for ts in reach.values() for t in ts}


def judged_with(work: Path) -> set[str] | None:
    """The tests mutmut's verdicts were made with: recorded the first time the group's folder has
    statistics, and kept.  mutmut keeps a verdict while its function is unchanged, and a test
    added since is only *listed* in its statistics (on ``--resume``) — never run on the mutants it
    judged before — so the second run takes what this record lacks, not what the statistics lack."""
    path = work / JUDGED_WITH_FILE
    if path.is_file():
        try:
            return set(json.loads(path.read_text()))
        except (ValueError, TypeError) as e:
            raise RunError(f"{path}: not this script's record of tests ({e.__class__.__name__}): remove the group's folder and run it again") from None
    seen = _mutmut_seen(work / "repo")
    if seen is not None:
        path.write_text(json.dumps(sorted(seen), indent=0))
    return seen


def collect_tests(dest: Path, tests: list[str]) -> list[str] | None:
    """The test ids the group's list selects in the copy (default tier), or None if pytest cannot
    collect them (then :func:`second_run_tests` works on the list's entries)."""
    env = dict(os.environ, PYTHONPATH=".")
    env.pop("PYTHONSAFEPATH", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir=.",
                        "-m", DEFAULT_TIER, *tests], cwd=dest / "mutants", env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return [line for line in r.stdout.splitlines() if "::" in line and not line.startswith(" ")]


def second_run_tests(dest: Path, mutant: str, tests: list[str], collected: list[str] | None = None,
                     seen: set[str] | None = None) -> list[str]:
    """The tests a survivor's second run needs: every entry of the group's list mutmut has no
    record of (tests added since its run: mutmut's cache keeps its selection) — with ``collected``
    (the ids the list selects now), every test id mutmut has no record of, also in the files it
    ran — or the whole list for a function no test reached on the original code.  A test changed
    under an old name is not new: rename it, or run the group afresh.

    The tests mutmut saw reaching the function are not run again: mutmut ran exactly those with
    the mutant on, in a process forked from a server that had imported the third-party libraries
    only (``forkserver_warmup = "import"``), so the package — its import-time code included —
    was imported with the mutant already on.  (Until 2026-11-27 they were run again: about
    40 s per survivor of the partition group, for no verdict that could differ.)  An empty
    list: nothing can tell the survivor apart that mutmut did not run."""
    reach = _mutmut_reach(dest)
    if reach is None:
        return tests
    function = mutant.rsplit("__mutmut_", 1)[0]
    if seen is None:
        seen = {t for ts in reach.values() for t in ts}
    if not reach.get(function):
        return tests
    if collected is not None:  # new tests by id: also those added to a file mutmut ran
        return [t for t in collected if t not in seen]
    return [e for e in tests if not any(t == e or t.startswith(e + "::") or t.startswith(e + "[") for t in seen)]


def recheck_kills(dest: Path, mutant: str, tests: list[str], collected: list[str] | None = None, seen: set[str] | None = None) -> bool:
    """Whether the group's tests (:func:`second_run_tests`) fail with ``mutant`` active from the
    interpreter's start.

    Run on mutmut's survivors, in a new process whose environment names the mutant from the
    start (the mutated copy first on the path): the tests added to the group since mutmut's run,
    and, for a function no test reached, all of them — code run only at import, which mutmut's
    default fork (from a process that had imported the package) ran unmutated: the linear
    allocators' registry factories "survived" tests that check exactly what they change.
    pytest's exit status 1 (tests failed) or 2 (collection or import failed) kills it.
    """
    selected = second_run_tests(dest, mutant, tests, collected, seen)
    if not selected:
        return False
    code = _pytest_with_mutant(dest, mutant, ["-m", DEFAULT_TIER, *selected], 600)
    return code in (1, 2)  # (a run past the limit is not a kill: mutmut's own limit judged it already)


def _pytest_with_mutant(dest: Path, mutant: str, args: list[str], timeout: float) -> int | None:
    """pytest's exit status on ``args`` in the copy, ``mutant`` on from the interpreter's start (None: past ``timeout`` s)."""
    env = dict(os.environ, MUTANT_UNDER_TEST=mutant, PYTHONPATH=".")
    env.pop("PYTHONSAFEPATH", None)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir=.", *args]
    try:
        return subprocess.run(cmd, cwd=dest / "mutants", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return None


#: the key suffix of a timed-out mutant's check in the second runs' record
TIMEOUT_TAG = "@timeout"
#: seconds a timed-out mutant's tests get when run again alone (the slowest group's tests reaching one
#: function take under a minute on the original, alone on the machine)
TIMEOUT_CHECK = 180


def check_timeout(dest: Path, mutant: str) -> bool:
    """Whether a mutant mutmut judged "timed out" is detected when its tests run again alone, with
    :data:`TIMEOUT_CHECK` seconds: a failure or a run past the limit is; a pass is a survivor.

    mutmut's limit is on wall time as well as CPU time (half the CPU limit), so a mutant run while
    other work shares the cores can time out without looping; counting it detected would
    flatter the score.
    """
    tests = sorted(set((_mutmut_reach(dest) or {}).get(mutant.rsplit("__mutmut_", 1)[0], ())))
    if not tests:
        return True  # (mutmut ran tests on it: its statistics changed since; keep its verdict)
    code = _pytest_with_mutant(dest, mutant, tests, TIMEOUT_CHECK)
    return code is None or code != 0


def load_equivalent(path: Path | None = None) -> dict[str, str]:
    """The surviving mutants argued equivalent: ``name  # why`` per line in :data:`EQUIVALENT_FILE`.

    A name is mutmut's (module, function, number); the number is the mutation's position in
    the function, so a listed name goes stale when its function changes: the run then shows
    it among the survivors again, to be argued anew.
    """
    out: dict[str, str] = {}
    text = (path or EQUIVALENT_FILE).read_text()
    for no, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)
        name = body[0].strip()
        if not name:
            continue
        why = body[1].strip() if len(body) > 1 else ""
        if not why:
            raise RunError(f"{(path or EQUIVALENT_FILE).name}, line {no}: mutant {name!r} is listed without the argument (# why)")
        out[name] = why
    return out


def _detected(c: Counter) -> int:
    return c["killed"] + c["killed at start"] + c["timeout"]


def _score(c: Counter) -> float:
    """(killed + killed at start + timed out) / (the same + survived): a mutant that makes a test hang is detected.

    Mutants argued equivalent (:func:`load_equivalent`) are not in the denominator: no test can
    tell them from the original.
    """
    detected = _detected(c)
    judged = detected + c["survived"]
    return detected / judged if judged else float("nan")


def _print_group(name: str, c: Counter, seconds: float | None) -> None:
    other = {k: v for k, v in c.items() if k not in ("killed", "survived", "no tests", "timeout", "equivalent")}
    extra = "".join(f", {k} {v}" for k, v in sorted(other.items()))
    took = f" in {seconds:.0f} s" if seconds is not None else ""
    print(
        f"{name:<10} mutants {sum(c.values()):>5}: killed {c['killed']:>5}, survived {c['survived']:>4}, no tests {c['no tests']:>4}, "
        f"timeout {c['timeout']:>3}, equivalent {c['equivalent']:>3}{extra}; score {100 * _score(c):.1f} % (target >= 90 %){took}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", nargs="+", choices=sorted(GROUPS), default=list(GROUPS))
    ap.add_argument("--children", type=int, default=os.cpu_count() or 1, help="mutants run at once (default: the cores)")
    ap.add_argument("--keep", type=Path, help="keep the scratch copies (and mutmut's results) under this folder")
    ap.add_argument("--list-survivors", action="store_true", help="print every surviving mutant's diff")
    ap.add_argument("--reuse", action="store_true", help="with --keep: judge the results mutmut left there instead of running it again")
    ap.add_argument("--resume", action="store_true",
                    help="with --keep: bring the kept copies to the committed tree and run mutmut on the mutants without a verdict "
                         "(an interrupted run, or functions changed since)")
    ap.add_argument("--check-timeouts", action="store_true",
                    help=f"run each mutant mutmut timed out again alone ({TIMEOUT_CHECK} s): one whose tests pass is a survivor")
    ap.add_argument("--recheck", metavar="REGEX",
                    help="run again only the kept survivors whose name matches (a kept second run's kill is always taken "
                         "while its function is unchanged; without this option every survivor is run again)")
    args = ap.parse_args(argv)
    if args.children < 1:
        ap.error(f"argument --children: expected a count of 1 or more (got {args.children})")
    for flag in ("reuse", "resume"):
        if getattr(args, flag) and args.keep is None:
            ap.error(f"argument --{flag}: needs --keep, the folder of the runs to judge again")
    if args.recheck is not None:
        try:
            re.compile(args.recheck)
        except re.error as e:
            ap.error(f"argument --recheck: not a regular expression ({e}): {args.recheck!r}")
    if args.reuse and args.resume:
        ap.error("argument --resume: not with --reuse (--resume runs mutmut, --reuse does not)")
    if shutil.which("mutmut") is None:
        print("mutation_score: mutmut is not installed (pip install -e \".[mutation]\")", file=sys.stderr)
        return 2
    try:
        load_equivalent()  # a bad list is reported before hours of work, not after
        if args.keep is not None:
            try:
                args.keep.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise RunError(f"argument --keep: cannot create {args.keep}: {e.strerror}") from None
            for g in args.groups:
                if (args.keep / g).exists() and not (args.reuse or args.resume):
                    raise RunError(f"argument --keep: {args.keep / g} exists already (remove it, or judge it again with --reuse or --resume)")
        print(f"# mutation_score, {time.strftime('%Y-%m-%d %H:%M')}, {platform.machine()}, Python {platform.python_version()}, {args.children} children")
        total: Counter = Counter()
        for g in args.groups:
            total += run_group(g, args.children, args.keep, args.list_survivors, reuse=args.reuse, resume=args.resume,
                               recheck=args.recheck, check_timeouts=args.check_timeouts)
        if len(args.groups) > 1:
            _print_group("all", total, None)
    except RunError as e:
        print(f"mutation_score: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"mutation_score: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mutation_score: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
