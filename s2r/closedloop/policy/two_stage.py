"""A two-stage behaviour-cloning policy: read the scene from the embedding, then act.

Stage 1, perception: a ridge probe (:class:`~s2r.metrics.action_probe.ActionProbe`) maps the
frame's embedding ``Z`` to the task state the camera must supply (the task's
:attr:`~s2r.worlds.base.TaskColumns.task`; for the demo: the leg's and the tabletop's pose;
the robot's own state is proprioception).
Stage 2, control: an MLP (:func:`~s2r.closedloop.policy.bc.fit_policy`, ``kind="mlp"``) maps the
decoded task state and the proprioception to the action.

Both are fitted on sim frames only. The control MLP is trained on *cross-fitted* decoded
states (each episode's from a probe fitted on the other episodes), so it learns to act on
decoded states as imprecise as they are at deployment, not on the exact ones. Deployed on
real frames, the probe's sim-to-real shift is what costs success -- the failure the transfer
scores try to predict.

Why not end to end: with ~1,300 demonstration frames and 500-3,000-dimensional embeddings,
one MLP from ``[Z, proprio]`` to actions overfits before it learns the task (measured on the
demo: 0-7% success in the sim look for pixels and EfficientNet-Lite0, where this policy reaches
much more); the privileged sim state is what sim-to-real pipelines use to train perception.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from s2r.errors import MetricError
from s2r.metrics.action_probe import ActionProbe, cross_fitted_predictions
from s2r.checks import check_embeddings, check_frame_matrix, check_number
from s2r.closedloop.policy.bc import Policy, fit_policy

__all__ = ["TwoStagePolicy", "fit_two_stage", "fit_state_control", "member_seed"]

#: Probe penalties tried by ``alpha="auto"``, chosen per task-state column (as scikit-learn's
#: ``RidgeCV(alpha_per_target=True)``): a column the embedding holds precisely (the leg's
#: position) wants almost no penalty, one it barely holds (the 3 cm leg's yaw at 96 x 128)
#: a large one that shrinks it to its mean instead of a wild guess (measured on the demo:
#: pixels' decoded leg yaw was off by 0.3-0.8 rad with one penalty for every column).
ALPHAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


@dataclass
class TwoStagePolicy:
    """Perception probe + control MLP; :meth:`predict` maps ``(Z, proprio)`` to actions.

    Attributes
    ----------
    probes : list of (ndarray of int, ActionProbe or ndarray)
        ``Z (N, D) -> task state columns``: one probe per distinct penalty, fitted on every
        training frame, reading the columns listed beside it; columns constant in the
        training frames are their constant (an ndarray) instead.
    control : Policy
        ``[task state, proprio] -> actions``.
    alpha : ndarray (K,)
        The penalty of every task-state column.
    """

    probes: list
    control: Policy
    alpha: np.ndarray

    def decode(self, Z) -> np.ndarray:
        """The task state read from embeddings ``Z (N, D)``: ``(N, K)``."""
        Z = np.asarray(Z)
        out = np.empty((len(Z), len(self.alpha)), dtype=np.float64)
        for columns, probe in self.probes:
            out[:, columns] = (probe if isinstance(probe, np.ndarray)
                               else probe.predict_actions(Z))
        return out

    def predict(self, Z, proprio) -> np.ndarray:
        """Actions ``(N, A)`` for embeddings ``Z (N, D)`` and proprioception ``(N, P)``."""
        return self.control.predict(self.decode(Z), proprio)


def _folds(episode: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Fold index of every frame, whole episodes per fold (shuffled with ``seed``)."""
    ids = np.unique(episode)
    order = np.random.default_rng(seed).permutation(ids)
    fold_of = {e: i % n_folds for i, e in enumerate(order)}
    return np.array([fold_of[e] for e in episode])


