"""Linear probes on frozen embeddings: action score (eq. 2), transfer score, domain probe.

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

    Default solver: closed-form ridge on z-scored embeddings with an intercept (exact optimum,
    one ``D x D`` solve -- ``N x N`` when there are fewer frames than dimensions), minimising
    ``mean_i ||a~_i - g(z_i)||^2 + alpha ||W||^2``; ``alpha`` is per frame, on z-scored
    features (sklearn's ``Ridge(alpha=alpha * n)``). The embeddings are z-scored once with the
    statistics of all the frames being scored (unsupervised: no action is used), so the
    train, held-out and transfer probes of one encoder share one feature scaling.
    ``solver="adam"`` reproduces the paper's protocol (``torch.nn.Linear``, Adam, mini-batches,
    score = 1 - mean training loss of the last 100 epochs) and keeps the loss curve.

Scores
    ``action_score`` (train; the paper's choice), ``heldout_action_score`` (probes fitted on
    some episodes, scored on whole episodes never seen in training, see :func:`episode_folds`),
    ``transfer_score`` (fitted on all sim frames, scored on all real frames, actions
    standardised with the sim statistics; ``source="real"`` for the reverse).

Domain probe
    ``domain_probe_accuracy``: held-out **balanced** accuracy of an L2 logistic classifier of
    sim vs real on z-scored embeddings (same episode folds). 0.5 = cannot tell the domains
    apart (invariant), 1.0 = linearly separable. Balanced accuracy (mean of the per-domain
    recalls) so that a 90 % / 10 % domain split cannot score 0.9 by always saying "sim".
"""

from __future__ import annotations

import warnings as _warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import _moments as mom
from s2r.metrics._validation import _check_choice, _check_embeddings, _check_number
from s2r.progress import ProgressCallback, report

#: Default ridge penalty of the scores: chosen per encoder by episode-grouped CV.
DEFAULT_RIDGE_ALPHA = "auto"
#: Penalty of a lone :class:`ActionProbe` / :func:`action_score` / :func:`transfer_score`
#: (no episodes to cross-validate on).
DEFAULT_PROBE_ALPHA = 1.0
#: Grid searched by ``ridge_alpha="auto"`` (per frame, on z-scored features).
ALPHA_GRID = tuple(float(10.0 ** k) for k in range(-4, 4))
DEFAULT_N_FOLDS = 5
DEFAULT_DOMAIN_C = 1.0
SOLVERS = ("ridge", "adam")
# The paper's probe protocol (Section III-D and the reference code).
PAPER_EPOCHS = 10_000
PAPER_BATCH_SIZE = 200
PAPER_LR = 1e-3
PAPER_SCORE_LAST = 100


# --------------------------------------------------------------------------- folds
@dataclass(frozen=True)
class Folds:
    """Episode-grouped, domain-stratified cross-validation folds.

    Attributes
    ----------
    group : ndarray of shape (N,), int
        Group (episode, or time block of an episode) of each frame, ``0..G-1``.
    group_domain : ndarray of shape (G,), str
    group_episode : ndarray of shape (G,), int
    group_fold : ndarray of shape (G,), int
        Fold of each group, ``0..n_folds-1``; every fold has groups of both domains.
    n_folds : int
    unit : dict
        ``{"sim": "episode"|"time-block", "real": ...}``: what a group is in each domain.
    warnings : tuple of str
    """

    group: np.ndarray
    group_domain: np.ndarray
    group_episode: np.ndarray
    group_fold: np.ndarray
    n_folds: int
    unit: dict
    warnings: tuple = ()

    @property
    def n_groups(self) -> int:
        return int(self.group_domain.size)

    @property
    def frame_fold(self) -> np.ndarray:
        """Fold of each frame, ``(N,)``."""
        return self.group_fold[self.group]


