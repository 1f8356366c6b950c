"""Z3 proofs of the subtorus allocators' own output.

The default run proves every theorem at a smaller size: EP/NEP for every
semitorus shape in every orientation with <= 6 dimensions and <= 2^8 nodes
and every power-of-two m, the conversions for one orientation per shape and
every wrap pattern, preprocessing and merging.  ``pytest -m slow`` runs them
at the full size (<= 2^12 nodes: 2,509 shapes, 29,328 cases per scheme) and
the conversions in every orientation as well.
"""

from __future__ import annotations

import numpy as np
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
    rows = torus_rows(full=False, max_order=8, run_seeds=1, run_steps=120)
    _check(rows)
    assert rows[0]["property"].startswith("EP: at every offset") and rows[1]["property"].startswith("NEP: at every offset")
    assert rows[0]["cases"] == rows[1]["cases"] > 1000
    assert len(rows) == 8 and all(r["cases"] > 0 for r in rows)
    # each row names how it was decided
    assert [r["method"] for r in rows] == ["exhaustive", "exhaustive", "exhaustive", "exhaustive", "symbolic", "exhaustive", "exhaustive", "exhaustive"]
    assert rows[0]["method_counts"]["symbolic"] > 0 and rows[0]["method_counts"]["exhaustive"] > 0


def test_canonical_orientation_only_by_z3():
    rows = torus_rows(max_order=6, scheme_orientations=False, run_machines=((2, 2, 2, 6, 8),), run_seeds=1)
    _check(rows)
    assert "one orientation per shape" in rows[0]["property"] and "all by Z3" in rows[0]["property"]


@pytest.mark.slow
@pytest.mark.long
def test_torus_proofs_every_orientation():
    """``topoalloc prove torus --full``: EP/NEP at the full sizes (<= 2^12 nodes), every orientation, every k;
    conversions too in every orientation and every wrap pattern (one run for both: ~7 min on 2 cores)."""
    rows = torus_rows(full=True, workers=2)
    _check(rows)
    assert rows[0]["cases"] == rows[1]["cases"] == 29328  # (shape in every orientation, k) pairs
    for r in rows[:2]:
        assert "every orientation: 2,509 shapes — 226 by Z3 at a symbolic offset + " in r["property"]
    assert rows[5]["cases"] == rows[6]["cases"] == 21224  # every orientation x wrap patterns
    assert "every orientation: 2,509 shapes" in rows[5]["property"]
    assert rows[-1]["cases"] == 36


def test_scheme_proof_paper_example():
    st = Semitorus((0, 0, 0, 0), (2, 4, 4, 8), (True,) * 4)
    r = prove_scheme("nep", st, 4)
    assert r.holds and r.details["pieces"] == 5


def test_counterexamples_shown():
    bad = [Semitorus((0, 0), (2, 2), (True, True)), Semitorus((1, 0), (2, 2), (True, True))]
    r = prove_pieces_partition(bad, [Semitorus((0, 0), (4, 2), (True, True))])
    assert not r.holds and r.counterexample["covered_by_pieces"] in ([0, 1], [])
    assert "FAILS" in str(r)


def _swap_two_ring_nodes(monkeypatch):
    """Every conversion's embedding with its nodes 1 and 5 swapped (a ring that is no longer one)."""
    real = conv_mod.Conversion._build

    def broken(self):
        emb = real(self).copy()
        emb[[1, 5]] = emb[[5, 1]]
        return emb

    monkeypatch.setattr(conv_mod.Conversion, "_build", broken)


def test_broken_conversion_is_caught(monkeypatch):
    """A conversion that swaps two nodes of its ring breaks dilation 1; the proof must say where."""
    _swap_two_ring_nodes(monkeypatch)
    r = prove_conversion(Semitorus((0, 0), (8, 4), (False, False)), Torus((8, 4)), "collapse")
    assert not r.holds and r.counterexample["property"] == "dilation"


def test_buddy_merge_on_named_machines():
    for dims in ((2, 2, 2, 4, 4, 8), (2, 2, 2, 6, 8)):
        for scheme in ("ep", "nep"):
            assert prove_buddy_merge(Torus(dims), scheme, seed=5, steps=400, check_every=4).holds


