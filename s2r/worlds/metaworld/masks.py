"""The task objects' masks of Meta-World frames, from MuJoCo's segmentation rendering.

A task's objects are the bodies of :data:`OBJECT_BODIES` (the objects its observation tracks:
the button, the nut, the peg) with every body attached below them; their geoms are what a
mask covers. The worker draws a mask with one extra render of the frame's scene in
segmentation mode (:meth:`.paint.Painter.segment`: every geom drawn in a colour that is its
id, no lighting), so a mask follows the real look's camera shift exactly, and colours, lights
and textures never change it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["OBJECT_BODIES", "object_geoms"]

#: The bodies of each task's objects (the first object of its observation), by MuJoCo name.
OBJECT_BODIES = {
    "button-press-topdown-v3": ("button",),
    "assembly-v3": ("asmbly_peg",),          # Meta-World's name of the round nut with its handle
    "peg-insert-side-v3": ("peg",),
}


def object_geoms(model, task: str) -> np.ndarray:
    """Ids of the geoms of ``task``'s objects in ``model``: the geoms of the bodies of
    :data:`OBJECT_BODIES` and of every body below them.

    Raises
    ------
    KeyError
        A task without a row, or a body name the model does not have.
    """
    import mujoco

    inside = np.zeros(model.nbody, dtype=bool)
    for name in OBJECT_BODIES[task]:
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        if body < 0:
            raise KeyError(f"Meta-World's {task} has no body {name!r}")
        inside[body] = True
    for body in range(1, model.nbody):       # parents come before their children
        inside[body] |= inside[model.body_parentid[body]]
    return np.flatnonzero(inside[model.geom_bodyid])
