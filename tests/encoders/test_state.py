"""The ``state`` reference encoder: the FrameSet's robot state as the embedding.

Registry entry, embedding (no model, no cache), the errors of a stateless dataset and of
anything that needs an image model, the CLI commands, and the dashboard pages.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from s2r.cache import Cache
from s2r.cli import main
from s2r.embed import embed_frameset, embeddings_key
from s2r.encoders import build_encoder, get_spec, list_encoders, status, weights_fingerprint
from s2r.errors import EncoderError, MetricError
from tests.helpers import APP
from tests.helpers.datafiles import synthetic_frameset
from ui import pages

DEMO = "demo:episodes=3,steps=8,height=64,width=80"


@pytest.fixture(scope="module")
def demo():
    from s2r.datasets import load_dataset

    return load_dataset(DEMO)


# ----------------------------------------------------------------------------- registry
def test_registry_entry_is_an_honest_reference():
    spec = get_spec("state")
    assert (spec.architecture, spec.family, spec.backend) == ("State", "state", "state")
    assert spec.table_number is None and spec.pretraining_group == "none"
    assert spec.params_m == 0.0 and spec.dim is None and spec.cam_layer is None
    assert not spec.has_image_model and get_spec("pixels").has_image_model
    assert "not an image encoder" in spec.notes.lower() and "reference" in spec.notes
    assert spec.weights_file is None
    assert status("state").state == "ready" and "robot state" in status("state").message
    assert weights_fingerprint("state") == "state:v1"
    assert "state" in [s.id for s in list_encoders()]
    assert "state@random" not in [s.id for s in list_encoders(include_random=True)]
    with pytest.raises(EncoderError, match="no @random variant"):
        get_spec("state@random")


def test_build_encoder_refuses_with_a_clear_message():
    for kwargs in ({}, {"pretrained": False}):
        with pytest.raises(EncoderError, match="no image model") as err:
            build_encoder("state", device="cpu", **kwargs)
        assert "saliency" in str(err.value) and "\n" not in str(err.value)


# ----------------------------------------------------------------------------- embedding
def test_embedding_is_the_state_exactly_without_a_model_or_cache(demo, monkeypatch, tmp_path):
    import s2r.encoders.build as build_mod  # every build goes through build_encoder

    monkeypatch.setattr(build_mod, "build_encoder",
                        lambda *a, **k: pytest.fail("a model was built"))
    cache = Cache(tmp_path / "cache")
    seen = []
    Z = embed_frameset(demo, "state", cache=cache,
                       progress=lambda done, total, msg="": seen.append((done, total)))
    assert Z.dtype == np.float32 and Z.shape == (len(demo), 22)
    np.testing.assert_array_equal(Z, demo.state)
    assert seen[-1] == (len(demo), len(demo))
    assert cache.ls() == []  # a copy of labels: nothing stored
    Z[0, 0] += 1.0  # a copy: the FrameSet's state is untouched
    assert demo.state[0, 0] != Z[0, 0]
    # int8 does not apply: same array, same key
    np.testing.assert_array_equal(embed_frameset(demo, "state", cache=False, precision="int8"),
                                  demo.state)
    key = embeddings_key(demo, "state", precision="int8")
    assert key == embeddings_key(demo, "state") and key["weights"] == "state:v1"


def test_stateless_frameset_is_refused_naming_the_dataset():
    stateless = synthetic_frameset(state_dim=0)
    assert stateless.state is None
    with pytest.raises(EncoderError) as err:
        embed_frameset(stateless, "state", cache=False)
    message = str(err.value)
    assert "needs a dataset with robot state" in message and "'synthetic'" in message
    assert "--state-key" in message and "state.<name>" in message and "\n" not in message


def test_state_narrower_than_pca_dim_is_a_metric_error():
    from s2r.pipeline import score_encoder

    narrow = synthetic_frameset(sim_eps=(10, 10, 10), real_eps=(10, 10, 10), state_dim=4)
    with pytest.raises(MetricError, match="pca_dim=16 is too large .* dimension 4"):
        score_encoder(narrow, "state", cache=False)


# ----------------------------------------------------------------------------- CLI
def test_cli_embed_writes_the_state(tmp_path, demo):
    out = tmp_path / "z.npz"
    assert main(["embed", DEMO, "--encoder", "state", "--out", str(out),
                 "--precision", "int8"]) == 0
    with np.load(out) as f:
        np.testing.assert_array_equal(f["embeddings"], demo.state)
        assert str(f["encoder"]) == "state" and str(f["precision"]) == "auto"


def test_cli_score_puts_state_next_to_pixels(tmp_path):
    out = tmp_path / "board.json"
    spec = DEMO.replace("episodes=3", "episodes=4")     # held-out scores need 4 episodes
    assert main(["score", spec, "--encoders", "pixels,state", "--n-boot", "10",
                 "--pca-dim", "8", "--out", str(out)]) == 0
    records = {r["encoder"]["id"]: r for r in json.loads(out.read_text())}
    assert set(records) == {"pixels", "state"}
    state = records["state"]
    assert state["encoder"]["architecture"] == "State" and state["precision"] == "auto"
    assert np.isfinite(state["action_score_heldout"]) and -1.0 <= state["dis"] <= 1.0
    assert state["action_score_train"] != records["pixels"]["action_score_train"]
    # The state is the ceiling of its own action scores.
    assert state["action_score_heldout"] == state["action_score_heldout_ceiling"]
    assert state["action_score_heldout_skill"] == 1.0


def test_cli_encoders_table_shows_the_state_width_as_s(capsys):
    assert main(["encoders", "state"]) == 0
    row, = [line for line in capsys.readouterr().out.splitlines() if line.startswith("state")]
    assert row.split()[-4:] == ["S", "0.0", "ready", "-"]      # "-": no model to run


def test_cli_project_maps_the_state(tmp_path):
    out = tmp_path / "map.csv"
    assert main(["project", DEMO, "--encoder", "state", "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    assert len(frame) == 48 and set(frame["domain"]) == {"sim", "real"}
    assert np.isfinite(frame[["x", "y"]].to_numpy()).all()


def test_cli_saliency_refuses_in_one_line(tmp_path, capsys):
    assert main(["saliency", DEMO, "--encoder", "state", "--out", str(tmp_path / "s")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "no image model" in line]
    assert len(err) == 1 and "state" in err[0]
    assert not (tmp_path / "s").exists()


# ----------------------------------------------------------------------------- app
TINY = "demo:episodes=3,steps=8,height=96,width=128"


def _app(monkeypatch, cache_dir):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("S2R_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("S2R_DEMO_SPEC", TINY)
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "pixels,state")
    return AppTest.from_file(str(APP), default_timeout=300)


def _ok(at) -> None:
    assert not at.exception, [e.message for e in at.exception]


def test_app_pages_with_the_state_reference(tmp_path, monkeypatch):
    from ui import state as S

    at = _app(monkeypatch, tmp_path / "cache")
    at.run()  # the home page computes pixels and state
    _ok(at)
    (held,) = at.session_state["results.records"].values()
    assert sorted(held) == ["pixels", "state"]
    assert held["state"]["encoder"]["architecture"] == "State"
    note = "no image model"
    # Scores: the state reference selected -> a note instead of saliency and t-SNE
    at.session_state[S.SELECTION_ENCODER] = "state"
    at.switch_page(pages.SCORES.path).run()
    _ok(at)
    assert at.selectbox(key=S.SCORES_INSPECT).value == "state"
    assert any(note in i.value for i in at.info) and not at.image
    # Saliency: state selected elsewhere, but not offered; pixels is explained instead
    at.session_state[S.SELECTION_ENCODER] = "state"
    at.switch_page(pages.SALIENCY.path).run()
    _ok(at)
    box = at.selectbox(key=S.SALIENCY_ENCODER)
    assert box.options == ["Raw pixels (32x32) (pixels)"] and box.value == "pixels"
    # (a caption, not an info box: another encoder is what the page inspects)
    assert any(note in c.value for c in at.caption) and len(at.image) == 4
    assert not any(note in i.value for i in at.info)
    # Compare: one image encoder only -> says so
    at.switch_page(pages.COMPARE.path).run()
    _ok(at)
    assert any("at least two image encoders" in i.value for i in at.info) and not at.image
    # Projection: the state's t-SNE is drawn
    at.session_state[S.PROJECTION_ENCODERS] = ["state"]
    at.switch_page(pages.PROJECTION.path).run()
    _ok(at)
    assert not at.error and at.metric and 0.0 <= float(at.metric[0].value) <= 1.5


def test_app_leaves_state_out_for_a_dataset_without_state(tmp_path, monkeypatch):
    from s2r.datasets import load_dataset
    from s2r.datasets.folder import write_folder
    from ui import state as S

    stateless = dataclasses.replace(load_dataset("demo:episodes=2,steps=4,height=64,width=64"),
                                    state=None, _fingerprint=None)
    folder = write_folder(stateless, tmp_path / "no_state")
    at = _app(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at.run()
    _ok(at)
    picker = at.multiselect(key=S.HOME_ENCODERS)
    assert picker.value == ["pixels", "state"]  # the demo has state
    assert not any("no robot state" in i.value for i in at.info)
    at.radio(key=S.HOME_SOURCE).set_value("Files on disk").run()
    at.text_input(key=S.HOME_SIM_PATH).input(str(folder)).run()
    _ok(at)
    assert at.session_state[S.DATASET_SPEC] == str(folder)
    picker = at.multiselect(key=S.HOME_ENCODERS)
    assert picker.value == ["pixels"] and not any("(state)" in o for o in picker.options)
    assert any("no robot state" in i.value and "State key" in i.value for i in at.info)
