"""Meta-World (MuJoCo) in the dashboard: the home page's second world with its task
picker, the Validation page's world and task switch, and the one-line reason when Meta-World
cannot run here."""

from __future__ import annotations

import pytest

from s2r.cache import Cache
from s2r.closedloop.encoder_rollouts import RolloutParams
from s2r.closedloop.validation import validate
from s2r.worlds import WORLDS
from tests.ui.apptest import no_exception, open_app, use_env, validation_tables
from ui import links as L
from ui import sources
from ui import state as S
from ui import world_specs as W
from ui import pages

#: 4 + 4 expert episodes of 8 steps at 64 x 64: the fewest the held-out scores accept.
TINY_MW = "metaworld:task=button-press-topdown-v3,episodes=4,steps=8,height=64,width=64"
VALIDATION = pages.VALIDATION.path


def _home(monkeypatch, cache_dir, spec=TINY_MW, query=None):
    use_env(monkeypatch, cache_dir)
    monkeypatch.setenv("S2R_DEMO_SPEC", spec)
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app(query=query)
    at.run()
    no_exception(at)
    return at


# ----------------------------------------------------------------------------- pure
def test_world_specs_name_the_world_and_write_one_canonical_spec():
    assert W.names_world(TINY_MW) == "metaworld" and W.names_world("demo:gap=1") == "demo"
    assert W.names_world("/data/sim.zarr") is None and W.names_world(["a", "b"]) is None
    spec = W.world_spec("metaworld", task="assembly-v3", episodes=5)
    assert spec.startswith("metaworld:") and "task=assembly-v3" in spec and "episodes=5" in spec
    options = W.world_options(spec, "metaworld")
    assert options["task"] == "assembly-v3" and options["episodes"] == 5
    assert W.world_spec("metaworld", **options) == W.world_spec("metaworld", **options)
    assert W.world_options(spec, "demo") is None                       # another world's
    assert W.world_options("metaworld:task=nope", "metaworld") is None  # refused by the library
    assert "button-press-topdown-v3" in W.declared("metaworld")["task"].choices
    assert "assembly-v3" in W.task_title("metaworld", "assembly-v3")
    assert sources.source_of(spec) == "metaworld"
    assert sources.source_of("demo") == "demo"
    assert sources.source_of("/x.zarr") == sources.FILES


def test_a_world_switch_swaps_the_other_worlds_controls_for_its_own():
    known = ["state", "pixels", "simcnn-dr0", "simcnn-dr1", "mw-simcnn-dr0", "mw-simcnn-dr1"]
    assert W.world_encoders(known, ["state", "pixels", "simcnn-dr0"], "metaworld") == \
        ["state", "pixels", "mw-simcnn-dr0", "mw-simcnn-dr1"]
    assert W.world_encoders(known, ["pixels", "mw-simcnn-dr1"], "demo") == \
        ["pixels", "simcnn-dr0", "simcnn-dr1"]
    assert W.world_encoders(known, ["state", "pixels"], "metaworld") == ["state", "pixels"]
    assert W.world_encoders(known, ["nope", "pixels"], "demo") == ["pixels"]


def test_a_link_to_a_large_metaworld_dataset_opens_the_most_it_may():
    opened, note = L.link_world("metaworld:task=assembly-v3,episodes=100,steps=200")
    options = W.world_options(opened, "metaworld")
    assert options["task"] == "assembly-v3"
    assert 2 * options["episodes"] * options["steps"] <= L.LINK_WORLD_FRAMES
    assert note.startswith("The link's metaworld dataset asks for more") and "episodes=100" in note
    assert L.link_world(TINY_MW) == (TINY_MW, None)
    values, warnings = L.read_url({"dataset": [TINY_MW]})
    assert values[S.DATASET_SPEC] == TINY_MW and warnings == []


