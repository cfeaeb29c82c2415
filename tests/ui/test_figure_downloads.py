"""Every chart of the dashboard has SVG/PDF/PNG download buttons whose files hold the page's
marks; saliency overlays come with their colour bar; the Compare page's notes concern only the
two encoders it shows (issue 27 items 2 and 6)."""

from __future__ import annotations

import json
import shutil

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager

from s2r.evidence import default_score, shipped_evidence
from s2r.metrics import catalogue
from tests.figures import svg as SVG
from ui import state as S
from tests.ui.apptest import ENCODERS, no_exception, open_app, use_env
from ui import pages

FORMATS = ("SVG", "PDF", "PNG")


def _figure_buttons(at) -> dict:
    """{button key prefix: {label: deferred file id}} of the figure download buttons."""
    out: dict = {}
    for b in at.get("download_button"):
        if b.proto.label in FORMATS and b.proto.HasField("deferred_file_id"):
            prefix = b.proto.id.split("-")[-1].rsplit(".", 1)[0]
            out.setdefault(prefix, {})[b.proto.label] = b.proto.deferred_file_id
    return out


#: file id -> the callable a deferred download button registered (AppTest's runtime is gone
#: after each run, so :func:`_record_deferred` keeps them).
_CALLABLES: dict = {}


def _download(file_id: str) -> bytes:
    """What the browser gets when the button is clicked (the deferred callable's bytes)."""
    data = _CALLABLES[file_id]()
    return data.encode() if isinstance(data, str) else data


@pytest.fixture(autouse=True)
def _record_deferred(monkeypatch):
    original = MediaFileManager.add_deferred

    def add_deferred(self, data_callable, *args, **kwargs):
        file_id = original(self, data_callable, *args, **kwargs)
        _CALLABLES[file_id] = data_callable
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)


@pytest.fixture
def app(computed, monkeypatch):
    cache_dir, _ = computed
    use_env(monkeypatch, cache_dir)
    return open_app()


def _colorbar_shown(at) -> bool:
    return any("red = most salient" in c.value for c in at.caption)


def test_scores_page_figures_hold_the_page_marks(app):
    at = app
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    buttons = _figure_buttons(at)
    for key in ("scores.fig", "scores.tsne.fig", "scores.saliency.fig"):
        assert set(buttons.get(key, {})) == set(FORMATS), (key, buttons)
    assert any(k.endswith(".fig") and "rank" in k for k in buttons)   # the ranking heatmap
    svg = _download(buttons["scores.fig"]["SVG"]).decode()
    assert len(SVG.symbols(svg)) == len(ENCODERS)          # one point per encoder, as shown
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    y = default_score("y", shipped_evidence(), world="demo")    # the evidence's strongest
    assert spec["layer"][4]["encoding"]["y"]["field"] == y
    assert catalogue.titles()[y] in svg                     # the page's y axis
    pdf = _download(buttons["scores.fig"]["PDF"])
    assert pdf.startswith(b"%PDF-") and SVG.pdf_pages(pdf) == 1
    grid = _download(buttons["scores.saliency.fig"]["SVG"]).decode()
    assert grid.count("<image") == 3 * 2 + 1                # the 3 gallery pairs + colour bar
    assert _colorbar_shown(at)


def test_projection_saliency_and_compare_pages_have_their_downloads(app):
    at = app
    at.switch_page(pages.PROJECTION.path).run()
    no_exception(at)
    buttons = _figure_buttons(at)
    tsne = [k for k in buttons if k.startswith("projection.fig")]
    assert tsne and all(set(buttons[k]) == set(FORMATS) for k in tsne)
    png = _download(buttons[tsne[0]]["PNG"])
    assert SVG.png_size(png)[0] > 800

    at.switch_page(pages.SALIENCY.path).run()
    no_exception(at)
    buttons = _figure_buttons(at)
    assert set(buttons["saliency.fig"]) == set(FORMATS) and _colorbar_shown(at)
    pdf = _download(buttons["saliency.fig"]["PDF"])
    assert pdf.startswith(b"%PDF-")

    at.switch_page(pages.COMPARE.path).run()
    no_exception(at)
    buttons = _figure_buttons(at)
    assert set(buttons["compare.fig"]) == set(FORMATS) and _colorbar_shown(at)
    svg = _download(buttons["compare.fig"]["SVG"]).decode()
    assert svg.count("<image") == 2 * 2 + 1                 # two encoders x sim/real + bar


def test_compare_notes_only_concern_the_two_encoders_shown(computed, tmp_path, monkeypatch):
    """With the state reference computed, Saliency names it in a caption (it is left out of
    its list: a fact about the picker, not an info box, issue 36), but Compare, which shows
    two image encoders, does not."""
    cache_dir = tmp_path / "cache"
    shutil.copytree(computed[0], cache_dir)
    use_env(monkeypatch, cache_dir)
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", ",".join([*ENCODERS, "state"]))
    at = open_app()
    at.run()
    no_exception(at)
    at.switch_page(pages.SALIENCY.path).run()
    no_exception(at)
    assert any("no image model" in c.value for c in at.caption)
    assert not any("no image model" in i.value for i in at.info)
    at.switch_page(pages.COMPARE.path).run()
    no_exception(at)
    assert not any("no image model" in e.value for e in [*at.info, *at.caption])
    shown = {at.selectbox(key=S.COMPARE_ENCODER_A).value,
             at.selectbox(key=S.COMPARE_ENCODER_B).value}
    assert shown == set(ENCODERS)
