"""The curated mutants (``topoalloc.proofs.mutants``): each is a plausible bug the default tests must catch.

``pytest -m mutation`` applies every mutant to a temporary copy of the
repository and runs the default-suite tests it names there; it passes when
every mutant is killed.  The default run only checks that the list still
matches the source (each replaced text occurs exactly once), so that an
edit of the code cannot silently turn a mutant into a no-op.
"""

from __future__ import annotations

import pytest

from topoalloc.errors import InvalidArgument
from topoalloc.proofs.mutants import MUTANTS, Mutant, apply_mutant, repository_root, run_mutant

ROOT = repository_root()


def test_every_mutant_applies_exactly_once():
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names))
    for m in MUTANTS:
        text = (ROOT / m.path).read_text()
        assert text.count(m.old) == 1, (m.name, m.path)
        assert m.old != m.new and m.why and m.tests
        for t in m.tests:
            assert (ROOT / t.split("::")[0]).exists(), (m.name, t)


def test_the_issue_classes_are_in_the_list():
    """The bug classes the proofs once missed, and one mutant at least per algorithm module."""
    names = {m.name for m in MUTANTS}
    assert {"ep-offset-forgets-base", "ep-keeps-wrap", "nep-halves-keep-wrap", "preprocessing-keeps-wrap", "channel-sets-off-by-one", "brgc-wrong-shift", "ecube-highest-bit-first"} <= names
    paths = {m.path for m in MUTANTS}
    for module in ("partition/schemes.py", "partition/conversion.py", "partition/allocator.py", "hypercube/embedding.py", "hypercube/allocators.py", "topology/hypercube.py", "curves/grid.py", "linear/allocator.py", "sched/easy.py", "sched/conservative.py"):
        assert any(p.endswith(module) for p in paths), module


def test_mutants_of_proofs_and_ilp_patch_the_imported_copy():
    """A mutant of ``ilp/`` or ``proofs/`` must reach the copy the tests import (``topoalloc.ilp``, ``topoalloc.proofs``)."""
    from topoalloc.proofs.mutants import _import_path

    m = Mutant("x", "ilp/lagrange.py", "a", "b", "why", ("t",))
    assert _import_path(m) == ".import/topoalloc/ilp/lagrange.py"
    assert _import_path(Mutant("x", "proofs/torus.py", "a", "b", "why", ("t",))) == ".import/topoalloc/proofs/torus.py"
    assert _import_path(Mutant("x", "topoalloc/sched/easy.py", "a", "b", "why", ("t",))) == ".import/topoalloc/sched/easy.py"


def test_apply_refuses_text_that_is_not_there(tmp_path):
    (tmp_path / "m.py").write_text("a = 1\na = 1\n")
    with pytest.raises(InvalidArgument, match="found 2 times"):
        apply_mutant(Mutant("x", "m.py", "a = 1", "a = 2", "why", ("t",)), tmp_path)


@pytest.mark.mutation
@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutant_is_killed(mutant):
    r = run_mutant(mutant)
    assert r.killed, f"{mutant.name} survived its tests ({r.summary}): {mutant.why}"


def test_generated_mutants_argued_equivalent_name_real_functions(tmp_path):
    """``benchmarks/mutation_equivalent.txt``: every entry argued, naming a function that exists."""
    import importlib
    import re

    from .conftest import load_benchmark_script

    ms = load_benchmark_script("mutation_score")
    listed = ms.load_equivalent()
    assert listed
    classes = set(re.findall(r"^#   (\[\w+\])", ms.EQUIVALENT_FILE.read_text(), flags=re.M))  # argued once in the header
    for name, why in listed.items():
        m = re.fullmatch(r"((?:topoalloc|ilp|proofs)(?:\.\w+)+)\.x(?:_|ǁ(\w+)ǁ)(\w+?)__mutmut_\d+", name)  # function or Class method
        assert m, name
        owner = importlib.import_module(m.group(1))
        if m.group(2):
            owner = getattr(owner, m.group(2))
        assert hasattr(owner, m.group(3)), name
        tag = re.match(r"\[\w+\]", why)
        assert (tag and tag.group(0) in classes) or len(why) > 20, (name, why)
    bad = tmp_path / "eq.txt"
    bad.write_text("topoalloc.curves.grid.x_gray__mutmut_1\n")
    with pytest.raises(ms.RunError, match="line 1: mutant 'topoalloc.curves.grid.x_gray__mutmut_1' is listed without the argument"):
        ms.load_equivalent(bad)


