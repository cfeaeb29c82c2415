"""Links that cost minutes: what a Validation page link may ask for is bounded by what it
costs in its world, repeated values count once, and the page says what it changed.

A link with ``gaps=0.5`` a thousand times, or ``rollouts=500`` on Meta-World (whose frames
cost ~10x a demo frame to draw: :func:`s2r.worlds.frame_cost`), renders in seconds with one
``st.info`` line naming each change, and draws no world frame while nothing is cached.
"""

from __future__ import annotations

import time

import pytest

from tests.ui.apptest import no_exception, open_app, use_env
from ui import links as L
from ui import page_url
from ui import pages
from ui import state as S
from ui import world_specs as W

PAGE = pages.VALIDATION.path
TINY = "demo:episodes=3,steps=6,height=64,width=64"
GAPS_1000 = ",".join(["0.5"] * 1000)


def _open(monkeypatch, tmp_path, query: dict):
    use_env(monkeypatch, tmp_path / "c")
    monkeypatch.setenv("S2R_DEMO_SPEC", TINY)
    monkeypatch.setenv("S2R_AUTOCOMPUTE", "0")
    return open_app(PAGE, query=query)


def _infos(at) -> str:
    return " ".join(i.value for i in at.info)


def _no_frames_drawn(monkeypatch):
    """Drawing a world's dataset fails the test (the page only reads while nothing is cached)."""
    from s2r.worlds import WORLDS

    for world in WORLDS.values():
        monkeypatch.setattr(type(world), "dataset",
                            lambda *a, **k: pytest.fail("a world's frames were drawn"))


def test_a_thousand_repeated_gaps_are_kept_once_and_said(tmp_path, monkeypatch):
    at = _open(monkeypatch, tmp_path, {"gaps": GAPS_1000, "ids": "state,pixels,resnet18@random"})
    _no_frames_drawn(monkeypatch)
    start = time.perf_counter()
    at.run()
    took = time.perf_counter() - start
    no_exception(at)
    assert at.session_state[S.VALIDATION_GAPS] == [0.5]
    assert "gaps: 1,000 values given, 1 distinct kept" in _infos(at)
    assert sum("values given" in i.value for i in at.info) == 1
    assert any(b.label == "Run validation" for b in at.button)   # nothing run
    assert not list((tmp_path / "c").rglob("*.npy"))
    assert took < 30, f"the page took {took:.1f} s"


@pytest.mark.parametrize("world, words", [
    ("metaworld", "rollouts clamped from 500 to 20 for Meta-World (MuJoCo) (each rollout "
                  "step or frame draws ~10x a demo frame)"),
    ("demo", "rollouts clamped from 500 to 200 (the page takes 5-200)"),
])
def test_a_link_asking_many_rollouts_is_clamped_per_world(world, words, tmp_path, monkeypatch):
    if W.unavailable(world):
        pytest.skip(W.unavailable(world))
    at = _open(monkeypatch, tmp_path, {"world": world, "rollouts": "500", "demos": "1000"})
    _no_frames_drawn(monkeypatch)
    start = time.perf_counter()
    at.run()
    took = time.perf_counter() - start
    no_exception(at)
    assert at.session_state[S.VALIDATION_WORLD] == world
    assert words in _infos(at), _infos(at)
    assert at.session_state[S.VALIDATION_ROLLOUTS] == (20 if world == "metaworld" else 200)
    assert at.session_state[S.VALIDATION_DEMOS] == (60 if world == "metaworld" else 500)
    assert not at.warning, [w.value for w in at.warning]
    assert took < 30, f"the page took {took:.1f} s"


def test_a_count_past_the_closed_loops_bounds_is_refused_and_the_default_kept(tmp_path,
                                                                             monkeypatch):
    at = _open(monkeypatch, tmp_path, {"rollouts": "1001"})
    at.run()
    no_exception(at)
    assert "rollouts='1001' is not one of a whole number from 1 to 1000" in \
        " ".join(w.value for w in at.warning)
    assert at.session_state[S.VALIDATION_ROLLOUTS] == 20


def test_link_counts_and_repeats_are_pure_rules():
    assert page_url.distinct_texts("ids", ["a", "b", "a"]) == (
        ["a", "b"], "ids: 3 values given, 2 distinct kept")
    assert page_url.distinct_texts("ids", ["a", "b"]) == (["a", "b"], None)
    assert W.link_count("demo", "rollouts", 40, 5, 200, 20) == (40, None)
    assert W.link_count("demo", "rollouts", 2, 5, 200, 20)[0] == 5
    assert W.link_count("metaworld", "demos", 400, 10, 500, 60)[0] == 60   # never under default


def test_a_meta_world_dataset_link_gets_a_tenth_of_the_demos_frames():
    assert L.link_budget("demo") == (L.LINK_WORLD_FRAMES, L.LINK_WORLD_PIXELS)
    frames, _ = L.link_budget("metaworld")
    assert frames == 480                      # the dashboard's own Meta-World dataset: kept
    opened, note = L.link_world("metaworld:episodes=200,steps=100")
    options = W.spec_options(opened)
    assert 2 * options["episodes"] * options["steps"] <= frames
    assert "each Meta-World (MuJoCo) frame costs ~10x a demo frame to draw" in note
    assert L.link_world(W.world_spec("metaworld"))[1] is None
