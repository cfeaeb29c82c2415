"""Run the dashboard in a subprocess and drive it with Playwright + Debian's Chromium.

Used by ``tests/ui/test_browser.py``, ``bench/bench_app.py`` and ``bench/take_screenshots.py``.
Facts this relies on (see the project's browser-testing notes): Debian's ``chromium`` works
headless as root with the flags in :data:`CHROMIUM_ARGS`; Playwright drives it through
``executable_path`` (never ``playwright install``); Streamlit renders after load over a
websocket, so callers wait for elements, not for the page load.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence

import numpy as np

from tests.helpers import APP, REPO

CHROMIUM = os.environ.get("S2R_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
#: Software WebGL (SwiftShader) for the WebGL maps: with ``--disable-gpu`` Chromium no longer
#: falls back to it on its own.
WEBGL_ARGS = ["--enable-unsafe-swiftshader", "--use-angle=swiftshader"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> float:
    """Poll ``url/_stcore/health`` until it answers ``ok``; return the seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {proc.returncode} before it was "
                               "healthy")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                if resp.status == 200 and resp.read().strip() == b"ok":
                    return time.perf_counter() - start
        except OSError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"{url}/_stcore/health did not answer 'ok' within {timeout:.0f} s")


@contextlib.contextmanager
def running_app(env: Optional[Mapping[str, str]] = None, *, log_path: Optional[Path] = None,
                timeout: float = 90.0) -> Iterator[str]:
    """Start ``streamlit run app.py`` on a free port; yield its URL; stop it by PID on exit.

    Parameters
    ----------
    env : mapping, optional
        Extra environment variables for the app (``S2R_CACHE_DIR``, ``S2R_DEMO_SPEC``, ...).
    log_path : Path, optional
        Where the server's stdout/stderr go (a file in a new temporary folder otherwise: never
        inside ``S2R_CACHE_DIR``, which s2r refuses to use when it holds files it did not
        write).
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP),
           "--server.headless", "true", "--server.address", "127.0.0.1",
           "--server.port", str(port), "--server.fileWatcherType", "none",
           "--browser.gatherUsageStats", "false"]
    full_env = {**os.environ, **(env or {})}
    log_path = Path(log_path or Path(tempfile.mkdtemp(prefix="s2r-app-log-"))
                    / f"streamlit-{port}.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            wait_healthy(url, proc, timeout)
            yield url
        except BaseException:
            sys.stderr.write(log_path.read_text(errors="replace")[-4000:])
            raise
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server (and only it: its own process group) by PID."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def chromium_available() -> bool:
    return Path(CHROMIUM).exists() or shutil.which("chromium") is not None


@contextlib.contextmanager
def browser_page(*, width: int = 1400, height: int = 1000,
                 extra_args: Sequence[str] = ()) -> Iterator["object"]:
    """A Playwright page in headless Debian Chromium (closed on exit); ``extra_args`` are
    added to :data:`CHROMIUM_ARGS` (e.g. :data:`WEBGL_ARGS`)."""
    from playwright.sync_api import sync_playwright

    if not chromium_available():
        raise RuntimeError(f"Chromium not found at {CHROMIUM}: run `make browser-deps`")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=[*CHROMIUM_ARGS, *extra_args], headless=True)
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            yield context.new_page()
        finally:
            browser.close()


def wait_idle(page, timeout_ms: int = 300_000) -> None:
    """Wait until Streamlit has finished the script run (no 'running' indicator)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:  # a run starts a moment after a click: let its indicator appear first
        page.wait_for_selector('[data-testid="stStatusWidget"]', timeout=3_000)
    except PlaywrightTimeout:
        pass
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
        timeout=timeout_ms)
    time.sleep(1.5)  # images and Vega finish drawing after the last delta


def _grid(box: dict, step: int) -> list[tuple[float, float]]:
    """Positions on a grid over the central part of a bounding box (where the data sit)."""
    xs = range(int(box["width"] * 0.05), int(box["width"] * 0.85), step)
    ys = range(int(box["height"] * 0.05), int(box["height"] * 0.9), step)
    return [(box["x"] + dx, box["y"] + dy) for dy in ys for dx in xs]