def test_second_run_takes_the_tests_reaching_the_function_and_those_mutmut_never_saw(tmp_path):
    """A survivor's second run: the group's entries mutmut has no record of; the whole list for a
    function no test reached; nothing (and no run) when mutmut ran every entry."""
    import json

    from .conftest import load_benchmark_script

    ms = load_benchmark_script("mutation_score")
    (tmp_path / "mutants").mkdir()
    group = ["tests/new.py", "tests/a.py", "tests/b.py::test_x", "tests/c.py"]
    assert ms.second_run_tests(tmp_path, "pkg.mod.x_f__mutmut_3", group) == group  # no stats: everything
    reach = {"pkg.mod.x_f": ["tests/a.py::test_1", "tests/b.py::test_x[2]"], "pkg.mod.xǁCǁg": ["tests/c.py::test_9"]}
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps({"tests_by_mangled_function_name": reach}))
    # mutmut ran the tests reaching the function with the mutant on from the start: only the new ones
    assert ms.second_run_tests(tmp_path, "pkg.mod.x_f__mutmut_3", group) == ["tests/new.py"]
    assert ms.second_run_tests(tmp_path, "pkg.mod.xǁCǁg__mutmut_12", group) == ["tests/new.py"]
    assert ms.second_run_tests(tmp_path, "pkg.mod.x_f__mutmut_3", group[1:]) == []  # nothing new: no run
    assert ms.recheck_kills(tmp_path, "pkg.mod.x_f__mutmut_3", group[1:]) is False
    # with the ids collected now: every id mutmut never saw, also one added to a file it ran
    now = ["tests/new.py::test_n", "tests/a.py::test_1", "tests/a.py::test_added", "tests/b.py::test_x[2]", "tests/c.py::test_9"]
    assert ms.second_run_tests(tmp_path, "pkg.mod.x_f__mutmut_3", group, now) == ["tests/new.py::test_n", "tests/a.py::test_added"]
    assert ms.second_run_tests(tmp_path, "pkg.mod.x_h__mutmut_1", group, now) == group
    assert ms.second_run_tests(tmp_path, "pkg.mod.x_h__mutmut_1", group) == group  # reached by no test (import time)


def test_second_run_refuses_a_stats_file_that_is_not_mutmuts(tmp_path):
    from .conftest import load_benchmark_script

    ms = load_benchmark_script("mutation_score")
    (tmp_path / "mutants").mkdir()
    for junk in (b"\x00\xff\xfe binary", b"[1, 2]"):
        (tmp_path / "mutants" / "mutmut-stats.json").write_bytes(junk)
        with pytest.raises(ms.RunError, match="not mutmut's statistics"):
            ms.second_run_tests(tmp_path, "pkg.mod.x_f__mutmut_1", ["tests/a.py"])


