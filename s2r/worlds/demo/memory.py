"""The demo's memory of what does not move (:class:`StaticMemory`, the
:class:`~s2r.worlds.base.SceneMemory` of :meth:`.world.DemoTask.memory`; the bookkeeping is
:class:`s2r.worlds.memory.StaticSceneMemory`'s).

On the demo a probe's estimate of the leg is worst as the gripper arrives above it: the probe
was fitted on demonstrations in which the gripper above the leg *is* where the leg is, so a
gripper a little off drags the estimate with it. The memory keeps, from what the policy
perceives:

* the **tabletop** never moves: its pose is the mean of every decoded pose of the rollout;
* a **free leg** does not move until it is grasped (no pushing in the task): its pose is the
  mean of the first :attr:`StaticMemory.look_frames` decoded poses since the gripper last
  held nothing, kept until the gripper holds something;
* a **held leg** moves rigidly with the gripper: its offset from the end effector (decoded
  position minus the proprioceptive position) and its rotation are averaged over the frames
  it has been held.

"Holds something" is read from proprioception only: the finger gap equals the leg's width
(:data:`s2r.worlds.demo.schema.LEG_WIDTH`; closed on nothing it goes to 0). ``validate`` keeps
the first 3 frames by default (:class:`~s2r.closedloop.encoder_rollouts.RolloutParams`;
``--memory 0`` decodes every frame afresh); docs/validation.md has the measurements.
"""

from __future__ import annotations

import numpy as np

from s2r.worlds.demo.schema import LEG_WIDTH
from s2r.worlds.memory import StaticSceneMemory

__all__ = ["StaticMemory"]

#: Columns of the demo's task state (:data:`s2r.worlds.demo.schema.TASK_COLUMNS`, 12): leg
#: position, leg rotation (6-D), tabletop x, y, yaw.
LEG_POS, LEG_ROT, TOP = slice(0, 3), slice(3, 9), slice(9, 12)
#: Columns of the demo's proprioception (:data:`s2r.worlds.demo.schema.PROPRIO_COLUMNS`, 10).
EE_POS, GRIP = slice(0, 3), 9


class StaticMemory(StaticSceneMemory):
    """Per-rollout memory of the demo's decoded static scene (see the module).

    Parameters
    ----------
    look_frames : int
        Free-leg frames averaged before the leg's estimate is kept.

    Call :meth:`reset` with the number of rollouts before the first step, then
    ``memory(task (B, 12), proprio (B, 10), rows)`` at every step.
    """

    def __init__(self, look_frames: int = 3):
        super().__init__(look_frames, task_width=12, proprio_width=10, static=TOP,
                         static_frames=None, carried_position=LEG_POS, carried_rotation=LEG_ROT,
                         hand=EE_POS, remember_rotation=True)

    def holds(self, row: np.ndarray, proprio: np.ndarray, k: int) -> bool:
        """The fingers' gap is the leg's width."""
        return bool(abs(proprio[GRIP] - LEG_WIDTH) < 1e-4)