# ----------------------------------------------------------------------------- home page
def test_home_opens_the_metaworld_source_with_its_task_picker(tmp_path, monkeypatch):
    at = _home(monkeypatch, tmp_path / "c")
    assert at.radio(key=S.HOME_SOURCE).value == "metaworld"
    assert W.world_title("metaworld") in at.radio(key=S.HOME_SOURCE).options
    picker = at.selectbox(key=S.home_option("metaworld", "task"))
    assert picker.value == "button-press-topdown-v3"
    assert picker.options == [W.task_title("metaworld", t)
                              for t in W.declared("metaworld")["task"].choices]
    assert len(picker.options) >= 3
    assert at.number_input(key=S.home_option("metaworld", "episodes")).value == 4
    assert at.number_input(key=S.home_option("metaworld", "steps")).value == 8
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sim frames"] == "32" and metrics["Real frames"] == "32"
    assert metrics["Action"] == "4-D" and metrics["Frame size"] == "64x64"
    assert any("(state)" in o for o in at.multiselect[0].options)  # Meta-World has state
    shift = at.selectbox(key=S.home_option("metaworld", "shift"))  # drawn from its declaration
    assert shift.label == "Kind of shift" and shift.value == "all"
    assert shift.options == list(W.declared("metaworld")["shift"].choices)
    assert "shift" not in at.session_state[S.DATASET_SPEC]          # the default: not written
    # another task: a new spec, in the session and the URL
    at.selectbox(key=S.home_option("metaworld", "task")).select("assembly-v3").run()
    no_exception(at)
    spec = at.session_state[S.DATASET_SPEC]
    options = W.world_options(spec, "metaworld")
    assert options["task"] == "assembly-v3" and options["episodes"] == 4
    assert options["height"] == 64 and options["width"] == 64
    assert at.query_params["dataset"] == spec
    at.selectbox(key=S.home_option("metaworld", "shift")).select("distractors").run()
    no_exception(at)
    spec = at.session_state[S.DATASET_SPEC]
    assert W.world_options(spec, "metaworld")["shift"] == "distractors"
    assert "shift=distractors" in spec and at.query_params["dataset"] == spec


def test_a_link_to_a_metaworld_spec_opens_that_source(tmp_path, monkeypatch):
    at = _home(monkeypatch, tmp_path / "c", spec="demo:episodes=4,steps=8,height=96,width=128",
               query={"dataset": TINY_MW.replace("button-press-topdown-v3", "assembly-v3")})
    assert not at.warning, [w.value for w in at.warning]
    assert at.radio(key=S.HOME_SOURCE).value == "metaworld"
    assert at.selectbox(key=S.home_option("metaworld", "task")).value == "assembly-v3"


def test_without_egl_the_metaworld_source_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "glfw")     # a backend that cannot render off-screen
    at = _home(monkeypatch, tmp_path / "c", spec="demo:episodes=4,steps=8,height=96,width=128")
    at.radio(key=S.HOME_SOURCE).set_value("metaworld").run()
    no_exception(at)
    assert [w.value for w in at.warning] == [
        f"{WORLDS['metaworld'].title} cannot run here: {WORLDS['metaworld'].unavailable()}."]
    assert "MUJOCO_GL=glfw" in at.warning[0].value
    assert not at.multiselect and not at.metric      # stopped before loading anything
    at.radio(key=S.HOME_SOURCE).set_value("demo").run()   # the demo still works
    no_exception(at)
    assert {m.label for m in at.metric} >= {"Sim frames", "Real frames"}


@pytest.mark.slow
def test_every_results_page_works_on_a_metaworld_dataset(tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "c")
    monkeypatch.setenv("S2R_DEMO_SPEC", TINY_MW)
    monkeypatch.setenv("S2R_DEFAULT_ENCODERS", "pixels,resnet18@random,state")
    at = open_app()
    at.run()                                        # the first visit scores the three
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    scored = " ".join(str(df.value.to_dict()) for df in at.dataframe)
    assert all(e in scored for e in ("pixels", "resnet18@random", "state"))
    assert any(m.label == "Sim frames" and m.value == "32" for m in at.metric)
    for page, words in ((pages.SCORES.path, "Every metric"),
                        (pages.PROJECTION.path, "mixing number"),
                        (pages.SALIENCY.path, "Sim/real agreement"),
                        (pages.COMPARE.path, "Encoder agreement")):
        at.switch_page(page).run()
        no_exception(at)
        assert not at.error, (page, [e.value for e in at.error])
        text = " ".join(m.value for m in [*at.markdown, *at.subheader, *at.caption])
        assert words in text, (page, words)


