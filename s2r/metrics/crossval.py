"""Cross-validated probe scores: held-out AS, transfer, their floors, the domain probe.

Everything here is fitted on training frames only. The ridge penalty (``alpha="auto"``) is
chosen by episode-grouped cross-validation **inside** each training set:

- held-out AS: nested cross-validation -- for each outer fold, the penalty is chosen by
  leave-one-fold-out over the other folds, then the probe is fitted on those folds and scores
  the held-out episodes;
- transfer (sim -> real): the penalty is chosen by cross-validation over the sim episodes,
  the probe is fitted on every sim frame and scores the real frames (and the reverse);
- the domain probe z-scores with, and is fitted on, the training folds.

Each action score comes with its **floor**: the same score of the no-information predictor on
the same split (the training fold's mean action for the held-out score, the sim mean action on
real frames for the transfer score). The scores are functions of the per-episode statistics
held by :class:`s2r.metrics.probe_data.ProbeData`.
"""

from __future__ import annotations

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import _moments as mom
from s2r.metrics.action_probe import ALPHA_GRID, DEFAULT_PROBE_ALPHA, DEFAULT_RIDGE_ALPHA
from s2r.metrics.domain_probe import DEFAULT_DOMAIN_C
from s2r.metrics.folds import DEFAULT_N_FOLDS
from s2r.metrics.probe_data import Alpha, ProbeData
from s2r.metrics.results import (ActionScoreResult, AlphaSelection, DomainProbeResult,
                                 constant_dims_warning)
from s2r.checks import check_choice, check_embeddings, check_number


def _median_alpha(alphas) -> float:
    return float(np.median(np.asarray(alphas, dtype=float)))


def heldout_action_score(Z, domain, actions, episode, *, alpha: Alpha = DEFAULT_RIDGE_ALPHA,
                         n_folds: int = DEFAULT_N_FOLDS, seed: int = 0) -> ActionScoreResult:
    """AS on whole episodes never seen in training (episode-grouped, domain-stratified CV).

    Every frame is predicted by the probe fitted on the other ``K - 1`` folds (actions
    standardised with that training split's statistics); the score pools the squared errors of
    all out-of-fold predictions: ``1 - sum(err^2) / #(frame, scored dim) entries``.

    Parameters
    ----------
    Z : array-like of shape (N, D)
    domain : array-like of shape (N,)
    actions : array-like of shape (N, A)
    episode : array-like of shape (N,)
    alpha : float or "auto", default "auto"
        Ridge penalty; ``"auto"`` picks it from :data:`~s2r.metrics.ALPHA_GRID` by
        nested cross-validation (inside each outer training set: no held-out frame is seen).
    n_folds : int
    seed : int
        Fold assignment seed.

    Returns
    -------
    ActionScoreResult
        ``split="heldout"``; ``floor`` is the same score of the training folds' mean action;
        ``alphas`` the penalty of each outer fold.
    """
    data = ProbeData(Z, domain, actions, episode, n_folds=n_folds, seed=seed)
    held = data.heldout(alpha)
    constant = held.constant_action_dims
    return ActionScoreResult(
        value=held.score(), split="heldout", solver="ridge", alpha=_median_alpha(held.alphas),
        n_train=len(data.Z), n_test=len(data.Z), constant_action_dims=constant,
        warnings=data.folds.warnings + constant_dims_warning(constant), floor=held.floor(),
        alphas=held.alphas)


def select_ridge_alpha(Z, domain, actions, episode, *, alphas=ALPHA_GRID,
                       n_folds: int = DEFAULT_N_FOLDS, seed: int = 0) -> AlphaSelection:
    """Pick the ridge penalty by episode-grouped, domain-stratified cross-validation over all
    the frames given (the normal equations of each fold formed once, solved per penalty).

    The scores use it inside each training set only (nested); call this to look at the
    cross-validation curve of a dataset.

    Parameters
    ----------
    Z, domain, actions, episode
        As for :func:`heldout_action_score`.
    alphas : sequence of float
        Candidate penalties (fractions of the training variance), each >= 0.
    n_folds, seed
        Folds (see :func:`s2r.metrics.folds.episode_folds`).

    Returns
    -------
    AlphaSelection
    """
    data = ProbeData(Z, domain, actions, episode, n_folds=n_folds, seed=seed)
    return data.select_alpha(alphas)


