"""Hostile inputs, round 4 (the cases of the Meta-World, layers and live-view surfaces):
each gets one clear line, exit 2, nothing written, before any work.

So far: a world's built-in control on another world's dataset (or on a dataset of files) is
refused by every command that embeds, before it trains or draws anything; every count of
``validate`` has an upper bound (``s2r.closedloop.params.BOUNDS``, ``MAX_GAPS``), checked
before any work, with the bound in the message.
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


#: ``validate`` counts far past their bounds: (options, words of the one-line error).
UNBOUNDED = {
    "rollouts": (["--rollouts", "1000000000"], ["rollouts must be in [1, 1000]"]),
    "demos": (["--demos", "1000000000"], ["demos must be in [2, 1000]"]),
    "horizon": (["--horizon", "1000000000"], ["horizon must be in [1, 1000]"]),
    "demo steps": (["--demo-steps", "1000000000"], ["demo_steps must be in [1, 1000]"]),
    "control demos": (["--control-demos", "1000000000"], ["control_demos must be in [0, 10000]"]),
    "control members": (["--control-members", "1000"], ["control_members must be in [1, 32]"]),
    "memory": (["--memory", "1000000"], ["memory must be in [0, 1000]"]),
    "a 23-digit seed": (["--seed", "12345678901234567890123"],
                        ["seed must be in [0, 4294967295]"]),
    "1,000 gaps": (["--gaps", ",".join(f"{i / 1000:.3f}" for i in range(1000))],
                   ["--gaps: expected at most 21 numbers", "got 1,000 distinct gaps"]),
    "a gap list of a megabyte": (["--gaps", "0.5," * 300_000], ["--gaps", "characters"]),
}


@pytest.mark.parametrize("name", list(UNBOUNDED))
def test_every_validate_count_is_bounded_before_any_work(name, tmp_path, capsys, no_training,
                                                         monkeypatch):
    from s2r.closedloop import validation

    monkeypatch.setattr(validation, "encoder_rollouts",
                        lambda *a, **k: pytest.fail("rollouts began"))
    options, words = UNBOUNDED[name]
    out = tmp_path / "r.json"
    run_case(Case(["validate", TINY_DEMO, *options, "--out", str(out)], words, outputs=[out]),
             capsys, name, max_seconds=10)


def test_repeated_gaps_are_one_gap_and_the_library_bounds_them_too():
    from s2r.closedloop.params import MAX_GAPS
    from s2r.closedloop.validation import validate
    from s2r.commands.validate import parse_gaps
    from s2r.errors import MetricError

    assert parse_gaps(",".join(["0.5"] * 1000)) == [0.5]
    with pytest.raises(MetricError, match=f"1 to {MAX_GAPS} distinct gaps, got 22"):
        validate(TINY_DEMO, ["state", "pixels", "efficientnet-lite0"],
                 [i / 100 for i in range(22)], cache=False)
