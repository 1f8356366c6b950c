"""Linear allocators: sorted free list, First Fit, Best Fit, Sum of Squares, with the min-span fallback.

Leung, Phillips, Bunde et al., "Processor allocation on Cplant: achieving
general processor locality using one-dimensional allocation strategies"
(CLUSTER 2002), §2.1–§2.3.  Processors are ranked by a curve ordering
(:mod:`topoalloc.curves`); allocation happens in rank space.

Strategies
----------
sorted_free_list
    Cplant 1.9's default (§2.1): the first ``p`` free processors in rank order.
first_fit, best_fit, sum_of_squares
    When some interval of consecutive free ranks holds the job (§2.3), it goes
    at the *start* (lowest rank) of the interval chosen by

    * First Fit: the interval with the smallest start that is large enough;
    * Best Fit: the one leaving the fewest free processors in it (ties: smallest start);
    * Sum of Squares: the one minimising Σ_i N(i)², N(i) being the number of
      free intervals of size i after the allocation (ties: smallest start).

    Otherwise the paper's fallback: the allocation of *minimum span*, ties
    broken at the smallest starting rank (§2.3).  The job then takes ``p``
    consecutive free ranks: an optimal set can always be chosen so.

Span variants (option ``span``)
-------------------------------
``"linear"`` (default): ranks form a line; intervals end at rank ``n-1`` and
the fallback minimises the linear span ``max r − min r + 1``.
``"ring"``: ranks form a ring (the paper's choice, §2.3: "we use ring span");
an interval may wrap from rank ``n-1`` to 0 and the fallback minimises the
ring span.  The sorted free list ignores the option (its choice does not
depend on it); it is accepted so every linear allocator takes the same options.

Complexity
----------
Free intervals are kept in dictionaries keyed by start and end, with a sorted
list of starts per length and a sorted list of the distinct lengths.  A fit
inspects only the distinct lengths ≥ p (at most √(2n) of them, since the
lengths sum to at most n); allocate and release update O(1) intervals per run
of ranks, each in O(log n) plus list shifts.  The min-span fallback and the
sorted free list scan the free mask once (vectorised, O(n)).

Every "fits" question has the free-count answer: some allocation is always
possible when ``p <= free``.  So these allocators are *counting* allocators and
answer scheduler probes by arithmetic (checked against replay by the
conformance suite).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from typing import Any, Self

import numpy as np

from ...curves import Ordering, make_ordering
from ...errors import InvalidArgument
from ...registry import ALLOCATORS
from ...topology.base import Topology
from ...topology.base import Grid, Subcubes
from ..base import Allocation, Allocator, Grant, Request
from ..probes import CountingProbes

__all__ = ["LinearAllocator", "STRATEGIES", "min_span_window"]

STRATEGIES = ("sorted_free_list", "first_fit", "best_fit", "sum_of_squares")
SPANS = ("linear", "ring")


def min_span_window(free_ranks: np.ndarray, p: int, n: int, ring: bool) -> int:
    """Index ``i`` of the window ``free_ranks[i : i+p]`` (cyclic if ``ring``) of least span; ties: smallest start.

    ``free_ranks`` is sorted.  For a line the span of the window is
    ``F[i+p-1] − F[i] + 1``; on a ring the arc from ``F[i]`` forward to
    ``F[(i+p-1) mod m]``.  A set of ``p`` free ranks has span at least that of
    the window between its extreme elements, so the best window is optimal.
    """
    m = free_ranks.size
    if ring:
        ext = np.concatenate([free_ranks, free_ranks + n])
        spans = ext[p - 1 : p - 1 + m] - ext[:m]
    else:
        spans = free_ranks[p - 1 :] - free_ranks[: m - p + 1]
    return int(np.argmin(spans))  # first minimum: smallest starting rank


class LinearAllocator(CountingProbes, Allocator):
    """A one-dimensional allocator over a curve ordering (see the module notes).

    Parameters
    ----------
    topology : Topology
    strategy : {"sorted_free_list", "first_fit", "best_fit", "sum_of_squares"}
    curve : str, path or Ordering
        A registered curve name (``row_major``, ``snake``, ``hilbert``,
        ``hilbert_nd``, ``zorder``, ``gray``) or an ordering file of
        ``node rank`` lines.  Default ``"hilbert"`` on grid machines
        (the paper's choice, §2.2), ``"gray"`` on hypercubes (topology kind
        ``"hypercube"``), ``"row_major"`` (node ids) elsewhere.
    span : {"linear", "ring"}

    Raises
    ------
    InvalidArgument
        Unknown strategy or span, or a curve the topology cannot carry.

    Examples
    --------
    >>> from topoalloc.topology import parse_machine
    >>> a = LinearAllocator(parse_machine("mesh:4x4"), strategy="best_fit", curve="row_major")
    >>> x = a.allocate(Request(3)); y = a.allocate(Request(3)); a.release(x)
    >>> a.allocate(Request(2)).nodes.tolist()   # best fit: the 3-hole at ranks 0..2, not the 10 after y
    [0, 1]
    """

    claims = frozenset({"exact_size", "rank_contiguous_when_fit"})

    def __init__(self, topology: Topology, *, strategy: str = "first_fit", curve: "str | Ordering | None" = None, span: str = "linear"):
        super().__init__(topology)
        if strategy not in STRATEGIES:
            raise InvalidArgument("strategy", strategy, f"one of {', '.join(STRATEGIES)}")
        if span not in SPANS:
            raise InvalidArgument("span", span, "'linear' or 'ring'")
        if curve is None:
            curve = _default_curve(topology)
        self.ordering = make_ordering(curve, topology)
        self.curve = self.ordering.name
        self.strategy = strategy
        self.span = span
        self.ring = span == "ring"
        self.name = f"{strategy}:curve={self.ordering.name},span={span}"
        self._node_at_rank = self.ordering.node_at_rank
        self._rank_of = self.ordering.rank_of
        self._free_r = np.ones(self.n_nodes, dtype=bool)
        self._identity = bool((self._node_at_rank == np.arange(self.n_nodes)).all())
        self._intervals = strategy != "sorted_free_list"
        n = self.n_nodes
        self._len_at: dict[int, int] = {}
        self._start_at_end: dict[int, int] = {}
        self._starts_by_len: dict[int, list[int]] = {}
        self._lens: list[int] = []
        if self._intervals:
            self._add(0, n)

    # ------------------------------------------------------ interval upkeep
    def _end(self, s: int, length: int) -> int:
        e = s + length
        return e % self.n_nodes if self.ring else e

    def _add(self, s: int, length: int) -> None:
        self._len_at[s] = length
        self._start_at_end[self._end(s, length)] = s
        lst = self._starts_by_len.get(length)
        if lst is None:
            self._starts_by_len[length] = [s]
            insort(self._lens, length)
        else:
            insort(lst, s)

    def _remove(self, s: int) -> int:
        length = self._len_at.pop(s)
        del self._start_at_end[self._end(s, length)]
        lst = self._starts_by_len[length]
        if len(lst) == 1:
            del self._starts_by_len[length]
            del self._lens[bisect_left(self._lens, length)]
        else:
            del lst[bisect_left(lst, s)]
        return length

    def _containing_start(self, a: int) -> int:
        """Start of the free interval holding free rank ``a``, the first rank of a run being carved.

        Such a rank starts its interval but in one case.  A fit is carved at an interval's start;
        a run of the min-span window that follows a gap starts right after a busy rank; and the
        window's first rank never has a free rank just before it in the free list, since the
        window one place back would have no larger span and a smaller start (ties go to the
        smallest start).  The exception is a ring whose window starts at free list index 0,
        rank 0, inside the interval that wraps past rank ``n - 1``: that interval starts just
        after the last busy rank (one exists: a wholly free ring is the interval ``(0, n)``).
        """
        if a in self._len_at:
            return a
        return int(np.flatnonzero(~self._free_r)[-1]) + 1

    def _carve(self, a: int, k: int) -> None:
        """Remove free ranks ``a .. a+k-1`` (mod n on a ring), which lie inside one interval."""
        n = self.n_nodes
        s = self._containing_start(a)
        length = self._remove(s)
        off = (a - s) % n if self.ring else a - s
        rest = length - off - k
        if self.ring and length == n:
            if n - k > 0:
                self._add((a + k) % n, n - k)
            return
        if off > 0:
            self._add(s, off)
        if rest > 0:
            self._add((a + k) % n if self.ring else a + k, rest)

    def _give_back(self, a: int, k: int) -> None:
        """Free ranks ``a .. a+k-1``: a run that was busy; merge with the free neighbours."""
        n = self.n_nodes
        end = a + k
        if self.ring:
            end %= n
        left = self._start_at_end.get(a)
        right = end if end in self._len_at else None  # on a line no interval starts at n
        if left is not None and right is not None and left == right:
            self._remove(left)
            self._add(0, n)  # the whole ring free again: one interval from rank 0
            return
        s, length = a, k
        if left is not None:
            length += self._remove(left)
            s = left
        if right is not None:
            length += self._remove(right)
        # a merge to the whole machine starts at rank 0 anyway: on a line s = 0; on a ring the
        # only ways are left == right (above) or the release of a whole-machine grant, made at 0
        self._add(s, length)

    # --------------------------------------------------------------- choice
    def _choose_interval(self, p: int) -> int | None:
        lens = self._lens
        i = bisect_left(lens, p)
        if i == len(lens):
            return None
        sbl = self._starts_by_len
        strategy = self.strategy
        if strategy == "best_fit":
            return sbl[lens[i]][0]
        if strategy == "first_fit":
            return min(sbl[L][0] for L in lens[i:])
        # sum of squares: taking p from an interval of length L changes Σ N(i)² by
        # (N(L)-1)² - N(L)² + [(N(L-p)+1)² - N(L-p)²  if L > p]
        best_delta = None
        best_start = 0
        for L in lens[i:]:
            nl = len(sbl[L])
            delta = 1 - 2 * nl
            r = L - p
            if r > 0:
                nr = sbl.get(r)
                delta += 2 * (len(nr) if nr else 0) + 1
            s = sbl[L][0]
            if best_delta is None or delta < best_delta or (delta == best_delta and s < best_start):
                best_delta, best_start = delta, s
        return best_start

    def _allocate(self, request: Request) -> Grant:
        p = request.size
        n = self.n_nodes
        free_r = self._free_r
        info: dict[str, Any] = {}
        runs: tuple[tuple[int, int], ...] | None = None  # the grant's runs of ranks, ascending, when known without a sort
        if not self._intervals:
            ranks = free_r.nonzero()[0][:p]
        else:
            s = self._choose_interval(p)
            if s is not None:
                self._carve(s, p)
                if s + p <= n:
                    ranks = np.arange(s, s + p)
                    runs = ((s, p),)
                else:  # wraps past rank n - 1 (a ring); p < n, since only the interval (0, n) holds n
                    ranks = np.arange(s, s + p) % n
                    runs = ((0, s + p - n), (s, n - s))
                info["contiguous"] = True
            else:
                free = free_r.nonzero()[0]
                i = min_span_window(free, p, n, self.ring)
                if self.ring and i + p > free.size:
                    ranks = np.concatenate([free[i:], free[: i + p - free.size]])
                else:
                    ranks = free[i : i + p]
                # carve each run of consecutive ranks (in window order) from its interval; a run
                # that wraps past rank n - 1 is carved as two, which leaves the same intervals
                cuts = np.flatnonzero(np.diff(ranks) != 1) + 1
                bounds = [0, *cuts.tolist(), p]
                heads = ranks[bounds[:-1]].tolist()
                for a, b0, b1 in zip(heads, bounds, bounds[1:]):
                    self._carve(a, b1 - b0)
                info["contiguous"] = False  # one run would have been an interval that fits
        free_r[ranks] = False
        return Grant(ranks if self._identity else self._node_at_rank[ranks], info, runs)  # row-major: ranks are node ids

    def _release(self, allocation: Allocation, token: Any) -> None:
        """Free the grant's ranks and give its runs back, in ascending order of rank.  A contiguous grant
        carries its runs (its token); otherwise the runs are found by sorting its ranks — the same runs."""
        ranks = self._rank_of[allocation.nodes]
        self._free_r[ranks] = True
        if not self._intervals:
            return
        if token is not None:
            for a, k in token:
                self._give_back(a, k)
            return
        ranks = np.sort(ranks)
        if ranks.size == 1:
            self._give_back(int(ranks[0]), 1)
            return
        cuts = np.flatnonzero(np.diff(ranks) != 1) + 1
        bounds = [0, *cuts.tolist(), ranks.size]
        heads = ranks[bounds[:-1]].tolist()
        for a, b0, b1 in zip(heads, bounds, bounds[1:]):
            self._give_back(a, b1 - b0)

    # ------------------------------------------------------------- probes
    def _copy_state(self, clone: Self) -> None:
        clone._free_r = self._free_r.copy()
        clone._len_at = dict(self._len_at)
        clone._start_at_end = dict(self._start_at_end)
        clone._starts_by_len = {k: list(v) for k, v in self._starts_by_len.items()}
        clone._lens = list(self._lens)

    # ------------------------------------------------------------ inspection
    def free_intervals(self) -> list[tuple[int, int]]:
        """Free intervals ``(start rank, length)`` sorted by start (wrapping ones on a ring included)."""
        if not self._intervals:
            return _runs(self._free_r, self.ring)
        return sorted(self._len_at.items())

    def __repr__(self) -> str:
        return f"LinearAllocator({self.topology.spec()}, {self.strategy}, curve={self.ordering.name}, span={self.span}, free={self._free_count}/{self.n_nodes})"


def _default_curve(topology: Topology) -> str:
    """Hilbert on grids (the paper's choice, §2.2), Gray on hypercubes, node-id order elsewhere."""
    if isinstance(topology, Grid):
        return "hilbert"
    if isinstance(topology, Subcubes):
        return "gray"
    return "row_major"


def _runs(free: np.ndarray, ring: bool) -> list[tuple[int, int]]:
    """Maximal runs of True as (start, length), merging the wrap run on a ring (reference implementation)."""
    n = free.size
    if free.all():
        return [(0, n)]
    padded = np.concatenate([[False], free, [False]])
    d = np.diff(padded.astype(np.int8))
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    runs = [(int(s), int(e - s)) for s, e in zip(starts, ends)]
    if ring and len(runs) >= 2 and runs[0][0] == 0 and runs[-1][0] + runs[-1][1] == n:
        s, length = runs.pop()
        runs[0] = (s, length + runs[0][1])
        runs.sort()
    return runs


def _factory(strategy: str) -> Callable[..., LinearAllocator]:
    def make(topology: Topology, curve: "str | None" = None, span: str = "linear") -> LinearAllocator:
        return LinearAllocator(topology, strategy=strategy, curve=curve, span=span)

    return make


_DOCS = {
    "sorted_free_list": "First p free processors in curve order (Cplant 1.9); curve=NAME|FILE, span=linear|ring.",
    "first_fit": "First free curve interval that fits, else min span; curve=NAME|FILE, span=linear|ring.",
    "best_fit": "Tightest free curve interval, else min span; curve=NAME|FILE, span=linear|ring.",
    "sum_of_squares": "Interval minimising the sum of squared interval-size counts, else min span; curve=, span=.",
}

for _s in STRATEGIES:
    ALLOCATORS.register(_s, doc=_DOCS[_s])(_factory(_s))
