"""Meta-World's physics, seeded by s2r: environments, layouts, the scripted experts, one
rollout's simulator (:class:`Sim`) and its physics snapshot.

Layouts are drawn with s2r's own generator and handed to Meta-World through its public
``set_task`` (what its MT1 benchmark does): layout ``k`` of stream ``s`` of ``seed`` is
``default_rng([seed, s, k]).uniform(low, high)`` over the task's ``_random_reset_space``, so
the same seed gives the same layouts on every machine and in every process. Streams
(:data:`STREAMS`): demonstrations 1, rollouts 2, state-only demonstrations 3, the controls'
training episodes 4, the dataset 10 -- they never coincide by construction.

An environment is made once per task and process and reset for every episode (the model is
reused; a reset rewrites the layout's model fields, ``body_pos`` and ``site_pos``). Its
appearance is never touched here: looks are drawn on a separate model (:mod:`.paint`).

Importing this module imports MuJoCo and Meta-World (with ``MUJOCO_GL`` set first:
:func:`s2r.settings.prefer_headless_rendering`); the world's top module never does.
"""

from __future__ import annotations

import pickle
import warnings
from dataclasses import dataclass

import numpy as np

from s2r.settings import prefer_headless_rendering
from s2r.worlds.metaworld.tasks import (TASKS, TaskSpec, named_state, stage_of,
                                        stage_start)

prefer_headless_rendering()

with warnings.catch_warnings():          # gymnasium's and the experts' import-time notes
    warnings.simplefilter("ignore")
    import metaworld.policies as _policies
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS
    from metaworld.types import Task

__all__ = ["STREAMS", "Sim", "Snapshot", "expert_for", "layout", "make_env", "snapshot_width"]

STREAMS = {"demo": 1, "rollout": 2, "state": 3, "training": 4, "dataset": 10}
#: The model fields a reset writes for the layout (what a render of a snapshot copies).
LAYOUT_FIELDS = ("body_pos", "body_quat", "site_pos", "site_quat")

_ENVS: dict = {}
_BOUNDS: dict = {}


def make_env(spec: TaskSpec):
    """A new environment of the task (warnings of gymnasium and Meta-World silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ALL_V3_ENVIRONMENTS[spec.name]()


def shared_env(spec: TaskSpec):
    """This process's environment of the task for episodes run here (made once)."""
    if spec.name not in _ENVS:
        _ENVS[spec.name] = make_env(spec)
    return _ENVS[spec.name]


def layout(spec: TaskSpec, seed: int, stream: str, k: int) -> np.ndarray:
    """Layout ``k`` of ``stream`` of ``seed``: the task's random reset vector (object and goal
    positions), drawn by s2r."""
    if spec.name not in _BOUNDS:
        space = shared_env(spec)._random_reset_space
        _BOUNDS[spec.name] = (np.asarray(space.low, np.float64),
                              np.asarray(space.high, np.float64))
    low, high = _BOUNDS[spec.name]
    return np.random.default_rng([int(seed), STREAMS[stream], int(k)]).uniform(low, high)


def expert_for(spec: TaskSpec):
    """A new instance of the task's scripted expert (``get_action(obs (39,)) -> (4,)``)."""
    return getattr(_policies, spec.expert)()


def snapshot_width(env) -> int:
    """Columns of the physics snapshot: ``qpos``, ``qvel``, mocap position and quaternion."""
    return int(env.model.nq + env.model.nv + 7)


@dataclass
class Snapshot:
    """What redraws a frame: the layout's model fields and the physics state."""

    layout: dict
    qpos: np.ndarray
    mocap_pos: np.ndarray
    mocap_quat: np.ndarray


