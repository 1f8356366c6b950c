"""Z3 proofs of the AFL's own output and of the hypercube lemmas (seed 004, §3.2–§3.3).

The default run proves the tiling and Theorem 1 for every X×Y mesh whose BRGC
embedding fits a 7-cube, and BRGC dilation 1 and Lemma 1 for bit-vectors of
every width 1..64; ``pytest -m slow`` proves the tiling and Theorem 1 for
every mesh fitting a 10-cube (6,144 meshes).
"""

from __future__ import annotations

import pytest

from topoalloc.proofs.hypercube import (
    afl_output,
    hypercube_rows,
    mesh_shapes,
    prove_brgc_dilation,
    prove_lemma1,
    prove_mesh_tiling,
    prove_theorem1,
)


def test_hypercube_proofs_every_mesh_up_to_q7():
    rows = hypercube_rows(max_n=7, symbolic_n=64)
    failed = [r for r in rows if not r["holds"]]
    assert not failed, failed
    assert rows[0]["cases"] == rows[1]["cases"] == len(mesh_shapes(7))
    assert rows[2]["cases"] == rows[3]["cases"] == 64


@pytest.mark.slow
def test_hypercube_proofs_every_mesh_up_to_q10():
    rows = hypercube_rows(max_n=10, symbolic_n=64)
    failed = [r for r in rows if not r["holds"]]
    assert not failed, failed
    assert rows[0]["cases"] == rows[1]["cases"] == len(mesh_shapes(10)) == 6144
    assert rows[2]["cases"] == rows[3]["cases"] == 64


def test_thesis_example_proved():
    assert prove_mesh_tiling(20, 30) and prove_theorem1(20, 30)


def test_a_wrong_leftover_list_gives_a_counterexample():
    k, nodes, lefts, mesh_cubes = afl_output(5, 5)
    # a leftover cube grown by one bit overlaps the mesh
    f, v = lefts[-1]
    bad = lefts[:-1] + [(f | (1 << (f.bit_length())), v & ~(1 << f.bit_length()))]
    r = prove_mesh_tiling(5, 5, (k, nodes, bad, mesh_cubes))
    assert not r.holds and "node" in r.counterexample
    # a "leftover" whose channels the mesh uses (Figure 3.1's situation): the cube 1** in the 6-cube shares channels
    r = prove_theorem1(5, 5, (k, nodes, [(0b000011, 0b110000)], mesh_cubes))
    assert not r.holds and set(r.counterexample) == {"S1", "D1", "S2", "D2"}
    # the counterexample is a real shared channel
    from topoalloc.topology.hypercube import ecube_channels

    ce = r.counterexample
    assert set(ecube_channels(ce["S1"], ce["D1"])) & set(ecube_channels(ce["S2"], ce["D2"]))


def test_mesh_list_must_match_allocation():
    k, nodes, lefts, mesh_cubes = afl_output(3, 3)
    r = prove_theorem1(3, 3, (k, nodes[:-1], lefts, mesh_cubes))
    assert not r.holds


def test_symbolic_lemmas_small_widths():
    assert all(prove_brgc_dilation(n) and prove_lemma1(n) for n in (1, 2, 3, 16))