def fit_two_stage(Z, proprio, task_state, actions, episode, *, seed: int = 0,
                  alpha="auto", n_folds: int = 5, control: Policy | None = None,
                  **mlp_options) -> TwoStagePolicy:
    """Fit the perception probe and the control MLP on (sim) frames.

    Parameters
    ----------
    Z : array-like (N, D)
        Embeddings.
    proprio : array-like (N, P)
        Proprioception.
    task_state : array-like (N, K)
        What the probe must read from ``Z`` (the task's
        :attr:`~s2r.worlds.base.TaskColumns.task` columns of the state).
    actions : array-like (N, A)
    episode : array-like (N,) of int
        Whole episodes form the cross-fitting folds and the MLP's held-out set.
    seed : int
    alpha : float or "auto"
        Ridge penalty of the probe (fraction of the embeddings' total variance); "auto"
        (default) picks from :data:`ALPHAS`, per task-state column, the one with the smallest
        cross-fitted squared error.
    n_folds : int
        Cross-fitting folds (>= 2; at most the number of episodes).
    control : Policy, optional
        A control already fitted (e.g. :func:`fit_state_control`, on exact states of many
        more demonstrations than were rendered, shared by every encoder): then only the probe
        is fitted here.
    **mlp_options
        Passed to :func:`~s2r.closedloop.policy.bc.fit_policy` (``hidden``, ``lr``, ``max_epochs``
        ...).
    """
    checked = check_embeddings(Z, actions=actions, episode=episode)
    Z, Y, ep = checked.Z, checked.actions, checked.episode
    if ep is None:
        raise MetricError("episode is required (cross-fitting holds out whole episodes)")
    S = check_frame_matrix("task_state", task_state, len(Z), "K")
    check_number("n_folds", n_folds, low=2, integer=True)
    folds = _folds(ep, min(int(n_folds), np.unique(ep).size), seed)
    alphas = ALPHAS if alpha == "auto" else (float(alpha),)
    # cross-fitted decoded states for every penalty: (n_alphas, N, K)
    decoded = cross_fitted_predictions(Z, S, folds, alphas)
    best = np.argmin(((decoded - S) ** 2).mean(axis=1), axis=0)       # per column (K,)
    chosen = np.asarray(alphas)[best]
    if control is None:
        cross_fitted = decoded[best, np.arange(len(S))[:, None], np.arange(S.shape[1])]
        control = fit_policy(cross_fitted, proprio, Y, ep, kind="mlp", seed=seed,
                             **mlp_options)
    elif control.n_embed != S.shape[1]:
        raise MetricError(f"control was fitted on {control.n_embed} task-state columns, the "
                          f"probe reads {S.shape[1]}")
    constant = S.std(axis=0) <= 1e-9                   # e.g. an upright leg's rotation
    probes = [(np.flatnonzero(constant), S[0, constant])] if constant.any() else []
    for a in np.unique(chosen[~constant]):
        columns = np.flatnonzero((chosen == a) & ~constant)
        probes.append((columns, ActionProbe(alpha=float(a)).fit(Z, S[:, columns])))
    return TwoStagePolicy(probes=probes, control=control, alpha=chosen)


def fit_state_control(task, n_demos: int, *, steps: int = 24, seed: int = 0, members: int = 1,
                      **mlp_options):
    """The control MLP fitted on exact states of ``n_demos`` expert episodes of ``task`` (a
    :class:`~s2r.worlds.base.SimTask`; its
    :meth:`~s2r.worlds.base.SimTask.state_demonstrations`: nothing rendered, so hundreds cost
    seconds): ``[task state, proprio] -> action`` (the demo: 12 + 10 columns). One per task
    and seed, shared by every encoder's two-stage policy (the encoders differ in perception
    only).

    ``members`` > 1: a :class:`~s2r.closedloop.policy.bc.PolicyEnsemble` of that many MLPs on
    the same episodes, member 0 seeded with ``seed`` (the single MLP), the others with seeds
    drawn from ``(seed, member)`` (their own initialisation, held-out episodes and batch
    order). Measured from the exact state, 40 sim rollouts: one MLP 0.60 / 0.60 / 0.97 / 0.97
    success at seeds 31 / 47 / 5 / 11, five 0.97 / 1.00 / 1.00 / 1.00 (docs/validation.md).

    Defaults: 100 epochs at most, batch 256, patience 10 (measured on the demo: 300
    demonstrations reach ~80 % sim success from the exact state, 60 reach ~58 %).
    """
    from s2r.closedloop.policy.bc import PolicyEnsemble

    check_number("members", members, low=1, integer=True)
    states, actions, episode = task.state_demonstrations(n_demos, steps, seed=seed)
    options = {"max_epochs": 100, "batch_size": 256, "patience": 10, **mlp_options}
    fits = [fit_policy(task.columns.task_of(states), task.columns.proprio_of(states), actions,
                       episode, kind="mlp", seed=member_seed(seed, j), **options)
            for j in range(int(members))]
    return fits[0] if len(fits) == 1 else PolicyEnsemble(fits)


def member_seed(seed: int, member: int) -> int:
    """Seed of ensemble member ``member``: ``seed`` itself for member 0."""
    if member == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(member)]).generate_state(1)[0])
