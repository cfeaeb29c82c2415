"""Memory of what does not move: a deployed two-stage policy's estimate of a Meta-World scene
(the :class:`~s2r.worlds.base.SceneMemory` of :meth:`.world.MetaWorldTask.memory`).

The probe reads the task state -- the object's pose and the goal -- from every frame; what
cannot have moved since the episode began is better read once and remembered (the demo's
study: :mod:`s2r.worlds.demo.memory`), from what the policy itself perceives, never the true
state. Columns of the task state (:func:`.tasks.state_names`: object x, y, z, its quaternion,
goal x, y, z):

* **static**: the goal, and the parts of the object nothing moves before the task is done
  (the button's x, y and rotation: pressing moves it down only): the mean of their first
  ``look_frames`` decoded values, kept for the episode;
* **live**: decoded afresh from every frame (the button's height, which the press changes);
* **held object** (assembly, peg insertion): a free object stays where it was seen (the mean
  of its first ``look_frames`` decoded poses since the gripper last let go); once the
  gripper has closed near it (opening below :data:`CLOSED`, the hand within
  :data:`NEAR` of it horizontally) it moves with the hand: its position is the hand's plus
  the mean decoded offset over the frames it has been held, its rotation is read afresh (a
  held nut tilts: remembering its rotation took the shared control on exact states from 1.00
  to 0.35 sim success on assembly, seed 31, 20 rollouts).
"""

from __future__ import annotations

import numpy as np

from s2r.checks import check_number
from s2r.errors import MetricError

__all__ = ["SceneMemory", "CLOSED", "NEAR"]

#: The gripper opening (proprioception column 3: 1 open, ~0.45 on the nut's handle, ~0.3 on
#: nothing) below which the gripper counts as closed.
CLOSED = 0.8
#: How close (m, horizontally) the hand must be to a free object to pick it up.
NEAR = 0.06
_OBJECT, _POSE = slice(0, 3), slice(0, 7)


class SceneMemory:
    """Per-rollout memory of a Meta-World task's decoded scene (see the module).

    Parameters
    ----------
    spec : TaskSpec
    look_frames : int
        Frames averaged before a static estimate is kept.
    """

    def __init__(self, spec, look_frames: int = 3):
        check_number("look_frames", look_frames, low=1, integer=True)
        self.look_frames = int(look_frames)
        self.carried = spec.name != "button-press-topdown-v3"
        # static columns of the 10-wide task state: the goal always; the button's x, y and
        # rotation; a carried object's pose is handled apart
        self.static = (np.r_[7:10] if self.carried else np.r_[0:2, 3:10])
        self.reset(0)

    def reset(self, n_rollouts: int) -> None:
        """Forget everything; ``n_rollouts`` rollouts start."""
        n = int(n_rollouts)
        self._static = [[] for _ in range(n)]
        self._free = [[] for _ in range(n)]
        self._held = [[] for _ in range(n)]

    def __call__(self, task, proprio, rows) -> np.ndarray:
        """The remembered task state ``(B, 10)`` of rollouts ``rows`` from this step's decoded
        ``task (B, 10)`` and ``proprio (B, 4)``."""
        task = np.array(task, dtype=np.float64)
        proprio = np.asarray(proprio, dtype=np.float64)
        rows = np.asarray(rows, dtype=np.int64)
        if task.ndim != 2 or task.shape[1] != 10 or proprio.shape != (len(task), 4) \
                or rows.shape != (len(task),):
            raise MetricError(f"SceneMemory: expected task (B, 10), proprio (B, 4), rows (B,); "
                              f"got {task.shape}, {proprio.shape}, {rows.shape}")
        if len(rows) and (rows.min() < 0 or rows.max() >= len(self._static)):
            raise MetricError(f"SceneMemory: rows must be in [0, {len(self._static)}) (call "
                              f"reset(n_rollouts) first)")
        for b, k in enumerate(rows):
            if len(self._static[k]) < self.look_frames:
                self._static[k].append(task[b, self.static].copy())
            task[b, self.static] = np.mean(self._static[k], axis=0)
            if self.carried:
                self._carry(task[b], proprio[b], int(k))
        return task

    def _carry(self, row: np.ndarray, proprio: np.ndarray, k: int) -> None:
        hand, closed = proprio[:3], proprio[3] < CLOSED
        free = np.mean(self._free[k], axis=0) if self._free[k] else row[_POSE]
        if closed and (self._held[k] or np.linalg.norm(hand[:2] - free[:2]) <= NEAR):
            self._free[k] = []
            self._held[k].append(row[_OBJECT] - hand)
            row[_OBJECT] = hand + np.mean(self._held[k], axis=0)
            return                                  # a held object's rotation: read live
        self._held[k] = []
        if len(self._free[k]) < self.look_frames:
            self._free[k].append(row[_POSE].copy())
        row[_POSE] = np.mean(self._free[k], axis=0)
