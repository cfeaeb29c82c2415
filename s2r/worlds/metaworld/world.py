"""The Meta-World world (:class:`MetaWorldWorld`) and its tasks (:class:`MetaWorldTask`): the
:mod:`s2r.worlds.base` protocol over Meta-World's physics and experts (:mod:`.sim`), the
looks (:mod:`.look`), the renderers in worker processes (:mod:`.paint`, :mod:`.pool`,
:mod:`.batch`), the dataset (:mod:`.dataset`), the deployed policy's scene memory
(:mod:`.memory`) and the controls (:mod:`.controls`).

Nothing here imports MuJoCo or Meta-World: the methods that run them import them, so the
registry imports this world on any machine and a machine without them gets one line naming
what to install (:meth:`MetaWorldWorld.unavailable`).
"""

from __future__ import annotations

import functools
import numbers
from typing import Iterator, Optional

import numpy as np

from s2r.errors import DataError
from s2r.worlds.base import Demonstration, TaskColumns
from s2r.worlds.metaworld.controls import CONTROLS
from s2r.worlds.metaworld.tasks import (ACTION_NAMES, PROPRIO_NAMES, TASKS, TaskSpec, named_width,
                                        state_names)

__all__ = ["CAMERAS", "MetaWorldTask", "MetaWorldWorld", "TaskMix", "WORLD"]

#: Meta-World's fixed cameras (``gripperPOV``/``behindGripper`` ride on the hand and see no
#: scene; not offered).
CAMERAS = ("corner", "corner2", "corner3", "corner4", "topview")
MIN_SIZE, MAX_SIZE = 32, 1024
#: Meta-World ends an episode after 500 of its steps: ``steps * repeat`` stays within it.
MAX_STEPS = 500
#: Snapshot widths (``nq``, ``nv``) of the tasks' models (tests check them against MuJoCo's).
MODEL_SIZES = {"button-press-topdown-v3": (10, 10), "assembly-v3": (16, 15),
               "peg-insert-side-v3": (16, 15)}


@functools.lru_cache(maxsize=None)
def _source_digest() -> str:
    from pathlib import Path

    from s2r.identity import digest

    here = Path(__file__).resolve().parent
    return digest("metaworld", *(f.read_bytes() for f in sorted(here.glob("*.py")))).hex()[:16]


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in ("metaworld", "mujoco"):
        try:
            out.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            out.append(f"{name} missing")
    return ", ".join(out)


