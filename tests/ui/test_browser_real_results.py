"""Your robot's results in a real browser: upload a CSV of 4 encoders on the Validation page,
read the correlations with their intervals, download the scatter as SVG (issue 27 item 1).

Starts ``streamlit run app.py`` (tiny demo; the home page's first visit scores the 4 encoders)
and drives Debian's headless Chromium with Playwright (``make browser-deps``).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.figures import svg as SVG
from tests.helpers.browser import browser_page, running_app, wait_idle

pytestmark = pytest.mark.browser

TINY = "demo:episodes=4,steps=8,height=96,width=128"
ENCODERS = ("resnet18@random", "pixels", "state", "efficientnet-lite0")
CSV = ("encoder,successes,trials\npixels,4,20\nefficientnet-lite0,14,20\n"
       "resnet18@random,7,20\nstate,19,20\n")


def test_upload_real_results_gives_correlations_and_a_figure(tmp_path):
    results = tmp_path / "results.csv"
    results.write_text(CSV)
    env = {"S2R_CACHE_DIR": str(tmp_path / "cache"), "S2R_DEMO_SPEC": TINY,
           "S2R_DEFAULT_ENCODERS": ",".join(ENCODERS)}
    with running_app(env, log_path=tmp_path / "streamlit.log") as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Scores: DIS vs AS").wait_for(timeout=600_000)   # 4 scored
        page.goto(f"{url}/validation")
        page.get_by_text("Your robot's results").first.wait_for(timeout=120_000)
        page.get_by_text("Your robot's results").first.click()
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
            str(results))
        wait_idle(page)
        page.get_by_text("Your real success vs").first.wait_for(timeout=120_000)
        frames = page.locator('[data-testid="stDataFrame"]')
        expect(frames.first).to_be_visible(timeout=60_000)
        assert page.get_by_text("No scores on").count() == 0
        with page.expect_download(timeout=120_000) as info:
            page.get_by_role("button", name="SVG").last.click()
        svg = open(info.value.path()).read()
        assert info.value.suggested_filename.startswith("s2r_real_results_")
        assert len(SVG.symbols(svg)) == len(ENCODERS)                      # one per encoder
        page.screenshot(path=str(tmp_path / "real_results.png"), full_page=True)
