"""The action probe (eq. 2) and the paper's training action score.

A linear map from the embedding to the **full** action vector (all ``A`` dimensions; the
reference code's ``nn.Linear(d, 1)`` predicted one number broadcast over the 10-D action).
Actions are z-scored per dimension with the mean and standard deviation of the probe's
training set, so the score is comparable across datasets and action units::

    AS = 1 - 1/(n d) sum_i sum_j (a~_ij - g(z_i)_j)^2            (eq. 2, a~ standardised)

On the training set of a least-squares fit this is the mean R^2 over action dimensions
(in [0, 1]); on held-out data it can be negative (worse than predicting the training mean).
A dimension that is constant in the training set (e.g. a gripper that never moves) has no
scale: it is left out of the mean (listed in ``constant_action_dims``) and the probe
predicts its training value.

Default solver: closed-form ridge with an intercept (exact optimum, one ``D x D`` solve --
``N x N`` when there are fewer frames than dimensions) minimising
``mean_i ||a~_i - g(z_i)||^2 + alpha * tau * ||W||^2`` where ``tau`` is the total variance
of the **training** embeddings: ``alpha`` is a fraction of the embedding's variance, the
same for every encoder width, and nothing is fitted on frames outside the training set
(see :mod:`s2r.metrics._moments`). ``solver="adam"`` reproduces the paper's protocol
(:mod:`s2r.metrics.adam`) and keeps the loss curve.

The cross-validated scores built from it (held-out, transfer and their floors) live in
:mod:`s2r.metrics.crossval`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import _moments as mom
from s2r.metrics.adam import (PAPER_BATCH_SIZE, PAPER_EPOCHS, PAPER_LR, PAPER_SCORE_LAST,
                              fit_adam)
from s2r.metrics.results import ActionScoreResult, constant_dims_warning
from s2r.checks import check_choice, check_embeddings, check_features, check_number
from s2r.progress import ProgressCallback

#: Default ridge penalty of the scores: chosen by episode-grouped cross-validation on the
#: training frames of each fit (nested for the held-out score).
DEFAULT_RIDGE_ALPHA = "auto"
#: Penalty of a lone :class:`ActionProbe` / :func:`action_score` /
#: :func:`~s2r.metrics.crossval.transfer_score` (no episodes to cross-validate on), as a
#: fraction of the training embeddings' variance.
DEFAULT_PROBE_ALPHA = 1e-2
#: Grid searched by ``ridge_alpha="auto"``: fractions of the training embeddings' total
#: variance, from almost least squares (1e-6) to almost the mean action (100), and ``inf``:
#: the no-information probe that predicts the training mean action (chosen when no penalty
#: beats it in cross-validation, so that an embedding without action information scores
#: exactly its floor).
ALPHA_GRID = tuple(float(10.0 ** k) for k in range(-6, 3)) + (float("inf"),)
#: The fixed penalty of the paper's training AS (``action_score_train``), the same for every
#: encoder so that the training score is not confounded by a per-encoder choice.
PAPER_TRAIN_ALPHA = 1e-3
SOLVERS = ("ridge", "adam")


class ActionProbe:
    """Linear probe from embeddings to the full, z-scored action vector.

    Parameters
    ----------
    alpha : float, default 0.01
        Ridge penalty as a fraction of the training embeddings' total variance
        (``solver="ridge"``). 0 = least squares (minimum-norm when under-determined).
        :func:`s2r.metrics.crossval.select_ridge_alpha` picks one by episode-grouped
        cross-validation.
    fit_intercept : bool, default True
        Centre the features (the prediction has a constant term). With False, features are
        only scaled.
    solver : {"ridge", "adam"}, default "ridge"
        ``"adam"``: the paper's protocol (torch ``nn.Linear``, Adam, shuffled mini-batches,
        MSE loss); ``training_score_`` is then ``1 - mean loss of the last score_last epochs``.
    epochs, batch_size, lr, weight_decay, score_last :
        Adam settings (defaults: the paper's 10,000 epochs, batch 200, lr 1e-3, no weight
        decay, last 100 epochs).
    seed : int
        Seed of the Adam initialisation and batch order.
    device : str, optional
        Torch device for Adam (default CPU).
    progress : ProgressCallback, optional
        Called once per Adam epoch.

    Attributes
    ----------
    coef_ : ndarray of shape (A, D)
        Weights on RAW embeddings predicting standardised actions (like ``sklearn`` Ridge).
    intercept_ : ndarray of shape (A,)
    action_mean_, action_scale_ : ndarray of shape (A,)
        Standardisation of the actions (training set; scale 1 for constant dims).
    scored_dims_ : ndarray of shape (A,), bool
        Dimensions that vary in the training set (the ones the score averages over).
    training_score_ : float
        AS on the training set (ridge: exact; adam: mean of the last ``score_last`` epochs).
    loss_curve_ : ndarray of shape (epochs,) or None
        Adam only.
    n_features_in_ : int
    """

    def __init__(self, alpha: float = DEFAULT_PROBE_ALPHA, *, fit_intercept: bool = True,
                 solver: str = "ridge", epochs: int = PAPER_EPOCHS,
                 batch_size: int = PAPER_BATCH_SIZE, lr: float = PAPER_LR,
                 weight_decay: float = 0.0, score_last: int = PAPER_SCORE_LAST, seed: int = 0,
                 device: Optional[str] = None, progress: Optional[ProgressCallback] = None):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.score_last = score_last
        self.seed = seed
        self.device = device
        self.progress = progress

    # ------------------------------------------------------------------ fit
    def fit(self, Z, actions) -> "ActionProbe":
        """Fit on embeddings ``Z (N, D)`` and actions ``(N, A)``; returns ``self``."""
        check_choice("solver", self.solver, SOLVERS)
        if self.alpha != float("inf"):      # inf: the training mean action (coef_ = 0)
            check_number("alpha", self.alpha, low=0)
        checked = check_embeddings(Z, actions=actions)
        Z, Y = checked.Z, checked.actions
        self.n_features_in_ = Z.shape[1]
        if self.solver == "ridge":
            self._fit_ridge(Z, Y)
        else:
            self._fit_adam(Z, Y)
        return self

    def _fit_ridge(self, Z, Y):
        gm = mom.GroupMoments(Z, Y, np.zeros(len(Z), dtype=np.int64), 1,
                              center=self.fit_intercept)
        m = gm.combine(np.ones(1))
        model = mom.fit_scored(m, float(self.alpha), fit_intercept=self.fit_intercept)
        W, b = gm.raw_model(model)
        self.coef_, self.intercept_ = W.T.copy(), b
        self.action_mean_, self.action_scale_ = gm.raw_action_stats(model)
        self.scored_dims_ = model.scored.copy()
        self.training_score_ = mom.score_from_sse(mom.sse_moments(model, m), m.n, model.scored)
        self.loss_curve_ = None

    def _fit_adam(self, Z, Y):
        for name in ("epochs", "batch_size", "score_last"):
            check_number(name, getattr(self, name), low=1, integer=True)
        check_number("lr", self.lr, low=0, low_open=True)
        check_number("weight_decay", self.weight_decay, low=0)
        fit = fit_adam(Z, Y, fit_intercept=self.fit_intercept, epochs=self.epochs,
                       batch_size=self.batch_size, lr=self.lr, weight_decay=self.weight_decay,
                       seed=self.seed, device=self.device, progress=self.progress)
        self.coef_, self.intercept_ = fit.coef, fit.intercept
        self.action_mean_, self.action_scale_ = fit.action_mean, fit.action_scale
        self.scored_dims_ = fit.scored
        self.loss_curve_ = curve = fit.loss_curve
        last = min(int(self.score_last), curve.size)
        self.training_score_ = 1.0 - float(curve[-last:].mean())

    # ------------------------------------------------------------------ use
    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise MetricError("this ActionProbe is not fitted yet: call fit(Z, actions) first")

    def predict(self, Z) -> np.ndarray:
        """Standardised action predictions ``(N, A)`` for raw embeddings ``Z (N, D)``."""
        self._check_fitted()
        return check_features(Z, self.n_features_in_) @ self.coef_.T + self.intercept_

    def predict_actions(self, Z) -> np.ndarray:
        """Action predictions in the original units ``(N, A)``."""
        return self.predict(Z) * self.action_scale_ + self.action_mean_

    def score(self, Z, actions) -> float:
        """AS (eq. 2) on ``(Z, actions)``, actions standardised with the TRAINING statistics."""
        self._check_fitted()
        checked = check_embeddings(Z, actions=actions, min_frames=1)
        if checked.actions.shape[1] != self.coef_.shape[0]:
            raise MetricError(f"actions have {checked.actions.shape[1]} dimensions but the "
                              f"probe predicts {self.coef_.shape[0]}")
        err = ((checked.actions - self.action_mean_) / self.action_scale_
               - self.predict(checked.Z)) ** 2
        return 1.0 - float(err[:, self.scored_dims_].mean())

    def as_linear(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W (D, A), b (A,))``: ``Z @ W + b`` = standardised actions, for saliency."""
        self._check_fitted()
        return self.coef_.T.copy(), self.intercept_.copy()


