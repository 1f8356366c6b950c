"""The papers' experiments as built-in specs (package data), run by the same engine as ``topoalloc sweep``.

``topoalloc reproduce PAPER [--quick]`` = :func:`builtin_spec` + :func:`~topoalloc.experiments.engine.run_sweep`
+ :func:`~topoalloc.experiments.report.write_report`, whose report carries the
table of the paper's claims (:mod:`topoalloc.experiments.claims`).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument

if TYPE_CHECKING:
    from .spec import ExperimentSpec

__all__ = ["PAPERS", "builtin_spec", "reproduce"]

#: paper -> (spec file in the package, what it reproduces)
PAPERS: dict[str, tuple[str, str]] = {
    "mao": ("mao.toml", "Mao, Chen & Watson: subtorus allocation (EP, NEP) on QCDOC and JLAB tori, figures 3-7 and saturation"),
    "turner": ("turner.toml", "Turner (1997) ch. 4: the Auxiliary Free List against the Free List on hypercubes"),
    "cplant": ("cplant.toml", "Leung, Phillips, Bunde et al. (CLUSTER 2002): curve orderings and 1-D allocation, Figure 1 and Table 1"),
    "bani-ahmad": ("bani_ahmad.toml", "Bani-Ahmad: bounded ANCA against MBS, Paging and contiguous allocation on a 2-D mesh with all-to-all traffic, Figures 1-12"),
}


def builtin_spec(paper: str, *, quick: bool = False) -> ExperimentSpec:
    """The built-in spec of ``paper`` (its ``[quick]`` overrides with ``quick``)."""
    import tomllib

    from .spec import parse_spec

    if paper not in PAPERS:
        raise InvalidArgument("paper", paper, f"one of {', '.join(PAPERS)}")
    name = PAPERS[paper][0]
    text = resources.files("topoalloc.experiments").joinpath("specs", name).read_text(encoding="utf-8")
    spec = parse_spec(tomllib.loads(text), source=name, text=text, base_dir=Path.cwd(), quick=quick, default_name=paper)
    if quick:
        spec.name = f"{spec.name}-quick"
    return spec


def reproduce(paper: str, out: str | os.PathLike[str] | None = None, *, quick: bool = False, **sweep: Any) -> Path:
    """Run ``paper``'s spec into ``out`` and write its report; the report's path."""
    from .engine import run_sweep
    from .report import write_report

    spec = builtin_spec(paper, quick=quick)
    out = Path(out or f"topoalloc-{paper}{'-quick' if quick else ''}")
    run_sweep(spec, out, **sweep)
    return write_report(out)
