"""Memory of what does not move: a deployed two-stage policy's estimate of a Meta-World scene
(:class:`MetaWorldMemory`, the :class:`~s2r.worlds.base.SceneMemory` of
:meth:`.world.MetaWorldTask.memory`; the bookkeeping is
:class:`s2r.worlds.memory.StaticSceneMemory`'s).

The probe reads the task state -- the object's pose and the goal -- from every frame; what
cannot have moved since the episode began is better read once and remembered, from what the
policy itself perceives, never the true state. The task's row (:class:`.tasks.TaskSpec`) says
which columns of the task state (:func:`.tasks.state_names`: each object's x, y, z and
quaternion, then goal x, y, z) are which:

* **static** (:attr:`.tasks.TaskSpec.static`): the goal, and the parts of the object nothing
  moves before the task is done (the button's x, y and rotation: pressing moves it down
  only; the drawer's handle but its y; the nail but its y): the mean of their first
  ``look_frames`` decoded values, kept for the episode;
* **carried** (:attr:`.tasks.TaskSpec.carried`; assembly, peg insertion, bin picking, the
  hammer): a free object stays where it was seen (the mean of its first ``look_frames``
  decoded poses since the gripper last let go); once the gripper has closed near it (opening
  below :data:`CLOSED`, the hand within :data:`NEAR` of it horizontally) it moves with the
  hand: its position is the hand's plus the mean decoded offset over the frames it has been
  held, its rotation is read afresh (a held nut tilts);
* every other column is decoded afresh from every frame (the button's height, which the
  press changes, the drawer's and the nail's travel).
"""

from __future__ import annotations

import numpy as np

from s2r.worlds.memory import StaticSceneMemory
from s2r.worlds.metaworld.tasks import PROPRIO_NAMES, named_width

__all__ = ["MetaWorldMemory", "CLOSED", "NEAR"]

#: The gripper opening (proprioception column 3: 1 open, ~0.45 on the nut's handle, ~0.3 on
#: nothing) below which the gripper counts as closed.
CLOSED = 0.8
#: How close (m, horizontally) the hand must be to a free object to pick it up.
NEAR = 0.06


class MetaWorldMemory(StaticSceneMemory):
    """Per-rollout memory of a Meta-World task's decoded scene (see the module).

    Parameters
    ----------
    spec : TaskSpec
        The task's row: its static and carried columns.
    look_frames : int
        Frames averaged before a static estimate is kept.
    """

    def __init__(self, spec, look_frames: int = 3):
        carried = tuple(spec.carried)
        super().__init__(look_frames, task_width=named_width(spec) - len(PROPRIO_NAMES),
                         proprio_width=len(PROPRIO_NAMES), static=spec.static,
                         carried_position=carried[:3] if carried else None,
                         carried_rotation=carried[3:] if carried else None,
                         hand=slice(0, 3), remember_rotation=False)

    def holds(self, row: np.ndarray, proprio: np.ndarray, k: int) -> bool:
        """The gripper is closed, and it already held the object or closed within
        :data:`NEAR` of where the object was seen."""
        if not proprio[3] < CLOSED:
            return False
        free = self.free_pose(row, k)
        return bool(self._held[k]) or bool(np.linalg.norm(proprio[:3][:2] - free[:2]) <= NEAR)
