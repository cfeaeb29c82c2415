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

__all__ = ["POLICIES", "RolloutParams"]

#: The policy kinds (:attr:`RolloutParams.policy`).
POLICIES = ("two-stage", "mlp", "ridge")


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
        """These parameters, checked (a one-line error naming the first wrong field)."""
        for name in ("rollouts", "horizon", "demos", "demo_steps"):
            if getattr(self, name) is None and name in ("horizon", "demo_steps"):
                continue                          # the task's, filled in by for_task
            check_number(name, getattr(self, name), low=1, integer=True)
        if self.demos < 2:
            raise MetricError(f"demos must be >= 2 (the policy holds out whole "
                              f"demonstrations), got {self.demos}")
        check_number("seed", self.seed, low=0, integer=True)
        check_number("control_demos", self.control_demos, low=0, integer=True)
        check_number("control_members", self.control_members, low=1, integer=True)
        check_number("memory", self.memory, low=0, integer=True)
        check_choice("policy", self.policy, POLICIES)
        return self

    def for_task(self, task: SimTask) -> "RolloutParams":
        """These parameters with the task's horizon and demonstration length where they are
        None, validated: what every cache key and report holds."""
        return replace(self, horizon=task.horizon if self.horizon is None else self.horizon,
                       demo_steps=(task.demo_steps if self.demo_steps is None
                                   else self.demo_steps)).validate()

    def to_dict(self) -> dict:
        """Every field by name (the parameters' part of every key and report)."""
        return asdict(self)