def action_score(Z, actions, *, alpha: float = DEFAULT_PROBE_ALPHA, solver: str = "ridge",
                 **probe_kwargs) -> ActionScoreResult:
    """Training-set action score (the paper's AS, eq. 2) of a probe fitted on all frames.

    Parameters
    ----------
    Z : array-like of shape (N, D)
    actions : array-like of shape (N, A)
    alpha : float
        Ridge penalty (``solver="ridge"``).
    solver : {"ridge", "adam"}
    **probe_kwargs
        Passed to :class:`ActionProbe` (Adam settings, seed, device, progress).

    Returns
    -------
    ActionScoreResult
        ``split="train"``; Adam results carry the ``loss_curve``.
    """
    probe = ActionProbe(alpha=alpha, solver=solver, **probe_kwargs)
    checked = check_embeddings(Z, actions=actions)
    probe.fit(checked.Z, checked.actions)
    per_dim = _per_dim_scores(probe, checked.Z, checked.actions)
    constant = tuple(int(j) for j in np.flatnonzero(~probe.scored_dims_))
    return ActionScoreResult(
        value=float(probe.training_score_), split="train", solver=solver,
        alpha=float(alpha) if solver == "ridge" else 0.0, n_train=len(checked.Z),
        n_test=len(checked.Z), per_dim=per_dim, constant_action_dims=constant,
        loss_curve=None if probe.loss_curve_ is None else tuple(map(float, probe.loss_curve_)),
        warnings=constant_dims_warning(constant))


