"""EASY's keyed walk asks each question once per state.

The walk (:meth:`topoalloc.sched.easy.EASY._backfill_indexed`) skips queued
jobs whose key (:meth:`Allocator.fit_key`) was refused in the current state,
and a kept guard (:attr:`ReservationGuard.reusable`) lets the next pass jump
over the jobs refused in that same state.  The schedules are compared with
full passes and replay elsewhere (the conformance suite's
``schedules_equal_replay``, the kept-guard tests); here the questions
themselves.  With one guard, in one allocator state (:attr:`Allocator.state_stamp`):
within a pass, no key is asked twice for jobs on the same side of the shadow
time (a walk that forgot a refusal asks again); across passes, no job is
asked twice (a kept guard's jump that fell short of the jobs refused before
asks again).  (A later pass may still ask a key refused in an earlier one,
for a job that arrived since: the walk remembers refused jobs across passes,
not refused keys.)
"""

from __future__ import annotations

import pytest

import topoalloc
from topoalloc.alloc.hypercube import BuddyAllocator, GrayCodeAllocator
from topoalloc.alloc.slices import SliceAllocator
from topoalloc.sched import EASY
from topoalloc.topology import Hypercube, parse_machine
from topoalloc.workload.synthetic import Uniform, poisson_workload


def _asked(allocator, w):
    """Every guard question of an EASY run: (pass, guard, state stamp, job, key, ends by the shadow)."""
    cls = type(allocator)
    real = cls.reservation_guard
    guards, questions = [], []
    passes = [0]

    def reservation_guard(self, head, releases):
        g = real(self, head, releases)
        guards.append(g)  # (kept alive: ids stay distinct)
        may = g.may_admit

        def may_admit(request, ends_by):
            questions.append((passes[0], id(g), self.state_stamp, request.job_id, self.fit_key(request), ends_by))
            return may(request, ends_by)

        g.may_admit = may_admit
        return g

    allocator.__class__ = type(f"Asked{cls.__name__}", (cls,), {"__slots__": (), "reservation_guard": reservation_guard})
    easy = EASY()
    schedule = easy.schedule

    def counted(ctx):
        passes[0] += 1
        return schedule(ctx)

    easy.schedule = counted
    topoalloc.simulate(w, machine=allocator.topology, allocator=allocator, scheduler=easy)
    return questions, guards


def _machines():
    yield "slice tpu:12x1x1 all", lambda: SliceAllocator(parse_machine("tpu:12x1x1,cube=1"), "static", "all")
    yield "slice tpu:6x2x1 all", lambda: SliceAllocator(parse_machine("tpu:6x2x1,cube=1"), "static", "all")
    yield "slice tofu:3x2x2 all", lambda: SliceAllocator(parse_machine("tofu:3x2x2"), "static", "all")
    yield "buddy Q5", lambda: BuddyAllocator(Hypercube(5))
    yield "gray code Q6", lambda: GrayCodeAllocator(Hypercube(6))


@pytest.mark.parametrize("label,factory", list(_machines()), ids=[m[0] for m in _machines()])
@pytest.mark.parametrize("seed,load", [(1, 1.6), (3, 1.3), (12, 2.0)])
def test_no_question_twice_in_one_state(label, factory, seed, load):
    a = factory()
    n = a.n_nodes
    w = poisson_workload(300, load=load, sizes=Uniform(1, n if "slice" in label else n // 2), machine_nodes=n, estimate_factor=2.0, seed=seed)
    questions, guards = _asked(a, w)
    by_key: dict = {}
    by_job: dict = {}
    for k, (p, g, stamp, job, key, ends_by) in enumerate(questions):
        q = (p, g, stamp, key, ends_by)
        assert q not in by_key, f"question {k} (pass {p}) asks key {key!r} again (ends by the shadow: {ends_by}) after question {by_key[q]}, with the same guard in the same state"
        by_key[q] = k
        q = (g, stamp, job)
        assert q not in by_job, f"question {k} (pass {p}) asks job {job} again after question {by_job[q]}, with the same guard in the same state"
        by_job[q] = k
    # not vacuous: some guard was kept for a later pass and asked again there, some pass asked several keys in one state
    passes_of: dict = {}
    keys_of: dict = {}
    for p, g, stamp, _, key, _ in questions:
        passes_of.setdefault((g, stamp), set()).add(p)
        keys_of.setdefault((p, g, stamp), set()).add(key)
    assert max(len(v) for v in passes_of.values()) > 1
    assert max(len(v) for v in keys_of.values()) > 1
