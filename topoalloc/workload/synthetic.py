"""Seeded synthetic workloads.

Poisson arrivals, exponential run times and size distributions, for 1-D sizes
and for X×Y mesh requests, as in Turner's thesis ch. 4: "The job interarrival
time and service (execution) times are both assumed to have exponential
distributions ... The interarrival time, service time, X dimension, and Y
dimension, as well as a probability generator used to generate values in the
interval distributions, are all independent."  Each of those is drawn here from
its own child stream of one :class:`numpy.random.SeedSequence`, so changing
one distribution never changes the draws of another.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgument
from ..registry import Registry
from .core import Workload

__all__ = [
    "SizeDistribution",
    "Constant",
    "Uniform",
    "Exponential",
    "Interval",
    "Cycle",
    "poisson_workload",
    "mesh_workload",
    "parse_size_distribution",
    "SIZE_DISTRIBUTIONS",
]


class SizeDistribution:
    """A distribution of positive integers with a known mean."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:  # pragma: no cover - interface
        raise TypeError(f"{type(self).__name__} does not define sample()")

    @property
    def mean(self) -> float:  # pragma: no cover - interface
        raise TypeError(f"{type(self).__name__} does not define mean")

    @property
    def maximum(self) -> int:  # pragma: no cover - interface
        raise TypeError(f"{type(self).__name__} does not define maximum")


def _pos_int(name: str, v: object) -> int:
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
        raise InvalidArgument(name, v, "a positive integer")
    return int(v)


@dataclass(frozen=True)
class Constant(SizeDistribution):
    """Always ``value``."""

    value: int

    def __post_init__(self) -> None:
        _pos_int("value", self.value)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value, dtype=np.int64)

    @property
    def mean(self) -> float:
        return float(self.value)

    @property
    def maximum(self) -> int:
        return self.value


@dataclass(frozen=True)
class Uniform(SizeDistribution):
    """Uniform on the integers ``lo..hi`` (both included)."""

    lo: int
    hi: int

    def __post_init__(self) -> None:
        _pos_int("lo", self.lo)
        _pos_int("hi", self.hi)
        if self.hi < self.lo:
            raise InvalidArgument("hi", self.hi, f"an upper end >= lo={self.lo}")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(self.lo, self.hi + 1, size=n, dtype=np.int64)

    @property
    def mean(self) -> float:
        return (self.lo + self.hi) / 2.0

    @property
    def maximum(self) -> int:
        return self.hi


@dataclass(frozen=True)
class Exponential(SizeDistribution):
    """``ceil`` of an exponential variate with the given ``scale``, truncated to ``1..maximum``.

    Truncation is by rejection (redrawn), so the result is the exponential
    conditioned on landing in range; ``mean`` is that conditional mean,
    computed exactly over the support.
    """

    scale: float
    max_size: int

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise InvalidArgument("scale", self.scale, "a positive mean")
        _pos_int("max_size", self.max_size)

    def _pmf(self) -> np.ndarray:
        k = np.arange(1, self.max_size + 1)
        p = np.exp(-(k - 1) / self.scale) - np.exp(-k / self.scale)
        return p / p.sum()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.choice(np.arange(1, self.max_size + 1), size=n, p=self._pmf()).astype(np.int64)

    @property
    def mean(self) -> float:
        return float(np.dot(np.arange(1, self.max_size + 1), self._pmf()))

    @property
    def maximum(self) -> int:
        return self.max_size


