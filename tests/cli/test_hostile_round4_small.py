"""Hostile inputs, round 4 (smaller things accepted without a word): each gets one clear line,
exit 2, nothing written, before any work.

An encoder wildcard that selects encoders whose weights are not here is refused (a pattern
never starts downloads); numbers are read in ASCII digits only (``6_4``, ``'٦٤'``, ``'６４'``
are not 64); a ``large=true`` world dataset has a ceiling; ``--layers ''``, ``score --merge
--layers``, ``validate --layer-score`` without ``--layers best`` and a demonstration or
horizon past the task's episode are refused; a ``PYOPENGL_PLATFORM`` that MuJoCo would refuse
beside ``MUJOCO_GL`` is one line before MuJoCo is imported; so is a current folder that no
longer exists.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from s2r.errors import S2RError
from tests.helpers.downloads import refuse_downloads
from tests.helpers.hostile import Case, assert_clean_failure, run_case

TINY_DEMO = "demo:episodes=3,steps=8,height=64,width=80"
SMALL_VALIDATION = ["--gaps", "0,1", "--rollouts", "2", "--demos", "2"]
ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ weights a pattern selects
@pytest.fixture
def no_weights(tmp_path, monkeypatch):
    """No weights here (an empty weights folder and hub cache), downloads on, a hub that would
    answer, and every way of downloading recorded and refused. Yields the record."""
    yield refuse_downloads(tmp_path, monkeypatch)


def _weights_cases(out):
    json_out, pdf = out.with_suffix(".json"), out.with_suffix(".pdf")
    every = ["are not here", " more ('*' selected", "python -m s2r weights fetch ID",
             "ID@random", "python -m s2r encoders"]
    yield "score *", Case(["score", TINY_DEMO, "--encoders", "*", "--out", str(json_out)],
                          every, outputs=[json_out])
    yield "score r3m-*", Case(
        ["score", TINY_DEMO, "--encoders", "pixels,r3m-*", "--out", str(json_out)],
        ["3 encoder(s)", "r3m-resnet18, r3m-resnet34, r3m-resnet50", "'r3m-*' selected 3",
         "`python -m s2r weights fetch r3m-resnet18 r3m-resnet34 r3m-resnet50`"],
        outputs=[json_out])
    yield "validate *", Case(["validate", TINY_DEMO, "--encoders", "*", *SMALL_VALIDATION,
                              "--out", str(json_out)], every, outputs=[json_out])
    yield "figure scores *", Case(["figure", "scores", TINY_DEMO, "--encoders", "*",
                                   "--out", str(pdf)], every, outputs=[pdf])
    yield "score [a-z]*", Case(["score", TINY_DEMO, "--encoders", "[a-z]*",
                                "--out", str(json_out)], ["'[a-z]*' selected"],
                               outputs=[json_out])
    # a research checkpoint is never downloaded on use: naming it is refused before any work
    yield "score vip", Case(["score", TINY_DEMO, "--encoders", "pixels,vip",
                             "--out", str(json_out)],
                            ["1 encoder(s) are not here: vip;", "weights fetch vip`"],
                            outputs=[json_out])
    # downloads off: a hub entry named is refused too
    yield "score resnet18 offline", Case(
        ["score", TINY_DEMO, "--encoders", "pixels,resnet18", "--out", str(json_out)],
        ["not here: resnet18;"], outputs=[json_out], env={"S2R_OFFLINE": "1"})


@pytest.mark.parametrize("name", [n for n, _ in _weights_cases(Path("x"))])
def test_a_pattern_selecting_missing_weights_is_refused_before_any_download(
        name, tmp_path, capsys, no_weights, monkeypatch):
    monkeypatch.setattr("s2r.datasets.load_dataset", lambda *a, **k: pytest.fail("loaded"))
    case = dict(_weights_cases(tmp_path / "out"))[name]
    run_case(case, capsys, name, max_seconds=20)
    assert no_weights == []


def test_ready_encoders_pass_and_a_named_hub_entry_is_left_to_download(no_weights):
    from s2r.commands.score import expand_encoder_ids
    from s2r.settings import current

    settings = current()
    ids = expand_encoder_ids("*@random", settings)          # random init: never weights
    assert "resnet18@random" in ids and len(ids) > 20
    assert expand_encoder_ids("pixels,state,efficientnet-lite0,mw-simcnn-*", settings)[:3] == \
        ["pixels", "state", "efficientnet-lite0"]             # packaged, trained on use
    assert expand_encoder_ids("pixels,resnet18", settings) == ["pixels", "resnet18"]
    with pytest.raises(S2RError, match=r"not here: resnet34, .*\('resnet\*' selected") as exc:
        expand_encoder_ids("resnet18,resnet*", settings)    # named: left to download
    assert "resnet18," not in str(exc.value)
    assert no_weights == []


# --------------------------------------------------------------------- numbers in ASCII only
NOT_INTEGERS = ["6_4", "٦٤", "６４", "+64", " 64", "64 ", "64.0", "⁶⁴", "6\u200b4", "0x40",
                "1e2", "", "-", "6" * 1001]
NOT_NUMBERS = ["0_5", "٠.٥", "０.５", "+0.5", " 0.5", "inf", "nan", "-inf", "1e999", ".", "1e",
               "0.5f", "½"]


@pytest.mark.parametrize("text", NOT_INTEGERS)
def test_an_integer_is_ascii_digits(text):
    from s2r.inputs import is_integer_text, parse_integer

    assert not is_integer_text(text)
    with pytest.raises(ValueError, match="digits 0-9"):
        parse_integer(text)


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_a_number_is_ascii(text):
    from s2r.inputs import parse_decimal

    with pytest.raises(ValueError, match="digits 0-9"):
        parse_decimal(text)


def test_ascii_numbers_still_read():
    from s2r.inputs import parse_decimal, parse_integer

    assert [parse_integer(t) for t in ("64", "-3", "007")] == [64, -3, 7]
    assert [parse_decimal(t) for t in ("0.5", ".5", "5.", "-1e-3", "2E3", "1")] == \
        [0.5, 0.5, 5.0, -0.001, 2000.0, 1.0]


SPEC_NUMBERS = {
    "underscore": ("demo:height=6_4", ["height='6_4'", "an integer written with the digits"]),
    "arabic-indic": ("demo:height=٦٤", ["height='٦٤'", "digits 0-9"]),
    "full-width": ("demo:episodes=３", ["episodes='３'", "digits 0-9"]),
    "superscript": ("demo:episodes=³", ["episodes='³'", "digits 0-9"]),
    "plus": ("demo:episodes=+3", ["episodes='+3'", "digits 0-9"]),
    "a float for an int": ("demo:episodes=3.0", ["episodes='3.0'", "an integer"]),
    "float underscore": ("demo:gap=0_5", ["gap='0_5'", "a number written with the digits"]),
    "float arabic-indic": ("demo:gap=٠.٥", ["gap='٠.٥'", "digits 0-9"]),
    "float overflow": ("demo:gap=1e999", ["gap='1e999'", "digits 0-9"]),
    "seed underscore": ("demo:seed=1_000", ["seed='1_000'", "digits 0-9"]),
}


@pytest.mark.parametrize("name", list(SPEC_NUMBERS))
def test_a_spec_number_in_other_digits_is_refused(name, capsys):
    from s2r.datasets.world import parse_world

    spec, words = SPEC_NUMBERS[name]
    run_case(Case(["info", spec], words), capsys, name, max_seconds=10)
    with pytest.raises(S2RError, match="digits 0-9"):
        parse_world(spec)
    assert parse_world("demo: height = 64 , gap = .5")["options"]["height"] == 64   # spaces


def test_a_meta_world_spec_number_in_other_digits_is_refused():
    from s2r.datasets.world import parse_world
    from s2r.worlds import WORLDS

    if WORLDS["metaworld"].unavailable():
        pytest.skip(WORLDS["metaworld"].unavailable())
    for spec in ("metaworld:steps=4_0", "metaworld:episodes=٤", "metaworld:gap=０.５"):
        with pytest.raises(S2RError, match=f"{spec.partition(':')[2].split('=')[0]}=.*digits"):
            parse_world(spec)


#: Number options of the commands, in other digits: (argv, the option argparse names).
OPTION_NUMBERS = {
    "validate --rollouts 6_4": (["validate", TINY_DEMO, "--rollouts", "6_4", "--out", "r.json"],
                                "--rollouts", "'6_4'"),
    "validate --demo-steps ٢٤": (["validate", TINY_DEMO, "--demo-steps", "٢٤", "--out",
                                  "r.json"], "--demo-steps", "'٢٤'"),
    "score --seed ６": (["score", TINY_DEMO, "--encoders", "pixels", "--seed", "６", "--out",
                        "s.json"], "--seed", "'６'"),
    "score --n-boot ' 10'": (["score", TINY_DEMO, "--encoders", "pixels", "--n-boot", " 10",
                              "--out", "s.json"], "--n-boot", "' 10'"),
    "score --ci 0_9": (["score", TINY_DEMO, "--encoders", "pixels", "--ci", "0_9", "--out",
                        "s.json"], "--ci", "'0_9'"),
    "score --ridge-alpha ١": (["score", TINY_DEMO, "--encoders", "pixels", "--ridge-alpha",
                               "١", "--out", "s.json"], "--ridge-alpha", "'١'"),
    "demo --episodes +3": (["demo", "--episodes", "+3", "--out", "d"], "--episodes", "'+3'"),
    "project --perplexity 3_0": (["project", TINY_DEMO, "--encoder", "pixels", "--perplexity",
                                  "3_0", "--out", "p.csv"], "--perplexity", "'3_0'"),
    "embed --batch-size 8.0": (["embed", TINY_DEMO, "--encoder", "pixels", "--batch-size",
                                "8.0", "--out", "e.npz"], "--batch-size", "'8.0'"),
    "figure --frame ³": (["figure", "compare", TINY_DEMO, "--encoders", "pixels,state",
                          "--frame", "³", "--out", "c.pdf"], "--frame", "'³'"),
    "train-encoder --epochs 1_0": (["train-encoder", TINY_DEMO, "--augment", "0.5", "--out",
                                    "x", "--epochs", "1_0"], "--epochs", "'1_0'"),
}


@pytest.mark.parametrize("name", list(OPTION_NUMBERS))
def test_a_number_option_in_other_digits_is_a_usage_error(name, capsys, tmp_path,
                                                          monkeypatch):
    from s2r.cli import main

    monkeypatch.chdir(tmp_path)
    argv, flag, shown = OPTION_NUMBERS[name]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"argument {flag}" in last and shown in last and "digits 0-9" in last, last
    assert list(tmp_path.iterdir()) == []


TEXT_NUMBERS = {
    "--gaps 0_5": (["validate", TINY_DEMO, "--gaps", "0,0_5", "--out", "r.json"],
                   ["--gaps: expected", "'0,0_5'"]),
    "--gaps ٠.٥": (["validate", TINY_DEMO, "--gaps", "0,٠.٥", "--out", "r.json"],
                   ["--gaps: expected", "'0,٠.٥'"]),
    "--frames ٣": (["saliency", TINY_DEMO, "--encoder", "pixels", "--frames", "0,٣",
                    "--out", "sal"], ["--frames must be", "'0,٣'"]),
    "--augment 0_5": (["train-encoder", TINY_DEMO, "--augment", "0_5", "--out", "x"],
                      ["--augment: expected a strength in [0, 1]", "'0_5'"]),
}


@pytest.mark.parametrize("name", list(TEXT_NUMBERS))
def test_a_number_list_in_other_digits_is_refused(name, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv, words = TEXT_NUMBERS[name]
    run_case(Case(argv, words), capsys, name, max_seconds=20)
    assert [p.name for p in tmp_path.iterdir() if p.name != "cache"] == []


def test_settings_and_seeds_in_other_digits_are_one_line(monkeypatch):
    from s2r.errors import MetricError
    from s2r.metrics.params import parse_null
    from s2r.settings import SettingsError, current

    for text in ("²", "٤", "4_0", "+4"):       # '²'.isdigit() is True and int('²') fails
        monkeypatch.setenv("S2R_THREADS", text)
        with pytest.raises(SettingsError, match="S2R_THREADS"):
            current()
    for text in ("shuffle:٣", "shuffle:1_0", "shuffle:²", "shuffle:-1"):
        with pytest.raises(MetricError, match="shuffle:SEED"):
            parse_null(text)
    assert parse_null("shuffle:12") == 12


# ----------------------------------------------------------------------- large=true's ceiling
def test_large_datasets_have_a_ceiling_nothing_lifts(capsys, tmp_path):
    from s2r.datasets.world import MAX_LARGE_FRAMES, parse_world

    words = ["over the ceiling of 1,000,000 frames and 40 GiB", "large=true does not lift"]
    for spec in ("demo:episodes=100000000,large=true",
                 "demo:episodes=1000,steps=64,height=512,width=512,large=true"):   # 94 GiB
        run_case(Case(["info", spec], words), capsys, spec, max_seconds=10)
    out = tmp_path / "d"
    run_case(Case(["demo", "--episodes", "100000000", "--large", "--out", str(out)], words,
                  outputs=[out]), capsys, "demo --large", max_seconds=10)
    # the limit's message says how far large=true goes; under the ceiling it parses
    run_case(Case(["info", "demo:episodes=1000,steps=64"],
                  ["add large=true", "up to 1,000,000 frames and 40 GiB"]), capsys, "limit")
    half = MAX_LARGE_FRAMES // 2 // 100
    assert parse_world(f"demo:episodes={half},steps=100,height=64,width=64,large=true")


def test_a_large_meta_world_dataset_has_the_ceiling_too():
    from s2r.datasets.world import parse_world
    from s2r.worlds import WORLDS

    if WORLDS["metaworld"].unavailable():
        pytest.skip(WORLDS["metaworld"].unavailable())
    with pytest.raises(S2RError, match="over the ceiling of 1,000,000 frames"):
        parse_world("metaworld:episodes=100000000,large=true")


# -------------------------------------------------------------------------------- --layers
@pytest.mark.parametrize("value", ["", " ", ",", " , ,"])
def test_an_empty_layers_is_refused_not_read_as_last(value, capsys, tmp_path):
    out = tmp_path / "s.json"
    for argv in (["score", TINY_DEMO, "--encoders", "pixels", "--layers", value],
                 ["figure", "layers", TINY_DEMO, "--encoders", "pixels", "--layers", value]):
        target = out if argv[0] == "score" else out.with_suffix(".svg")
        run_case(Case([*argv, "--out", str(target)],
                      ["--layers: expected 'all', 'last' or layer names", repr(value)],
                      outputs=[target]), capsys, f"{argv[0]} --layers {value!r}")


@pytest.mark.parametrize("extra, words", [
    (["--layers", "all"], ["--merge", "--layers cannot apply"]),
    (["--layers", "last"], ["--merge", "--layers cannot apply"]),
    (["--layer-score", "dis"], ["--merge", "--layer-score cannot apply"]),
    (["--layers", "all", "--layer-score", "dis"], ["--layers and --layer-score cannot apply"]),
])
def test_merge_refuses_layers_it_would_ignore(extra, words, capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for p in (a, b):
        p.write_text("[]")
    out = tmp_path / "all.csv"
    run_case(Case(["score", "--merge", str(a), str(b), *extra, "--out", str(out)], words,
                  outputs=[out], kept=[a, b]), capsys, " ".join(extra))


@pytest.fixture
def no_work(monkeypatch):
    """Training a control, drawing a dataset or a rollout fails the test."""
    from s2r.closedloop import validation

    monkeypatch.setattr("s2r.encoders.backends.simcnn.train_control",
                        lambda *a, **k: pytest.fail("a control began training"))
    monkeypatch.setattr(validation, "encoder_rollouts", lambda *a, **k: pytest.fail("rollouts"))
    monkeypatch.setattr(validation, "validate", lambda *a, **k: pytest.fail("validation ran"))


@pytest.mark.parametrize("extra", [[], ["--layers", "last"], ["--real-results", "r.csv"]])
def test_validate_layer_score_without_layers_best_is_refused(extra, capsys, tmp_path, no_work):
    out = tmp_path / "r.json"
    run_case(Case(["validate", TINY_DEMO, "--encoders", "state,pixels,efficientnet-lite0",
                   *SMALL_VALIDATION, "--layer-score", "dis", *extra, "--out", str(out)],
                  ["--layer-score 'dis'", "--layers best"], outputs=[out]),
             capsys, " ".join(extra), max_seconds=10)


# ------------------------------------------------------------- steps past the task's episode
def test_demo_steps_and_horizon_past_a_meta_world_episode_are_refused():
    from s2r.closedloop.params import RolloutParams
    from s2r.errors import MetricError
    from s2r.worlds.demo.world import DemoTask
    from s2r.worlds.metaworld.world import MetaWorldTask

    task = MetaWorldTask(repeat=2)
    assert task.max_steps == 250
    with pytest.raises(MetricError, match=r"demo_steps must be in \[1, 250\] on this task.*"
                                          r"got 251"):
        RolloutParams(demo_steps=251).for_task(task)
    with pytest.raises(MetricError, match=r"horizon must be in \[1, 50\].*got 51"):
        RolloutParams(horizon=51).for_task(MetaWorldTask(repeat=10))
    assert RolloutParams(demo_steps=250, horizon=250).for_task(task).demo_steps == 250
    assert RolloutParams(demo_steps=1000).for_task(DemoTask()).demo_steps == 1000  # no end


def test_validate_refuses_demo_steps_past_the_episode_before_any_work(capsys, tmp_path,
                                                                      monkeypatch):
    from s2r.closedloop import validation
    from s2r.worlds import WORLDS

    if WORLDS["metaworld"].unavailable():
        pytest.skip(WORLDS["metaworld"].unavailable())
    monkeypatch.setattr("s2r.encoders.backends.simcnn.train_control",
                        lambda *a, **k: pytest.fail("a control began training"))
    monkeypatch.setattr(validation, "encoder_rollouts", lambda *a, **k: pytest.fail("rollouts"))
    monkeypatch.setattr(WORLDS["metaworld"], "dataset", lambda *a, **k: pytest.fail("drawn"))
    out = tmp_path / "r.json"
    for option, value, limit in (("--demo-steps", "400", 250), ("--horizon", "101", 100)):
        spec = "metaworld:episodes=2,steps=8" + (",repeat=5" if option == "--horizon" else "")
        run_case(Case(["validate", spec, "--encoders", "state,pixels,efficientnet-lite0",
                       *SMALL_VALIDATION, option, value, "--out", str(out)],
                      [f"must be in [1, {limit}] on this task", f"got {value}"],
                      outputs=[out]), capsys, option, max_seconds=20)


# ------------------------------------------------------------------------ PYOPENGL_PLATFORM
def test_a_conflicting_pyopengl_platform_is_named():
    from s2r.worlds.metaworld.availability import platform_conflict

    with pytest.MonkeyPatch.context() as mp:
        for name in ("mujoco.egl", "mujoco.osmesa"):      # not yet imported in a new process
            mp.delitem(sys.modules, name, raising=False)
        for platform, backend in (("osmesa", "egl"), ("glx", "egl"), ("egl", "osmesa"),
                                  ("x11", "osmesa")):
            mp.setenv("PYOPENGL_PLATFORM", platform)
            line = platform_conflict(backend)
            assert f"MUJOCO_GL={backend}" in line and repr(platform) in line
            assert f"unset PYOPENGL_PLATFORM or set it to {backend}" in line
        for platform, backend in (("egl", "egl"), ("EGL", "egl"), ("", "egl"),
                                  ("osmesa", "osmesa"), ("osmesa", "glfw")):
            mp.setenv("PYOPENGL_PLATFORM", platform)
            assert platform_conflict(backend) is None, (platform, backend)


@pytest.mark.parametrize("platform", ["osmesa", "glx"])
def test_a_meta_world_dataset_beside_a_conflicting_platform_is_one_line(platform, capsys,
                                                                        monkeypatch):
    from s2r.worlds.metaworld import availability

    if not all(availability._package(name) for name in availability.PACKAGES):
        pytest.skip("Meta-World is not installed")
    for name in ("mujoco.egl", "mujoco.osmesa"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(availability, "_library", lambda name: True)   # any machine's EGL
    monkeypatch.setattr("s2r.worlds.metaworld.world.MetaWorldWorld.dataset",
                        lambda *a, **k: pytest.fail("MuJoCo was reached"))
    run_case(Case(["info", "metaworld:episodes=2,steps=8"],
                  ["PYOPENGL_PLATFORM is set to", repr(platform), "MUJOCO_GL=egl",
                   "unset PYOPENGL_PLATFORM or set it to egl"],
                  env={"MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": platform}), capsys, platform)


# --------------------------------------------------------------------- a deleted current folder
def test_a_deleted_current_folder_is_one_line(tmp_path):
    """The shell stays in a folder that is then deleted: one line, not oneMKL's fatal error."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = f'mkdir d && cd d && rmdir ../d && exec "{sys.executable}" -m s2r info demo'
    done = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert_clean_failure(done.returncode, done.stdout, done.stderr,
                         ["the current folder no longer exists", "cd to an existing folder"])
    assert "MKL" not in done.stderr


def test_a_deleted_current_folder_is_checked_before_parsing(monkeypatch, capsys):
    from s2r import cli

    def gone():
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(cli, "build_parser", lambda: pytest.fail("parsed"))
    monkeypatch.setattr(os, "getcwd", gone)
    assert cli.main(["info", "demo"]) == 2
    out, err = capsys.readouterr()
    assert_clean_failure(2, out, err, ["the current folder no longer exists"])
