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


def test_free_list_trial_state_sees_what_an_allocate_and_release_changed():
    """``trial_state`` is the lists' content: equal after a pair that left them as they were, different
    after one that did not (the AFL re-merges a released mesh's pieces differently here)."""
    from topoalloc.alloc.base import Request
    from topoalloc.alloc.hypercube import AFLAllocator, FreeListAllocator

    fl = FreeListAllocator(Hypercube(4))
    fl.allocate(Request(4))
    before = fl.trial_state()
    fl.release(fl.allocate(Request(2)))
    assert fl.trial_state() == before

    afl = AFLAllocator(Hypercube(3))
    a2, a4 = afl.allocate(Request(2)), afl.allocate(Request(4))
    afl.release(a2)
    afl.release(a4)
    afl.allocate(Request(1))
    afl.allocate(Request(3))
    before = afl.trial_state()
    afl.release(afl.allocate(Request(1)))
    assert afl.trial_state() != before


@pytest.mark.parametrize("allocator", ["free_list", "afl"])
@pytest.mark.parametrize("seed", [1, 2, 5])
def test_easy_remembers_refusals_after_a_trial_that_changed_nothing(allocator, seed):
    """A candidate the guard refuses is allocated and released; when the allocator's ``trial_state`` shows
    the pair changed nothing, the refusal stands for its key and kind. The same schedule as when every
    such candidate is asked again (``trial_state`` None), with fewer allocations."""
    w = poisson_workload(400, load=1.8, sizes=Uniform(1, 32), machine_nodes=64, estimate_factor=3.0, seed=seed)
    runs = {}
    for remember in (True, False):
        a = topoalloc.make_allocator(allocator, Hypercube(6))
        cls = type(a)
        calls = [0]
        real = cls.allocate

        def allocate(self, request, real=real, calls=calls):
            calls[0] += 1
            return real(self, request)

        extra = {"allocate": allocate} if remember else {"allocate": allocate, "trial_state": lambda self: None}
        a.__class__ = type(f"Counted{cls.__name__}", (cls,), {"__slots__": (), **extra})
        r = topoalloc.simulate(w, machine=a.topology, allocator=a, scheduler="easy", record_allocations=True)
        runs[remember] = (r.to_csv(), calls[0])
    assert runs[True][0] == runs[False][0]
    assert runs[True][1] < runs[False][1]


@pytest.mark.parametrize("dim,seed", [(3, 82), (3, 98), (4, 82)])
def test_a_trial_state_that_hides_a_change_changes_the_schedule(dim, seed):
    """Why the refusal is remembered only when the state is shown unchanged: on these workloads an AFL
    that claimed every allocate-and-release changed nothing would start some job at another time than
    replay does; the real ``trial_state`` gives replay's schedule."""
    import numpy as np

    from topoalloc.alloc.hypercube import AFLAllocator
    from topoalloc.testing.conformance import _schedule_workload, replaying

    class Unchanged(AFLAllocator):
        __slots__ = ()

        def trial_state(self):
            return ()

    w = _schedule_workload(1 << dim, 1 << dim, seed, 60)
    q = Hypercube(dim)
    ref = topoalloc.simulate(w, machine=q, allocator=replaying(AFLAllocator(q)), scheduler="easy")
    real = topoalloc.simulate(w, machine=q, allocator=AFLAllocator(q), scheduler="easy")
    hidden = topoalloc.simulate(w, machine=q, allocator=Unchanged(q), scheduler="easy")
    assert np.array_equal(real.start, ref.start)
    assert not np.array_equal(hidden.start, ref.start)


#: 31 jobs on Q6 (submit, run, size, requested time; -1: missing): at job 30's pass a refused candidate's
#: allocate-and-release merges a cube with another mate than the one it was split from, after a refusal
#: of another key was remembered in the lists before it
_REMERGED = [(0, 15, 32, 75), (1, 10, 2, 10), (1, 32, 32, 16), (2, 2, 32, 4), (2, 18, 32, 36), (3, 30, 16, 30), (3, 18, 1, 36),
             (4, 29, 16, 29), (4, 11, 4, 11), (4, 18, 1, 90), (5, 6, 32, -1), (5, 11, 4, 5.5), (5, 32, 16, 32), (8, 19, 8, 38),
             (9, 34, 1, -1), (10, 25, 8, 25), (11, 23, 1, 115), (12, 5, 8, -1), (13, 21, 2, -1), (15, 22, 1, 11), (17, 23, 2, 115),
             (18, 13, 2, 13), (21, 17, 4, 17), (22, 25, 1, 50), (23, 23, 1, 115), (23, 10, 1, 10), (37, 2, 2, 2), (42, 4, 2, -1),
             (51, 0, 1, 0), (66, 15, 2, 15), (66, 16, 1, 8)]


