"""The dashboard in a real browser: compute, click a point of the score scatter, see saliency;
open files on disk with the encoder selection kept, and reload the Scores page.

Starts ``streamlit run app.py`` on a free port (tiny demo, two offline encoders, its own
cache folder) and drives Debian's headless Chromium with Playwright. Needs ``chromium``
(``make browser-deps``); run with ``pytest -m browser``.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import browser_page, find_chart_point, running_app
from tests.ui.apptest import robomimic_pair

pytestmark = pytest.mark.browser

TINY = "demo:episodes=4,steps=8,height=96,width=128"
ENCODERS = ("resnet18@random", "pixels")


def test_click_a_score_point_shows_its_sim_and_real_saliency(tmp_path):
    env = {"S2R_CACHE_DIR": str(tmp_path / "cache"), "S2R_DEMO_SPEC": TINY,
           "S2R_DEFAULT_ENCODERS": ",".join(ENCODERS)}
    with running_app(env, log_path=tmp_path / "streamlit.log") as url, browser_page() as page:
        page.goto(url)
        # First visit: the default set is computed with one progress box per encoder.
        page.get_by_text("Scores: DIS vs AS").wait_for(timeout=300_000)
        statuses = page.locator('[data-testid="stExpander"] summary').all_inner_texts()
        assert sum("done in" in s for s in statuses) == len(ENCODERS), statuses

        page.get_by_text("Scores: DIS vs AS").click()
        page.get_by_role("heading", name="Scores").first.wait_for(timeout=60_000)
        chart = page.locator(".vega-embed").first
        chart.wait_for(timeout=60_000)
        # The inspector opens on the first encoder; click the other one's point.
        page.get_by_role("heading", name="Inside").wait_for(timeout=120_000)
        assert ENCODERS[0] in page.get_by_role("heading", name="Inside").inner_text()
        x, y, tip = find_chart_point(page, chart, wanted=ENCODERS[1])
        assert ENCODERS[1] in tip and "Domain invariance (DIS) [95% CI]" in tip, tip
        page.mouse.click(x, y)

        heading = page.get_by_role("heading", name=f"({ENCODERS[1]})")
        heading.wait_for(timeout=120_000)
        assert heading.inner_text().startswith("Inside")
        # Sim and real saliency overlays of that encoder, side by side.
        # The three pairs arrive one after the other: wait for all of them.
        captions = page.locator('[data-testid="stImageCaption"]')
        for domain in ("sim", "real"):
            expect(captions.filter(has_text=f"{domain} saliency")).to_have_count(
                3, timeout=120_000)
        texts = captions.all_inner_texts()
        assert sum(t.startswith("sim saliency") for t in texts) == 3, texts
        assert sum(t.startswith("real saliency") for t in texts) == 3, texts
        images = page.locator('[data-testid="stImage"] img')
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=\"stImage\"] img')]"
            ".filter(i => i.complete && i.naturalWidth > 0).length >= 12", timeout=60_000)
        assert images.count() >= 12
        assert all(images.nth(i).evaluate("img => img.naturalWidth > 0")
                   for i in range(images.count()))


def _chips(page, count: int) -> list[str]:
    """The labels of the options selected in the "Encoders to score" box, as drawn, once
    there are ``count`` of them."""
    chips = page.locator('[data-testid="stMultiSelect"] [data-tag-index]')
    expect(chips).to_have_count(count, timeout=60_000)
    return [chip.get_attribute("aria-label") for chip in chips.all()]


def _score_rows(page, count: int) -> list[str]:
    """The rows of the Scores page's table (its accessible grid), as text, once there are
    ``count`` of them."""
    page.get_by_role("heading", name="Every metric").wait_for(timeout=120_000)
    rows = page.locator('[data-testid="stDataFrame"] table').last.locator('tbody [role="row"]')
    expect(rows).to_have_count(count, timeout=60_000)
    return rows.all_inner_texts()


def test_files_on_disk_keep_the_encoders_and_a_reload_keeps_the_scores(tmp_path):
    """The issue's walk: home page, "Files on disk", sim path + Enter, real path + Enter:
    the encoder box still holds the selection, Compute scores works, and the Scores page
    shows them, also after a reload (the URL names the dataset and the encoders)."""
    sim, real = robomimic_pair(tmp_path)
    env = {"S2R_CACHE_DIR": str(tmp_path / "cache"), "S2R_DEMO_SPEC": TINY,
           "S2R_DEFAULT_ENCODERS": ENCODERS[1], "S2R_AUTOCOMPUTE": "0",
           "S2R_DATA_ROOTS": str(tmp_path)}  # the reload reads the files from the URL
    with running_app(env, log_path=tmp_path / "streamlit.log") as url, browser_page() as page:
        page.goto(url)
        before = _chips(page, 1)
        assert f"({ENCODERS[1]})" in before[0], before
        page.get_by_text("Files on disk").click()
        # One file alone is no dataset: the page stops before the encoders (the run that
        # used to lose them), then both files load.
        for label, path, shown in (
                ("Sim: ", sim, page.get_by_text("The dataset could not be loaded")),
                ("Real: ", real, page.get_by_text("Real frames", exact=True))):
            box = page.get_by_label(label, exact=False)
            box.fill(path)
            box.press("Enter")
            shown.wait_for(timeout=60_000)
        assert _chips(page, 1) == before
        page.get_by_role("button", name="Compute scores").click()
        page.get_by_text("Scores: DIS vs AS").click(timeout=120_000)

        rows = _score_rows(page, 1)
        assert ENCODERS[1] in rows[0], rows
        assert "dataset=" in page.url and f"encoders={ENCODERS[1]}" in page.url, page.url
        page.reload()
        assert _score_rows(page, 1) == rows
        assert not page.get_by_text("Nothing computed yet").count()
