"""The Layers page without a browser (AppTest): after the home page's scores it offers to score
every layer, then draws the depth profile (one point per layer), the best-layer table, and
Grad-CAM at the picked layer; a click on a layer explains that layer and the URL opens it again.
(Opened before anything was computed, or with a broken encoder config: tests/ui/test_app.py's
tests of every page in PAGES.)"""

from __future__ import annotations

import json
import shutil

import pytest

from s2r.figures.layers import PICK
from s2r.evidence import default_score, shipped_evidence
from tests.ui.apptest import no_exception, open_app, use_env
from ui import state as S
from ui import pages

LAYERS = pages.LAYERS.path


def _profile(at):
    """The depth profile's spec and its one data set's rows (Streamlit sends the data as
    Arrow, not in the spec)."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    chart = at.get("vega_lite_chart")[0]
    (dataset,) = chart.proto.datasets
    return (json.loads(chart.proto.spec),
            convert_arrow_bytes_to_pandas_df(dataset.data.data).to_dict("records"))


def _outlined(at) -> str:
    """The point the depth profile draws with a thick outline (the layer explained below)."""
    spec, _ = _profile(at)
    (point,) = [layer for layer in spec["layer"] if layer["mark"]["type"] == "point"]
    test = point["encoding"]["strokeWidth"]["condition"]["test"]
    return test.split("===")[1].strip(" ()'\"")


@pytest.mark.slow
def test_layers_page_scores_every_layer_draws_the_profile_and_explains_a_click(
        computed, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    shutil.copytree(computed[0], cache_dir)      # the session's cache is left as it was
    use_env(monkeypatch, cache_dir)
    at = open_app(LAYERS)
    at.run()
    no_exception(at)
    assert at.session_state[S.LAYERS_Y] == default_score("ranking", shipped_evidence(),
                                                         world="demo")   # the evidence's
    at.radio(key=S.LAYERS_Y).set_value("sim2real_score").run()   # the paper's, drawn below
    (note,) = [i.value for i in at.info if "Layers not scored yet" in i.value]
    assert "ResNet18 (random init)" in note and "pixels" not in note  # one layer: its own
    assert {r["encoder"] for r in _profile(at)[1]} == {"pixels"}
    at.button(key=S.LAYERS_COMPUTE).click().run()
    no_exception(at)

    spec, data = _profile(at)
    assert spec["title"]["text"] == "Which layer transfers? Sim2Real score by depth"
    layers = {(r["encoder"], r["layer"]) for r in data}
    assert {layer for e, layer in layers if e == "resnet18@random"} == {
        "act1", "layer1", "layer2", "layer3", "layer4"}
    assert {layer for e, layer in layers if e == "pixels"} == {"pixels"}
    assert sum(r["mark"] == "best layer" for r in data) == 2        # one per encoder
    assert "Best layer of each encoder" in [h.value for h in at.subheader]
    best = at.dataframe[0].value        # the table names the layers the chart draws as best
    assert list(best["Encoder"]) == ["ResNet18 (random init) (resnet18@random)",
                                     "Raw pixels (32x32) (pixels)"]
    drawn = {r["encoder"]: r["layer"] for r in data if r["mark"] == "best layer"}
    assert list(best["Best layer"]) == [drawn["resnet18@random"], drawn["pixels"]]

    # a click on layer1 of ResNet18 explains that layer below, and the URL holds it
    at.session_state[S.LAYERS_CHART] = {"selection": {PICK: [
        {"encoder": "resnet18@random", "layer": "layer1"}]}}
    at.run()
    no_exception(at)
    assert "Grad-CAM at layer1 of ResNet18 (random init)" in [h.value for h in at.subheader][-1]
    assert len(at.image) == 4                     # sim, its map, real, its map
    assert any(m.value.startswith("**Sim/real agreement at layer1:") for m in at.markdown)
    assert at.session_state[S.LAYERS_PICK] == "resnet18@random @ layer1"
    assert _outlined(at) == "resnet18@random @ layer1"   # in the same run as the click
    assert at.query_params["layer"] == "resnet18@random @ layer1"

    # the link opens the same layer in a new session
    again = open_app(LAYERS, query={"layer": "resnet18@random @ layer1"})
    again.run()
    no_exception(again)
    assert again.subheader[-1].value.startswith("Grad-CAM at layer1 of")
