"""Closed-loop evaluation in the demo's task simulator: demonstrations and batched rollouts.

:func:`demonstrations` runs the reactive expert (:class:`~s2r.closedloop.sim.expert.
ReactiveExpert`) on seeded evaluation layouts and renders every frame in the *sim* look: the
data a behaviour-cloning policy is trained on. :func:`run_rollouts` deploys a policy from
``N`` other seeded layouts in either look, all rollouts stepped together so one batch of ``B``
frames goes through the encoder per step (``B`` = rollouts still running). A rollout ends at
its first success (the leg released, seated in the target hole: the task is done) or after
``horizon`` steps.

Seeds: demonstration ``e`` uses ``numpy.random.default_rng([seed, 1, e])``, rollout ``k``
``default_rng([seed, 2, k])``: the layouts of the two never coincide by construction of the
streams, and rollout ``k`` is the same layout in every look and gap (paired comparisons).
The real look of rollout ``k`` is that of the demo's real episode ``k`` at ``gap``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

import numpy as np

from s2r.closedloop.sim.task import LOOKS, TaskConfig, TaskSim
from s2r.closedloop.sim.expert import ReactiveExpert, eval_layout
from s2r.errors import MetricError
from s2r.metrics.ranks import mean_interval, wilson_interval
from s2r.checks import check_choice, check_number
from s2r.progress import ProgressCallback, report

__all__ = ["Act", "Demonstration", "Rollouts", "demonstrations", "state_demonstrations",
           "run_rollouts", "render_rollout_frame", "stage_of", "EVAL_CONFIG", "STAGES"]

#: The task's stages in order (graded progress, as FurnitureBench scores completed phases):
#: a rollout's furthest stage is the highest one it reached at any step (:func:`stage_of`).
STAGES = ("above leg", "grasped", "lifted", "above target hole", "inserted", "released")
#: "lifted": the held leg's foot at least this high above the table (m).
LIFT_HEIGHT = 0.05

#: ``act(frames (B, H, W, 3) uint8, states (B, 22) float32) -> actions (B, 10)``
Act = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: The task rules of closed-loop evaluation (compliant gripper, chamfered hole, no twist).
EVAL_CONFIG = TaskConfig.compliant()
_DEMO_STREAM, _ROLLOUT_STREAM, _STATE_STREAM = 1, 2, 3


@dataclass
class Demonstration:
    """One expert episode in the sim look.

    Attributes
    ----------
    frames : ndarray (T, H, W, 3) uint8
    states : ndarray (T, 22) float32
        The state each frame shows.
    actions : ndarray (T, 10) float32
        The expert's action at each frame.
    success : bool
        Whether the expert finished the task within the episode.
    """

    frames: np.ndarray
    states: np.ndarray
    actions: np.ndarray
    success: bool


def stage_of(sim: TaskSim) -> int:
    """The highest :data:`STAGES` stage the simulator's current state satisfies (1-based;
    0 = none): 6 released (:meth:`TaskSim.success`), 5 inserted (the leg seated in the target
    hole, held or not), 4 above the target hole (held, foot within the hole's tolerance
    horizontally), 3 lifted (held, foot >= :data:`LIFT_HEIGHT` above the table), 2 grasped,
    1 above the leg (fingertip point within the grasp tolerance of the leg's grasp point
    horizontally, leg free)."""
    from s2r.closedloop.sim.geometry import grasp_point, leg_foot

    c = sim.config
    if sim.success():
        return 6
    if sim.seated():
        return 5
    if sim.grasped:
        foot = leg_foot(sim.leg_pos, sim.leg_rot)
        if float(np.linalg.norm(foot[:2] - sim.target_hole)) <= c.hole_tol:
            return 4
        return 3 if float(foot[2]) >= LIFT_HEIGHT else 2
    gp = grasp_point(sim.leg_pos, sim.leg_rot)
    return 1 if float(np.linalg.norm(gp[:2] - sim.ee_pos[:2])) <= c.grasp_tol else 0


def _new_sim(seed: int, stream: int, k: int, config: TaskConfig) -> TaskSim:
    rng = np.random.default_rng([int(seed), stream, int(k)])
    sim = TaskSim(config)
    sim.reset(eval_layout(rng), rng=rng)
    return sim


def demonstrations(n_episodes: int, steps: int, *, seed: int = 0, height: int = 96,
                   width: int = 128, config: Optional[TaskConfig] = None
                   ) -> Iterator[Demonstration]:
    """Yield ``n_episodes`` expert episodes of at most ``steps`` frames, in the sim look.

    An episode ends with the action that completes the task (the release): what the expert
    does afterwards (retreat, then hold still) would teach a policy that standing still is
    the commonest action.
    """
    check_number("n_episodes", n_episodes, low=1, integer=True)
    check_number("steps", steps, low=1, integer=True)
    config = config or EVAL_CONFIG
    for e in range(int(n_episodes)):
        sim = _new_sim(seed, _DEMO_STREAM, e, config)
        expert = ReactiveExpert()
        frames, states, actions = [], [], []
        for _ in range(int(steps)):
            frames.append(sim.render("sim", seed=seed, episode=e, height=height,
                                     width=width)[0])
            states.append(sim.state)
            actions.append(expert.act(states[-1]))
            sim.step(actions[-1])
            if sim.success():
                break
        yield Demonstration(np.stack(frames), np.stack(states), np.stack(actions),
                            bool(sim.success()))


def state_demonstrations(n_episodes: int, steps: int, *, seed: int = 0, noise: float = 0.0,
                         config: Optional[TaskConfig] = None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expert episodes as states only (nothing rendered), with DART noise.

    DART (Laskey et al., 2017): at every other step on average the executed action is the
    expert's plus Gaussian noise (``noise`` metres on the position, ``noise * 5`` radians on
    the yaw), the recorded label
    the expert's clean action, so the data covers the states a slightly wrong learner drifts
    into and says how to come back. Layouts: stream ``default_rng([seed, 3, e])`` (never a
    demonstration's or a rollout's). An episode stops one step after its success.

    Returns
    -------
    states : ndarray (N, 22) float32
    actions : ndarray (N, 10) float32
        The expert's clean action at every state.
    episode : ndarray (N,) int
    """
    from s2r.datasets.demo.scene import gripper_rotation, rot6d, rot_from_6d
    from s2r.closedloop.sim.geometry import yaw_of

    check_number("n_episodes", n_episodes, low=1, integer=True)
    check_number("steps", steps, low=1, integer=True)
    check_number("noise", noise, low=0)
    config = config or EVAL_CONFIG
    expert = ReactiveExpert()
    states, actions, episode = [], [], []
    for e in range(int(n_episodes)):
        sim = _new_sim(seed, _STATE_STREAM, e, config)
        rng = np.random.default_rng([int(seed), _STATE_STREAM, int(e), 1])
        for _ in range(int(steps)):
            s = sim.state
            a = expert.act(s)
            states.append(s)
            actions.append(a)
            episode.append(e)
            if noise > 0 and rng.random() < 0.5:
                a = a.astype(np.float64).copy()
                a[:3] += rng.normal(0.0, noise, 3)
                yaw = yaw_of(rot_from_6d(a[3:9])) + rng.normal(0.0, 5 * noise)
                a[3:9] = rot6d(gripper_rotation(yaw))
            sim.step(a)
            if sim.success():
                break
    return (np.stack(states).astype(np.float32), np.stack(actions).astype(np.float32),
            np.asarray(episode, dtype=np.int64))


