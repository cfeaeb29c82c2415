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

from typing import Iterator, Optional

import numpy as np

from s2r.worlds.base import Demonstration, TaskColumns
from s2r.worlds.metaworld.controls import CONTROLS
from s2r.worlds.metaworld.look import SHIFTS
from s2r.worlds.options import Option, Options, check_options
from s2r.worlds.metaworld.tasks import (ACTION_NAMES, PROPRIO_NAMES, TASKS, TaskSpec, named_width,
                                        state_names)

__all__ = ["CAMERAS", "MetaWorldTask", "MetaWorldWorld", "TaskMix", "WORLD"]

#: Meta-World's fixed cameras (``gripperPOV``/``behindGripper`` ride on the hand and see no
#: scene; not offered).
CAMERAS = ("corner", "corner2", "corner3", "corner4", "topview")
MIN_SIZE, MAX_SIZE = 32, 1024
#: Meta-World ends an episode after 500 of its steps: ``steps * repeat`` stays within it.
MAX_STEPS = 500
#: The identity of this package's code (what steps, draws and grades its tasks): part of every
#: task's identity (:meth:`MetaWorldTask.identity`), so of every cache key of its rollouts,
#: demonstrations and controls. Pinned rather than computed from the source, so an edit that
#: changes nothing a task computes keeps every cache valid. Give it a new value whenever what
#: the tasks compute or draw changes: ``tests/worlds/metaworld/test_world.py`` fails on any
#: change of this package's source (:func:`source_digest`) until the change is recorded there.
CODE_ID = "2cfc233b3a1347e6"


def _source_digest() -> str:
    """The identity of this package's code (:data:`CODE_ID`)."""
    return CODE_ID


