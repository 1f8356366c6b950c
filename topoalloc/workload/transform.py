"""Workload transforms used by the papers, and the estimate policies.

* :func:`scale_sizes` — Mao/Chen/Watson §4.3 scale NASA and SDSC sizes by 8 or 2
  to fill 1024- and 384-node tori.
* :func:`round_pow2` — the same section rounds sizes up to a power of two.
* :func:`work_multiple` — the same section multiplies every execution time by a
  coefficient c (0.2 to 2.0) to sweep the load.
* :func:`estimates` — the requested time each job is scheduled with.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgument
from .steps import ESTIMATE_POLICIES, REASONS, FilterReport
from .core import Workload

__all__ = ["scale_sizes", "round_pow2", "work_multiple", "estimates", "ESTIMATE_POLICIES"]


def scale_sizes(w: Workload, factor: float) -> tuple[Workload, FilterReport]:
    """Multiply every size by ``factor`` and round up (``ceil``), never below 1.

    Missing sizes stay missing.  With a shape (mesh requests) the shape is
    dropped, since a scaled size has no canonical scaled shape.
    """
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or not factor > 0 or factor != factor:
        raise InvalidArgument("scale_sizes", factor, "a positive factor")
    ok = w.size > 0
    new = np.where(ok, np.maximum(1, np.ceil(w.size * float(factor) - 1e-9)), w.size).astype(np.int64)
    changed = int((new != w.size).sum())
    out = w.replace(size=new, shape=None if factor != 1 else w.shape)
    return out, FilterReport("scale-sizes", f"sizes multiplied by {factor:g}, rounded up", 0, changed)


def round_pow2(w: Workload) -> tuple[Workload, FilterReport]:
    """Round every size up to the next power of two (missing sizes stay missing)."""
    size = w.size
    ok = size > 0
    p = np.ones_like(size)
    p[ok] = 1 << np.ceil(np.log2(size[ok])).astype(np.int64)
    # correct any floating-point error in log2 so that p is the least power >= size
    p[ok] = np.where(p[ok] // 2 >= size[ok], p[ok] // 2, p[ok])
    p[ok] = np.where(p[ok] < size[ok], p[ok] * 2, p[ok])
    new = np.where(ok, p, size)
    changed = new != size
    out = w.replace(size=new, shape=None if changed.any() else w.shape)
    return out, FilterReport("round-pow2", "sizes rounded up to a power of two", 0, int(changed.sum()))


def work_multiple(w: Workload, c: float, *, scale_estimates: bool = True) -> tuple[Workload, FilterReport]:
    """Multiply run times by ``c`` (and, by default, requested times too).

    Mao/Chen/Watson §4.3 multiply "the execution time of each job"; they do
    not say what happens to estimates.  Scaling both (the default) keeps
    each job's estimate accuracy unchanged; ``scale_estimates=False`` keeps
    the logged requests, making estimates relatively tighter for c > 1.
    """
    if not isinstance(c, (int, float)) or isinstance(c, bool) or not c > 0 or c != c:
        raise InvalidArgument("work_multiple", c, "a positive coefficient")
    run = np.where(w.run > 0, w.run * float(c), w.run)
    req = np.where(w.requested_time > 0, w.requested_time * float(c), w.requested_time) if scale_estimates else w.requested_time
    out = w.replace(run=run, requested_time=req)
    what = "run and requested times" if scale_estimates else "run times"
    return out, FilterReport("work-multiple", f"{what} multiplied by {c:g}", 0, int((w.run > 0).sum()))


def estimates(w: Workload, policy: str = "double-runtime") -> tuple[np.ndarray, FilterReport]:
    """The estimate (requested time) the scheduler uses for each job.

    Parameters
    ----------
    policy : {"double-runtime", "exact", "exact-all"}
        For jobs without a requested time (> 0): ``"double-runtime"`` uses
        2 × run time (what SST and PReMAS do), ``"exact"`` the run time
        itself.  ``"exact-all"`` ignores every logged request and gives all
        jobs perfect knowledge.
    """
    if policy not in ESTIMATE_POLICIES:
        raise InvalidArgument("estimate", policy, f"one of {', '.join(ESTIMATE_POLICIES)}")
    run = np.maximum(w.run, 0.0)
    missing = ~(w.requested_time > 0)
    if policy == "exact-all":
        est = run.copy()
        n = len(w)
    else:
        fill = 2.0 * run if policy == "double-runtime" else run
        est = np.where(missing, fill, w.requested_time)
        n = int(missing.sum())
    return est, FilterReport(f"estimate:{policy}", REASONS[f"estimate:{policy}"], 0, n)
