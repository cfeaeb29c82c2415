"""The built-in demo world: a procedural sim/real robot assembly scene, its kinematic one-leg
task, expert and controls -- everything of the demo in one package.

A fixed front camera watches a robot arm with a two-finger gripper do FurnitureBench's
``one_leg`` task (:mod:`.dataset`). ``sim`` frames are flat shaded; ``real`` frames add what
separates a photo from a render, scaled by one ``gap`` in ``[0, 1]``.

Modules:

- drawing (:data:`.dataset.DRAWING_MODULES`, their pixels named by
  :data:`.dataset.RENDER_ID`): :mod:`.dataset` (``make_demo``), :mod:`.scene` (geometry,
  camera, kinematics), :mod:`.schema` (state and action columns), :mod:`.episodes` (scripted
  episodes), :mod:`.render` (flat shading),
  :mod:`.realism` (the real look), :mod:`.sensor`, :mod:`.source` (renderer, lazy sources);
- the task: :mod:`.task` (the kinematic simulator), :mod:`.geometry`, :mod:`.expert` (the
  reactive expert and the evaluation layouts), :mod:`.scripted` (the dataset's scripted
  policy, closed loop), :mod:`.evaluation` (stages, demonstrations, batched rollouts),
  :mod:`.memory` (the deployed policy's static-scene memory), :mod:`.dr_frames` and
  :mod:`.controls` (the ``simcnn-dr*`` controls);
- :mod:`.world`: :data:`WORLD`, the :mod:`s2r.worlds.base` protocol over all of it.

Importing the package imports the world only (no renderer, no PIL): what draws is imported
when something is drawn. The demo's dataset API is :mod:`.dataset` (``from
s2r.worlds.demo.dataset import make_demo``).
"""

from s2r.worlds.demo.world import WORLD

__all__ = ["WORLD"]
