"""The Meta-World task in the closed loop: the expert's physics is bit-identical under every
look, its stages come in order, a recorded state redraws its frame, and rollouts spread over
the worker processes keep their rows apart."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.worlds import WORLDS
from s2r.worlds.metaworld.tasks import TASKS


class _Expert:
    """Meta-World's scripted expert as a closed-loop policy reading the recorded state."""

    def __init__(self, task):
        from s2r.worlds.metaworld import sim

        self.task, self.sim = task, sim

    def reset(self, n):
        self.experts = [self.sim.expert_for(self.task.spec) for _ in range(n)]

    def __call__(self, frames, states, rows):
        import warnings

        from s2r.worlds.metaworld.tasks import named_width, observation

        k = named_width(self.task.spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.stack([np.clip(self.experts[r].get_action(
                observation(self.task.spec, s[:k])), -1, 1) for s, r in zip(states, rows)])


@pytest.mark.parametrize("name", ["button-press-topdown-v3", "assembly-v3"])
def test_the_experts_physics_is_bit_identical_under_every_look(name):
    """Looks are drawn on the renderer's own model: the expert's qpos trajectory (recorded
    state, snapshot columns included) is the same bits in the sim look and the real look at
    gaps 0.5 and 1, and every rollout succeeds."""
    from s2r.closedloop.rollout import run_rollouts

    task = WORLDS["metaworld"].task({"task": name})
    runs = [run_rollouts(_Expert(task), task, look=look, gap=gap, n_rollouts=2, seed=4,
                         height=48, width=64, record=1)
            for look, gap in (("sim", 0.0), ("real", 0.5), ("real", 1.0))]
    for r in runs:
        assert r.success.all() and (r.stages == len(task.stages)).all()
        assert r.steps.max() <= task.horizon
        np.testing.assert_array_equal(r.record["states"], runs[0].record["states"])
        np.testing.assert_array_equal(r.steps, runs[0].steps)
    sim_frames, real_frames = runs[0].record["frames"], runs[2].record["frames"]
    assert np.abs(sim_frames.astype(int) - real_frames).mean() > 10


@pytest.mark.parametrize("name", tuple(TASKS))
def test_the_expert_passes_every_stage_in_order(name):
    from s2r.worlds.metaworld import sim

    spec = TASKS[name]
    s = sim.Sim(spec, sim.shared_env(spec), 2).reset(sim.layout(spec, 7, "demo", 0))
    expert, seen = sim.expert_for(spec), [s.stage]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while not s.succeeded and s.t < spec.horizon(2):
            s.step(np.clip(expert.get_action(s.obs), -1, 1))
            seen.append(s.stage)
    assert s.succeeded and seen[-1] == len(spec.stages)
    assert sorted(set(seen)) == list(range(len(spec.stages) + 1))    # no stage skipped
    assert seen == sorted(seen)


@pytest.mark.parametrize("name", ["bin-picking-v3", "drawer-open-v3", "hammer-v3"])
def test_a_task_renders_and_rolls_out(name):
    """Tiny episodes of a row the tests above do not draw (a few seconds each, most of it the
    workers loading its model): its expert's rollouts step the same physics in both looks,
    record states of the row's width and frames of the asked size (the real look's differ),
    its memory takes the row's task state, and a tiny dataset names the row's columns."""
    from s2r.closedloop.rollout import run_rollouts
    from s2r.datasets import load_dataset
    from s2r.worlds.metaworld.tasks import named_width, state_names

    task = WORLDS["metaworld"].task({"task": name})
    sim, real = (run_rollouts(_Expert(task), task, look=look, gap=gap, n_rollouts=2, seed=5,
                              height=40, width=48, record=1, horizon=4)
                 for look, gap in (("sim", 0.0), ("real", 1.0)))
    names = state_names(task.spec, task.nq, task.nv)
    assert sim.record["states"].shape == (4, len(names)) == (4, len(task.columns.state_names))
    assert sim.record["frames"].shape == (4, 40, 48, 3)
    np.testing.assert_array_equal(sim.record["states"], real.record["states"])
    assert np.abs(sim.record["frames"].astype(int) - real.record["frames"]).mean() > 5
    hand = sim.record["states"][:, :3]
    assert np.linalg.norm(hand[-1] - hand[0]) > 0.01           # the expert moved the hand

    width = named_width(task.spec) - 4
    assert task.columns.task == tuple(range(4, 4 + width))
    memory = task.memory(2)
    memory.reset(1)
    out = memory(sim.record["states"][:1, 4:4 + width], sim.record["states"][:1, :4],
                 np.array([0]))
    assert out.shape == (1, width)

    fs = load_dataset(f"metaworld:task={name},episodes=1,steps=3,seed=1,height=40,width=48")
    assert fs.source["state_names"] == list(names) and fs.state.shape == (6, len(names))


def test_a_recorded_state_redraws_its_frame_in_both_looks():
    from s2r.closedloop.rollout import render_rollout_frame, run_rollouts

    task = WORLDS["metaworld"].task({"task": "button-press-topdown-v3"})
    for look, gap in (("sim", 0.0), ("real", 1.0)):
        r = run_rollouts(_Expert(task), task, look=look, gap=gap, n_rollouts=2, seed=6,
                         height=48, width=64, record=1, horizon=5)
        for t in (0, 4):
            frame = render_rollout_frame(task, r.record["states"][t], k=1, look=look, gap=gap,
                                         seed=6, height=48, width=64)
            # float32 snapshot columns: at most a few edge pixels differ
            differ = np.any(frame != r.record["frames"][t], axis=2).mean()
            assert differ < 0.01


def test_a_batch_keeps_its_rows_apart_over_the_workers():
    """Rollout k keeps its own layout and state whichever rows are asked, in any order; the
    rows' frames come back in the order asked."""
    task = WORLDS["metaworld"].task({"task": "button-press-topdown-v3"})
    batch = task.rollouts(5, look="real", gap=0.5, seed=2, height=48, width=64)
    try:
        states = batch.states([0, 1, 2, 3, 4])
        assert len({tuple(s[4:6]) for s in states}) == 5          # five button layouts
        frames = batch.frames([4, 1])
        np.testing.assert_array_equal(frames[::-1], batch.frames([1, 4]))
        batch.step([3, 0], np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, -1.0, 0.0]]))
        after = batch.states([0, 3, 4])
        assert after[0, 2] < states[0, 2] and after[1, 2] > states[3, 2]
        np.testing.assert_array_equal(after[2], states[4])        # not stepped
        assert not batch.success([0, 1]).any() and batch.stage([2]).tolist() == [0]
    finally:
        batch.close()
