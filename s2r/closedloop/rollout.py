"""Closed-loop rollouts of a policy in any world's task, batched across rollouts.

:func:`run_rollouts` deploys a policy from ``N`` seeded layouts of a task
(:class:`~s2r.worlds.base.SimTask`) in either look, all rollouts stepped together (the task's
:class:`~s2r.worlds.base.RolloutBatch`) so one batch of ``B`` frames goes through the encoder
per step (``B`` = rollouts still running). A rollout ends at its first success (the world's
own criterion) or after ``horizon`` steps; its graded progress is the furthest of the task's
named stages it reached. Which layouts, looks and seeds: the task's (for the demo,
:mod:`s2r.worlds.demo.evaluation`); rollout ``k`` is the same layout in every look and gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from s2r.checks import check_choice, check_number
from s2r.errors import MetricError
from s2r.metrics.ranks import mean_interval, wilson_interval
from s2r.progress import ProgressCallback, report
from s2r.worlds import LOOKS, SimTask

__all__ = ["Act", "Rollouts", "run_rollouts", "render_rollout_frame"]

#: ``act(frames (B, H, W, 3) uint8, states (B, S) float32) -> actions (B, A)``
Act = Callable[[np.ndarray, np.ndarray], np.ndarray]


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
        Furthest stage of every rollout (``0..n_stages``; ``n_stages`` = success).
    n_stages : int
        How many stages the task has (:attr:`~s2r.worlds.base.SimTask.stages`).
    record : dict or None
        The recorded rollout (``index``, ``frames (T, H, W, 3) uint8`` the policy saw,
        ``actions (T, A)``, ``states (T, S)``), when asked for.
    """

    look: str
    gap: float
    success: np.ndarray
    steps: np.ndarray
    stages: np.ndarray
    n_stages: int
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
        return self.stages / self.n_stages

    @property
    def progress(self) -> float:
        """Graded progress: the mean fraction of the task's stages reached, in [0, 1]."""
        return float(np.mean(self.progress_each))

    def progress_interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Interval of :attr:`progress` (:func:`s2r.metrics.ranks.mean_interval`)."""
        return mean_interval(self.progress_each, confidence)

    def stage_rates(self) -> list[float]:
        """Share of rollouts that reached each of the task's stages (non-increasing; the
        last is the success rate)."""
        return [float(np.mean(self.stages >= k)) for k in range(1, self.n_stages + 1)]


def run_rollouts(act: Act, task: SimTask, *, look: str, gap: float = 0.5,
                 n_rollouts: int = 20, horizon: Optional[int] = None, seed: int = 0,
                 height: int = 96, width: int = 128, record: Optional[int] = None,
                 progress: Optional[ProgressCallback] = None) -> Rollouts:
    """Deploy ``act`` closed loop in ``task`` from ``n_rollouts`` seeded layouts, batched
    across rollouts.

    Parameters
    ----------
    act : callable
        ``act(frames (B, H, W, 3) uint8, states (B, S) float32) -> (B, A)`` actions; the
        policy sees the frames (through its encoder) and the robot part of the states. A
        policy with memory has a ``reset(n_rollouts)`` method: it is called once before the
        first step, and every step passes ``rows`` (B,), the rollout of every row, as a third
        argument.
    task : SimTask
        The world's task (:meth:`s2r.worlds.base.World.task`).
    look : {"sim", "real"}
    gap : float in [0, 1]
        The real look's gap (ignored by the sim look).
    n_rollouts : int
    horizon : int, optional
        Most steps a rollout; default the task's (:attr:`~s2r.worlds.base.SimTask.horizon`).
    seed : int
        Layouts, home poses and the real look of every rollout.
    height, width : int
        Rendered frame size (pixels).
    record : int, optional
        Keep the frames, states and actions of this rollout.
    progress : ProgressCallback, optional
        ``progress(step, horizon, message)`` after every step.
    """
    horizon = task.horizon if horizon is None else horizon
    check_choice("look", look, LOOKS)
    check_number("gap", gap, low=0, high=1)
    for name, v in (("n_rollouts", n_rollouts), ("horizon", horizon)):
        check_number(name, v, low=1, integer=True)
    if record is not None and not 0 <= int(record) < int(n_rollouts):
        raise MetricError(f"record must be a rollout index in [0, {n_rollouts}), got {record}")
    n, n_actions = int(n_rollouts), len(task.columns.action_names)
    batch = task.rollouts(n, look=look, gap=gap, seed=seed, height=height, width=width)
    success = np.zeros(n, dtype=bool)
    steps = np.full(n, int(horizon), dtype=np.int64)
    stages = np.zeros(n, dtype=np.int64)
    kept: dict = {"frames": [], "actions": [], "states": []}
    active = list(range(n))
    stateful = callable(getattr(act, "reset", None))
    if stateful:
        act.reset(n)
    try:
        for t in range(int(horizon)):
            frames, states = batch.frames(active), batch.states(active)
            actions = np.asarray(act(frames, states, np.asarray(active)) if stateful
                                 else act(frames, states), dtype=np.float64)
            if actions.shape != (len(active), n_actions) or not np.all(np.isfinite(actions)):
                raise MetricError(f"the policy returned actions of shape {actions.shape} (or "
                                  f"non-finite values); expected ({len(active)}, {n_actions}) "
                                  "finite")
            if record in active:
                row = active.index(record)
                kept["frames"].append(frames[row])
                kept["states"].append(states[row])
                kept["actions"].append(actions[row].astype(np.float32))
            batch.step(active, actions)
            stages[active] = np.maximum(stages[active], batch.stage(active))
            done = np.asarray(active)[batch.success(active)]
            success[done], steps[done] = True, t + 1
            active = [k for k in active if not success[k]]
            report(progress, t + 1, int(horizon),
                   f"{look} look: step {t + 1}, {int(success.sum())}/{n} succeeded")
            if not active:
                break
    finally:
        batch.close()
    rec = None
    if record is not None:
        rec = {"index": int(record), **{k: np.stack(v) for k, v in kept.items()}}
    return Rollouts(look=look, gap=float(gap), success=success, steps=steps, stages=stages,
                    n_stages=len(task.stages), record=rec)


def render_rollout_frame(task: SimTask, state, *, k: int, look: str, gap: float = 0.5,
                         seed: int = 0, height: int = 96, width: int = 128,
                         step: int = 0) -> np.ndarray:
    """Rollout ``k``'s frame ``(H, W, 3) uint8`` of ``state`` (S,) in either look, as
    :func:`run_rollouts` draws it (the same layout, real look and sensor noise of ``step``):
    e.g. the sim look of a recorded real-look frame, for a sim/real saliency pair."""
    check_choice("look", look, LOOKS)
    return task.render_state(np.asarray(state, dtype=np.float32), k=int(k), look=look,
                             gap=float(gap), seed=int(seed), height=int(height),
                             width=int(width), step=int(step))