@dataclass(frozen=True)
class Interval(SizeDistribution):
    """Turner's interval distribution: uniform within ranges chosen with given probabilities.

    ``Interval(((1, 8, 0.3), (9, 24, 0.5), (25, 32, 0.2)))`` is the thesis's
    example P[1,8] = 0.3, P[9,24] = 0.5, P[25,32] = 0.2 (ch. 4, Table 4.1).
    The range is chosen first (its own random stream), then a value
    uniformly inside it.
    """

    ranges: tuple[tuple[int, int, float], ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise InvalidArgument("ranges", self.ranges, "at least one (lo, hi, probability)")
        rs = tuple((int(lo), int(hi), float(p)) for lo, hi, p in self.ranges)
        for lo, hi, p in rs:
            Uniform(lo, hi)
            if not 0 <= p <= 1:
                raise InvalidArgument("probability", p, "a value in [0, 1]")
        if abs(sum(p for *_, p in rs) - 1.0) > 1e-9:
            raise InvalidArgument("ranges", self.ranges, "probabilities that sum to 1")
        object.__setattr__(self, "ranges", rs)

    @classmethod
    def bipartite(cls, small: tuple[int, int], large: tuple[int, int], a: float) -> "Interval":
        """P[small] = A, P[large] = 1 − A (Turner, Table 4.1)."""
        return cls(((small[0], small[1], a), (large[0], large[1], 1.0 - a)))

    def sample(self, rng: np.random.Generator, n: int, *, chooser: np.random.Generator | None = None) -> np.ndarray:
        chooser = chooser or rng
        probs = np.array([p for *_, p in self.ranges])
        which = chooser.choice(len(self.ranges), size=n, p=probs)
        lo = np.array([r[0] for r in self.ranges])[which]
        hi = np.array([r[1] for r in self.ranges])[which]
        return (lo + np.floor(rng.random(n) * (hi - lo + 1))).astype(np.int64)

    @property
    def mean(self) -> float:
        return float(sum(p * (lo + hi) / 2.0 for lo, hi, p in self.ranges))

    @property
    def maximum(self) -> int:
        return max(hi for _, hi, p in self.ranges if p > 0)


@dataclass(frozen=True)
class Cycle(SizeDistribution):
    """The values in order, repeated (Turner's constant workload alternates 4×6 and 4×2)."""

    values: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise InvalidArgument("values", self.values, "at least one value")
        object.__setattr__(self, "values", tuple(_pos_int("value", v) for v in self.values))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.resize(np.array(self.values, dtype=np.int64), n)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def maximum(self) -> int:
        return max(self.values)


#: Size distributions by spec name (the package's one spec grammar, :mod:`topoalloc.spec`).
SIZE_DISTRIBUTIONS: Registry[SizeDistribution] = Registry("size distribution")


@SIZE_DISTRIBUTIONS.register("uniform")
def _uniform(low: int, high: int) -> SizeDistribution:
    """uniform:LOW,HIGH — integers uniform on LOW..HIGH."""
    return Uniform(low, high)


@SIZE_DISTRIBUTIONS.register("exp")
def _exp(scale: float, maximum: int) -> SizeDistribution:
    """exp:SCALE,MAX — ceil of an exponential variate of mean SCALE, truncated to 1..MAX."""
    return Exponential(scale, maximum)


@SIZE_DISTRIBUTIONS.register("const")
def _const(value: int) -> SizeDistribution:
    """const:N — always N."""
    return Constant(value)


@SIZE_DISTRIBUTIONS.register("cycle")
def _cycle(*values: int) -> SizeDistribution:
    """cycle:A,B,... — the values in order, repeated."""
    return Cycle(tuple(values))


@SIZE_DISTRIBUTIONS.register("interval")
def _interval(*ranges: str) -> SizeDistribution:
    """interval:LO-HI@P,... — Turner's interval distribution (a range chosen with probability P, then uniform in it)."""
    out = []
    for part in ranges:
        try:
            span, p = part.split("@")
            lo, hi = span.split("-")
            out.append((int(lo), int(hi), float(p)))
        except ValueError:
            raise InvalidArgument("ranges", part, "LO-HI@P, e.g. 1-8@0.3") from None
    return Interval(tuple(out))


def parse_size_distribution(text: str) -> SizeDistribution:
    """A size distribution from its spec: ``uniform:1,32``, ``exp:8,128`` (scale, max), ``const:16``,
    ``cycle:24,8``, ``interval:1-8@0.3,9-24@0.5,25-32@0.2``."""
    return SIZE_DISTRIBUTIONS.create(text, argument="sizes")


def _streams(seed: int | None, k: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(k)]


def _arrival_rate(load: float, mean_size: float, mean_run: float, machine_nodes: int | None, load_definition: str) -> float:
    if not load > 0:
        raise InvalidArgument("load", load, "a positive offered load")
    if load_definition == "machine":
        if machine_nodes is None:
            raise InvalidArgument("machine_nodes", None, "the machine size, needed for load_definition='machine'")
        return load * machine_nodes / (mean_size * mean_run)
    if load_definition == "service":
        return load / mean_run
    raise InvalidArgument("load_definition", load_definition, "'machine' or 'service'")


def poisson_workload(
    n_jobs: int,
    *,
    load: float,
    sizes: SizeDistribution,
    mean_runtime: float = 4.0,
    machine_nodes: int | None = None,
    load_definition: str = "machine",
    estimate_factor: float | None = None,
    seed: int | None = 0,
) -> Workload:
    """Poisson arrivals at a given offered load, exponential run times, sizes from ``sizes``.

    Parameters
    ----------
    load : float
        ``load_definition="machine"``: the offered load ρ = λ·E[size]·E[run] / N
        (the fraction of the machine the jobs ask for; needs
        ``machine_nodes``).  ``"service"``: Turner's "system load
        (service/arrival)", λ·E[run], independent of job size.
    estimate_factor : float, optional
        Requested time = factor × run time; default: no requested time
        (the simulation's estimate policy decides).
    """
    n_jobs = _pos_int("n_jobs", n_jobs)
    if not mean_runtime > 0:
        raise InvalidArgument("mean_runtime", mean_runtime, "a positive mean")
    rate = _arrival_rate(load, sizes.mean, mean_runtime, machine_nodes, load_definition)
    r_arr, r_run, r_size, r_choose = _streams(seed, 4)
    submit = np.cumsum(r_arr.exponential(1.0 / rate, n_jobs))
    run = r_run.exponential(mean_runtime, n_jobs)
    size = sizes.sample(r_size, n_jobs, chooser=r_choose) if isinstance(sizes, Interval) else sizes.sample(r_size, n_jobs)
    req = run * estimate_factor if estimate_factor else np.full(n_jobs, -1.0)
    return Workload(
        job_id=np.arange(1, n_jobs + 1),
        submit=submit,
        run=run,
        size=size,
        requested_time=req,
        header={"MaxProcs": str(machine_nodes)} if machine_nodes else {},
        source=f"poisson(n={n_jobs}, load={load:g} [{load_definition}], sizes={sizes}, mean_runtime={mean_runtime:g}, seed={seed})",
    )


def mesh_workload(
    n_jobs: int,
    *,
    load: float,
    x: SizeDistribution,
    y: SizeDistribution | None = None,
    square: bool = False,
    mean_runtime: float = 4.0,
    machine_nodes: int | None = None,
    load_definition: str = "service",
    seed: int | None = 0,
) -> Workload:
    """X×Y mesh requests (Turner ch. 4): sides drawn independently; ``square`` uses X for both.

    With ``Cycle`` distributions for X and Y, ``x=Cycle((4, 4)), y=Cycle((6, 2))``
    gives the thesis's constant workload 4×6, 4×2, 4×6, ...
    """
    n_jobs = _pos_int("n_jobs", n_jobs)
    y = x if y is None else y
    r_arr, r_run, r_x, r_y, r_cx, r_cy = _streams(seed, 6)

    def draw(dist: SizeDistribution, r: np.random.Generator, c: np.random.Generator) -> np.ndarray:
        return dist.sample(r, n_jobs, chooser=c) if isinstance(dist, Interval) else dist.sample(r, n_jobs)

    xs = draw(x, r_x, r_cx)
    ys = xs.copy() if square else draw(y, r_y, r_cy)
    mean_size = float(np.mean([a * b for a in [x.mean] for b in [x.mean if square else y.mean]]))
    if square and not isinstance(x, (Constant, Cycle)):
        # E[X^2] for a square request, computed from a large fixed sample of the distribution
        probe = draw(x, np.random.default_rng(12345), np.random.default_rng(54321)).astype(float)
        mean_size = float(np.mean(probe**2)) if n_jobs >= 1000 else mean_size
    rate = _arrival_rate(load, mean_size, mean_runtime, machine_nodes, load_definition)
    submit = np.cumsum(r_arr.exponential(1.0 / rate, n_jobs))
    run = r_run.exponential(mean_runtime, n_jobs)
    shape = np.stack([xs, ys], axis=1)
    return Workload(
        job_id=np.arange(1, n_jobs + 1),
        submit=submit,
        run=run,
        size=xs * ys,
        requested_time=np.full(n_jobs, -1.0),
        shape=shape,
        header={"MaxProcs": str(machine_nodes)} if machine_nodes else {},
        source=f"mesh(n={n_jobs}, load={load:g} [{load_definition}], x={x}, y={'x' if square else y}, seed={seed})",
    )
