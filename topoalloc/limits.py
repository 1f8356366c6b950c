"""Sizes checked against what this machine can hold, before anything is allocated.

Every size a user can give (machine sides and node count, ``MaxProcs`` in a
trace header, a hypercube's dimension, ``--processors``, ``--jobs``,
``--instances``, ``--max-order``, ``--cycles``, the size of a trace file) is
turned into an estimate of the memory the work needs and compared with the
memory available (``MemAvailable``, less a margin).  Too much is one clear
error naming the argument, the value, the estimate and the limit — never a
memory blow-up halfway through.  The estimates are deliberately rough upper
bounds of what the code allocates (documented where they are made).

``TOPOALLOC_MEMORY_LIMIT`` (bytes, or with a ``K``/``M``/``G`` suffix) sets the
budget explicitly, e.g. in tests or on a shared machine.
"""

from __future__ import annotations

import os
from functools import lru_cache

from .errors import InvalidArgument

__all__ = ["memory_budget", "check_memory", "format_bytes", "NODE_BYTES"]

#: rough bytes per node of a machine in a simulation (busy masks, coordinates, allocator and
#: curve tables, per-node Python objects while a curve is built): an upper bound for the estimate
NODE_BYTES = 256


def format_bytes(n: float) -> str:
    """``1.5 GiB`` style.

    >>> format_bytes(3 * 2**30), format_bytes(512)
    ('3.0 GiB', '512 B')
    """
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def _parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("B")
    mult = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(text[-1:], 1)
    return int(float(text[:-1] if mult > 1 else text) * mult)


@lru_cache(maxsize=1)
def _available() -> int:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        return 4 * 2**30


def memory_budget() -> int:
    """Bytes one command may plan to use: ``TOPOALLOC_MEMORY_LIMIT`` if set, else 75 % of the available memory."""
    env = os.environ.get("TOPOALLOC_MEMORY_LIMIT")
    if env:
        try:
            return _parse_size(env)
        except ValueError:
            raise InvalidArgument("TOPOALLOC_MEMORY_LIMIT", env, "a number of bytes, optionally with K, M or G") from None
    return int(0.75 * _available())


def check_memory(need: float, argument: str, value: object, what: str) -> None:
    """Raise :class:`InvalidArgument` if ``need`` bytes exceed the budget.

    ``what`` says what the memory is for ("a machine of 10,000,000,000 nodes").
    """
    budget = memory_budget()
    if need > budget:
        raise InvalidArgument(
            argument, value, f"a size this machine can hold: {what} needs about {format_bytes(need)}, the limit is {format_bytes(budget)} (available memory; TOPOALLOC_MEMORY_LIMIT sets it)"
        )


def check_header_machine(nodes: int, source: str) -> None:
    """:func:`check_memory` for the machine a trace's header asks for (MaxProcs), when none is given."""
    check_memory(nodes * NODE_BYTES, "MaxProcs", nodes, f"the header of {source!r} asks for a machine of {nodes:,} processors, which")


def check_allocator_machine(nodes: int, spec: str) -> None:
    """:func:`check_memory` for an allocator's state on a machine of ``nodes`` nodes (its spec: ``spec``)."""
    check_memory(nodes * NODE_BYTES, "machine", spec, f"an allocator on a machine of {nodes:,} nodes")
