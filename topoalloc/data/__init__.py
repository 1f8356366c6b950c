"""Data bundled with the package: the default trace (the Parallel Workloads Archive NASA iPSC/860 log)."""
