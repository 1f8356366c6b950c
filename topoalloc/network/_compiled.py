"""State arrays for the compiled engines (``_cengine``), with the reference engines' interface.

The compiled functions keep no state: every array lives here (numpy) and is
passed on each :meth:`run`.  Packet arrays grow by doubling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import _cengine  # type: ignore[attr-defined]
from ._reference import class_vcs

if TYPE_CHECKING:
    from .config import NetworkConfig
    from .tables import NetworkTables

__all__ = ["CFlitEngine", "CPacketEngine"]

i32, i64, u8 = np.int32, np.int64, np.uint8


class _CBase:
    #: (name, dtype, kind) in the order the C function takes them; kind says how the array is sized
    ARRAYS: tuple[str, ...] = ()
    scal: np.ndarray
    params: Any

    def __init__(self, tables: NetworkTables, cfg: NetworkConfig, classes: int):
        self.tables = tables
        self.C = tables.n_links
        self.N = tables.n_nodes
        self.V = cfg.vcs
        self.P = cfg.packet
        self.CH = tables.n_channels
        self.classes = classes
        self.dateline = classes > 1
        self.per = self.V // classes if classes > 1 else 0  # VCs per class (the last class takes the rest)
        self.cfg = cfg
        self.n_packets = 0
        self.m_cap = 0
        self.j_cap = 0
        self.n_jobs = 0
        self.completed: list[tuple[int, int]] = []
        self.a: dict[str, np.ndarray] = {}
        self.a["next_chan"] = np.array(tables.next_channel, dtype=i32).ravel()
        self.a["chan_dst"] = np.array(tables.chan_dst, dtype=i32)
        self.a["chan_dim"] = np.array(tables.chan_dim, dtype=i32)
        self.a["chan_wrap"] = np.array(tables.chan_wrap, dtype=u8)
        self.valiant = cfg.routing == "valiant"
        self.NR = tables.n_routers
        self.a["rnext"] = np.array(tables.router_next, dtype=i32).ravel() if self.valiant else np.full(1, -1, i32)
        self.a["link_flits"] = np.zeros(self.CH, i64)
        self._grow_packets(1024)
        self._grow_jobs(16)

    # sizes of the growable arrays
    def _packet_arrays(self) -> dict[str, tuple[type, int, int]]:  # name -> (dtype, per-packet width, fill)
        raise NotImplementedError

    def _grow_packets(self, need: int) -> None:
        if need <= self.m_cap:
            return
        cap = max(need, 2 * self.m_cap, 1024)
        for name, (dt, width, fill) in self._packet_arrays().items():
            new: np.ndarray = np.full(cap * width, fill, dt)
            old = self.a.get(name)
            if old is not None:
                new[: old.size] = old
            self.a[name] = new
        self.m_cap = cap

    def _grow_jobs(self, need: int) -> None:
        if need <= self.j_cap:
            return
        cap = max(need, 2 * self.j_cap, 16)
        for name in ("job_left", "comp_job", "comp_cycle"):
            new = np.zeros(cap, i64)
            old = self.a.get(name)
            if old is not None:
                new[: old.size] = old
            self.a[name] = new
        self.j_cap = cap

    def _allowed(self, cur_q: int, ch: int) -> range:
        """As :meth:`topoalloc.network._reference._Base._allowed`, read from the arrays."""
        if not self.dateline or ch >= self.C:
            return range(ch * self.V, ch * self.V + self.V)
        return class_vcs(self.V, self.per, self.classes, self.a["chan_wrap"], self.a["chan_dim"], cur_q, ch)

    # ---------------------------------------------------------------- interface
    @property
    def now(self) -> int:
        return int(self.scal[0])

    @property
    def last_move(self) -> int:
        return int(self.scal[1])

    @property
    def ejected_window(self) -> int:
        return int(self.scal[5])

    @property
    def link_flits(self) -> np.ndarray:
        return self.a["link_flits"]

    def set_window(self, lo: int, hi: int) -> None:
        self.scal[6], self.scal[7] = lo, hi

    def add_packets(self, create: np.ndarray, src: np.ndarray, dst: np.ndarray, job: np.ndarray, via: np.ndarray | None = None) -> None:
        k = len(create)
        base = self.n_packets
        self._grow_packets(base + k)
        sl = slice(base, base + k)
        a = self.a
        a["via"][sl] = -1 if via is None else via
        a["create"][sl] = create
        a["src"][sl] = src
        a["dst"][sl] = dst
        a["job"][sl] = job
        a["pkey"][sl] = (np.asarray(create, dtype=i64) << 32) | np.arange(base, base + k, dtype=i64)
        self.n_packets += k
        if k and job.max() >= 0:
            jobs = job[job >= 0]
            top = int(jobs.max()) + 1
            self._grow_jobs(top)
            self.a["job_left"][:top] += np.bincount(jobs, minlength=top)
        # the arrival list stays sorted by (creation, id): merge the new packets into its unconsumed part
        ptr, length = int(self.scal[3]), int(self.scal[4])
        ids = np.concatenate([a["arr"][ptr:length].astype(i64), np.arange(base, base + k)])
        order = np.lexsort((ids, a["create"][ids]))
        a["arr"][ptr : ptr + ids.size] = ids[order]
        self.scal[4] = ptr + ids.size

    def results(self, sel: Any = slice(None)) -> dict[str, np.ndarray]:
        """Per-packet outputs of the packets ``sel`` (a slice or an index array)."""
        m = self.n_packets
        a = self.a
        return {name: a[name][:m][sel].astype(i64, copy=True) for name in ("t_inject", "t_done", "blocking", "hops")}

    def _call(self, fn: Any, until: int, stop: bool) -> int:
        status = fn(tuple(self.a[name] for name in self.ARRAYS), self.params, until, stop)
        n = int(self.scal[8])
        if n:
            self.completed.extend(zip(self.a["comp_job"][:n].tolist(), self.a["comp_cycle"][:n].tolist()))
            self.scal[8] = 0
        if status == 2:
            from .engine import deadlock_error

            raise deadlock_error(self, self.now)
        if status == 3:  # pragma: no cover - the horizon bound is proved in engine.py
            from ..errors import SimulationError

            raise SimulationError("packet-level engine: an event beyond the timing wheel's horizon")
        return self.now


class CFlitEngine(_CBase):
    """The flit-level engine in C (same model and results as :class:`~topoalloc.network._reference.PyFlitEngine`)."""

    ARRAYS = (
        "scal", "next_chan", "chan_dst", "chan_dim", "chan_wrap", "rptr", "rvcs", "fpid", "fidx", "fready",
        "bhead", "bcnt", "owner", "outq", "busy", "sq_head", "sq_tail", "ni_pkt", "ni_flit", "ni_vc",
        "create", "src", "dst", "job", "pnext", "t_inject", "t_done", "blocking", "hops", "arr",
        "job_left", "comp_job", "comp_cycle", "link_flits", "stamp_in", "stamp_out", "grants", "ni_sends", "heads", "pkey",
        "rnext", "via",
    )

    def __init__(self, tables: NetworkTables, cfg: NetworkConfig, classes: int):
        super().__init__(tables, cfg, classes)
        V, N, B = self.V, self.N, cfg.buffers
        nbuf = (self.C + N) * V
        self.nbuf = nbuf
        self.B = B
        a = self.a
        a["scal"] = self.scal = np.zeros(10, i64)
        a["rptr"] = np.array(tables.in_ptr, dtype=i32)
        a["rvcs"] = (tables.in_chan.astype(i32)[:, None] * V + np.arange(V, dtype=i32)[None, :]).ravel()
        a["fpid"] = np.full(nbuf * B, -1, i32)
        a["fidx"] = np.zeros(nbuf * B, i32)
        a["fready"] = np.zeros(nbuf * B, i64)
        a["bhead"] = np.zeros(nbuf, i32)
        a["bcnt"] = np.zeros(nbuf, i32)
        a["owner"] = np.full(self.CH * V, -1, i32)
        a["outq"] = np.full(nbuf, -1, i32)
        a["busy"] = np.zeros(tables.n_routers, i32)
        for name in ("sq_head", "sq_tail", "ni_pkt", "ni_vc"):
            a[name] = np.full(N, -1, i32)
        a["ni_flit"] = np.zeros(N, i32)
        a["stamp_in"] = np.zeros(self.CH, i64)
        a["stamp_out"] = np.zeros(self.CH, i64)
        a["grants"] = np.zeros(nbuf, i32)
        a["ni_sends"] = np.zeros(N, i32)
        a["heads"] = np.zeros(int(np.diff(tables.in_ptr).max()) * V, i32)
        self.params = (N, self.C, V, B, cfg.packet, cfg.router_delay, int(cfg.switching == "wormhole"), int(cfg.switching == "saf"), self.per, int(self.dateline), cfg.deadlock_cycles, nbuf, self.CH, tables.n_routers, classes)

    def _packet_arrays(self) -> dict[str, tuple[type, int, int]]:
        return {
            "create": (i64, 1, 0), "src": (i32, 1, 0), "dst": (i32, 1, 0), "job": (i32, 1, -1), "pnext": (i32, 1, -1),
            "t_inject": (i64, 1, -1), "t_done": (i64, 1, -1), "blocking": (i64, 1, 0), "hops": (i32, 1, 0), "arr": (i32, 1, 0),
            "pkey": (i64, 1, 0), "via": (i32, 1, -1),
        }

    def run(self, until: int, stop_on_job: bool = False) -> int:
        return self._call(_cengine.flit_run, until, stop_on_job)

    def _peek(self, r: int, pid: int) -> int:
        a = self.a
        t = int(a["via"][pid])
        if 0 <= t != r:
            return int(a["rnext"][r * self.NR + t])
        return int(a["next_chan"][r * self.N + int(a["dst"][pid])])

    def wait_graph(self) -> dict[int, list[int]]:
        """As :meth:`PyFlitEngine.wait_graph`, read from the arrays."""
        a, V, B, nbuf, N = self.a, self.V, self.B, self.nbuf, self.N
        edges: dict[int, list[int]] = {}
        outq, bcnt, bhead, fpid, owner = a["outq"], a["bcnt"], a["bhead"], a["fpid"], a["owner"]
        feeder = {int(outq[q]): q for q in range(nbuf) if outq[q] >= 0}
        for q in range(nbuf):
            if not bcnt[q]:
                continue
            pid = int(fpid[q * B + bhead[q]])
            if outq[q] >= 0:
                edges[q] = [int(outq[q])]
            else:
                ch = self._peek(int(a["chan_dst"][q // V]), pid)
                edges[q] = list(self._allowed(q, ch))
        for q2 in range(owner.size):
            if owner[q2] >= 0 and q2 in feeder and not (q2 < nbuf and bcnt[q2] >= B):
                edges.setdefault(q2, []).append(feeder[q2])
        return edges


class CPacketEngine(_CBase):
    """The packet-level model in C (same results as :class:`~topoalloc.network._reference.PyPacketEngine`)."""

    ARRAYS = (
        "scal", "next_chan", "chan_dst", "chan_dim", "chan_wrap", "owner", "wq_head", "wq_next",
        "create", "t_inject", "t_done", "blocking", "want", "src", "dst", "job", "hops", "arr", "pk_i", "pk_rec",
        "rec_next", "rec_ntau", "rec_rel", "rec_end", "hop", "wheel", "ev_next", "ev_item",
        "free_at", "next_wake", "job_left", "comp_job", "comp_cycle", "link_flits", "dirty", "dlv", "is_dirty", "req", "pkey", "reqch", "ev_aux",
        "rnext", "via",
    )

    def __init__(self, tables: NetworkTables, cfg: NetworkConfig, classes: int):
        # channels on a route: injection, links, ejection (Valiant's: two minimal legs)
        self.H = (2 if cfg.routing == "valiant" else 1) * tables.diameter + 2
        # every event is less than P + H(R + 1) cycles ahead (see engine.py): a timing wheel of W buckets
        horizon = 2 * (cfg.packet + self.H * (cfg.router_delay + 1)) + 8
        self.W = 1 << (horizon - 1).bit_length()
        self.ev_cap = 0
        self.scal = np.zeros(13, i64)
        self.scal[10] = -1  # free list of event nodes
        super().__init__(tables, cfg, classes)
        V, H = self.V, self.H
        a = self.a
        a["scal"] = self.scal
        a["owner"] = np.full(self.CH * V, -1, i32)
        a["wq_head"] = np.full(self.CH, -1, i32)
        a["dirty"] = np.zeros(self.CH, i32)
        a["is_dirty"] = np.zeros(self.CH, u8)
        a["wheel"] = np.full(self.W, -1, i32)
        a["free_at"] = np.zeros(self.CH * V, i64)
        a["next_wake"] = np.full(self.CH, -1, i64)
        # worm records: a packet holds one from entering the network to its ejection grant, and a VC meanwhile
        K = self.CH * V + 1
        a["rec_next"] = np.append(np.arange(1, K, dtype=i32), np.int32(-1))
        self.scal[12] = 0
        for name, dt, width in (("hop", i64, 3 * H), ("rec_ntau", i32, 1), ("rec_rel", i32, 1), ("rec_end", i32, 1)):
            a[name] = np.zeros(K * width, dt)  # hop: per record and hop {T, tau, VC | channel << 32}
        self.params = (self.N, self.C, V, cfg.packet, cfg.router_delay, int(cfg.switching == "saf"), self.per, int(self.dateline), cfg.deadlock_cycles, self.CH, self.H, cfg.worm_span, self.W, self.NR, classes)

    def _packet_arrays(self) -> dict[str, tuple[type, int, int]]:
        return {
            "create": (i64, 1, 0), "src": (i32, 1, 0), "dst": (i32, 1, 0), "job": (i32, 1, -1), "wq_next": (i32, 1, -1),
            "t_inject": (i64, 1, -1), "t_done": (i64, 1, -1), "blocking": (i64, 1, 0), "hops": (i32, 1, 0), "arr": (i32, 1, 0),
            "pk_i": (i32, 1, 0), "pk_rec": (i32, 1, -1), "want": (i64, 1, 0), "dlv": (i32, 1, 0), "req": (i32, 1, 0), "reqch": (i32, 1, 0),
            "pkey": (i64, 1, 0), "via": (i32, 1, -1),
        }

    def _grow_packets(self, need: int) -> None:
        super()._grow_packets(need)
        cap = 2 * self.m_cap + self.CH * self.V + 16  # pending: requests + deliveries <= packets, wakes <= channels
        if cap > self.ev_cap:
            old = self.ev_cap
            for name in ("ev_next", "ev_item", "ev_aux"):
                new = np.zeros(cap, i32)
                prev = self.a.get(name)
                if prev is not None:
                    new[:old] = prev
                self.a[name] = new
            nxt = self.a["ev_next"]
            nxt[old : cap - 1] = np.arange(old + 1, cap, dtype=i32)
            nxt[cap - 1] = self.scal[10]
            self.scal[10] = old
            self.ev_cap = cap

    def run(self, until: int, stop_on_job: bool = False) -> int:
        return self._call(_cengine.packet_run, until, stop_on_job)

    def wait_graph(self) -> dict[int, list[int]]:
        """As :meth:`PyPacketEngine.wait_graph`, read from the arrays."""
        a, V, H, C = self.a, self.V, self.H, self.C
        edges: dict[int, list[int]] = {}
        waiting = set()
        for ch in range(self.CH):
            pid = int(a["wq_head"][ch])
            while pid >= 0:
                waiting.add(pid)
                pid = int(a["wq_next"][pid])
        for pid in range(self.n_packets):
            rec = int(a["pk_rec"][pid])
            if rec < 0:
                continue
            n = int(a["pk_i"][pid])
            packed = a["hop"][3 * rec * H + 2 :: 3]
            held = [int(x & 0xFFFFFFFF) for x in packed[int(a["rec_rel"][rec]) : n]]
            for x, y in zip(held, held[1:]):
                edges.setdefault(x, []).append(y)
            if pid in waiting and held:
                ch = int(packed[n] >> 32)
                cur = held[-1]
                edges.setdefault(cur, []).extend(self._allowed(cur, ch))
        return edges
