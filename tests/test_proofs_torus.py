"""Z3 proofs of the subtorus allocators' own output (run by plain pytest).

The default run proves every semitorus shape up to orientation (<= 6 dimensions,
<= 2^12 nodes) for every power-of-two m, every wrap pattern for conversions;
``pytest -m slow`` proves every orientation as well.
"""

from __future__ import annotations

import pytest

from topoalloc.alloc.partition import conversion as conv_mod
from topoalloc.proofs.torus import (
    prove_buddy_merge,
    prove_conversion,
    prove_pieces_partition,
    prove_scheme,
    torus_rows,
)
from topoalloc.topology import Semitorus, Torus


def _check(rows):
    failed = [r for r in rows if not r["holds"]]
    assert not failed, failed


def test_torus_proofs_every_shape_up_to_orientation():
    rows = torus_rows(full=False)
    _check(rows)
    by = {r["property"].split(":")[0]: r for r in rows}
    assert by["EP"]["cases"] == by["NEP"]["cases"] == 2383  # (shape up to orientation, k) pairs
    assert rows[-1]["cases"] == 24


@pytest.mark.slow
def test_torus_proofs_every_orientation():
    _check(torus_rows(full=True))


def test_scheme_proof_paper_example():
    st = Semitorus((0, 0, 0, 0), (2, 4, 4, 8), (True,) * 4)
    r = prove_scheme("nep", st, 4)
    assert r.holds and r.details["pieces"] == 5


def test_counterexamples_shown():
    bad = [Semitorus((0, 0), (2, 2), (True, True)), Semitorus((1, 0), (2, 2), (True, True))]
    r = prove_pieces_partition(bad, [Semitorus((0, 0), (4, 2), (True, True))])
    assert not r.holds and r.counterexample["covered_by_pieces"] in ([0, 1], [])
    assert "FAILS" in str(r)


def test_broken_conversion_is_caught(monkeypatch):
    """A conversion that swaps two nodes of its ring breaks dilation 1; the proof must say where."""
    real = conv_mod.Conversion._build

    def broken(self):
        emb = real(self).copy()
        emb[[1, 5]] = emb[[5, 1]]
        return emb

    monkeypatch.setattr(conv_mod.Conversion, "_build", broken)
    r = prove_conversion(Semitorus((0, 0), (8, 4), (False, False)), Torus((8, 4)), "collapse")
    assert not r.holds and r.counterexample["property"] == "dilation"


def test_buddy_merge_on_named_machines():
    for dims in ((2, 2, 2, 4, 4, 8), (2, 2, 2, 6, 8)):
        for scheme in ("ep", "nep"):
            assert prove_buddy_merge(Torus(dims), scheme, seed=5, steps=400).holds


def test_prove_cli(capsys):
    from topoalloc.cli import main
    import json

    assert main(["prove", "torus", "--json", "--max-order", "5", "--max-dims", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["holds"] for r in rows) and len(rows) == 6
    assert main(["prove", "torus", "--max-order", "4"]) == 0
    out = capsys.readouterr().out
    assert "holds" in out and "buddy merging" in out
