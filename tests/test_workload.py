"""Filters, transforms, estimate policies and synthetic generators."""

from __future__ import annotations

import numpy as np
import pytest

from topoalloc.api import PIPELINE_ORDER, prepare_workload
from topoalloc.errors import UnknownName, InvalidArgument
from topoalloc.workload import Workload
from topoalloc.workload.clean import FILTERS, STANDARD_CLEAN, apply_filter
from topoalloc.workload.synthetic import (
    Constant,
    Cycle,
    Exponential,
    Interval,
    Uniform,
    mesh_workload,
    parse_size_distribution,
    poisson_workload,
)
from topoalloc.workload.transform import estimates, round_pow2, scale_sizes, work_multiple


def wl(**cols):
    n = len(cols["size"])
    base = dict(job_id=np.arange(1, n + 1), submit=np.arange(n), run=[10] * n, requested_time=[-1] * n)
    base.update(cols)
    return Workload(**base, line=np.arange(10, 10 + n), source="x.swf")


def test_drop_wider_reports():
    w, rep = apply_filter("drop-wider", wl(size=[1, 9, 8, 20]), 8)
    assert w.size.tolist() == [1, 8] and rep.removed == 2
    assert rep.examples == ("job 2 line 11", "job 4 line 13")
    assert str(rep).startswith("drop-wider: removed 2 jobs of 'x.swf'") and str(rep).count("x.swf") == 1


def test_reports_say_what_happened_to_how_many_jobs():
    _, rep = apply_filter("drop-wider", wl(size=[1, 2]), 8)
    assert str(rep) == "drop-wider: removed 0 jobs of 'x.swf' — size > 8 processors of the machine"
    _, rep = apply_filter("drop-wider", wl(size=[1, 9]), 8)
    assert str(rep).startswith("drop-wider: removed 1 job of 'x.swf' — ")
    _, rep = apply_filter("cap-runtime", wl(size=[1], requested_time=[5]), 8)
    assert str(rep).startswith("cap-runtime: changed 1 job of 'x.swf' — ")
    _, rep = apply_filter("cap-runtime", wl(size=[1], requested_time=[50]), 8)
    assert str(rep).startswith("cap-runtime: changed 0 jobs of 'x.swf' — ")


def test_drop_nonpositive_runtime():
    w, rep = apply_filter("drop-nonpositive-runtime", wl(size=[1, 1, 1], run=[0, -1, 5]), 8)
    assert w.run.tolist() == [5] and rep.removed == 2


def test_cap_runtime():
    w, rep = apply_filter("cap-runtime", wl(size=[1, 1, 1], run=[30, 30, 30], requested_time=[20, -1, 40]), 8)
    assert w.run.tolist() == [20, 30, 30] and rep.changed == 1 and rep.removed == 0


def test_drop_no_size():
    w, rep = apply_filter("drop-no-size", wl(size=[-1, 3]), 8)
    assert w.size.tolist() == [3] and rep.removed == 1


def test_fill_size():
    raw = np.full((3, 18), -1.0)
    raw[:, 4] = [4, -1, -1]  # allocated
    raw[:, 7] = [-1, 6, -1]  # requested
    w = Workload(job_id=[1, 2, 3], submit=[0, 1, 2], run=[1, 1, 1], size=[4, 6, -1], requested_time=[-1] * 3, swf=raw)
    out, rep = apply_filter("fill-size", w, 8)
    assert rep.changed == 2
    assert out.swf[:, 7].tolist() == [4, 6, -1] and out.swf[:, 4].tolist() == [4, 6, -1]


def test_unknown_filter():
    with pytest.raises(InvalidArgument, match="filter='nope'"):
        apply_filter("nope", wl(size=[1]), 8)


def test_standard_clean_is_named_filters():
    assert set(STANDARD_CLEAN) <= set(FILTERS)
    assert {"drop-wider", "drop-nonpositive-runtime", "cap-runtime"} <= set(STANDARD_CLEAN)


def test_pipeline_order_and_no_drop_without_clean():
    w = wl(size=[1, 9, 3], run=[0, 10, 50], requested_time=[5, 5, 20])
    out, est, reps = prepare_workload(w, 8)
    assert len(out) == 3 and [r.name for r in reps] == ["estimate:double-runtime"]
    out, est, reps = prepare_workload(w, 8, clean=True, scale_sizes=2, round_pow2=True)
    names = [r.name for r in reps]
    assert names == [n for n in PIPELINE_ORDER if n in {"scale-sizes", "round-pow2", *STANDARD_CLEAN}] + ["estimate:double-runtime"]
    # sizes 1,9,3 -> 2,18,6 -> 2,32,8; 32 > 8 dropped; run 0 dropped; cap 50 -> 20
    assert out.size.tolist() == [8] and out.run.tolist() == [20]


def test_estimate_policies():
    w = wl(size=[1, 1], run=[10, 30], requested_time=[-1, 40])
    assert estimates(w, "double-runtime")[0].tolist() == [20, 40]
    assert estimates(w, "exact")[0].tolist() == [10, 40]
    assert estimates(w, "exact-all")[0].tolist() == [10, 30]
    with pytest.raises(InvalidArgument):
        estimates(w, "triple")


