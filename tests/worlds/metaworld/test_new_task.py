"""A Meta-World task is one row of s2r.worlds.metaworld.tasks.TASKS: a row registered there
and nowhere else gives a task whose columns, stages, horizon and memory follow from it, whose
expert rolls out and reports its stages, and whose frames render."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from s2r.worlds.metaworld.tasks import TASKS, TaskSpec

NAME = "button-press-v3"


def _near_then_pressed(env, obs, info, start) -> int:
    """1 the hand within 8 cm of the button, 2 pressed (success)."""
    if info["success"]:
        return 2
    return 1 if float(np.linalg.norm(obs[4:7] - obs[:3])) <= 0.08 else 0


def _nothing(env, obs) -> dict:
    return {}


ROW = TaskSpec(NAME, "SawyerButtonPressV3Policy", ("button",), "wxyz",
               ("at the button", "pressed"), 100, "Button press (side)",
               stage=_near_then_pressed, start=_nothing, model_size=(10, 10),
               static=(7, 8, 9))


@pytest.fixture
def row(monkeypatch):
    monkeypatch.setitem(TASKS, NAME, ROW)
    return ROW


def test_a_task_row_is_a_task_that_rolls_out_renders_and_reports_its_stages(row):
    from s2r.worlds import WORLDS
    from s2r.worlds.metaworld import sim
    from s2r.worlds.metaworld.paint import Painter

    task = WORLDS["metaworld"].task({"task": NAME})
    assert task.spec is row and task.stages == ("at the button", "pressed")
    assert task.horizon == 50 and (task.nq, task.nv) == (10, 10)
    assert task.columns.task == tuple(range(4, 14))
    assert len(task.columns.state_names) == 14 + 10 + 10 + 7
    env = sim.shared_env(row)
    assert (env.model.nq, env.model.nv) == row.model_size

    # a rollout of its expert, in this process: it succeeds and passes its stages in order
    s = sim.Sim(row, env, task.repeat).reset(sim.layout(row, 0, "rollout", 0))
    expert = sim.expert_for(row)
    stages, snapshots = [s.stage], [s.snapshot()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while not s.succeeded and s.t < task.horizon:
            s.step(expert.get_action(s.obs))
            stages.append(s.stage)
            snapshots.append(s.snapshot())
    assert s.succeeded and stages[-1] == len(task.stages)
    assert stages == sorted(stages) and 1 in stages
    assert s.state.shape == (len(task.columns.state_names),)

    # its frames render (first and last differ: the arm moved)
    painter = Painter(row, "corner", 48, 64)
    try:
        first, last = painter.draw(snapshots[0]), painter.draw(snapshots[-1])
    finally:
        painter.close()
    assert first.shape == (48, 64, 3) and first.dtype == np.uint8
    assert np.abs(first.astype(int) - last).mean() > 0.5

    # its memory keeps the row's static columns
    memory = task.memory(2)
    memory.reset(1)
    out = [memory(np.full((1, 10), float(v)), np.ones((1, 4)), np.array([0]))
           for v in (1, 3, 5)]
    assert out[-1][0, 7] == 2.0 and out[-1][0, 0] == 5.0
