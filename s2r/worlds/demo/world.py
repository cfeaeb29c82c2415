"""The demo world (:class:`DemoWorld`) and its one task (:class:`DemoTask`): the
:mod:`s2r.worlds.base` protocol over the demo's renderer (:mod:`.dataset`), kinematic task
simulator (:mod:`.task`), reactive expert (:mod:`.expert`), evaluation rollouts
(:mod:`.evaluation`), static-scene memory (:mod:`.memory`), domain-randomised frames
(:mod:`.dr_frames`) and controls (:mod:`.controls`).
"""

from __future__ import annotations

from typing import Iterator, Optional

import numpy as np

from s2r.worlds.base import Demonstration, TaskColumns
from s2r.worlds.demo import evaluation
from s2r.worlds.demo.controls import CONTROLS
from s2r.worlds.options import check_options
from s2r.worlds.demo.schema import ACTION_NAMES, PROPRIO_COLUMNS, STATE_NAMES, TASK_COLUMNS

__all__ = ["DemoTask", "DemoWorld", "WORLD"]


def _columns(s: slice) -> tuple:
    return tuple(range(s.start, s.stop))


#: The identity of what runs the demo's task (the task simulator, expert, evaluation rollouts,
#: memory) and draws its frames: part of every cache key of the demo's rollouts,
#: demonstrations and controls. Pinned rather than computed from the source, so an edit that
#: changes nothing the task computes keeps every cache valid. Give it a new value whenever
#: what the task computes changes, or :data:`.dataset.RENDER_ID` does:
#: ``tests/worlds/demo/test_world.py`` fails on any change of the task's modules
#: (:func:`task_source_digest`) until the change is recorded there.
TASK_ID = "c599cfd8f2195c47"


def task_identity() -> str:
    """The demo task's identity (:data:`TASK_ID`)."""
    return TASK_ID


def task_source_digest() -> str:
    """Digest (hex) of the modules of this package that do not draw (every one but
    :data:`.dataset.DRAWING_MODULES`), for the test that guards :data:`TASK_ID`."""
    from pathlib import Path

    from s2r.identity import package_digest
    from s2r.worlds.demo.dataset import DRAWING_MODULES

    return package_digest(Path(__file__).resolve().parent, exclude=DRAWING_MODULES)


class DemoTask:
    """The demo's closed-loop task: the one-leg insertion with the target hole fixed to the
    tabletop's back-right corner, judged with a compliant gripper and a chamfered hole
    (:data:`.evaluation.EVAL_CONFIG`); see :class:`~s2r.worlds.base.SimTask`."""

    world = "demo"
    columns = TaskColumns(state_names=tuple(STATE_NAMES), action_names=tuple(ACTION_NAMES),
                          proprio=_columns(PROPRIO_COLUMNS), task=_columns(TASK_COLUMNS))
    stages = evaluation.STAGES
    #: The expert needs <= 15 steps; 30 leaves a policy room to correct itself.
    horizon = 30
    demo_steps = 24
    gaps = (0.0, 0.5, 1.0)
    #: An episode of the demo's simulator has no end of its own.
    max_steps = None
    #: Its rollouts are drawn in this process: runs one after another.
    overlap = 1

    def identity(self) -> str:
        return task_identity()

    def sim_identity(self) -> str:
        return self.identity()       # every option changes the sim look too

    def describe(self) -> dict:
        return {"proprioception": "state columns 0..9 (end effector, gripper)",
                "task": "reactive expert demonstrations in the sim look; target hole fixed; "
                        "compliant gripper and chamfered hole (TaskConfig.compliant)"}

    def demonstrations(self, n: int, steps: int, *, seed: int, height: int, width: int
                       ) -> Iterator[Demonstration]:
        return evaluation.demonstrations(n, steps, seed=seed, height=height, width=width)

    def state_demonstrations(self, n: int, steps: int, *, seed: int, noise: float = 0.0
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return evaluation.state_demonstrations(n, steps, seed=seed, noise=noise)

    def rollouts(self, n: int, *, look: str, gap: float, seed: int, height: int, width: int
                 ) -> evaluation.DemoBatch:
        return evaluation.DemoBatch(n, look=look, gap=gap, seed=seed, height=height,
                                    width=width)

    def render_state(self, state: np.ndarray, *, k: int, look: str, gap: float, seed: int,
                     height: int, width: int, step: int = 0) -> np.ndarray:
        return evaluation.render_rollout_frame(state, k=k, look=look, gap=gap, seed=seed,
                                               height=height, width=width, step=step)

    def randomised_frames(self, n: int, steps: int, *, strength: float, seed: int,
                          height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        from s2r.worlds.demo.dr_frames import randomised_frames

        frames, states = randomised_frames(n, steps, strength=strength, seed=seed,
                                           height=height, width=width)
        return frames, self.columns.task_of(states)

    def memory(self, look_frames: int):
        from s2r.worlds.demo.memory import StaticMemory

        return StaticMemory(look_frames)


class DemoWorld:
    """The built-in demo (see :class:`~s2r.worlds.base.World`): a procedural sim/real robot
    assembly scene drawn by s2r's own renderer, its kinematic one-leg task and expert."""

    name = "demo"
    title = "Demo (procedural one-leg assembly)"
    controls = CONTROLS
    #: One task: no ``task=`` option.
    tasks = ()
    _task = DemoTask()

    @property
    def options(self):
        """``make_demo``'s arguments as spec options (:data:`.dataset.OPTIONS`)."""
        from s2r.worlds.demo.dataset import OPTIONS

        return OPTIONS

    #: What the dashboard opens the demo with: 576 frames of 128 x 160 (the default encoders
    #: score them in about a minute on 2 CPU cores, ``bench/bench_app.py``).
    dashboard_defaults = {"episodes": 12, "steps": 24, "gap": 0.5, "seed": 0, "height": 128,
                          "width": 160}

    def check_options(self, options: dict) -> dict:
        return check_options(self.options, options)

    def unavailable(self) -> Optional[str]:
        return None

    def dataset(self, options: dict, progress=None):
        """:func:`.dataset.make_demo` at ``options`` (a FrameSet)."""
        from s2r.worlds.demo.dataset import make_demo

        return make_demo(**options, progress=progress)

    def task(self, options: Optional[dict] = None) -> DemoTask:
        return self._task

    def control_task(self, options: Optional[dict] = None) -> DemoTask:
        """What the controls train on: the one task."""
        return self._task

    def task_title(self, name: Optional[str] = None) -> str:
        """What pages call the one task."""
        return "One-leg insertion"


#: The demo world (registered in :data:`s2r.worlds.WORLDS`).
WORLD = DemoWorld()
