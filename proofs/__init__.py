"""Z3 proofs about what the allocators actually output (installed as ``topoalloc.proofs``).

Each ``prove_*`` function feeds the implementation's own output to Z3 and
returns a :class:`ProofResult`: whether the property holds, a counterexample
(Z3's model, in the problem's own terms) if not, and how long it took.
"""

from .base import ProofResult, prove_partition

__all__ = ["ProofResult", "prove_partition"]
