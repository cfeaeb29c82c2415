"""The demo world's dataset: a procedural sim/real robot assembly scene.

A fixed front camera watches a robot arm with a two-finger gripper do FurnitureBench's
``one_leg`` task: a tabletop part lies in a black fixture, furniture legs stand on a work
table; a scripted policy approaches a leg, grasps it, lifts, carries it to a corner hole of the
tabletop, inserts and twists it, releases and retreats. Each frame has a 10-D action (target
position, 6-D rotation, gripper), the robot/part state, its episode and step and a per-pixel
mask of the task-relevant pixels (arm, gripper, parts).

``sim`` frames are flat shaded; ``real`` frames add what separates a photo from a render
(see :mod:`s2r.worlds.demo.realism`), all scaled by one ``gap`` in ``[0, 1]``.

What draws it (:data:`DRAWING_MODULES`, guarded by :data:`RENDER_ID`): this module,
:mod:`.scene` (geometry, camera, kinematics), :mod:`.schema` (state and action columns),
:mod:`.episodes` (scripted episodes), :mod:`.render` (flat shading), :mod:`.realism` (the
real look), :mod:`.sensor` (the camera's sensor), :mod:`.source` (renderer and lazy sources).
"""

from __future__ import annotations

import numpy as np

from s2r.worlds.demo.episodes import run_episode
from s2r.worlds.demo.schema import (ACTION_NAMES, PROPRIO_COLUMNS, PROPRIO_NAMES, STATE_NAMES,
                                    TASK_COLUMNS)
from s2r.worlds.demo.source import DemoRenderer, RenderedImages
from s2r.errors import DataError
from s2r.frameset import FrameSet
from s2r.images import ArrayImages
from s2r.progress import ProgressCallback, report
from s2r.worlds.options import Option, Options, check_options
from s2r.worlds.twolook import two_look_frameset, two_look_index

__all__ = ["make_demo", "demo_renderer", "ACTION_NAMES", "STATE_NAMES", "PROPRIO_COLUMNS",
           "PROPRIO_NAMES", "TASK_COLUMNS", "EAGER_LIMIT_BYTES", "MIN_SIZE", "MAX_SIZE",
           "RENDER_ID", "OPTIONS", "source_digest"]

EAGER_LIMIT_BYTES = 512 * 2 ** 20   # frames above this size are rendered lazily on read
MIN_SIZE, MAX_SIZE = 64, 4096       # allowed frame height/width (pixels)
_TAG_TASK = 10                      # SeedSequence stream of the task (layout, trajectory)


#: ``make_demo``'s keyword arguments, their defaults (in its order) and checks; the world's
#: options (:attr:`.world.DemoWorld.options`). The default size was chosen by measurement
#: (``bench/choose_demo_size.py``).
OPTIONS = Options(
    Option("episodes", 12, low=1, label="Episodes per domain", widget_low=4, widget_high=64,
           help="Episodes of each domain (4: the fewest the held-out scores take)"),
    Option("steps", 24, low=2, label="Steps per episode", widget_low=8, widget_high=64,
           help="Frames an episode records"),
    Option("gap", 0.5, low=0, high=1, label="Sim-to-real gap",
           help="0: real frames render exactly like sim frames; 1: every real-camera effect "
                "at full strength"),
    Option("seed", 0, low=0, label="Seed", widget_high=2**31 - 1),
    Option("paired", False, label="Paired",
           help="Real episode e replays the states of sim episode e (else independent draws)"),
    Option("height", 240, low=MIN_SIZE, high=MAX_SIZE, label="Frame height"),
    Option("width", 320, low=MIN_SIZE, high=MAX_SIZE, label="Frame width"),
)


def check_demo_params(**params) -> dict:
    """Validate :func:`make_demo`'s arguments (:data:`OPTIONS`); ``DataError`` naming the
    parameter otherwise."""
    try:
        return check_options(OPTIONS, params)
    except DataError as exc:
        raise DataError(f"make_demo: {exc}") from None


def _simulate(episodes: int, steps: int, seed: int, paired: bool):
    """Run the scripted policy for both domains; arrays in FrameSet order (sim, then real)."""
    layouts, states, actions, local = {}, [], [], []
    runs = {}
    for d_index, domain in enumerate(("sim", "real")):
        for e in range(episodes):
            task_domain = 0 if paired else d_index
            key = (task_domain, e)
            if key not in runs:
                runs[key] = run_episode(np.random.default_rng([seed, _TAG_TASK, *key]), steps)
            ep = runs[key]
            layouts[(domain, e)] = ep.layout
            states.append(ep.states)
            actions.append(ep.actions)
            local.append(np.full(steps, e))
    domain, episode, step = two_look_index(episodes, steps)
    return {
        "layouts": layouts, "states": np.concatenate(states), "actions": np.concatenate(actions),
        "domain": domain, "local_episode": np.concatenate(local), "episode": episode,
        "step": step, "n": 2 * episodes * steps,
    }


