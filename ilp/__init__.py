"""Exact optimisation with OR-Tools CP-SAT (installed as ``topoalloc.ilp``).

One module per problem: instance -> model -> solve -> validated solution.
"""
