"""Linear probes on frozen embeddings: the action probe (eq. 2) and the domain probe.

Action probe
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
    (``torch.nn.Linear`` on z-scored embeddings, Adam, mini-batches, score = 1 - mean
    training loss of the last 100 epochs) and keeps the loss curve.

Domain probe
    :class:`DomainProbe`: an L2 logistic classifier of sim vs real on the embeddings z-scored
    with its training frames' statistics; classes weighted inversely to their frequency.

The cross-validated scores built from these probes (held-out, transfer, their floors, the
domain probe's held-out accuracy and separability) live in :mod:`s2r.metrics.crossval`.
"""

from __future__ import annotations

import warnings as _warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import _moments as mom
from s2r.metrics.validation import check_choice, check_embeddings, check_number
from s2r.progress import ProgressCallback, report

#: Default ridge penalty of the scores: chosen by episode-grouped cross-validation on the
#: training frames of each fit (nested for the held-out score).
DEFAULT_RIDGE_ALPHA = "auto"
#: Penalty of a lone :class:`ActionProbe` / :func:`action_score` / :func:`transfer_score`
#: (no episodes to cross-validate on), as a fraction of the training embeddings' variance.
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
DEFAULT_DOMAIN_C = 1.0
SOLVERS = ("ridge", "adam")
# The paper's probe protocol (Section III-D and the reference code).
PAPER_EPOCHS = 10_000
PAPER_BATCH_SIZE = 200
PAPER_LR = 1e-3
PAPER_SCORE_LAST = 100


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class ActionScoreResult:
    """An action score (eq. 2) and how it was obtained.

    Attributes
    ----------
    value : float
        ``1 - mean squared error`` over frames and scored action dims (standardised actions).
    split : str
        ``"train"``, ``"heldout"``, ``"transfer:sim->real"`` or ``"transfer:real->sim"``.
    solver : str
    alpha : float
        Ridge penalty (fraction of the training embeddings' total variance); 0 for
        ``solver="adam"``. With nested selection (held-out, ``alpha="auto"``): the median of
        the per-fold choices listed in ``alphas``.
    n_train, n_test : int
        Frames used to fit and to score.
    floor : float or None
        The same score of the no-information predictor (the training mean action) on the
        same split; None for the training score.
    alphas : tuple of float
        Held-out: the penalty used in each outer fold.
    per_dim : tuple of float
        The score per action dimension (``None`` for unscored constant dims).
    constant_action_dims : tuple of int
        Dimensions left out because they are constant in the training set.
    loss_curve : tuple of float or None
        Adam only: mean training loss (scored dims) per epoch.
    warnings : tuple of str
    """

    value: float
    split: str
    solver: str
    alpha: float
    n_train: int
    n_test: int
    per_dim: tuple = field(default=(), repr=False)
    constant_action_dims: tuple = ()
    loss_curve: Optional[tuple] = field(default=None, repr=False)
    warnings: tuple = ()
    floor: Optional[float] = None
    alphas: tuple = ()


@dataclass(frozen=True)
class DomainProbeResult:
    """Held-out sim-vs-real classification by a linear probe.

    Attributes
    ----------
    value : float
        Balanced accuracy (mean of sim recall and real recall), 0.5 = chance.
    accuracy : float
        Plain accuracy (for reference).
    recall_sim, recall_real : float
    separability : float
        Held-out discriminability ``d'`` of the probe's out-of-fold logits (difference of the
        domain means over their pooled standard deviation): 0 = chance, growing without
        bound as the domains move apart (it keeps ranking where ``value`` saturates at 1).
    C : float
        Inverse L2 strength of the logistic regression.
    n_folds : int
    warnings : tuple of str
    """

    value: float
    accuracy: float
    recall_sim: float
    recall_real: float
    separability: float
    C: float
    n_folds: int
    warnings: tuple = ()


