"""Experiments at scale: declarative sweeps, a crash-proof results store, reports and reproductions.

* :func:`load_spec` / :func:`parse_spec` — a grid of simulations as TOML or a dict (:mod:`.spec`);
* :func:`run_sweep` — every cell not yet stored, on Dask or in this process (:mod:`.engine`);
* :func:`load` — the results as a pandas DataFrame (:mod:`.store`);
* :func:`write_report` — a self-contained HTML report with its figures (:mod:`.report`);
* :func:`reproduce` — the papers' experiments as built-in specs (:mod:`.reproduce`).

>>> from topoalloc.experiments import parse_spec
>>> spec = parse_spec({"grid": {"scheduler": ["fcfs", "easy"], "work_multiple": [1.0, 2.0]}})
>>> len(spec.cells())
4
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._lazy import attach

if TYPE_CHECKING:
    from .spec import Cell, ExperimentSpec, SpecError, load_spec, parse_spec
    from .store import Store, load

__all__ = ["load", "load_spec", "parse_spec", "run_sweep", "write_report", "reproduce", "ExperimentSpec", "Cell", "SpecError", "Store"]

#: names loaded on first use (PEP 562): the command line lists the built-in papers without loading the specs' parser
_HOMES = {"Cell": "spec", "ExperimentSpec": "spec", "SpecError": "spec", "load_spec": "spec", "parse_spec": "spec", "Store": "store", "load": "store"}


__getattr__, __dir__ = attach(__name__, _HOMES, __all__)


def run_sweep(*args: Any, **kwargs: Any) -> Any:
    """See :func:`topoalloc.experiments.engine.run_sweep`."""
    from .engine import run_sweep as _run

    return _run(*args, **kwargs)


def write_report(*args: Any, **kwargs: Any) -> Any:
    """See :func:`topoalloc.experiments.report.write_report`."""
    from .report import write_report as _write

    return _write(*args, **kwargs)


def reproduce(*args: Any, **kwargs: Any) -> Any:
    """See :func:`topoalloc.experiments.reproduce.reproduce`."""
    from .reproduce import reproduce as _rep

    return _rep(*args, **kwargs)
