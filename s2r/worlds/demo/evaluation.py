"""The demo's evaluation task: its stages, its seeded layouts, expert demonstrations and the
rollouts the closed loop steps (:class:`DemoBatch`, a :class:`~s2r.worlds.base.RolloutBatch`).

:func:`demonstrations` runs the reactive expert (:class:`.expert.ReactiveExpert`) on seeded
evaluation layouts and renders every frame in the *sim* look: the data a behaviour-cloning
policy is trained on. :class:`DemoBatch` holds ``N`` simulators from other seeded layouts,
rendered in either look. A rollout succeeds when the leg, released, is seated in the target
hole (:meth:`.task.TaskSim.success` under :data:`EVAL_CONFIG`).

Seeds: demonstration ``e`` uses ``numpy.random.default_rng([seed, 1, e])``, rollout ``k``
``default_rng([seed, 2, k])``, state-only demonstration ``e`` ``default_rng([seed, 3, e])``:
the layouts never coincide by construction of the streams, and rollout ``k`` is the same
layout in every look and gap (paired comparisons). The real look of rollout ``k`` is that of
the demo's real episode ``k`` at ``gap``.
"""

from __future__ import annotations

from typing import Iterator, Optional, Sequence

import numpy as np

from s2r.checks import check_number
from s2r.worlds.base import Demonstration
from s2r.worlds.demo.expert import ReactiveExpert, eval_layout
from s2r.worlds.demo.geometry import grasp_point, leg_foot, yaw_of
from s2r.worlds.demo.scene import gripper_rotation, rot6d, rot_from_6d
from s2r.worlds.demo.task import TaskConfig, TaskSim

__all__ = ["DemoBatch", "EVAL_CONFIG", "LIFT_HEIGHT", "STAGES", "demonstrations",
           "render_rollout_frame", "stage_of", "state_demonstrations"]

#: The task's stages in order (graded progress, as FurnitureBench scores completed phases):
#: a rollout's furthest stage is the highest one it reached at any step (:func:`stage_of`).
STAGES = ("above leg", "grasped", "lifted", "above target hole", "inserted", "released")
#: "lifted": the held leg's foot at least this high above the table (m).
LIFT_HEIGHT = 0.05
#: The task rules of closed-loop evaluation (compliant gripper, chamfered hole, no twist).
EVAL_CONFIG = TaskConfig.compliant()
DEMO_STREAM, ROLLOUT_STREAM, STATE_STREAM = 1, 2, 3


def stage_of(sim: TaskSim) -> int:
    """The highest :data:`STAGES` stage the simulator's current state satisfies (1-based;
    0 = none): 6 released (:meth:`TaskSim.success`), 5 inserted (the leg seated in the target
    hole, held or not), 4 above the target hole (held, foot within the hole's tolerance
    horizontally), 3 lifted (held, foot >= :data:`LIFT_HEIGHT` above the table), 2 grasped,
    1 above the leg (fingertip point within the grasp tolerance of the leg's grasp point
    horizontally, leg free)."""
    c = sim.config
    if sim.success():
        return 6
    if sim.seated():
        return 5
    if sim.grasped:
        foot = leg_foot(sim.leg_pos, sim.leg_rot)
        if float(np.linalg.norm(foot[:2] - sim.target_hole)) <= c.hole_tol:
            return 4
        return 3 if float(foot[2]) >= LIFT_HEIGHT else 2
    gp = grasp_point(sim.leg_pos, sim.leg_rot)
    return 1 if float(np.linalg.norm(gp[:2] - sim.ee_pos[:2])) <= c.grasp_tol else 0


def new_sim(seed: int, stream: int, k: int, config: Optional[TaskConfig] = None) -> TaskSim:
    """A simulator reset on the evaluation layout ``k`` of ``stream`` of ``seed``."""
    rng = np.random.default_rng([int(seed), stream, int(k)])
    sim = TaskSim(config or EVAL_CONFIG)
    sim.reset(eval_layout(rng), rng=rng)
    return sim


def demonstrations(n_episodes: int, steps: int, *, seed: int = 0, height: int = 96,
                   width: int = 128, config: Optional[TaskConfig] = None
                   ) -> Iterator[Demonstration]:
    """Yield ``n_episodes`` expert episodes of at most ``steps`` frames, in the sim look.

    An episode ends with the action that completes the task (the release): what the expert
    does afterwards (retreat, then hold still) would teach a policy that standing still is
    the commonest action.
    """
    check_number("n_episodes", n_episodes, low=1, integer=True)
    check_number("steps", steps, low=1, integer=True)
    for e in range(int(n_episodes)):
        sim = new_sim(seed, DEMO_STREAM, e, config)
        expert = ReactiveExpert()
        frames, states, actions = [], [], []
        for _ in range(int(steps)):
            frames.append(sim.render("sim", seed=seed, episode=e, height=height,
                                     width=width)[0])
            states.append(sim.state)
            actions.append(expert.act(states[-1]))
            sim.step(actions[-1])
            if sim.success():
                break
        yield Demonstration(np.stack(frames), np.stack(states), np.stack(actions),
                            bool(sim.success()))


