"""Blocks per job and internal fragmentation: pure functions of a :class:`SimulationResult`.

Mean blocks per job (MBPJ, Bani-Ahmad's Fig. 1 and 9) counts the allocator's
*own* blocks — the sub-frames of ANCA and PALD, MBS's buddies, Paging's
pages, Random's single processors, one for a contiguous submesh — recorded by
the simulation from ``Allocation.info["blocks"]`` (``result.blocks``), not the
connected components of the allocation (those are a locality metric,
:mod:`topoalloc.metrics.locality`): two pages side by side are two blocks.

Internal fragmentation is the processors granted but not asked for (a 2-D
Buddy's rounded square, Paging's last page, a padded frame, a subtorus's power
of two): per job ``allocated − requested``, and as a share of the processor
time held.

Examples
--------
>>> import topoalloc
>>> from topoalloc.workload.synthetic import Exponential, mesh_workload
>>> w = mesh_workload(200, load=0.5, x=Exponential(3, 8), machine_nodes=64, load_definition="machine", seed=1)
>>> r = topoalloc.simulate(w, machine="mesh:8x8", allocator="paging:page_index=1", scheduler="fcfs")
>>> s = block_summary(r)
>>> s["mean_blocks_per_job"] > 1, 0 < s["internal_fragmentation"]["share_of_allocated_time"] < 1
(True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..sched.result import SimulationResult

__all__ = ["blocks_per_job", "mean_blocks_per_job", "internal_fragmentation", "block_summary"]


def blocks_per_job(result: "SimulationResult") -> np.ndarray:
    """Each job's block count (float; NaN where the allocation recorded no blocks)."""
    if result.blocks is None:
        return np.full(len(result), np.nan)
    b = result.blocks.astype(float)
    b[result.blocks < 0] = np.nan
    return b


def mean_blocks_per_job(result: "SimulationResult") -> float:
    """Mean of the recorded block counts (NaN if none was recorded)."""
    b = blocks_per_job(result)
    ok = np.isfinite(b)
    return float(b[ok].mean()) if ok.any() else float("nan")


def internal_fragmentation(result: "SimulationResult") -> dict[str, float]:
    """Processors granted but not requested.

    Returns
    -------
    dict
        ``mean_per_job`` — mean of ``allocated − requested``;
        ``share_of_jobs`` — fraction of jobs granted more than they asked;
        ``share_of_allocated_time`` — Σ (allocated − requested)·service / Σ allocated·service.
    """
    extra = (result.allocated_size - result.size).astype(float)
    service = np.asarray(result.service, dtype=float)
    held = float(np.dot(result.allocated_size.astype(float), service))
    return {
        "mean_per_job": float(extra.mean()) if extra.size else 0.0,
        "share_of_jobs": float((extra > 0).mean()) if extra.size else 0.0,
        "share_of_allocated_time": float(np.dot(extra, service)) / held if held > 0 else 0.0,
    }


def block_summary(result: "SimulationResult") -> dict[str, Any]:
    """``mean_blocks_per_job`` (when blocks were recorded) and ``internal_fragmentation``."""
    out: dict[str, Any] = {}
    if result.blocks is not None:
        out["mean_blocks_per_job"] = mean_blocks_per_job(result)
    out["internal_fragmentation"] = internal_fragmentation(result)
    return out