def transfer_score(Z, domain, actions, *, episode=None, alpha: Alpha = DEFAULT_PROBE_ALPHA,
                   source: str = "sim", n_folds: int = DEFAULT_N_FOLDS,
                   seed: int = 0) -> ActionScoreResult:
    """AS of a probe fitted on one domain and scored on the other.

    ``source="sim"`` (default): fitted on all sim frames, actions standardised with the sim
    statistics, scored on all real frames -- how well a sim-trained linear policy head reads
    the real robot's actions. ``source="real"``: the reverse.

    Parameters
    ----------
    Z : array-like of shape (N, D)
    domain : array-like of shape (N,)
    actions : array-like of shape (N, A)
    episode : array-like of shape (N,), optional
        Needed for ``alpha="auto"`` (the penalty is chosen by cross-validation over the
        source domain's episodes).
    alpha : float or "auto"
    source : {"sim", "real"}
    n_folds, seed
        Folds of the penalty selection.

    Returns
    -------
    ActionScoreResult
        ``split="transfer:sim->real"`` (or the reverse); ``floor`` is the score of the source
        domain's mean action.
    """
    check_choice("source", source, ("sim", "real"))
    checked = check_embeddings(Z, domain, actions)
    if isinstance(alpha, str):
        if episode is None:
            raise MetricError("transfer_score: alpha='auto' chooses the penalty by "
                              "cross-validation over episodes; give episode ids or a number")
        alpha = ProbeData(checked.Z, checked.domain, checked.actions, episode, n_folds=n_folds,
                          seed=seed).transfer(alpha, source).alphas[0]
    if alpha != float("inf"):          # inf (chosen by "auto"): the source mean action
        check_number("alpha", alpha, low=0)
    checked_Z, Y, is_real = checked.Z, checked.actions, checked.domain == "real"
    gm = mom.GroupMoments(checked_Z, Y, is_real.astype(np.int64), 2)
    src = np.array([0.0, 1.0]) if source == "real" else np.array([1.0, 0.0])
    value, floor, per_dim, model = mom.transfer_moments(gm.combine(src), gm.combine(1 - src),
                                                        float(alpha))
    target = "real" if source == "sim" else "sim"
    constant = tuple(int(j) for j in np.flatnonzero(~model.scored))
    n_src = int(is_real.sum()) if source == "real" else int((~is_real).sum())
    return ActionScoreResult(
        value=value, split=f"transfer:{source}->{target}", solver="ridge", alpha=float(alpha),
        n_train=n_src, n_test=len(checked_Z) - n_src, per_dim=per_dim,
        constant_action_dims=constant, warnings=constant_dims_warning(constant), floor=floor)


def domain_probe_accuracy(Z, domain, episode, *, C: float = DEFAULT_DOMAIN_C,
                          n_folds: int = DEFAULT_N_FOLDS, seed: int = 0) -> DomainProbeResult:
    """Held-out balanced accuracy and separability of the sim-vs-real domain probe.

    Each frame is classified by the probe fitted on the other folds (whole episodes, both
    domains in every fold, see :func:`s2r.metrics.folds.episode_folds`); the result pools all
    out-of-fold predictions.

    Parameters
    ----------
    Z : array-like of shape (N, D)
    domain : array-like of shape (N,)
    episode : array-like of shape (N,)
    C : float
    n_folds : int
    seed : int

    Returns
    -------
    DomainProbeResult
        ``value`` = balanced accuracy (0.5 = domains indistinguishable), ``separability`` =
        ``d'`` of the out-of-fold logits (0 = indistinguishable, unbounded above).
    """
    check_number("C", C, low=0, low_open=True)
    data = ProbeData(Z, domain, None, episode, n_folds=n_folds, seed=seed, need_actions=False)
    evidence, warns = data.domain_evidence(C)
    rs, rr = evidence.recalls()
    accuracy = float(evidence.correct.sum() / evidence.frames.sum())
    return DomainProbeResult(value=0.5 * (rs + rr), accuracy=accuracy, recall_sim=rs,
                             recall_real=rr, separability=evidence.separability(), C=float(C),
                             n_folds=data.folds.n_folds,
                             warnings=data.folds.warnings + tuple(warns))