def episode_folds(domain, episode, *, n_folds: int = DEFAULT_N_FOLDS, seed: int = 0) -> Folds:
    """Split frames into folds of whole episodes, each fold holding episodes of both domains.

    Within each domain the episodes are shuffled (``numpy.random.default_rng(seed)``) and dealt
    round-robin to ``K = min(n_folds, fewest episodes in a domain)`` folds (GroupKFold,
    stratified by domain). Training on ``K - 1`` folds and testing on the last gives a score
    on episodes never seen in training.

    Fallback (documented, with a warning): a domain with a single episode cannot be split by
    episode; its frames -- taken in the given order, which FrameSet loaders keep temporal --
    are cut into ``n_folds`` contiguous time blocks that act as episodes. Held-out scores are
    then optimistic (neighbouring blocks are correlated).

    Parameters
    ----------
    domain : array-like of shape (N,)
    episode : array-like of shape (N,), int
    n_folds : int, default 5
        At least 2.
    seed : int

    Returns
    -------
    Folds

    Raises
    ------
    MetricError
        Fewer than 2 frames in a domain (nothing to hold out).
    """
    _check_number("n_folds", n_folds, low=2, integer=True)
    domain = np.asarray(domain)
    episode = np.asarray(episode)
    n = domain.size
    group = np.empty(n, dtype=np.int64)
    g_dom, g_ep, unit, warns = [], [], {}, []
    per_domain = {}
    for d in ("sim", "real"):
        idx = np.flatnonzero(domain == d)
        eps = np.unique(episode[idx])
        if eps.size >= 2:
            unit[d] = "episode"
            keys = np.searchsorted(eps, episode[idx])
            per_domain[d] = (idx, keys, eps, eps.size)
        else:
            if idx.size < 2:
                raise MetricError(
                    f"the {d!r} domain has {idx.size} frame(s): at least 2 are needed to hold "
                    "some out for held-out scores")
            blocks = min(int(n_folds), idx.size)
            unit[d] = "time-block"
            keys = (np.arange(idx.size) * blocks) // idx.size
            per_domain[d] = (idx, keys, np.full(blocks, eps[0]), blocks)
            warns.append(
                f"held-out split: the {d!r} domain has a single episode, so its frames are cut "
                f"into {blocks} contiguous time blocks used as episodes (held-out scores are "
                "optimistic; bootstrap intervals resample these blocks)")
    k = min(int(n_folds), *(v[3] for v in per_domain.values()))
    rng = np.random.default_rng(seed)
    folds = []
    for d in ("sim", "real"):
        idx, keys, ep_of_key, m = per_domain[d]
        base = len(g_dom)
        group[idx] = base + keys
        g_dom += [d] * m
        g_ep += list(ep_of_key)
        fold = np.empty(m, dtype=np.int64)
        fold[rng.permutation(m)] = np.arange(m) % k
        folds.append(fold)
    return Folds(group=group, group_domain=np.array(g_dom), group_episode=np.array(g_ep),
                 group_fold=np.concatenate(folds), n_folds=k, unit=unit, warnings=tuple(warns))


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
        Ridge penalty (per frame, z-scored features); 0 for ``solver="adam"``.
    n_train, n_test : int
        Frames used to fit and to score.
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
    C : float
        Inverse L2 strength of the logistic regression.
    n_folds : int
    warnings : tuple of str
    """

    value: float
    accuracy: float
    recall_sim: float
    recall_real: float
    C: float
    n_folds: int
    warnings: tuple = ()


# --------------------------------------------------------------------------- action probe
def _features(Z, n_features: int) -> np.ndarray:
    """Validated float64 embeddings for a fitted probe of ``n_features`` inputs."""
    Z = _check_embeddings(Z, min_frames=1).Z
    if Z.shape[1] != n_features:
        raise MetricError(f"embeddings have {Z.shape[1]} features but the probe was fitted "
                          f"on {n_features}")
    return np.asarray(Z, dtype=np.float64)


class ActionProbe:
    """Linear probe from embeddings to the full, z-scored action vector.

    Parameters
    ----------
    alpha : float, default 1.0
        Ridge penalty per frame on z-scored features (``solver="ridge"``). 0 = least squares
        (minimum-norm when under-determined). :func:`select_ridge_alpha` picks one by
        episode-grouped cross-validation.
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
        _check_choice("solver", self.solver, SOLVERS)
        _check_number("alpha", self.alpha, low=0)
        checked = _check_embeddings(Z, actions=actions)
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
            _check_number(name, getattr(self, name), low=1, integer=True)
        _check_number("lr", self.lr, low=0, low_open=True)
        _check_number("weight_decay", self.weight_decay, low=0)
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
        checked = _check_embeddings(Z, actions=actions, min_frames=1)
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
    checked = _check_embeddings(Z, actions=actions)
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
    """``(AS, per-dim scores, model)`` of the probe fitted on ``m_train``, scored on ``m_test``."""
    model = _fit_checked(m_train, alpha)
    sse = mom.sse_moments(model, m_test)
    per_dim = tuple(float(1 - e / m_test.n) if s else None for e, s in zip(sse, model.scored))
    return mom.score_from_sse(sse, m_test.n, model.scored), per_dim, model


