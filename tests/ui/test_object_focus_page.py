"""The Scores page computes the object focus when asked (a button, only on a dataset with
task-object masks), fills the table's "Object focus" columns, and a later session reads it back
from the cache instead of computing it again."""

from __future__ import annotations

import re

import pytest

from tests.ui.apptest import no_exception, open_app, robomimic_pair, use_env
from ui import focus, pages
from ui import links as L
from ui import state as S

SMALL = "demo:episodes=3,steps=6,height=64,width=64"
ENCODERS = ("resnet18@random", "pixels")


def _table(at):
    table, = [d.value for d in at.dataframe if "DIS" in d.value.columns]
    return table.set_index("id")


def _focus_buttons(at):
    return [b for b in at.button if b.label.startswith("Compute object focus")]


@pytest.fixture
def counted(monkeypatch):
    """How many times the Grad-CAM pass of the object focus ran."""
    import s2r.pipeline.object_focus as of

    calls, compute = [], of._compute
    monkeypatch.setattr(of, "_compute",
                        lambda fs, eid, *a: calls.append(eid) or compute(fs, eid, *a))
    return calls


@pytest.mark.slow
def test_the_button_fills_the_focus_columns_and_later_sessions_read_the_cache(
        tmp_path, monkeypatch, counted):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEMO_SPEC", SMALL)
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", ",".join(ENCODERS))
    at = open_app()
    at.run()                                    # the first visit scores, without the focus
    no_exception(at)
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    assert counted == []
    table = _table(at)
    assert (table.loc[list(ENCODERS), ["Object focus", "Object focus floor"]] == "n/a").all(None)
    (button,) = _focus_buttons(at)
    assert button.label == focus.button_label() and "32 real frames" in button.label
    button.click().run()
    no_exception(at)
    assert counted == ["resnet18@random"]       # pixels has no Grad-CAM layer
    table = _table(at)
    for col in ("Object focus", "Object focus floor"):
        value = float(re.match(r"\d\.\d+", table.loc["resnet18@random", col]).group())
        assert 0.0 <= value <= 1.0, (col, value)
        assert table.loc["pixels", col] == "n/a"
    held = at.session_state[S.RESULTS]
    (records,) = held.values()
    assert "Grad-CAM" in records["pixels"]["not_estimable"]["object_focus"]
    assert 0.0 <= records["resnet18@random"]["object_focus"] <= 1.0
    assert not _focus_buttons(at)               # nothing left to compute
    assert "Object focus computed for 1 of 1 encoder(s)." in [c.value for c in at.caption]
    at.run()                                    # a rerun keeps the numbers
    assert _table(at).loc["resnet18@random", "Object focus"] != "n/a"

    for first in (pages.SCORES.path, None):     # a new session: the page, or home first
        at = open_app(first)
        at.run()
        no_exception(at)
        if first is None:
            at.switch_page(pages.SCORES.path).run()
            no_exception(at)
        assert _table(at).loc["resnet18@random", "Object focus"] != "n/a", first
        assert not _focus_buttons(at)
    assert counted == ["resnet18@random"]       # read back, never computed again


@pytest.mark.slow
def test_no_button_on_a_dataset_without_masks(tmp_path, monkeypatch, counted):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "resnet18@random")
    sim, real = robomimic_pair(tmp_path)
    at = open_app(query={L.Q_DATASET: [sim, real]})
    at.run()
    no_exception(at)
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    assert not _focus_buttons(at)
    assert focus.NO_MASKS in [c.value for c in at.caption]
    assert "Object focus" not in _table(at).columns           # no record holds it
    assert counted == []
