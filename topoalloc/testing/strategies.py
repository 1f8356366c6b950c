"""Hypothesis strategies for workloads."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..workload.core import Workload

__all__ = ["workloads"]


def workloads(max_jobs: int = 25, machine_nodes: int = 16, *, overrun: bool = False, max_time: int = 50) -> Any:
    """Random small workloads of integer times (so ties at equal instants are common).

    With ``overrun=False`` run time <= requested time, the regime in which EASY's
    and conservative's guarantees hold.
    """
    from hypothesis import strategies as st

    job = st.tuples(
        st.integers(0, max_time),  # submit
        st.integers(0, max_time),  # run
        st.integers(1, machine_nodes),  # size
        st.integers(0, max_time),  # slack: requested - run
    )

    def build(rows: list[tuple[int, int, int, int]]) -> Workload:
        rows = sorted(rows, key=lambda r: r[0])
        submit = [r[0] for r in rows]
        run = [r[1] for r in rows]
        size = [r[2] for r in rows]
        req = [max(1, r[1] + r[3]) if not overrun else max(1, r[3]) for r in rows]
        return Workload(
            job_id=np.arange(1, len(rows) + 1),
            submit=submit,
            run=run,
            size=size,
            requested_time=req,
            header={"MaxProcs": str(machine_nodes)},
            source="<hypothesis>",
        )

    return st.lists(job, min_size=1, max_size=max_jobs).map(build)
