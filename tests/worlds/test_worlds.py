"""The worlds registry and protocol (s2r.worlds): the demo is registered; an unknown name is one
line; every world keeps the protocol; and a new world is one package plus one registry line --
a toy world written against the protocol alone (tests/worlds/toy.py) is a dataset spec, a
closed-loop task, a validation and a control's training data without any other edit, and its
rollouts never share a cache key with the demo's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from s2r.errors import DataError
from s2r.settings import current
from s2r.worlds import WORLDS, control, controls
from s2r.worlds.base import LOOKS, World
from tests.helpers.simcnn_files import training_frames
from tests.worlds.toy import TOY, ToyTask, expert

WORLD_METHODS = ("check_options", "unavailable", "dataset", "task")
TASK_METHODS = ("identity", "describe", "demonstrations", "state_demonstrations", "rollouts",
                "render_state", "randomised_frames", "memory")
#: The options every world has (the dataset adapter bounds sizes from them).
COMMON_OPTIONS = {"episodes", "steps", "gap", "seed", "height", "width"}


@pytest.fixture
def toy(monkeypatch):
    """The toy world, registered as a world's package would be (one line in WORLDS). The
    built-in registry's views of the controls are read first, so the toy's never join them
    for the rest of the session."""
    import s2r.encoders.simcnn_specs  # noqa: F401

    monkeypatch.setitem(WORLDS._worlds, TOY.name, TOY)
    return TOY


def test_the_worlds_are_registered_and_an_unknown_name_is_one_line():
    assert list(WORLDS) == ["demo", "metaworld"] and WORLDS["demo"].name == "demo"
    assert WORLDS["metaworld"].name == "metaworld"
    assert "demo" in WORLDS and "dmeo" not in WORLDS and 3 not in WORLDS
    with pytest.raises(DataError) as err:
        WORLDS["dmeo"]
    assert str(err.value) == ("unknown world 'dmeo'; did you mean demo? the worlds are: demo, "
                              "metaworld")
    with pytest.raises(DataError, match="unknown world 'zzz'; the worlds are: demo, metaworld"):
        WORLDS["zzz"]


@pytest.mark.parametrize("name", list(WORLDS))
def test_every_world_keeps_the_protocol(name):
    world: World = WORLDS[name]
    assert all(callable(getattr(world, m)) for m in WORLD_METHODS)
    assert COMMON_OPTIONS <= set(world.options) and world.unavailable() is None
    assert world.check_options(world.options.defaults()).keys() >= COMMON_OPTIONS
    task = world.task(world.options.defaults())
    assert all(callable(getattr(task, m)) for m in TASK_METHODS)
    assert task.world == name and task.horizon >= 1 and task.demo_steps >= 1 and task.stages
    cols = task.columns
    assert set(cols.proprio).isdisjoint(cols.task)
    assert max(*cols.proprio, *cols.task) < len(cols.state_names)
    assert set(task.describe()) == {"task", "proprioception"}
    assert len(task.identity()) >= 8 and task.identity() == world.task({}).identity()
    for cid, c in world.controls.items():
        assert c.id == cid and 0 <= c.strength <= 1 and control(cid) == (world, c)
    assert LOOKS == ("sim", "real")


def test_controls_are_listed_by_id_across_worlds_and_validated_by_default_in_theirs(toy):
    from s2r.closedloop.validation import BASE_ENCODERS, default_encoders

    assert set(controls()) == {"simcnn-dr0", "simcnn-dr0.5", "simcnn-dr1", "mw-simcnn-dr0",
                               "mw-simcnn-dr0.25", "mw-simcnn-dr0.5", "mw-simcnn-dr0.75",
                               "mw-simcnn-dr1", "toy-simcnn-dr1"}
    assert control("toy-simcnn-dr1")[0] is toy
    with pytest.raises(KeyError):
        control("simcnn-dr2")
    assert default_encoders(toy) == (*BASE_ENCODERS, "toy-simcnn-dr1")
    assert default_encoders(WORLDS["demo"]) == (
        *BASE_ENCODERS, "simcnn-dr0", "simcnn-dr0.5", "simcnn-dr1")
    assert default_encoders(WORLDS["metaworld"]) == (*BASE_ENCODERS, "mw-simcnn-dr0",
                                                     "mw-simcnn-dr1")   # not the study's


@pytest.mark.parametrize("world, images", [("metaworld", 19), ("demo", 17)])
def test_the_study_set_has_16_image_encoders_or_more_each_labelled(world, images):
    """study_encoders: state + >= 16 image encoders, each resolving, each of a known kind,
    none whose weights are missing but the controls trained on first use."""
    from s2r.closedloop.validation import default_encoders, study_encoders
    from s2r.encoders import get_spec, status
    from s2r.encoders.labels import KINDS, encoder_kind
    from s2r.settings import current

    ids = study_encoders(WORLDS[world])
    assert len(ids) == len(set(ids)) and set(default_encoders(WORLDS[world])) <= set(ids)
    kinds = {i: encoder_kind(i) for i in ids}
    assert set(kinds.values()) == set(KINDS)
    assert [i for i, k in kinds.items() if k == "reference"] == ["state"]
    assert sum(k != "reference" for k in kinds.values()) == images >= 16
    assert sum(k == "layer tap" for k in kinds.values()) >= 4
    assert set(WORLDS[world].controls) == {i for i, k in kinds.items() if k == "control"}
    for i in ids:
        spec = get_spec(i)
        state = status(spec, settings=current()).state
        assert state in ("ready", "random") or (
            i in WORLDS[world].controls and spec.backend == "simcnn"), (i, state)


def test_the_demo_worlds_real_look_at_gap_0_is_its_sim_look_pixel_for_pixel():
    world = WORLDS["demo"]
    options = world.check_options({**world.options.defaults(), "episodes": 2, "steps": 3,
                                   "gap": 0.0, "paired": True, "height": 64, "width": 80})
    fs = world.dataset(options)
    sim, real = fs.indices("sim"), fs.indices("real")
    np.testing.assert_array_equal(fs.read_images(sim), fs.read_images(real))
    task = world.task(options)
    a = task.render_state(fs.state[0], k=1, look="sim", gap=0.0, seed=3, height=64, width=80)
    b = task.render_state(fs.state[0], k=1, look="real", gap=0.0, seed=3, height=64, width=80)
    np.testing.assert_array_equal(a, b)


# ---- a new world: one package and one registry line -----------------------------------------
def test_a_new_world_is_a_dataset_spec_with_its_own_typed_options(toy):
    from s2r.datasets import load_dataset, parse_spec, storage_identity

    parsed = parse_spec("toy:episodes=4,gap=0.25,mode=fancy")
    assert parsed == {"kind": "toy", "options": {**toy.options.defaults(), "episodes": 4,
                                                 "gap": 0.25, "mode": "fancy"}}
    for bad, words in (("toy:colour=1", "unknown toy option 'colour'; known options: episodes"),
                       ("toy:episodes=two", "option episodes='two' must be an integer"),
                       ("toy:episodes=0", "dataset spec 'toy:episodes=0': episodes must be >= 1"),
                       ("toy:episodes=100000", "over the toy's limit of 50,000 frames")):
        with pytest.raises(DataError, match=words):
            parse_spec(bad)
    fs = load_dataset("toy:episodes=2,gap=1")
    assert fs.name == "toy" and set(fs.domain) == {"sim", "real"} and fs.state.shape[1] == 18
    assert storage_identity("toy") != storage_identity("demo")
    with pytest.raises(DataError, match="a toy dataset has one image set"):
        load_dataset("toy", image_key="rgb")


def test_a_new_worlds_task_runs_closed_loop_and_keys_its_rollouts_apart(toy, tmp_path):
    from s2r.cache import Cache
    from s2r.closedloop import encoder_rollouts as R
    from s2r.closedloop.rollout import run_rollouts

    r = run_rollouts(lambda frames, states: expert(states), ToyTask(), look="real", gap=1.0,
                     n_rollouts=5, seed=2, record=0)
    assert r.success.all() and r.n_stages == 2 and r.stage_rates() == [1.0, 1.0]
    assert r.record["frames"].shape[1:] == (64, 64, 3) and r.record["actions"].shape[1] == 1
    idle = run_rollouts(lambda f, s: np.zeros((len(s), 1)), ToyTask(), look="sim", n_rollouts=5,
                        seed=2)
    assert idle.steps[~idle.success].tolist() == [ToyTask.horizon] * 4   # the task's horizon
    params = R.RolloutParams(rollouts=3, demos=3, control_demos=5, control_members=1,
                             height=64, width=64)
    out = R.encoder_rollouts("state", [0.0, 1.0], spec="toy", params=params,
                             cache=Cache(tmp_path / "c"))
    assert len(out["sim"].stage_rates) == 2 and len(out["real"][1.0].successes) == 3
    toy_key = R.rollout_key("state", params, "real", 1.0, spec="toy:episodes=5")
    demo_key = R.rollout_key("state", params, "real", 1.0, spec="demo")
    assert toy_key["task"] == "toy-v1" != demo_key["task"]
    assert toy_key["params"]["horizon"] == 8 and demo_key["params"]["horizon"] == 30
    assert {k: v for k, v in toy_key.items() if k not in ("task", "params")} == {
        k: v for k, v in demo_key.items() if k not in ("task", "params")}


def test_tasks_differing_only_in_their_real_look_share_their_sim_side(toy, tmp_path,
                                                                      monkeypatch):
    """The toy's ``mode`` keys only its real look (like Meta-World's kind of shift): a second
    mode's validation finds its demonstrations' embeddings cached, runs only its real gaps
    above 0, and its sim outcome is the first's."""
    from s2r.cache import Cache
    from s2r.closedloop import rollout
    from s2r.closedloop import encoder_rollouts as R
    from s2r.closedloop.keys import demo_key

    params = R.RolloutParams(rollouts=3, demos=3, control_demos=5, control_members=1,
                             height=64, width=64)
    cache = Cache(tmp_path / "c")
    first = R.encoder_rollouts("pixels", [0.0, 1.0], spec="toy", params=params, cache=cache)
    fancy = toy.task({"mode": "fancy"})
    assert cache.contains(demo_key(fancy, "pixels", params.for_task(fancy)))
    real_run, looks = rollout.run_rollouts, []

    def counted(act, task, **kw):
        looks.append((kw["look"], kw["gap"]))
        return real_run(act, task, **kw)

    monkeypatch.setattr(rollout, "run_rollouts", counted)
    second = R.encoder_rollouts("pixels", [0.0, 1.0], spec="toy:mode=fancy", params=params,
                                cache=cache)
    assert looks == [("real", 1.0)]
    assert second["sim"] == first["sim"] and second["real"][0.0] == first["real"][0.0]
    sim_keys = {R.rollout_key("pixels", params, "sim", 0.0, spec=s)["task"]
                for s in ("toy", "toy:mode=fancy")}
    real_keys = {R.rollout_key("pixels", params, "real", 1.0, spec=s)["task"]
                 for s in ("toy", "toy:mode=fancy")}
    assert len(sim_keys) == 1 and len(real_keys) == 2


