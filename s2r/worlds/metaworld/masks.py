"""The task objects' masks of Meta-World frames, from MuJoCo's segmentation rendering.

A task's objects are the bodies of its row (:attr:`.tasks.TaskSpec.bodies`: the objects its
observation tracks, e.g. the button, the nut, the peg) with every body attached below them;
their geoms are what a mask covers. The worker draws a mask with one extra render of the
frame's scene in segmentation mode (:meth:`.paint.Painter.segment`: every geom drawn in a
colour that is its id, no lighting), so a mask follows the real look's camera shift exactly,
and colours, lights and textures never change it.
"""

from __future__ import annotations

import numpy as np

from s2r.worlds.metaworld.tasks import TASKS

__all__ = ["object_geoms"]

def object_geoms(model, task: str) -> np.ndarray:
    """Ids of the geoms of ``task``'s objects in ``model``: the geoms of the bodies of its row
    (:attr:`.tasks.TaskSpec.bodies`) and of every body below them.

    Raises
    ------
    KeyError
        A task without a row, or a body name the model does not have.
    """
    import mujoco

    inside = np.zeros(model.nbody, dtype=bool)
    for name in TASKS[task].bodies:
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        if body < 0:
            raise KeyError(f"Meta-World's {task} has no body {name!r}")
        inside[body] = True
    for body in range(1, model.nbody):       # parents come before their children
        inside[body] |= inside[model.body_parentid[body]]
    return np.flatnonzero(inside[model.geom_bodyid])