def demo_renderer(*, episodes: int = 8, steps: int = 40, gap: float = 0.5, seed: int = 0,
                  paired: bool = False, height: int = 240, width: int = 320
                  ) -> tuple[DemoRenderer, dict]:
    """The renderer behind :func:`make_demo` and the simulated labels, without any pixels.

    Returns
    -------
    renderer : DemoRenderer
        ``renderer.render(i)`` -> ``(image (H, W, 3) uint8, mask (H, W) uint8)`` of frame ``i``.
    labels : dict
        ``states (N, 22)``, ``actions (N, 10)``, ``domain``, ``episode`` (global ids),
        ``step``, ``local_episode``, ``layouts``, and the validated ``params``.
    """
    params = check_demo_params(episodes=episodes, steps=steps, gap=gap, seed=seed, paired=paired,
                               height=height, width=width)
    sim = _simulate(params["episodes"], params["steps"], params["seed"], params["paired"])
    renderer = DemoRenderer(states=sim["states"], domain=sim["domain"],
                            local_episode=sim["local_episode"], step=sim["step"],
                            layouts=sim["layouts"], seed=params["seed"], gap=params["gap"],
                            height=params["height"], width=params["width"])
    return renderer, {**sim, "params": params}


#: The identity of what the demo draws (pixels, masks, states, actions) for given parameters:
#: part of every demo frame's identity (:func:`demo_identity`), so of every cache key built on
#: demo frames. Pinned rather than computed from the source, so an edit that draws the same
#: pixels keeps every cache valid. Give it a new value whenever what is drawn changes:
#: ``tests/worlds/demo/test_dataset.py`` fails on any change of the :data:`DRAWING_MODULES`'
#: source (:func:`source_digest`) until the change is recorded there.
RENDER_ID = bytes.fromhex("38282faede9176cb0780454abbb5ffdf")


#: The modules of this package that draw the demo's frames and labels (:data:`RENDER_ID`'s
#: guard); every other module of the package runs the task (:meth:`.world.DemoTask.identity`).
DRAWING_MODULES = ("dataset", "episodes", "realism", "render", "scene", "schema", "sensor",
                   "source")


def source_digest() -> str:
    """Digest (hex) of the :data:`DRAWING_MODULES`' source, for the test that guards
    :data:`RENDER_ID`."""
    from pathlib import Path

    from s2r.identity import package_digest

    return package_digest(Path(__file__).parent, only=DRAWING_MODULES)


def demo_identity(params: dict, kind: str) -> bytes:
    """Identity of the demo's ``kind`` ("frames" or "masks") for ``params`` (see
    :mod:`s2r.identity`): the parameters and the renderer code, which fix every pixel."""
    import json

    from s2r.identity import digest

    return digest("demo", kind, json.dumps(params, sort_keys=True), RENDER_ID)


def make_demo(*, episodes: int = 12, steps: int = 24, gap: float = 0.5, seed: int = 0,
              paired: bool = False, height: int = 240, width: int = 320,
              progress: ProgressCallback | None = None) -> FrameSet:
    """Render the procedural sim/real robot assembly dataset.

    Parameters
    ----------
    episodes : int
        Episodes *per domain* (>= 1).
    steps : int
        Frames per episode (>= 2).
    gap : float
        Size of the sim-to-real gap in ``[0, 1]``: 0 renders real frames exactly like sim
        frames of the same state, 1 applies every real-camera effect at full strength.
    seed : int
        Seed (>= 0); the same arguments give byte-identical frames and labels.
    paired : bool
        False (default): sim and real episodes are independent draws (different layouts and
        trajectories). True: real episode ``E + e`` replays the states of sim episode ``e``.
    height, width : int
        Frame size in pixels, each in [64, 4096].
    progress : ProgressCallback, optional
        Called as frames are rendered (eager rendering only).

    Returns
    -------
    FrameSet
        ``N = 2 * episodes * steps`` frames, sim episodes ``0..E-1`` then real ``E..2E-1``;
        ``images (N, H, W, 3) uint8``, ``actions (N, 10)`` (:data:`ACTION_NAMES`),
        ``state (N, 22)`` (:data:`STATE_NAMES`), ``masks (N, H, W)`` in {0, 1}. Frames are
        held in memory when ``N * H * W * 3 <= 512 MiB``, else rendered on each read.

    Raises
    ------
    DataError
        If a parameter is out of range (the message names it).
    """
    renderer, labels = demo_renderer(episodes=episodes, steps=steps, gap=gap, seed=seed,
                                     paired=paired, height=height, width=width)
    p = labels["params"]
    n, h, w = labels["n"], p["height"], p["width"]
    ids = {kind: demo_identity(p, kind) for kind in ("frames", "masks")}
    if n * h * w * 3 <= EAGER_LIMIT_BYTES:
        pixels = np.empty((n, h, w, 3), dtype=np.uint8)
        mask_pixels = np.empty((n, h, w), dtype=np.uint8)
        renderer.render_into(pixels, mask_pixels, progress)
        images = ArrayImages(pixels, identity=ids["frames"])
        masks = ArrayImages(mask_pixels, identity=ids["masks"])
    else:
        images = RenderedImages(renderer, identity=ids["frames"])
        masks = RenderedImages(renderer, masks=True, identity=ids["masks"])
        report(progress, n, n, "demo frames render lazily on read (too large to hold)")
    return two_look_frameset(
        images, actions=labels["actions"], state=labels["states"], episodes=p["episodes"],
        steps=p["steps"], action_names=ACTION_NAMES, name="demo", masks=masks,
        source={"kind": "demo", "episodes": p["episodes"], "steps": p["steps"], "gap": p["gap"],
                "seed": p["seed"], "paired": p["paired"], "height": h, "width": w},
    )