# ----------------------------------------------------------------------------- Validation page
def _validation(monkeypatch, cache_dir, spec=TINY_MW, query=None):
    use_env(monkeypatch, cache_dir)
    monkeypatch.setenv("S2R_DEMO_SPEC", spec)
    return open_app(VALIDATION, query=query)


def test_the_validation_page_switches_world_and_task(tmp_path, monkeypatch):
    at = _validation(monkeypatch, tmp_path / "c", spec="demo:episodes=3,steps=6,height=64,width=64")
    at.run()
    no_exception(at)
    assert at.radio(key=S.VALIDATION_WORLD).value == "demo"
    assert "simcnn-dr1" in at.multiselect(key=S.VALIDATION_ENCODERS).value
    at.radio(key=S.VALIDATION_WORLD).set_value("metaworld").run()
    no_exception(at)
    chosen = at.multiselect(key=S.VALIDATION_ENCODERS).value
    assert "simcnn-dr1" not in chosen and {"mw-simcnn-dr0", "mw-simcnn-dr1"} <= set(chosen)
    offered = at.multiselect(key=S.VALIDATION_ENCODERS).options
    assert not any(e.startswith("simcnn") for e in offered)
    assert "task=button-press-topdown-v3" in at.markdown[0].value
    at.selectbox(key=S.validation_option("task")).select("peg-insert-side-v3").run()
    no_exception(at)
    dataset = at.markdown[0].value
    assert "metaworld:" in dataset and "task=peg-insert-side-v3" in dataset
    assert any(b.label == "Run validation" for b in at.button)   # nothing cached, nothing run
    assert at.query_params["world"] == "metaworld"
    assert at.query_params["task"] == "peg-insert-side-v3"
    assert not list((tmp_path / "c").rglob("*.npy"))


def test_a_validation_link_opens_the_world_and_task_it_names(tmp_path, monkeypatch):
    at = _validation(monkeypatch, tmp_path / "c", spec="demo:episodes=3,steps=6,height=64,width=64",
                     query={"world": "metaworld", "task": "assembly-v3"})
    at.run()
    no_exception(at)
    assert at.radio(key=S.VALIDATION_WORLD).value == "metaworld"
    assert at.selectbox(key=S.validation_option("task")).value == "assembly-v3"
    assert "task=assembly-v3" in at.markdown[0].value


def test_the_gaps_follow_the_task_until_the_user_picks_others(tmp_path, monkeypatch):
    at = _validation(monkeypatch, tmp_path / "c", spec="demo:episodes=3,steps=6,height=64,width=64")
    at.run()
    gaps = at.multiselect(key=S.VALIDATION_GAPS)
    assert gaps.value == [0.0, 0.5, 1.0]
    at.radio(key=S.VALIDATION_WORLD).set_value("metaworld").run()
    at.selectbox(key=S.validation_option("task")).select("assembly-v3").run()
    no_exception(at)
    assert at.multiselect(key=S.VALIDATION_GAPS).value == [0.0, 0.1, 0.25]
    at.selectbox(key=S.validation_option("task")).select("hammer-v3").run()
    assert at.multiselect(key=S.VALIDATION_GAPS).value == [0.0, 0.05, 0.1]
    at.multiselect(key=S.VALIDATION_GAPS).set_value([0.0, 1.0]).run()
    at.selectbox(key=S.validation_option("task")).select("drawer-open-v3").run()
    no_exception(at)
    assert at.multiselect(key=S.VALIDATION_GAPS).value == [0.0, 1.0]    # the user's stay


def test_a_links_gaps_stay_whatever_the_task(tmp_path, monkeypatch):
    at = _validation(monkeypatch, tmp_path / "c", spec="demo:episodes=3,steps=6,height=64,width=64",
                     query={"world": "metaworld", "task": "assembly-v3", "gaps": "0,0.5"})
    at.run()
    no_exception(at)
    assert at.multiselect(key=S.VALIDATION_GAPS).value == [0.0, 0.5]


