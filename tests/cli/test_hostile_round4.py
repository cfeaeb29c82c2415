"""Hostile inputs, round 4 (the cases of the Meta-World, layers and live-view surfaces):
each gets one clear line, exit 2, nothing written, before any work.

So far: a world's built-in control on another world's dataset (or on a dataset of files) is
refused by every command that embeds, before it trains or draws anything.
"""

from __future__ import annotations

import dataclasses

import pytest

from s2r.errors import EncoderError
from tests.helpers.hostile import Case, run_case

TINY_DEMO = "demo:episodes=3,steps=8,height=64,width=80"
SMALL_VALIDATION = ["--gaps", "0,1", "--rollouts", "2", "--demos", "2"]


@pytest.fixture
def no_training(monkeypatch):
    """Training a control (minutes) fails the test: the refusal must come first."""
    def train(*args, **kwargs):
        raise AssertionError("a control began training")

    monkeypatch.setattr("s2r.encoders.backends.simcnn.train_control", train)


def _cases(root):
    out = root / "out"
    yield "score", Case(["score", TINY_DEMO, "--encoders", "mw-simcnn-dr0,pixels",
                         "--out", str(out.with_suffix(".json"))],
                        ["mw-simcnn-dr0", "Meta-World", "simcnn-dr0"],
                        outputs=[out.with_suffix(".json")])
    yield "embed", Case(["embed", TINY_DEMO, "--encoder", "mw-simcnn-dr1",
                         "--out", str(out.with_suffix(".npz"))],
                        ["mw-simcnn-dr1", "Meta-World", "Demo"],
                        outputs=[out.with_suffix(".npz")])
    yield "project", Case(["project", TINY_DEMO, "--encoder", "mw-simcnn-dr0",
                           "--out", str(out.with_suffix(".csv"))],
                          ["mw-simcnn-dr0", "Meta-World"], outputs=[out.with_suffix(".csv")])
    yield "validate", Case(["validate", TINY_DEMO, "--encoders",
                            "state,pixels,mw-simcnn-dr0", *SMALL_VALIDATION,
                            "--out", str(out.with_suffix(".report.json"))],
                           ["mw-simcnn-dr0", "Meta-World", "simcnn-dr0, simcnn-dr0.5"],
                           outputs=[out.with_suffix(".report.json")])


@pytest.mark.parametrize("command", ["score", "embed", "project", "validate"])
def test_a_control_of_another_world_is_refused_before_any_work(command, tmp_path, capsys,
                                                                no_training):
    case = dict(_cases(tmp_path))[command]
    line = run_case(case, capsys, command, max_seconds=20)
    assert "trained on its sim frames" in line


def test_a_demo_control_on_meta_world_and_on_files_names_its_world():
    from s2r.worlds import check_control_world

    with pytest.raises(EncoderError, match=r"simcnn-dr0\.5 is a control of the Demo .*"
                                           r"mw-simcnn-dr0, mw-simcnn-dr1"):
        check_control_world("simcnn-dr0.5", "metaworld", "this Meta-World (MuJoCo) dataset")
    with pytest.raises(EncoderError, match="s2r train-encoder"):
        check_control_world("mw-simcnn-dr1", None, "the dataset 'my_robot'")
    check_control_world("simcnn-dr1", "demo", "this demo dataset")          # its own world
    check_control_world("efficientnet-lite0", "metaworld", "anything")      # not a control


def test_embed_frameset_refuses_before_building_and_a_random_variant_passes(monkeypatch):
    from s2r.datasets import load_dataset
    from s2r.embed import embed_frameset
    from s2r.embed.resolve import check_world_of
    from s2r.encoders import get_spec

    monkeypatch.setattr("s2r.embed.cached.build", lambda *a, **k: pytest.fail("built"))
    demo = load_dataset(TINY_DEMO)
    files = dataclasses.replace(demo, source={"kind": "folder"}, name="my_robot")
    for frameset, words in ((demo, "Demo"), (files, "'my_robot'")):
        with pytest.raises(EncoderError, match=words):
            embed_frameset(frameset, "mw-simcnn-dr0", cache=False)
    check_world_of(get_spec("mw-simcnn-dr0@random"), demo)   # never trained: embeds anything
    check_world_of(get_spec("simcnn-dr0"), demo)
