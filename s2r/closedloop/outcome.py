"""One (encoder, look, gap) result of the closed loop: :class:`Outcome`, its cached record and
its report columns.

``progress`` is per rollout everywhere (each rollout's fraction of the task's stages reached);
their mean is ``mean_progress``. The cached record (:meth:`Outcome.to_record`) keeps the
layout it has always had, where ``"progress"`` holds the mean, so records cached before read.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Optional

import numpy as np

__all__ = ["Outcome", "outcome_columns"]


@dataclass(frozen=True)
class Outcome:
    """The rollouts of one encoder's policy in one look at one gap.

    Attributes
    ----------
    look : {"sim", "real"}
    gap : float
    success_rate : float
        Share of rollouts that succeeded, with its Wilson ``ci_low``/``ci_high``.
    ci_low, ci_high : float
    successes : tuple of bool
        Per rollout.
    mean_progress : float
        Mean of :attr:`progress`, with its interval ``progress_ci_low``/``progress_ci_high``.
    progress_ci_low, progress_ci_high : float
    stages : tuple of int
        Furthest stage of every rollout (``0..len(stage_rates)``).
    stage_rates : tuple of float
        Share of rollouts that reached each of the task's stages.
    steps : tuple of int
        Steps of every rollout.
    record : dict or None
        The recorded rollout: ``index``, ``actions`` and ``states`` (lists; its frames are a
        cached array, :func:`s2r.closedloop.encoder_rollouts.recorded_rollout`).
    """

    look: str
    gap: float
    success_rate: float
    ci_low: float
    ci_high: float
    successes: tuple
    mean_progress: float
    progress_ci_low: float
    progress_ci_high: float
    stages: tuple
    stage_rates: tuple
    steps: tuple
    record: Optional[dict] = None

    @property
    def progress(self) -> tuple:
        """Every rollout's fraction of the task's stages reached, in [0, 1]."""
        n = len(self.stage_rates)
        return tuple(float(k) / n for k in self.stages)

    @property
    def rollouts(self) -> int:
        """How many rollouts."""
        return len(self.successes)

    @property
    def mean_steps(self) -> float:
        """Mean steps per rollout."""
        return float(np.mean(self.steps))

    @classmethod
    def from_rollouts(cls, rollouts) -> "Outcome":
        """The outcome of :func:`s2r.closedloop.rollout.run_rollouts`' result (its recorded
        rollout's frames are not kept here)."""
        low, high = rollouts.interval()
        p_low, p_high = rollouts.progress_interval()
        rec = rollouts.record
        return cls(look=rollouts.look, gap=rollouts.gap, success_rate=rollouts.rate,
                   ci_low=low, ci_high=high, successes=tuple(rollouts.success.tolist()),
                   mean_progress=rollouts.progress, progress_ci_low=p_low,
                   progress_ci_high=p_high, stages=tuple(rollouts.stages.tolist()),
                   stage_rates=tuple(rollouts.stage_rates()),
                   steps=tuple(rollouts.steps.tolist()),
                   record=None if rec is None else {"index": rec["index"],
                                                    "actions": rec["actions"].tolist(),
                                                    "states": rec["states"].tolist()})

    @classmethod
    def from_record(cls, record: dict) -> "Outcome":
        """The outcome of a cached record (:meth:`to_record`'s layout)."""
        return cls(look=record["look"], gap=record["gap"],
                   success_rate=record["success_rate"], ci_low=record["ci_low"],
                   ci_high=record["ci_high"], successes=tuple(record["successes"]),
                   mean_progress=record["progress"],
                   progress_ci_low=record["progress_ci_low"],
                   progress_ci_high=record["progress_ci_high"],
                   stages=tuple(record["stages"]), stage_rates=tuple(record["stage_rates"]),
                   steps=tuple(record["steps"]), record=copy.deepcopy(record.get("record")))

    def to_record(self) -> dict:
        """The cached JSON record: ``progress`` is :attr:`mean_progress` there (the layout
        records have always had), every sequence a list."""
        return {"look": self.look, "gap": self.gap, "success_rate": self.success_rate,
                "ci_low": self.ci_low, "ci_high": self.ci_high,
                "successes": list(self.successes), "progress": self.mean_progress,
                "progress_ci_low": self.progress_ci_low,
                "progress_ci_high": self.progress_ci_high, "stages": list(self.stages),
                "stage_rates": list(self.stage_rates), "steps": list(self.steps),
                "record": copy.deepcopy(self.record)}

    def per_rollout(self) -> dict:
        """``{"successes": [...], "progress": [...]}``: what a report's outcome rows and the
        rank correlations read."""
        return {"successes": list(self.successes), "progress": list(self.progress)}


def outcome_columns(outcome: Outcome, suffix: str, which=("success", "progress")) -> dict:
    """A report row's columns of ``outcome``: ``success_{suffix}`` and
    ``progress_{suffix}`` (the mean), each with ``_ci_low``/``_ci_high``, for the measures in
    ``which``."""
    values = {"success": (outcome.success_rate, outcome.ci_low, outcome.ci_high),
              "progress": (outcome.mean_progress, outcome.progress_ci_low,
                           outcome.progress_ci_high)}
    return {f"{name}_{suffix}{end}": value for name in which
            for end, value in zip(("", "_ci_low", "_ci_high"), values[name])}