def test_without_egl_the_validation_page_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "glfw")
    at = _validation(monkeypatch, tmp_path / "c", spec="demo:episodes=3,steps=6,height=64,width=64",
                     query={"world": "metaworld"})
    at.run()
    no_exception(at)
    assert any("MUJOCO_GL=glfw" in w.value for w in at.warning)
    assert not any(b.label == "Run validation" for b in at.button)
    at.radio(key=S.VALIDATION_WORLD).set_value("demo").run()    # the demo still validates
    no_exception(at)
    assert any(b.label == "Run validation" for b in at.button)


@pytest.mark.slow
def test_a_cached_metaworld_report_plays_a_rollout_in_both_looks(tmp_path, monkeypatch):
    ids = ["state", "pixels", "efficientnet-lite0"]
    spec = W.world_spec("metaworld", **W.world_options(TINY_MW, "metaworld"))
    params = RolloutParams(rollouts=5, demos=10, control_demos=6, height=64, width=64)
    validate(spec, ids, [0.0, 1.0], params=params, cache=Cache(tmp_path / "c"), n_boot=20)
    at = _validation(monkeypatch, tmp_path / "c")
    for key, value in ((S.VALIDATION_ENCODERS, ids), (S.VALIDATION_GAPS, [0.0, 1.0]),
                       (S.VALIDATION_ROLLOUTS, 5), (S.VALIDATION_DEMOS, 10),
                       (S.VALIDATION_CONTROL_DEMOS, 6)):
        at.session_state[key] = value
    at.run()
    no_exception(at)
    assert at.radio(key=S.VALIDATION_WORLD).value == "metaworld"
    success = validation_tables(at)[0]
    assert set(ids) == set(success.index) and "gap 1" in success.columns
    stages = validation_tables(at)[1]
    assert list(stages.columns) == list(WORLDS["metaworld"].task({}).stages)
    captions = [img.caption for el in at.get("image") for img in el.proto.imgs]
    assert any(c.startswith("real look at gap 1, step 0") for c in captions), captions
    assert any(c.startswith("sim look, same state") for c in captions), captions
    actions = validation_tables(at)[-1]
    assert list(actions.index) == ["hand dx", "hand dy", "hand dz", "gripper effort"]
    at.selectbox(key=S.VALIDATION_VIEW_ENCODER).select("efficientnet-lite0").run()
    at.toggle(key=S.VALIDATION_VIEW_SALIENCY).set_value(True).run()
    no_exception(at)
    assert any("Sim/real agreement" in m.value for m in at.markdown)


# ----------------------------------------------------------------------------- real browser
@pytest.mark.browser
def test_in_a_browser_the_metaworld_source_picks_a_task_and_shows_its_frames(tmp_path):
    from playwright.sync_api import expect

    from tests.helpers.browser import browser_page, running_app, wait_idle

    env = {"S2R_CACHE_DIR": str(tmp_path / "cache"), "S2R_DEMO_SPEC": TINY_MW,
           "S2R_DEFAULT_ENCODERS": "pixels", "S2R_AUTOCOMPUTE": "0"}
    with running_app(env, log_path=tmp_path / "streamlit.log") as url, browser_page() as page:
        page.goto(url)
        page.get_by_text("Sample frames (sim above, real below)").wait_for(timeout=300_000)
        wait_idle(page)
        expect(page.get_by_text(W.world_title("metaworld"), exact=True)).to_be_visible()
        picker = page.get_by_role("combobox", name="Task")          # the task picker
        expect(picker).to_have_value(W.task_title("metaworld", "button-press-topdown-v3"))
        picker.click()
        page.get_by_role("option", name=W.task_title("metaworld", "assembly-v3")).click()
        page.wait_for_function("() => decodeURIComponent(location.search)"
                               ".includes('task=assembly-v3')", timeout=300_000)
        wait_idle(page)
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=\"stImage\"] img')]"
            ".filter(i => i.complete && i.naturalWidth > 0).length >= 8", timeout=120_000)
        captions = page.locator('[data-testid="stImageCaption"]').all_inner_texts()
        assert len(captions) >= 8, captions