class ProbeData:
    """Everything the ridge and domain probes need, computed once per embedding matrix.

    Holds the validated inputs, the episode folds and the per-group sufficient statistics
    (:class:`s2r.metrics._moments.GroupMoments`, one group per episode or time block, one
    float64 block per (domain, fold)). Every score below -- and every bootstrap replicate of
    it -- is a cheap function of these.

    Parameters
    ----------
    Z, domain, actions, episode
        As for the metric functions (validated here).
    n_folds, seed
        Fold construction (see :func:`episode_folds`).
    memory_mb : float
        Budget for the per-group ``D x D`` statistics (bootstrap speed, not results).
    need_actions : bool
        False when only the domain probe is wanted (``actions`` may be None).
    """

    def __init__(self, Z, domain, actions, episode, *, n_folds: int = DEFAULT_N_FOLDS,
                 seed: int = 0, memory_mb: float = 2048.0, need_actions: bool = True):
        checked = _check_embeddings(Z, domain, actions if need_actions else None, episode)
        if checked.episode is None:
            raise MetricError("episode ids are required (held-out splits and the bootstrap "
                              "group frames by episode)")
        self.Z, self.domain, self.episode = checked.Z, checked.domain, checked.episode
        self.folds = episode_folds(self.domain, self.episode, n_folds=n_folds, seed=seed)
        f = self.folds
        self.group_is_real = f.group_domain == "real"
        self.gm = None
        if need_actions:
            if checked.actions is None:
                raise MetricError("actions are required for the action probes")
            block = f.group_fold + f.n_folds * self.group_is_real
            if not (checked.actions.std(axis=0) > 0).any():
                raise MetricError("every action dimension is constant in the training frames: "
                                  "there is nothing for the action probe to predict")
            self.gm = mom.GroupMoments(self.Z, checked.actions, f.group, f.n_groups,
                                       block=block, memory_mb=memory_mb)
            self.n_per_group = self.gm.n

    # --------------------------------------------------------------- ridge scores
    def domain_moments(self, weights=None) -> tuple["mom.Moments", "mom.Moments"]:
        """``(sim, real)`` sums of a replicate (group ``weights``, default all ones)."""
        w = np.ones(self.folds.n_groups) if weights is None else np.asarray(weights, float)
        return self.gm.combine(w * ~self.group_is_real), self.gm.combine(w * self.group_is_real)

    def train_score(self, alpha: float, weights=None, *,
                    moments=None) -> tuple[float, "mom.LinearModel"]:
        """AS of the probe fitted and scored on all frames (group ``weights``, default 1).

        ``moments``: the replicate's :meth:`domain_moments`, if already computed.
        """
        m_sim, m_real = moments or self.domain_moments(weights)
        m = m_sim + m_real
        model = _fit_checked(m, alpha)
        return mom.score_from_sse(mom.sse_moments(model, m), m.n, model.scored), model

    def transfer_score(self, alpha: float, weights=None, *, source: str = "sim",
                       moments=None) -> float:
        """AS of the probe fitted on ``source`` frames, scored on the other domain."""
        m_sim, m_real = moments or self.domain_moments(weights)
        m_train, m_test = (m_real, m_sim) if source == "real" else (m_sim, m_real)
        return _transfer_moments(m_train, m_test, alpha)[0]

    def select_alpha(self, alphas=ALPHA_GRID) -> "AlphaSelection":
        """Cross-validated choice of the ridge penalty (see :func:`select_ridge_alpha`)."""
        alphas = tuple(float(a) for a in alphas)
        if not alphas:
            raise MetricError("alphas: give at least one ridge penalty to choose from")
        for a in alphas:
            _check_number("alpha", a, low=0)
        f = self.folds
        sse = np.zeros(len(alphas))
        count = 0.0
        for k in range(f.n_folds):
            test = (f.group_fold == k).astype(float)
            m_train, m_test = self.gm.combine(1 - test), self.gm.combine(test)
            sse += mom.sse_alpha_path(m_train, m_test, alphas)
            scored = mom.normal_equations(m_train)[2].scored
            count += m_test.n * int(scored.sum())
        if count == 0:
            raise MetricError("every action dimension is constant in the training frames of "
                              "every fold: there is nothing for the action probe to predict")
        scores = 1.0 - sse / count
        best = max(range(len(alphas)), key=lambda i: (round(scores[i], 12), alphas[i]))
        return AlphaSelection(alphas[best], alphas, tuple(float(v) for v in scores),
                              f.n_folds)

    def resolve_alpha(self, alpha) -> float:
        """``alpha`` itself, or the cross-validated choice when it is ``"auto"``."""
        if isinstance(alpha, str):
            if alpha != "auto":
                raise MetricError(f"ridge alpha must be a number >= 0 or 'auto', got {alpha!r}")
            return self.select_alpha().alpha
        _check_number("alpha", alpha, low=0)
        return float(alpha)

    def heldout_errors(self, alpha: float) -> tuple[np.ndarray, np.ndarray, list]:
        """Out-of-fold squared errors per group.

        Returns ``(sse (G,), count (G,), models)``: the summed squared standardised error of
        every group's frames under the probe fitted on the other folds, the number of
        (frame, scored dim) entries, and the fold models.
        """
        f = self.folds
        sse = np.zeros(f.n_groups)
        cnt = np.zeros(f.n_groups)
        models = []
        for k in range(f.n_folds):
            test_groups = f.group_fold == k
            model = _fit_checked(self.gm.combine((~test_groups).astype(float)), alpha)
            models.append(model)
            rows = np.flatnonzero(test_groups[f.group])
            for start in range(0, rows.size, mom._CHUNK):
                r = rows[start:start + mom._CHUNK]
                pred = mom.predict(model, self.gm.x(r))
                err = ((self.gm.Y[r] - model.y_center) / model.y_scale - pred) ** 2
                np.add.at(sse, f.group[r], err[:, model.scored].sum(axis=1))
            cnt[test_groups] = self.n_per_group[test_groups] * int(model.scored.sum())
        return sse, cnt, models

    # --------------------------------------------------------------- domain probe
    def domain_predictions(self, C: float) -> tuple[np.ndarray, list]:
        """Out-of-fold "is real" predictions ``(N,) bool`` of the domain probe, + warnings."""
        f = self.folds
        fold = f.frame_fold
        pred = np.zeros(len(self.Z), dtype=bool)
        warns = []
        for k in range(f.n_folds):
            test = fold == k
            probe = DomainProbe(C=C).fit(self.Z[~test], self.domain[~test])
            pred[test] = probe.decision_function(self.Z[test]) > 0
            if not probe.converged_:
                warns.append(f"domain probe: logistic regression did not converge in "
                             f"{probe.max_iter} iterations on fold {k}")
        return pred, warns

    def domain_counts(self, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per group: ``(correct (G,), frames (G,))`` of out-of-fold domain predictions."""
        f = self.folds
        correct = pred == (self.domain == "real")
        return (np.bincount(f.group, weights=correct, minlength=f.n_groups),
                np.bincount(f.group, minlength=f.n_groups).astype(float))


def balanced_accuracy_from_counts(correct, frames, is_real, weights=None) -> tuple[float, float]:
    """``(recall_sim, recall_real)`` from per-group correct/frame counts and group weights."""
    w = np.ones(len(correct)) if weights is None else weights
    rs = (w * correct)[~is_real].sum() / (w * frames)[~is_real].sum()
    rr = (w * correct)[is_real].sum() / (w * frames)[is_real].sum()
    return float(rs), float(rr)


def heldout_action_score(Z, domain, actions, episode, *, alpha=DEFAULT_RIDGE_ALPHA,
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
        Ridge penalty; ``"auto"`` picks the best of :data:`ALPHA_GRID` on the same folds
        (slightly optimistic, see :func:`select_ridge_alpha`).
    n_folds : int
    seed : int
        Fold assignment seed.

    Returns
    -------
    ActionScoreResult
        ``split="heldout"``; ``alpha`` is the penalty used.
    """
    data = ProbeData(Z, domain, actions, episode, n_folds=n_folds, seed=seed)
    alpha = data.resolve_alpha(alpha)
    sse, cnt, models = data.heldout_errors(alpha)
    constant = sorted({int(j) for m in models for j in np.flatnonzero(~m.scored)})
    return ActionScoreResult(
        value=1.0 - float(sse.sum() / cnt.sum()), split="heldout", solver="ridge",
        alpha=float(alpha), n_train=len(data.Z), n_test=len(data.Z),
        constant_action_dims=tuple(constant),
        warnings=data.folds.warnings + _constant_warning(constant))


@dataclass(frozen=True)
class AlphaSelection:
    """Result of :func:`select_ridge_alpha`.

    Attributes
    ----------
    alpha : float
        The penalty with the best cross-validated score (the larger one on ties).
    alphas : tuple of float
        The grid.
    cv_scores : tuple of float
        Held-out AS of each grid value (pooled out-of-fold errors).
    n_folds : int
    """

    alpha: float
    alphas: tuple
    cv_scores: tuple
    n_folds: int


def select_ridge_alpha(Z, domain, actions, episode, *, alphas=ALPHA_GRID,
                       n_folds: int = DEFAULT_N_FOLDS, seed: int = 0) -> AlphaSelection:
    """Pick the ridge penalty by episode-grouped, domain-stratified cross-validation.

    One eigendecomposition per fold serves the whole grid. The held-out score reported with
    the selected penalty is measured on the folds that chose it, so it is slightly optimistic
    (by the spread of the grid's scores, small for a grid of 8 decades); nested
    cross-validation would remove that at 5x the cost.

    Parameters
    ----------
    Z, domain, actions, episode
        As for :func:`heldout_action_score`.
    alphas : sequence of float
        Candidate penalties (per frame, on z-scored features), each >= 0.
    n_folds, seed
        Folds (see :func:`episode_folds`).

    Returns
    -------
    AlphaSelection
    """
    data = ProbeData(Z, domain, actions, episode, n_folds=n_folds, seed=seed)
    return data.select_alpha(alphas)


def transfer_score(Z, domain, actions, *, alpha: float = DEFAULT_PROBE_ALPHA,
                   source: str = "sim") -> ActionScoreResult:
    """AS of a probe fitted on one domain and scored on the other.

    ``source="sim"`` (default): fitted on all sim frames, actions standardised with the sim
    statistics, scored on all real frames -- how well a sim-trained linear policy head reads
    the real robot's actions. ``source="real"``: the reverse.

    Parameters
    ----------
    Z : array-like of shape (N, D)
    domain : array-like of shape (N,)
    actions : array-like of shape (N, A)
    alpha : float
    source : {"sim", "real"}

    Returns
    -------
    ActionScoreResult
        ``split="transfer:sim->real"`` (or the reverse).
    """
    _check_choice("source", source, ("sim", "real"))
    _check_number("alpha", alpha, low=0)
    checked = _check_embeddings(Z, domain, actions)
    is_real = checked.domain == "real"
    gm = mom.GroupMoments(checked.Z, checked.actions, is_real.astype(np.int64), 2)
    src = np.array([0.0, 1.0]) if source == "real" else np.array([1.0, 0.0])
    value, per_dim, model = _transfer_moments(gm.combine(src), gm.combine(1 - src), alpha)
    target = "real" if source == "sim" else "sim"
    constant = tuple(int(j) for j in np.flatnonzero(~model.scored))
    n_src = int(is_real.sum()) if source == "real" else int((~is_real).sum())
    return ActionScoreResult(
        value=value, split=f"transfer:{source}->{target}", solver="ridge", alpha=float(alpha),
        n_train=n_src, n_test=len(checked.Z) - n_src, per_dim=per_dim,
        constant_action_dims=constant, warnings=_constant_warning(constant))


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

        _check_number("C", self.C, low=0, low_open=True)
        _check_number("max_iter", self.max_iter, low=1, integer=True)
        checked = _check_embeddings(Z, domain)
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
        checked = _check_embeddings(Z, domain)
        pred = self.decision_function(checked.Z) > 0
        real = checked.domain == "real"
        return 0.5 * (float(pred[real].mean()) + float((~pred[~real]).mean()))

    def as_linear(self) -> tuple[np.ndarray, np.ndarray]:
        """``(w (D, 1), b (1,))``: ``Z @ w + b`` = logit of "real", for saliency."""
        self._check_fitted()
        return self.coef_.T.copy(), self.intercept_.copy()


def domain_probe_accuracy(Z, domain, episode, *, C: float = DEFAULT_DOMAIN_C,
                          n_folds: int = DEFAULT_N_FOLDS, seed: int = 0) -> DomainProbeResult:
    """Held-out balanced accuracy of the sim-vs-real domain probe.

    Each frame is classified by the probe fitted on the other folds (whole episodes, both
    domains in every fold, see :func:`episode_folds`); the result pools all out-of-fold
    predictions.

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
        ``value`` = balanced accuracy, 0.5 = domains indistinguishable.
    """
    _check_number("C", C, low=0, low_open=True)
    data = ProbeData(Z, domain, None, episode, n_folds=n_folds, seed=seed, need_actions=False)
    pred, warns = data.domain_predictions(C)
    real = data.domain == "real"
    correct = pred == real
    rs, rr = float(correct[~real].mean()), float(correct[real].mean())
    return DomainProbeResult(value=0.5 * (rs + rr), accuracy=float(correct.mean()),
                             recall_sim=rs, recall_real=rr, C=float(C),
                             n_folds=data.folds.n_folds,
                             warnings=data.folds.warnings + tuple(warns))
