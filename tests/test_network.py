"""Golden facts of the network simulator: routes, idle latency, arbitration, throughput, deadlock, determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topoalloc.errors import InvalidArgument, NetworkDeadlock
from topoalloc.network import Network, NetworkConfig, network_tables, run_traffic, zero_load_latency
from topoalloc.network.engine import compiled_available, hop_classes, uses_dateline
from topoalloc.network.traffic import TRAFFIC, bernoulli_packets, make_traffic
from topoalloc.topology import parse_machine

ENGINES = ["python"] + (["c"] if compiled_available() else [])
MODES = ["flit", "packet"]
MACHINES = ["mesh:4x4", "mesh:3x5", "torus:4x4", "torus:5x2", "torus:2x3x4", "mesh:2x2x3", "hypercube:4"]


def single_packets(spec, pairs, cfg, gap=200):
    """Send each (src, dst) alone (one every `gap` cycles); returns the network and its results."""
    net = Network(spec, cfg)
    pairs = list(pairs)
    net.add_packets([i * gap for i in range(len(pairs))], [s for s, _ in pairs], [d for _, d in pairs])
    net.run(len(pairs) * gap + gap)
    return net, net.results()


# ------------------------------------------------------------------- routing
@pytest.mark.parametrize("spec", MACHINES + ["torus:4x4,wrap=10", "mesh:6", "torus:6"])
def test_route_table_is_topology_route(spec):
    top = parse_machine(spec)
    t = network_tables(top)
    for s in range(top.n_nodes):
        for d in range(top.n_nodes):
            assert t.route_nodes(s, d) == top.route(s, d)
            assert t.hops[s, d] == top.distance(s, d)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec", ["mesh:3x4", "torus:4x3", "hypercube:3", "dragonfly:p=2,a=3,h=1", "fattree:k=2,n=3"])
def test_packets_take_topology_route(spec, mode, engine):
    """The flits of a lone packet cross exactly the channels of Topology.route (a router network's
    RouterNetwork.router_route), P flits each, and its own injection and ejection channels."""
    top = parse_machine(spec)
    t = network_tables(top)
    cfg = NetworkConfig(packet=3, engine=engine, mode=mode)
    for s in range(top.n_nodes):
        for d in range(0, top.n_nodes, 3):
            net = Network(top, cfg)
            net.set_window(0, 10**6)
            net.add_packets([0], [s], [d])
            net.run(200)
            used = np.flatnonzero(net.link_flits[: t.n_links])
            assert np.flatnonzero(net.link_flits[t.n_links :]).tolist() == [s, top.n_nodes + d]
            route = top.router_route(s, d) if hasattr(top, "router_route") else top.route(s, d)
            want = sorted(t.hop_channel(a, b) for a, b in zip(route, route[1:]))
            assert used.tolist() == want
            assert (net.link_flits[used] == 3).all()
            assert int(net.results()["hops"][0]) == len(route) - 1


def test_dateline_classes_are_the_vcs_the_engine_uses():
    """On a torus with 2 VCs, every header enters the VC class hop_classes (and the proof) says."""
    top = parse_machine("torus:5x4")
    t = network_tables(top)
    cfg = NetworkConfig(vcs=2, engine="python")
    assert uses_dateline(top, cfg)
    net = Network(top, cfg)
    pairs = [(s, d) for s in range(top.n_nodes) for d in range(top.n_nodes)]
    net._engine.trace = []
    net.add_packets([i * 60 for i in range(len(pairs))], [s for s, _ in pairs], [d for _, d in pairs])
    net.run(len(pairs) * 60 + 60)
    seen: dict[int, list[int]] = {}
    for pid, q, _ in net._engine.trace:
        seen.setdefault(pid, []).append(q)
    for pid, (s, d) in enumerate(pairs):
        vcs = seen[pid][1:-1]  # links only
        chans = t.route_channels(s, d)[1:-1]
        assert [q // 2 for q in vcs] == chans
        assert [q % 2 for q in vcs] == hop_classes(t, chans, True)


# ----------------------------------------------------------- idle latency
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("switching,P,B,R", [("wormhole", 8, 16, 1), ("wormhole", 5, 4, 2), ("wormhole", 1, 1, 0), ("vct", 4, 4, 1), ("saf", 4, 6, 3)])
@pytest.mark.parametrize("spec,pattern", [("mesh:4x4", p) for p in ("uniform", "transpose", "bit-complement", "bit-reverse", "shuffle", "tornado", "neighbour", "hotspot")] + [("torus:4x4", "tornado"), ("hypercube:4", "bit-reverse"), ("mesh:3x5", "neighbour")])
def test_idle_latency_formula(spec, pattern, switching, P, B, R, mode, engine):
    """Alone on the network a packet over h links takes (h+1)(R+1)+P-1 cycles ((h+1)(R+P)+P-1 store-and-forward).

    Buffers of at least R + 2 flits cover the credit round trip, so the body follows the header
    one flit per cycle (smaller buffers: test_small_buffers_throttle_the_body).
    """
    top = parse_machine(spec)
    pat = make_traffic(pattern, top)
    src = np.arange(top.n_nodes)
    dst = pat.destinations(src, np.random.default_rng(0))
    cfg = NetworkConfig(packet=P, buffers=B, router_delay=R, switching=switching, mode=mode, engine=engine, vcs=2 if spec.startswith("torus") else 1)
    _, r = single_packets(top, zip(src.tolist(), dst.tolist()), cfg)
    h = network_tables(top).hops[src, dst]
    want = (h + 1) * (R + P) + P - 1 if switching == "saf" else (h + 1) * (R + 1) + P - 1
    assert r["latency"].tolist() == want.tolist()
    assert (r["blocking"] == 0).all()
    assert r["hops"].tolist() == h.tolist()
    assert [zero_load_latency(x, cfg) for x in h.tolist()] == want.tolist()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("P,R", [(4, 1), (5, 2), (3, 0)])
def test_small_buffers_throttle_the_body(P, R, engine):
    """With one-flit buffers a slot is refilled R + 2 cycles after it was filled (credit round trip):
    the tail arrives (P - 1)(R + 2) cycles after the header instead of P - 1."""
    for h in (0, 1, 3):
        _, r = single_packets("mesh:5", [(0, h)], NetworkConfig(packet=P, buffers=1, router_delay=R, engine=engine))
        assert int(r["latency"][0]) == (h + 1) * (R + 1) + (P - 1) * (R + 2)


# ------------------------------------------------ contention and arbitration
def disjoint_batch(top, rng, k):
    """Up to k (src, dst) pairs whose routes (injection and ejection included) share no channel."""
    t = network_tables(top)
    used: set[int] = set()
    out = []
    for _ in range(20 * k):
        s, d = (int(x) for x in rng.integers(0, top.n_nodes, 2))
        chans = set(t.route_channels(s, d))
        if chans & used:
            continue
        used |= chans
        out.append((s, d))
        if len(out) == k:
            break
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spec", ["mesh:8x8", "torus:6x6", "hypercube:6"])
def test_disjoint_routes_never_delay_each_other(spec, mode, engine):
    top = parse_machine(spec)
    rng = np.random.default_rng(7)
    cfg = NetworkConfig(packet=6, buffers=3, engine=engine, mode=mode, vcs=2 if spec.startswith("torus") else 1)
    for _ in range(5):
        pairs = disjoint_batch(top, rng, 12)
        net = Network(top, cfg)
        net.add_packets([0] * len(pairs), [s for s, _ in pairs], [d for _, d in pairs])
        net.run(300)
        r = net.results()
        h = network_tables(top).hops[[s for s, _ in pairs], [d for _, d in pairs]]
        assert r["latency"].tolist() == ((h + 1) * 2 + 5).tolist()
        assert (r["blocking"] == 0).all()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("vcs", [1, 2])
def test_shared_channel_serializes_oldest_first(vcs, engine):
    """Two headers want the same output in the same cycle: the older packet goes, the other waits exactly P cycles.

    On mesh:5x1, packets 1->2 and 3->2 created in the same cycle reach router 2 together and both
    need its ejection channel (one flit per cycle; with one VC also held head to tail).  The lower
    packet id wins the tie; a packet created earlier wins whatever its id.
    """
    P = 6
    cfg = NetworkConfig(packet=P, vcs=vcs, engine=engine)
    idle = 2 * 2 + P - 1
    net = Network("mesh:5", cfg)
    net.add_packets([0, 0], [1, 3], [2, 2])
    net.run(100)
    r = net.results()
    assert r["latency"].tolist() == [idle, idle + P]
    assert r["blocking"].tolist() == [0, P]
    # the same conflict with the second packet created one cycle earlier and sent one hop further away
    net = Network("mesh:5", cfg)
    net.add_packets([2, 0], [1, 4], [2, 2])  # 4 -> 2: two links; header at router 2 in cycle 6, as 1 -> 2's
    net.run(100)
    r = net.results()
    assert r["latency"].tolist() == [idle + P, 3 * 2 + P - 1]
    assert r["blocking"].tolist() == [P, 0]


@pytest.mark.parametrize("engine", ENGINES)
def test_packet_level_serializes_like_flit_level_with_one_vc(engine):
    cfg = NetworkConfig(packet=6, mode="packet", engine=engine)
    net = Network("mesh:5", cfg)
    net.add_packets([0, 0], [1, 3], [2, 2])
    net.run(100)
    assert net.results()["latency"].tolist() == [9, 15]


def test_source_queue_sends_packets_in_order():
    net = Network("mesh:3", NetworkConfig(packet=4, engine="python"))
    net.add_packets([0, 0, 0], [0, 0, 0], [2, 1, 2])
    net.run(100)
    r = net.results()
    assert r["t_inject"].tolist() == [0, 4, 8]


# ---------------------------------------------------- throughput facts
def test_uniform_mean_hops_on_kxk_mesh():
    """Over all ordered pairs s != d of a k x k mesh the mean route is 2(k^2-1)/(3k) * k^2/(k^2-1) = 2k/3 links."""
    for k in range(2, 9):
        t = network_tables(parse_machine(f"mesh:{k}x{k}"))
        n = k * k
        mean = t.hops.sum() / (n * (n - 1))
        assert mean == pytest.approx(2 * (k * k - 1) / (3 * k) * k * k / (k * k - 1))
        assert mean == pytest.approx(2 * k / 3)
    r = run_traffic("mesh:8x8", "uniform", 0.1, cycles=4000, seed=3)
    assert abs(r.hops_mean - 16 / 3) < 0.1


@pytest.mark.parametrize("mode", MODES)
def test_accepted_equals_offered_below_saturation_and_bisection_bound(mode):
    k = 8
    cfg = NetworkConfig(mode=mode)
    for rate in (0.05, 0.15):
        r = run_traffic(f"mesh:{k}x{k}", "uniform", rate, config=cfg, cycles=4000, seed=1)
        assert not r.saturated and r.undelivered == 0
        assert abs(r.accepted - r.offered) < 0.01
    r = run_traffic(f"mesh:{k}x{k}", "uniform", 0.9, config=cfg, cycles=3000, drain=200, seed=1)
    assert r.saturated
    assert r.accepted <= 4 / k
    assert r.offered > 4 / k


# ------------------------------------------------------------- deadlock
@pytest.mark.parametrize("engine", ENGINES)
def test_torus_without_dateline_deadlocks_and_says_where(engine):
    cfg = NetworkConfig(vcs=1, buffers=2, deadlock_cycles=100, engine=engine)
    with pytest.raises(NetworkDeadlock) as info:
        run_traffic("torus:4x4", "uniform", 0.7, config=cfg, cycles=3000, seed=2)
    err = info.value
    assert len(err.channels) >= 2 and err.idle == 100
    text = str(err)
    assert text.startswith("network deadlock at cycle") and "waiting channels" in text
    assert any("wrap" in c for c in err.channels)  # a ring's cycle crosses its wrap-around link


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", MODES)
def test_dateline_vcs_keep_the_torus_running(mode, engine):
    cfg = NetworkConfig(vcs=2, buffers=2, deadlock_cycles=100, engine=engine, mode=mode)
    r = run_traffic("torus:4x4", "uniform", 0.7, config=cfg, cycles=3000, drain=500, seed=2)
    assert r.accepted > 0.3


@pytest.mark.parametrize("engine", ENGINES)
def test_packet_level_deadlock_is_reported(engine):
    cfg = NetworkConfig(vcs=1, buffers=2, deadlock_cycles=100, engine=engine, mode="packet")
    with pytest.raises(NetworkDeadlock) as info:
        run_traffic("torus:4x4", "uniform", 0.9, config=cfg, cycles=6000, seed=5)
    assert len(info.value.channels) >= 2


# ------------------------------------------------------ determinism and errors
def test_same_seed_same_bytes():
    a = json.dumps(run_traffic("mesh:4x4", "hotspot", 0.3, cycles=1500, seed=9).summary())
    b = json.dumps(run_traffic("mesh:4x4", "hotspot", 0.3, cycles=1500, seed=9).summary())
    c = json.dumps(run_traffic("mesh:4x4", "hotspot", 0.3, cycles=1500, seed=10).summary())
    assert a == b and a != c


@pytest.mark.skipif(not compiled_available(), reason="compiled engine not built")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "spec,traffic,rate,opts",
    [
        ("mesh:6x6", "uniform", 0.35, {}),
        ("mesh:6x6", "transpose", 0.5, {"buffers": 3, "packet": 5}),
        ("torus:5x4", "uniform", 0.5, {"vcs": 3, "buffers": 2, "router_delay": 2}),
        ("torus:4x4", "tornado", 0.6, {"vcs": 2, "buffers": 8, "switching": "vct", "packet": 4}),
        ("hypercube:5", "bit-complement", 0.4, {"vcs": 2, "buffers": 4, "switching": "saf", "packet": 3}),
        ("mesh:3x3x3", "hotspot:fraction=0.3", 0.3, {"vcs": 2, "buffers": 1, "packet": 3, "router_delay": 0}),
    ],
)
def test_compiled_engine_equals_reference(spec, traffic, rate, opts, mode):
    """Same inputs, same per-packet results and the same summary bytes from the C and the Python engine."""
    out = []
    for engine in ("python", "c"):
        cfg = NetworkConfig(engine=engine, mode=mode, **opts)
        res = run_traffic(spec, traffic, rate, config=cfg, cycles=1500, drain=800, seed=4)
        top = parse_machine(spec)
        net = Network(top, cfg)
        c, s, d = bernoulli_packets(make_traffic(traffic, top), rate, cfg.packet, 0, 600, np.random.default_rng(5))
        j = net.new_job()
        net.add_packets(c, s, d, np.where(np.arange(c.size) % 2 == 0, j, -1))
        stops = []
        while net.now < 3000:  # stop at the job's completion, then go on
            net.run(3000, stop_on_job=True)
            stops.append(net.now)
        out.append((json.dumps(res.summary()), {k: v.tolist() for k, v in net.results().items()}, stops, net.pop_completed()))
    assert out[0] == out[1]


def test_packet_level_error_is_small_at_low_load():
    a = run_traffic("mesh:8x8", "uniform", 0.05, cycles=4000, seed=1)
    b = run_traffic("mesh:8x8", "uniform", 0.05, config=NetworkConfig(mode="packet"), cycles=4000, seed=1)
    assert abs(a.latency_mean - b.latency_mean) / a.latency_mean < 0.03
    assert a.offered == b.offered


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"packet": 0}, "packet"),
        ({"buffers": 2, "switching": "vct"}, "buffers"),
        ({"switching": "cut"}, "switching"),
        ({"mode": "fast"}, "mode"),
        ({"vcs": 1, "dateline": True}, "dateline"),
        ({"deadlock_cycles": 2}, "deadlock_cycles"),
        ({"router_delay": -1}, "router_delay"),
    ],
)
def test_bad_config_names_the_argument(kwargs, name):
    with pytest.raises(InvalidArgument) as info:
        NetworkConfig(**kwargs)
    assert info.value.name == name


def test_bad_inputs():
    with pytest.raises(InvalidArgument, match="topology"):
        Network("flat:16")
    with pytest.raises(InvalidArgument, match="traffic"):
        make_traffic("bit-reverse", parse_machine("mesh:3x3"))
    with pytest.raises(InvalidArgument, match="traffic"):
        make_traffic("tornado", parse_machine("hypercube:3"))
    with pytest.raises(InvalidArgument, match="rate"):
        run_traffic("mesh:4x4", "uniform", 1.5)
    net = Network("mesh:4x4")
    net.run(10)
    with pytest.raises(InvalidArgument, match="create"):
        net.add_packets([5], [0], [1])
    with pytest.raises(InvalidArgument, match="dst"):
        net.add_packets([20], [0], [16])
    assert sorted(TRAFFIC.names()) == sorted(["uniform", "transpose", "bit-complement", "bit-reverse", "shuffle", "tornado", "neighbour", "neighbor", "hotspot", "group-shift"])


def test_network_spec_grammar():
    c = NetworkConfig.parse("wormhole:packet=8,buffers=4,vcs=2,mode=packet")
    assert (c.packet, c.buffers, c.vcs, c.mode) == (8, 4, 2, "packet")
    assert NetworkConfig.parse(c.spec()) == c
    with pytest.raises(InvalidArgument, match="network"):
        NetworkConfig.parse("wormhole:colour=red")
