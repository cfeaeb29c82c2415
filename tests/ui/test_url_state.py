"""The home page's choices survive what does not draw them, and the page URL holds the view.

Streamlit forgets a widget a run does not draw (the other dataset source, another page, a run
stopped before it); the home page keeps every choice anyway. The dataset, the selected
encoders and the inspected encoder live in the URL (``st.query_params``): a new session opened
with that URL (a reload, a bookmark, a link) shows the same view, and values it cannot use are
named in a warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui.apptest import (
    ENCODERS,
    TINY,
    no_exception,
    open_app,
    robomimic_pair,
    use_env,
)
from ui import links as L
from ui import state as S
from ui import pages
from ui import world_specs as W

FILES, DEMO = "Files on disk", "demo"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The home page on the tiny demo, nothing computed automatically: ``(AppTest, sim path,
    real path)`` with two robomimic files written in ``tmp_path``."""
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app()
    at.run()
    no_exception(at)
    return (at, *robomimic_pair(tmp_path))


def _open_files(at, sim: str, real: str) -> None:
    """Choose "Files on disk", then type the sim path and the real path (Enter after each)."""
    at.radio(key=S.HOME_SOURCE).set_value(FILES).run()
    at.text_input(key=S.HOME_SIM_PATH).input(sim).run()
    no_exception(at)
    assert not at.multiselect  # one file alone is no dataset: the page stops before encoders
    at.text_input(key=S.HOME_REAL_PATH).input(real).run()
    no_exception(at)


def _warnings(at) -> str:
    return " ".join(w.value for w in at.warning)


# ----------------------------------------------------------------------------- selection
def test_the_encoder_selection_survives_opening_files_on_disk(home):
    """The server side of issue 16 item 6. What the browser showed (an empty box while the
    server still held the selection) only a browser sees: ``test_browser.py`` walks it."""
    at, sim, real = home
    at.multiselect(key=S.HOME_ENCODERS).set_value(["pixels"]).run()
    _open_files(at, sim, real)
    assert [m.value for m in at.metric][:2] == ["32", "32"]
    assert at.multiselect(key=S.HOME_ENCODERS).value == ["pixels"]
    assert any("0 of 1 selected encoders scored" in c.value for c in at.caption)
    (compute,) = [b for b in at.button if b.label == "Compute scores"]
    assert not compute.disabled


def test_the_state_reference_comes_back_with_a_dataset_that_has_state(home):
    at, sim, real = home
    at.multiselect(key=S.HOME_ENCODERS).set_value(["pixels", "state"]).run()
    _open_files(at, sim, real)
    assert at.multiselect(key=S.HOME_ENCODERS).value == ["pixels"]
    assert any("Robot state (reference) (state) left out" in i.value for i in at.info)
    at.radio(key=S.HOME_SOURCE).set_value(DEMO).run()
    no_exception(at)
    assert at.multiselect(key=S.HOME_ENCODERS).value == ["pixels", "state"]


def test_home_choices_survive_switching_source_and_pages(home):
    at, sim, real = home
    at.slider(key=S.home_option("demo", "gap")).set_value(0.25).run()
    at.number_input(key=S.home_option("demo", "seed")).set_value(7).run()
    _open_files(at, sim, real)
    at.radio(key=S.HOME_SOURCE).set_value(DEMO).run()
    no_exception(at)
    assert at.slider(key=S.home_option("demo", "gap")).value == 0.25
    assert at.number_input(key=S.home_option("demo", "seed")).value == 7
    assert W.spec_options(at.session_state[S.DATASET_SPEC])["gap"] == 0.25
    at.radio(key=S.HOME_SOURCE).set_value(FILES).run()
    assert at.text_input(key=S.HOME_SIM_PATH).value == sim
    assert at.text_input(key=S.HOME_REAL_PATH).value == real
    assert at.session_state[S.DATASET_SPEC] == [sim, real]
    at.switch_page(pages.SCORES.path).run()
    at.switch_page(pages.HOME.path).run()
    no_exception(at)
    assert at.radio(key=S.HOME_SOURCE).value == FILES
    assert at.text_input(key=S.HOME_REAL_PATH).value == real
    assert at.multiselect(key=S.HOME_ENCODERS).value == list(ENCODERS)