class Sim:
    """One rollout in a Meta-World environment: reset on a layout, stepped with an action
    repeat, its state, success and stage read after every step.

    Parameters
    ----------
    spec : TaskSpec
    env : Meta-World environment of the task (reused across episodes)
    repeat : int
        Meta-World steps per world step (the same action each).
    """

    def __init__(self, spec: TaskSpec, env, repeat: int):
        self.spec, self.env, self.repeat = spec, env, int(repeat)
        self.obs = None
        self.succeeded, self.stage, self.t = False, 0, 0

    def reset(self, rand_vec: np.ndarray) -> "Sim":
        """Start an episode on the layout ``rand_vec``."""
        env = self.env
        cls = type(env)
        env.set_task(Task(env_name=self.spec.name, data=pickle.dumps(
            {"env_cls": cls, "rand_vec": np.asarray(rand_vec, dtype=np.float64),
             "partially_observable": False})))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.obs, _ = env.reset()
        self.start = stage_start(self.spec, env, self.obs, None)
        self.succeeded, self.stage, self.t = False, 0, 0
        return self

    def step(self, action) -> None:
        """Apply ``action (4,)`` (clipped to [-1, 1]) for ``repeat`` Meta-World steps; the
        step succeeded when any of them did (``info["success"]``)."""
        a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(self.repeat):
                self.obs, _, _, _, info = self.env.step(a)
                self.succeeded = self.succeeded or bool(info["success"])
                self.stage = max(self.stage, stage_of(self.spec, self.env, self.obs, info,
                                                      self.start))
        self.t += 1

    @property
    def state(self) -> np.ndarray:
        """The task's state now ``(S,)`` float32: the named observation, then the snapshot."""
        d = self.env.data
        return np.concatenate([named_state(self.spec, self.obs), d.qpos, d.qvel,
                               d.mocap_pos[0], d.mocap_quat[0]]).astype(np.float32)

    def snapshot(self) -> Snapshot:
        """The layout and physics state that draw the current frame."""
        m, d = self.env.model, self.env.data
        return Snapshot(layout=layout_fields(m), qpos=d.qpos.copy(),
                        mocap_pos=d.mocap_pos.copy(), mocap_quat=d.mocap_quat.copy())


def layout_fields(model) -> dict:
    """Copies of the model fields a reset writes for the layout (:data:`LAYOUT_FIELDS`)."""
    return {name: np.array(getattr(model, name)) for name in LAYOUT_FIELDS}


def snapshot_of_state(spec: TaskSpec, state: np.ndarray, fields: dict, nq: int,
                      nv: int) -> Snapshot:
    """The :class:`Snapshot` of a recorded state ``(S,)`` (:attr:`Sim.state`) on a layout's
    model ``fields``."""
    from s2r.worlds.metaworld.tasks import named_width

    s = np.asarray(state, dtype=np.float64)
    k = named_width(spec)
    return Snapshot(layout=fields, qpos=s[k:k + nq].copy(),
                    mocap_pos=s[k + nq + nv:k + nq + nv + 3][None].copy(),
                    mocap_quat=s[k + nq + nv + 3:k + nq + nv + 7][None].copy())


def task_spec(name: str) -> TaskSpec:
    return TASKS[name]


@dataclass
class Episode:
    """One expert episode: ``states (T, S) float32``, the executed ``actions (T, 4)
    float32`` (clipped to [-1, 1]; the expert's own where it was not perturbed), the
    ``snapshots`` that draw its frames, and whether it succeeded."""

    states: np.ndarray
    actions: np.ndarray
    labels: np.ndarray
    snapshots: list
    success: bool


def expert_episode(spec: TaskSpec, repeat: int, rand_vec: np.ndarray, steps: int, *,
                   until_success: bool = True, noise: float = 0.0, rng=None,
                   snapshots: bool = True) -> Episode:
    """Run the task's scripted expert from the layout ``rand_vec`` for at most ``steps`` world
    steps (stopping after the step that succeeds when ``until_success``), in this process.

    ``noise`` > 0 (DART, Laskey et al. 2017): at every other step on average the executed
    hand motion is the expert's plus Gaussian noise of ``noise`` metres a world step (the
    recorded ``labels`` stay the expert's clean action); ``rng`` draws it.
    """
    s = Sim(spec, shared_env(spec), repeat).reset(rand_vec)
    expert = expert_for(spec)
    states, executed, labels, snaps = [], [], [], []
    scale = noise / (0.01 * int(repeat))        # metres a world step -> action units
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(int(steps)):
            states.append(s.state)
            if snapshots:
                snaps.append(s.snapshot())
            clean = np.clip(expert.get_action(s.obs), -1.0, 1.0)
            action = clean.copy()
            if noise > 0 and rng.random() < 0.5:
                action[:3] = np.clip(action[:3] + rng.normal(0.0, scale, 3), -1.0, 1.0)
            labels.append(clean)
            executed.append(action)
            s.step(action)
            if until_success and s.succeeded:
                break
    return Episode(np.stack(states), np.asarray(executed, np.float32),
                   np.asarray(labels, np.float32), snaps, bool(s.succeeded))
