"""First come, first served (strict: the head blocks everyone behind it)."""

from __future__ import annotations

from ..registry import SCHEDULERS
from .base import Scheduler, SchedulingContext

__all__ = ["FCFS"]


class FCFS(Scheduler):
    """Start queue heads while they fit; stop at the first that does not.

    With ``order="sjf"`` or ``"lpt"`` the "head" is the first job in that
    order (Mao/Chen/Watson §1), still strictly in order.
    """

    name = "fcfs"

    def schedule(self, ctx: SchedulingContext) -> None:
        q = ctx.queue
        n = 0
        while n < len(q) and ctx.try_start(q[n]):
            n += 1
        if n:
            del q[:n]


@SCHEDULERS.register("fcfs")
def _make_fcfs(order: str = "fcfs") -> FCFS:
    """Strict first come, first served (order=fcfs|sjf|lpt)."""
    return FCFS(order=order)