# --------------------------------------------------------------------------- action probe
def _features(Z, n_features: int) -> np.ndarray:
    """Validated float64 embeddings for a fitted probe of ``n_features`` inputs."""
    Z = check_embeddings(Z, min_frames=1).Z
    if Z.shape[1] != n_features:
        raise MetricError(f"embeddings have {Z.shape[1]} features but the probe was fitted "
                          f"on {n_features}")
    return np.asarray(Z, dtype=np.float64)


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
        model = mom.fit_moments(m, float(self.alpha), fit_intercept=self.fit_intercept)
        if not model.scored.any():
            raise MetricError("every action dimension is constant in the training frames: "
                              "there is nothing for the action probe to predict")
        W, b = gm.raw_model(model)
        self.coef_, self.intercept_ = W.T.copy(), b
        self.action_mean_, self.action_scale_ = gm.raw_action_stats(model)
        self.scored_dims_ = model.scored.copy()
        self.training_score_ = mom.score_from_sse(mom.sse_moments(model, m), m.n, model.scored)
        self.loss_curve_ = None

    def _fit_adam(self, Z, Y):
        import torch

        for name in ("epochs", "batch_size", "score_last"):
            check_number(name, getattr(self, name), low=1, integer=True)
        check_number("lr", self.lr, low=0, low_open=True)
        check_number("weight_decay", self.weight_decay, low=0)
        x_mean, x_std = mom.prescale(Z)
        if not self.fit_intercept:
            x_mean = np.zeros_like(x_mean)
        y_mean, y_std = mom.prescale(Y)
        Yc = (Y - y_mean) / y_std
        scored = Yc.var(axis=0) > mom.CONSTANT_VARIANCE
        if not scored.any():
            raise MetricError("every action dimension is constant in the training frames: "
                              "there is nothing for the action probe to predict")
        device = torch.device(self.device or "cpu")
        X = torch.as_tensor(((Z - x_mean) / x_std).astype(np.float32), device=device)
        T = torch.as_tensor(Yc.astype(np.float32), device=device)
        mask = torch.as_tensor(scored.astype(np.float32), device=device)
        n, D = X.shape
        A = T.shape[1]
        gen = torch.Generator(device="cpu").manual_seed(int(self.seed))
        layer = torch.nn.Linear(D, A, bias=self.fit_intercept).to(device)
        with torch.no_grad():  # torch's default init, drawn from our own generator
            bound = 1.0 / np.sqrt(D)
            layer.weight.copy_(torch.empty(A, D).uniform_(-bound, bound, generator=gen))
            if layer.bias is not None:
                layer.bias.copy_(torch.empty(A).uniform_(-bound, bound, generator=gen))
        opt = torch.optim.Adam(layer.parameters(), lr=float(self.lr),
                               weight_decay=float(self.weight_decay))
        k = float(mask.sum())
        bs = int(self.batch_size)
        curve = np.empty(int(self.epochs))
        with _torch_threads_for(bs * D * A, device):
            for epoch in range(int(self.epochs)):
                curve[epoch] = _adam_epoch(layer, opt, X, T, mask, k, bs, gen)
                report(self.progress, epoch + 1, int(self.epochs), f"loss {curve[epoch]:.4f}")
        Wn = layer.weight.detach().cpu().double().numpy().T  # (D, A) on standardised inputs
        bn = (layer.bias.detach().cpu().double().numpy() if layer.bias is not None
              else np.zeros(A))
        W = Wn / x_std[:, None]
        self.coef_ = W.T.copy()
        self.intercept_ = bn - x_mean @ W
        self.action_mean_, self.action_scale_ = y_mean, y_std
        self.scored_dims_ = scored
        self.loss_curve_ = curve
        last = min(int(self.score_last), curve.size)
        self.training_score_ = 1.0 - float(curve[-last:].mean())

    # ------------------------------------------------------------------ use
    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise MetricError("this ActionProbe is not fitted yet: call fit(Z, actions) first")

    def predict(self, Z) -> np.ndarray:
        """Standardised action predictions ``(N, A)`` for raw embeddings ``Z (N, D)``."""
        self._check_fitted()
        return _features(Z, self.n_features_in_) @ self.coef_.T + self.intercept_

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


def _adam_epoch(layer, opt, X, T, mask, k: float, bs: int, gen) -> float:
    """One pass over shuffled mini-batches; returns the mean batch loss (scored dims)."""
    import torch

    n = X.shape[0]
    perm = torch.randperm(n, generator=gen).to(X.device)
    total, batches = torch.zeros((), device=X.device), 0
    for start in range(0, n, bs):
        idx = perm[start:start + bs]
        loss = ((layer(X[idx]) - T[idx]) ** 2 * mask).sum() / (idx.numel() * k)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.detach()
        batches += 1
    return float(total) / batches


@contextmanager
def _torch_threads_for(flops_per_step: int, device) -> Iterator[None]:
    """Run tiny CPU steps on one torch thread (restored afterwards).

    A mini-batch step of a small probe is a few microseconds of arithmetic; with several
    threads on a busy machine the synchronisation costs ~15x more than the work (measured
    20 s vs 1.2 s for 1,600 steps of a 20 -> 4 probe on 2 shared cores).
    """
    import torch

    if getattr(device, "type", str(device)) != "cpu" or flops_per_step > 2_000_000:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


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
        warnings=_constant_warning(constant))


