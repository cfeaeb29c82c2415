"""The Meta-World dataset (metaworld:...): both looks of the expert's episodes, named state and
action columns, seeded frames, the real look changing appearance only and growing with the gap,
gap 0 = the sim look pixel for pixel, frames upright."""

from __future__ import annotations

import numpy as np

from tests.worlds.metaworld.conftest import TINY


def test_the_dataset_has_both_looks_a_4d_action_and_named_state(tiny_sets):
    fs = tiny_sets[0.5]
    summary = fs.summary()
    assert summary["frames"] == {"sim": 16, "real": 16} and summary["episodes"] == {"sim": 2,
                                                                                  "real": 2}
    assert summary["image_shape"] == [64, 80, 3] and summary["action_dim"] == 4
    assert fs.action_names == ["hand dx", "hand dy", "hand dz", "gripper effort"]
    names = fs.source["state_names"]
    assert names[:14] == ["hand x", "hand y", "hand z", "gripper opening", "button x",
                          "button y", "button z", "button qw", "button qx", "button qy",
                          "button qz", "goal x", "goal y", "goal z"]
    assert len(names) == fs.state.shape[1] == 14 + 10 + 10 + 7   # + qpos, qvel, mocap pose
    assert names[14] == "qpos 0" and names[-1] == "mocap qz"
    assert np.all(np.abs(fs.actions) <= 1)                  # Meta-World's action space
    # the expert moves toward the button: the hand's distance to it shrinks over an episode
    sim = fs.indices("sim")
    first, last = sim[fs.step[sim] == 0], sim[fs.step[sim] == 7]
    gap = lambda i: np.linalg.norm(fs.state[i, 0:2] - fs.state[i, 4:6], axis=1)   # noqa: E731
    assert np.all(gap(last) < gap(first))


def test_one_seed_gives_the_same_state_and_actions_at_every_gap_and_only_real_frames_differ(
        tiny_sets):
    a, b = tiny_sets[0.0], tiny_sets[1.0]
    np.testing.assert_array_equal(a.state, b.state)
    np.testing.assert_array_equal(a.actions, b.actions)
    sim, real = a.indices("sim"), a.indices("real")
    np.testing.assert_array_equal(a.read_images(sim), b.read_images(sim))
    assert not np.array_equal(a.read_images(real), b.read_images(real))


def test_the_real_look_grows_with_the_gap_and_is_the_sim_look_at_gap_0(tiny_sets):
    from s2r.worlds.metaworld.dataset import _MEMO, real_frames

    sim_idx, real_idx = tiny_sets[0.0].indices("sim"), tiny_sets[0.0].indices("real")
    sim = tiny_sets[0.0].read_images(sim_idx).astype(np.int64)
    change = {g: np.abs(fs.read_images(real_idx).astype(np.int64) - sim).mean()
              for g, fs in tiny_sets.items()}
    assert change[0.0] == 0 and 5 < change[0.5] < change[1.0]
    # the real look's own path at gap 0 (not the dataset's copy of the sim frames) draws the
    # sim look pixel for pixel: base colours, lights, camera and textures exactly
    options = {**tiny_sets[0.0].source, "gap": 0.0}
    episodes = next(eps for eps, _ in _MEMO.values() if len(eps) == 2)
    np.testing.assert_array_equal(real_frames(options, episodes), sim)


def test_the_same_spec_gives_the_same_frames(tiny_sets):
    from s2r.datasets import load_dataset
    from s2r.worlds.metaworld.dataset import _MEMO

    _MEMO.clear()                                          # simulate and render again
    again = load_dataset(f"{TINY},gap=0.5")
    assert again.fingerprint == tiny_sets[0.5].fingerprint
    np.testing.assert_array_equal(again.read_images(np.arange(32)),
                                  tiny_sets[0.5].read_images(np.arange(32)))


def test_frames_are_upright():
    """Meta-World's corner camera is mounted upside down; its frames are turned: raising the
    hand moves the arm's pixels up the frame (a smaller row), never down."""
    from s2r.worlds.metaworld import sim
    from s2r.worlds.metaworld.pool import shared_pool
    from s2r.worlds.metaworld.tasks import TASKS

    spec = TASKS["button-press-topdown-v3"]
    snaps = []
    for dz in (-1.0, 1.0):
        s = sim.Sim(spec, sim.shared_env(spec), 2).reset(sim.layout(spec, 0, "demo", 0))
        for _ in range(10):
            s.step(np.array([0.0, 0.0, dz, 0.0]))
        snaps.append(s.snapshot())
    low, high = shared_pool().paint([(("button-press-topdown-v3", "corner", 96, 128), None,
                                      None, 0.0, snaps)])[0]
    changed = np.any(low != high, axis=2)
    rows = np.arange(96)[:, None]

    def arm_row(frame):      # mean row of the red pixels (the Sawyer) only this frame has
        red = (frame[..., 0] > 1.5 * frame[..., 1]) & changed
        return (rows * red).sum() / red.sum()

    assert arm_row(high) < arm_row(low) - 3
