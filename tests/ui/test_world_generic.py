"""A world registered once is on the home page and the Validation page with its own inputs,
drawn from its declared options; no page or ui module branches on a world's name."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from s2r.worlds import WORLDS
from tests.helpers import APP
from tests.ui.apptest import no_exception, open_app, use_env
from tests.worlds.toy import TOY
from ui import pages
from ui import state as S
from ui import world_specs as W

REPO = Path(APP).parent


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.setitem(WORLDS._worlds, TOY.name, TOY)
    use_env(monkeypatch, tmp_path / "c")
    monkeypatch.setenv("S2R_DATASET", "toy:mode=fancy,episodes=4")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "pixels")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    return TOY


def test_the_toy_world_is_a_home_source_with_its_own_inputs(toy):
    at = open_app()
    at.run()
    no_exception(at)
    assert at.radio(key=S.HOME_SOURCE).value == "toy"
    assert toy.title in at.radio(key=S.HOME_SOURCE).options
    mode = at.selectbox(key=S.home_option("toy", "mode"))
    assert mode.label == "Mode" and mode.options == ["plain", "fancy"] and mode.value == "fancy"
    assert at.number_input(key=S.home_option("toy", "episodes")).value == 4
    assert at.slider(key=S.home_option("toy", "gap")).value == 0.5
    assert not any(w.key and "toy.height" in w.key for w in at.number_input)  # hidden: kept
    assert {m.label: m.value for m in at.metric}["Frame size"] == "64x64"
    mode.select("plain").run()
    no_exception(at)
    spec = at.session_state[S.DATASET_SPEC]
    assert W.world_options(spec, "toy") == toy.check_options({"mode": "plain", "episodes": 4,
                                                             "steps": 6})
    assert at.query_params["dataset"] == spec


def test_the_toy_world_opens_on_its_dashboard_defaults():
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(WORLDS._worlds, TOY.name, TOY)
        assert W.world_options(W.world_spec("toy"), "toy")["episodes"] == 4  # not 3


def test_the_toy_world_is_a_validation_world_with_its_choices(toy):
    at = open_app(pages.VALIDATION.path)
    at.run()
    no_exception(at)
    assert at.radio(key=S.VALIDATION_WORLD).value == "toy"
    assert toy.title in at.radio(key=S.VALIDATION_WORLD).options
    mode = at.selectbox(key=S.validation_option("mode"))
    assert mode.value == "fancy" and mode.options == ["plain", "fancy"]
    assert "toy:" in at.markdown[0].value and "mode=fancy" in at.markdown[0].value
    mode.select("plain").run()
    no_exception(at)
    assert "mode=plain" in at.markdown[0].value


def test_no_page_or_ui_module_branches_on_a_world_name():
    found = subprocess.run(["grep", "-rnE", "demo|metaworld", "ui", "app_pages", "app.py"],
                           cwd=REPO, capture_output=True, text=True).stdout.splitlines()
    code = [line for line in found
            if re.search(r"""["'](demo|metaworld)["']|METAWORLD|DEFAULT_DEMO""", line)]
    assert code == []
    assert "s2r.worlds.metaworld" not in "\n".join(
        p.read_text() for folder in ("ui", "app_pages") for p in (REPO / folder).rglob("*.py"))
