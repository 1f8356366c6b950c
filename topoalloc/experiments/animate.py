"""``topoalloc animate``: the machine's occupancy over time, each job a colour.

Layouts (every node one cell of a picture):

* a 2-D mesh or torus — its grid, x to the right, y down (the first side is x);
* a 3-D mesh or torus — its z slices side by side, each an x-y grid;
* more dimensions — the dimensions after the second folded into slices;
* a hypercube of n dimensions — its Gray-code grid: the low ⌈n/2⌉ address bits
  give the column and the high bits the row, each through the inverse of the
  binary-reflected Gray code, so neighbouring cells differ in one address bit
  and a subcube is a set of whole rows and columns of a block;
* a flat machine — node ids in rows.

Frames are evenly spaced in time from the first start to the last end.
Output: an animated GIF (Pillow), an H.264 MP4 (with the ``video`` extra,
``imageio-ffmpeg``, which ships its own ffmpeg), or one self-contained HTML
page with a time slider and a play button (the frames embedded as PNG).
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..outputs import atomic_output, atomic_write, check_output

__all__ = ["layout", "frames", "write_gif", "write_mp4", "write_html", "animate", "animate_cli"]

_FREE = (236, 236, 236)
_GAP = (255, 255, 255)


def _gray_inverse(g: np.ndarray) -> np.ndarray:
    b = g.copy()
    shift = 1
    while shift < 64:
        b ^= b >> shift
        shift <<= 1
    return b


@dataclass(frozen=True)
class Layout:
    """Cell (row, column) of every node, and the picture's size in cells."""

    rows: np.ndarray
    cols: np.ndarray
    height: int
    width: int
    description: str


