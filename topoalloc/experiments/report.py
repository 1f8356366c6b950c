"""``topoalloc report DIR``: one self-contained HTML file (figures embedded) and the figures beside it.

The report has, in order: what was run (name, description, cells, failures),
the claim checks of a reproduction (holds / does not hold, with numbers), the
figures (a metric against the load, one line per allocator/scheduler, the
band a 95 % confidence interval over replications where there are several),
the comparison tables, a table of every point's means, the cells that
failed with their errors, and the exact command, spec and versions.

Figures are written as ``DIR/figures/NAME.png`` and ``.svg`` and embedded in
the HTML as base64 PNG, so the one file can be mailed or archived alone.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..outputs import atomic_output, atomic_write
from .claims import claim_rows, claim_tables
from .stats import mean_ci
from .store import Store

__all__ = ["write_report", "figure_specs"]

_MAX_TABLE_ROWS = 400

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.holds{background:#e6f4ea}.fails{background:#fce8e6}.na{background:#f4f4f4;color:#777}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:.9em;color:#555}
pre{background:#f7f7f7;padding:.7em;overflow-x:auto;font-size:.8em}.meta{color:#555}
"""

_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('figure img');
  var ok = 0;
  imgs.forEach(function (im) { if (im.complete && im.naturalWidth > 0) { ok += 1; } });
  document.body.setAttribute('data-figures', ok + '/' + imgs.length);
  var el = document.getElementById('figure-check');
  if (el) { el.textContent = ok + ' of ' + imgs.length + ' figures displayed'; }
});
"""


def _group_key(key: Any) -> tuple[Any, ...]:
    """A pandas group key as a tuple, NaN as None (NaN != NaN: two NaN keys would never match)."""
    return tuple(None if (isinstance(k, float) and k != k) else k for k in (key if isinstance(key, tuple) else (key,)))


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def figure_specs(df: Any, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The figures to draw: the spec's ``[report] figures``, else each metric against the first numeric axis."""
    report = meta.get("report") or {}
    axes = [a for a in meta.get("axes", []) if a in df.columns]
    metrics = df.attrs.get("metrics") or []
    numeric_axes = [a for a in axes if df[a].map(_num).all()]
    facets = [f for f in report.get("facets", []) if f in df.columns]
    x_default = report.get("x") or (numeric_axes[0] if numeric_axes else None)
    figs = []
    for f in report.get("figures", []):
        figs.append({"x": f.get("x", x_default), "y": f["y"], "series": f.get("series", report.get("series")), "facets": f.get("facets", facets), "logx": bool(f.get("logx", False)), "logy": bool(f.get("logy", False)), "title": f.get("title", ""), "where": f.get("where")})
    if not figs and x_default is not None:
        for m in metrics[:8]:
            if m != x_default:
                figs.append({"x": x_default, "y": m, "series": report.get("series"), "facets": facets, "logx": False, "logy": False, "title": "", "where": None})
    return figs


def _points(df: Any, fig: dict[str, Any], axes: list[str]) -> dict[tuple[Any, ...], dict[tuple[Any, ...], list[tuple[float, float, float]]]]:
    """facet -> series -> [(x mean, y mean, y CI half-width)], one point per grid point (replications pooled)."""
    x, y = fig["x"], fig["y"]
    facets = [f for f in fig["facets"] if f in df.columns]
    declared = [s for s in (fig["series"] or []) if s in df.columns]
    # axes constant in what is drawn (e.g. after a figure's `where`) would only lengthen the legend
    rest = [a for a in axes if a not in facets and a not in declared and a != x and a != "rep" and a in df.columns and df[a].nunique(dropna=False) > 1]
    line_axis = x if x in axes else None
    if line_axis is None:  # x is a metric: each line runs along the first numeric axis (the load)
        numeric = [a for a in rest if df[a].map(_num).all()]
        line_axis = numeric[0] if numeric else None
    series = declared + [a for a in rest if a != line_axis]
    point_keys = facets + series + ([line_axis] if line_axis else [])
    out: dict[tuple[Any, ...], dict[tuple[Any, ...], list[tuple[float, float, float]]]] = {}
    if x not in df.columns or y not in df.columns:
        return out
    groups = df.groupby(point_keys, sort=True, dropna=False) if point_keys else [((), df)]
    for key, g in groups:
        key = _group_key(key)
        fk = tuple(key[: len(facets)])
        sk = tuple(key[len(facets) : len(facets) + len(series)])
        xs = [float(v) for v in g[x] if _num(v) and v == v]
        ys = [float(v) for v in g[y] if _num(v) and v == v]
        if not xs or not ys:
            continue
        my, half = mean_ci(ys)
        out.setdefault(fk, {}).setdefault(sk, []).append((sum(xs) / len(xs), my, half))
    for fk in out:
        for sk in out[fk]:
            out[fk][sk].sort()
    fig["_facet_names"] = facets
    fig["_series_names"] = series
    return out


