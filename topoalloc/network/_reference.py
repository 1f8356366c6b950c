"""The pure-Python engines: the reference both compiled engines are tested against.

Both engines share one interface (used by :class:`topoalloc.network.engine.Network`):
``add_packets``, ``run(until, stop_on_job)``, ``wait_graph()``, ``results()``
and the counters ``now``, ``link_flits``, ``ejected_window``, ``completed``.
The model each implements is documented in :mod:`topoalloc.network.engine`;
the compiled engine (``_cengine.c``) is a line-by-line translation and must
give identical results.

Virtual channel ids: ``q = channel * V + v``.  Channels ``< C + N`` (links
and injection) have input buffers (``q < n_buffered``); ejection channels
do not (the node consumes one flit per cycle).
"""

from __future__ import annotations

import heapq
from collections import deque

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InternalError

if TYPE_CHECKING:
    from .config import NetworkConfig
    from .tables import NetworkTables

__all__ = ["PyFlitEngine", "PyPacketEngine", "class_vcs"]


def class_vcs(V: int, per: int, classes: int, wrap: Any, dim: Any, cur_q: int, ch: int) -> range:
    """The VCs of link ``ch``'s class for a packet now in VC ``cur_q`` (``classes`` classes of ``per`` VCs,
    the last taking the rest); see :meth:`_Base._allowed`.  The compiled engine's ``vc_class`` is its twin."""
    last = classes - 1
    cls = int(wrap[ch])
    if dim[ch] == dim[cur_q // V]:
        cls += min((cur_q % V) // per, last)
    cls = min(cls, last)
    lo = ch * V + cls * per
    return range(lo, ch * V + V if cls == last else lo + per)


class _Base:
    def _arrive(self, ids: Iterable[int]) -> None:  # pragma: no cover - each engine defines it
        raise InternalError(f"{type(self).__name__} does not define _arrive")

    def __init__(self, tables: NetworkTables, cfg: NetworkConfig, classes: int):
        self.tables = tables
        self.C = tables.n_links
        self.N = tables.n_nodes
        self.NR = tables.n_routers
        self.V = cfg.vcs
        self.B = cfg.buffers
        self.P = cfg.packet
        self.R = cfg.router_delay
        self.wormhole = cfg.switching == "wormhole"
        self.saf = cfg.switching == "saf"
        self.deadlock_cycles = cfg.deadlock_cycles
        self.classes = classes
        self.dateline = classes > 1
        self.per = self.V // classes if classes > 1 else self.V  # VCs per class (the last class takes the rest)
        self.rnext = tables.router_next.tolist() if cfg.routing == "valiant" else None
        self.via: list[int] = []
        self.n_buffered = (self.C + self.N) * self.V
        self.nxt = tables.next_channel.tolist()
        self.chan_dst = tables.chan_dst.tolist()
        self.chan_dim = tables.chan_dim.tolist()
        self.chan_wrap = tables.chan_wrap.tolist()
        self.owner = [-1] * (tables.n_channels * self.V)
        self.create: list[int] = []
        self.src: list[int] = []
        self.dst: list[int] = []
        self.job: list[int] = []
        self.t_inject: list[int] = []
        self.t_done: list[int] = []
        self.blocking: list[int] = []
        self.hops: list[int] = []
        self.job_left: list[int] = []
        self.completed: list[tuple[int, int]] = []
        self.link_flits = [0] * tables.n_channels
        self.ejected_window = 0
        self.window = (0, 0)
        self.now = 0
        self.last_move = 0

    # ------------------------------------------------------------ interface
    def add_packets(self, create: np.ndarray, src: np.ndarray, dst: np.ndarray, job: np.ndarray, via: np.ndarray | None = None) -> None:
        base = len(self.create)
        self.via.extend([-1] * len(create) if via is None else (int(x) for x in via))
        self.create.extend(int(x) for x in create)
        self.src.extend(int(x) for x in src)
        self.dst.extend(int(x) for x in dst)
        jobs = [int(x) for x in job]
        self.job.extend(jobs)
        k = len(jobs)
        self.t_inject.extend([-1] * k)
        self.t_done.extend([-1] * k)
        self.blocking.extend([0] * k)
        self.hops.extend([0] * k)
        for j in jobs:
            if j >= 0:
                while len(self.job_left) <= j:
                    self.job_left.append(0)
                self.job_left[j] += 1
        self._arrive(range(base, base + k))

    def set_window(self, lo: int, hi: int) -> None:
        self.window = (lo, hi)

    def results(self, sel: Any = slice(None)) -> dict[str, np.ndarray]:
        """Per-packet outputs of the packets ``sel`` (a slice or an index array)."""
        if isinstance(sel, slice):
            def pick(a: list[int]) -> np.ndarray:
                return np.asarray(a[sel], dtype=np.int64)
        else:
            def pick(a: list[int]) -> np.ndarray:
                return np.asarray([a[i] for i in sel.tolist()], dtype=np.int64)
        return {"t_inject": pick(self.t_inject), "t_done": pick(self.t_done), "blocking": pick(self.blocking), "hops": pick(self.hops)}

    def _key(self, pid: int) -> tuple[int, int]:
        return (self.create[pid], pid)

    def _allowed(self, cur_q: int, ch: int) -> range:
        """VCs a packet now in VC ``cur_q`` may take on channel ``ch`` (the VC classes: dateline on tori, global hops on a dragonfly).

        Continuing the current channel's dimension keeps its class, one more
        across a wrap-around (global) link; a new dimension starts in class 1
        across a wrap-around link, else 0; capped at the last class.
        """
        if not self.dateline or ch >= self.C:
            return range(ch * self.V, ch * self.V + self.V)
        return class_vcs(self.V, self.per, self.classes, self.chan_wrap, self.chan_dim, cur_q, ch)

    def _route(self, r: int, pid: int) -> int:
        """The channel a header at router ``r`` asks for (Valiant: towards its intermediate router until it is there)."""
        t = self.via[pid]
        if t >= 0:
            if t != r:
                return self.rnext[r][t]  # type: ignore[index]
            self.via[pid] = -1
        return self.nxt[r][self.dst[pid]]

    def _peek(self, r: int, pid: int) -> int:
        """As :meth:`_route`, without passing the intermediate router (for the wait graph)."""
        t = self.via[pid]
        return self.rnext[r][t] if 0 <= t != r else self.nxt[r][self.dst[pid]]  # type: ignore[index]

    def _delivered(self, pid: int, t: int) -> bool:
        self.t_done[pid] = t
        j = self.job[pid]
        if j >= 0:
            self.job_left[j] -= 1
            if self.job_left[j] == 0:
                self.completed.append((j, t))
                return True
        return False


class PyFlitEngine(_Base):
    """Cycle-accurate flit-level wormhole / VCT / SAF engine with credit-based flow control."""

    def __init__(self, tables: NetworkTables, cfg: NetworkConfig, classes: int):
        super().__init__(tables, cfg, classes)
        V, N, NR = self.V, self.N, self.NR
        self.buf: list[deque[Any]] = [deque() for _ in range(self.n_buffered)]
        self.outq = [-1] * self.n_buffered
        ip, ic = tables.in_ptr.tolist(), tables.in_chan.tolist()
        self.router_vcs = [[c * V + v for c in ic[ip[r] : ip[r + 1]] for v in range(V)] for r in range(NR)]
        self.busy = [0] * NR  # non-empty input VCs per router
        self.active: set[int] = set()
        self.srcq: list[deque[int]] = [deque() for _ in range(N)]
        self.ni_pkt = [-1] * N
        self.ni_flit = [0] * N
        self.ni_vc = [-1] * N
        self.ni_active: set[int] = set()
        self.arrivals: list[tuple[int, int]] = []
        self.in_net = 0
        self.trace: list | None = None  # set to a list to record (packet, VC entered, cycle) of every header move

    def _arrive(self, ids: Iterable[int]) -> None:
        for pid in ids:
            heapq.heappush(self.arrivals, (self.create[pid], pid))

    def _whole(self, q: int, now: int) -> bool:
        b = self.buf[q]
        return len(b) >= self.P and b[self.P - 1][2] <= now

    def run(self, until: int, stop_on_job: bool = False) -> int:
        while self.now < until:
            if self.in_net == 0 and not self.ni_active:
                nxt = self.arrivals[0][0] if self.arrivals else until
                if nxt > self.now:
                    self.now = min(nxt, until)
                    self.last_move = self.now
                    continue
            done = self._cycle(self.now)
            self.now += 1
            if done and stop_on_job:
                break
        return self.now

    def _cycle(self, now: int) -> bool:
        V, B, P, R, C = self.V, self.B, self.P, self.R, self.C
        buf, owner, outq = self.buf, self.owner, self.outq
        create, dst = self.create, self.dst
        nbuf = self.n_buffered
        wormhole, saf = self.wormhole, self.saf
        arrivals = self.arrivals
        while arrivals and arrivals[0][0] <= now:
            _, pid = heapq.heappop(arrivals)
            u = self.src[pid]
            self.srcq[u].append(pid)
            self.ni_active.add(u)
        # ---- decisions (all on the state at the start of the cycle)
        ni_sends = []
        for u in sorted(self.ni_active):
            pid = self.ni_pkt[u]
            if pid < 0:
                if not self.srcq[u]:
                    self.ni_active.discard(u)
                    continue
                pid = self.srcq[u].popleft()
                self.ni_pkt[u], self.ni_flit[u], self.ni_vc[u] = pid, 0, -1
            q = self.ni_vc[u]
            if q < 0:
                base = (C + u) * V
                for qq in range(base, base + V):
                    if owner[qq] < 0 and (wormhole or len(buf[qq]) <= B - P):
                        owner[qq] = pid
                        self.ni_vc[u] = q = qq
                        break
                if q < 0:
                    continue
            if len(buf[q]) < B:
                ni_sends.append(u)
        grants = []
        nxt = self.nxt
        rnext = self.rnext
        for r in sorted(self.active):
            vcs = self.router_vcs[r]
            heads = [q for q in vcs if buf[q] and buf[q][0][1] == 0 and buf[q][0][2] <= now and outq[q] < 0]
            if heads:
                heads.sort(key=lambda q: (create[buf[q][0][0]], buf[q][0][0]))
                row = nxt[r]
                for q in heads:
                    pid = buf[q][0][0]
                    if saf and not self._whole(q, now):
                        continue
                    ch = row[dst[pid]] if rnext is None else self._route(r, pid)
                    for q2 in self._allowed(q, ch):
                        if owner[q2] < 0 and (q2 >= nbuf or wormhole or len(buf[q2]) <= B - P):
                            owner[q2] = pid
                            outq[q] = q2
                            break
            cands = []
            for q in vcs:
                b = buf[q]
                if not b:
                    continue
                pid, f, ready = b[0]
                q2 = outq[q]
                if ready > now or q2 < 0 or (q2 < nbuf and len(buf[q2]) >= B):
                    continue
                if saf and f == 0 and not self._whole(q, now):
                    continue
                cands.append(q)
            if len(cands) > 1:
                cands.sort(key=lambda q: (create[buf[q][0][0]], buf[q][0][0]))
                used_in, used_out = set(), set()
                for q in cands:
                    ci, co = q // V, outq[q] // V
                    if ci in used_in or co in used_out:
                        continue
                    used_in.add(ci)
                    used_out.add(co)
                    grants.append(q)
            else:
                grants.extend(cands)
        # ---- apply
        lo, hi = self.window
        in_window = lo <= now < hi
        done = False
        chan_dst = self.chan_dst
        for q in grants:
            b = buf[q]
            if saf and b[0][1] == 0:
                ready = b[P - 1][2]  # store-and-forward: a header is ready once its tail is
            pid, f, r0 = b.popleft()
            if not saf or f:
                ready = r0
            if not b:
                r = chan_dst[q // V]
                self.busy[r] -= 1
                if not self.busy[r]:
                    self.active.discard(r)
            q2 = outq[q]
            ch2 = q2 // V
            if f == 0:
                self.blocking[pid] += now - ready
                if ch2 < C:
                    self.hops[pid] += 1
                if self.trace is not None:
                    self.trace.append((pid, q2, now))
            if f == P - 1:
                outq[q] = -1
                owner[q2] = -1
            if in_window:
                self.link_flits[ch2] += 1
            if q2 >= nbuf:
                self.in_net -= 1
                if in_window:
                    self.ejected_window += 1
                if f == P - 1 and self._delivered(pid, now):
                    done = True
            else:
                b2 = buf[q2]
                if not b2:
                    r2 = chan_dst[ch2]
                    self.busy[r2] += 1
                    self.active.add(r2)
                b2.append((pid, f, now + R + 1))
        for u in ni_sends:
            pid, f, q = self.ni_pkt[u], self.ni_flit[u], self.ni_vc[u]
            b = buf[q]
            if not b:
                r = chan_dst[C + u]
                self.busy[r] += 1
                self.active.add(r)
            b.append((pid, f, now + R + 1))
            self.in_net += 1
            if in_window:
                self.link_flits[C + u] += 1
            if f == 0:
                self.t_inject[pid] = now
                if self.trace is not None:
                    self.trace.append((pid, q, now))
            if f == P - 1:
                owner[q] = -1
                self.ni_pkt[u] = -1
            else:
                self.ni_flit[u] = f + 1
        if grants or ni_sends:
            self.last_move = now
        elif self.in_net > 0 and now - self.last_move >= self.deadlock_cycles:
            from .engine import deadlock_error

            raise deadlock_error(self, now)
        return done

    def wait_graph(self) -> dict[int, list[int]]:
        """Which VC waits for which (frozen state): a buffer for the VCs its front flit needs, an owned VC for its owner's buffer."""
        V, B, nbuf = self.V, self.B, self.n_buffered
        edges: dict[int, list[int]] = {}
        feeder = {self.outq[q]: q for q in range(nbuf) if self.outq[q] >= 0}
        for q in range(nbuf):
            b = self.buf[q]
            if not b:
                continue
            pid = b[0][0]
            if self.outq[q] >= 0:
                edges[q] = [self.outq[q]]
            else:
                ch = self._peek(self.chan_dst[q // V], pid)
                edges[q] = list(self._allowed(q, ch))
        for q2, pid in enumerate(self.owner):
            if pid >= 0 and q2 in feeder and not (q2 < nbuf and len(self.buf[q2]) >= B):
                edges.setdefault(q2, []).append(feeder[q2])
        return edges


class PyPacketEngine(_Base):
    """The packet-level model: a worm holds the channels from its header back to its tail."""

    def __init__(self, tables: NetworkTables, cfg: NetworkConfig, classes: int):
        super().__init__(tables, cfg, classes)
        self.L = cfg.worm_span
        self.route: list[list[int]] = []  # channels requested so far
        self.slots: list[list[int]] = []  # VC held on each of them
        self.T: list[list[int]] = []  # header acquisition times
        self.tau: list[list[int]] = []  # tail-passing times
        self.released: list[int] = []  # VCs of the worm whose release is scheduled
        self.ended: list[bool] = []  # header has taken the ejection channel
        self.want: list[int] = []  # time of the pending request
        self.waiters: dict[int, list[int]] = {}
        self.events: dict[int, tuple[list, list, list]] = {}
        self.times: list[int] = []
        self.n_wait = 0

    def _event(self, t: int, kind: int, item: int) -> None:
        ev = self.events.get(t)
        if ev is None:
            ev = self.events[t] = ([], [], [])
            heapq.heappush(self.times, t)
        ev[kind].append(item)

    def _arrive(self, ids: Iterable[int]) -> None:
        for pid in ids:
            self.route.append([self.C + self.src[pid]])
            self.slots.append([])
            self.T.append([])
            self.tau.append([])
            self.released.append(0)
            self.ended.append(False)
            self.want.append(self.create[pid])
            self._event(self.create[pid], 1, pid)

    def _check_deadlock(self, t: int) -> None:
        """Worms wait and nothing was granted in the ``deadlock_cycles`` cycles before ``t``."""
        if self.n_wait > 0 and t > self.last_move + self.deadlock_cycles:
            from .engine import deadlock_error

            raise deadlock_error(self, self.last_move + self.deadlock_cycles)

    def run(self, until: int, stop_on_job: bool = False) -> int:
        while True:
            if not self.times or self.times[0] >= until:
                self._check_deadlock(until)  # nothing happens before `until`
                self.now = max(self.now, until)
                return self.now
            t = heapq.heappop(self.times)
            self._check_deadlock(t)
            self.now = t
            done = self._time(t)
            self.now = t + 1
            if done and stop_on_job:
                return self.now

    def _time(self, t: int) -> bool:
        V = self.V
        releases, requests, deliveries = self.events.pop(t)
        dirty = set()
        for q in releases:
            self.owner[q] = -1
            dirty.add(q // V)
        for pid in requests:
            ch = self.route[pid][-1]
            self.waiters.setdefault(ch, []).append(pid)
            dirty.add(ch)
            self.n_wait += 1
        granted = False
        for ch in sorted(dirty):
            w = self.waiters.get(ch)
            if not w:
                continue
            w.sort(key=self._key)
            keep = []
            for pid in w:
                q = self._free_slot(pid, ch)
                if q < 0:
                    keep.append(pid)
                else:
                    self._grant(pid, q, t)
                    granted = True
            self.waiters[ch] = keep
        done = False
        ev = self.events.pop(t, None)  # deliveries found by this time's grants
        if ev is not None:
            self.times.remove(t)
            heapq.heapify(self.times)
            deliveries = deliveries + ev[2]
        lo, hi = self.window
        for pid in sorted(deliveries):
            if lo <= t < hi:
                self.ejected_window += self.P
            if self._delivered(pid, t):
                done = True
        if granted:
            self.last_move = t
        return done

    def _free_slot(self, pid: int, ch: int) -> int:
        V = self.V
        if ch >= self.C and ch < self.C + self.N:  # injection: one worm at a time (the interface sends one packet after another)
            return ch * V if self.owner[ch * V] < 0 else -1
        cur = self.slots[pid][-1]
        for q in self._allowed(cur, ch):
            if self.owner[q] < 0:
                return q
        return -1

    def _grant(self, pid: int, q: int, t: int) -> None:
        V, C, N, P, R, L = self.V, self.C, self.N, self.P, self.R, self.L
        T, slots = self.T[pid], self.slots[pid]
        i = len(T)
        T.append(t)
        slots.append(q)
        self.owner[q] = pid
        self.n_wait -= 1
        ch = q // V
        if i == 0:
            self.t_inject[pid] = t
        else:
            self.blocking[pid] += t - self.want[pid]
        if ch < C:
            self.hops[pid] += 1
        lo, hi = self.window
        if lo <= t < hi:
            self.link_flits[ch] += P
        if ch < C + N:
            nch = self._route(self.chan_dst[ch], pid)
            self.route[pid].append(nch)
            ra = t + P + R if self.saf else t + R + 1
            self.want[pid] = ra
            self._event(ra, 1, pid)
            if i - L >= 0:
                self._finalize(pid, i - L, t, False)
        else:
            self.ended[pid] = True
            for j in range(max(0, i - L), i + 1):
                self._finalize(pid, j, t, j == i)
        self._release(pid, t)

    def _finalize(self, pid: int, j: int, t: int, last: bool) -> None:
        """The tail passes channel ``j`` at ``max(T[j] + P - 1, tau[j-1] + R + 1, now)``."""
        tau = self.tau[pid]
        x = self.T[pid][j] + self.P - 1
        if j:
            x = max(x, tau[j - 1] + self.R + 1)
        x = max(x, t)
        tau.append(x)
        if last:
            self._event(x, 2, pid)

    def _release(self, pid: int, t: int) -> None:
        """Schedule the release of every VC whose tail time is known and whose header has moved on:
        at ``max(tau[j], T[j+1]) + 1`` (the ejection VC at ``tau + 1``)."""
        T, tau = self.T[pid], self.tau[pid]
        j = self.released[pid]
        while j < len(tau) and (j + 1 < len(T) or self.ended[pid]):
            x = max(tau[j], T[j + 1]) if j + 1 < len(T) else tau[j]
            self._event(x + 1, 0, self.slots[pid][j])
            j += 1
        self.released[pid] = j

    def wait_graph(self) -> dict[int, list[int]]:
        """Held VCs wait for the next VC of the same worm; a worm's last held VC waits for the VCs it requests."""
        edges: dict[int, list[int]] = {}
        waiting = {pid for w in self.waiters.values() for pid in w}
        for pid, slots in enumerate(self.slots):
            held = [q for q in slots[self.released[pid] :] if self.owner[q] == pid]
            for a, b in zip(held, held[1:]):
                edges.setdefault(a, []).append(b)
            if pid in waiting and held:
                ch = self.route[pid][-1]
                edges.setdefault(held[-1], []).extend(self._allowed(held[-1], ch))
        return edges
