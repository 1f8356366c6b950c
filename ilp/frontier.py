"""The table of proven window-3 orderings beside the curves (seed 003 §2.2), and its checker.

Each entry of :data:`FRONTIER_FILE` (``frontier.json``, shipped with the
package) holds, for one machine under ``window:3`` weights and linear rank
distance:

* ``order`` and ``objective``: the best ordering known (local search or the
  exact DP) and its cost;
* ``bound``: a proven lower bound on every ordering's cost, with how it is
  proven — ``"dp"`` (the exact dynamic program, :mod:`~topoalloc.ilp.dp`; the
  bound is then the optimum) or ``"lagrange"`` (the walk relaxation of
  :mod:`~topoalloc.ilp.lagrange`, whose integer ``multipliers``, ``scale``
  and ``memory`` are the certificate);
* ``status``: ``"optimal"`` when ``bound == objective``, else ``"bracketed"``
  with the relative ``gap`` (objective − bound) / objective;
* ``curves``: the costs of the reference curves that apply (row-major, snake,
  Hilbert, Z-order; the Gray code on hypercubes).

:func:`check_entry` re-derives everything from first principles — the cost of
the order and of every curve by the plain pair-by-pair evaluator, the bound by
one pass of the relaxation with the stored certificate (or by re-running the
DP for ``"dp"`` entries when asked) — so the committed table can be trusted
without trusting how it was found.  ``python benchmarks/bench_frontier.py``
rebuilds it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from topoalloc.errors import InvalidArgument

from .graphs import machine_graph
from .ordering import ordering_cost, parse_weights
from .references import reference_orderings

__all__ = ["FRONTIER_FILE", "FRONTIER_MACHINES", "build_entry", "check_entry", "load_frontier", "frontier_markdown"]

#: The committed table.
FRONTIER_FILE = Path(__file__).with_name("frontier.json")

#: Machines of the table: the 16-node ones the DP proves, and the frontier beyond it.
FRONTIER_MACHINES = ("mesh:4x4", "torus:4x4", "hypercube:4", "mesh:5x5", "torus:5x5", "mesh:3x3x3", "mesh:4x4x2", "hypercube:5", "mesh:6x6", "torus:6x6", "mesh:7x7", "mesh:8x8")

_WEIGHTS = "window:3"


def build_entry(machine: str, *, iterations: int = 600, search_iterations: int = 300_000, restarts: int = 8, seed: int = 0) -> dict:
    """Find the best ordering and bound for ``machine`` and return the table entry (checked)."""
    from .dp import DP_MAX_NODES, dp_ordering
    from .lagrange import lagrange_ordering

    t0 = time.perf_counter()
    mg = machine_graph(machine)
    ws = parse_weights(_WEIGHTS)
    entry: dict = {"machine": mg.name, "n": mg.n, "weights": ws.spec}
    if mg.n <= DP_MAX_NODES:
        res = dp_ordering(mg, ws)
        assert res.order is not None  # the DP always returns its optimum
        entry.update(order=list(res.order), objective=res.objective, bound=res.bound, proof="dp", multipliers=None, scale=None, memory=None, upper_from="dp")
    else:
        res, wb = lagrange_ordering(mg, ws, iterations=iterations, search_iterations=search_iterations, restarts=restarts, seed=seed)
        assert res.order is not None  # the local search always returns an ordering
        upper_from = "relaxation" if wb.order is not None and tuple(res.order) == wb.order else "local search"
        entry.update(order=list(res.order), objective=res.objective, bound=wb.bound, proof="lagrange", multipliers=list(wb.multipliers), scale=wb.scale, memory=wb.memory, upper_from=upper_from)
    entry["status"] = "optimal" if entry["bound"] == entry["objective"] else "bracketed"
    entry["gap"] = round((entry["objective"] - entry["bound"]) / entry["objective"], 6)
    entry["curves"] = {name: ordering_cost(mg, o, ws) for name, o in sorted(reference_orderings(mg).items())}
    entry["seconds"] = round(time.perf_counter() - t0, 1)
    check_entry(entry)
    return entry


def check_entry(entry: dict, *, rerun_dp: bool = False) -> None:
    """Raise :class:`AssertionError` naming the field unless ``entry`` is right.

    Checked: the order is a permutation whose cost is ``objective`` (plain
    evaluator); ``bound <= objective``; status and gap follow from them; every
    curve's cost; a ``lagrange`` bound equals what its certificate gives in one
    pass of the relaxation; a ``dp`` bound equals the DP's optimum when
    ``rerun_dp`` (about 10 s and 1.4 GB per 16-node machine).
    """
    from .lagrange import certify_bound

    name = entry["machine"]
    mg = machine_graph(name)
    ws = parse_weights(entry["weights"])
    order = entry["order"]
    assert sorted(order) == list(range(mg.n)), f"{name}: order is not a permutation of its {mg.n} nodes"
    cost = ordering_cost(mg, order, ws)
    assert cost == entry["objective"], f"{name}: order costs {cost}, the table says {entry['objective']}"
    assert entry["bound"] <= cost, f"{name}: bound {entry['bound']} above the order's cost {cost}"
    want = "optimal" if entry["bound"] == cost else "bracketed"
    assert entry["status"] == want, f"{name}: status {entry['status']!r}, expected {want!r}"
    assert abs(entry["gap"] - (cost - entry["bound"]) / cost) < 1e-6, f"{name}: gap {entry['gap']}"
    curves = {k: ordering_cost(mg, o, ws) for k, o in sorted(reference_orderings(mg).items())}
    assert curves == entry["curves"], f"{name}: curve costs {curves}, the table says {entry['curves']}"
    if entry["proof"] == "lagrange":
        got = certify_bound(mg, ws, entry["multipliers"], entry["scale"], memory=entry["memory"])
        assert got == entry["bound"], f"{name}: the certificate gives {got}, the table says {entry['bound']}"
    elif entry["proof"] == "dp":
        if rerun_dp:
            from .dp import dp_ordering

            opt = dp_ordering(mg, ws).objective
            assert opt == entry["bound"], f"{name}: the DP gives {opt}, the table says {entry['bound']}"
    else:
        raise AssertionError(f"{name}: unknown proof {entry['proof']!r}")


def load_frontier(path: "str | Path | None" = None) -> list[dict]:
    """The committed table (or the one at ``path``), in the order of its machines."""
    p = Path(path) if path is not None else FRONTIER_FILE
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidArgument("path", str(p), f"a readable frontier table ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise InvalidArgument("path", str(p), "a JSON object with an 'entries' list")
    return data["entries"]


def frontier_markdown(entries: list[dict]) -> str:
    """The table as Markdown: status, cost, bound and gap beside the curves' costs."""
    names = ["row_major", "snake", "hilbert", "zorder", "gray"]
    head = "| machine | n | status | best ordering | proven bound | gap | proof | row-major | snake | Hilbert | Z-order | Gray |"
    rows = [head, "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for e in entries:
        cells = [str(e["curves"].get(k, "—")) for k in names]
        gap = "0" if e["status"] == "optimal" else f"{100 * e['gap']:.2f} %"
        proof = "DP" if e["proof"] == "dp" else f"Lagrange (memory {e['memory']})"
        rows.append(f"| `{e['machine']}` | {e['n']} | {e['status']} | {e['objective']} | {e['bound']} | {gap} | {proof} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
