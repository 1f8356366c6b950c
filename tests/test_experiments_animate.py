"""topoalloc animate: layouts of every machine kind, the GIF and the HTML player."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

pytest.importorskip("PIL")

from topoalloc.cli import main  # noqa: E402
from topoalloc.experiments.animate import layout  # noqa: E402
from topoalloc.topology import parse_machine  # noqa: E402


@pytest.mark.parametrize("machine", ["mesh:16x8", "torus:4x4x3", "mesh:4x3x2x2", "hypercube:7", "hypercube:4", "flat:10"])
def test_every_node_has_its_own_cell(machine):
    lay = layout(parse_machine(machine))
    cells = set(zip(lay.rows.tolist(), lay.cols.tolist()))
    assert len(cells) == parse_machine(machine).n_nodes
    assert all(0 <= r < lay.height and 0 <= c < lay.width for r, c in cells)


def test_hypercube_grid_neighbours_differ_in_one_bit():
    lay = layout(parse_machine("hypercube:6"))
    at = {(r, c): n for n, (r, c) in enumerate(zip(lay.rows.tolist(), lay.cols.tolist()))}
    for (r, c), n in at.items():
        for dr, dc in ((0, 1), (1, 0)):
            m = at.get((r + dr, c + dc))
            if m is not None:
                assert bin(n ^ m).count("1") == 1


def test_mesh_layout_is_x_across_y_down():
    lay = layout(parse_machine("mesh:16x8"))
    assert (lay.height, lay.width) == (8, 16)
    assert (lay.rows[17], lay.cols[17]) == (1, 1)


def test_gif(tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "a.gif"
    assert main(["animate", "--machine", "mesh:16x8", "--allocator", "best_fit:curve=hilbert", "--clean", "--jobs", "80", "--frames", "25", "--out", str(out)]) == 0
    im = Image.open(out)
    assert im.n_frames == 25
    colours = set()
    for i in range(im.n_frames):
        im.seek(i)
        colours |= {c for _, c in im.convert("RGB").getcolors(1 << 16)}
    assert len(colours) > 5  # jobs in colours, not one blank picture


def test_mp4(tmp_path):
    """An H.264 video: as many frames as asked, even sides, the jobs in colour; read back with the same ffmpeg."""
    ffmpeg = pytest.importorskip("imageio_ffmpeg")
    out = tmp_path / "a.mp4"
    assert main(["animate", "--machine", "torus:4x4x3", "--allocator", "best_fit:curve=hilbert", "--clean", "--jobs", "60", "--frames", "15", "--out", str(out)]) == 0
    reader = ffmpeg.read_frames(str(out))
    meta = reader.__next__()
    w, h = meta["size"]
    pics = [np.frombuffer(f, dtype=np.uint8).reshape(h, w, 3) for f in reader]
    assert len(pics) == 15 and w % 2 == 0 and h % 2 == 0 and meta["codec"].startswith("h264")
    # some frame shows several jobs: many distinct colours (allowing for compression) below the caption
    assert max(len(np.unique(p[40:].reshape(-1, 3) // 32, axis=0)) for p in pics) > 5
    assert not [p for p in tmp_path.iterdir() if p.name != "a.mp4"]  # no temporary file left


def test_mp4_without_the_video_extra_is_one_line_before_simulating(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # import fails
    assert main(["animate", "--machine", "mesh:8x8", "--out", str(tmp_path / "a.mp4")]) == 2
    err = capsys.readouterr().err
    assert 'pip install "topoalloc[video]"' in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_bad_arguments_are_one_line(tmp_path, capsys):
    assert main(["animate", "--machine", "mesh:8x8", "--out", str(tmp_path / "a.mp3")]) == 2
    assert "a file ending in .gif, .mp4 or .html" in capsys.readouterr().err
    assert main(["animate", "--machine", "mesh:8x8", "--frames", "1", "--out", str(tmp_path / "a.gif")]) == 2
    assert "--frames" in capsys.readouterr().err


def test_html_player_with_time_slider(tmp_path):
    out = tmp_path / "h.html"
    assert main(["animate", "--machine", "hypercube:7", "--allocator", "buddy", "--clean", "--jobs", "60", "--frames", "20", "--out", str(out)]) == 0
    text = out.read_text()
    assert "type=range" in text and text.count("iVBOR") == 20  # 20 PNG frames embedded
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("headless Chromium not installed (Debian: apt-get install -y chromium)")
    p = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120)
    assert not [line for line in p.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert re.search(r"<span id=\"label\">t = [\d,]+ s, busy \d+/128, running \d+ jobs</span>", p.stdout)