@pytest.mark.parametrize("allocator", ["free_list", "afl"])
def test_a_trial_that_changed_the_lists_lifts_the_guards_earlier_refusals(allocator, monkeypatch):
    """The keyed walk remembers a guard's refusal while allocating and releasing changed nothing; once a
    later refused candidate's pair does change the lists, the refusals made in the lists before are
    forgotten and their keys asked again, as the plain scan (``_backfill_guarded``) asks every job.  On this
    workload a walk that kept them starts job 30 one second later than the plain scan (and the compiled
    kernel, which follows the lists too)."""
    import numpy as np

    from topoalloc.sched import fastpath
    from topoalloc.workload import Workload

    w = Workload(job_id=np.arange(1, len(_REMERGED) + 1), submit=[float(r[0]) for r in _REMERGED], run=[float(r[1]) for r in _REMERGED],
                 size=[r[2] for r in _REMERGED], requested_time=[float(r[3]) for r in _REMERGED], header={"MaxProcs": "64"}, source="<t>")
    walk = topoalloc.simulate(w, machine="hypercube:6", allocator=allocator, scheduler="easy", engine="python")
    monkeypatch.setattr(EASY, "_index_ok", lambda self, ctx: False)
    scan = topoalloc.simulate(w, machine="hypercube:6", allocator=allocator, scheduler="easy", engine="python")
    assert np.array_equal(walk.start, scan.start)
    assert walk.start[29] == 70.0
    if fastpath.compiled_available():
        assert np.array_equal(topoalloc.simulate(w, machine="hypercube:6", allocator=allocator, scheduler="easy", engine="compiled").start, scan.start)


#: every keyed allocator family (Allocator.fit_key, not counting), each on a small machine of its own
_KEYED = [("buddy", "hypercube:6"), ("gray_code", "hypercube:6"), ("free_list", "hypercube:6"), ("afl", "hypercube:6"),
          ("mesh_first_fit", "mesh:8x8"), ("frame_sliding", "mesh:8x8"), ("anca_bf", "mesh:8x8"), ("buddy_2d", "mesh:8x8"),
          ("ep", "torus:4x4x4"), ("nep", "torus:4x4x4"), ("slice", "tpu:4x2x3,cube=1")]


#: (Cplant's queue is by size, smallest first: where ``max_request_now`` is exact, as for the subtorus allocators, a
#: head that does not fit leaves no candidate to backfill, and the walk is never asked)
_KEYED_ORDERS = [(a, m, o) for a, m in _KEYED for o in ("sjf", "lpt", "cplant") if not (o == "cplant" and a in ("ep", "nep"))]


@pytest.mark.parametrize("allocator,machine,order", _KEYED_ORDERS, ids=[f"{a}-{m}-{o}" for a, m, o in _KEYED_ORDERS])
def test_the_walk_in_a_keyed_queue_order_decides_as_the_plain_scan(allocator, machine, order, monkeypatch):
    """In SJF, LPT and Cplant order the walk ranks jobs by the queue's key, so a job arriving later can rank
    before queued jobs and its key's list takes it in the middle.  The same schedule and the same nodes as the
    plain scan of every candidate (``_backfill_guarded``), on overloaded workloads where that happens often."""
    import numpy as np

    from topoalloc.sched import easy as easy_mod
    from topoalloc.topology import parse_machine

    n = parse_machine(machine).n_nodes
    w = poisson_workload(300, load=1.8, sizes=Uniform(1, n // 2), machine_nodes=n, estimate_factor=3.0, seed=7)
    walked = [0]
    middle = [0]
    real_walk, real_insert = EASY._backfill_indexed, easy_mod._KeyClass.insert

    def walk(self, *a, **k):
        walked[0] += 1
        return real_walk(self, *a, **k)

    def insert(self, job, rank, est):
        middle[0] += bool(self.n) and self.ranks[-1] > rank
        return real_insert(self, job, rank, est)

    with monkeypatch.context() as m:
        m.setattr(EASY, "_backfill_indexed", walk)
        m.setattr(easy_mod._KeyClass, "insert", insert)
        by_walk = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler=f"easy:order={order}", engine="python", record_allocations=True)
    monkeypatch.setattr(EASY, "_index_ok", lambda self, ctx: False)
    by_scan = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler=f"easy:order={order}", engine="python", record_allocations=True)
    assert by_walk.to_csv() == by_scan.to_csv()
    assert all(np.array_equal(x, y) for x, y in zip(by_walk.allocations, by_scan.allocations))
    assert walked[0] > 10 and middle[0] > 10  # (not vacuous: the walk ran, and jobs were taken in the middle of their key's list)


def test_a_scheduler_with_its_own_queue_key_is_walked_in_that_order():
    """A subclass that keeps the order name "fcfs" but orders its queue by a key of its own (shortest first, as SJF)
    gets the keyed walk in that order, and neither FCFS shortcut (the kept guard's jump, the arrivals-only pass),
    which assume arrivals queue behind every job: the same schedule as ``easy:order=sjf``."""
    import numpy as np

    class ShortestFirst(EASY):
        def queue_key(self, submit, estimate, size=None):
            return lambda j: (estimate[j], submit[j], j)

    w = poisson_workload(300, load=1.8, sizes=Uniform(1, 32), machine_nodes=64, estimate_factor=3.0, seed=3)
    for allocator in ("free_list", "buddy"):
        mine = topoalloc.simulate(w, machine="hypercube:6", allocator=allocator, scheduler=ShortestFirst(), engine="python")
        sjf = topoalloc.simulate(w, machine="hypercube:6", allocator=allocator, scheduler="easy:order=sjf", engine="python")
        assert np.array_equal(mine.start, sjf.start), allocator