def test_resume_brings_a_kept_copy_to_the_committed_tree_and_keeps_the_verdicts(tmp_path):
    """``--resume``: the kept copy's sources and tests become the committed tree's, mutmut's copies of the
    unmutated files go (it copies them again), its mutated modules, verdicts and statistics stay, the
    mutated sources are newer than their mutants (so mutmut derives them again and keeps a verdict only
    where the function's hash is unchanged), and the copy's ``[tool.mutmut]`` section is kept as it was."""
    import os

    from .conftest import load_benchmark_script

    ms = load_benchmark_script("mutation_score")
    dest = tmp_path / "repo"
    module = "topoalloc/alloc/partition/schemes.py"
    section = '\n[tool.mutmut]\nonly_mutate = ["%s"]\npytest_add_cli_args_test_selection = ["tests/old.py"]\n' % module
    (dest / "topoalloc").mkdir(parents=True)
    (dest / "topoalloc" / "stale.py").write_text("gone = True\n")
    (dest / "pyproject.toml").write_text("[project]\nname = 'old'\n" + section)
    kept = {"mutants/mutmut-stats.json": "{}", f"mutants/{module}": "# mutated\n", f"mutants/{module}.meta": "{}"}
    for rel, text in {**kept, "mutants/topoalloc/errors.py": "# stale copy\n", "mutants/tests/old.py": "# old test\n"}.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
    os.utime(dest / "mutants" / module, (1.0e9, 1.0e9))
    ms._refresh(dest, [module])
    for rel, text in kept.items():
        assert (dest / rel).read_text() == text, rel
    assert not (dest / "mutants" / "topoalloc" / "errors.py").exists() and not (dest / "mutants" / "tests").exists()
    assert not (dest / "topoalloc" / "stale.py").exists()
    assert (dest / module).read_text() == (ROOT / module).read_text()
    assert os.path.getmtime(dest / module) > os.path.getmtime(dest / "mutants" / module)
    assert (dest / "topoalloc" / "proofs").is_dir() and (dest / "topoalloc" / "ilp").is_dir() and not (dest / "proofs").exists()
    config = (dest / "pyproject.toml").read_text()
    assert config.endswith(section) and config.count("[tool.mutmut]") == 1
    assert f"addopts = \"--import-mode=importlib -m '{ms.DEFAULT_TIER}'\"\n" in config  # the default tier, one process


@pytest.mark.parametrize(("argv", "message"), [(["--resume"], "--resume: needs --keep"),
                                               (["--reuse", "--resume", "--keep", "x"], "--resume: not with --reuse"),
                                               (["--reuse", "--keep", "x", "--recheck", "(g"], "--recheck: not a regular expression")])
def test_resume_refuses_what_it_cannot_do(argv, message, capsys):
    from .conftest import load_benchmark_script

    ms = load_benchmark_script("mutation_score")
    with pytest.raises(SystemExit) as e:
        ms.main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_second_run_verdicts_are_kept_while_the_function_is_unchanged(tmp_path):
    """A kept kill is taken again while mutmut's hash of its function is unchanged; a kept survival only
    when ``--recheck`` does not name it (by default every survivor runs again); a changed function runs
    again; verdicts are on disk as soon as they are known; a file that is not one gives one line."""
    import json

    from .conftest import load_benchmark_script

    ms = load_benchmark_script("mutation_score")
    meta = tmp_path / "repo" / "mutants" / "pkg" / "mod.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"hash_by_function_name": {"x_f": "aaa", "xǁCǁg": "bbb"}}))
    hashes = ms._function_hashes(tmp_path / "repo")
    assert hashes == {"pkg.mod.x_f": "aaa", "pkg.mod.xǁCǁg": "bbb"}
    path = tmp_path / ms.SECOND_RUN_FILE
    runs = ms.SecondRuns(path, hashes)
    runs.put("pkg.mod.x_f__mutmut_1", True)
    runs.put("pkg.mod.xǁCǁg__mutmut_2", False)
    assert json.loads(path.read_text())["pkg.mod.x_f__mutmut_1"] == {"hash": "aaa", "killed": True}
    again = ms.SecondRuns(path, hashes)
    assert again.get("pkg.mod.x_f__mutmut_1") is True and again.get("pkg.mod.xǁCǁg__mutmut_2") is None  # survivors run again
    assert again.get("pkg.mod.x_f__mutmut_9") is None  # never judged
    named = ms.SecondRuns(path, hashes, recheck=r"x_f")
    assert named.get("pkg.mod.xǁCǁg__mutmut_2") is False and named.reused == 1  # not named: the kept survival
    changed = ms.SecondRuns(path, {**hashes, "pkg.mod.x_f": "ccc"}, recheck="nothing")
    assert changed.get("pkg.mod.x_f__mutmut_1") is None and changed.get("pkg.mod.xǁCǁg__mutmut_2") is False
    path.write_text("[1, 2")
    with pytest.raises(ms.RunError, match="not this script's record of second runs"):
        ms.SecondRuns(path, hashes)
    meta.write_text("{")
    with pytest.raises(ms.RunError, match="not mutmut's record of a module"):
        ms._function_hashes(tmp_path / "repo")


