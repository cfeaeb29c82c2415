"""Memory of what does not move: the bookkeeping of a deployed two-stage policy's estimate of
the static scene (the :class:`~s2r.worlds.base.SceneMemory` a world's task returns).

A policy that reads the scene from every frame afresh re-decides at every step where things
that cannot have moved are; a probe fitted on demonstrations is worst exactly in the states
the policy visits. What a person does instead: look at the scene before reaching, and remember
what cannot have moved -- from what the policy itself perceives (the decoded task state and
its proprioception), never the true state. :class:`StaticSceneMemory` keeps, per rollout:

* **static** columns (what nothing moves): the mean of their first ``static_frames`` decoded
  values (``None``: of every decoded value of the rollout);
* a **carried** object, when the task has one: while free it stays where it was seen (the
  mean of its first ``look_frames`` decoded poses since it was last held); while held (the
  world's :meth:`StaticSceneMemory.holds`) it moves with the hand: its position is the hand's
  plus the mean decoded offset over the frames it has been held, its rotation the mean decoded
  rotation (``remember_rotation``) or read afresh.

A world supplies its columns and its "held" test; every other column is decoded afresh.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from s2r.checks import check_number
from s2r.errors import MetricError

__all__ = ["StaticSceneMemory"]


def _index(columns):
    """Columns as an index: a slice as given, anything else as an integer array."""
    return columns if isinstance(columns, slice) else np.asarray(columns, dtype=np.int64)


class StaticSceneMemory:
    """Per-rollout memory of a task's decoded static scene (see the module).

    Parameters
    ----------
    look_frames : int
        Frames averaged before a free object's (and, by default, a static column's) estimate
        is kept.
    task_width, proprio_width : int
        Columns of the task state and of the proprioception a call gets.
    static : slice or sequence of int
        Task-state columns nothing moves.
    static_frames : int, "look" or None
        How many first decoded values of the static columns are averaged: ``"look"``
        (``look_frames``), a number, or None (every one of the rollout).
    carried_position, carried_rotation : slice or sequence of int, optional
        Task-state columns of the carried object's position (3) and rotation; None: the task
        carries nothing.
    hand : slice
        Proprioception columns of the hand's position (3).
    remember_rotation : bool
        Whether a held object's rotation is the mean of its decoded rotations since it was
        grasped (else it is read afresh).

    Call :meth:`reset` with the number of rollouts before the first step, then
    ``memory(task, proprio, rows)`` at every step.
    """

    def __init__(self, look_frames: int = 3, *, task_width: int, proprio_width: int,
                 static, static_frames="look", carried_position=None, carried_rotation=None,
                 hand: slice = slice(0, 3), remember_rotation: bool = False):
        check_number("look_frames", look_frames, low=1, integer=True)
        self.look_frames = int(look_frames)
        self.task_width, self.proprio_width = int(task_width), int(proprio_width)
        self.static = _index(static)
        self.static_frames: Optional[int] = (self.look_frames if static_frames == "look"
                                             else static_frames)
        self.carried = carried_position is not None
        if self.carried:
            self.position, self.rotation = _index(carried_position), _index(carried_rotation)
            self.pose = np.concatenate([np.arange(self.task_width)[self.position],
                                        np.arange(self.task_width)[self.rotation]])
            self._pose = (slice(int(self.pose[0]), int(self.pose[-1]) + 1)
                          if np.array_equal(self.pose, np.arange(self.pose[0],
                                                                 self.pose[-1] + 1))
                          else self.pose)
        self.hand, self.remember_rotation = hand, bool(remember_rotation)
        self.reset(0)

    def reset(self, n_rollouts: int) -> None:
        """Forget everything; ``n_rollouts`` rollouts start."""
        n = int(n_rollouts)
        self._static = [[] for _ in range(n)]
        self._free = [[] for _ in range(n)]
        self._held = [[] for _ in range(n)]

    def holds(self, row: np.ndarray, proprio: np.ndarray, k: int) -> bool:
        """Whether rollout ``k``'s hand holds the carried object this step, from its decoded
        task state ``row`` and proprioception (a world's own test)."""
        raise NotImplementedError

    def free_pose(self, row: np.ndarray, k: int) -> np.ndarray:
        """The carried object's remembered free pose of rollout ``k`` (position, rotation), or
        this step's decoded one before any is remembered."""
        return np.mean(self._free[k], axis=0) if self._free[k] else row[self._pose]

    def __call__(self, task, proprio, rows) -> np.ndarray:
        """The remembered task state of rollouts ``rows`` this step.

        Parameters
        ----------
        task : ndarray (B, task_width)
            The task state decoded from this step's frames.
        proprio : ndarray (B, proprio_width)
            This step's proprioception.
        rows : ndarray (B,) of int
            The rollout of every row (indices into :meth:`reset`'s rollouts).

        Returns
        -------
        ndarray (B, task_width) float64
        """
        name, kw, pw = type(self).__name__, self.task_width, self.proprio_width
        task = np.array(task, dtype=np.float64)
        proprio = np.asarray(proprio, dtype=np.float64)
        rows = np.asarray(rows, dtype=np.int64)
        if task.ndim != 2 or task.shape[1] != kw or proprio.shape != (len(task), pw) \
                or rows.shape != (len(task),):
            raise MetricError(f"{name}: expected task (B, {kw}), proprio (B, {pw}), rows (B,); "
                              f"got {task.shape}, {proprio.shape}, {rows.shape}")
        if len(rows) and (rows.min() < 0 or rows.max() >= len(self._static)):
            raise MetricError(f"{name}: rows must be in [0, {len(self._static)}) (call "
                              f"reset(n_rollouts) first)")
        for b, k in enumerate(rows):
            k = int(k)
            if self.static_frames is None or len(self._static[k]) < self.static_frames:
                self._static[k].append(task[b, self.static].copy())
            task[b, self.static] = np.mean(self._static[k], axis=0)
            if self.carried:
                self._carry(task[b], proprio[b], k)
        return task

    def _carry(self, row: np.ndarray, proprio: np.ndarray, k: int) -> None:
        hand = proprio[self.hand]
        if self.holds(row, proprio, k):
            self._free[k] = []
            offset = row[self.position] - hand
            if self.remember_rotation:
                offset = np.concatenate([offset, row[self.rotation]])
            self._held[k].append(offset)
            mean = np.mean(self._held[k], axis=0)
            row[self.position] = hand + mean[:3]
            if self.remember_rotation:
                row[self.rotation] = mean[3:]
            return
        self._held[k] = []
        if len(self._free[k]) < self.look_frames:
            self._free[k].append(row[self._pose].copy())
        row[self._pose] = np.mean(self._free[k], axis=0)