def layout(topology: Any) -> Layout:
    """Where each node of ``topology`` is drawn (see the module notes)."""
    from ..topology.base import Grid
    from ..topology.hypercube import Hypercube

    n = topology.n_nodes
    ids = np.arange(n, dtype=np.int64)
    if isinstance(topology, Hypercube):
        k = topology.n
        cbits = (k + 1) // 2
        col = _gray_inverse(ids & ((1 << cbits) - 1))
        row = _gray_inverse(ids >> cbits)
        return Layout(row, col, 1 << (k - cbits), 1 << cbits, f"Q{k} as its Gray-code grid: columns = low {cbits} address bits, rows = high {k - cbits} bits")
    if isinstance(topology, Grid):
        dims = tuple(int(d) for d in topology.dims)
        if len(dims) == 1:
            dims = (dims[0], 1)
        a, b = dims[0], dims[1]
        x = ids % a
        y = (ids // a) % b
        z = ids // (a * b)
        slices = int(math.prod(dims[2:])) if len(dims) > 2 else 1
        if slices == 1:
            return Layout(y, x, b, a, f"{a}x{b} grid (x across, y down)")
        per_row = max(1, int(math.ceil(math.sqrt(slices * b / a))))
        per_row = min(per_row, slices)
        srow, scol = z // per_row, z % per_row
        rows_of_slices = int(math.ceil(slices / per_row))
        return Layout(srow * (b + 1) + y, scol * (a + 1) + x, rows_of_slices * (b + 1) - 1, per_row * (a + 1) - 1, f"{slices} slices of {a}x{b} (z = slice, left to right, top to bottom)")
    side = int(math.ceil(math.sqrt(n)))
    return Layout(ids // side, ids % side, int(math.ceil(n / side)), side, f"{n} nodes in rows of {side}")


def _palette(n_jobs: int) -> np.ndarray:
    """A colour per job: evenly spaced hues, shuffled deterministically so neighbours in time differ."""
    import colorsys

    base = np.array([colorsys.hsv_to_rgb((i * 0.61803398875) % 1.0, 0.55 + 0.35 * ((i * 7) % 3) / 2, 0.75 + 0.2 * ((i * 5) % 2)) for i in range(max(n_jobs, 1))])
    return (base * 255).astype(np.uint8)


def frames(result: Any, topology: Any, n_frames: int = 120, scale: int | None = None) -> tuple[list[np.ndarray], list[dict[str, float]], Layout]:
    """RGB pictures of the machine at ``n_frames`` instants, and per frame {time, busy, running}."""
    lay = layout(topology)
    start, end = np.asarray(result.start, float), np.asarray(result.end, float)
    if not len(start):
        raise InvalidArgument("jobs", 0, "at least one job to animate")
    t0, t1 = float(start.min()), float(end.max())
    times = np.linspace(t0, t1, max(2, n_frames), endpoint=False) if t1 > t0 else np.array([t0])
    colours = _palette(len(start))
    owner = np.full(topology.n_nodes, -1, dtype=np.int64)
    nodes = [np.asarray(result.nodes_of(int(j)), dtype=np.int64) for j in range(len(start))]
    if scale is None:
        scale = max(2, min(24, 480 // max(lay.width, lay.height, 1)))
    pics: list[np.ndarray] = []
    info: list[dict[str, float]] = []
    for t in times:
        owner[:] = -1
        running = np.nonzero((start <= t) & (end > t))[0]
        for j in running:
            owner[nodes[j]] = j
        img = np.empty((lay.height, lay.width, 3), dtype=np.uint8)
        img[:] = _GAP
        busy = owner >= 0
        img[lay.rows, lay.cols] = _FREE
        img[lay.rows[busy], lay.cols[busy]] = colours[owner[busy]]
        big = np.repeat(np.repeat(img, scale, axis=0), scale, axis=1)
        if scale >= 4:  # thin grid lines between cells
            big[::scale, :, :] = np.minimum(big[::scale, :, :], 210)
            big[:, ::scale, :] = np.minimum(big[:, ::scale, :], 210)
        pics.append(big)
        info.append({"time": float(t), "busy": int(busy.sum()), "running": int(len(running))})
    return pics, info, lay


def _png(pic: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pic).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _captioned(pic: np.ndarray, inf: dict[str, float], n_nodes: int, title: str, even: bool = False) -> Any:
    """A frame with its caption lines (title; time, busy nodes, running jobs) above it, as a PIL image.

    ``even``: width and height rounded up to even numbers (what H.264's 4:2:0 colour needs).
    """
    from PIL import Image, ImageDraw

    h, w = pic.shape[:2]
    W, H = max(w, 360), h + 34
    if even:
        W, H = W + W % 2, H + H % 2
    canvas = Image.new("RGB", (W, H), _GAP)
    canvas.paste(Image.fromarray(pic), (0, 34))
    d = ImageDraw.Draw(canvas)
    d.text((4, 2), title.replace(":", " ")[:70], fill=(40, 40, 40))  # the default bitmap font has no colon
    d.text((4, 17), f"t = {inf['time']:,.0f} s   busy {inf['busy']}/{n_nodes}   running {inf['running']} jobs", fill=(40, 40, 40))
    return canvas


def write_gif(path: str | os.PathLike[str], pics: list[np.ndarray], info: list[dict[str, float]], n_nodes: int, *, title: str = "", ms: int = 100) -> None:
    """An animated GIF of the frames with a caption line (time, busy nodes, running jobs)."""
    from PIL import Image

    out = [_captioned(pic, inf, n_nodes, title).convert("P", palette=Image.Palette.ADAPTIVE, colors=255) for pic, inf in zip(pics, info)]
    with atomic_output(path) as tmp:
        out[0].save(tmp, format="GIF", save_all=True, append_images=out[1:], duration=ms, loop=0, optimize=False)


def _video(path: str | os.PathLike[str]) -> Any:
    try:
        import imageio_ffmpeg  # type: ignore[import-untyped, import-not-found, unused-ignore]  # (no type information; maybe not installed)
    except ImportError:
        raise InvalidArgument("--out", str(path), 'a .gif or .html file, or install the video extra for .mp4: pip install "topoalloc[video]"') from None
    return imageio_ffmpeg


def write_mp4(path: str | os.PathLike[str], pics: list[np.ndarray], info: list[dict[str, float]], n_nodes: int, *, title: str = "", fps: int = 10) -> None:
    """An H.264 MP4 of the frames with their captions, through the ffmpeg that ``imageio-ffmpeg`` ships.

    Raises
    ------
    InvalidArgument
        If ``imageio-ffmpeg`` is not installed (``pip install "topoalloc[video]"``).
    """
    imageio_ffmpeg = _video(path)
    frames_rgb = [np.asarray(_captioned(pic, inf, n_nodes, title, even=True)) for pic, inf in zip(pics, info)]
    H, W = frames_rgb[0].shape[:2]
    with atomic_output(path) as tmp:
        # the temporary name has no .mp4 suffix: name the container
        w = imageio_ffmpeg.write_frames(str(tmp), (W, H), fps=fps, codec="libx264", pix_fmt_out="yuv420p", macro_block_size=1,
                                        output_params=["-f", "mp4"], ffmpeg_log_level="error")
        w.send(None)
        for f in frames_rgb:
            w.send(np.ascontiguousarray(f))
        w.close()


def write_html(path: str | os.PathLike[str], pics: list[np.ndarray], info: list[dict[str, float]], n_nodes: int, *, title: str = "", legend: str = "") -> None:
    """One self-contained page: the frames as PNG data, a time slider and a play button."""
    import json

    data = [base64.b64encode(_png(p)).decode() for p in pics]
    doc = f"""<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:1.5em;color:#222}}img{{image-rendering:pixelated;border:1px solid #ccc;max-width:100%}}
#bar{{display:flex;gap:1em;align-items:center;margin:.6em 0}}input[type=range]{{width:480px}}</style></head><body>
<h1 style="font-size:1.3em">{html.escape(title)}</h1><p style="color:#555">{html.escape(legend)} Each job a colour; light grey: free.</p>
<div id=bar><button id=play>play</button><input id=slider type=range min=0 max={len(pics) - 1} value=0 step=1><span id=label></span></div>
<img id=frame alt="machine occupancy">
<script>
const frames = {json.dumps(data)};
const info = {json.dumps(info)};
const n = {n_nodes};
const img = document.getElementById('frame'), slider = document.getElementById('slider'), label = document.getElementById('label'), play = document.getElementById('play');
function show(i) {{ img.src = 'data:image/png;base64,' + frames[i]; const f = info[i];
  label.textContent = 't = ' + Math.round(f.time).toLocaleString() + ' s, busy ' + f.busy + '/' + n + ', running ' + f.running + ' jobs'; slider.value = i; }}
let timer = null;
play.onclick = function () {{ if (timer) {{ clearInterval(timer); timer = null; play.textContent = 'play'; return; }}
  play.textContent = 'pause'; timer = setInterval(function () {{ show((+slider.value + 1) % frames.length); }}, 120); }};
slider.oninput = function () {{ show(+slider.value); }};
show(0);
</script></body></html>
"""
    atomic_write(path, doc)


def animate(
    out: str | os.PathLike[str],
    *,
    trace: str | os.PathLike[str] | None = None,
    machine: str,
    allocator: str = "flat",
    scheduler: str = "easy",
    clean: bool = False,
    jobs: int = 200,
    n_frames: int = 120,
) -> Path:
    """Simulate the first ``jobs`` jobs and write the animation (``.gif``, ``.mp4`` or ``.html``)."""
    from ..api import simulate
    from ..topology import parse_machine
    from ..workload import default_trace_path, read_swf

    path = check_output(out, "--out", (".gif", ".mp4", ".html"))
    assert path is not None
    if path.suffix.lower() == ".mp4":
        _video(path)  # before simulating
    if jobs < 1:
        raise InvalidArgument("--jobs", jobs, "a positive number of jobs")
    if not 2 <= n_frames <= 2000:
        raise InvalidArgument("--frames", n_frames, "2 .. 2000 frames")
    topology = parse_machine(machine)
    if topology.n_nodes > 65536:
        raise InvalidArgument("--machine", machine, "a machine of at most 65,536 nodes to draw")
    w = read_swf(trace if trace is not None else default_trace_path())
    w = w.take(np.arange(min(jobs, len(w))))
    r = simulate(w, machine=topology, allocator=allocator, scheduler=scheduler, clean=clean, record_allocations=True, locality=False)
    pics, info, lay = frames(r, topology, n_frames)
    title = f"{len(r)} jobs on {topology.spec()}, {r.summary()['allocator']}, {r.summary()['scheduler']}"
    if path.suffix.lower() == ".gif":
        write_gif(path, pics, info, topology.n_nodes, title=title)
    elif path.suffix.lower() == ".mp4":
        write_mp4(path, pics, info, topology.n_nodes, title=title)
    else:
        write_html(path, pics, info, topology.n_nodes, title=title, legend=lay.description + ".")
    return path


def animate_cli(args: Any) -> int:
    import sys

    p = animate(args.out, trace=args.trace, machine=args.machine, allocator=args.allocator, scheduler=args.scheduler, clean=args.clean, jobs=args.jobs, n_frames=args.frames)
    print(f"topoalloc: animation {p}", file=sys.stderr)
    return 0