def _per_dim_scores(probe: ActionProbe, Z, Y) -> tuple:
    err = ((Y - probe.action_mean_) / probe.action_scale_ - probe.predict(Z)) ** 2
    return tuple(float(1 - e) if s else None for e, s in zip(err.mean(axis=0), probe.scored_dims_))


def _constant_warning(constant) -> tuple:
    if not constant:
        return ()
    return (f"action dims {list(constant)} are constant in the training frames and left out "
            "of the action scores",)


# --------------------------------------------------------------------------- shared engine
def _fit_checked(m: "mom.Moments", alpha: float) -> "mom.LinearModel":
    model = mom.fit_moments(m, alpha)
    if not model.scored.any():
        raise MetricError("every action dimension is constant in the training frames: "
                          "there is nothing for the action probe to predict")
    return model


def _transfer_moments(m_train: "mom.Moments", m_test: "mom.Moments", alpha: float):
    """``(AS, floor, per-dim scores, model)`` of the probe fitted on ``m_train`` and scored on
    ``m_test``; the floor is the score of ``m_train``'s mean action on ``m_test``."""
    model = _fit_checked(m_train, alpha)
    sse = mom.sse_moments(model, m_test)
    per_dim = tuple(float(1 - e / m_test.n) if s else None for e, s in zip(sse, model.scored))
    floor = mom.score_from_sse(mom.sse_of_mean(model, m_test), m_test.n, model.scored)
    return mom.score_from_sse(sse, m_test.n, model.scored), floor, per_dim, model


# --------------------------------------------------------------------------- domain probe
class DomainProbe:
    """Logistic-regression probe telling real frames from sim frames.

    Parameters
    ----------
    C : float, default 1.0
        Inverse L2 penalty (scikit-learn's ``C``) on z-scored embeddings.
    max_iter : int, default 1000
        L-BFGS iterations.

    Attributes
    ----------
    coef_ : ndarray of shape (1, D)
        Weights on RAW embeddings; ``Z @ coef_.T + intercept_`` is the logit of "real".
    intercept_ : ndarray of shape (1,)
    converged_ : bool
    n_features_in_ : int

    Notes
    -----
    Classes are weighted inversely to their frequency (``class_weight="balanced"``), matching
    the balanced-accuracy score.
    """

    def __init__(self, C: float = DEFAULT_DOMAIN_C, *, max_iter: int = 1000):
        self.C = C
        self.max_iter = max_iter

    def fit(self, Z, domain) -> "DomainProbe":
        """Fit on ``Z (N, D)`` and ``domain (N,)`` (both domains required)."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        check_number("C", self.C, low=0, low_open=True)
        check_number("max_iter", self.max_iter, low=1, integer=True)
        checked = check_embeddings(Z, domain)
        mean, std = mom.prescale(checked.Z)
        X = ((checked.Z - mean) / std).astype(checked.Z.dtype, copy=False)
        y = (checked.domain == "real").astype(int)
        clf = LogisticRegression(C=float(self.C), class_weight="balanced",
                                 max_iter=int(self.max_iter))
        with _warnings.catch_warnings(record=True) as caught:
            _warnings.simplefilter("always", ConvergenceWarning)
            clf.fit(X, y)
        self.converged_ = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        w = clf.coef_[0].astype(np.float64) / std
        self.coef_ = w[None, :]
        self.intercept_ = np.array([float(clf.intercept_[0]) - float(mean @ w)])
        self.n_features_in_ = checked.Z.shape[1]
        return self

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise MetricError("this DomainProbe is not fitted yet: call fit(Z, domain) first")

    def decision_function(self, Z) -> np.ndarray:
        """Logit of "real" per frame, ``(N,)``."""
        self._check_fitted()
        return _features(Z, self.n_features_in_) @ self.coef_[0] + self.intercept_[0]

    def predict(self, Z) -> np.ndarray:
        """``"sim"``/``"real"`` per frame."""
        return np.where(self.decision_function(Z) > 0, "real", "sim")

    def score(self, Z, domain) -> float:
        """Balanced accuracy on ``(Z, domain)`` (both domains required)."""
        checked = check_embeddings(Z, domain)
        pred = self.decision_function(checked.Z) > 0
        real = checked.domain == "real"
        return 0.5 * (float(pred[real].mean()) + float((~pred[~real]).mean()))

    def as_linear(self) -> tuple[np.ndarray, np.ndarray]:
        """``(w (D, 1), b (1,))``: ``Z @ w + b`` = logit of "real", for saliency."""
        self._check_fitted()
        return self.coef_.T.copy(), self.intercept_.copy()
