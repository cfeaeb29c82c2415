"""The Meta-World tasks this world runs: their state columns, expert, stages and horizons
(data and small pure functions; nothing here imports MuJoCo or Meta-World).

A task's **state** (:func:`state_names`) is Meta-World's own observation of the current step,
named and without its zero padding or the previous step's copy -- the hand position, the
gripper opening, every object's position and quaternion, the goal position -- followed by the
physics snapshot that redraws the frame (``qpos``, ``qvel``, the mocap body's pose): a
recorded state is enough to render its frame again (:meth:`~s2r.worlds.base.SimTask.render_state`).
The dataset's state (:mod:`.dataset`) is the same (its names in the FrameSet's ``source``).

**Stages** grade a rollout's progress (:func:`stage_of`): each task names its own, in order,
the last one Meta-World's ``info["success"]``. Thresholds are the experts' own switching
rules (:mod:`metaworld.policies`) or Meta-World's reward terms, so the scripted expert passes
every stage in order (tested).

**Horizons** count *world steps*: one world step applies the action for ``repeat`` Meta-World
steps (2 by default, the action repeat of DrQ-v2's Meta-World runs); they cap a rollout near
the expert's own length (:data:`HORIZON_STEPS`: about 1.3x the longest of 30 expert episodes,
measured: button-press-topdown 75 Meta-World steps, assembly 96, drawer-open 92, hammer 80;
where a few layouts take far longer, about 1.3x the 90th percentile: peg-insert-side 227 at
the 99th percentile, 144 at the 90th; bin-picking 238 at most, 149 at the 90th;
docs/metaworld.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["TASKS", "TaskSpec", "HORIZON_STEPS", "ACTION_NAMES", "PROPRIO_NAMES",
           "named_width", "state_names", "stage_of", "stage_start", "task_names"]

#: The 4-D action: the hand's displacement (x, y, z; 1 = 1 cm a Meta-World step) and the
#: gripper's effort (-1 open, 1 closed), each in [-1, 1].
ACTION_NAMES = ("hand dx", "hand dy", "hand dz", "gripper effort")
#: The robot's own state (proprioception): what a policy reads beside the frame.
PROPRIO_NAMES = ("hand x", "hand y", "hand z", "gripper opening")


@dataclass(frozen=True)
class TaskSpec:
    """One Meta-World task as this world runs it.

    Attributes
    ----------
    name : str
        Meta-World's name (``"assembly-v3"``).
    expert : str
        Its scripted expert's class in :mod:`metaworld.policies`.
    objects : tuple of str
        The objects of its observation, in order (each a position and a quaternion).
    quaternion : str
        How the observation writes an object's quaternion: ``"wxyz"`` (MuJoCo's) or
        ``"xyzw"`` (SciPy's, peg-insert-side).
    stages : tuple of str
        Its stages in order; the last is success.
    horizon_steps : int
        Most Meta-World steps a rollout (and a demonstration) takes: the closed loop's horizon
        is this over the action repeat, rounded up.
    title : str
        What pages call it.
    stage : callable
        ``stage(env, obs (39,) float64, info, start) -> int``: the highest of its stages the
        environment's current step satisfies (0: none; ``len(stages)``: success).
    start : callable
        ``start(env, obs) -> dict``: what its stages compare with, read right after a reset.
    model_size : tuple of int
        ``(nq, nv)`` of its MuJoCo model: the widths of the physics snapshot in its state
        (tests check them against MuJoCo's).
    static : tuple of int
        Columns of its task state (object pose and goal, :func:`state_names` from column 4)
        nothing moves before the task is done: the deployed policy's memory keeps the mean
        of their first decoded values (:mod:`.memory`).
    carried : tuple of int
        Columns of the task state of the object the hand carries (position 3, quaternion 4;
        empty: the task carries nothing): the memory moves it with the hand while held.
    bodies : tuple of str
        The MuJoCo bodies of its objects: their geoms, with those of every body below them,
        are what the task-object masks cover (:mod:`.masks`).
    gaps : tuple of float
        The real gaps a validation of it runs by default: 0 (the sim look's twin) and gaps
        where image encoders' real success differs, chosen from a measured sweep (docs:
        metaworld.md, "Gaps that inform"); beyond them every image policy fails.
    """

    name: str
    expert: str
    objects: tuple
    quaternion: str
    stages: tuple
    horizon_steps: int
    title: str
    stage: Callable
    start: Callable
    model_size: tuple
    static: tuple
    carried: tuple = ()
    bodies: tuple = ()
    gaps: tuple = (0.0, 0.5, 1.0)

    def horizon(self, repeat: int) -> int:
        """The horizon in world steps of ``repeat`` Meta-World steps."""
        return math.ceil(self.horizon_steps / int(repeat))


# ---- stages -----------------------------------------------------------------------------------
def _button(env, obs, info, start) -> int:
    """1 the hand within 4 cm of the button horizontally (the expert then presses), 2 the
    fingertips within 3 cm of it (Meta-World's "press" reward starts), 3 the button half way
    down, 4 pressed (success)."""
    if info["success"]:
        return 4
    if float(info["obj_to_target"]) <= 0.5 * (start["obj_to_target"] + 0.024):
        return 3
    tcp_to_button = float(np.linalg.norm(obs[4:7] - env.tcp_center))
    if tcp_to_button <= 0.03:
        return 2
    return 1 if float(np.linalg.norm(obs[:2] - obs[4:6])) <= 0.04 else 0


def _assembly(env, obs, info, start) -> int:
    """1 the hand at the handle (within 2 cm of the expert's grasp point horizontally, 12 cm
    above it at most: the expert closes the gripper), 2 the nut lifted 3 cm off the table, 3 the
    nut's centre within 2 cm of the peg horizontally while lifted, 4 on the peg (success)."""
    if info["success"]:
        return 4
    centre = env._get_site_pos("RoundNut")
    lifted = float(centre[2]) >= start["nut_z"] + 0.03
    if lifted and float(np.linalg.norm(centre[:2] - obs[36:38])) <= 0.02:
        return 3
    if lifted:
        return 2
    grasp = obs[4:7] + np.array([-0.02, 0.0, 0.0])
    at = (float(np.linalg.norm(obs[:2] - grasp[:2])) <= 0.02
          and abs(float(obs[2] - grasp[2])) <= 0.12)
    return 1 if at else 0


def _peg(env, obs, info, start) -> int:
    """1 the fingertips within 3 cm of the peg (Meta-World's ``near_object``), 2 the peg
    lifted 3 cm, 3 its head within 20 cm of the hole while lifted (Meta-World's scaled
    distance; success is 7 cm), 4 inserted (success)."""
    if info["success"]:
        return 4
    lifted = float(obs[6]) > start["peg_z"] + 0.03
    if lifted and float(info["obj_to_target"]) <= 0.2:
        return 3
    if lifted:
        return 2
    return 1 if info["near_object"] else 0


def _bin(env, obs, info, start) -> int:
    """1 the hand at the cube (within 2 cm of the expert's grasp point, 3 cm above the cube's
    centre with its y kept within 2.5 cm of the bin's centre line, in each direction: the expert
    closes the gripper), 2 the cube lifted 2 cm (Meta-World's ``lifted``), 3 its centre within
    5 cm of the target bin's goal horizontally while lifted (success's radius), 4 in the bin
    (success). Thresholds: ``SawyerBinPickingV3Policy``'s switching rules and
    ``SawyerBinPickingEnvV3.compute_reward``'s terms."""
    if info["success"]:
        return 4
    cube = obs[4:7]
    lifted = float(cube[2]) > start["cube_z"] + 0.02
    if lifted and float(np.linalg.norm(cube[:2] - obs[36:38])) <= 0.05:
        return 3
    if lifted:
        return 2
    grasp = cube + np.array([0.0, 0.0, 0.03])
    grasp[1] = min(max(float(grasp[1]), 0.675), 0.725)
    at = (float(np.linalg.norm(obs[:2] - grasp[:2])) <= 0.02
          and abs(float(obs[2] - grasp[2])) <= 0.02)
    return 1 if at else 0


def _drawer(env, obs, info, start) -> int:
    """1 the hand above the handle (within 6 cm horizontally: the expert then drops), 2 at it
    (also within 4 cm of 2 cm below the handle's height: the expert then pulls), 3 the drawer
    half open (the handle half way from its start to success's 3 cm from the goal), 4 open
    (success). Thresholds: ``SawyerDrawerOpenV3Policy``'s switching rules and
    ``SawyerDrawerOpenEnvV3``'s success."""
    if info["success"]:
        return 4
    if float(info["obj_to_target"]) <= 0.5 * (start["obj_to_target"] + 0.03):
        return 3
    handle = obs[4:7] + np.array([0.0, 0.0, -0.02])
    above = float(np.linalg.norm(obs[:2] - handle[:2])) <= 0.06
    if above and abs(float(obs[2] - handle[2])) <= 0.04:
        return 2
    return 1 if above else 0


def _hammer(env, obs, info, start) -> int:
    """1 the hand at the handle (within 4 cm of the expert's grasp point horizontally, 4 cm
    behind the hammer's centre, and 5 cm above it at most: the expert has closed the gripper
    and stops descending), 2 the hammer lifted 3 cm off the table (its centre above 6 cm; it
    rests at 2.8 cm, the reset puts it at 0, so nothing is read at the reset), 3 its head
    (Meta-World's: 16 cm along and 6 cm across from the centre) within 10 cm of the goal
    while lifted (the nail starts to move), 4 the nail driven in (success). Thresholds:
    ``SawyerHammerV3Policy``'s switching rules and ``SawyerHammerEnvV3.compute_reward``'s
    terms."""
    if info["success"]:
        return 4
    hammer = obs[4:7]
    lifted = float(hammer[2]) > 0.06
    head = hammer + np.array([0.16, 0.06, 0.0])
    if lifted and float(np.linalg.norm(head - obs[36:39])) <= 0.10:
        return 3
    if lifted:
        return 2
    grasp = hammer + np.array([-0.04, 0.0, -0.01])
    at = (float(np.linalg.norm(obs[:2] - grasp[:2])) <= 0.04
          and float(obs[2] - grasp[2]) <= 0.05)
    return 1 if at else 0


def _button_start(env, obs) -> dict:
    """The button's travel to its target (half of it is stage 3)."""
    start = env._get_site_pos("buttonStart")[2]
    return {"obj_to_target": float(abs(env._target_pos[2] - start))}


def _assembly_start(env, obs) -> dict:
    """The nut's height on the table."""
    return {"nut_z": float(env._get_site_pos("RoundNut")[2])}


def _peg_start(env, obs) -> dict:
    """The peg's height on the table."""
    return {"peg_z": float(obs[6])}


def _bin_start(env, obs) -> dict:
    """The cube's height on the table."""
    return {"cube_z": float(obs[6])}


def _drawer_start(env, obs) -> dict:
    """The handle's distance to the goal (half of its travel to success is stage 3)."""
    return {"obj_to_target": float(np.linalg.norm(obs[4:7] - obs[36:39]))}


def _nothing(env, obs) -> dict:
    """Nothing: the task's stages compare with fixed heights."""
    return {}


#: The tasks, one row each: everything a task is to this world is its row.
TASKS = {t.name: t for t in (
    TaskSpec("button-press-topdown-v3", "SawyerButtonPressTopdownV3Policy", ("button",),
             "wxyz", ("above the button", "at the button", "half pressed", "pressed"), 100,
             "Button press (top down)", stage=_button, start=_button_start,
             model_size=(10, 10), static=(0, 1, 3, 4, 5, 6, 7, 8, 9), bodies=("button",)),
    TaskSpec("assembly-v3", "SawyerAssemblyV3Policy", ("nut handle",), "wxyz",
             ("at the handle", "lifted", "above the peg", "on the peg"), 120,
             "Assembly (nut onto a peg)", stage=_assembly, start=_assembly_start,
             model_size=(16, 15), static=(7, 8, 9), carried=(0, 1, 2, 3, 4, 5, 6),
             bodies=("asmbly_peg",), gaps=(0.0, 0.1, 0.25)),  # the nut, in Meta-World's name
    TaskSpec("peg-insert-side-v3", "SawyerPegInsertionSideV3Policy", ("peg",), "xyzw",
             ("at the peg", "lifted", "near the hole", "inserted"), 180,
             "Peg insertion (side)", stage=_peg, start=_peg_start,
             model_size=(16, 15), static=(7, 8, 9), carried=(0, 1, 2, 3, 4, 5, 6),
             bodies=("peg",)),
    TaskSpec("bin-picking-v3", "SawyerBinPickingV3Policy", ("cube",), "wxyz",
             ("at the cube", "lifted", "above the bin", "in the bin"), 200,
             "Bin picking (cube into a bin)", stage=_bin, start=_bin_start,
             model_size=(16, 15), static=(7, 8, 9), carried=(0, 1, 2, 3, 4, 5, 6),
             bodies=("obj",)),
    TaskSpec("drawer-open-v3", "SawyerDrawerOpenV3Policy", ("handle",), "wxyz",
             ("above the handle", "at the handle", "half open", "open"), 120,
             "Drawer opening", stage=_drawer, start=_drawer_start,
             model_size=(10, 10), static=(0, 2, 3, 4, 5, 6, 7, 8, 9),
             bodies=("drawer_link",)),                  # the drawer with its handle
    TaskSpec("hammer-v3", "SawyerHammerV3Policy", ("hammer", "nail"), "wxyz",
             ("at the handle", "lifted", "at the nail", "nail in"), 104,
             "Hammer (drive a nail in)", stage=_hammer, start=_nothing,
             model_size=(17, 16), static=(7, 9, 10, 11, 12, 13, 14, 15, 16),
             carried=(0, 1, 2, 3, 4, 5, 6), bodies=("hammerbody", "nail_link"),
             gaps=(0.0, 0.05, 0.1)),
)}
#: Most Meta-World steps a rollout takes, per task (:attr:`TaskSpec.horizon_steps`).
HORIZON_STEPS = {name: t.horizon_steps for name, t in TASKS.items()}


def task_names() -> tuple:
    """The tasks this world runs, in order."""
    return tuple(TASKS)


def _object_names(spec: TaskSpec) -> list:
    quat = ("qw", "qx", "qy", "qz") if spec.quaternion == "wxyz" else ("qx", "qy", "qz", "qw")
    return [f"{obj} {axis}" for obj in spec.objects for axis in ("x", "y", "z", *quat)]


def named_width(spec: TaskSpec) -> int:
    """How many named columns the task's state starts with (proprioception, objects, goal)."""
    return len(PROPRIO_NAMES) + 7 * len(spec.objects) + 3


def state_names(spec: TaskSpec, nq: int, nv: int) -> tuple:
    """The names of the task's state columns: the named observation, then the snapshot
    (``nq`` joint positions, ``nv`` velocities, the mocap body's position and quaternion)."""
    return (*PROPRIO_NAMES, *_object_names(spec), "goal x", "goal y", "goal z",
            *(f"qpos {i}" for i in range(nq)), *(f"qvel {i}" for i in range(nv)),
            "mocap x", "mocap y", "mocap z", "mocap qw", "mocap qx", "mocap qy", "mocap qz")


def named_state(spec: TaskSpec, obs: np.ndarray) -> np.ndarray:
    """The named columns ``(named_width,)`` of Meta-World's 39-D observation ``obs``: its
    current step (hand, gripper, the task's objects) and its goal."""
    obs = np.asarray(obs, dtype=np.float64)
    return np.concatenate([obs[:4 + 7 * len(spec.objects)], obs[36:39]])


def observation(spec: TaskSpec, named: np.ndarray) -> np.ndarray:
    """Meta-World's 39-D observation of named columns ``(K,)`` (the inverse of
    :func:`named_state`; the previous step's copy is the current step: the experts never read
    it)."""
    named = np.asarray(named, dtype=np.float64)
    current = np.zeros(18)
    width = 4 + 7 * len(spec.objects)
    current[:width] = named[:width]
    return np.concatenate([current, current, named[width:width + 3]])


def stage_start(spec: TaskSpec, env, obs, info=None) -> dict:
    """What a task's stages compare with, read right after the reset (:attr:`TaskSpec.start`)."""
    return spec.start(env, obs)


def stage_of(spec: TaskSpec, env, obs, info, start: dict) -> int:
    """The highest of the task's stages the environment's current step satisfies (1-based;
    0 = none; ``len(spec.stages)`` = success), from its observation ``obs`` (39,) and
    ``info`` (Meta-World's step info) (:attr:`TaskSpec.stage`)."""
    return int(spec.stage(env, np.asarray(obs, dtype=np.float64), info, start))