# ----------------------------------------------------------------------------- URL
def test_the_url_names_the_dataset_and_the_encoders(home):
    at, sim, real = home
    assert W.spec_options(at.query_params[L.Q_DATASET])["episodes"] == 4
    assert at.query_params[L.Q_ENCODERS] == ",".join(ENCODERS)
    at.multiselect(key=S.HOME_ENCODERS).set_value(["pixels"]).run()
    _open_files(at, sim, real)
    assert at.query_params[L.Q_DATASET] == [sim, real]
    assert at.query_params[L.Q_ENCODERS] == "pixels"


def test_a_reload_of_scores_after_computing_on_files_shows_the_scores(home):
    at, sim, real = home
    at.multiselect(key=S.HOME_ENCODERS).set_value(["pixels", "state"]).run()
    _open_files(at, sim, real)
    at.button[0].click().run()  # Compute scores
    no_exception(at)
    reload = open_app(pages.SCORES.path, query=at.query_params)  # a new session
    reload.run()
    no_exception(reload)
    assert not [i for i in reload.info if "Nothing computed yet" in i.value]
    table, = [d.value for d in reload.dataframe if "DIS" in d.value.columns]
    assert table["id"].tolist() == ["pixels"] and not reload.warning  # state: none here
    assert reload.session_state[S.DATASET_SPEC] == [sim, real]
    assert reload.query_params[L.Q_INSPECT] == "pixels"  # the inspector joins the URL


def test_a_link_opens_saliency_and_compare_on_the_inspected_encoder(computed, monkeypatch):
    cache_dir, _ = computed
    use_env(monkeypatch, cache_dir)
    link = {L.Q_DATASET: TINY, L.Q_ENCODERS: ",".join(ENCODERS), L.Q_INSPECT: ENCODERS[1]}
    # Saliency's random-sample count and seed have session defaults, so its URL says them.
    for page, key, defaults in ((pages.SALIENCY.path, S.SALIENCY_ENCODER,
                                 {"pairs": "3", "seed": "0"}),
                                (pages.COMPARE.path, S.COMPARE_ENCODER_A, {})):
        at = open_app(page, query=link)
        at.run()
        no_exception(at)
        assert at.selectbox(key=key).value == ENCODERS[1]  # not the first encoder
        assert dict(at.query_params) == {**link, **defaults}