def _draw(df: Any, fig: dict[str, Any], axes: list[str]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = _points(df, fig, axes)
    if not pts:
        return None
    n = len(pts)
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    f, axs = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.2 * rows), squeeze=False)
    styles = ["o-", "s--", "^-.", "D:", "v-", "P--", "X-.", "*:"]
    for i, (fk, series) in enumerate(sorted(pts.items(), key=lambda kv: tuple(map(str, kv[0])))):
        ax = axs[i // cols][i % cols]
        span = sorted({a for p in series.values() for a, _, _ in p if not (fig.get("logx") and a <= 0)})
        for j, (sk, p) in enumerate(sorted(series.items(), key=lambda kv: tuple(map(str, kv[0])))):
            xs = [a for a, _, _ in p]
            ys = [b for _, b, _ in p]
            lab = " / ".join(map(str, sk)) if sk else fig["y"]
            if len(p) == 1 and len(span) > 1 and p[0][0] not in span:
                # a reference without this axis (e.g. an unbounded allocator on a bound axis): flat across it
                _, y0, h0 = p[0]
                p = [(span[0], y0, h0), (span[-1], y0, h0)]
                xs, ys = [span[0], span[-1]], [y0, y0]
                lab += " (no " + fig["x"].replace("_", " ") + ")"
            line = ax.plot(xs, ys, styles[j % len(styles)], markersize=3, linewidth=1.2, label=lab)[0]
            if any(h == h for _, _, h in p):
                lo = [b - (h if h == h else 0) for _, b, h in p]
                hi = [b + (h if h == h else 0) for _, b, h in p]
                if fig["logy"]:
                    lo = [max(v, min(ys) * 0.5) if v > 0 else min(ys) * 0.5 for v in lo]
                ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.18, linewidth=0)
        if fig["logy"]:
            ax.set_yscale("log")
        if fig.get("logx"):
            ax.set_xscale("log", base=2)
        ax.set_xlabel(fig["x"].replace("_", " "))
        ax.set_ylabel(fig["y"].replace("_", " "))
        if fk:
            ax.set_title(", ".join(f"{k}={v}" for k, v in zip(fig["_facet_names"], fk)), fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, title=" / ".join(fig["_series_names"]) or None, title_fontsize=7)
    for k in range(n, rows * cols):
        axs[k // cols][k % cols].axis("off")
    if fig["title"]:
        f.suptitle(fig["title"], fontsize=11)
    f.tight_layout()
    return f


def _table(rows: Sequence[dict[str, Any]], *, limit: int = _MAX_TABLE_ROWS, holds_col: str | None = None) -> str:
    if not rows:
        return "<p class=meta>(no rows)</p>"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = ["<table><thead><tr>", *(f"<th>{html.escape(str(c))}</th>" for c in cols), "</tr></thead><tbody>"]
    for r in rows[:limit]:
        cls = ""
        if holds_col is not None:
            h = r.get(holds_col)
            cls = " class=holds" if h is True else " class=fails" if h is False else " class=na"
        out.append(f"<tr{cls}>")
        for c in cols:
            v = r.get(c)
            if c == holds_col:
                v = "holds" if v is True else "does not hold" if v is False else "not run"
            if isinstance(v, float):
                text = "-" if v != v else f"{v:.4g}"
                out.append(f"<td class=num>{text}</td>")
            else:
                out.append(f"<td>{html.escape('-' if v is None else str(v))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    if len(rows) > limit:
        out.append(f"<p class=meta>first {limit} of {len(rows)} rows; all of them: <code>topoalloc.experiments.load(DIR)</code></p>")
    return "".join(out)


def _means(df: Any, axes: list[str], metrics: list[str]) -> list[dict[str, Any]]:
    keys = [a for a in axes if a in df.columns and a != "rep"]
    if df.empty or not metrics:
        return []
    rows = []
    groups = df.groupby(keys, sort=True, dropna=False) if keys else [((), df)]
    for key, g in groups:
        key = _group_key(key)
        r: dict[str, Any] = dict(zip(keys, key))
        r["runs"] = len(g)
        for m in metrics:
            if m in g:
                mean, half = mean_ci([float(v) for v in g[m] if _num(v)])
                r[m] = mean
                if len(g) > 1:
                    r[f"{m} ±95%"] = half
        rows.append(r)
    return rows


def write_report(root: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """Write the report of the results folder ``root``; returns the HTML file's path.

    Figures go to ``root/figures`` (PNG and SVG) whatever ``out`` is.
    """
    from .engine import versions

    store = Store(root, create=False)
    df = store.load()
    meta = store.meta()
    target = Path(out) if out is not None else Path(root) / "report.html"
    ok = df[df["status"] == "ok"] if "status" in df else df
    failed = df[df["status"] == "error"] if "status" in df else df.iloc[0:0]
    axes = [a for a in meta.get("axes", []) if a in df.columns]
    metrics = list(df.attrs.get("metrics") or [])
    name = meta.get("name", Path(root).name)

    parts: list[str] = []
    parts.append(f"<h1>{html.escape(name)}</h1>")
    if meta.get("description"):
        parts.append(f"<p>{html.escape(meta['description'])}</p>")
    parts.append(f"<p class=meta>{len(ok)} cells with results, {len(failed)} failed, {meta.get('cells', '?')} in the grid's first round; report written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. <span id=figure-check></span></p>")

    claims = claim_rows(meta.get("claims"), df)
    if claims:
        held = sum(1 for c in claims if c["holds"] is True)
        not_held = sum(1 for c in claims if c["holds"] is False)
        parts.append(f"<h2>Claims</h2><p>{held} hold, {not_held} do not hold, {len(claims) - held - not_held} not run.</p>")
        parts.append(_table(claims, holds_col="holds"))

    figdir = Path(root) / "figures"
    figdir.mkdir(exist_ok=True)
    figs = figure_specs(ok, meta)
    if figs and not ok.empty:
        parts.append("<h2>Figures</h2>")
        import matplotlib.pyplot as plt

        for i, fig in enumerate(figs, 1):
            sel = ok
            if fig.get("where"):
                try:
                    sel = ok.query(fig["where"])
                except Exception as exc:  # a bad filter names itself in the report instead of failing it
                    parts.append(f"<p class=fails>Figure {i}: where = {html.escape(repr(fig['where']))} could not be applied: {html.escape(str(exc))}</p>")
                    continue
            f = _draw(sel, fig, axes)
            if f is None:
                continue
            stem = f"fig{i}-{fig['y'].replace('.', '_').replace(':', '_')}-vs-{fig['x'].replace('.', '_')}"
            buf = io.BytesIO()
            f.savefig(buf, format="png", dpi=100)
            png = buf.getvalue()
            atomic_write(figdir / f"{stem}.png", png)
            with atomic_output(figdir / f"{stem}.svg") as tmp:
                f.savefig(tmp, format="svg")
            plt.close(f)
            caption = fig["title"] or f"{fig['y']} against {fig['x']}"
            band = " Bands: 95 % confidence interval over replications." if ok.get("rep") is not None and ok["rep"].nunique() > 1 else ""
            parts.append(
                f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
                f"<figcaption>Figure {i}. {html.escape(caption)}.{band} Files: figures/{stem}.png, .svg</figcaption></figure>"
            )

    for title, rows in claim_tables(meta.get("claims"), df):
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(_table(rows))

    if metrics:
        parts.append("<h2>Means per point</h2>")
        parts.append(_table(_means(ok, axes, metrics)))

    if not failed.empty:
        parts.append("<h2>Failed cells</h2>")
        rows = [{"key": k, **{a: r.get(a) for a in axes}, "error": str(e).splitlines()[0] if e else ""} for k, e, r in zip(failed["key"], failed["error"], failed.to_dict("records"))]
        parts.append(_table(rows))

    parts.append("<h2>How this was run</h2>")
    parts.append(f"<p>Command:</p><pre>{html.escape(meta.get('command', '(unknown)'))}</pre>")
    vers = {**meta.get("versions", {})}
    parts.append("<p>Versions (of the sweep):</p>" + _table([vers]))
    now = versions()
    parts.append("<p>Versions (of this report):</p>" + _table([now]))
    spec_text = ""
    for fname in ("spec.toml", "spec.json"):
        p = Path(root) / fname
        if p.exists():
            spec_text = p.read_text(encoding="utf-8")
            break
    if spec_text:
        parts.append(f"<p>Spec:</p><pre>{html.escape(spec_text)}</pre>")
    timings = ok["seconds"].dropna() if "seconds" in ok else None
    if timings is not None and len(timings):
        parts.append(f"<p class=meta>Simulation time: {float(timings.sum()):.1f} s over {len(timings)} cells (mean {float(timings.mean()):.2f} s, longest {float(timings.max()):.1f} s).</p>")

    doc = (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<meta name=viewport content='width=device-width, initial-scale=1'><title>{html.escape(name)} — topoalloc report</title>"
        f"<style>{_CSS}</style></head><body>{''.join(parts)}<script>{_SCRIPT}</script></body></html>\n"
    )
    atomic_write(target, doc)
    atomic_write(Path(root) / "report.json", json.dumps({"claims": claims, "figures": [f"figures/{p.name}" for p in sorted(figdir.glob('*.png'))]}, indent=2, default=str))
    return target
