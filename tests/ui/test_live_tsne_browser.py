"""Live t-SNE on the Projection page in a real browser (issue 36 item 1): the map appears
at once and changes while openTSNE optimises it; Stop keeps the map so far (not converged,
not cached) and "Finish this map" computes it to the end.

The dataset is the demo at 2,000 frames and the encoder the robot-state reference (nothing
to embed); the t-SNE is the real one. Needs Chromium (``make browser-deps``);
``pytest -m browser``.
"""

from __future__ import annotations

import hashlib
import re
import time

import pytest

from tests.helpers.browser import (LIVE_MAP, MAP, MAP_AREA, WEBGL_ARGS, browser_page,
                                   running_app)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SPEC = "demo:episodes=20,steps=50,height=64,width=80"
#: A click -> first map bound that catches a stall (the whole t-SNE run before any map, a
#: neighbour search first); the time is printed (goal 1 s: bench/bench_live_tsne.py).
FIRST_MAP_LIMIT_S = 15.0
#: The captions under a map: a snapshot's, a finished map's, a stopped map's.
_CAPTIONS = """() => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .map(e => e.innerText)
    .filter(t => /^(PCA initialisation|t-SNE iteration|t-SNE: \\d|Not converged)/.test(t))"""
_LIVE = re.compile(r"^(PCA initialisation \(iteration (0)|t-SNE iteration ([\d,]+))")


def _map_image(page, tries: int = 20) -> str:
    """A hash of the pixels of the map: a snapshot's deck.gl canvas, or the finished Plotly
    map's plot area (without its title). The area is located and shot in one go (a page
    screenshot clipped to its box, which does not wait for the element to stay put); located
    again if it was just replaced (the finished map replaces the snapshots' chart)."""
    from playwright.sync_api import Error

    for attempt in range(tries):
        try:
            box = page.locator(f"{LIVE_MAP}, {MAP_AREA}").first.bounding_box(
                timeout=10_000)
            if box and box["width"] > 0:
                return hashlib.sha1(page.screenshot(clip=box, timeout=10_000)).hexdigest()
        except Error:
            if attempt == tries - 1:
                raise
        time.sleep(0.25)
    raise AssertionError("the map's plot area never showed")


def _watch(page, until: str, timeout_s: float = 300.0) -> list[tuple[int, str]]:
    """(iteration, image of the map) at every new snapshot caption, until a caption starting
    with ``until`` shows."""
    seen, last = [], None
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        captions = page.evaluate(_CAPTIONS)
        if any(c.startswith(until) for c in captions):
            return seen
        live = [m for m in map(_LIVE.match, captions) if m]
        if live and live[0].group(0) != last:
            last = live[0].group(0)
            seen.append((int((live[0].group(2) or live[0].group(3)).replace(",", "")),
                         _map_image(page)))
        time.sleep(0.1)
    raise AssertionError(f"no caption {until!r} within {timeout_s:.0f} s (seen {seen})")


def _place_real_cached(cache_dir) -> bool:
    from s2r.cache import Cache
    from s2r.datasets import load_dataset
    from s2r.pipeline.projection import projection_key
    from ui.loaders.projection import EARLY_ITER, MAX_ITER

    params = {"mode": "place-real", "max_per_domain": None, "perplexity": 30.0, "pca_dim": 50,
              "seed": 0, "k": 15, "n_iter": MAX_ITER, "early_exaggeration_iter": EARLY_ITER,
              "kl_tol": 0.005}
    return Cache(cache_dir).contains(projection_key(load_dataset(SPEC), "state", params))


def test_the_map_moves_while_tsne_runs_and_stop_keeps_the_map_so_far(tmp_path):
    from s2r.cache import Cache
    from s2r.datasets import load_dataset
    from s2r.pipeline import score_encoder

    cache_dir = tmp_path / "cache"
    score_encoder(load_dataset(SPEC), "state", cache=Cache(cache_dir))
    env = {"S2R_CACHE_DIR": str(cache_dir), "S2R_DEMO_SPEC": SPEC,
           "S2R_DEFAULT_ENCODERS": "state", "S2R_AUTOCOMPUTE": "0"}
    with running_app(env, log_path=tmp_path / "streamlit.log") as url, \
            browser_page(extra_args=WEBGL_ARGS) as page:
        page.goto(f"{url}/projection")
        # 1. The joint map: snapshots first (the chart changes), then the finished map.
        seen = _watch(page, until="t-SNE: 250 + ")
        iterations = [it for it, _ in seen]
        print(f"live t-SNE of 2,000 frames: snapshots drawn at iterations {iterations}")
        assert len(seen) >= 3 and iterations == sorted(set(iterations)), seen
        assert len({image for _, image in seen}) >= 3, seen  # the map itself changed
        # (The finished map can be the last snapshot: the early stop ends on a snapshot.)
        assert _map_image(page) != seen[0][1]

        # 2. Another map (place real): the first map within the bound; Stop keeps it.
        start = time.perf_counter()
        page.get_by_text("Place real: fit on sim", exact=False).click()
        page.wait_for_function(f"() => ({_CAPTIONS})().some(t => /^(PCA initialisation|"
                               "t-SNE iteration)/.test(t))", timeout=300_000)
        first = time.perf_counter() - start
        print(f"click -> first map of the place-real t-SNE: {first:.2f} s")
        assert first <= FIRST_MAP_LIMIT_S
        page.get_by_role("button", name="Stop t-SNE and keep this map").click()
        page.get_by_text("Not converged: stopped at iteration", exact=False).wait_for(
            timeout=120_000)
        page.get_by_text("real frames are placed into a finished map only",
                         exact=False).wait_for(timeout=30_000)
        assert page.locator(MAP).count() == 1
        assert not _place_real_cached(cache_dir)  # the map so far is never cached

        # 3. Finish: computed to the end (snapshots again), then cached.
        page.get_by_role("button", name="Finish this map").click()
        _watch(page, until="t-SNE: 250 + ")
        assert _place_real_cached(cache_dir)
        assert page.get_by_text("Not converged", exact=False).count() == 0
