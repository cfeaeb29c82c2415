"""The Layers page in a real browser: the depth profile drawn, a click on a layer opens
Grad-CAM at that layer for the sim/real pair, and the URL holds the choice.

The layers are scored in the test process first (tiny demo; the page reads them from the
cache), then ``streamlit run app.py`` is driven with Debian's headless Chromium. With
``S2R_SCREENSHOTS=DIR`` the page is also saved as ``DIR/layers_page.png``.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote_plus

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import browser_page, find_chart_point, running_app, wait_idle

pytestmark = pytest.mark.browser

TINY = "demo:episodes=4,steps=6,height=96,width=128"
ENCODERS = ("resnet18@random", "pixels")


def _score_layers(cache_dir: Path) -> None:
    from s2r.cache import Cache
    from s2r.datasets import load_dataset
    from s2r.pipeline import score_encoder
    from s2r.pipeline.layers import score_encoders_layers

    frameset = load_dataset(TINY)
    cache = Cache(cache_dir)
    for encoder_id in ENCODERS:               # what the home page computes
        score_encoder(frameset, encoder_id, cache=cache)
    score_encoders_layers(frameset, list(ENCODERS), "all", cache=cache)


def test_click_a_layer_opens_gradcam_at_that_layer(tmp_path):
    cache_dir = tmp_path / "cache"
    _score_layers(cache_dir)
    env = {"S2R_CACHE_DIR": str(cache_dir), "S2R_DEMO_SPEC": TINY,
           "S2R_DEFAULT_ENCODERS": ",".join(ENCODERS), "S2R_AUTOCOMPUTE": "0"}
    with running_app(env, log_path=tmp_path / "streamlit.log") as url, \
            browser_page(height=1400) as page:
        page.goto(f"{url}/layers?y=sim2real_score")   # the profile this test knows
        page.get_by_role("heading", name="Best layer of each encoder").wait_for(timeout=120_000)
        page.get_by_role("heading", name="Grad-CAM at").wait_for(timeout=120_000)
        wait_idle(page)
        chart = page.locator(".vega-embed").first
        x, y, tip = find_chart_point(page, chart, wanted="layer1\n")
        assert "ResNet18 (random init)" in tip and "Relative depth" in tip, tip
        page.mouse.click(x, y)
        heading = page.get_by_role("heading", name="Grad-CAM at layer1 of")
        heading.wait_for(timeout=120_000)
        captions = page.locator('[data-testid="stImageCaption"]')
        for domain in ("sim", "real"):
            expect(captions.filter(has_text=f"{domain} at layer1")).to_have_count(
                1, timeout=120_000)
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=\"stImage\"] img')]"
            ".filter(i => i.complete && i.naturalWidth > 0).length >= 4", timeout=60_000)
        wait_idle(page)
        assert "layer=resnet18@random @ layer1" in unquote_plus(page.url), page.url
        shots = os.environ.get("S2R_SCREENSHOTS")
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(shots) / "layers_page.png"), full_page=True)
        # the link opens the same layer in a new session
        page.goto(page.url)
        page.get_by_role("heading", name="Grad-CAM at layer1 of").wait_for(timeout=120_000)
