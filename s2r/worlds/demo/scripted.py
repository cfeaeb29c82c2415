"""A closed-loop version of the demo's scripted policy, and a rollout helper for :mod:`.task`.

:func:`.policy.run_episode` plans a whole trajectory from the layout (open loop).
:class:`ScriptedController` commands the same waypoints (:func:`.policy.waypoints`: approach,
descend, close, lift, carry, insert, twist, release, retreat) but decides from the simulator's
state each step: it keeps commanding a waypoint until the end effector is there (position,
yaw) and the gripper has finished opening or closing, then moves on.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from s2r.worlds.demo.episodes import waypoints
from s2r.worlds.demo.schema import EE_POS, EE_ROT, GRIP, GRIP_CLOSE, LEG_WIDTH
from s2r.worlds.demo.scene import GRIPPER_OPEN, Layout, gripper_rotation, rot6d, rot_from_6d
from s2r.worlds.demo.task import TaskSim
from s2r.worlds.demo.geometry import wrap, yaw_of

__all__ = ["ScriptedController", "rollout"]


class ScriptedController:
    """The scripted policy, closed loop: ``act(state) -> action (10,)``.

    Parameters
    ----------
    layout : Layout
        The episode's layout (the policy knows where the leg and the target hole are).
    rng : numpy.random.Generator
        Draws the waypoints' free parameters (heights, twist), as :func:`.policy.run_episode`.
    pos_tol, yaw_tol : float
        When a waypoint counts as reached (m, rad).

    Attributes
    ----------
    phase : int
        Index of the waypoint being commanded (1..9; 9 = retreat, held to the end).
    """

    def __init__(self, layout: Layout, rng: np.random.Generator, *, pos_tol: float = 0.004,
                 yaw_tol: float = 0.05):
        self.waypoints = waypoints(layout, rng)
        self.pos_tol = float(pos_tol)
        self.yaw_tol = float(yaw_tol)
        self.phase = 1

    def _reached(self, state: np.ndarray, k: int) -> bool:
        pos, yaw, cmd = self.waypoints[k]
        s = np.asarray(state, dtype=np.float64)
        if np.linalg.norm(s[EE_POS] - pos) > self.pos_tol:
            return False
        if abs(wrap(yaw_of(rot_from_6d(s[EE_ROT])) - yaw)) > self.yaw_tol:
            return False
        width = float(s[GRIP])
        if cmd == GRIP_CLOSE:
            return width <= LEG_WIDTH + 1e-4
        return width >= GRIPPER_OPEN - 1e-4

    def act(self, state: np.ndarray) -> np.ndarray:
        """The action for ``state`` (22,): the current waypoint, moving on once it is reached."""
        last = len(self.waypoints) - 1
        while self.phase < last and self._reached(state, self.phase):
            self.phase += 1
        pos, yaw, cmd = self.waypoints[self.phase]
        return np.concatenate([pos, rot6d(gripper_rotation(yaw)), [cmd]]).astype(np.float32)


def rollout(sim: TaskSim, act: Callable[[np.ndarray], np.ndarray], steps: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """Run ``act`` closed loop for ``steps`` steps from the simulator's current state.

    Returns
    -------
    states : ndarray (steps + 1, 22) float32
        The state before each step and after the last.
    actions : ndarray (steps, 10) float32
    """
    states = [sim.state]
    actions = []
    for _ in range(int(steps)):
        actions.append(np.asarray(act(states[-1]), dtype=np.float32))
        states.append(sim.step(actions[-1]))
    return np.stack(states), np.stack(actions) if actions else np.zeros((0, 10), np.float32)
