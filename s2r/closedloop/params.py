"""How the closed loop's ground truth is measured: :class:`RolloutParams` and their checks.

Every field is part of the cache keys (:mod:`s2r.closedloop.keys`), so two measurements share
an entry only when they were made the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Optional

from s2r.checks import check_choice, check_number
from s2r.errors import MetricError
from s2r.worlds import SimTask

__all__ = ["BOUNDS", "MAX_GAPS", "POLICIES", "RolloutParams"]

#: The policy kinds (:attr:`RolloutParams.policy`).
POLICIES = ("two-stage", "mlp", "ridge")


#: Every count of a validation, ``(low, high)``: checked before any work. The highs are far
#: above what any run measured here used (the defaults: 20 rollouts a look, a horizon of 30-60
#: steps, 60 demonstrations, 300 control episodes, 5 control members) and low enough that a
#: typo is one line, not days of rollouts; the seed is what numpy's generators take whole.
BOUNDS = {"rollouts": (1, 1_000), "horizon": (1, 1_000), "demos": (2, 1_000),
          "demo_steps": (1, 1_000), "control_demos": (0, 10_000), "control_members": (1, 32),
          "memory": (0, 1_000), "seed": (0, 2**32 - 1)}
#: Most distinct gaps one validation runs (every gap is a dataset, a score and a set of
#: rollouts per encoder).
MAX_GAPS = 21


@dataclass(frozen=True)
class RolloutParams:
    """How the ground truth is measured (every field is part of the cache keys).

    Attributes
    ----------
    rollouts : int
        Rollouts per look and gap (seeded layouts, the same in every look and gap).
    horizon : int, optional
        Most steps per rollout; None: the task's (:attr:`~s2r.worlds.base.SimTask.horizon`;
        the demo's 30, its expert needs <= 15). :meth:`for_task` fills it in.
    demos : int
        Expert demonstrations the policy is trained on (sim look).
    demo_steps : int, optional
        Most frames per demonstration (each ends at its success); None: the task's
        (:attr:`~s2r.worlds.base.SimTask.demo_steps`; the demo's 24).
    policy : {"two-stage", "mlp", "ridge"}
        ``"two-stage"``: :func:`s2r.closedloop.policy.two_stage.fit_two_stage` (a probe reads the
        task state from the embedding, an MLP acts on it; default); ``"mlp"``/``"ridge"``:
        :func:`s2r.closedloop.policy.bc.fit_policy` end to end.
    control_demos : int
        Two-stage only: the control MLP is fitted once, on the exact states of this many
        expert episodes (nothing rendered;
        :func:`s2r.closedloop.policy.two_stage.fit_state_control`),
        and shared by every encoder; 0 = fitted per encoder on its cross-fitted decoded
        states of the rendered demonstrations.
    control_members : int
        Two-stage with ``control_demos`` > 0: the shared control is the mean action of this
        many MLPs fitted on the same episodes from other seeds (default 5: an ensemble's
        success depends far less on the seed than one MLP's;
        :func:`s2r.closedloop.policy.two_stage.fit_state_control`).
    memory : int
        Two-stage only: the deployed policy remembers the static scene, when the task has
        such a memory (:meth:`~s2r.worlds.base.SimTask.memory`; the demo's
        :class:`s2r.worlds.demo.memory.StaticMemory`: the tabletop's mean decoded pose, a
        free leg's mean pose over its first ``memory`` frames, a held leg's mean offset from
        the gripper; default 3, see that module);
        0 = every frame decoded afresh.
    seed : int
        Demonstrations, rollouts, the policy's fit.
    height, width : int
        Rendered frame size (the dataset's).
    """

    rollouts: int = 20
    horizon: Optional[int] = None
    demos: int = 60
    demo_steps: Optional[int] = None
    policy: str = "two-stage"
    control_demos: int = 300
    control_members: int = 5
    memory: int = 3
    seed: int = 0
    height: int = 96
    width: int = 128

    def validate(self) -> "RolloutParams":
        """These parameters, checked against :data:`BOUNDS` (a one-line error naming the
        first wrong field and its range) before any work."""
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            if value is None and name in ("horizon", "demo_steps"):
                continue                          # the task's, filled in by for_task
            if name == "demos" and isinstance(value, int) and 0 <= value < low:
                raise MetricError(f"demos must be >= 2 (the policy holds out whole "
                                  f"demonstrations), got {value}")
            check_number(name, value, low=low, high=high, integer=True)
        check_choice("policy", self.policy, POLICIES)
        return self

    def for_task(self, task: SimTask) -> "RolloutParams":
        """These parameters with the task's horizon and demonstration length where they are
        None, validated: what every cache key and report holds. A horizon or demonstration
        length past the steps an episode of the task's simulator can take
        (:attr:`~s2r.worlds.base.SimTask.max_steps`) is refused here, before any work."""
        out = replace(self, horizon=task.horizon if self.horizon is None else self.horizon,
                      demo_steps=(task.demo_steps if self.demo_steps is None
                                  else self.demo_steps)).validate()
        limit = getattr(task, "max_steps", None)
        for name in ("horizon", "demo_steps"):
            if limit is not None and getattr(out, name) > limit:
                raise MetricError(f"{name} must be in [1, {limit}] on this task (an episode of "
                                  f"{task.world} ends after {limit} steps), got "
                                  f"{getattr(out, name)}")
        return out

    def to_dict(self) -> dict:
        """Every field by name (the parameters' part of every key and report)."""
        return asdict(self)
