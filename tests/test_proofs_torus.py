"""Z3 proofs of the subtorus allocators' own output.

The default run proves every theorem at a smaller size: EP/NEP for every
semitorus shape in every orientation with <= 6 dimensions and <= 2^8 nodes
and every power-of-two m, the conversions for one orientation per shape and
every wrap pattern, preprocessing and merging.  ``pytest -m slow`` runs them
at the full size (<= 2^12 nodes: 2,509 shapes, 29,328 cases per scheme) and
the conversions in every orientation as well.
"""

from __future__ import annotations

import pytest
from topoalloc.proofs import torus as torus_mod
from topoalloc.proofs.torus import (
    is_permutation_image,
    prove_buddy_merge,
    prove_conversion,
    prove_pieces_partition,
    prove_scheme,
    prove_scheme_orientations,
    prove_scheme_shape,
    torus_rows,
)

from topoalloc.alloc.partition import conversion as conv_mod
from topoalloc.alloc.partition.schemes import partition as real_partition
from topoalloc.topology import Semitorus, Torus


def _check(rows):
    failed = [r for r in rows if not r["holds"]]
    assert not failed, failed


def test_torus_proofs_every_theorem_small():
    """Every torus theorem at <= 2^8 nodes: EP/NEP in every orientation, conversions, preprocessing, merging."""
    rows = torus_rows(full=False, max_order=8)
    _check(rows)
    by = {r["property"].split(":")[0]: r for r in rows}
    assert by["EP"]["cases"] == by["NEP"]["cases"] > 1000
    assert len(rows) == 6 and all(r["cases"] > 0 for r in rows)


@pytest.mark.slow
def test_torus_proofs_every_shape_every_orientation():
    """EP/NEP at the full sizes (<= 2^12 nodes), every orientation, every k; conversions one orientation per shape."""
    rows = torus_rows(full=False)
    _check(rows)
    by = {r["property"].split(":")[0]: r for r in rows}
    assert by["EP"]["cases"] == by["NEP"]["cases"] == 29328  # (shape in every orientation, k) pairs
    for scheme in ("EP", "NEP"):
        assert "every orientation: 2,509 shapes — 226 by Z3 + " in by[scheme]["property"]
    assert rows[3]["cases"] == rows[4]["cases"] == 1516  # shapes up to orientation x wrap patterns
    assert rows[-1]["cases"] == 24


def test_canonical_orientation_only_by_z3():
    rows = torus_rows(max_order=8, scheme_orientations=False)
    _check(rows)
    assert "one orientation per shape" in rows[0]["property"] and "all by Z3" in rows[0]["property"]


