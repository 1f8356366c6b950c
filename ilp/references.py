"""Reference orderings (the curve allocators' curves) used as warm starts and baselines.

Taken from :mod:`topoalloc.curves`, the same maps the curve allocators use:
row-major, snake, Hilbert and Z-order on meshes and tori, the Gray code on
any machine of 2^k nodes (hypercubes).
"""

from __future__ import annotations

from topoalloc.curves import grid

__all__ = ["reference_orderings"]


def reference_orderings(mg) -> dict[str, tuple[int, ...]]:
    """Name -> node ids in rank order, for the curves that apply to ``mg``."""
    out: dict[str, tuple[int, ...]] = {}
    dims = mg.dims
    if dims is not None:
        out["row_major"] = tuple(int(v) for v in grid.row_major(dims))
        for name in ("snake", "hilbert", "zorder"):
            try:
                out[name] = tuple(int(v) for v in getattr(grid, name)(dims))
            except Exception:  # noqa: BLE001 - a curve that does not apply to these sides
                continue
    n = mg.n
    if n & (n - 1) == 0 and n > 1 and mg.name.startswith("hypercube"):
        out["gray"] = tuple(int(v) for v in grid.gray(n))
    return out
