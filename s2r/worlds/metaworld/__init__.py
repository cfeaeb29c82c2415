"""Meta-World (MuJoCo): the physics benchmark on which the field evaluates frozen visual
encoders for control (CortexBench; Burns et al. 2023), as an s2r world.

A task's scripted expert (:mod:`metaworld.policies`) runs in Meta-World's MuJoCo physics;
its frames are drawn in a *sim* look (Meta-World's own appearance) and a *real* look that
shifts colours, textures, lights and the camera by a ``gap`` in [0, 1], never the physics.

Modules:

- :mod:`.tasks`: the tasks, their named state columns, stages and horizons (data);
- :mod:`.sim`: environments, s2r-seeded layouts, the experts, one rollout (:class:`.sim.Sim`);
- :mod:`.look`: the real look; :mod:`.paint`: one off-screen renderer a process;
- :mod:`.worker`, :mod:`.pool`: worker processes that render and step rollouts on every
  core; :mod:`.batch`: a batch of rollouts over them;
- :mod:`.dataset`: ``metaworld:task=...`` as a FrameSet; :mod:`.memory`: the deployed
  policy's scene memory; :mod:`.controls`: ``mw-simcnn-dr0``/``-dr1`` and their frames;
- :mod:`.availability`: what to install; :mod:`.world`: :data:`WORLD`, the protocol.

Importing the package imports neither MuJoCo nor Meta-World.
"""

from s2r.worlds.metaworld.world import WORLD

__all__ = ["WORLD"]
