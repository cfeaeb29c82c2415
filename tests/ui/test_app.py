"""The dashboard under Streamlit's AppTest: every page, before and after computing.

A tiny demo and two offline encoders (:mod:`tests.ui.apptest`) keep the file short: the home
page computes them once (the session fixture ``computed`` of ``conftest.py``, its own cache
folder) and the other tests read that cache, as a user's later session would.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from s2r.evidence import default_score, shipped_evidence
from s2r.figures import axes
from s2r.metrics import catalogue
from tests.ui.apptest import ENCODERS, PAGES, TINY, no_exception, open_app, use_env
from ui import state as S
from ui import pages
from ui import world_specs as W


def _captions(at: AppTest) -> list[str]:
    return [c for img in at.image for c in img.captions]


def _chart_data(chart, name: str):
    """The DataFrame of a chart's named dataset (Streamlit sends it as Arrow, not in the
    spec)."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    (dataset,) = [d for d in chart.proto.datasets if d.name == name]
    return convert_arrow_bytes_to_pandas_df(dataset.data.data)


# ----------------------------------------------------------------------------- before
@pytest.mark.parametrize("page", PAGES)
def test_page_opened_before_anything_was_computed_says_what_to_do(page, tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "empty-cache")
    at = open_app(page)
    at.run()
    no_exception(at)
    assert any("Nothing computed yet" in i.value for i in at.info)
    assert [link.value for link in at.page_link] == ["Go to the home page"]
    assert not at.image  # nothing drawn from results that do not exist


# ----------------------------------------------------------------------------- home
def test_first_visit_computes_the_default_set_with_progress(computed):
    cache_dir, at = computed
    records = at.session_state["results.records"]
    (fingerprint, held), = records.items()
    assert sorted(held) == sorted(ENCODERS)
    for rec in held.values():
        assert -1.0 <= rec["dis"] <= 1.0 and rec["dataset"]["fingerprint"] == fingerprint
    # one status box per encoder, each finished
    assert len(at.status) == len(ENCODERS)
    assert all(box.state == "complete" and "done in" in box.label for box in at.status)
    table, = [d.value for d in at.dataframe if "DIS" in d.value.columns]
    assert len(table) == len(ENCODERS) and table["DIS"].str.contains(r"\[").all()
    assert {"Sim2Real", "Transfer skill", "Held-out skill", "Tier"} <= set(table.columns)
    assert (cache_dir / "index").exists()


def test_reload_reads_the_cache_instead_of_recomputing(computed, monkeypatch):
    from s2r.cache import Cache

    cache_dir, _ = computed
    use_env(monkeypatch, cache_dir)
    before = sorted(e.hash for e in Cache(cache_dir).ls())
    at = open_app()
    at.run()
    no_exception(at)
    # a new session: every encoder is found on disk, none is computed again
    assert sorted(e.hash for e in Cache(cache_dir).ls()) == before
    assert len(at.status) == len(ENCODERS)
    assert all(box.state == "complete" for box in at.status)
    assert at.session_state[S.HOME_AUTOCOMPUTED] == "done"


def test_an_interrupted_run_resumes_when_the_user_comes_back(computed, monkeypatch):
    cache_dir, _ = computed
    use_env(monkeypatch, cache_dir)
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app()
    at.run()
    no_exception(at)
    assert not at.status  # nothing computed without a reason
    assert any("Press **Compute scores**" in i.value for i in at.info)
    # a run left half-way (the user opened another page) is pending: coming back resumes it
    at.session_state[S.HOME_PENDING] = True
    at.run()
    no_exception(at)
    assert len(at.status) == len(ENCODERS) and all(b.state == "complete" for b in at.status)
    assert at.session_state[S.HOME_PENDING] is False


