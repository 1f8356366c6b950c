"""The network simulator on router networks (dragonfly, fat tree, Slurm's trees): routers apart from nodes.

Routes come from ``RouterNetwork.router_route``; a node's cable to its router is its
injection channel, the router's cable to the node its ejection channel, so a packet
crosses ``distance - 2`` router links.
"""

from __future__ import annotations

import json
from importlib.resources import files

import numpy as np
import pytest

import topoalloc
from topoalloc.errors import NetworkDeadlock
from topoalloc.network import Network, NetworkConfig, network_tables, run_traffic
from topoalloc.network.engine import compiled_available, hop_classes, uses_dateline
from topoalloc.network.traffic import bernoulli_packets, make_traffic
from topoalloc.topology import parse_machine
from topoalloc.workload import Workload

ENGINES = ["python"] + (["c"] if compiled_available() else [])
MODES = ["flit", "packet"]
TREE = f"slurm-tree:{files('topoalloc.data') / 'topology-example.conf'}"
BLOCK = f"slurm-block:{files('topoalloc.data') / 'topology-block-example.conf'}"
ROUTERS = ["dragonfly:p=2,a=4,h=2", "dragonfly:p=1,a=3,h=2,g=5", "fattree:k=2,n=3", "fattree:k=3,n=2", "fattree:k=4,n=1", TREE, BLOCK]


@pytest.mark.parametrize("spec", ROUTERS)
def test_route_table_is_the_router_route(spec):
    top = parse_machine(spec)
    t = network_tables(top)
    N, C = top.n_nodes, t.n_links
    assert t.n_routers == top.n_routers and t.node_router.tolist() == top.node_router.tolist()
    for s in range(N):
        for d in range(N):
            chans = t.route_channels(s, d)
            assert chans[0] == C + s and chans[-1] == C + N + d
            assert t.chan_dst[chans[0]] == top.router_of(s) and t.chan_src[chans[-1]] == top.router_of(d)
            assert all(t.chan_dst[a] == t.chan_src[b] for a, b in zip(chans, chans[1:]))
            assert t.route_nodes(s, d) == top.router_route(s, d)
            assert t.hops[s, d] == (top.distance(s, d) - 2 if s != d else 0)