def _per_dim_scores(probe: ActionProbe, Z, Y) -> tuple:
    err = ((Y - probe.action_mean_) / probe.action_scale_ - probe.predict(Z)) ** 2
    return tuple(float(1 - e) if s else None for e, s in zip(err.mean(axis=0), probe.scored_dims_))


def cross_fitted_predictions(Z, actions, folds, alphas) -> np.ndarray:
    """Every frame's actions predicted by ridge probes fitted on the other folds, for every
    penalty, from one pass over the frames.

    Equals ``ActionProbe(alpha=a).fit(Z[folds != k], actions[folds != k]).predict_actions(
    Z[folds == k])`` for every penalty ``a`` and fold ``k`` (to float rounding): the per-fold
    sufficient statistics are summed once, and each fold's training set solves every penalty
    from the same normal equations, instead of ``len(alphas) x n_folds`` fits reading every
    frame.

    Parameters
    ----------
    Z : array-like of shape (N, D)
    actions : array-like of shape (N, A)
    folds : array-like of shape (N,), int
        Fold of every frame (at least two distinct folds).
    alphas : sequence of float >= 0
        Ridge penalties (finite).

    Returns
    -------
    ndarray of shape (len(alphas), N, A), float64
        In the actions' units.
    """
    checked = check_embeddings(Z, actions=actions)
    Z, Y = checked.Z, checked.actions
    folds = np.asarray(folds)
    if folds.shape != (len(Z),):
        raise MetricError(f"folds must have one entry per frame ({len(Z)}), got shape "
                          f"{folds.shape}")
    names, group = np.unique(folds, return_inverse=True)
    if names.size < 2:
        raise MetricError("cross-fitting needs at least two folds")
    alphas = [float(a) for a in alphas]
    for a in alphas:
        check_number("alpha", a, low=0)
    G = names.size
    gm = mom.GroupMoments(Z, Y, group, G, block=np.arange(G))
    out = np.empty((len(alphas),) + Y.shape)
    for k in range(G):
        train = np.ones(G)
        train[k] = 0.0
        m = gm.combine(train)
        model, coefs = mom.path_coefficients(m, alphas)
        if not model.scored.any():
            raise MetricError("every action dimension is constant in the training frames: "
                              "there is nothing for the action probe to predict")
        held = np.flatnonzero(group == k)
        mean, scale = gm.raw_action_stats(model)
        X = gm.x(held) - model.x_center
        for i in range(len(alphas)):
            out[i, held] = (X @ coefs[i]) * scale + mean
    return out