def test_int8_precision_is_a_separate_result_set_labelled_on_every_page(computed, monkeypatch):
    import s2r.encoders.quantize as quantize_mod

    cache_dir, _ = computed
    use_env(monkeypatch, cache_dir)
    monkeypatch.setattr(quantize_mod, "MAX_INT8_ERROR", 10.0)  # accept int8 for resnet18@random
    at = open_app()
    at.run()
    fingerprint = next(iter(at.session_state["results.records"]))
    exact = dict(at.session_state["results.records"][fingerprint])
    assert at.session_state[S.PRECISION] == "auto"
    at.radio(key=S.HOME_PRECISION).set_value("int8").run()
    no_exception(at)
    assert at.session_state[S.PRECISION] == "int8"
    assert any("**Precision:** int8" in m.value for m in at.sidebar.markdown)
    at.button[0].click().run()  # Compute scores at int8
    no_exception(at)
    held = at.session_state["results.records"][f"{fingerprint}+int8"]
    assert held["resnet18@random"]["precision"] == "int8"
    assert held["pixels"]["precision"] == "auto"  # no int8 for pixels: the exact record
    assert held["pixels"]["dis"] == exact["pixels"]["dis"]
    assert held["resnet18@random"]["dis"] != exact["resnet18@random"]["dis"]
    table, = [d.value for d in at.dataframe if "DIS" in d.value.columns]
    assert "ResNet18 (random init) · int8" in table["Encoder"].tolist()
    # the Scores page shows the int8 set; back to exact shows the exact set again
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    assert any("· int8" in str(v) for d in at.dataframe for v in d.value.iloc[:, 0].tolist())
    at.switch_page(pages.HOME.path).run()
    at.radio(key=S.HOME_PRECISION).set_value("auto").run()
    no_exception(at)
    table, = [d.value for d in at.dataframe if "DIS" in d.value.columns]
    assert not any("int8" in label for label in table["Encoder"])


def test_int8_refused_by_the_fidelity_guard_says_why(tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "resnet18@random")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app()
    at.run()
    at.radio(key=S.HOME_PRECISION).set_value("int8").run()
    at.button[0].click().run()
    no_exception(at)
    (held,) = [v for k, v in at.session_state["results.records"].items() if k.endswith("+int8")]
    record = held["resnet18@random"]
    assert record["precision"] == "auto"  # random init: int8 error far above the limit
    text = " ".join(c.value for c in at.caption)
    assert "resnet18@random: int8 would be off by" in text and "computed exactly" in text


def test_library_errors_are_shown_with_st_error(tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app()
    at.run()
    no_exception(at)
    at.radio(key=S.HOME_SOURCE).set_value("Files on disk").run()
    at.text_input(key=S.HOME_SIM_PATH).input(str(tmp_path / "missing_sim.zarr"))
    at.text_input(key=S.HOME_REAL_PATH).input(str(tmp_path / "missing_real.zarr")).run()
    no_exception(at)
    assert at.error and "missing_sim.zarr" in at.error[0].value


def test_a_dataset_folder_on_disk_is_loaded_and_scored(tmp_path, monkeypatch):
    from s2r.datasets import load_dataset
    from s2r.datasets.folder import write_folder

    folder = write_folder(load_dataset(TINY), tmp_path / "my_robot")
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "resnet18@random")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app()
    at.run()
    at.radio(key=S.HOME_SOURCE).set_value("Files on disk").run()
    at.text_input(key=S.HOME_SIM_PATH).input(str(folder)).run()
    no_exception(at)
    assert at.session_state[S.DATASET_SPEC] == str(folder)
    assert [m.value for m in at.metric][:2] == ["32", "32"]  # sim and real frames
    at.button[0].click().run()  # Compute scores
    no_exception(at)
    assert [b.state for b in at.status] == ["complete"]
    table, = [d.value for d in at.dataframe if "DIS" in d.value.columns]
    assert len(table) == 1