@pytest.mark.parametrize("k,n", [(2, 1), (2, 3), (3, 3), (4, 2), (2, 5)])
def test_fat_tree_routes_climb_then_descend_minimally(k, n):
    top = parse_machine(f"fattree:k={k},n={n}")
    per = k ** (n - 1)
    for a in range(top.n_nodes):
        for b in range(top.n_nodes):
            path = top.router_route(a, b)
            levels = [r // per for r in path]
            top_at = levels.index(max(levels))
            assert levels[: top_at + 1] == list(range(top_at + 1)) and levels[top_at:] == list(range(top_at, -1, -1))
            assert len(path) - 1 == top.router_hops[path[0], path[-1]]  # minimal
            assert all(top.graph.has_edge(x, y) for x, y in zip(path, path[1:]))
            assert path[top_at:] == [lv * per + path[-1] for lv in range(top_at, -1, -1)]  # down through (leaf of b, l)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("switching,P,B,R", [("wormhole", 8, 16, 1), ("wormhole", 5, 4, 2), ("vct", 4, 4, 1), ("saf", 4, 6, 3)])
@pytest.mark.parametrize("spec", ["dragonfly:p=2,a=4,h=2", "fattree:k=4,n=2", BLOCK])
def test_idle_latency_formula_on_router_networks(spec, switching, P, B, R, mode, engine):
    """Alone, a packet over h router links takes (h+1)(R+1)+P-1 cycles ((h+1)(R+P)+P-1 store-and-forward): its
    injection cable counts as the first hop, as on direct networks, and h = distance - 2."""
    top = parse_machine(spec)
    rng = np.random.default_rng(3)
    src = rng.integers(0, top.n_nodes, 60)
    dst = rng.integers(0, top.n_nodes, 60)
    cfg = NetworkConfig(packet=P, buffers=B, router_delay=R, switching=switching, mode=mode, engine=engine, vcs=2)
    net = Network(top, cfg)
    net.add_packets(np.arange(60) * 200, src, dst)
    net.run(60 * 200 + 200)
    r = net.results()
    h = np.array([top.distance(s, d) - 2 if s != d else 0 for s, d in zip(src.tolist(), dst.tolist())])
    want = (h + 1) * (R + P) + P - 1 if switching == "saf" else (h + 1) * (R + 1) + P - 1
    assert r["latency"].tolist() == want.tolist()
    assert (r["blocking"] == 0).all() and r["hops"].tolist() == h.tolist()


def _header_vcs(top, cfg, pairs, gap):
    """Send each (src, dst) alone, one every ``gap`` cycles (Python engine); the VCs each header entered, per packet."""
    net = Network(top, cfg)
    net._engine.trace = []
    net.add_packets([i * gap for i in range(len(pairs))], [s for s, _ in pairs], [d for _, d in pairs])
    net.run(len(pairs) * gap + gap)
    seen: dict[int, list[int]] = {}
    for pid, q, _ in net._engine.trace:
        seen.setdefault(pid, []).append(q)
    return seen


def test_dragonfly_vc_class_changes_at_the_global_hop():
    """With two VCs every header takes VC 0 before its global hop and VC 1 on it and after (Kim et al. §4)."""
    top = parse_machine("dragonfly:p=1,a=3,h=1")
    t = network_tables(top)
    cfg = NetworkConfig(vcs=2, engine="python")
    assert uses_dateline(top, cfg) and not uses_dateline(top, NetworkConfig(vcs=1))
    assert not uses_dateline("fattree:k=2,n=3", cfg)  # up*/down* needs no classes
    pairs = [(s, d) for s in range(top.n_nodes) for d in range(top.n_nodes)]
    seen = _header_vcs(top, cfg, pairs, 60)
    n_global = 0
    for pid, (s, d) in enumerate(pairs):
        chans = t.route_channels(s, d)[1:-1]
        vcs = seen[pid][1:-1]
        assert [q // 2 for q in vcs] == chans
        glob = [top.graph.edges[int(t.chan_src[c]), int(t.chan_dst[c])]["kind"] == "global" for c in chans]
        want = [int(any(glob[: i + 1])) for i in range(len(chans))]
        assert [q % 2 for q in vcs] == want == hop_classes(t, chans, True)
        n_global += any(glob)
    assert n_global == 12 * 9  # every pair of nodes in different groups


@pytest.mark.parametrize("engine", ENGINES)
def test_dragonfly_without_vc_classes_deadlocks_and_says_where(engine):
    """Minimal routing with one VC class: local, global, local, global ... closes a cycle of waiting VCs."""
    cfg = NetworkConfig(vcs=1, buffers=4, deadlock_cycles=500, engine=engine)
    with pytest.raises(NetworkDeadlock) as e:
        run_traffic("dragonfly:p=2,a=3,h=1", "uniform", 0.9, config=cfg, cycles=5000, drain=3000, seed=3)
    ring = e.value.args[0]
    assert "(global)" in ring and "(local)" in ring  # the cycle alternates global and local hops
    ok = run_traffic("dragonfly:p=2,a=3,h=1", "uniform", 0.9, config=NetworkConfig(vcs=2, buffers=4, deadlock_cycles=500, engine=engine), cycles=5000, drain=20000, seed=3)
    assert ok.undelivered == 0


def test_channel_descriptions_name_nodes_and_routers():
    t = network_tables(parse_machine("fattree:k=2,n=2"))
    C, N = t.n_links, t.n_nodes
    assert str(t.channel(C + 3)) == "injection into router 1 from node 3"
    assert str(t.channel(C + N + 3)) == "ejection at router 1 to node 3"
    assert str(t.channel(0)) == "router 0->2 (up)" and str(t.channel(t.hop_channel(2, 0))) == "router 2->0 (down)"
    assert str(network_tables(parse_machine("mesh:2x2")).channel(8 + 1)) == "injection into router 1"  # direct: node = router
    with pytest.raises(ValueError, match="router network"):
        t.link_index(0, 0, 1)


@pytest.mark.skipif(not compiled_available(), reason="compiled engine not built")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "spec,rate,opts",
    [
        ("dragonfly:p=2,a=4,h=2", 0.4, {"vcs": 2, "buffers": 4}),
        ("dragonfly:p=2,a=3,h=1", 0.7, {"vcs": 3, "buffers": 2, "router_delay": 2, "switching": "vct", "packet": 2}),
        ("fattree:k=4,n=2", 0.5, {"buffers": 3, "packet": 5}),
        ("fattree:k=2,n=4", 0.6, {"vcs": 2, "buffers": 4, "switching": "saf", "packet": 3}),
        (TREE, 0.3, {}),
    ],
)
def test_compiled_engine_equals_reference_on_router_networks(spec, rate, opts, mode):
    out = []
    for engine in ("python", "c"):
        cfg = NetworkConfig(engine=engine, mode=mode, **opts)
        res = run_traffic(spec, "uniform", rate, config=cfg, cycles=1200, drain=800, seed=4)
        top = parse_machine(spec)
        net = Network(top, cfg)
        c, s, d = bernoulli_packets(make_traffic("uniform", top), rate, cfg.packet, 0, 500, np.random.default_rng(5))
        j = net.new_job()
        net.add_packets(c, s, d, np.where(np.arange(c.size) % 2 == 0, j, -1))
        net.run(4000)
        out.append((json.dumps(res.summary()), {k: v.tolist() for k, v in net.results().items()}, net.pop_completed()))
    assert out[0] == out[1]


@pytest.mark.parametrize("machine", ["dragonfly:p=2,a=3,h=1", "fattree:k=2,n=3"])
@pytest.mark.parametrize("allocator", ["contiguous", "random_nodes", "round_robin"])
def test_jobs_communicate_on_router_networks(machine, allocator):
    """Coupled to the scheduler: a job alone on the machine ends when its last message is delivered, and its
    communication time is at least the idle time of its longest route; same inputs, same bytes."""
    rows = [(0, 1, 4, 100), (0, 1, 3, 100), (5, 1, 6, 100), (400, 1, 2, 100)]  # submit, run, size, requested
    w = Workload(job_id=np.arange(1, 5), submit=[r[0] for r in rows], run=[r[1] for r in rows], size=[r[2] for r in rows],
                 requested_time=[r[3] for r in rows], source="<test>")

    def go():
        return topoalloc.simulate(w, machine=machine, allocator=allocator, network="wormhole:vcs=2", traffic="all-to-all:messages=12", record_allocations=True)

    r = go()
    top = parse_machine(machine)
    comm = r.network["per_job"]["comm_time"]
    for j in range(len(w)):
        nodes = r.nodes_of(j).tolist()
        h = max(top.distance(a, b) - 2 for a in nodes for b in nodes if a != b)
        assert comm[j] >= (h + 1) * 2 + 8 - 1
    assert r.end[3] - r.start[3] == comm[3]  # alone: its service is its communication
    assert json.dumps(go().summary()) == json.dumps(r.summary())


# ------------------------------------------------------------------ Valiant
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", MODES)
def test_valiant_packets_take_the_valiant_route(mode, engine):
    """Every packet crosses exactly Dragonfly.valiant_route through its drawn group (a group other than its
    source's and destination's), at the idle latency of that route's length."""
    top = parse_machine("dragonfly:p=2,a=4,h=2")
    t = network_tables(top)
    cfg = NetworkConfig(vcs=3, routing="valiant", engine=engine, mode=mode, packet=4)
    pairs = [(s, d) for s in range(0, 72, 5) for d in range(0, 72, 7)]
    for i, (s, d) in enumerate(pairs[:40]):
        net = Network(top, cfg)
        net.set_window(0, 10**6)
        net.add_packets([0], [s], [d])
        net.run(200)
        r = net.results()
        via = int(r["via"][0])
        gs, gd = top.router_of(s) // 4, top.router_of(d) // 4
        if top.router_of(s) == top.router_of(d):
            assert via == -1
            path = [top.router_of(s)]
        else:
            assert via >= 0 and via // 4 not in (gs, gd) and via == top.valiant_router(top.router_of(s), via // 4)
            path = top.valiant_route(s, d, via // 4)
        want = sorted([t.hop_channel(a, b) for a, b in zip(path, path[1:])] + [t.n_links + s, t.n_links + top.n_nodes + d])
        assert np.flatnonzero(net.link_flits).tolist() == want
        h = len(path) - 1
        assert int(r["hops"][0]) == h and int(r["latency"][0]) == (h + 1) * 2 + 4 - 1


def test_valiant_groups_are_uniform_and_fixed_by_packet_id_and_seed():
    top = parse_machine("dragonfly:p=2,a=4,h=2")
    k = 9000
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 72, k), rng.integers(0, 72, k)

    def vias(seed, chunks):
        net = Network(top, NetworkConfig(vcs=3, routing="valiant", valiant_seed=seed, engine="python"))
        for part in np.array_split(np.arange(k), chunks):
            net.add_packets(np.zeros(part.size, dtype=np.int64), src[part], dst[part])
        return net.results()["via"]

    v = vias(0, 1)
    assert np.array_equal(v, vias(0, 7))  # however the packets are added
    assert not np.array_equal(v, vias(1, 1))
    rs, rd = top.node_router[src], top.node_router[dst]
    assert ((v < 0) == (rs == rd)).all()
    groups = v[v >= 0] // 4
    assert ((groups != rs[v >= 0] // 4) & (groups != rd[v >= 0] // 4)).all()
    counts = np.bincount(groups, minlength=9)
    assert counts.min() > 0.8 * counts.mean() and counts.max() < 1.2 * counts.mean()


def test_valiant_vc_classes_count_global_hops():
    top = parse_machine("dragonfly:p=1,a=3,h=2,g=5")
    t = network_tables(top)
    pairs = [(s, d) for s in range(top.n_nodes) for d in range(top.n_nodes) if s != d]
    seen = _header_vcs(top, NetworkConfig(vcs=3, routing="valiant", engine="python"), pairs, 80)
    for pid in range(len(pairs)):
        chans = [q // 3 for q in seen[pid][1:-1]]
        glob = [int(top.graph.edges[int(t.chan_src[c]), int(t.chan_dst[c])]["kind"] == "global") for c in chans]
        assert [q % 3 for q in seen[pid][1:-1]] == [min(sum(glob[: i + 1]), 2) for i in range(len(chans))] == hop_classes(t, chans, 3)


def test_valiant_is_an_option_of_the_dragonfly_only():
    with pytest.raises(ValueError, match="routing='valiant'.*a dragonfly"):
        Network("fattree:k=2,n=3", NetworkConfig(routing="valiant", vcs=3))
    with pytest.raises(ValueError, match="vcs=2: expected vcs >= 3 for Valiant"):
        Network("dragonfly:p=2,a=3,h=1", NetworkConfig(routing="valiant", vcs=2))
    with pytest.raises(ValueError, match="routing='ugal'.*one of minimal, valiant"):
        NetworkConfig(routing="ugal")
    assert NetworkConfig.parse("wormhole:vcs=3,routing=valiant,valiant_seed=4").spec() == "wormhole:packet=8,buffers=16,vcs=3,router_delay=1,mode=flit,routing=valiant,valiant_seed=4"
    Network("dragonfly:p=2,a=3,h=1", NetworkConfig(routing="valiant", vcs=2, dateline=False))  # without classes, on request


@pytest.mark.parametrize("engine", ENGINES)
def test_valiant_spreads_a_group_to_group_hot_spot(engine):
    """Every node of group 0 sends to group 1: minimal routing funnels it all through the one global link between
    them, Valiant spreads it over the other groups (Kim et al. §4.2) — its mean latency is several times lower."""
    top = parse_machine("dragonfly:p=2,a=3,h=1")  # 4 groups of 3 routers of 2 nodes
    rng = np.random.default_rng(2)
    k = 600
    src = rng.integers(0, 6, k)
    dst = 6 + rng.integers(0, 6, k)
    create = np.sort(rng.integers(0, 1500, k))
    lat = {}
    for routing in ("minimal", "valiant"):
        net = Network(top, NetworkConfig(vcs=3, routing=routing, engine=engine, packet=4))
        net.add_packets(create, src, dst)
        net.run(40_000)
        r = net.results()
        assert (r["t_done"] >= 0).all()
        lat[routing] = float(r["latency"].mean())
    assert lat["valiant"] * 3 < lat["minimal"], lat
