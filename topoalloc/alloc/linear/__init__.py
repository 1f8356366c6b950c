"""One-dimensional allocation over a curve ordering (Leung, Phillips, Bunde et al., Cplant §2).

Registered allocators: ``sorted_free_list``, ``first_fit``, ``best_fit``,
``sum_of_squares``, each with ``curve=<name or ordering file>`` and
``span=linear|ring``.
"""

from .allocator import STRATEGIES, LinearAllocator, min_span_window

__all__ = ["LinearAllocator", "STRATEGIES", "min_span_window"]