def state_demonstrations(n_episodes: int, steps: int, *, seed: int = 0, noise: float = 0.0,
                         config: Optional[TaskConfig] = None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expert episodes as states only (nothing rendered), with DART noise.

    DART (Laskey et al., 2017): at every other step on average the executed action is the
    expert's plus Gaussian noise (``noise`` metres on the position, ``noise * 5`` radians on
    the yaw), the recorded label
    the expert's clean action, so the data covers the states a slightly wrong learner drifts
    into and says how to come back. Layouts: stream ``default_rng([seed, 3, e])`` (never a
    demonstration's or a rollout's). An episode stops one step after its success.

    Returns
    -------
    states : ndarray (N, 22) float32
    actions : ndarray (N, 10) float32
        The expert's clean action at every state.
    episode : ndarray (N,) int
    """
    check_number("n_episodes", n_episodes, low=1, integer=True)
    check_number("steps", steps, low=1, integer=True)
    check_number("noise", noise, low=0)
    expert = ReactiveExpert()
    states, actions, episode = [], [], []
    for e in range(int(n_episodes)):
        sim = new_sim(seed, STATE_STREAM, e, config)
        rng = np.random.default_rng([int(seed), STATE_STREAM, int(e), 1])
        for _ in range(int(steps)):
            s = sim.state
            a = expert.act(s)
            states.append(s)
            actions.append(a)
            episode.append(e)
            if noise > 0 and rng.random() < 0.5:
                a = a.astype(np.float64).copy()
                a[:3] += rng.normal(0.0, noise, 3)
                yaw = yaw_of(rot_from_6d(a[3:9])) + rng.normal(0.0, 5 * noise)
                a[3:9] = rot6d(gripper_rotation(yaw))
            sim.step(a)
            if sim.success():
                break
    return (np.stack(states).astype(np.float32), np.stack(actions).astype(np.float32),
            np.asarray(episode, dtype=np.int64))


class DemoBatch:
    """``n`` evaluation rollouts of the demo's task, stepped together (a
    :class:`~s2r.worlds.base.RolloutBatch`): rollout ``k`` starts from layout ``k`` of
    ``seed``'s rollout stream; frames are drawn in ``look`` (the real look of the demo's real
    episode ``k`` at ``gap``)."""

    def __init__(self, n: int, *, look: str, gap: float, seed: int, height: int, width: int,
                 config: Optional[TaskConfig] = None):
        self.n = int(n)
        self.look, self.gap, self.seed = look, float(gap), int(seed)
        self.height, self.width = int(height), int(width)
        self.sims = [new_sim(seed, ROLLOUT_STREAM, k, config) for k in range(self.n)]

    def frames(self, rows: Sequence[int]) -> np.ndarray:
        return np.stack([self.sims[k].render(self.look, gap=self.gap, seed=self.seed,
                                             episode=k, height=self.height,
                                             width=self.width)[0] for k in rows])

    def states(self, rows: Sequence[int]) -> np.ndarray:
        return np.stack([self.sims[k].state for k in rows])

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None:
        for row, k in enumerate(rows):
            self.sims[k].step(actions[row])

    def success(self, rows: Sequence[int]) -> np.ndarray:
        return np.array([self.sims[k].success() for k in rows], dtype=bool)

    def stage(self, rows: Sequence[int]) -> np.ndarray:
        return np.array([stage_of(self.sims[k]) for k in rows], dtype=np.int64)

    def close(self) -> None:
        """Nothing to release (the renderers are plain Python objects)."""


def render_rollout_frame(state, *, k: int, look: str, gap: float = 0.5, seed: int = 0,
                         height: int = 96, width: int = 128, step: int = 0,
                         config: Optional[TaskConfig] = None) -> np.ndarray:
    """Rollout ``k``'s frame of ``state`` (22,) in either look, as :class:`DemoBatch` renders
    it (the same layout, real look and sensor noise of ``step``): e.g. the sim look of a
    recorded real-look frame, for a sim/real saliency pair."""
    sim = new_sim(seed, ROLLOUT_STREAM, k, config)
    sim.t = int(step)
    return sim.render(look, gap=gap, seed=seed, episode=k, height=height, width=width,
                      state=np.asarray(state, dtype=np.float32))[0]
