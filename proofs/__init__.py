"""Proofs about what the allocators actually output (installed as ``topoalloc.proofs``).

Each ``prove_*`` function runs the implementation, checks its output
against a specification written in the proof module from first principles
(boxes from offsets and sides, rings from geometry, routes from the
definition of the routing), and returns a :class:`ProofResult`: whether the
property holds, a counterexample in the problem's own terms if not, how
long it took, and (``details["method"]``) how it was decided — ``symbolic``
(Z3 over all values), ``exhaustive`` (every case, checked exactly) or
``model`` (a lemma about a formula of the proof module, linked to the code
by an exhaustive check); see :mod:`topoalloc.proofs.report`.
:mod:`topoalloc.proofs.mutants` keeps the plausible bugs these checks and
the tests must catch.
"""

from .base import ProofResult, prove_partition

__all__ = ["ProofResult", "prove_partition"]
