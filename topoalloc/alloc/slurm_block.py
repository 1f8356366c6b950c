"""Slurm's ``topology/block`` placement: a job inside the smallest aggregated block that holds it.

Slurm's topology guide describes ``topology/block`` for NVLink-style domains: base
blocks of nodes, aggregated into blocks of 2, 4, ... base blocks (``BlockSizes``);
a job is placed inside one block of the lowest level that can hold it, spanning
as few base blocks as possible.  Our reading, the details Slurm's documentation
leaves to its code and which are ours (pinned by tests):

1. A job of ``k`` nodes goes to the lowest level whose aggregates have room for
   it (``BlockSizes[l] >= k``) and where some aggregate has ``k`` free nodes;
   among those aggregates the one with the fewest free nodes (best fit), ties
   to the first in the file.  If no aggregate of that level has room, the next
   level up is tried.
2. Inside the aggregate, base blocks are filled so that the job spans as few as
   possible: while nodes are still needed, if some base block has enough free
   nodes for the rest, the rest comes from the one with the fewest (best fit,
   ties to the first); otherwise every free node of the base block with the most
   free nodes (ties to the first) is taken.  Within a base block, the lowest node
   ids.
3. A job larger than the largest aggregate can never run (Slurm does not let a
   job span more than its largest block size).

A request fits now iff some *maximal* aggregate (one inside no larger one: the
largest level's, plus trailing blocks when the blocks do not divide evenly) may
hold ``k`` nodes and has ``k`` free — every aggregate lies inside one of them —
so the probes count free nodes per maximal aggregate: ``earliest_fit`` adds the
releases' nodes per base block in order; EASY's guard keeps those counts at the
shadow time.  No replay.  Conservative backfilling's plan replays on the free nodes
per base block, the state placement depends on (``future_plan``), not on snapshots.

When one aggregate holds every node and may hold them all (the largest ``BlockSizes``
entry is the whole cluster, as in the bundled example), a request fits exactly when
enough nodes are free: the registry then builds :class:`WholeMachineBlockAllocator`,
the same placements with counting probes, so the schedulers take their counting paths.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import accumulate
from typing import Any, Self

import numpy as np

from ..errors import InvalidArgument
from ..registry import ALLOCATORS
from ..topology.base import Topology
from ..topology.slurm import SlurmBlock
from .base import Allocation, Allocator, Grant, Request
from .probes import CountingProbes, ReservationGuard

__all__ = ["SlurmBlockAllocator", "WholeMachineBlockAllocator"]


class SlurmBlockAllocator(Allocator):
    """Slurm topology/block placement on a :class:`~topoalloc.topology.SlurmBlock` (see the module notes)."""

    name = "block"
    claims = frozenset({"exact_size"})

    def __init__(self, topology: Topology):
        super().__init__(topology)
        top = self.topology
        if not isinstance(top, SlurmBlock):
            raise InvalidArgument("topology", topology, "a slurm-block: machine")
        self.blocks = top
        self._block_nodes = top.nodes_of_router[: len(top.block_names)]
        self._bfree = np.array([n.size for n in self._block_nodes], dtype=np.int64)  # free nodes per base block
        # the maximal aggregates: those inside no larger one (when the blocks do not divide evenly, trailing blocks
        # belong only to smaller levels); every aggregate lies inside exactly one of them
        self._max_of_block = np.full(len(top.block_names), -1, dtype=np.int64)
        spans: list[tuple[int, int]] = []
        sizes: list[int] = []
        for level in range(len(top.block_sizes) - 1, -1, -1):
            for a, b in top.aggregates[level].tolist():
                if self._max_of_block[a] < 0:
                    self._max_of_block[a:b] = len(spans)
                    spans.append((a, b))
                    sizes.append(top.block_sizes[level])
        self._max_spans = np.array(spans, dtype=np.int64).reshape(-1, 2)
        self._max_sizes = np.array(sizes, dtype=np.int64)  # nominal nodes (BlockSizes) of each maximal aggregate
        self._cap = int(top.block_sizes[-1])
        self._aggregates = [[(int(a), int(b)) for a, b in level.tolist()] for level in top.aggregates]
        nodes = self._max_free(self._bfree)
        self._most = int(np.minimum(nodes, self._max_sizes).max())  # the largest job the empty machine can hold

    @classmethod
    def accepts(cls, topology: Topology) -> bool:
        """Blocks read from a topology/block topology.conf (slurm-block:PATH)."""
        return isinstance(topology, SlurmBlock)

    def _copy_state(self, clone: Self) -> None:
        clone._bfree = self._bfree.copy()

    # ------------------------------------------------------------ placement
    def _max_free(self, bfree: np.ndarray) -> np.ndarray:
        """Free nodes of every maximal aggregate, given free nodes per base block."""
        spans = self._max_spans
        c = np.concatenate([[0], np.cumsum(bfree)])
        return c[spans[:, 1]] - c[spans[:, 0]]

    def _fits(self, free: np.ndarray, k: int) -> bool:
        """Whether a job of ``k`` nodes fits given the free nodes per maximal aggregate: some maximal aggregate
        may hold ``k`` (its size) and has ``k`` free (then it, or one inside it, takes the job)."""
        return bool(((free >= k) & (self._max_sizes >= k)).any())

    def _choose(self, k: int, bfree: Sequence[int]) -> tuple[int, int, int] | None:
        """(level, first base block, last+1) of the aggregate a job of ``k`` nodes goes to, given the free
        nodes per base block, or None.  Plain Python: a few dozen blocks, asked often by the conservative
        plan, where numpy's per-call cost would dominate."""
        c = [0, *accumulate(bfree)]
        for level, size in enumerate(self.blocks.block_sizes):
            if size < k:
                continue
            best: tuple[int, int] | None = None
            fewest = 0
            for a, b in self._aggregates[level]:
                f = c[b] - c[a]
                if f >= k and (best is None or f < fewest):  # the first of the fewest
                    best, fewest = (a, b), f
            if best is not None:
                return level, best[0], best[1]
        return None

    def _place(self, k: int, bfree: Sequence[int] | None = None) -> tuple[int, int, int, list[tuple[int, int]]] | None:
        """Where a job of ``k`` nodes goes: (level, first base block, last+1, [(base block, nodes taken)]).

        A pure function of the free nodes per base block (``bfree``, default the allocator's now; nothing is
        taken): which nodes of a base block are free does not matter, only how many.
        """
        if k > self._cap:
            return None
        free = self._bfree.tolist() if bfree is None else bfree
        got = self._choose(k, free)
        if got is None:
            return None
        level, a, b = got
        avail = list(free[a:b])  # (Python ints: the allocator's counts as a list, or the plan's unpacked state)
        need = k
        counts: list[tuple[int, int]] = []
        while need:
            # the base block with the fewest free nodes that are enough for the rest (the first of them);
            # if none is enough, the one with the most (the first of them), all of whose free nodes are taken
            fit, most = -1, 0
            for i, f in enumerate(avail):
                if f >= need and (fit < 0 or f < avail[fit]):
                    fit = i
                if f > avail[most]:
                    most = i
            i = fit if fit >= 0 else most
            take = need if fit >= 0 else avail[most]
            avail[i] -= take
            counts.append((a + i, take))
            need -= take
        return level, a, b, counts

    def _allocate(self, request: Request) -> Grant | None:
        placed = self._place(request.size)
        if placed is None:
            return None
        level, a, b, counts = placed
        taken = []
        for blk, take in counts:
            nodes = self._block_nodes[blk]
            taken.append(nodes[~self._busy[nodes]][:take])
            self._bfree[blk] -= take
        names = self.blocks.block_names
        info: dict[str, Any] = {"level": level, "aggregate": names[a] if b - a == 1 else f"{names[a]}..{names[b - 1]}", "base_blocks": len(counts)}
        return Grant(np.sort(np.concatenate(taken)), info, counts)

    def _release(self, allocation: Allocation, token: Any) -> None:
        for blk, take in token:
            self._bfree[blk] += take

    # --------------------------------------------------------------- probes
    def can_allocate(self, request: Request) -> bool:
        k = request.size
        return k <= self._free_count and self._fits(self._max_free(self._bfree), k)

    def _fits_empty(self, request: Request) -> bool:
        return request.size <= self._most

    def max_request_now(self) -> int:
        return int(np.minimum(self._max_free(self._bfree), self._max_sizes).max())

    def fit_key(self, request: Request) -> Hashable | None:
        return request.size  # placement depends on the size alone

    def _released_blocks(self, alloc: Allocation) -> list[tuple[int, int]]:
        return self._tokens[alloc.serial]

    def earliest_fit(self, request: Request, releases: Iterable[Allocation]) -> int | None:
        k = request.size
        if not self._fits_empty(request):
            return None
        tf = self._max_free(self._bfree)
        if self._fits(tf, k):
            return 0
        mob, sizes = self._max_of_block, self._max_sizes
        for n, alloc in enumerate(releases, 1):
            hit = False
            for blk, take in self._released_blocks(alloc):
                t = mob[blk]
                tf[t] += take
                hit = hit or (tf[t] >= k and sizes[t] >= k)
            if hit:
                return n
        return None

    def reservation_guard(self, head: Request, releases: Iterable[Allocation]) -> ReservationGuard:
        return _BlockGuard(self, head, releases)

    def future_plan(self, now: float, releases: list[tuple[float, Allocation]], request: Callable[[int], Request],
                    priority: Callable[[int], int]) -> Any:
        """Conservative backfilling's plan on the free nodes per base block (a :class:`~topoalloc.sched.plan.StatePlan`
        of :class:`_BlockModel`), not on snapshots: where a job goes is a pure function of those counts, and a
        release gives back the nodes taken from each base block.  The same answers as replay on snapshots (the
        conformance suite compares the schedules; a unit test, every answer)."""
        from ..sched.plan import StatePlan

        model = getattr(self, "_block_model", None)
        if model is None or model.allocator is not self:  # (a snapshot shares its original's attributes)
            model = self._block_model = _BlockModel(self)
        else:
            model.renew()
        return StatePlan(now, model, releases, request, priority)