def test_the_tests_mutmut_judged_with_are_recorded_once(tmp_path):
    """The second run's baseline: mutmut's tests when the folder first has statistics, kept when a later
    --resume lists more (those were never run on the verdicts mutmut kept); a bad record in one line."""
    import json

    from .conftest import load_benchmark_script

    ms = load_benchmark_script("mutation_score")
    stats = tmp_path / "repo" / "mutants" / "mutmut-stats.json"
    stats.parent.mkdir(parents=True)
    assert ms.judged_with(tmp_path) is None and not (tmp_path / ms.JUDGED_WITH_FILE).exists()
    stats.write_text(json.dumps({"tests_by_mangled_function_name": {"pkg.mod.x_f": ["tests/a.py::t1"]}}))
    assert ms.judged_with(tmp_path) == {"tests/a.py::t1"}
    stats.write_text(json.dumps({"tests_by_mangled_function_name": {"pkg.mod.x_f": ["tests/a.py::t1", "tests/a.py::t2"]}}))
    assert ms.judged_with(tmp_path) == {"tests/a.py::t1"}
    now = ["tests/a.py::t1", "tests/a.py::t2"]
    assert ms.second_run_tests(tmp_path / "repo", "pkg.mod.x_f__mutmut_1", ["tests/a.py"], now, ms.judged_with(tmp_path)) == ["tests/a.py::t2"]
    (tmp_path / ms.JUDGED_WITH_FILE).write_text("{")
    with pytest.raises(ms.RunError, match="not this script's record of tests"):
        ms.judged_with(tmp_path)


def test_a_timed_out_mutant_is_checked_alone(tmp_path):
    """``--check-timeouts``: a mutant mutmut timed out is run again alone on the tests reaching its function;
    a pass makes it a survivor, a failure keeps it detected; the check's verdict is kept beside the second
    runs' and taken again whatever --recheck says."""
    import json

    from .conftest import load_benchmark_script

    ms = load_benchmark_script("mutation_score")
    mutants = tmp_path / "mutants"
    (mutants / "tests").mkdir(parents=True)
    (mutants / "tests" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (mutants / "tests" / "test_bad.py").write_text("def test_bad():\n    assert False\n")
    reach = {"pkg.mod.x_f": ["tests/test_ok.py::test_ok"], "pkg.mod.x_g": ["tests/test_bad.py::test_bad"]}
    (mutants / "mutmut-stats.json").write_text(json.dumps({"tests_by_mangled_function_name": reach}))
    assert ms.check_timeout(tmp_path, "pkg.mod.x_f__mutmut_1") is False  # its tests pass: a survivor
    assert ms.check_timeout(tmp_path, "pkg.mod.x_g__mutmut_1") is True
    runs = ms.SecondRuns(tmp_path / ms.SECOND_RUN_FILE, {"pkg.mod.x_f": "h"})
    runs.put("pkg.mod.x_f__mutmut_1" + ms.TIMEOUT_TAG, False)
    again = ms.SecondRuns(tmp_path / ms.SECOND_RUN_FILE, {"pkg.mod.x_f": "h"})
    assert again.get("pkg.mod.x_f__mutmut_1" + ms.TIMEOUT_TAG) is None  # a survival is run again by default
    assert again.get("pkg.mod.x_f__mutmut_1" + ms.TIMEOUT_TAG, recheck=False) is False and not again.known("pkg.mod.x_f__mutmut_1" + ms.TIMEOUT_TAG)