@pytest.mark.slow
def test_torus_proofs_every_orientation():
    """Conversions too in every orientation and every wrap pattern (``topoalloc prove torus --full``)."""
    rows = torus_rows(full=True, workers=2)
    _check(rows)
    by = {r["property"].split(":")[0]: r for r in rows}
    assert by["EP"]["cases"] == by["NEP"]["cases"] == 29328
    assert rows[3]["cases"] == rows[4]["cases"] == 21224  # every orientation x wrap patterns
    assert "every orientation: 2,509 shapes" in rows[3]["property"]


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
    import json

    from topoalloc.cli import main

    assert main(["prove", "torus", "--json", "--max-order", "5", "--max-dims", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["holds"] for r in rows) and len(rows) == 6
    assert main(["prove", "torus", "--max-order", "4"]) == 0
    out = capsys.readouterr().out
    assert "holds" in out and "buddy merging" in out
    assert main(["prove", "torus", "--workers", "0"]) == 2
    assert "--workers=0" in capsys.readouterr().err


def test_scheme_shape_batch_names_the_failing_case(monkeypatch):
    """All k of a shape go to Z3 in one query; a wrong case is found and reported with its k."""

    def broken(s, k, scheme, nep_order="exhaust-largest"):
        pieces, at = real_partition(s, k, scheme, nep_order)
        if scheme == "nep" and k == 2:
            p = pieces[0]
            pieces = [Semitorus((p.offset[0] + 1,) + p.offset[1:], p.sides, p.wrapped)] + pieces[1:]
        return pieces, at

    monkeypatch.setattr(torus_mod, "partition", broken)
    st = Semitorus((0, 0, 0), (4, 4, 2), (True,) * 3)
    r = prove_scheme_shape("nep", st)
    assert not r.holds and r.size.endswith("m=2^2") and "point" in r.counterexample
    assert prove_scheme_shape("ep", st).holds


def test_permutation_image_is_exact():
    canon = Semitorus((0, 0), (4, 2), (True, True))
    swapped = Semitorus((0, 0), (2, 4), (True, True))
    for scheme in ("ep", "nep"):
        for k in range(4):
            assert is_permutation_image(real_partition(canon, k, scheme), real_partition(swapped, k, scheme), (2, 1), (1, 2)) == (1, 0)
    # the canonical output itself is not the image of the canonical output under the swap
    ep1 = real_partition(canon, 1, "ep")
    assert is_permutation_image(ep1, ep1, (2, 1), (1, 2)) is None
    # a repeated piece is never an image, even when the set of pieces matches
    pieces, at = real_partition(swapped, 1, "ep")
    assert is_permutation_image(real_partition(canon, 1, "ep"), (pieces + pieces[:1], at), (2, 1), (1, 2)) is None


def _orientation_fault(monkeypatch, sides, k, make):
    """Make the implementation's output for one oriented shape and one k something else."""

    def patched(s, kk, scheme, nep_order="exhaust-largest"):
        pieces, at = real_partition(s, kk, scheme, nep_order)
        if s.sides == sides and kk == k and scheme == "ep":
            return make(s, pieces, at)
        return pieces, at

    monkeypatch.setattr(torus_mod, "partition", patched)


def test_non_equivariant_but_correct_partition_is_proved_by_z3_directly(monkeypatch):
    """In orientation 2x4 EP cuts 2x1 pieces, not the image (1x2) of the canonical 4x2's: Z3 proves it directly."""
    _orientation_fault(monkeypatch, (2, 4), 1, lambda s, pieces, at: ([Semitorus((0, y), (2, 1), (False, False)) for y in range(4)], 0))
    results, tally = prove_scheme_orientations("ep", (2, 1), [(2, 1), (1, 2)])
    assert all(r.holds for r in results)
    assert tally["z3_direct_shapes"] == 1 and tally["z3_direct_cases"] == 1 and tally["image_cases"] == 3
    assert results[1].details["method"] == "image+z3" and results[1].details["z3_cases"] == [1]


def test_broken_partition_in_one_orientation_is_caught(monkeypatch):
    """A deliberately non-equivariant, overlapping EP output in orientation 2x4x2 only: the
    orientation argument does not apply, Z3 proves that case directly and shows the overlap."""

    def overlap(s, pieces, at):
        p = pieces[1]
        moved = Semitorus(pieces[0].offset, p.sides, p.wrapped)  # piece 1 moved onto piece 0
        return [pieces[0], moved] + pieces[2:], at

    _orientation_fault(monkeypatch, (2, 4, 2), 2, overlap)
    results, tally = prove_scheme_orientations("ep", (2, 1, 1), [(2, 1, 1), (1, 2, 1), (1, 1, 2)])
    failed = [r for r in results if not r.holds]
    assert len(failed) == 1 and failed[0].size.startswith("2x4x2") and failed[0].size.endswith("m=2^2")
    assert "point" in failed[0].counterexample or "dimension" in failed[0].counterexample
    assert tally["z3_direct_shapes"] == 1
    rows_ok = [r for r in results if r.holds]
    assert {r.details["method"] for r in rows_ok} == {"z3", "image"}


def test_every_orientation_small_sizes():
    """The every-orientation proof (``--full``) at up to 2^7 nodes, run by default; the full size is in the slow tier."""
    rows = torus_rows(full=True, max_order=7)
    _check(rows)
    ep = rows[0]
    assert "every orientation" in ep["property"] and "by exact permutation image" in ep["property"]


def test_conversions_in_processes_match_one_process():
    """``workers=2`` proves the same cases, in the same order, with the same verdicts."""
    shapes = [(2, 1), (1, 2), (1, 1, 1), (3,), (1, 3), (2, 1, 1)]
    one = torus_mod._prove_conversions(shapes, 1)
    two = torus_mod._prove_conversions(shapes, 2)
    for mode in ("collapse", "pair"):
        assert [(r.size, r.holds, r.details) for r in one[mode]] == [(r.size, r.holds, r.details) for r in two[mode]]
        assert len(one[mode]) == 11  # wrap patterns: 2+2+1+2+2+2