def test_transforms():
    w = wl(size=[1, 3, 5, 8, -1])
    assert scale_sizes(w, 2)[0].size.tolist() == [2, 6, 10, 16, -1]
    assert scale_sizes(w, 0.5)[0].size.tolist() == [1, 2, 3, 4, -1]
    assert round_pow2(w)[0].size.tolist() == [1, 4, 8, 8, -1]
    big = wl(size=[2**40 + 1, 2**40, 3, 1023, 1025])
    assert round_pow2(big)[0].size.tolist() == [2**41, 2**40, 4, 1024, 2048]
    w2, rep = work_multiple(wl(size=[1, 1], run=[10, -1], requested_time=[20, 5]), 1.5)
    assert w2.run.tolist() == [15, -1] and w2.requested_time.tolist() == [30, 7.5]
    w3, _ = work_multiple(wl(size=[1], run=[10], requested_time=[20]), 2, scale_estimates=False)
    assert w3.requested_time.tolist() == [20]
    for bad in (0, -1, float("nan")):
        with pytest.raises(InvalidArgument):
            scale_sizes(w, bad)


def test_workload_sorted_by_submit_stable():
    w = Workload(job_id=[1, 2, 3], submit=[5, 1, 1], run=[1, 1, 1], size=[1, 2, 3], requested_time=[-1] * 3)
    assert w.job_id.tolist() == [2, 3, 1]


# ------------------------------------------------------------- synthetic
def test_poisson_load_and_seed():
    a = poisson_workload(20000, load=0.7, sizes=Uniform(1, 32), machine_nodes=128, mean_runtime=100, seed=3)
    b = poisson_workload(20000, load=0.7, sizes=Uniform(1, 32), machine_nodes=128, mean_runtime=100, seed=3)
    assert np.array_equal(a.submit, b.submit) and np.array_equal(a.size, b.size)
    offered = float(np.dot(a.size, a.run)) / (128 * (a.submit[-1] - a.submit[0]))
    assert abs(offered - 0.7) < 0.05
    c = poisson_workload(200, load=0.7, sizes=Uniform(1, 32), machine_nodes=128, seed=4)
    assert not np.array_equal(a.submit[:200], c.submit)


def test_service_load_definition():
    w = poisson_workload(20000, load=2.0, sizes=Constant(4), load_definition="service", mean_runtime=4.0, seed=1)
    rate = (len(w) - 1) / (w.submit[-1] - w.submit[0])
    assert abs(rate * 4.0 - 2.0) < 0.1


def test_streams_independent():
    """Changing the size distribution does not change arrivals or run times (separate streams)."""
    a = poisson_workload(100, load=0.5, sizes=Uniform(1, 8), machine_nodes=64, seed=9)
    b = poisson_workload(100, load=0.5, sizes=Uniform(1, 8), machine_nodes=64, seed=9)
    assert np.array_equal(a.run, b.run)
    c = mesh_workload(100, load=1.0, x=Uniform(1, 16), seed=9)
    d = mesh_workload(100, load=1.0, x=Uniform(1, 16), y=Uniform(1, 4), seed=9)
    assert np.array_equal(c.shape[:, 0], d.shape[:, 0])
    assert np.array_equal(c.run, d.run)


def test_interval_distribution():
    dist = Interval.bipartite((1, 8), (25, 32), 0.3)
    rng = np.random.default_rng(0)
    v = dist.sample(rng, 20000)
    assert set(np.unique(v)) <= set(range(1, 9)) | set(range(25, 33))
    assert abs((v <= 8).mean() - 0.3) < 0.02
    assert abs(v.mean() - dist.mean) < 0.3
    with pytest.raises(InvalidArgument):
        Interval(((1, 8, 0.5), (9, 16, 0.4)))


def test_exponential_and_parse():
    d = Exponential(8.0, 64)
    v = d.sample(np.random.default_rng(1), 50000)
    assert v.min() >= 1 and v.max() <= 64 and abs(v.mean() - d.mean) < 0.2
    assert parse_size_distribution("uniform:1,32") == Uniform(1, 32)
    assert parse_size_distribution("interval:1-8@0.3,9-24@0.5,25-32@0.2").ranges[1] == (9, 24, 0.5)
    assert parse_size_distribution("cycle:24,8") == Cycle((24, 8))
    with pytest.raises(UnknownName, match="unknown size distribution 'gauss'"):
        parse_size_distribution("gauss:3")
    with pytest.raises(InvalidArgument, match="sizes='uniform:1-32'"):
        parse_size_distribution("uniform:1-32")


def test_mesh_constant_workload():
    w = mesh_workload(6, load=1.0, x=Cycle((4, 4)), y=Cycle((6, 2)), seed=0)
    assert w.shape.tolist() == [[4, 6], [4, 2]] * 3
    assert w.size.tolist() == [24, 8] * 3
    assert w[0].shape == (4, 6)
