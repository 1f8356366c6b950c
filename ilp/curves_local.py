"""Reference orderings used as warm starts and as comparison baselines.

Row-major, snake (boustrophedon) and Hilbert orders of 2-D grids and the
binary-reflected Gray code of a hypercube, each as a tuple of node ids in rank
order.  Node ids follow the topology convention: first dimension fastest,
``node = x + X*y``.  These are small, self-contained maps so that the solvers
do not depend on the curve allocators; the benchmark compares against them.
"""

from __future__ import annotations

from topoalloc.errors import InvalidArgument

__all__ = ["row_major", "snake", "hilbert", "gray", "reference_orderings"]


def row_major(X: int, Y: int) -> tuple[int, ...]:
    """Rows of X nodes, left to right, bottom row first."""
    return tuple(range(X * Y))


def snake(X: int, Y: int) -> tuple[int, ...]:
    """Boustrophedon: even rows left to right, odd rows right to left."""
    out = []
    for y in range(Y):
        xs = range(X) if y % 2 == 0 else range(X - 1, -1, -1)
        out.extend(x + X * y for x in xs)
    return tuple(out)


def _hilbert_xy(side: int, d: int) -> tuple[int, int]:
    x = y = 0
    s = 1
    t = d
    while s < side:
        rx = 1 & (t // 2)
        ry = 1 & (t ^ rx)
        if ry == 0:
            if rx == 1:
                x, y = s - 1 - x, s - 1 - y
            x, y = y, x
        x += s * rx
        y += s * ry
        t //= 4
        s *= 2
    return x, y


def hilbert(X: int, Y: int) -> tuple[int, ...]:
    """The Hilbert curve of a square grid whose side is a power of two."""
    if X != Y or X < 1 or X & (X - 1):
        raise InvalidArgument("grid", (X, Y), "a square grid with a power-of-two side for the Hilbert curve")
    out = []
    for d in range(X * Y):
        x, y = _hilbert_xy(X, d)
        out.append(x + X * y)
    return tuple(out)


def gray(dim: int) -> tuple[int, ...]:
    """Binary-reflected Gray code: consecutive addresses differ in one bit (a Hamiltonian path of Q_dim)."""
    return tuple(i ^ (i >> 1) for i in range(1 << dim))


def reference_orderings(mg) -> dict[str, tuple[int, ...]]:
    """The reference orderings that apply to a machine graph (may be empty)."""
    out: dict[str, tuple[int, ...]] = {}
    dims = mg.dims
    if dims is not None and len(dims) == 2:
        X, Y = dims
        out["row-major"] = row_major(X, Y)
        out["snake"] = snake(X, Y)
        if X == Y and X & (X - 1) == 0:
            out["hilbert"] = hilbert(X, Y)
    elif dims is not None and len(dims) == 1:
        out["row-major"] = tuple(range(dims[0]))
    if mg.name.startswith("hypercube:"):
        out["gray"] = gray(mg.n.bit_length() - 1)
    return out
