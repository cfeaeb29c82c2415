"""Memory of what does not move: a deployed two-stage policy's estimate of the static scene.

A policy that reads the scene from every frame afresh re-decides where the leg is at every
step; on the demo that estimate is worst exactly when it matters, as the gripper arrives
above the leg: the linear probe was fitted on demonstrations in which the gripper above the
leg *is* where the leg is, so a gripper a little off drags the estimate with it (measured on
pixels' probe: 8 mm leg error on held-out demonstrations, 23-77 mm in the states the policy
visits). What a person does instead: look at the scene before reaching, and remember what
cannot have moved. :class:`StaticMemory` does that with what the policy itself perceives
(never the true state):

* the **tabletop** never moves: its pose is the mean of every decoded pose of the rollout;
* a **free leg** does not move until it is grasped (no pushing in the task): its pose is the
  mean of the first :attr:`StaticMemory.look_frames` decoded poses since the gripper last
  held nothing, kept until the gripper holds something;
* a **held leg** moves rigidly with the gripper: its offset from the end effector (decoded
  position minus the proprioceptive position) and its rotation are averaged over the frames
  it has been held.

"Holds something" is read from proprioception only: the finger gap equals the leg's width
(:data:`s2r.worlds.demo.policy.LEG_WIDTH`; closed on nothing it goes to 0).

Measured on the demo (docs/validation.md, sim look, seed 5): pixels with 300 demonstrations,
0.15 sim success decoding every frame afresh, 0.25 with the free-leg and tabletop memory, 0.35
with the held leg's too (40 rollouts); a running mean over every free-leg frame instead of the
first three gained nothing. At 60 demonstrations with the version-1 ``simcnn`` controls the
gain was within noise; with the version-2 controls it helped every image policy measured (seed
47, 20 rollouts: ``simcnn-dr0`` sim success 0.44 -> 0.50, ``simcnn-dr1`` 0.00 -> 0.30, and
``simcnn-dr1``'s real progress at gap 1 0.12 -> 0.23), so ``validate`` keeps the first 3
frames by default (:class:`~s2r.closedloop.encoder_rollouts.RolloutParams`; ``--memory 0``
decodes every frame afresh).
"""

from __future__ import annotations

import numpy as np

from s2r.checks import check_number
from s2r.errors import MetricError
from s2r.worlds.demo.policy import LEG_WIDTH

__all__ = ["StaticMemory"]

#: Columns of the demo's task state (:data:`s2r.worlds.demo.TASK_COLUMNS`, 12): leg
#: position, leg rotation (6-D), tabletop x, y, yaw.
LEG_POS, LEG_ROT, TOP = slice(0, 3), slice(3, 9), slice(9, 12)
#: Columns of the demo's proprioception (:data:`s2r.worlds.demo.PROPRIO_COLUMNS`, 10).
EE_POS, GRIP = slice(0, 3), 9


class StaticMemory:
    """Per-rollout memory of the decoded static scene (see the module).

    Parameters
    ----------
    look_frames : int
        Free-leg frames averaged before the leg's estimate is kept.

    Call :meth:`reset` with the number of rollouts before the first step, then
    ``memory(task, proprio, rows)`` at every step.
    """

    def __init__(self, look_frames: int = 3):
        check_number("look_frames", look_frames, low=1, integer=True)
        self.look_frames = int(look_frames)
        self.reset(0)

    def reset(self, n_rollouts: int) -> None:
        """Forget everything; ``n_rollouts`` rollouts start."""
        n = int(n_rollouts)
        self._top = [[] for _ in range(n)]
        self._free = [[] for _ in range(n)]
        self._held = [[] for _ in range(n)]

    def __call__(self, task, proprio, rows) -> np.ndarray:
        """The remembered task state of rollouts ``rows`` this step.

        Parameters
        ----------
        task : ndarray (B, 12)
            The task state decoded from this step's frames.
        proprio : ndarray (B, 10)
            This step's proprioception.
        rows : ndarray (B,) of int
            The rollout of every row (indices into :meth:`reset`'s rollouts).

        Returns
        -------
        ndarray (B, 12) float64
        """
        task = np.array(task, dtype=np.float64)
        proprio = np.asarray(proprio, dtype=np.float64)
        rows = np.asarray(rows, dtype=np.int64)
        if task.ndim != 2 or task.shape[1] != 12 or proprio.shape != (len(task), 10) \
                or rows.shape != (len(task),):
            raise MetricError(f"StaticMemory: expected task (B, 12), proprio (B, 10), rows "
                              f"(B,); got {task.shape}, {proprio.shape}, {rows.shape}")
        if len(rows) and (rows.min() < 0 or rows.max() >= len(self._top)):
            raise MetricError(f"StaticMemory: rows must be in [0, {len(self._top)}) (call "
                              f"reset(n_rollouts) first)")
        for b, k in enumerate(rows):
            self._top[k].append(task[b, TOP].copy())
            task[b, TOP] = np.mean(self._top[k], axis=0)
            if abs(proprio[b, GRIP] - LEG_WIDTH) < 1e-4:          # holding something
                self._free[k] = []
                held = np.concatenate([task[b, LEG_POS] - proprio[b, EE_POS], task[b, LEG_ROT]])
                self._held[k].append(held)
                mean = np.mean(self._held[k], axis=0)
                task[b, LEG_POS] = proprio[b, EE_POS] + mean[:3]
                task[b, LEG_ROT] = mean[3:]
            else:
                self._held[k] = []
                if len(self._free[k]) < self.look_frames:
                    self._free[k].append(task[b, :9].copy())
                task[b, :9] = np.mean(self._free[k], axis=0)
        return task
