"""The world protocol: what the dataset adapter, the closed loop and the controls need from a
simulated world, and nothing more.

A world is one package under ``s2r/worlds/`` whose top module defines ``WORLD``, an object
with the :class:`World` attributes and methods, registered with one line in
:data:`s2r.worlds.WORLDS` (like the encoder backends). Everything above this layer -- the
dataset adapter :mod:`s2r.datasets.world`, the closed loop :mod:`s2r.closedloop`, the
``simcnn`` controls of :mod:`s2r.encoders.backends.simcnn` -- reaches a world through that
registry and these types, never by importing a world's package. A world's top module imports
nothing heavy (its simulator and renderer are imported inside the methods that run them), so
the registry can import every world, and a world that cannot run here says why
(:meth:`World.unavailable`) instead of failing at import.

Vocabulary
----------
world
    A simulator and its renderer: ``demo``, the built-in kinematic one-leg task drawn by
    s2r's own renderer; a physics world such as Meta-World (MuJoCo) is another.
options
    A world's dataset-spec options (``demo:episodes=8,gap=0.5``), typed by their defaults
    (:attr:`World.options`). Every world has ``episodes``, ``steps``, ``gap``, ``seed``,
    ``height`` and ``width`` (the dataset adapter bounds the size from them).
task
    What the closed loop runs (:meth:`World.task`): the world at the options that choose a task
    (a Meta-World task name and camera; the demo has one task). Cheap to make: nothing is
    loaded until a method needs it.
look
    ``"sim"`` or ``"real"`` (:data:`LOOKS`). A look changes appearance only, never the physics:
    the same seed gives the same states in every look and gap; the real look at ``gap`` 0 is
    the sim look pixel for pixel (so the closed loop reuses the sim look's rollouts there).
stage
    One of a task's named stages (:attr:`SimTask.stages`), in order; a rollout's progress is
    the furthest stage it reached over the number of stages.

How a MuJoCo world (Meta-World) implements it
---------------------------------------------
:meth:`World.dataset`
    Runs the task's scripted expert for ``episodes`` episodes, recording ``qpos``/``qvel``
    (the physics snapshot) beside the observation and action of every step; renders each
    snapshot in the sim look and, with the model's appearance fields shifted by ``gap``
    (``geom_rgba``, ``mat_rgba``, textures, lights, camera pose -- never a field the physics
    reads), in the real look. Frames come back as a lazy image source that restores a
    snapshot into ``MjData`` and renders it, so a large dataset is never held in memory.
:meth:`SimTask.rollouts`
    A :class:`RolloutBatch` whose ``n`` environments live in worker processes (one renderer a
    process, the model reused across episodes); ``frames``/``states``/``step`` send only the
    rows asked for, so the closed loop's one-batch-a-step loop spreads over the cores.
    ``close`` ends the workers and their renderers (EGL wants an explicit close).
:meth:`SimTask.render_state`
    The state a closed loop records must be enough to redraw its frame: a MuJoCo world
    records the physics snapshot in its states (or keeps it beside them), restores it and
    renders it in the asked look.
:meth:`SimTask.demonstrations`, :meth:`SimTask.state_demonstrations`
    The world's own scripted expert, stopped at the first ``info["success"]``; the state-only
    version steps the physics without rendering (hundreds of episodes cost seconds).
:meth:`SimTask.randomised_frames`
    Expert episodes rendered with the real look's appearance shifts at a gap drawn from
    ``[0, strength]``, from look seeds far from the ones validation uses.
:meth:`SimTask.identity`
    A digest of the task's options, the world's source and the simulator's version (a new
    ``mujoco`` or ``metaworld`` release is a new identity: its rollouts are recomputed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Mapping, Optional, Protocol, Sequence, Union

import numpy as np

if TYPE_CHECKING:           # annotations only: the registry imports this module and stays light
    from s2r.frameset import FrameSet
    from s2r.progress import ProgressCallback
    from s2r.worlds.options import Options

__all__ = ["LOOKS", "Control", "ControlTask", "Demonstration", "RolloutBatch", "SceneMemory",
           "SimTask", "TaskColumns", "World"]

#: The two looks every world draws.
LOOKS = ("sim", "real")


@dataclass
class Demonstration:
    """One expert episode in the sim look.

    Attributes
    ----------
    frames : ndarray (T, H, W, 3) uint8
    states : ndarray (T, S) float32
        The state each frame shows (:attr:`TaskColumns.state_names`).
    actions : ndarray (T, A) float32
        The expert's action at each frame (:attr:`TaskColumns.action_names`).
    success : bool
        Whether the expert finished the task within the episode.
    """

    frames: np.ndarray
    states: np.ndarray
    actions: np.ndarray
    success: bool


def _columns_index(columns: tuple) -> Union[slice, list]:
    """A slice when ``columns`` are contiguous (a view, as a hand-written slice gives), else
    the list of indices."""
    if columns and tuple(columns) == tuple(range(columns[0], columns[-1] + 1)):
        return slice(columns[0], columns[-1] + 1)
    return list(columns)


@dataclass(frozen=True)
class TaskColumns:
    """The names of a task's state and action columns, and what the state's columns are.

    Attributes
    ----------
    state_names : tuple of str (S,)
    action_names : tuple of str (A,)
    proprio : tuple of int
        State columns of the robot's own state (proprioception): what a policy reads beside
        the frame.
    task : tuple of int
        State columns of the task state the camera must supply (object and goal poses): what
        the two-stage policy's probe reads from the embedding and the controls learn.
    """

    state_names: tuple
    action_names: tuple
    proprio: tuple
    task: tuple

    def proprio_of(self, states: np.ndarray) -> np.ndarray:
        """``states (N, S)`` -> the proprioception ``(N, len(proprio))``."""
        return np.asarray(states)[:, _columns_index(self.proprio)]

    def task_of(self, states: np.ndarray) -> np.ndarray:
        """``states (N, S)`` -> the task state ``(N, len(task))``."""
        return np.asarray(states)[:, _columns_index(self.task)]


@dataclass(frozen=True)
class Control:
    """A built-in ``simcnn`` control of a world: a small CNN trained on the world's sim frames
    with appearance randomisation ``strength`` to predict the task state (its transfer order
    is known by construction: more randomisation, a smaller sim-to-real gap). The backend
    (:mod:`s2r.encoders.backends.simcnn`) trains it on first use from the
    :meth:`ControlTask.randomised_frames` of :meth:`World.control_task` and stores this
    recipe in its weights file.

    Attributes
    ----------
    id : str
        Encoder id (``"simcnn-dr0"``); the weights file is ``{id}.v{version}.safetensors``.
    strength : float in [0, 1]
    version : int
        Bump it with any change of how the control is trained, so a file trained the old way
        is never reused.
    episodes, steps, epochs, seed : int
        Expert episodes, most frames an episode, training epochs, seed.
    state_columns : tuple of int
        The task-state columns the control predicts, as its recipe records them (the demo:
        ``(10, 22)``, i.e. ``states[:, 10:22]``).
    task : tuple of (str, object)
        The options of :meth:`World.control_task` (empty: the world's one task).
    height, width : int
        Frame size of the training episodes (resized like every frame the encoder embeds).
    minutes : int
        How many minutes its training takes on a 2-core machine (what the first-use note and
        the messages say: :mod:`s2r.encoders.first_use`): measured, unless
        ``minutes_estimated``.
    minutes_estimated : bool
        ``minutes`` is an estimate (scaled from measured controls), not a measurement.
    name, pretraining_data, notes : str
        The registry entry's text.
    dataset, targets_names : str
        What the weights file records it was trained on.
    recognise_unrecorded : bool
        Whether files written before recipes were stored (under this version's name, with
        matching fields) are recognised (only the demo's controls have such files).
    default : bool
        Whether ``validate`` ranks it by default
        (:func:`s2r.closedloop.validation.default_encoders`); False for controls only a study
        ranks (:func:`~s2r.closedloop.validation.study_encoders`). Not part of the recipe.
    """

    id: str
    strength: float
    version: int
    episodes: int
    steps: int
    epochs: int
    seed: int
    state_columns: tuple
    task: tuple = ()
    height: int = 96
    width: int = 128
    minutes: int = 15
    name: str = ""
    pretraining_data: str = ""
    notes: str = ""
    dataset: str = ""
    targets_names: str = ""
    recognise_unrecorded: bool = False
    default: bool = True
    minutes_estimated: bool = False


class RolloutBatch(Protocol):
    """``n`` rollouts of one task stepped together (the closed loop's inner loop).

    Rollout ``k`` starts from layout ``k`` of the batch's seed, the same in every look and
    gap. ``rows`` are rollout indices in ``[0, n)``; the closed loop asks for the rollouts
    still running.
    """

    n: int

    def frames(self, rows: Sequence[int]) -> np.ndarray:
        """``(B, H, W, 3) uint8``: the frames of rollouts ``rows`` now, in the batch's look."""

    def states(self, rows: Sequence[int]) -> np.ndarray:
        """``(B, S) float32``: their states now."""

    def step(self, rows: Sequence[int], actions: np.ndarray) -> None:
        """Apply ``actions (B, A)`` to rollouts ``rows``."""

    def success(self, rows: Sequence[int]) -> np.ndarray:
        """``(B,) bool``: whether each has succeeded now (the world's own criterion)."""

    def stage(self, rows: Sequence[int]) -> np.ndarray:
        """``(B,) int``: each one's stage now, ``0..len(stages)`` (the last: success)."""

    def close(self) -> None:
        """Release renderers and worker processes."""


class SceneMemory(Protocol):
    """A deployed policy's memory of the static scene (the two-stage policy's option)."""

    def reset(self, n_rollouts: int) -> None:
        """Forget everything; ``n_rollouts`` rollouts start."""

    def __call__(self, task: np.ndarray, proprio: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The remembered task state ``(B, K)`` of rollouts ``rows`` this step, from the task
        state ``(B, K)`` decoded from their frames and their proprioception ``(B, P)``."""


class ControlTask(Protocol):
    """What a world's ``simcnn`` control trains on (:meth:`World.control_task`): one task, or
    several whose frames one control learns."""

    def randomised_frames(self, n: int, steps: int, *, strength: float, seed: int,
                          height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Expert episodes rendered with appearance randomisation ``strength`` in [0, 1]
        (looks from other seeds than validation's): ``(frames (N, H, W, 3) uint8, task
        state (N, K) float32)``, the controls' training data."""


class SimTask(Protocol):
    """A world's task: everything the closed loop and the controls need.

    Attributes
    ----------
    world : str
        The world's registry name.
    columns : TaskColumns
    stages : tuple of str
        The task's stages in order; the last is success.
    horizon, demo_steps : int
        The closed loop's defaults: most steps a rollout, most frames a demonstration (about
        twice the expert's length).
    max_steps : int or None
        Most steps an episode of the simulator can take (a rollout's horizon and a
        demonstration's length are refused beyond it, before any work); None: no limit.
    gaps : tuple of float
        The real gaps a validation runs by default: 0 and gaps where image encoders' real
        success differs (measured), so a default validation ranks something.
    overlap : int
        How many rollout runs of one policy may step at once
        (:func:`s2r.closedloop.overlap.run_overlapped`; the outcomes are the same): 1 where a
        run's steps hold the process (drawing in it); more only where it was measured to pay
        (rollouts stepped in worker processes, one run's encoder pass filling the time
        another's frames are drawn, on enough cores: ``bench/bench_overlap.py``).
    """

    world: str
    columns: TaskColumns
    stages: tuple
    horizon: int
    demo_steps: int
    max_steps: Optional[int]
    gaps: tuple
    overlap: int

    def identity(self) -> str:
        """Digest (hex) of what draws the task's frames and runs it (its options, the world's
        source, the simulator's version): part of every cache key of its rollouts,
        demonstrations and controls."""

    def sim_identity(self) -> str:
        """Digest (hex) of what draws the task's sim look and runs it: :meth:`identity` less
        the options that change only the real look (Meta-World's kind of shift). The key of
        its demonstrations, controls and sim-look rollouts, so tasks that differ only in their
        real look share them."""

    def describe(self) -> dict:
        """What a validation report says of the task: ``{"task": str, "proprioception":
        str}``."""

    def demonstrations(self, n: int, steps: int, *, seed: int, height: int, width: int
                       ) -> Iterator[Demonstration]:
        """``n`` expert episodes of at most ``steps`` frames, rendered in the sim look; each
        ends with the action that completes the task."""

    def state_demonstrations(self, n: int, steps: int, *, seed: int, noise: float = 0.0
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Expert episodes as states only, nothing rendered, the executed actions perturbed
        by ``noise`` (DART), the labels clean: ``(states (N, S) float32, actions (N, A)
        float32, episode (N,) int64)``."""

    def rollouts(self, n: int, *, look: str, gap: float, seed: int, height: int, width: int
                 ) -> RolloutBatch:
        """``n`` fresh rollouts from the evaluation layouts of ``seed`` in ``look`` (the real
        look at ``gap``; rollout ``k``'s real look is the world's real episode ``k``)."""

    def render_state(self, state: np.ndarray, *, k: int, look: str, gap: float, seed: int,
                     height: int, width: int, step: int = 0) -> np.ndarray:
        """Rollout ``k``'s frame ``(H, W, 3) uint8`` of a recorded ``state (S,)`` in ``look``,
        as :meth:`rollouts` draws it at ``step`` (a sim/real pair for saliency)."""

    def randomised_frames(self, n: int, steps: int, *, strength: float, seed: int,
                          height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Expert episodes rendered with appearance randomisation ``strength`` in [0, 1]
        (looks from other seeds than validation's): ``(frames (N, H, W, 3) uint8, task
        state (N, K) float32)``, the controls' training data."""

    def memory(self, look_frames: int) -> Optional[SceneMemory]:
        """The deployed two-stage policy's memory of the static scene, or None when the task
        has none."""


class World(Protocol):
    """One simulated world (see the module).

    Attributes
    ----------
    name : str
        Its registry name and dataset-spec prefix (``demo`` in ``demo:gap=0.5``).
    title : str
        What pages call it.
    options : Options
        Its dataset-spec options, declared as data (:mod:`s2r.worlds.options`: default, type,
        bounds or choices, label, help).
    dashboard_defaults : Mapping[str, object]
        The options the dashboard opens the world with where they differ from the library's
        defaults (a smaller dataset that draws and embeds in seconds).
    controls : Mapping[str, Control]
        Its built-in ``simcnn`` controls by id.
    tasks : tuple of str
        The tasks a spec's ``task=`` option may name (the option's choices); empty for a
        world of one task.
    frame_cost : float, optional
        What a frame (a dataset frame, a rollout step) costs to draw, relative to a demo
        frame (undeclared: 1.0, the demo's): a dashboard link's budget is divided by it
        (:func:`s2r.worlds.frame_cost`).
    """

    name: str
    title: str
    options: "Options"
    dashboard_defaults: Mapping[str, object]
    controls: Mapping[str, Control]
    tasks: tuple

    def task_title(self, name: Optional[str] = None) -> str:
        """What pages call task ``name`` (one of :attr:`tasks`; a one-task world's task when
        None)."""

    def check_options(self, options: dict) -> dict:
        """Validated options (every key of :attr:`options`); :class:`~s2r.errors.DataError`
        naming the option and what it must be otherwise (most worlds return
        :func:`s2r.worlds.options.check_options` of their declaration)."""

    def unavailable(self) -> Optional[str]:
        """None when the world can run here, else one line naming what to install."""

    def dataset(self, options: dict, progress: Optional["ProgressCallback"] = None
                ) -> "FrameSet":
        """The world's expert episodes at checked ``options``: sim episodes, then real ones at
        ``options["gap"]`` (``2 * episodes * steps`` frames)."""

    def task(self, options: dict) -> SimTask:
        """The task the closed loop runs at checked ``options`` (only the options that choose
        a task matter)."""

    def control_task(self, options: dict) -> ControlTask:
        """What a built-in control trains on at its recipe's options
        (:attr:`Control.task`): a task, or a mix of several (its frames split between them)."""