class _BlockModel:
    """The free nodes per base block as a :class:`~topoalloc.sched.plan.StateModel`, packed in one int: base block
    ``i``'s count in bits ``w·i`` to ``w·(i+1)``, ``w`` the bits of the largest block's node count (a count never
    exceeds its block's nodes, so no field overflows into the next).  A grant's token is the nodes it took from
    each base block, packed alike, so a release is an addition (``int.__add__``, not a Python method) and the
    plan's states hash and compare as ints.  A request's frame is its size (placement depends on the size
    alone).  Only a placement the plan has not met before unpacks the state (:meth:`place`)."""

    release = staticmethod(int.__add__)

    def __init__(self, allocator: SlurmBlockAllocator):
        self.allocator = allocator
        nb = len(allocator._block_nodes)
        self._w = w = max(1, max(int(n.size) for n in allocator._block_nodes).bit_length())
        self._fmask = (1 << w) - 1
        self._shifts = [w * i for i in range(nb)]
        self._state_bytes = (w * nb) // 8 + 32
        self._token_of: dict[int, int] = {}  # a held grant's packed token, by serial
        self.renew()

    def renew(self) -> None:
        """The allocator's state of the moment (one model serves plan after plan: its answers are pure)."""
        from ..sched.plan import placement_memo

        a = self.allocator
        self.state: int = self._pack(enumerate(a._bfree.tolist()))
        self.free_count = a.free_count
        #: placements remembered from plan to plan
        self.memo = placement_memo(a, self._state_bytes)
        if len(self._token_of) > 2 * len(a._tokens) + 64:  # drop the released grants'
            self._token_of = {s: t for s, t in self._token_of.items() if s in a._tokens}

    def _pack(self, counts: Iterable[tuple[int, int]]) -> int:
        """(base block, nodes) pairs as one int."""
        w = self._w
        return sum(int(n) << (w * int(b)) for b, n in counts)

    def place(self, state: int, request: Request) -> tuple[int, int] | None:
        m = self._fmask
        placed = self.allocator._place(request.size, [(state >> sh) & m for sh in self._shifts])
        if placed is None:
            return None
        token = self._pack(placed[3])
        return token, state - token

    def token_of(self, allocation: Allocation) -> int:
        got = self._token_of.get(allocation.serial)
        if got is None:
            got = self._token_of[allocation.serial] = self._pack(self.allocator._released_blocks(allocation))
        return got

    def frame(self, request: Request) -> Hashable:
        return request.size

    def cells(self, request: Request) -> int:
        return request.size

    def cells_of(self, allocation: Allocation) -> int:
        return allocation.size


