"""Jobs that communicate inside the scheduling simulation: service time emerges from the network."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import topoalloc
from topoalloc.errors import InvalidArgument
from topoalloc.network import NetworkModel
from topoalloc.testing import check_schedule
from topoalloc.workload import Workload
from topoalloc.workload.synthetic import Uniform, poisson_workload


def _w(rows):
    """Jobs (submit, run, size, requested)."""
    return Workload(job_id=np.arange(1, len(rows) + 1), submit=[r[0] for r in rows], run=[r[1] for r in rows],
                    size=[r[2] for r in rows], requested_time=[r[3] for r in rows], source="<test>")


def test_one_job_alone_ends_when_its_last_message_is_delivered():
    w = _w([(0, 999, 4, 1000)])
    r = topoalloc.simulate(w, machine="mesh:4x4", allocator="best_fit:curve=row_major", scheduler="fcfs",
                           network="wormhole", traffic="all-to-all:messages=12", record_allocations=True)
    m = NetworkModel("mesh:4x4")
    m.start_job(0, r.nodes_of(0).tolist(), "all-to-all:messages=12", at=0)
    c = m.next_completion(10**6)[0]
    assert r.end[0] == c.end + 1  # the end of the cycle the last flit is ejected; the trace run time is ignored
    per = r.network["per_job"]
    assert per["comm_time"][0] == c.end + 1 and per["messages"][0] == 12 and per["contention_slowdown"][0] == 1.0
    check_schedule(r)


def test_service_add_computes_after_communicating():
    w = _w([(0, 50, 4, 1000)])
    a = topoalloc.simulate(w, machine="mesh:4x4", allocator="flat", scheduler="fcfs", network="wormhole", traffic="ring:messages=4")
    b = topoalloc.simulate(w, machine="mesh:4x4", allocator="flat", scheduler="fcfs", network="wormhole", traffic="ring:messages=4", service="add")
    assert b.end[0] == a.end[0] + 50
    assert b.service[0] == b.end[0] - b.start[0]


def test_jobs_without_messages_end_at_their_start():
    w = _w([(0, 7, 1, 10), (3, 7, 1, 10)])
    r = topoalloc.simulate(w, machine="mesh:4x4", allocator="flat", scheduler="fcfs", network="wormhole", traffic="all-to-all:messages=5")
    assert r.end.tolist() == [0.0, 3.0]  # one process sends nothing: all-to-all of one has no pairs


def test_contention_lengthens_service_and_shows_in_the_slowdown():
    """Two jobs interleaved column by column on a 1-D line share every link: both slow down."""
    top = topoalloc.topology.parse_machine("mesh:8x1")
    w = _w([(0, 1, 4, 100), (0, 1, 4, 100)])

    class Interleaved(topoalloc.alloc.FlatAllocator):
        def _allocate(self, request):
            free = np.flatnonzero(~self._busy)
            return free[::2][: request.size] if free.size == 8 else free[: request.size]

    r = topoalloc.simulate(w, machine=top, allocator=Interleaved(top), scheduler="fcfs", network="wormhole", traffic="all-to-all:messages=24")
    assert (r.network["per_job"]["contention_slowdown"] > 1).all()
    assert r.summary()["network"]["mean_packet_blocking"] > 0


def test_contention_free_hypercube_allocations_show_no_interjob_blocking():
    """Turner's Theorem 1 (AFL, E-cube): jobs never block each other; their latency equals their latency alone."""
    w = poisson_workload(40, load=2.0, sizes=Uniform(1, 16), machine_nodes=64, mean_runtime=30, estimate_factor=2, seed=4)
    r = topoalloc.simulate(w, machine="hypercube:6", allocator="afl", scheduler="fcfs", network="wormhole:buffers=16", traffic="all-to-all:messages=16")
    per = r.network["per_job"]
    overlap = sum(1 for i in range(len(w)) for j in range(i) if r.start[i] < r.end[j] and r.start[j] < r.end[i])
    assert overlap > 0  # jobs did run together
    sent = per["messages"] > 0
    assert np.allclose(per["contention_slowdown"][sent], 1.0)


@pytest.mark.parametrize("machine,allocator", [("mesh:8x8", "best_fit"), ("mesh:8x8", "flat"), ("torus:4x4x2", "nep"), ("hypercube:5", "free_list"), ("hypercube:5", "afl")])
@pytest.mark.parametrize("sched", ["fcfs", "easy", "conservative"])
def test_every_scheduler_and_family(machine, allocator, sched):
    n = topoalloc.topology.parse_machine(machine).n_nodes
    w = poisson_workload(40, load=0.9, sizes=Uniform(1, n // 2), machine_nodes=n, mean_runtime=60, estimate_factor=2, seed=2)
    r = topoalloc.simulate(w, machine=machine, allocator=allocator, scheduler=sched, network="wormhole", traffic="all-to-all:messages=10", contention=False)
    check_schedule(r)
    assert np.isfinite(r.network["per_job"]["comm_time"]).all()


def test_deterministic_and_in_the_per_job_table():
    w = poisson_workload(60, load=1.2, sizes=Uniform(1, 30), machine_nodes=64, mean_runtime=40, estimate_factor=2, seed=9)
    kw = dict(machine="mesh:8x8", allocator="first_fit", scheduler="easy", network="wormhole:packet=4,buffers=4", traffic="stencil:messages=30")
    a, b = topoalloc.simulate(w, **kw).to_csv(), topoalloc.simulate(w, **kw).to_csv()
    assert a == b and a.splitlines()[0].endswith("comm_time,messages,latency_mean,blocking_mean,hops_mean,contention_slowdown")


def test_bad_combinations():
    with pytest.raises(InvalidArgument, match="flat"):
        topoalloc.simulate(machine="flat:128", network="wormhole")
    with pytest.raises(InvalidArgument, match="run-time model"):
        topoalloc.simulate(machine="mesh:16x8", network="wormhole", runtime_model="locality")
    with pytest.raises(InvalidArgument, match="cycle"):
        topoalloc.simulate(machine="mesh:16x8", network="wormhole", cycle=0.0)


def test_cli(tmp_path):
    p = subprocess.run([sys.executable, "-m", "topoalloc", "simulate", "--machine", "mesh:16x8", "--allocator", "best_fit", "--work-multiple", "0.02",
                        "--network", "wormhole:packet=8,buffers=4", "--traffic", "all-to-all:messages=4", "--json", "--quiet", "--no-contention"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    net = json.loads(p.stdout)["network"]
    assert net["traffic"] == "all-to-all:messages=4,compute=0" and net["mean_packet_latency"] > 0 and net["mean_contention_slowdown"] is None
    p = subprocess.run([sys.executable, "-m", "topoalloc", "simulate", "--network", "wormhole"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "flat:128" in p.stderr
