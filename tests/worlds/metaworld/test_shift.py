"""Kinds of shift (metaworld:...,shift=KIND): each kind changes only the real frames, never the
physics; ``all`` is the real look as it was (the default, absent from canonical specs and task
identities); distractors grow in number and size with the gap; a bad kind is one line."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import DataError
from s2r.worlds.metaworld.look import MAX_DISTRACTORS, SHIFTS, distractor_geoms, draw_look
from tests.worlds.metaworld.conftest import TINY

KINDS = ("lighting", "texture", "camera", "distractors")


@pytest.fixture(scope="module")
def kind_sets(tiny_sets):
    """The tiny spec at gap 1 in every kind, each simulated afresh: ``{kind: FrameSet}``."""
    from s2r.datasets import load_dataset
    from s2r.worlds.metaworld.dataset import _MEMO

    out = {}
    for kind in SHIFTS:
        _MEMO.clear()                      # run the expert again: nothing shared but the seed
        out[kind] = load_dataset(f"{TINY},gap=1,shift={kind}")
    return out


def test_the_default_kind_keeps_every_spec_string_and_task_identity():
    from s2r.datasets import parse_spec
    from s2r.datasets.world import format_world
    from s2r.worlds import WORLDS

    world = WORLDS["metaworld"]
    options = parse_spec(f"{TINY},gap=1")["options"]
    assert options["shift"] == "all"
    written = format_world("metaworld", options)
    assert "shift" not in written and parse_spec(written)["options"] == options
    camera = format_world("metaworld", {**options, "shift": "camera"})
    assert camera == written.replace("seed=3,", "seed=3,shift=camera,")
    assert parse_spec(camera)["options"] == {**options, "shift": "camera"}
    ids = {k: world.task({"shift": k}).identity() for k in SHIFTS}
    assert ids["all"] == world.task({}).identity() and len(set(ids.values())) == len(SHIFTS)


def test_a_bad_kind_is_refused_with_one_line_naming_the_choices():
    from s2r.datasets import parse_spec

    with pytest.raises(DataError) as info:
        parse_spec(f"{TINY},shift=fog")
    text = str(info.value)
    assert "\n" not in text
    assert "shift 'fog' is not one of all, lighting, texture, camera, distractors" in text


def test_every_kind_keeps_the_expert_physics_and_the_sim_frames(kind_sets, tiny_sets):
    base = tiny_sets[1.0]
    sim = base.indices("sim")
    names = base.source["state_names"]
    physics = [i for i, n in enumerate(names) if n.startswith(("qpos", "qvel", "mocap"))]
    assert len(physics) > 20
    for kind, fs in kind_sets.items():
        np.testing.assert_array_equal(fs.state, base.state, err_msg=kind)  # bit for bit
        np.testing.assert_array_equal(fs.state[:, physics], base.state[:, physics], kind)
        np.testing.assert_array_equal(fs.actions, base.actions)
        np.testing.assert_array_equal(fs.read_images(sim), base.read_images(sim))


def test_all_is_the_real_look_as_before_and_each_kind_is_its_own(kind_sets, tiny_sets):
    base = tiny_sets[1.0]
    sim, real = base.indices("sim"), base.indices("real")
    np.testing.assert_array_equal(kind_sets["all"].read_images(real), base.read_images(real))
    assert kind_sets["all"].fingerprint == base.fingerprint
    frames = {k: fs.read_images(real).astype(np.int64) for k, fs in kind_sets.items()}
    drawn = base.read_images(sim).astype(np.int64)
    change = {k: np.abs(f - drawn).mean() for k, f in frames.items()}
    assert all(change[k] > 0.5 for k in KINDS), change
    for i, a in enumerate(SHIFTS):
        for b in SHIFTS[i + 1:]:
            assert not np.array_equal(frames[a], frames[b]), (a, b)
    # each kind is a part of all: none changes the frames as much as all of them together
    assert all(change[k] < change["all"] for k in KINDS), change


def test_every_kind_at_gap_0_is_the_sim_look():
    from s2r.datasets import load_dataset
    from s2r.worlds.metaworld.dataset import _MEMO, real_frames

    fs = load_dataset(f"{TINY},gap=0")
    episodes = next(eps for eps, _ in _MEMO.values() if len(eps) == 2)
    sim = fs.read_images(fs.indices("sim"))
    for kind in KINDS:
        np.testing.assert_array_equal(real_frames({**fs.source, "shift": kind}, episodes), sim)


def test_distractors_grow_in_number_and_size_with_the_gap_and_stand_on_the_table():
    draw = draw_look(5, 2, "distractors")
    assert draw.parts == ("distractors",) and draw_look(5, 2).distractors is None
    assert distractor_geoms(draw.distractors, 0.0) == []
    half, full = distractor_geoms(draw.distractors, 0.5), distractor_geoms(draw.distractors, 1.0)
    assert len(half) == MAX_DISTRACTORS // 2 and len(full) == MAX_DISTRACTORS
    for (_, small, *_), (_, big, *_) in zip(half, full):
        assert np.all(big >= small) and big.max() > small.max()
    for kind, size, pos, mat, rgba in full:       # sphere, capsule, cylinder, box (mjtGeom)
        half_height = {2: size[0], 3: size[0] + size[1], 5: size[1], 6: size[2]}[kind]
        assert pos[2] == half_height > 0                                     # on the table
        assert -0.65 < pos[0] < 0.65 and 0.25 < pos[1] < 1.0 and pos[2] <= 0.14
        assert rgba[3] == 1.0 and mat.shape == (9,)


def test_rollouts_of_every_kind_step_the_same_physics_and_draw_other_frames():
    """The closed loop's path: the same actions give bit-identical states in every kind (the
    environments step in the workers beside the renderer), while the frames differ."""
    from s2r.worlds import WORLDS

    world = WORLDS["metaworld"]
    actions = np.random.default_rng(0).uniform(-1, 1, (4, 2, 4))
    states, frames = {}, {}
    for kind in SHIFTS:
        batch = world.task({"shift": kind}).rollouts(2, look="real", gap=1.0, seed=1,
                                                     height=48, width=64)
        seen, drawn = [batch.states([0, 1])], []
        for a in actions:
            batch.step([0, 1], a)
            seen.append(batch.states([0, 1]))
        drawn.append(batch.frames([0, 1]))
        batch.close()
        states[kind], frames[kind] = np.stack(seen), np.stack(drawn)
    for kind in KINDS:
        np.testing.assert_array_equal(states[kind], states["all"])
        assert not np.array_equal(frames[kind], frames["all"]), kind


def test_the_sim_look_is_every_kinds_so_its_work_is_keyed_once():
    """The kind of shift draws only the real look: every kind's demonstrations and sim-look
    rollout frames are bit for bit those of ``all``, so their keys (the sim identity) are
    shared while the real look's (the identity) are not."""
    from s2r.closedloop.keys import demo_key, rollout_key
    from s2r.closedloop.params import RolloutParams
    from s2r.worlds import WORLDS

    world = WORLDS["metaworld"]
    tasks = {kind: world.task({"shift": kind}) for kind in SHIFTS}
    params = RolloutParams(rollouts=2).for_task(tasks["all"])
    sim_ids = {k: t.sim_identity() for k, t in tasks.items()}
    assert set(sim_ids.values()) == {tasks["all"].identity()}

    def keys(kind):
        task = tasks[kind]
        return (rollout_key(task, "state", params, "sim", 0.0),
                demo_key(task, "state", params),
                rollout_key(task, "state", params, "real", 1.0))

    base = keys("all")
    for kind in KINDS:
        sim, demo, real = keys(kind)
        assert (sim, demo) == base[:2] and real != base[2], kind

    def sim_side(kind):
        task = tasks[kind]
        demo = next(iter(task.demonstrations(1, 3, seed=2, height=48, width=64)))
        batch = task.rollouts(2, look="sim", gap=1.0, seed=1, height=48, width=64)
        batch.step([0, 1], np.full((2, 4), 0.3))
        frames = batch.frames([0, 1])
        batch.close()
        return demo.frames, frames

    drawn = sim_side("all")
    for kind in ("lighting", "camera"):
        for got, want in zip(sim_side(kind), drawn):
            np.testing.assert_array_equal(got, want, err_msg=kind)
