"""The Projection page on a 50,000-frame dataset in a real browser: the sample map (5,000 of
50,000, stratified by domain and episode) and the map of every frame draw in WebGL (Plotly's
scattergl), hover names a frame on each, and a click shows that frame: on the sample map
within the stated time; on the map of every frame, clicks on several points (one of them the
lone point nearest the plot's border) each select exactly the frame drawn under the pointer,
found from the map's coordinates and the chart's own axis transform.

The dataset is the demo at 50,000 frames (500 episodes x 50 steps per domain, 64 x 80 pixels,
rendered lazily on read) and the encoder the robot-state reference, so nothing has to embed
50,000 images. The score record is computed for real; the two t-SNE maps the page asks for
(the stratified 5,000-frame sample and every frame) are written to the cache beforehand
through the real :func:`s2r.pipeline.project_frameset` (so under the exact key the page
reads) with the t-SNE itself replaced by a 2-D PCA of the state, which keeps the test from
spending minutes on t-SNE; everything the page does with the map is its real code on 50,000
points. Needs Chromium (``make browser-deps``); ``pytest -m browser``.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.helpers.browser import (MAP_AREA, WEBGL_ARGS, browser_page, find_map_point,
                                   map_to_page, running_app)

# History (deck.gl map, before issue 36): a click on the 5,000-of-50,000 map showed the frame
# in 0.66-0.80 s on an idle machine, but a click on the map of every frame selected nothing
# (deck.gl's GPU pick of 50,000 points outlasted its 250 ms tap; docs/views.md). The Plotly
# map finds the clicked point on the CPU: no retry is allowed on either map.
pytestmark = [pytest.mark.browser, pytest.mark.slow]
#: Warm click -> frame bound asserted. Goal 1 s warm: measured 0.64-0.80 s on the idle machine
#: (bench numbers in docs/scale.md), but 2.05-2.26 s while two CPU-bound processes held both
#: cores (a clean-clone CI run, 2026-12-02), which failed the earlier 2 s bound. A unit test
#: must not be a timing benchmark on a shared CPU; this bound catches a click that stalls
#: (a recompute, the full matrix sent), and the time is printed for the record.
WARM_CLICK_LIMIT_S = 5.0

SPEC = "demo:episodes=500,steps=50,height=64,width=80"
N_FRAMES = 50_000


def _pca_projection(Z, domain, *, indices=None, episode=None, max_per_domain=None,
                    seed=0, mode="joint", **params):
    """A stand-in for t-SNE with the same output: the frames kept by project()'s own
    stratified subsample, placed by a 2-D PCA of their state (mixing number: the real one)."""
    from s2r.projection import Projection, mixing_number, stratified_subsample

    Z, domain = np.asarray(Z, dtype=np.float64), np.asarray(domain).astype(str)
    sel = stratified_subsample(domain, max_per_domain, episode=episode, seed=seed)
    X = Z[sel] - Z[sel].mean(0)
    coords = (X @ np.linalg.svd(X, full_matrices=False)[2][:2].T).astype(np.float32)
    ds = domain[sel]
    return Projection(coords=coords, indices=sel, domain=ds,
                      mixing=mixing_number(coords, ds), kl_divergence=float("nan"),
                      params={"mode": mode, "k": 15, "n_sim": int((ds == "sim").sum()),
                              "n_real": int((ds == "real").sum()), "warnings": []})


def _prepare_cache(cache_dir, monkeypatch):
    """Score the state encoder and cache both maps; return the map of every frame."""
    import s2r.pipeline.projection as pipeline_projection
    from s2r.cache import Cache
    from s2r.datasets import load_dataset
    from s2r.pipeline import score_encoder
    from ui.loaders.projection import MAP_PER_DOMAIN

    fs = load_dataset(SPEC)
    assert len(fs) == N_FRAMES
    cache = Cache(cache_dir)
    score_encoder(fs, "state", cache=cache)
    monkeypatch.setattr(pipeline_projection, "project", _pca_projection)
    for per_domain in (MAP_PER_DOMAIN, None):
        proj = pipeline_projection.project_frameset(fs, "state", cache=cache,
                                                    max_per_domain=per_domain)
        assert len(proj) == (2 * MAP_PER_DOMAIN if per_domain else N_FRAMES)
    return proj


_SHOWN = "() => (document.body.innerText.match(/Frame index: (\\d+)/) || [null, null])[1]"


def _click_and_time(page, x: float, y: float, timeout_ms: int = 60_000) -> tuple[int, float]:
    """Click at ``(x, y)``; return the frame the page then shows (a new 'Frame index', its
    image loaded) and the seconds from the click until it showed."""
    before = page.evaluate(_SHOWN)
    start = time.perf_counter()
    page.mouse.click(x, y)
    page.wait_for_function(f"b => ({_SHOWN})() !== b", arg=before, timeout=timeout_ms)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=\"stImage\"] img')]"
        ".some(i => i.complete && i.naturalWidth > 0)", timeout=60_000)
    return int(page.evaluate(_SHOWN)), time.perf_counter() - start


def _lone_points(proj, transform, box, gap: float = 3.0) -> list[tuple[float, float, int]]:
    """Points of the map to click, ``(page x, page y, frame)``: only points with no other
    point within ``gap`` pixels (so the frame under the pointer is one frame), inside the
    plot area: the one nearest the plot's border, then those nearest the centre and two
    other places."""
    from scipy.spatial import cKDTree

    ax, bx, ay, by = transform
    xy = np.column_stack([ax * proj.coords[:, 0].astype(np.float64) + bx,
                          ay * proj.coords[:, 1].astype(np.float64) + by])
    dist, _ = cKDTree(xy).query(xy, k=2)
    left, top = box["x"] + 2, box["y"] + 2
    right, bottom = box["x"] + box["width"] - 2, box["y"] + box["height"] - 2
    inside = ((xy[:, 0] > left) & (xy[:, 0] < right) & (xy[:, 1] > top) & (xy[:, 1] < bottom))
    lone = np.flatnonzero((dist[:, 1] >= gap) & inside)
    assert len(lone) >= 4, f"only {len(lone)} lone points on the map"
    border = np.min([xy[lone, 0] - left, right - xy[lone, 0], xy[lone, 1] - top,
                     bottom - xy[lone, 1]], axis=0)
    picks = [int(lone[np.argmin(border)])]
    print(f"{len(lone):,} lone points; the one nearest the plot's border is {border.min():.1f} "
          "px from it")
    for fx, fy in ((0.5, 0.5), (0.3, 0.7), (0.7, 0.3)):
        at = np.array([box["x"] + fx * box["width"], box["y"] + fy * box["height"]])
        for j in lone[np.argsort(np.hypot(*(xy[lone] - at).T))]:
            if int(j) not in picks:
                picks.append(int(j))
                break
    return [(float(xy[j, 0]), float(xy[j, 1]), int(proj.indices[j])) for j in picks]


def test_projection_page_on_50000_frames_click_shows_the_frame_and_every_frame_maps(
        tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    every = _prepare_cache(cache_dir, monkeypatch)
    env = {"S2R_CACHE_DIR": str(cache_dir), "S2R_DEMO_SPEC": SPEC,
           "S2R_DEFAULT_ENCODERS": "state", "S2R_AUTOCOMPUTE": "0"}
    with running_app(env, log_path=tmp_path / "streamlit.log") as url, \
            browser_page(extra_args=WEBGL_ARGS) as page:
        page.goto(f"{url}/projection")
        page.get_by_text("5,000 of 50,000 frames shown (stratified by domain and episode)",
                         exact=False).wait_for(timeout=300_000)
        area = page.locator(MAP_AREA).first
        area.wait_for(timeout=300_000)
        times, seen = [], []
        for _ in range(2):  # the first click (cold), then another frame (warm)
            x, y, frame = find_map_point(page, area, exclude=seen, n_frames=N_FRAMES)
            seen.append(frame)
            shown, seconds = _click_and_time(page, x, y)
            assert shown == frame, (shown, frame)
            times.append(seconds)
            time.sleep(0.5)  # two clicks within plotly's 300 ms would be a double click
        print(f"click -> frame shown (map of 5,000 of 50,000 frames): first {times[0]:.2f} s, "
              f"then {times[1]:.2f} s (warm)")
        assert times[1] <= WARM_CLICK_LIMIT_S, times
        page.get_by_text("the mixing number uses all 50,000", exact=False).wait_for(
            timeout=60_000)

        # Every frame: 50,000 points; hover names the frame under the pointer and a click
        # selects exactly that frame, at the border of the plot as in its middle.
        page.locator('[data-testid="stCheckbox"] label').filter(
            has_text="Map every frame").click(force=True, timeout=300_000)
        page.get_by_text(f"All {N_FRAMES:,} frames shown.", exact=False).wait_for(
            timeout=300_000)
        page.wait_for_function(
            "n => { const gd = document.querySelector('.js-plotly-plot');"
            " return gd && gd._fullData && gd._fullData.reduce((s, t) => s + t._length, 0)"
            " === n; }", arg=N_FRAMES, timeout=300_000)
        area = page.locator(MAP_AREA).first
        box = area.bounding_box()
        targets = _lone_points(every, map_to_page(page, area), box)
        picked, times = [], []
        for x, y, frame in targets:
            page.mouse.move(x, y)
            page.wait_for_function("f => [...document.querySelectorAll('.hoverlayer "
                                   ".hovertext')].some(e => e.textContent.endsWith("
                                   "'frame ' + f))", arg=frame, timeout=30_000)
            shown, seconds = _click_and_time(page, x, y)
            picked.append((frame, shown))
            times.append(seconds)
            time.sleep(0.5)
        print("50,000-point map: clicks at (x, y) -> frame expected / shown: "
              + ", ".join(f"({x:.0f}, {y:.0f}) -> {f} / {s}"
                          for (x, y, _), (f, s) in zip(targets, picked))
              + "; click -> frame shown " + ", ".join(f"{t:.2f}" for t in times) + " s")
        assert [s for _, s in picked] == [f for f, _ in picked], picked
        assert max(times[1:]) <= WARM_CLICK_LIMIT_S, times
        page.screenshot(path=str(tmp_path / "projection_50000.png"))