@pytest.mark.parametrize("page", (None, pages.SCORES.path))
def test_bad_values_in_the_url_are_named_and_replaced_by_defaults(page, tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app(page, query={L.Q_DATASET: str(tmp_path / "no-such-folder"),
                               L.Q_ENCODERS: "pixels,resnet19", L.Q_INSPECT: "nope",
                               L.Q_PRECISION: "fp4"})
    at.run()
    no_exception(at)
    text = _warnings(at)
    assert "dataset cannot be opened here" in text and "no-such-folder" in text
    assert "unknown encoder 'resnet19'. Did you mean: resnet18" in text
    assert "unknown encoder 'nope'" in text and "precision='fp4'" in text
    assert W.spec_options(at.session_state[S.DATASET_SPEC])["episodes"] == 4
    assert at.session_state[S.ENCODERS_SELECTED] == ["pixels"]
    assert at.session_state[S.PRECISION] == "auto"
    assert at.query_params[L.Q_ENCODERS] == "pixels"  # the URL now says what is shown
    at.run()
    assert not at.warning  # said once, on the run that read the URL


def test_a_url_whose_dataset_does_not_load_opens_the_default(tmp_path, monkeypatch):
    sim, real = robomimic_pair(tmp_path)
    use_env(monkeypatch, tmp_path / "cache")
    at = open_app(pages.SCORES.path, query={L.Q_DATASET: [sim, real], "image_key": "nope"})
    at.run()
    no_exception(at)
    assert "dataset cannot be opened here" in _warnings(at) and "nope" in _warnings(at)
    assert W.spec_options(at.session_state[S.DATASET_SPEC])["episodes"] == 4
    assert not at.error  # the default dataset loads


def test_a_url_of_unknown_encoders_only_selects_the_defaults(tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app(query={L.Q_ENCODERS: "foo,bar"})
    at.run()
    no_exception(at)
    assert "Using the default encoders instead" in _warnings(at)
    assert at.multiselect(key=S.HOME_ENCODERS).value == list(ENCODERS)


def test_url_params_read_back_to_the_same_state(tmp_path, monkeypatch):
    monkeypatch.setenv("S2R_DATA_ROOTS", str(tmp_path))
    sim, real = robomimic_pair(tmp_path)
    state = {S.DATASET_SPEC: [sim, real], S.ENCODERS_SELECTED: ["pixels", "resnet18@random"],
             S.DATASET_KEYS: {"image_key": "agentview_image", "action_key": None,
                              "state_key": None},
             S.SELECTION_ENCODER: "pixels", S.PRECISION: "int8"}
    params = L.url_params(state)
    assert params[L.Q_DATASET] == [sim, real] and "action_key" not in params
    values, warnings = L.read_url({k: v if isinstance(v, list) else [v]
                                   for k, v in params.items()})
    assert warnings == [] and values == state


# ----------------------------------------------------------------------------- hostile links
# A link's dataset is opened only under S2R_DATA_ROOTS (default: the working folder and the
# home folder), only when it is a dataset, within a bounded time; the warning names only what
# the link says. Each case: the ``?dataset=`` values -> the words of the one warning.
def _hostile_links(tmp_path: Path) -> dict:
    inside = tmp_path / "allowed"
    inside.mkdir()
    (inside / "to_usr").symlink_to("/usr")
    (inside / "plain").mkdir()
    (inside / "plain" / "notes.txt").write_text("not a dataset")
    return {
        "a system folder": (["/usr"], ["'/usr' is outside the folders this app opens"]),
        "dot-dots out of the root": ([str(inside / ".." / ".." / "etc")],
                                     ["is outside the folders", "S2R_DATA_ROOTS"]),
        "a link inside the root to /usr": ([str(inside / "to_usr")], ["to_usr' is outside"]),
        "the root itself, not a dataset": ([str(inside)], ["is not a dataset folder"]),
        "a folder of notes": ([str(inside / "plain")], ["plain' is not a dataset folder"]),
        "two files outside": (["/etc/passwd", "/etc/hosts"], ["'/etc/passwd' is outside"]),
        "a demo lifting its limit": (["demo:episodes=2,large=true"],
                                     ["lifts the dataset's size limit (large=)", "a link may not"]),
        "a repeated demo option": (["demo:episodes=2,episodes=3"],
                                   ["option 'episodes' is given twice"]),
        "a demo of no episodes": (["demo:episodes=-5"], ["episodes must be >= 1, got -5"]),
        "a frame side the demo cannot draw": (["demo:height=5000"],
                                              ["height must be in [64, 4096], got 5000"]),
        "a number of 5,000 digits": (["demo:episodes=" + "9" * 5000],
                                     ["(5,014 characters) is longer than 4,096 characters"]),
        "a spec of a megabyte": (["demo:gap=0.5," + "x" * 1_000_000],
                                 ["(1,000,013 characters) is longer than 4,096"]),
    }


def test_hostile_links_are_refused_quickly_naming_only_what_they_say(tmp_path, monkeypatch):
    import os
    import time

    monkeypatch.setenv("S2R_DATA_ROOTS", str(tmp_path / "allowed"))
    for name, (parts, words) in _hostile_links(tmp_path).items():
        start = time.perf_counter()
        values, warnings = L.read_url({L.Q_DATASET: parts})
        took = time.perf_counter() - start
        assert values == {} and len(warnings) == 1, (name, warnings)
        assert "Showing the default dataset instead" in warnings[0], name
        for w in words:
            assert w in warnings[0], (name, w, warnings[0])
        rest = warnings[0]
        for part in parts:
            rest = rest.replace(repr(part), "")
        for server_path in (str(tmp_path), "/usr", "/etc", os.path.expanduser("~")):
            assert server_path not in rest, (name, server_path, warnings[0])
        assert took < 2.0, (name, took)  # no walk of what the link names
        assert len(warnings[0]) < 700, (name, len(warnings[0]))  # never the whole value


# ----------------------------------------------------------------------------- link limits
# A link's demo is bounded (issue 33 item 6): each option within its link range, at most
# LINK_WORLD_FRAMES frames and LINK_WORLD_PIXELS pixels. A link asking for more opens the most it
# may and one note names each option changed, asked -> used. Each case: the link's demo ->
# (the options it opens, the words of the note).
LINK_CLAMPS = {
    "4096 x 4096 frames (47 s and +3 GB before)": (
        "demo:episodes=2,steps=4,height=4096,width=4096",
        {"episodes": 2, "steps": 4, "height": 480, "width": 640},
        ["height=4096 \u2192 480", "width=4096 \u2192 640"]),
    "a thousand episodes (opened 2 before)": (
        "demo:episodes=1000,steps=24,height=128,width=160,gap=0.3,seed=7",
        {"episodes": 25, "steps": 24, "height": 128, "width": 160, "gap": 0.3, "seed": 7},
        ["episodes=1000 \u2192 25", "at most 1,200 frames"]),
    "a million of each": (
        "demo:episodes=1000000,steps=1000000",
        {"episodes": 4, "steps": 104, "height": 240, "width": 320},
        ["episodes=1000000 \u2192 4", "steps=1000000 \u2192 104", "64 million pixels"]),
    "the most of everything": (
        "demo:episodes=200,steps=400,height=480,width=640",
        {"episodes": 4, "steps": 26, "height": 480, "width": 640},
        ["episodes=200 \u2192 4", "steps=400 \u2192 26"]),
    "one episode, two steps": (
        "demo:episodes=1,steps=2,height=64,width=64",
        {"episodes": 2, "steps": 4, "height": 64, "width": 64},
        ["episodes=1 \u2192 2", "steps=2 \u2192 4", "episodes 2-200, steps 4-400"]),
    "a narrow frame": ("demo:height=64,width=4096", {"height": 64, "width": 640},
                       ["width=4096 \u2192 640", "frames up to 480x640"]),
}


def _budget_kept(options: dict) -> None:
    frames = 2 * options["episodes"] * options["steps"]
    assert frames <= L.LINK_WORLD_FRAMES, options
    assert frames * options["height"] * options["width"] <= L.LINK_WORLD_PIXELS, options
    for key, (low, high) in L.LINK_WORLD_RANGES.items():
        assert low <= options[key] <= high, (key, options)


@pytest.mark.parametrize("name", sorted(LINK_CLAMPS))
def test_a_link_asking_for_more_opens_the_most_it_may_and_says_so(name):
    link, expected, words = LINK_CLAMPS[name]
    values, warnings = L.read_url({L.Q_DATASET: [link]})
    opened = W.spec_options(values[S.DATASET_SPEC])
    assert {k: opened[k] for k in expected} == expected
    _budget_kept(opened)
    assert len(warnings) == 1 and "Showing that demo" in warnings[0], warnings
    for w in words:
        assert w in warnings[0], (w, warnings[0])


def test_every_link_world_is_within_the_budgets_and_every_change_is_named():
    """A grid of links, each option below, inside and above its range: what opens is always
    within the link's limits, a link within them opens unchanged and silently, and the note
    names every option changed (asked -> used) and no other."""
    import itertools

    sizes = [(64, 64), (128, 160), (240, 320), (480, 640), (64, 4096), (4096, 4096)]
    for episodes, steps, (height, width) in itertools.product(
            [1, 2, 4, 12, 25, 150, 200, 201, 10**6], [2, 4, 24, 104, 400, 401, 10**6], sizes):
        asked = {"episodes": episodes, "steps": steps, "height": height, "width": width}
        link = "demo:" + ",".join(f"{k}={v}" for k, v in asked.items())
        spec, note = L.link_world(link)
        opened = W.spec_options(spec)
        _budget_kept(opened)
        changed = {k for k in asked if opened[k] != asked[k]}
        assert (spec == link) == (note is None) == (not changed), (link, spec, note)
        for key in L.LINK_WORLD_RANGES:
            named = f"{key}={asked[key]} \u2192 {opened[key]}"
            assert (named in (note or "")) == (key in changed), (link, key, note)
            if key in changed and asked[key] >= L.LINK_WORLD_RANGES[key][0]:
                assert opened[key] < asked[key]  # only ever cut down, unless under its least


def test_the_default_roots_are_the_working_and_home_folders(monkeypatch):
    import os

    monkeypatch.delenv("S2R_DATA_ROOTS", raising=False)
    assert L.data_roots() == [os.path.realpath(os.getcwd()),
                              os.path.realpath(os.path.expanduser("~"))]
    monkeypatch.setenv("S2R_DATA_ROOTS", os.pathsep.join(["/data/a", "/data/b"]))
    assert L.data_roots() == ["/data/a", "/data/b"]


def test_a_link_to_a_dataset_under_the_roots_opens(tmp_path, monkeypatch):
    monkeypatch.setenv("S2R_DATA_ROOTS", str(tmp_path))
    sim, real = robomimic_pair(tmp_path)
    values, warnings = L.read_url({L.Q_DATASET: [sim, real]})
    assert warnings == [] and values[S.DATASET_SPEC] == [sim, real]


def test_the_app_opened_on_a_system_folder_shows_the_default_at_once(tmp_path, monkeypatch):
    import time

    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app(query={L.Q_DATASET: "/usr"})
    start = time.perf_counter()
    at.run()
    took = time.perf_counter() - start
    no_exception(at)
    text = _warnings(at)
    assert "'/usr' is outside the folders this app opens" in text and "/usr/" not in text
    assert W.spec_options(at.session_state[S.DATASET_SPEC])["episodes"] == 4
    assert took < 25, took  # the tiny demo loads; /usr is never walked (17 s before)


def test_the_app_opened_on_a_huge_demo_link_shows_what_a_link_may_open_and_says_so(
        tmp_path, monkeypatch):
    """The issue's link (``height=4096,width=4096`` cost 47 s and +3 GB before any click; 1,000
    episodes opened 2, neither the link nor the default): the home page opens the cut demo,
    its inputs show it, the note names each option, the URL says what is shown."""
    import time

    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    at = open_app(query={L.Q_DATASET: "demo:episodes=1000,steps=24,height=4096,width=4096,"
                                      "gap=0.3"})
    start = time.perf_counter()
    at.run()
    took = time.perf_counter() - start
    no_exception(at)
    [note] = [w.value for w in at.warning]
    for words in ("episodes=1000 \u2192 4", "height=4096 \u2192 480", "width=4096 \u2192 640"):
        assert words in note, note
    opened = W.spec_options(at.session_state[S.DATASET_SPEC])
    assert (opened["episodes"], opened["steps"], opened["height"], opened["width"],
            opened["gap"]) == (4, 24, 480, 640, 0.3)
    assert at.number_input(key=S.home_option("demo", "episodes")).value == 4
    assert at.number_input(key=S.home_option("demo", "steps")).value == 24
    assert at.selectbox(key=S.home_option("demo", "size")).value == "480x640"
    assert [m.value for m in at.metric][:2] == ["96", "96"]
    assert W.spec_options(at.query_params[L.Q_DATASET]) == opened
    assert took < 60, took  # 192 frames of 480x640
    at.run()
    assert not at.warning  # said once


# ----------------------------------------------------------------------------- settings
@pytest.mark.parametrize("page", (None, pages.SCORES.path))
@pytest.mark.parametrize("name, value, words", [
    ("S2R_CACHE_DIR", "", "S2R_CACHE_DIR is set but empty"),
    ("S2R_DEMO_SPEC", "demo:gap=0.5\ndemo", "S2R_DEMO_SPEC='demo:gap=0.5?demo' holds a control"),
    ("S2R_AUTOCOMPUTE", "perhaps", "S2R_AUTOCOMPUTE='perhaps' is not a switch"),
])
def test_a_bad_setting_is_one_error_on_the_page_not_a_traceback(page, name, value, words,
                                                                tmp_path, monkeypatch):
    use_env(monkeypatch, tmp_path / "cache")
    monkeypatch.setenv(name, value)
    at = open_app(page)
    at.run()
    no_exception(at)
    [error] = [e.value for e in at.error]
    assert "A setting of this server cannot be used" in error and words in error, error
    assert not (tmp_path / "cache").exists()


def test_a_cache_folder_of_a_users_files_is_refused_by_the_app_and_left_alone(
        tmp_path, monkeypatch):
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "chapter1.tex").write_text("mine")
    use_env(monkeypatch, folder)
    at = open_app()
    at.run()
    no_exception(at)
    [error] = [e.value for e in at.error]
    assert "The cache folder cannot be used" in error and "not an s2r cache folder" in error
    assert [p.name for p in folder.iterdir()] == ["chapter1.tex"]
    assert (folder / "chapter1.tex").read_text() == "mine"
