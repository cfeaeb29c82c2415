"""A two-stage behaviour-cloning policy: read the scene from the embedding, then act.

Stage 1, perception: a ridge probe (:class:`~s2r.metrics.action_probe.ActionProbe`) maps the
frame's embedding ``Z`` to the task state the camera must supply (for the demo: the leg's and
the tabletop's pose, :data:`s2r.datasets.demo.TASK_COLUMNS`; the robot's own state is
proprioception).
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
from s2r.metrics.action_probe import DEFAULT_PROBE_ALPHA, ActionProbe
from s2r.checks import check_embeddings, check_frame_matrix, check_number
from s2r.closedloop.policy.bc import Policy, fit_policy

__all__ = ["TwoStagePolicy", "fit_two_stage", "fit_state_control"]

#: Probe penalties tried by ``alpha="auto"``.
ALPHAS = (1e-4, 1e-3, 1e-2)


@dataclass
class TwoStagePolicy:
    """Perception probe + control MLP; :meth:`predict` maps ``(Z, proprio)`` to actions.

    Attributes
    ----------
    probe : ActionProbe
        ``Z (N, D) -> task state (N, K)``, fitted on every training frame.
    control : Policy
        ``[task state, proprio] -> actions``.
    """

    probe: ActionProbe
    control: Policy
    alpha: float = DEFAULT_PROBE_ALPHA

    def decode(self, Z) -> np.ndarray:
        """The task state read from embeddings ``Z (N, D)``: ``(N, K)``."""
        return self.probe.predict_actions(Z)

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
        What the probe must read from ``Z`` (for the demo: state columns
        :data:`s2r.datasets.demo.TASK_COLUMNS`).
    actions : array-like (N, A)
    episode : array-like (N,) of int
        Whole episodes form the cross-fitting folds and the MLP's held-out set.
    seed : int
    alpha : float or "auto"
        Ridge penalty of the probe (fraction of the embeddings' total variance); "auto"
        (default) picks from :data:`ALPHAS` the one with the smallest cross-fitted error.
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
    best = None
    for a in alphas:
        decoded = np.empty_like(S)
        for k in np.unique(folds):
            held = folds == k
            decoded[held] = ActionProbe(alpha=a).fit(Z[~held], S[~held]).predict_actions(
                Z[held])
        err = float(np.mean(((decoded - S) / np.where(S.std(0) > 0, S.std(0), 1.0)) ** 2))
        if best is None or err < best[0]:
            best = (err, a, decoded)
    _, a, decoded = best
    if control is None:
        control = fit_policy(decoded, proprio, Y, ep, kind="mlp", seed=seed, **mlp_options)
    elif control.n_embed != S.shape[1]:
        raise MetricError(f"control was fitted on {control.n_embed} task-state columns, the "
                          f"probe reads {S.shape[1]}")
    return TwoStagePolicy(probe=ActionProbe(alpha=a).fit(Z, S), control=control, alpha=a)


def fit_state_control(n_demos: int, *, steps: int = 24, seed: int = 0, **mlp_options) -> Policy:
    """The control MLP fitted on exact states of ``n_demos`` expert episodes of the demo's
    task (:func:`s2r.closedloop.rollout.state_demonstrations`: nothing rendered, so hundreds cost
    seconds): ``[task state (12), proprio (10)] -> action``. One per seed, shared by every
    encoder's two-stage policy (the encoders differ in perception only).

    Defaults: 100 epochs at most, batch 256, patience 10 (measured: 300 demonstrations reach
    ~80 % sim success from the exact state, 60 reach ~58 %).
    """
    from s2r.datasets.demo import PROPRIO_COLUMNS, TASK_COLUMNS
    from s2r.closedloop.rollout import state_demonstrations

    states, actions, episode = state_demonstrations(n_demos, steps, seed=seed)
    options = {"max_epochs": 100, "batch_size": 256, "patience": 10, **mlp_options}
    return fit_policy(states[:, TASK_COLUMNS], states[:, PROPRIO_COLUMNS], actions,
                      episode, kind="mlp", seed=seed, **options)
