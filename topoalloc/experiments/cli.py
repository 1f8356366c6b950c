"""``topoalloc sweep``, ``report``, ``reproduce`` and ``animate``."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from ..errors import InvalidArgument

__all__ = ["run"]


def _options(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InvalidArgument("--cluster-option", item, "KEY=VALUE, e.g. cores=4 or walltime=01:00:00")
        v: Any = value
        for conv in (int, float):
            try:
                v = conv(value)
                break
            except ValueError:
                continue
        out[key.strip()] = v
    return out


def _command(args: argparse.Namespace) -> str:
    return shlex.join(["topoalloc", *getattr(args, "argv", sys.argv[1:])])


def _sweep_spec(args: argparse.Namespace, spec: Any, out: str) -> int:
    from ..cli import Interrupted
    from .engine import run_sweep
    from .store import Store

    try:
        res = run_sweep(
            spec,
            out,
            workers=args.workers,
            cluster=args.cluster,
            cluster_options=_options(args.cluster_option),
            trace_dirs=args.traces,
            progress=not args.quiet,
            command=_command(args),
        )
    except KeyboardInterrupt:
        try:
            n = len(Store(out, create=False).done())
        except Exception:
            n = 0
        raise Interrupted(f"{n} cells are stored in {out}; run the same command again to resume") from None
    print(f"topoalloc: {spec.name}: {res.line()}; results in {out}", file=sys.stderr)
    for f in res.failures:
        print(f"topoalloc: failed cell {f}", file=sys.stderr)
    return 0 if res.failed == 0 else 1


def run(args: argparse.Namespace) -> int:
    if args.command == "sweep":
        from .spec import load_spec

        spec = load_spec(args.spec, quick=args.quick)
        status = _sweep_spec(args, spec, args.out)
        if args.report:
            from .report import write_report

            path = write_report(args.out)
            print(f"topoalloc: report {path}", file=sys.stderr)
        return status
    if args.command == "report":
        from .report import write_report

        path = write_report(args.dir, out=args.out)
        print(f"topoalloc: report {path}", file=sys.stderr)
        return 0
    if args.command == "reproduce":
        from .report import write_report
        from .reproduce import builtin_spec

        spec = builtin_spec(args.paper, quick=args.quick)
        out = args.out or f"topoalloc-{args.paper}{'-quick' if args.quick else ''}"
        status = _sweep_spec(args, spec, out)
        path = write_report(out)
        print(f"topoalloc: report {path}", file=sys.stderr)
        from .claims import claim_rows
        from .store import load

        rows = claim_rows(spec.claims, load(out, errors=False)) if spec.claims else []
        for r in rows:
            print(f"  [{'holds' if r['holds'] else 'DOES NOT HOLD' if r['holds'] is False else 'n/a'}] {r['claim']}: paper {r['paper']}; ours {r['ours']}")
        return status
    if args.command == "animate":
        from .animate import animate_cli

        return animate_cli(args)
    raise InvalidArgument("command", args.command, "sweep, report, reproduce or animate")