def source_digest() -> str:
    """Digest (hex) of this package's source, for the test that guards :data:`CODE_ID`."""
    from pathlib import Path

    from s2r.identity import package_digest

    return package_digest(Path(__file__).resolve().parent)


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
    shift : str
        The kind of shift of its real look (:data:`.look.SHIFTS`).
    """

    world = "metaworld"
    #: One rollout run at a time: on 2 cores, two runs at once (one's encoder pass while the
    #: workers draw the other's frames) cost as much CPU in contention as they won back in
    #: waiting (``bench/bench_overlap.py``; docs/validation.md).
    overlap = 1

    def __init__(self, task: str = "button-press-topdown-v3", camera: str = "corner",
                 repeat: int = 2, shift: str = "all"):
        self.spec: TaskSpec = TASKS[task]
        self.camera, self.repeat, self.shift = camera, int(repeat), shift
        nq, nv = self.spec.model_size
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
        self.gaps = self.spec.gaps
        self.max_steps = MAX_STEPS // self.repeat     # Meta-World refuses a step past 500

    def _key(self, height: int, width: int) -> tuple:
        return (self.spec.name, self.camera, int(height), int(width))

    def identity(self) -> str:
        return self._identity(self.shift)

    def sim_identity(self) -> str:
        """The identity of the ``all`` kind: the kind of shift draws only the real look."""
        return self._identity("all")

    def _identity(self, shift: str) -> str:
        from s2r.identity import digest

        kind = () if shift == "all" else (f"shift {shift}",)   # all: the keys before
        return digest("metaworld-task", self.spec.name, self.camera, str(self.repeat), *kind,
                      _source_digest(), _versions()).hex()[:16]

    def describe(self) -> dict:
        shift = "" if self.shift == "all" else f"real look: {self.shift} shift only; "
        return {"task": f"Meta-World {self.spec.name}: its scripted expert's demonstrations "
                        f"in the sim look; camera {self.camera}; action repeat {self.repeat}; "
                        f"{shift}success = Meta-World's info['success']",
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
        looks = [draw_look(seed, k, self.shift) if real else None for k in range(int(n))]
        return MetaWorldBatch(shared_pool(), self._key(height, width), self.repeat, layouts,
                              looks, gap if real else 0.0,
                              draw_textures(seed, gap, self.shift) if real else None)

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
        group = (self._key(height, width), draw_textures(seed, gap, self.shift) if real else None,
                 draw_look(seed, k, self.shift) if real else None, float(gap) if real else 0.0,
                 [snap])
        return shared_pool().paint([group])[0][0]

    def randomised_frames(self, n: int, steps: int, *, strength: float, seed: int,
                          height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        from s2r.worlds.metaworld.controls import randomised_frames

        frames, states = randomised_frames(self, n, steps, strength=strength, seed=seed,
                                           height=height, width=width)
        return frames, self.columns.task_of(states)

    def memory(self, look_frames: int):
        from s2r.worlds.metaworld.memory import MetaWorldMemory

        return MetaWorldMemory(self.spec, look_frames)


class TaskMix:
    """Several Meta-World tasks whose frames train one control (a
    :class:`~s2r.worlds.base.ControlTask`, :meth:`MetaWorldWorld.control_task` of a tuple of
    task names): :meth:`randomised_frames` splits the episodes between them."""

    def __init__(self, tasks: tuple, camera: str, repeat: int):
        self.tasks = tuple(MetaWorldTask(t, camera, repeat) for t in tasks)

    def randomised_frames(self, n: int, steps: int, *, strength: float, seed: int,
                          height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        out = [t.randomised_frames(-(-int(n) // len(self.tasks)), steps, strength=strength,
                                   seed=seed + i, height=height, width=width)
               for i, t in enumerate(self.tasks)]
        return np.concatenate([f for f, _ in out]), np.concatenate([s for _, s in out])


class MetaWorldWorld:
    """Meta-World (MuJoCo): its tasks' scripted experts in a sim look and a real look (see
    :class:`~s2r.worlds.base.World` and the package)."""

    name = "metaworld"
    title = "Meta-World (MuJoCo)"
    #: Spec options: the task, expert episodes, world steps an episode (each ``repeat``
    #: Meta-World steps), the real look's gap, the seed, the frame size, the camera, the kind
    #: of shift (written in a canonical spec only when not ``all``, so every spec written
    #: before it keeps its one string).
    options = Options(
        Option("task", "button-press-topdown-v3", choices=tuple(TASKS), label="Task",
               help="A Meta-World task: its scripted expert's episodes, drawn in Meta-World's "
                    "own look (sim) and, for the same states, in a shifted look (real)."),
        Option("episodes", 8, low=1, label="Episodes per domain", widget_low=4, widget_high=100,
               help="Expert episodes (4: the fewest the held-out scores take)"),
        Option("repeat", 2, low=1, high=10, label="Action repeat", shown=False,
               help="Meta-World steps a world step"),
        Option("steps", 40, low=2, high=lambda o: MAX_STEPS // o["repeat"],
               label="Steps per episode", widget_low=8, widget_high=250,
               help="World steps (2 Meta-World steps each) an episode records"),
        Option("gap", 0.5, low=0, high=1, label="Sim-to-real gap",
               help="0: real frames render exactly like sim frames; 1: textures, colours, "
                    "lights and the camera's pose and field of view shifted at full strength "
                    "(the physics never changes)."),
        Option("seed", 0, low=0, high=2**32 - 1, label="Seed"),
        Option("height", 96, low=MIN_SIZE, high=MAX_SIZE, label="Frame height"),
        Option("width", 128, low=MIN_SIZE, high=MAX_SIZE, label="Frame width"),
        Option("camera", "corner", choices=CAMERAS, label="Camera", shown=False),
        Option("shift", "all", choices=SHIFTS, label="Kind of shift", written=False,
               help="What the real look shifts: all (colours, textures, lights and camera), "
                    "lighting, texture (surfaces and their colours), camera (its pose), or "
                    "distractors (objects on the table the physics never meets; more and "
                    "larger as the gap grows)."),
        Option("masks", False, label="Task-object masks", shown=False, written=False,
               help="Also draw the task objects' masks (one segmentation render a frame), "
                    "for the object-focus score"),
    )
    #: What the dashboard opens Meta-World with: 6 + 6 expert episodes of 40 steps at
    #: 96 x 128 (480 frames, rendered off-screen at ~50 frames/s a core: seconds on a CPU).
    dashboard_defaults = {"task": "button-press-topdown-v3", "episodes": 6, "steps": 40,
                          "gap": 0.5, "seed": 0, "height": 96, "width": 128}
    #: A frame costs about ten demo frames to draw (physics steps and an off-screen MuJoCo
    #: render: ~50 frames/s a core against the demo's ~500): what bounds a link's work.
    frame_cost = 10.0
    controls = CONTROLS

    @property
    def tasks(self) -> tuple:
        """The tasks a spec's ``task=`` may name: the ``task`` option's choices."""
        return self.options["task"].choices

    def task_title(self, name: str) -> str:
        """What pages call task ``name`` (its row's title)."""
        return TASKS[name].title

    def check_options(self, options: dict) -> dict:
        return check_options(self.options, options)

    def unavailable(self) -> Optional[str]:
        from s2r.worlds.metaworld.availability import missing

        return missing()

    def dataset(self, options: dict, progress=None):
        from s2r.worlds.metaworld.dataset import make_dataset

        return make_dataset(options, progress)

    def task(self, options: Optional[dict] = None) -> MetaWorldTask:
        """The task of ``options`` (its ``task``, ``camera``, ``repeat`` and ``shift``)."""
        o = {**self.options.defaults(), **(options or {})}
        return MetaWorldTask(o["task"], o["camera"], o["repeat"], o["shift"])

    def control_task(self, options: Optional[dict] = None):
        """What a control trains on: the task of ``options``, or the mix of several
        (:class:`TaskMix`) when its ``task`` is a tuple of task names."""
        o = {**self.options.defaults(), **(options or {})}
        if isinstance(o["task"], tuple):
            return TaskMix(o["task"], o["camera"], o["repeat"])
        return self.task(o)


#: The Meta-World world (registered in :data:`s2r.worlds.WORLDS`).
WORLD = MetaWorldWorld()