def find_chart_point(page, chart, *, wanted: Optional[str] = None, step: int = 6,
                     timeout_s: float = 120.0) -> tuple[float, float, str]:
    """Hover over ``chart`` until Vega's tooltip shows (and names ``wanted``, if given).

    Vega draws marks on a canvas or as SVG paths without data attributes, so points are found
    the way a user finds them: by moving the mouse until ``#vg-tooltip-element.visible``
    appears. The centres of SVG symbol marks (when Vega renders SVG) are tried first, then a
    grid of positions over the chart, every second row and column first.

    Returns
    -------
    (x, y, tooltip_text)
        Page coordinates of the point and the text of its tooltip.
    """
    box = chart.bounding_box()
    if box is None:
        raise RuntimeError("chart has no bounding box (not rendered?)")
    candidates = []
    for mark in chart.locator("g.mark-symbol path").all():
        b = mark.bounding_box()
        if b and b["width"] > 0:
            candidates.append((b["x"] + b["width"] / 2, b["y"] + b["height"] / 2))
    coarse = _grid(box, 2 * step)           # a quarter of the moves finds most points
    candidates += coarse + sorted(set(_grid(box, step)) - set(coarse), key=lambda p: (p[1], p[0]))
    tooltip = page.locator("#vg-tooltip-element.visible")
    deadline = time.perf_counter() + timeout_s
    for x, y in candidates:
        if time.perf_counter() > deadline:
            break
        page.mouse.move(x, y)
        if tooltip.count():
            text = tooltip.inner_text()
            if wanted is None or wanted in text:
                return x, y, text
    raise RuntimeError(f"no chart point{' naming ' + repr(wanted) if wanted else ''} found "
                       f"under the mouse within {timeout_s:.0f} s")


#: The Projection page's map (st.plotly_chart) and the plot area inside it.
MAP = '[data-testid="stPlotlyChart"]'
MAP_AREA = f"{MAP} .nsewdrag"
#: A live t-SNE's snapshot map (st.pydeck_chart: ui.projection_map.live_deck), its canvas.
LIVE_MAP = '[data-testid="stDeckGlJsonChart"] canvas'
_AXES = """el => {
    const gd = el.closest('.js-plotly-plot') || el.querySelector('.js-plotly-plot');
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
    const px = (a, v, o) => o + a._offset + a.l2p(v);
    return [px(xa, 1, r.left) - px(xa, 0, r.left), px(xa, 0, r.left),
            px(ya, 1, r.top) - px(ya, 0, r.top), px(ya, 0, r.top)];
}"""


def map_to_page(page, chart) -> tuple[float, float, float, float]:
    """``(ax, bx, ay, by)``: a point of the map at data ``(x, y)`` is drawn at page position
    ``(ax * x + bx, ay * y + by)`` (plotly's own axis transforms of the chart as drawn now;
    ``chart`` is a locator inside the Plotly chart)."""
    return tuple(float(v) for v in chart.evaluate(_AXES))


def hover_text(page) -> str:
    """The text of the Plotly tooltip on the page ('' when none shows)."""
    return " ".join(page.locator(f"{MAP} .hoverlayer .hovertext").evaluate_all(
        "els => els.map(e => e.textContent)"))  # SVG text: no innerText


def find_map_point(page, chart, *, exclude=(), n_frames: Optional[int] = None,
                   timeout_s: float = 90.0) -> tuple[float, float, int]:
    """Hover over the Projection page's map (``chart``: a locator inside it) until its
    tooltip names a frame not in ``exclude``: ``(x, y, frame)``. plotly.js finds the
    hovered point on the CPU, so the tooltip belongs to the pointer's position at once."""
    box = chart.bounding_box()
    deadline = time.perf_counter() + timeout_s
    for fy in np.linspace(0.3, 0.7, 9):
        for fx in np.linspace(0.3, 0.7, 9):
            if time.perf_counter() > deadline:
                break
            x, y = box["x"] + fx * box["width"], box["y"] + fy * box["height"]
            page.mouse.move(x, y)
            time.sleep(0.15)
            tip = hover_text(page)
            if "frame" in tip:
                frame = int(tip.rsplit("frame", 1)[1].split()[0])
                assert frame >= 0 and (n_frames is None or frame < n_frames), tip
                assert "sim" in tip or "real" in tip, tip
                if frame not in exclude:
                    return x, y, frame
    raise AssertionError("no point of the map showed a tooltip under the mouse")