@dataclass
class Rollouts:
    """Outcomes of :func:`run_rollouts`.

    Attributes
    ----------
    look : {"sim", "real"}
    gap : float
    success : ndarray (N,) bool
    steps : ndarray (N,) int
        Steps taken: to the first success, else the horizon.
    stages : ndarray (N,) int
        Furthest :data:`STAGES` stage of every rollout (0..6; 6 = success).
    record : dict or None
        The recorded rollout (``index``, ``frames (T, H, W, 3) uint8`` the policy saw,
        ``actions (T, 10)``, ``states (T, 22)``), when asked for.
    """

    look: str
    gap: float
    success: np.ndarray
    steps: np.ndarray
    stages: np.ndarray
    record: Optional[dict] = field(default=None, repr=False)

    @property
    def rate(self) -> float:
        """Success rate in [0, 1]."""
        return float(np.mean(self.success))

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Wilson score interval of the success rate."""
        return wilson_interval(int(self.success.sum()), int(self.success.size), confidence)

    @property
    def progress_each(self) -> np.ndarray:
        """Every rollout's fraction of the stages reached ``(N,)`` in [0, 1]."""
        return self.stages / len(STAGES)

    @property
    def progress(self) -> float:
        """Graded progress: the mean fraction of :data:`STAGES` reached, in [0, 1]."""
        return float(np.mean(self.progress_each))

    def progress_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Interval of :attr:`progress` (:func:`s2r.metrics.ranks.mean_interval`)."""
        return mean_interval(self.progress_each, confidence)

    def stage_rates(self) -> list[float]:
        """Share of rollouts that reached each of :data:`STAGES` (non-increasing; the last
        is the success rate)."""
        return [float(np.mean(self.stages >= k)) for k in range(1, len(STAGES) + 1)]


def run_rollouts(act: Act, *, look: str, gap: float = 0.5, n_rollouts: int = 20,
                 horizon: int = 40, seed: int = 0, height: int = 96, width: int = 128,
                 config: Optional[TaskConfig] = None, record: Optional[int] = None,
                 progress: Optional[ProgressCallback] = None) -> Rollouts:
    """Deploy ``act`` closed loop from ``n_rollouts`` seeded layouts, batched across rollouts.

    Parameters
    ----------
    act : callable
        ``act(frames (B, H, W, 3) uint8, states (B, 22) float32) -> (B, 10)`` actions; the
        policy sees the frames (through its encoder) and the robot part of the states. A
        policy with memory has a ``reset(n_rollouts)`` method: it is called once before the
        first step, and every step passes ``rows`` (B,), the rollout of every row, as a third
        argument.
    look : {"sim", "real"}
    gap : float in [0, 1]
        The real look's gap (ignored by the sim look).
    n_rollouts, horizon : int
    seed : int
        Layouts, home poses and the real look of every rollout.
    height, width : int
        Rendered frame size (pixels).
    config : TaskConfig, optional
        Default :data:`EVAL_CONFIG`.
    record : int, optional
        Keep the frames, states and actions of this rollout.
    progress : ProgressCallback, optional
        ``progress(step, horizon, message)`` after every step.
    """
    check_choice("look", look, LOOKS)
    check_number("gap", gap, low=0, high=1)
    for name, v in (("n_rollouts", n_rollouts), ("horizon", horizon)):
        check_number(name, v, low=1, integer=True)
    if record is not None and not 0 <= int(record) < int(n_rollouts):
        raise MetricError(f"record must be a rollout index in [0, {n_rollouts}), got {record}")
    config = config or EVAL_CONFIG
    sims = [_new_sim(seed, _ROLLOUT_STREAM, k, config) for k in range(int(n_rollouts))]
    success = np.zeros(len(sims), dtype=bool)
    steps = np.full(len(sims), int(horizon), dtype=np.int64)
    stages = np.zeros(len(sims), dtype=np.int64)
    kept: dict = {"frames": [], "actions": [], "states": []}
    active = list(range(len(sims)))
    stateful = callable(getattr(act, "reset", None))
    if stateful:
        act.reset(len(sims))
    for t in range(int(horizon)):
        frames = np.stack([sims[k].render(look, gap=gap, seed=seed, episode=k, height=height,
                                          width=width)[0] for k in active])
        states = np.stack([sims[k].state for k in active])
        actions = np.asarray(act(frames, states, np.asarray(active)) if stateful
                             else act(frames, states), dtype=np.float64)
        if actions.shape != (len(active), 10) or not np.all(np.isfinite(actions)):
            raise MetricError(f"the policy returned actions of shape {actions.shape} (or "
                              f"non-finite values); expected ({len(active)}, 10) finite")
        for row, k in enumerate(active):
            if k == record:
                kept["frames"].append(frames[row])
                kept["states"].append(states[row])
                kept["actions"].append(actions[row].astype(np.float32))
            sims[k].step(actions[row])
            stages[k] = max(stages[k], stage_of(sims[k]))
            if sims[k].success():
                success[k], steps[k] = True, t + 1
        active = [k for k in active if not success[k]]
        report(progress, t + 1, int(horizon),
               f"{look} look: step {t + 1}, {int(success.sum())}/{len(sims)} succeeded")
        if not active:
            break
    rec = None
    if record is not None:
        rec = {"index": int(record), **{k: np.stack(v) for k, v in kept.items()}}
    return Rollouts(look=look, gap=float(gap), success=success, steps=steps, stages=stages,
                    record=rec)


def render_rollout_frame(state, *, k: int, look: str, gap: float = 0.5, seed: int = 0,
                         height: int = 96, width: int = 128, step: int = 0,
                         config: Optional[TaskConfig] = None) -> np.ndarray:
    """Rollout ``k``'s frame of ``state`` (22,) in either look, as :func:`run_rollouts` renders
    it (the same layout, real look and sensor noise of ``step``): e.g. the sim look of a
    recorded real-look frame, for a sim/real saliency pair."""
    check_choice("look", look, LOOKS)
    sim = _new_sim(seed, _ROLLOUT_STREAM, k, config or EVAL_CONFIG)
    sim.t = int(step)
    return sim.render(look, gap=gap, seed=seed, episode=k, height=height, width=width,
                      state=np.asarray(state, dtype=np.float32))[0]