def test_prove_cli(capsys, monkeypatch):
    import json

    monkeypatch.setattr(torus_mod, "RUN_MACHINES", ((2, 2, 2, 6, 8),))
    monkeypatch.setattr(torus_mod, "RUN_SEEDS", 1)

    from topoalloc.cli import main

    assert main(["prove", "torus", "--json", "--max-order", "5", "--max-dims", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["holds"] for r in rows) and len(rows) == 8
    assert {r["method"] for r in rows} <= {"symbolic", "exhaustive", "model"}
    assert main(["prove", "torus", "--max-order", "4"]) == 0
    out = capsys.readouterr().out
    assert "holds" in out and "rebuilds" in out and "symbolic" in out and "exhaustive" in out
    assert main(["prove", "torus", "--workers", "0"]) == 2
    assert "--workers=0" in capsys.readouterr().err
    # a process per requested worker (up to one per chunk) would start 128 Python processes with Z3
    assert main(["prove", "torus", "--workers", "100000"]) == 2
    assert "--workers=100000" in capsys.readouterr().err


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
    _orientation_fault(monkeypatch, (2, 4), 1, lambda s, pieces, at: ([Semitorus((s.offset[0], s.offset[1] + y), (2, 1), (False, False)) for y in range(4)], 0))
    results, tally = prove_scheme_orientations("ep", (2, 1), [(2, 1), (1, 2)])
    assert all(r.holds for r in results)
    assert tally["z3_direct_shapes"] == 1 and tally["z3_direct_cases"] == 1 and tally["image_cases"] == 3
    assert results[1].details["how"] == "image+z3" and results[1].details["z3_cases"] == [1]


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
    assert {r.details["method"] for r in rows_ok} == {"symbolic", "exhaustive"}


def test_every_orientation_small_sizes():
    """The every-orientation proof (``--full``) at up to 2^6 nodes, run by default; the full size is in the slow tier."""
    rows = torus_rows(full=True, max_order=6, wrap_order=5, run_machines=((4, 4, 4),), run_seeds=1)
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


# ---------------------------------------------------------------- planted bugs
# Each test below plants one plausible bug in a copy of the implementation's
# behaviour (monkeypatch) and shows that a proof, or the grant check, fails.


def test_allocated_size_is_computed_from_geometry(monkeypatch):
    """NEP's "the allocated piece has 2^k nodes" is the product of its sides, not the cached size.

    The planted output keeps the kept half and its last sibling as one box
    of 2^(k+1) nodes whose cached ``size`` still says 2^k (the loop counter);
    the old check read that field and passed.
    """
    from topoalloc.alloc.partition import schemes

    def merged_last(s, k, order="exhaust-largest"):
        pieces = real_nep(s, k, order)
        kept, sibling = pieces[-1], pieces[-2]  # the kept half has the lower coordinates
        cut = _cut_dim(kept, sibling)
        sides = tuple(2 * a if j == cut else a for j, a in enumerate(kept.sides))
        return pieces[:-2] + [Semitorus._unchecked(kept.offset, sides, kept.wrapped, k)]

    real_nep = schemes.nep_partition
    monkeypatch.setattr(schemes, "nep_partition", merged_last)
    st = Semitorus((0, 0, 0, 0), (2, 4, 4, 8), (True,) * 4)
    pieces, at = torus_mod.partition(st, 4, "nep")
    assert pieces[at].size == 16  # the cached field: what the old check compared, so it passed
    r = prove_scheme("nep", st, 4)
    assert not r.holds
    assert r.counterexample["allocated_piece_size"] == {"product_of_sides": 32, "expected": 16}


def _cut_dim(a: Semitorus, b: Semitorus) -> int:
    """The one dimension in which two NEP halves differ (offsets compared as terms)."""
    return next(i for i, (x, y) in enumerate(zip(a.offset, b.offset)) if torus_mod._key(x) != torus_mod._key(y))


def test_ep_offset_forgetting_the_base_is_caught(monkeypatch):
    """EP pieces placed from the origin instead of the semitorus's own offset: every offset is proved, so it fails."""
    from topoalloc.alloc.partition import schemes

    real = schemes.ep_partition

    def at_origin(s, k):
        return [Semitorus(tuple(o - b for o, b in zip(p.offset, s.offset)), p.sides, p.wrapped) for p in real(s, k)]

    monkeypatch.setattr(schemes, "ep_partition", at_origin)
    st = Semitorus((0, 0, 0), (4, 4, 2), (True,) * 3)
    r = prove_scheme("ep", st, 2)
    assert not r.holds and r.counterexample["offset"] != (0, 0, 0)
    # at the origin alone (what was proved before) the bug is invisible
    assert prove_scheme("ep", st, 2, symbolic_offset=False).holds


def test_planted_ep_offset_bug_raises_at_grant_time(monkeypatch):
    """The same bug in a running allocator: the second semitorus of JLAB is cut into pieces at the
    origin, and the grant of nodes another job holds raises at once (the base's busy-node check)."""
    from topoalloc.alloc.base import Request
    from topoalloc.alloc.partition import PartitionAllocator, schemes
    from topoalloc.errors import AllocationError

    real = schemes.ep_partition

    def at_origin(s, k):
        return [Semitorus(tuple(o - b for o, b in zip(p.offset, s.offset)), p.sides, p.wrapped) for p in real(s, k)]

    monkeypatch.setattr(schemes, "ep_partition", at_origin)
    a = PartitionAllocator(Torus((2, 2, 2, 6, 8)), scheme="ep")
    first = a.allocate(Request(8))  # the 2x2x2x4x8 semitorus at the origin, cut: job on nodes 0..7-ish
    assert first is not None and 0 in first.node_set
    with pytest.raises(AllocationError, match="busy"):
        for _ in range(64):  # fill the rest; sooner or later the 2x2x2x2x8 semitorus at x3 = 4 is cut
            a.allocate(Request(8))
    # and the allocator-run proof reports it instead of "holds"
    r = prove_buddy_merge(Torus((2, 2, 2, 6, 8)), "ep", seed=0, steps=100)
    assert not r.holds and r.counterexample["property"] in ("grant refused by the base allocator", "held + free partition the machine")


def test_wrap_flags_kept_on_pieces_that_do_not_span_are_caught(monkeypatch):
    """NEP halves that keep the parent's ring in the cut dimension claim a ring without its wrap link."""
    from topoalloc.alloc.partition import schemes

    def keeps_wrap(s, dim):
        half = s.sides[dim] // 2
        sides = s.sides[:dim] + (half,) + s.sides[dim + 1 :]
        lo = Semitorus._unchecked(s.offset, sides, s.wrapped, s.order - 1)
        hi_off = s.offset[:dim] + (s.offset[dim] + half,) + s.offset[dim + 1 :]
        return lo, Semitorus._unchecked(hi_off, sides, s.wrapped, s.order - 1)

    monkeypatch.setattr(schemes, "_halve", keeps_wrap)
    st = Semitorus((0, 0), (8, 8), (True, True))
    r = prove_scheme("nep", st, 2)
    assert not r.holds and r.counterexample["wrap"]["claimed_ring"] is True
    # the allocator's own run: a granted semitorus claims a ring the machine does not have there
    r = prove_buddy_merge(Torus((8, 8)), "nep", seed=0, steps=50)
    assert not r.holds and r.counterexample["property"] in ("granted semitorus wrap", "free block wrap", "job torus")


def test_conversion_claiming_a_missing_ring_is_caught():
    """A semitorus inside a larger machine that claims a ring it does not span: the job torus fails dilation 1."""
    bad = Semitorus((0, 4), (8, 4), (True, True))  # spans dimension 0 of 8x12, not dimension 1
    r = prove_conversion(bad, Torus((8, 12)), "pair")
    assert not r.holds and r.counterexample["property"] == "dilation" and r.counterexample["dimension"] == 1
    assert prove_conversion(Semitorus((0, 4), (8, 4), (True, False)), Torus((8, 12)), "pair").holds


def test_preprocessing_wrap_flags_follow_the_machine():
    from topoalloc.proofs.torus import machine_wrap_problem, prove_preprocessing

    assert prove_preprocessing(Torus((2, 2, 2, 6, 8))).holds
    machine = Torus((2, 2, 2, 6, 8))
    assert machine_wrap_problem(Semitorus((0, 0, 0, 0, 0), (2, 2, 2, 4, 8), (True, True, True, False, True)), machine) is None
    assert machine_wrap_problem(Semitorus((0, 0, 0, 0, 0), (2, 2, 2, 4, 8), (True,) * 5), machine)["dimension"] == 3


def test_symbolic_offsets_allow_only_addition_and_scaling():
    from topoalloc.proofs.torus import NotAffine, SymbolicInt

    o = SymbolicInt.var(0)
    assert (o + 2 - o).smt() == "2" and (3 * o + 1).smt() == "(+ (* 3 o0) 1)"
    for op in (lambda: bool(o), lambda: o < 3, lambda: o // 2, lambda: o % 2, lambda: hash(o), lambda: o == o):
        with pytest.raises(NotAffine):
            op()


def test_a_scheme_that_branches_on_the_offset_fails_the_proof(monkeypatch):
    """"Every offset at once" needs the scheme to only add to offsets; code that compares them is reported."""
    from topoalloc.alloc.partition import schemes

    real = schemes.nep_partition

    def branching(s, k, order="exhaust-largest"):
        if s.offset[0] > 0:
            return real(s, k, order)
        return real(s, k, order)

    monkeypatch.setattr(schemes, "nep_partition", branching)
    r = prove_scheme("nep", Semitorus((0, 0), (4, 4), (True, True)), 2)
    assert not r.holds and "not_affine_in_the_offset" in r.counterexample


def test_method_column():
    from topoalloc.proofs.base import ProofResult
    from topoalloc.proofs.report import method_label, summarise

    rows = summarise("p", [ProofResult("a", True, 0.0, "", None, {"method": "symbolic", "cases": 3}), ProofResult("b", True, 0.0, "", None, {"method": "exhaustive"})])
    assert rows["method"] == "exhaustive" and rows["method_counts"] == {"symbolic": 3, "exhaustive": 1}
    assert method_label(rows) == "exhaustive (3 symbolic, 1 exhaustive)"
    assert summarise("q", [ProofResult("a", True, 0.0, "", None, {"method": "symbolic"})])["method"] == "symbolic"


@pytest.mark.parametrize("flaw", ["gap", "twice"])
def test_a_free_set_that_does_not_partition_the_machine_is_caught_at_its_point(monkeypatch, flaw):
    """The allocator run's cover check (held + free boxes, each counted over its own ranges): an available set
    that loses its last block leaves its nodes uncovered, one that lists a block twice covers them twice; either
    is reported with a point of that block, and the blocks covering it."""
    from topoalloc.alloc.partition import PartitionAllocator

    real = PartitionAllocator.available

    def flawed(self):
        blocks = list(real(self))
        return blocks[:-1] if flaw == "gap" else blocks + blocks[-1:]

    monkeypatch.setattr(PartitionAllocator, "available", flawed)
    machine = Torus((2, 6, 4))
    r = prove_buddy_merge(machine, "nep", seed=0, steps=10)
    ce = r.counterexample
    assert not r.holds and ce["property"] == "held + free partition the machine"
    last = real(PartitionAllocator(machine, scheme="nep"))[-1]
    assert all(int(o) <= c < int(o) + sd for c, o, sd in zip(ce["point"], last.offset, last.sides))
    assert len(ce["covered_by"]) == (0 if flaw == "gap" else 2)


@pytest.mark.parametrize("k", [0, 8, 10, 15])
def test_rows_of_a_partition_are_its_pieces_read_one_by_one(k):
    """``_rows`` reads shared terms once (column by column from 64 pieces on, piece by piece below): the same table as
    each piece's offset constants, sides and flags, in order; and None once any offset is another symbolic term."""
    import numpy as np

    from topoalloc.alloc.partition.schemes import partition
    from topoalloc.proofs.torus import SymbolicInt, _rows, symbolic_semitorus
    from topoalloc.topology.torus import Semitorus

    st = symbolic_semitorus((64, 32, 4, 4), (True, False, True, True))  # (k = 8: 128 pieces of 4x4x4x4, two flags off)
    pieces, _ = partition(st, k, "ep")
    assert len(pieces) == 1 << (15 - k)
    expected = [[o.const for o in p.offset] + list(p.sides) + [int(w) for w in p.wrapped] for p in pieces]
    assert np.array_equal(_rows(pieces), np.array(expected, dtype=np.int64))
    odd = Semitorus((SymbolicInt(((1, 1),), 0), *pieces[-1].offset[1:]), pieces[-1].sides, pieces[-1].wrapped)  # o1 in dimension 0
    assert _rows([*pieces[:-1], odd]) is None


def test_one_late_ep_piece_with_a_wrong_ring_is_caught_by_its_index(monkeypatch):
    """The scalar checks look at one piece per distinct (sides, wrap flags); a piece that differs from the rest only
    in its flags is its own shape, so the first such piece is still the one reported."""
    from topoalloc.alloc.partition import schemes

    real = schemes.ep_partition

    def one_bad(s, k):
        pieces = real(s, k)
        p = pieces[5]
        pieces[5] = Semitorus._unchecked(p.offset, p.sides, (True,) * len(p.sides), p.order, normal=True)
        return pieces

    monkeypatch.setattr(schemes, "ep_partition", one_bad)
    st = Semitorus((0, 0), (16, 8), (True, True))  # k = 4: eight 4x4 pieces, neither side spanning a ring of S
    pieces, at, problems = torus_mod._scheme_case("ep", st, 4, "exhaust-largest")
    assert len(pieces) == 8 and {p.sides for p in pieces} == {(4, 4)}
    assert problems["wrap"]["piece"] == 5 and problems["wrap"]["claimed_ring"] is True
    assert not prove_scheme("ep", st, 4).holds


def test_a_link_proved_once_is_not_a_licence_for_a_broken_conversion(monkeypatch):
    """The conversions remember the differences Z3 proved links, per machine; a conversion broken after a good one on
    the same machine still fails (a difference found not to be a link is never remembered)."""
    st, machine = Semitorus((0, 0), (8, 4), (False, False)), Torus((8, 4))
    assert prove_conversion(st, machine, "collapse").holds
    known = torus_mod._refuter().links[((8, 4), (True, True))]
    assert known  # the good conversion's differences
    _swap_two_ring_nodes(monkeypatch)
    before = set(known)
    for _ in range(2):
        r = prove_conversion(st, machine, "collapse")
        assert not r.holds and r.counterexample["property"] == "dilation"
    assert known == before


def test_links_of_a_machine_too_large_for_one_key_per_difference(monkeypatch):
    """The row-by-row grouping (machines whose differences do not fit one 64-bit key) decides as the keyed one."""
    machine = Torus((8, 4))
    nodes = np.arange(32, dtype=np.int64)
    a, b = np.array([0, 1, 7, 8]), np.array([1, 2, 0, 16])  # +x, +x, the x wrap link, +y twice (8 -> 16)
    assert torus_mod._prove_links(machine, nodes, a, b) is None
    bad_a, bad_b = np.append(a, 3), np.append(b, 5)  # 3 -> 5: two steps along x
    assert torus_mod._prove_links(machine, nodes, bad_a, bad_b) == 4
    monkeypatch.setattr(torus_mod, "_KEY_LIMIT", 1)
    known = torus_mod._refuter().links.get(((8, 4), (True, True)))
    before = set(known) if known is not None else None
    assert torus_mod._prove_links(machine, nodes, a, b) is None
    assert torus_mod._prove_links(machine, nodes, bad_a, bad_b) == 4
    after = torus_mod._refuter().links.get(((8, 4), (True, True)))
    assert (set(after) if after is not None else None) == before  # nothing remembered on that path


@pytest.mark.parametrize("offset, sides, dims, emb", [((-1,), (2,), (4,), [3, 0]), ((-1,), (2,), (4,), [-1, 0]), ((0, 2), (4, 1), (4, 2), [0, 1, 2, 3])])
def test_an_allocation_outside_the_machine_is_a_failure(offset, sides, dims, emb):
    """A semitorus that leaves the machine has no node ids to be a bijection onto: the proof says so (it neither
    holds on ids that alias into the machine nor indexes past the machine's nodes)."""
    from topoalloc.alloc.partition.conversion import convert

    st, machine = Semitorus(offset, sides, (True,) * len(sides)), Torus(dims)
    conv = convert(Semitorus((0,) * len(sides), sides, (True,) * len(sides)), Torus(tuple(max(s, 2) for s in sides)), "collapse")
    conv._cache["embedding"] = np.array(emb)
    problem, links = torus_mod.conversion_problem(conv, st, machine)
    assert problem["property"] == "allocation outside the machine" and links == 0