def test_scores_that_cannot_be_estimated_say_why(tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEMO_SPEC", "demo:episodes=3,steps=8,height=64,width=80")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "pixels")
    at = open_app()
    at.run()
    no_exception(at)
    table, = [d.value for d in at.dataframe if "DIS" in d.value.columns]
    assert table["Transfer skill"].tolist() == ["n/a"] and table["DIS"].str.contains(r"\[").all()
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    (warning,) = [w.value for w in at.warning if "Not estimable" in w.value]
    assert "pixels" in warning and "at least 4 per domain" in warning


def test_encoder_without_weights_says_how_to_get_them(tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "resnet18")
    at = open_app()
    at.run()  # the first visit's automatic run skips it: opening a page never downloads
    no_exception(at)
    text = " ".join(m.value for m in at.markdown)
    assert "weights" in text and "resnet18" in text
    assert not at.status and not any("resnet18" in e.value for e in at.error)
    (button,) = [b for b in at.button if b.label == "Compute scores"]
    button.click().run()  # a click tries it: the build fails with the library's message
    no_exception(at)
    assert any(e.value and "resnet18" in e.value for e in at.error)


# ----------------------------------------------------------------------------- pages
@pytest.fixture
def app_after_compute(computed, monkeypatch):
    cache_dir, _ = computed
    use_env(monkeypatch, cache_dir)
    return open_app()


def test_scores_click_selects_the_encoder_whose_saliency_is_shown(app_after_compute):
    at = app_after_compute
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    chart = at.get("vega_lite_chart")[0].proto
    spec = json.loads(chart.spec)
    assert "pick" in json.dumps(spec.get("params", [])) + json.dumps(spec.get("layer", []))
    assert spec["title"]["text"].startswith("Domain invariance vs action score")
    for pick in ENCODERS:  # a click on each point in turn
        at.session_state["scores.chart"] = {"selection": {"pick": [{"encoder": pick}]}}
        at.run()
        no_exception(at)
        assert at.session_state[S.SELECTION_ENCODER] == pick
        heading = [h.value for h in at.subheader if h.value.startswith("Inside")]
        assert len(heading) == 1 and pick in heading[0], heading
        captions = _captions(at)
        assert sum("sim saliency" in c for c in captions) == 3
        assert sum("real saliency" in c for c in captions) == 3
    # the selection carries to the Saliency and Compare pages
    at.switch_page(pages.SALIENCY.path).run()
    no_exception(at)
    assert at.selectbox(key=S.SALIENCY_ENCODER).value == ENCODERS[-1]
    at.switch_page(pages.COMPARE.path).run()
    no_exception(at)
    assert at.selectbox(key=S.COMPARE_ENCODER_A).value == ENCODERS[-1]


def test_scores_table_has_every_metric_with_intervals_tiers_and_downloads(app_after_compute):
    at = app_after_compute
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    table, = [d.value for d in at.dataframe if "DIS" in d.value.columns]
    for col in ("Sim2Real", "Transfer skill", "Held-out skill", "DIS", "Retrieval MRR",
                "Sep. d'", "Domain probe", "Transfer AS", "Held-out AS", "Train AS",
                "Train AS null", "Retrieval chance", "Tier"):
        assert col in table.columns, col
    assert sorted(table["id"]) == sorted(ENCODERS)
    # A random-weight encoder's sim probe can transfer far below the floor (skill -10.9);
    # a score whose penalty choice is unstable ends with the warning sign.
    assert table["Transfer skill"].str.match(
        r"^-?\d+\.\d{3} \[-?\d+\.\d{3}, -?\d+\.\d{3}\]( ⚠)?$").all()
    assert set(table["Tier"]) <= {1, 2}
    assert [b.proto.label for b in at.get("download_button")
            if b.proto.label.startswith("Download")] == ["Download CSV", "Download JSON"]


def test_scores_page_shows_which_differences_are_resolved(app_after_compute):
    at = app_after_compute
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    assert any(h.value == "Which differences are resolved?" for h in at.subheader)
    chart = at.get("vega_lite_chart")[1]
    heatmap = json.loads(chart.proto.spec)
    ranked = catalogue.titles()[default_score("ranking", shipped_evidence(), world="demo")]
    assert heatmap["title"]["text"] == f"Ranking confidence: {ranked}"   # the evidence's
    cells = _chart_data(chart, heatmap["layer"][0]["data"]["name"]
                        if "data" in heatmap["layer"][0] else heatmap["data"]["name"])
    assert set(cells["row"]) == set(ENCODERS) and len(cells) == 2
    assert cells["p"].between(0, 1).all() and cells["p"].sum() == pytest.approx(1.0)
    assert any("tier(s), best first" in m.value for m in at.markdown)
    at.selectbox(key=S.SCORES_RANK_METRIC).set_value("dis").run()
    no_exception(at)
    heatmap = json.loads(at.get("vega_lite_chart")[1].proto.spec)
    assert heatmap["title"]["text"] == "Ranking confidence: Domain invariance (DIS)"


def test_scores_chart_options_change_the_chart(app_after_compute):
    at = app_after_compute
    at.switch_page(pages.SCORES.path).run()

    def spec():
        return json.loads(at.get("vega_lite_chart")[0].proto.spec)

    def marks(s):
        """The layers' marks, less the off-scale markers (text layers of the column
        ``axes.MARK_COL``, one per side an encoder of the demo lies beyond)."""
        return [layer["mark"]["type"] for layer in s["layer"]
                if layer.get("encoding", {}).get("text", {}).get("field") != axes.MARK_COL]

    # Default: the evidence's strongest action score (a skill), floor (0) and ceiling (1)
    # lines, intervals of both axes.
    assert marks(spec()) == ["rule", "text", "rule", "rule", "point", "text"]
    point = spec()["layer"][4]["encoding"]
    assert point["y"]["field"] == default_score("y", shipped_evidence(), world="demo")
    chart = at.get("vega_lite_chart")[0]
    refs = _chart_data(chart, spec()["layer"][0]["data"]["name"])
    assert sorted(refs["value"]) == [0.0, 1.0]
    assert refs["label"].tolist()[1] == "1 = robot-state ceiling"
    at.checkbox(key=S.SCORES_ERRORBARS).uncheck().run()
    no_exception(at)
    assert marks(spec()) == ["rule", "text", "point", "text"]
    # A raw score: its floor and ceiling (the same for every encoder) as reference lines.
    at.radio(key=S.SCORES_Y).set_value("transfer_score").run()
    no_exception(at)
    point = spec()["layer"][2]["encoding"]
    assert point["y"]["field"] == "transfer_score"
    assert point["y"]["title"] == catalogue.get("transfer_score").title
    assert point["x"]["field"] == "dis"
    assert {point["color"]["field"], point["shape"]["field"], point["size"]["field"]} == \
        {"arch", "group", "params_m"}
    refs = _chart_data(at.get("vega_lite_chart")[0], spec()["layer"][0]["data"]["name"])
    assert [lab.split()[0] for lab in refs["label"]] == ["floor", "ceiling"]
    # The paper's training AS: each encoder's shuffled-action null as a tick.
    at.radio(key=S.SCORES_Y).set_value("action_score_train").run()
    no_exception(at)
    assert marks(spec()) == ["tick", "point", "text"]
    assert spec()["layer"][0]["encoding"]["y"]["field"] == "action_score_train_null"


def test_projection_click_shows_the_frame(app_after_compute):
    at = app_after_compute
    at.switch_page(pages.PROJECTION.path).run()
    no_exception(at)
    eid = at.multiselect(key=S.PROJECTION_ENCODERS).value[0]
    # What st.plotly_chart(on_select="rerun") returns for a click: the clicked point with
    # its customdata (frame, episode, step; ui.projection_map.figure).
    at.session_state[f"projection.map.{eid}.joint.30.all"] = {"selection": {
        "points": [{"curve_number": 0, "point_index": 3, "customdata": [3, 0, 3]}],
        "point_indices": [3], "box": [], "lasso": []}}
    at.run()
    no_exception(at)
    captions = _captions(at)
    assert any("sim · episode 0 · step 3" in c for c in captions), captions
    assert any(c.startswith("paired real frame") for c in captions)
    # the other mode is drawn too
    at.radio(key=S.PROJECTION_MODE).set_value("place-real").run()
    no_exception(at)
    assert at.metric and 0.0 <= float(at.metric[0].value) <= 1.5


def test_saliency_page_every_target(app_after_compute):
    at = app_after_compute
    at.switch_page(pages.SALIENCY.path).run()
    at.selectbox(key=S.SALIENCY_ENCODER).set_value("resnet18@random").run()
    seen = {}
    for target in ("embedding", "action", "domain", "pair"):
        at.selectbox(key=S.SALIENCY_TARGET).set_value(target).run()
        no_exception(at)
        captions = _captions(at)
        assert [c.split(" · ")[0] for c in captions] == [
            "sim", "sim saliency", "real", "real saliency"], captions
        assert any("Sim/real agreement" in m.value for m in at.markdown)
        seen[target] = at.image[1].value + at.image[3].value  # overlay image URLs
    # each target explains something else: the overlays differ
    assert len({tuple(v) for v in seen.values()}) == len(seen)


def test_saliency_random_sample_and_frame_pick(app_after_compute):
    at = app_after_compute
    at.switch_page(pages.SALIENCY.path).run()
    at.radio(key=S.SALIENCY_PICK_MODE).set_value("Random sample").run()
    no_exception(at)
    assert sum("sim saliency" in c for c in _captions(at)) == 3
    at.radio(key=S.SALIENCY_PICK_MODE).set_value("By episode and step").run()
    at.slider(key="saliency.step").set_value(5).run()
    no_exception(at)
    assert any("step 5" in c for c in _captions(at))
    # the picked pair is shared with the Compare page
    pair = at.session_state[S.SELECTION_PAIR]
    at.switch_page(pages.COMPARE.path).run()
    no_exception(at)
    assert at.session_state[S.SELECTION_PAIR] == pair
    assert at.slider(key="compare.step").value == 5


def test_compare_two_encoders_on_one_pair(app_after_compute):
    at = app_after_compute
    at.switch_page(pages.COMPARE.path).run()
    no_exception(at)
    a = at.selectbox(key=S.COMPARE_ENCODER_A).value
    b = at.selectbox(key=S.COMPARE_ENCODER_B).value
    assert {a, b} == set(ENCODERS)
    assert len(at.image) == 4  # 2 encoders x (sim, real)
    labels = [m.label for m in at.metric]
    assert "A vs B on the sim frame" in labels and "A vs B on the real frame" in labels
    values = [m.value for m in at.metric]
    assert all(v == "n/a" or -1.0 <= float(v) <= 1.0 for v in values)


# ----------------------------------------------------------------------------- ui helpers
def test_selected_values_reads_every_event_shape():
    from ui.events import selected_values

    assert selected_values(None, "pick", "encoder") == []
    assert selected_values({"selection": {"pick": {}}}, "pick", "encoder") == []  # nothing
    assert selected_values({"selection": {"pick": [{"encoder": "vit"}]}}, "pick",
                           "encoder") == ["vit"]
    assert selected_values({"selection": {"other": [{"encoder": "vit"}]}}, "pick",
                           "encoder") == []


def test_demo_spec_round_trips_through_the_library_parser():
    spec = W.world_spec("demo", episodes=4, gap=0.25, paired=True)
    opts = W.spec_options(spec)
    assert opts["episodes"] == 4 and opts["gap"] == 0.25 and opts["paired"] is True
    assert W.world_spec("demo", **opts) == spec  # canonical: one string per demo
    assert W.spec_options("/data/sim.zarr") is None
    assert W.spec_options("demo:episodes=zero") is None  # invalid: home reports it


# ----------------------------------------------------------------------------- S2R_DEMO_SPEC
def _folder_app(tmp_path, monkeypatch):
    """The home page opened on a small demo written as a folder (named by S2R_DEMO_SPEC),
    without computing: ``(folder, AppTest after its first run)``."""
    from s2r.worlds.demo.dataset import make_demo
    from s2r.datasets.folder import write_folder

    folder = write_folder(make_demo(episodes=2, steps=4, height=64, width=80, seed=3),
                          tmp_path / "mine")
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEMO_SPEC", str(folder))
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app()
    at.run()
    no_exception(at)
    return folder, at


def test_demo_spec_naming_a_folder_opens_that_folder(tmp_path, monkeypatch):
    """S2R_DEMO_SPEC may name a folder: the home page opens "Files on disk" on it and shows
    its frames (it used to show and compute the built-in demo instead)."""
    folder, at = _folder_app(tmp_path, monkeypatch)
    assert at.radio(key=S.HOME_SOURCE).value == "Files on disk"
    assert at.text_input(key=S.HOME_SIM_PATH).value == str(folder)
    assert at.session_state[S.DATASET_SPEC] == str(folder)
    assert [m.value for m in at.metric][:2] == ["8", "8"]  # 2 x 4 frames per domain


def test_demo_spec_naming_a_missing_path_says_so(tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEMO_SPEC", str(tmp_path / "no-such-folder"))
    at = open_app()
    at.run()
    no_exception(at)
    assert at.radio(key=S.HOME_SOURCE).value == "Files on disk"
    assert any("no-such-folder" in e.value and "does not exist" in e.value for e in at.error)
    assert not at.metric  # nothing shown of another dataset


def test_edited_frames_reload_the_dataset(tmp_path, monkeypatch):
    """A frame edited on disk while the app runs: the next run loads the dataset again, so
    its fingerprint (and every cached number keyed by it) follows the files."""
    import time

    import numpy as np
    from PIL import Image

    from ui.loaders import data

    folder, at = _folder_app(tmp_path, monkeypatch)
    before = data.load_frameset(str(folder)).fingerprint
    frame = folder / "real" / "000013.png"
    time.sleep(0.02)
    Image.fromarray(255 - np.asarray(Image.open(frame).convert("RGB"))).save(frame)
    time.sleep(2.1)  # the app looks at the files at most every 2 s
    at.run()
    no_exception(at)
    assert data.load_frameset(str(folder)).fingerprint != before


@pytest.mark.parametrize("page", (None, *PAGES))
def test_broken_encoder_config_is_one_clear_error_on_every_page(page, tmp_path, monkeypatch):
    config = tmp_path / "s2r_encoders.toml"
    config.write_text('[[encoders]]\nid = "a"\ntimm = "resnet18"\nmean = "red"\n')
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_ENCODERS", str(config))
    at = open_app(page)
    at.run()
    no_exception(at)
    (error,) = at.error
    assert "encoder config cannot be used" in error.value and "field 'mean'" in error.value
    assert not at.metric and not at.image


def test_damaged_zarr_chunk_is_a_clear_error_not_a_traceback(tmp_path, monkeypatch):
    """A chunk file of the sim store that cannot be decoded: the home page says which store
    and frames in its sample frames and in the encoder's compute box; nothing raises."""
    import numpy as np

    from tests.helpers.datafiles import frames, write_zarr

    sim, real = tmp_path / "sim.zarr", tmp_path / "real.zarr"
    write_zarr(sim, images=frames(40, 32, 32, seed=1),
               episode_ends=np.array([10, 20, 30, 40], np.uint32))
    write_zarr(real, images=frames(40, 32, 32, seed=2),
               episode_ends=np.array([10, 20, 30, 40], np.uint32))
    (sim / "color_image2" / "3.0.0.0").write_bytes(b"overwritten by something else " * 3)
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEMO_SPEC", f"{sim}:{real}")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "pixels")
    at = open_app()
    at.run()
    no_exception(at)
    messages = [e.value for e in at.error]
    assert any(m.startswith("sim frames could not be read") and "cannot decode frames 12..15"
               in m for m in messages), messages
    assert any(f"sim ({sim}[color_image2]): cannot decode frames 12..15" in m
               and not m.startswith("sim frames") for m in messages), messages


def test_download_button_fetches_missing_weights_from_the_mirror(tmp_path, monkeypatch):
    """An encoder whose weights are missing, a weights mirror set: the home page offers a
    download, and pressing it makes the encoder ready (the file checked loadable first)."""
    import os

    from s2r.encoders import status
    from s2r.settings import current
    from tests.helpers.release_site import Handler, Site, serving, vip_checkpoint

    Handler.site = Site()
    Handler.site.files["/vip_resnet50.pt"] = vip_checkpoint()
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "vip")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    with serving() as url:
        monkeypatch.setenv("S2R_WEIGHTS_MIRROR", url)
        at = open_app()
        at.run()
        no_exception(at)
        assert status("vip", settings=current()).state == "weights-missing"
        (button,) = [b for b in at.button if b.key == S.HOME_DOWNLOAD]
        button.click().run()
        no_exception(at)
    assert status("vip", settings=current()).state == "ready"
    weights = os.environ["S2R_WEIGHTS_DIR"]
    assert sorted(os.listdir(weights)) == ["manifest.json", "vip_resnet50.pt"]
    assert not [b for b in at.button if b.key == S.HOME_DOWNLOAD]  # nothing missing any more


def test_offline_without_a_mirror_says_how_to_download(tmp_path, monkeypatch):
    from ui.loaders import encoders

    monkeypatch.setattr("s2r.encoders.locate.hub_reachable", lambda **_: False)
    encoders._hub_reachable.clear()
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.delenv("S2R_WEIGHTS_MIRROR", raising=False)
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "vip")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app()
    at.run()
    no_exception(at)
    assert not [b for b in at.button if b.key == S.HOME_DOWNLOAD]
    assert any("python -m s2r weights fetch ID" in c.value for c in at.caption)
    encoders._hub_reachable.clear()  # later tests probe again