@pytest.mark.slow
def test_a_new_world_is_validated_like_the_demo(toy, tmp_path):
    from s2r.cli import main

    out = tmp_path / "r.json"
    assert main(["validate", "toy:episodes=6,steps=6", "--encoders",
                 "state,pixels,mobilenetv3@random", "--gaps", "0,1", "--rollouts", "3",
                 "--demos", "4", "--control-demos", "8",
                 "--control-members", "1", "--n-boot", "20", "--out", str(out),
                 "--cache-dir", str(tmp_path / "c")]) == 0
    report = json.loads(out.read_text())
    assert report["stages"] == ["near", "at target"]
    assert report["params"]["task"] == "toy reach"
    assert report["params"]["rollouts"]["horizon"] == 8     # the toy task's default
    assert {r["encoder"] for r in report["results"]} == {"state", "pixels", "mobilenetv3@random"}


def test_a_new_worlds_control_trains_on_its_task_state(toy, monkeypatch):
    from s2r.encoders.backends import simcnn as backend
    from s2r.encoders.simcnn_specs import simcnn_spec

    spec = simcnn_spec(id="toy-simcnn-dr1", file="toy-simcnn-dr1.v1.safetensors")
    recipe = backend.control_recipe(spec)
    assert (recipe["episodes"], recipe["state_columns"], recipe["version"]) == (4, [1, 2], 1)
    # a file without a recipe is not recognised: only the demo's controls predate recipes
    assert backend.recipe_mismatch(spec, {"episodes": 4}) == ("control", None, "toy-simcnn-dr1")
    assert backend.recipe_mismatch(spec, {"recipe": recipe}) is None
    seen = training_frames(monkeypatch, spec, current())
    frames, targets = ToyTask().randomised_frames(4, 6, strength=1.0, seed=0, height=64,
                                                  width=64)
    np.testing.assert_array_equal(seen["frames"], frames)
    np.testing.assert_array_equal(seen["targets"], targets)
    assert targets.shape == (len(frames), 1)


def test_the_registry_imports_no_renderer():
    """A world's top module imports nothing heavy (s2r.worlds.base): importing every world,
    as the encoder registry does for the controls, draws in no renderer and imports neither
    MuJoCo nor Meta-World."""
    import subprocess
    import sys

    code = ("import sys, s2r.worlds, s2r.encoders; "
            "print(sorted(m for m in ('PIL', 's2r.worlds.demo.dataset', 's2r.worlds.demo.source',"
            " 'mujoco', 'metaworld', 'gymnasium', 's2r.worlds.metaworld.sim')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