class MetaWorldTask:
    """One Meta-World task as the closed loop runs it (see
    :class:`~s2r.worlds.base.SimTask`): its expert's demonstrations, rollouts in worker
    processes, frames of recorded states, randomised frames for the controls.

    Parameters
    ----------
    task : str
        A name of :data:`.tasks.TASKS`.
    camera : str
    repeat : int
        Meta-World steps per world step.
    """

    world = "metaworld"

    def __init__(self, task: str = "button-press-topdown-v3", camera: str = "corner",
                 repeat: int = 2):
        self.spec: TaskSpec = TASKS[task]
        self.camera, self.repeat = camera, int(repeat)
        nq, nv = MODEL_SIZES[task]
        self.nq, self.nv = nq, nv
        names = state_names(self.spec, nq, nv)
        k = named_width(self.spec)
        self.columns = TaskColumns(state_names=names,
                                   action_names=ACTION_NAMES,
                                   proprio=tuple(range(len(PROPRIO_NAMES))),
                                   task=tuple(range(len(PROPRIO_NAMES), k)))
        self.stages = self.spec.stages
        self.horizon = self.spec.horizon(self.repeat)
        self.demo_steps = self.horizon

    def _key(self, height: int, width: int) -> tuple:
        return (self.spec.name, self.camera, int(height), int(width))

    def identity(self) -> str:
        from s2r.identity import digest

        return digest("metaworld-task", self.spec.name, self.camera, str(self.repeat),
                      _source_digest(), _versions()).hex()[:16]

    def describe(self) -> dict:
        return {"task": f"Meta-World {self.spec.name}: its scripted expert's demonstrations "
                        f"in the sim look; camera {self.camera}; action repeat {self.repeat}; "
                        f"success = Meta-World's info['success']",
                "proprioception": "state columns 0..3 (hand position, gripper opening)"}

    def demonstrations(self, n: int, steps: int, *, seed: int, height: int, width: int
                       ) -> Iterator[Demonstration]:
        from s2r.worlds.metaworld import sim
        from s2r.worlds.metaworld.pool import shared_pool

        for e in range(int(n)):
            ep = sim.expert_episode(self.spec, self.repeat, sim.layout(self.spec, seed, "demo", e),
                                    steps)
            frames = shared_pool().paint([(self._key(height, width), None, None, 0.0,
                                           ep.snapshots)])[0]
            yield Demonstration(frames, ep.states, ep.labels, ep.success)

    def state_demonstrations(self, n: int, steps: int, *, seed: int, noise: float = 0.0
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from s2r.worlds.metaworld import sim

        states, actions, episode = [], [], []
        for e in range(int(n)):
            rng = np.random.default_rng([int(seed), sim.STREAMS["state"], e, 1])
            ep = sim.expert_episode(self.spec, self.repeat,
                                    sim.layout(self.spec, seed, "state", e), steps,
                                    noise=noise, rng=rng, snapshots=False)
            states.append(ep.states)
            actions.append(ep.labels)
            episode.append(np.full(len(ep.states), e))
        return (np.concatenate(states), np.concatenate(actions),
                np.concatenate(episode).astype(np.int64))

    def rollouts(self, n: int, *, look: str, gap: float, seed: int, height: int, width: int):
        from s2r.worlds.metaworld import sim
        from s2r.worlds.metaworld.batch import MetaWorldBatch
        from s2r.worlds.metaworld.look import draw_look, draw_textures
        from s2r.worlds.metaworld.pool import shared_pool

        real = look == "real"
        layouts = [sim.layout(self.spec, seed, "rollout", k) for k in range(int(n))]
        looks = [draw_look(seed, k) if real else None for k in range(int(n))]
        return MetaWorldBatch(shared_pool(), self._key(height, width), self.repeat, layouts,
                              looks, gap if real else 0.0,
                              draw_textures(seed, gap) if real else None)

    def render_state(self, state: np.ndarray, *, k: int, look: str, gap: float, seed: int,
                     height: int, width: int, step: int = 0) -> np.ndarray:
        from s2r.worlds.metaworld import sim
        from s2r.worlds.metaworld.look import draw_look, draw_textures
        from s2r.worlds.metaworld.pool import shared_pool

        s = sim.Sim(self.spec, sim.shared_env(self.spec), self.repeat)
        s.reset(sim.layout(self.spec, seed, "rollout", k))
        snap = sim.snapshot_of_state(self.spec, state, sim.layout_fields(s.env.model),
                                     self.nq, self.nv)
        real = look == "real"
        group = (self._key(height, width), draw_textures(seed, gap) if real else None,
                 draw_look(seed, k) if real else None, float(gap) if real else 0.0, [snap])
        return shared_pool().paint([group])[0][0]

    def randomised_frames(self, n: int, steps: int, *, strength: float, seed: int,
                          height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        from s2r.worlds.metaworld.controls import randomised_frames

        frames, states = randomised_frames(self, n, steps, strength=strength, seed=seed,
                                           height=height, width=width)
        return frames, self.columns.task_of(states)

    def memory(self, look_frames: int):
        from s2r.worlds.metaworld.memory import SceneMemory

        return SceneMemory(self.spec, look_frames)


class TaskMix:
    """Several Meta-World tasks whose frames train one control (``World.task`` of the
    controls' task options): :meth:`randomised_frames` splits the episodes between them."""

    def __init__(self, tasks: tuple, camera: str, repeat: int):
        self.tasks = tuple(MetaWorldTask(t, camera, repeat) for t in tasks)

    def randomised_frames(self, n: int, steps: int, *, strength: float, seed: int,
                          height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        out = [t.randomised_frames(-(-int(n) // len(self.tasks)), steps, strength=strength,
                                   seed=seed + i, height=height, width=width)
               for i, t in enumerate(self.tasks)]
        return np.concatenate([f for f, _ in out]), np.concatenate([s for _, s in out])


def _check_int(options: dict, name: str, low: int, high: Optional[int] = None) -> int:
    value = options[name]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise DataError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        where = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise DataError(f"{name} must be {where}, got {value}")
    return int(value)


class MetaWorldWorld:
    """Meta-World (MuJoCo): its tasks' scripted experts in a sim look and a real look (see
    :class:`~s2r.worlds.base.World` and the package)."""

    name = "metaworld"
    title = "Meta-World (MuJoCo)"
    #: Spec options and defaults: the task, expert episodes, world steps an episode (each
    #: ``repeat`` Meta-World steps), the real look's gap, the seed, the frame size, the camera.
    options = {"task": "button-press-topdown-v3", "episodes": 8, "steps": 40, "gap": 0.5,
               "seed": 0, "height": 96, "width": 128, "camera": "corner", "repeat": 2}
    controls = CONTROLS
    tasks = tuple(TASKS)

    def check_options(self, options: dict) -> dict:
        out = dict(options)
        if out["task"] not in TASKS:
            raise DataError(f"task {out['task']!r} is not one of this world's Meta-World tasks "
                            f"({', '.join(TASKS)})")
        if out["camera"] not in CAMERAS:
            raise DataError(f"camera {out['camera']!r} is not one of {', '.join(CAMERAS)}")
        out["episodes"] = _check_int(out, "episodes", 1)
        out["repeat"] = _check_int(out, "repeat", 1, 10)
        out["steps"] = _check_int(out, "steps", 2, MAX_STEPS // out["repeat"])
        out["seed"] = _check_int(out, "seed", 0, 2**32 - 1)
        out["height"] = _check_int(out, "height", MIN_SIZE, MAX_SIZE)
        out["width"] = _check_int(out, "width", MIN_SIZE, MAX_SIZE)
        gap = out["gap"]
        if isinstance(gap, (bool, np.bool_)) or not isinstance(gap, numbers.Real) \
                or not 0.0 <= float(gap) <= 1.0:
            raise DataError(f"gap must be a number in [0, 1], got {gap!r}")
        out["gap"] = float(gap)
        return out

    def unavailable(self) -> Optional[str]:
        from s2r.worlds.metaworld.availability import missing

        return missing()

    def dataset(self, options: dict, progress=None):
        from s2r.worlds.metaworld.dataset import make_dataset

        return make_dataset(options, progress)

    def task(self, options: Optional[dict] = None) -> MetaWorldTask:
        """The task of ``options`` (a tuple of task names: their mix, what the controls are
        trained on, :class:`.controls.TaskMix`)."""
        o = {**self.options, **(options or {})}
        if isinstance(o["task"], tuple):
            return TaskMix(o["task"], o["camera"], o["repeat"])
        return MetaWorldTask(o["task"], o["camera"], o["repeat"])


#: The Meta-World world (registered in :data:`s2r.worlds.WORLDS`).
WORLD = MetaWorldWorld()