class _BlockGuard(ReservationGuard):
    """EASY's guard: free nodes per maximal aggregate at the shadow time; the head fits iff one may hold it and has enough.

    A candidate ending by the shadow time changes nothing then; one running past
    it takes its nodes from the shadow-time counts of the aggregates it lies in.
    ``may_admit`` asks the allocator where the candidate would go (a pure
    function of the free nodes) without taking anything.
    """

    allocator: SlurmBlockAllocator

    def __init__(self, allocator: SlurmBlockAllocator, head: Request, releases: Iterable[Allocation]):
        super().__init__(allocator, head, releases)
        tf = allocator._max_free(allocator._bfree)
        mob = allocator._max_of_block
        for alloc in self.releases:
            for blk, take in allocator._released_blocks(alloc):
                tf[mob[blk]] += take
        self.shadow = tf
        self.k = head.size

    def _after(self, counts: Iterable[tuple[int, int]]) -> np.ndarray:
        tf = self.shadow.copy()
        mob = self.allocator._max_of_block
        for blk, take in counts:
            tf[mob[blk]] -= take
        return tf

    def may_admit(self, request: Request, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            return True
        placed = self.allocator._place(request.size)
        return placed is not None and self.allocator._fits(self._after(placed[3]), self.k)

    def admit(self, allocation: Allocation, ends_by_shadow: bool) -> bool:
        if ends_by_shadow:
            self.releases.append(allocation)
            return True
        tf = self._after(self.allocator._released_blocks(allocation))
        if not self.allocator._fits(tf, self.k):
            return False
        self.shadow = tf
        return True


class WholeMachineBlockAllocator(CountingProbes, SlurmBlockAllocator):
    """:class:`SlurmBlockAllocator` on a machine one aggregate of which holds every node and may hold them all
    (its ``BlockSizes`` entry is at least the machine's nodes, as when the largest block size is the whole
    cluster).  Every aggregate lies inside that one, so a request fits exactly when it has ``k`` free nodes,
    that is when the machine has: a counting allocator (:class:`~topoalloc.alloc.probes.CountingProbes`).

    The same placements (the parent's); only the probes become arithmetic, so EASY and conservative take their
    counting paths (conservative's plan is a profile of free nodes, not a replay on free nodes per base block),
    and the compiled kernel runs the schedule, the allocator placing its jobs.  The conformance suite checks the
    promise (it never refuses a request of at most ``free_count`` nodes) on the bundled example, and a test
    compares its schedules with the parent's."""

    @staticmethod
    def holds_every_node(allocator: SlurmBlockAllocator) -> bool:
        """Whether the empty machine can hold a job of all its nodes: then one maximal aggregate has every node
        and may hold them all."""
        return allocator._most == allocator.n_nodes


@ALLOCATORS.register("block", accepts=SlurmBlockAllocator.accepts)
def _make_block(topology: Topology) -> SlurmBlockAllocator:
    """Slurm topology/block: inside the smallest aggregated block that holds the job, spanning few base blocks (slurm-block: machines)."""
    a = SlurmBlockAllocator(topology)
    return WholeMachineBlockAllocator(topology) if WholeMachineBlockAllocator.holds_every_node(a) else a
