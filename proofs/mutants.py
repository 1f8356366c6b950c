"""A curated list of plausible bugs, and a runner that shows the default tests catch each one.

Every :class:`Mutant` is a one-place source patch — a file of the
repository, the exact text it replaces (which must occur exactly once) and
the new text — with the reason it is plausible: the slips a person makes
in this code (an offset that forgets its base, a flag kept where it no
longer holds, an off-by-one in a bound, a tie broken the other way, a loop
order reversed).  :func:`run_mutant` applies one to a temporary copy of the
repository and runs the tests it names, which are all part of the default
``pytest`` run (``-m "not slow"``); the mutant is *killed* when they fail.

A candidate that no test can kill because it does not change behaviour is
an *equivalent* mutant and is not kept here; the one found so far: closing
the conversion's grid cycle with ``range(rows - 1, -1, -1)`` appends
``(0, 0)`` a second time at the end of the cycle list, an entry the
embedding never reads (it indexes the ring modulo its length).

Run them all with ``pytest -m mutation`` or ``python -m topoalloc.proofs.mutants``
(``--list`` prints them, ``--only NAME`` runs some).  The copy is importable
as ``topoalloc`` with ``proofs/`` and ``ilp/`` in place as
``topoalloc.proofs`` and ``topoalloc.ilp`` (put first on ``PYTHONPATH``), so
the installed package is never touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidArgument

__all__ = ["Mutant", "MUTANTS", "MutantResult", "run_mutant", "apply_mutant", "repository_root", "main"]


@dataclass(frozen=True)
class Mutant:
    """One plausible bug.

    Parameters
    ----------
    name : str
        Short identifier.
    path : str
        File, relative to the repository root.
    old, new : str
        The text replaced (must occur exactly once in ``path``) and its replacement.
    why : str
        Why the bug is plausible and what it would do.
    tests : tuple of str
        Default-suite tests (files or node ids, relative to the root) that must fail.
    """

    name: str
    path: str
    old: str
    new: str
    why: str
    tests: tuple[str, ...]


_TORUS_PROOFS = ("tests/test_proofs_torus.py",)
_HC_PROOFS = ("tests/test_proofs_hypercube.py",)

#: the curated mutants; every one must be killed by the default suite
MUTANTS: tuple[Mutant, ...] = (
    # ---------------------------------------------------------------- partition schemes
    Mutant(
        "ep-offset-forgets-base",
        "topoalloc/alloc/partition/schemes.py",
        "axes = [[o + i * ps for i in range(ss // ps)]",
        "axes = [[i * ps for i in range(ss // ps)]",
        "EP piece offsets computed from the origin, not the semitorus's own offset: pieces of a semitorus "
        "away from the origin land on other jobs' nodes (invisible when only the origin is proved).",
        _TORUS_PROOFS,
    ),
    Mutant(
        "ep-keeps-wrap",
        "topoalloc/alloc/partition/schemes.py",
        "wraps = tuple(w if ps == ss else False for w, ps, ss in zip(s.wrapped, psides, s.sides))",
        "wraps = tuple(s.wrapped)",
        "EP pieces keep every ring of S, also in dimensions they do not span: the job is promised a wrap link "
        "that does not exist.",
        _TORUS_PROOFS,
    ),
    Mutant(
        "nep-halves-keep-wrap",
        "topoalloc/alloc/partition/schemes.py",
        "wraps = s.wrapped[:dim] + (False,) + s.wrapped[dim + 1 :]",
        "wraps = s.wrapped",
        "NEP halves keep the ring of the dimension they were cut in.",
        _TORUS_PROOFS,
    ),
    Mutant(
        "nep-stops-one-early",
        "topoalloc/alloc/partition/schemes.py",
        "while cur.order > k:",
        "while cur.order > k + 1:",
        "An off-by-one in NEP's halving loop: the allocated piece has 2^(k+1) nodes; a size check that reads "
        "the loop's own counter cannot see it.",
        _TORUS_PROOFS,
    ),
    Mutant(
        "nep-tie-to-earlier-dimension",
        "topoalloc/alloc/partition/schemes.py",
        "dim = max(range(len(exps)), key=lambda i: (exps[i], i))",
        "dim = max(range(len(exps)), key=lambda i: (exps[i], -i))",
        "Ties between equally long dimensions broken the other way: the pieces no longer follow the paper's "
        "worked example (2×2²×2²×2³, m = 2⁴).",
        ("tests/test_torus.py",),
    ),
    Mutant(
        "split-smallest-first",
        "topoalloc/alloc/partition/schemes.py",
        "for b in reversed(range(p.bit_length())) if p >> b & 1]",
        "for b in range(p.bit_length()) if p >> b & 1]",
        "Preprocessing segments in the wrong order (smallest first): still a partition, but not the "
        "documented one (6 = 4 + 2 from coordinate 0).",
        ("tests/test_doctests.py", "tests/test_torus.py"),
    ),
    Mutant(
        "preprocessing-keeps-wrap",
        "topoalloc/alloc/partition/schemes.py",
        "offs.append((pos, s, w and s == n))",
        "offs.append((pos, s, w))",
        "Preprocessing segments of a cut dimension keep the machine's wrap: a 4-node segment of a 6-node ring "
        "claims to be a ring.",
        _TORUS_PROOFS,
    ),
    # ---------------------------------------------------------------- conversion
    Mutant(
        "grid-cycle-snake-parity",
        "topoalloc/alloc/partition/conversion.py",
        "cs = range(cols - 1, 0, -1) if r % 2 == 1 else range(1, cols)",
        "cs = range(cols - 1, 0, -1) if r % 2 == 0 else range(1, cols)",
        "The Hamiltonian cycle's snake starts the wrong way on odd rows: consecutive ring nodes are not neighbours.",
        _TORUS_PROOFS,
    ),
    Mutant(
        "lone-path-not-merged",
        "topoalloc/alloc/partition/conversion.py",
        "        if len(merged) == 1:\n            partner",
        "        if len(merged) == 0:\n            partner",
        "Collapse leaves a lone unwrapped dimension as its own 'ring': the job's torus has a wrap edge the "
        "machine does not have.",
        _TORUS_PROOFS,
    ),
    # ---------------------------------------------------------------- partition allocator
    Mutant(
        "buddy-merges-with-busy-sibling",
        "topoalloc/alloc/partition/allocator.py",
        "while p is not None and p.children is not None and p.nfree == len(p.children):",
        "while p is not None and p.children is not None and p.nfree > 0:",
        "Release merges a block back into its parent when any sibling is free, not all.",
        ("tests/test_proofs_torus.py::test_buddy_merge_on_named_machines", "tests/conformance/test_allocators.py"),
    ),
    Mutant(
        "identify-skips-exact-size",
        "topoalloc/alloc/partition/allocator.py",
        "            for j in range(k, self.max_order + 1):\n                bucket = free[j]\n                if bucket:\n                    return",
        "            for j in range(k + 1, self.max_order + 1):\n                bucket = free[j]\n                if bucket:\n                    return",
        "Identification starts one size too large: a free block of exactly the request's size is never used.",
        ("tests/test_torus.py",),
    ),
    # ---------------------------------------------------------------- hypercube
    Mutant(
        "mesh-y-not-gray",
        "topoalloc/alloc/hypercube/embedding.py",
        "out = ((gx ^ (gx >> 1))[:, None] << m) | (gy ^ (gy >> 1))[None, :]",
        "out = ((gx ^ (gx >> 1))[:, None] << m) | gy[None, :]",
        "The y component of the mesh embedding in binary instead of Gray code: y-neighbours can be several "
        "bits apart (dilation > 1).",
        _HC_PROOFS,
    ),
    Mutant(
        "brgc-wrong-shift",
        "topoalloc/alloc/hypercube/embedding.py",
        "    return i ^ (i >> 1)\n",
        "    return i ^ (i >> 2)\n",
        "A Gray code change: the lemma about i ^ (i >> 1) still holds, the code no longer computes it.",
        _HC_PROOFS,
    ),
    Mutant(
        "ecube-highest-bit-first",
        "topoalloc/topology/hypercube.py",
        "        low = diff & -diff\n        v ^= low",
        "        low = 1 << (diff.bit_length() - 1)\n        v ^= low",
        "E-cube corrects the highest differing bit first: Lemma 1 and Theorem 1 no longer describe the routes.",
        _HC_PROOFS,
    ),
    Mutant(
        "channel-sets-off-by-one",
        "topoalloc/topology/hypercube.py",
        "        lo = nodes & ((1 << d) - 1)\n",
        "        lo = nodes & ((1 << (d + 1)) - 1)\n",
        "Lemma 1's receiver condition over bits <= d instead of < d: contention checks miss or invent shared channels.",
        _HC_PROOFS,
    ),
    Mutant(
        "free-list-split-keeps-used-half",
        "topoalloc/alloc/hypercube/allocators.py",
        "            lists[i][(free, value | b)] = None",
        "            lists[i][(free, value)] = None",
        "Splitting a cube puts the half being used back on the free list instead of the other half.",
        ("tests/conformance/test_allocators.py",),
    ),
    Mutant(
        "free-list-merge-keeps-bit",
        "topoalloc/alloc/hypercube/allocators.py",
        "                bigger = (free | b, value & ~b)",
        "                bigger = (free | b, value)",
        "Merging two complementary cubes keeps the differing bit fixed in the merged cube's value.",
        ("tests/conformance/test_allocators.py",),
    ),
    Mutant(
        "leftover-tie-to-case-b",
        "topoalloc/alloc/hypercube/embedding.py",
        'case = "a" if ((1 << t) - x) << m >= ((1 << m) - y) << t else "b"',
        'case = "a" if ((1 << t) - x) << m > ((1 << m) - y) << t else "b"',
        "The partitioning algorithm's tie between the two leftover regions goes to region (2).",
        ("tests/test_hypercube.py",),
    ),
    Mutant(
        "gray-blocks-too-small",
        "topoalloc/alloc/hypercube/embedding.py",
        "while a + (1 << i) > hi:",
        "while a + (1 << i) >= hi:",
        "Off-by-one in the aligned Gray-code blocks: a block that ends exactly at the bound is split.",
        ("tests/test_doctests.py", "tests/test_hypercube.py"),
    ),
    Mutant(
        "gray-table-buddy-steps",
        "topoalloc/alloc/hypercube/allocators.py",
        "        step = n_pos if k == self.dim else max(1, size // 2)",
        "        step = n_pos if k == self.dim else size",
        "The Gray-code strategy starts blocks only at multiples of the block size: it recognises no more "
        "subcubes than the buddy system.",
        _HC_PROOFS,
    ),
    # ---------------------------------------------------------------- topology
    Mutant(
        "torus-tie-goes-negative",
        "topoalloc/topology/torus.py",
        "        return d if d <= n - d else d - n",
        "        return d if d < n - d else d - n",
        "Dimension-order routing on an even ring breaks the half-way tie the negative way (documented: positive).",
        ("tests/test_proofs_deadlock.py", "tests/test_torus.py"),
    ),
    # ---------------------------------------------------------------- curves
    Mutant(
        "snake-off-by-one",
        "topoalloc/curves/grid.py",
        "rank = np.where(c[:, i] % 2 == 1, size - 1 - rank, rank) + c[:, i] * size",
        "rank = np.where(c[:, i] % 2 == 1, size - rank, rank) + c[:, i] * size",
        "Reversing an odd row off by one.",
        ("tests/test_curves.py",),
    ),
    Mutant(
        "hilbert-run-stride",
        "topoalloc/curves/grid.py",
        "            out = (dx + w * dy) * np.arange(n, dtype=np.int64)",
        "            out = (dx + h * dy) * np.arange(n, dtype=np.int64)",
        "Node ids of a straight run computed with the height as the row stride.",
        ("tests/test_curves.py",),
    ),
    # ---------------------------------------------------------------- linear allocators
    Mutant(
        "best-fit-takes-largest",
        "topoalloc/alloc/linear/allocator.py",
        "            return sbl[lens[i]][0]",
        "            return sbl[lens[-1]][0]",
        "Best Fit picks the largest free interval (worst fit).",
        ("tests/test_linear_alloc.py",),
    ),
    Mutant(
        "min-span-window-off-by-one",
        "topoalloc/alloc/linear/allocator.py",
        "        spans = free_ranks[p - 1 :] - free_ranks[: m - p + 1]",
        "        spans = free_ranks[p:] - free_ranks[: m - p]",
        "The minimum-span fallback measures windows of p + 1 ranks.",
        ("tests/test_linear_alloc.py",),
    ),
    Mutant(
        "sum-of-squares-sign",
        "topoalloc/alloc/linear/allocator.py",
        "            delta = 1 - 2 * nl",
        "            delta = 1 + 2 * nl",
        "A sign slip in Sum of Squares' change of Σ N(i)²: removing an interval of a common size looks costly.",
        ("tests/test_linear_alloc.py",),
    ),
    Mutant(
        "release-forgets-right-neighbour",
        "topoalloc/alloc/linear/allocator.py",
        "        right = end if end in self._len_at else None  # on a line no interval starts at n",
        "        right = None",
        "Release merges a freed run with its left free neighbour only: free intervals stay split.",
        ("tests/test_linear_alloc.py",),
    ),
    # ---------------------------------------------------------------- EASY / conservative
    Mutant(
        "easy-shadow-equality",
        "topoalloc/sched/easy.py",
        "            if est[j] > latest_end:",
        "            if est[j] >= latest_end:",
        "A job ending exactly at the shadow time is not counted as ending by it.",
        ("tests/test_golden.py",),
    ),
    Mutant(
        "easy-extra-not-consumed",
        "topoalloc/sched/easy.py",
        "                extra -= alloc.size",
        "                extra -= 0",
        "Backfilled jobs that run past the shadow time do not use up the head's extra nodes: the head is delayed.",
        ("tests/test_golden.py", "tests/test_properties.py"),
    ),
    Mutant(
        "easy-arrival-pass-drops-reservation",
        "topoalloc/sched/easy.py",
        "            ctx.record(ctx.queue[0], self._shadow)  # the head's reservation kept: the one a full pass would make again\n",
        "",
        "A pass that only looks at new arrivals keeps the last reservation but does not record it: the "
        "reservations recorded differ from full passes' (the schedule does not).",
        ("tests/test_properties.py",),
    ),
    Mutant(
        "conservative-compress-may-delay",
        "topoalloc/sched/conservative.py",
        "            t = plan.earliest(j, size, est[j], not_after=old)",
        "            t = plan.earliest(j, size, est[j], not_after=None)",
        "Compression is allowed to move a reservation later.",
        ("tests/test_torus.py", "tests/test_golden.py", "tests/test_schedulers_unit.py"),
    ),
    Mutant(
        "profile-boundary",
        "topoalloc/sched/plan.py",
        "            while j < n and times[j] < end:",
        "            while j < n and times[j] <= end:",
        "A reservation ending exactly when the next step of the free-processor profile starts is checked "
        "against that step too.",
        ("tests/test_golden.py", "tests/test_schedulers_unit.py", "tests/test_properties.py"),
    ),
    Mutant(
        "counted-window-forgets-own-reservation",
        "topoalloc/sched/plan.py",
        "                if v < size and (v < 0 or not t0 <= times[j] < end0):",
        "                if v < size:",
        "StatePlan's count check before a trial no longer counts a job's own processors free inside its "
        "reservation: compression misses moves the plan allows.  (A window's first segment is before the "
        "reservation, at every candidate compression tries, so the same change there is equivalent.)",
        ("tests/test_schedulers_unit.py",),
    ),
    Mutant(
        "trial-ignores-displaced-reservations",
        "topoalloc/sched/plan.py",
        "            displaced += got != bits.get(who)\n    return True",
        "            pass\n    return True",
        "StatePlan's Python trial stops at equal states even while a reservation it placed holds other processors "
        "than in the kept replay, and takes the kept replay's rest as its own.",
        ("tests/test_schedulers_unit.py",),
    ),
    Mutant(
        "walk-may-return-to-dropped-node",
        "ilp/lagrange.py",
        "            new[at] = m2 + step[at]\n",
        "",
        "The relaxation forgets that the appended node must differ from the one it drops: walks then go "
        "round one 4-cycle and the certified bounds fall (still sound, but 141 on the 4x4 mesh is no longer proven).",
        ("tests/test_ilp_lagrange.py",),
    ),
    Mutant(
        "bound-rounds-up-past-the-value",
        "ilp/lagrange.py",
        "    return -((int(lam.sum()) - value) // scale)",
        "    return -((int(lam.sum()) - value - 1) // scale)",
        "The ceiling of (L - sum(lambda)) / S taken one unit too high when the division is exact: an "
        "unsound bound above the optimum.",
        ("tests/test_ilp_lagrange.py",),
    ),
    Mutant(
        "first-state-skips-a-multiplier",
        "ilp/lagrange.py",
        "        for a in self.ax:\n            T += lam[a]",
        "        for a in self.ax[1:]:\n            T += lam[a]",
        "The walk's first node is not charged its multiplier, so the relaxation's value is not a lower "
        "bound of cost + sum(lambda) for an ordering.",
        ("tests/test_ilp_lagrange.py",),
    ),
)


@dataclass(frozen=True)
class MutantResult:
    """What running the tests against one mutant gave."""

    mutant: Mutant
    killed: bool
    seconds: float
    summary: str


def repository_root() -> Path:
    """The checkout this module lives in (``proofs/`` is a top-level folder of it)."""
    return Path(__file__).resolve().parent.parent


def apply_mutant(mutant: Mutant, root: Path) -> None:
    """Patch ``root / mutant.path`` in place (``root`` is a copy); raise if the text is not there exactly once."""
    target = root / mutant.path
    text = target.read_text()
    count = text.count(mutant.old)
    if count != 1:
        raise InvalidArgument("mutant", mutant.name, f"its text to occur once in {mutant.path} (found {count} times)")
    target.write_text(text.replace(mutant.old, mutant.new))


_IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "results", ".pytest_cache", ".hypothesis")


def _copy(root: Path, dest: Path) -> None:
    """A copy of the repository at ``dest`` plus an importable tree at ``dest/.import``."""
    shutil.copytree(root, dest, ignore=_IGNORE, symlinks=True)
    pkg = dest / ".import" / "topoalloc"
    shutil.copytree(dest / "topoalloc", pkg, ignore=_IGNORE)
    for top in ("proofs", "ilp"):
        shutil.copytree(dest / top, pkg / top, ignore=_IGNORE)


def _import_path(mutant: Mutant) -> str:
    """Where ``mutant.path`` lives in the importable tree."""
    head, _, rest = mutant.path.partition("/")
    return f".import/topoalloc/{head}/{rest}" if head in ("proofs", "ilp") else f".import/{mutant.path}"


def run_mutant(mutant: Mutant, root: Path | None = None, *, timeout: float = 900.0, python: str | None = None) -> MutantResult:
    """Apply ``mutant`` to a temporary copy of the repository and run its tests there.

    The mutant is killed when pytest exits with failures (status 1) or is
    stopped by ``timeout`` (a mutant that makes a test loop forever is
    caught); a clean pass (status 0) means it survived.  Other statuses
    (collection errors) count as killed too, and the summary says so.
    """
    root = repository_root() if root is None else Path(root)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="topoalloc-mutant-") as tmp:
        dest = Path(tmp) / "repo"
        _copy(root, dest)
        apply_mutant(mutant, dest)
        imp = Mutant(mutant.name, _import_path(mutant), mutant.old, mutant.new, mutant.why, mutant.tests)
        apply_mutant(imp, dest)
        env = dict(os.environ)
        env["PYTHONPATH"] = str(dest / ".import") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        # without it the working directory comes first on sys.path: ``topoalloc`` would be the copy's
        # source folder, which has no ilp/ or proofs/, and an editable install would then answer
        # ``topoalloc.ilp`` from the original checkout (children inherit this, unlike ``-P``)
        env["PYTHONSAFEPATH"] = "1"
        env.pop("PYTEST_ADDOPTS", None)
        cmd = [python or sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow and not mutation", *mutant.tests]
        try:
            proc = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return MutantResult(mutant, True, time.perf_counter() - t0, f"tests stopped after {timeout:.0f} s")
        lines = [ln for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
        summary = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.strip()), lines[-1] if lines else "")
        killed = proc.returncode != 0
        if killed and proc.returncode != 1:
            summary = f"pytest exit status {proc.returncode}: {summary}"
        return MutantResult(mutant, killed, time.perf_counter() - t0, summary)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m topoalloc.proofs.mutants [--list] [--only NAME ...]``: exit 1 if any mutant survives."""
    ap = argparse.ArgumentParser(prog="python -m topoalloc.proofs.mutants", description="Run the curated mutants against the default tests.")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants")
    ap.add_argument("--root", type=Path, default=None, help="repository root (default: the checkout this module is in)")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    if args.only and len(chosen) != len(set(args.only)):
        known = ", ".join(m.name for m in MUTANTS)
        raise InvalidArgument("--only", args.only, f"names among {known}")
    if args.list:
        for m in chosen:
            print(f"{m.name:34s} {m.path}\n    {m.why}\n    tests: {' '.join(m.tests)}")
        return 0
    t0 = time.perf_counter()
    survived = 0
    for m in chosen:
        r = run_mutant(m, args.root)
        survived += not r.killed
        print(f"{'killed  ' if r.killed else 'SURVIVED'} {r.seconds:7.1f} s  {m.name:34s} {r.summary}", flush=True)
    print(f"{len(chosen) - survived} of {len(chosen)} killed in {time.perf_counter() - t0:.0f} s")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
