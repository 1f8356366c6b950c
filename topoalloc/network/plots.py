"""Figures (matplotlib, the optional ``plots`` extra): the latency–throughput curve and a link-utilisation map."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..outputs import atomic_output
from ..topology.indirect import RouterNetwork
from ..topology.torus import Torus
from .sim import SweepResult, TrafficResult
from .tables import NetworkTables

__all__ = ["bisection_bound", "plot_latency_throughput", "plot_link_utilization"]


def _pyplot(path: str) -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InvalidArgument("plot", path, "matplotlib installed (pip install 'topoalloc[plots]')") from None
    return plt


def bisection_bound(tables: NetworkTables) -> float:
    """Largest uniform-traffic rate (flits per node per cycle) the bisection carries: ``4 b / N``.

    Half of every node's uniform traffic crosses the cut of the largest
    dimension, ``b`` links each way: ``N/2 · rate/2 <= b``.  A k x k mesh gives ``4/k``.
    """
    return 4 * tables.bisection_links() / tables.n_nodes


def plot_latency_throughput(result: SweepResult, path: str, *, bound: float | None = None) -> str:
    """Mean latency against offered and accepted load, with the saturation point and the bisection bound."""
    plt = _pyplot(path)
    pts = result.points
    offered = [p.offered for p in pts]
    accepted = [p.accepted for p in pts]
    latency = [p.latency_mean for p in pts]
    p99 = [p.latency_p99 for p in pts]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    ax1.plot(offered, latency, "o-", label="mean")
    ax1.plot(offered, p99, "x--", alpha=0.6, label="99th percentile")
    ax1.set_yscale("log")
    ax1.set_xlabel("offered load (flits/node/cycle)")
    ax1.set_ylabel("packet latency (cycles)")
    ax2.plot(offered, accepted, "o-", label="accepted")
    top = max(offered + accepted + ([bound] if bound else [])) * 1.05
    ax2.plot([0, top], [0, top], ":", color="grey", label="accepted = offered")
    ax2.set_xlabel("offered load (flits/node/cycle)")
    ax2.set_ylabel("accepted throughput (flits/node/cycle)")
    for ax in (ax1, ax2):
        if result.saturation_rate is not None:
            ax.axvline(result.saturation_rate, color="red", alpha=0.5, label=f"saturation at {result.saturation_rate:g}")
        if bound:
            ax.axvline(bound, color="black", alpha=0.4, ls="--", label=f"bisection bound {bound:.3g}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    first = pts[0] if pts else None
    if first is not None:
        c = first.config
        fig.suptitle(f"{first.machine}, {first.traffic}: {c.switching}, P={c.packet}, B={c.buffers}, V={c.vcs}, R={c.router_delay}, {c.mode} level")
    fig.tight_layout()
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return path


def plot_link_utilization(result: TrafficResult, tables: NetworkTables, path: str) -> str:
    """Utilisation of every link: on a 2-D grid, each directed link drawn beside its partner; on a router network a
    router x router matrix (blank where no link); otherwise a node x (dimension, direction) matrix."""
    plt = _pyplot(path)
    util = result.link_utilization
    top = tables.topology
    fig, ax = plt.subplots(figsize=(7, 6))
    cmap = plt.get_cmap("viridis")
    vmax = max(float(util.max()) if util.size else 0.0, 1e-9)
    if isinstance(top, Torus) and top.ndim == 2:
        coords = top.coords
        for c in range(tables.n_links):
            u, v, dim, step = int(tables.chan_src[c]), int(tables.chan_dst[c]), int(tables.chan_dim[c]), int(tables.chan_dir[c])
            (x0, y0), (x1, y1) = coords[u], coords[v]
            if tables.chan_wrap[c]:  # a stub leaving the edge
                x1, y1 = (x0 + 0.45 * step, y0) if dim == 0 else (x0, y0 + 0.45 * step)
            off = 0.08 * step
            xs, ys = ((x0, x1), (y0 + off, y1 + off)) if dim == 0 else ((x0 + off, x1 + off), (y0, y1))
            ax.plot(xs, ys, color=cmap(util[c] / vmax), lw=3, solid_capstyle="butt")
        ax.scatter(coords[:, 0], coords[:, 1], s=12, color="black", zorder=3)
        ax.set_aspect("equal")
        ax.set_xlabel("x (dimension 0)")
        ax.set_ylabel("y (dimension 1)")
    elif isinstance(top, RouterNetwork):
        grid = np.full((tables.n_routers, tables.n_routers), np.nan)
        grid[tables.chan_src[: tables.n_links], tables.chan_dst[: tables.n_links]] = util[: tables.n_links]
        ax.imshow(grid, aspect="auto", cmap=cmap, vmin=0, vmax=vmax, interpolation="nearest")
        ax.set_xlabel("to router")
        ax.set_ylabel("from router")
    else:
        dims = sorted({(int(tables.chan_dim[c]), int(tables.chan_dir[c])) for c in range(tables.n_links)})
        col = {k: i for i, k in enumerate(dims)}
        grid = np.full((tables.n_nodes, len(dims)), np.nan)
        for c in range(tables.n_links):
            grid[int(tables.chan_src[c]), col[(int(tables.chan_dim[c]), int(tables.chan_dir[c]))]] = util[c]
        ax.imshow(grid, aspect="auto", cmap=cmap, vmin=0, vmax=vmax, interpolation="nearest")
        ax.set_xticks(range(len(dims)), [f"{d}{'+' if s > 0 else '-'}" for d, s in dims])
        ax.set_xlabel("link (dimension, direction)")
        ax.set_ylabel("node")
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, vmax))
    fig.colorbar(sm, ax=ax, label="flits per cycle")
    ax.set_title(f"link utilisation: {result.machine}, {result.traffic}, rate {result.rate:g} ({result.config.mode} level)")
    fig.tight_layout()
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return path
