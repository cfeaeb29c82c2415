"""The engine of the cross-validated scores: per-episode statistics computed once.

:class:`ProbeData` validates one embedding matrix with its labels, builds the episode folds
(:func:`s2r.metrics.folds.episode_folds`) and keeps the per-group sufficient statistics of
the ridge probes (:class:`s2r.metrics._moments.GroupMoments`, one group per episode or time
block). From them it chooses the ridge penalty by cross-validation inside a training set and
returns the per-group test errors of the held-out, transfer and training probes
(:class:`TestErrors`) and the out-of-fold domain-probe outputs (:class:`DomainEvidence`).
Every score and every bootstrap replicate of it is then a ratio of weighted sums of those
per-group numbers: a replicate (group weights) costs a few dot products.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import _moments as mom
from s2r.metrics.action_probe import ALPHA_GRID
from s2r.metrics.domain_probe import DomainProbe
from s2r.metrics.folds import DEFAULT_N_FOLDS, Folds, episode_folds
from s2r.metrics.results import AlphaSelection
from s2r.metrics.validation import check_choice, check_embeddings, check_number

#: A ridge penalty (fraction of the training embeddings' total variance) or ``"auto"``.
Alpha = Union[float, str]


@dataclass(frozen=True)
class TestErrors:
    """Squared errors of fitted probes on their test frames, summed per group (episode or time
    block): the held-out, transfer and training scores and their floors are ratios of
    weighted sums of these, so a bootstrap replicate (group weights) costs two dot products.

    Attributes
    ----------
    sse, floor_sse : ndarray of shape (G,)
        Summed squared standardised errors of each group's test frames under the probe, and
        under that probe's training mean action (the floor). 0 for groups that are not test
        frames of any probe (e.g. the source domain of a transfer score).
    count : ndarray of shape (G,)
        Number of (frame, scored action dim) entries of each group.
    alphas : tuple of float
        Penalty of each probe (one per outer fold for the held-out score).
    constant_action_dims : tuple of int
        Dims constant in some training set (left out there).
    """

    sse: np.ndarray
    floor_sse: np.ndarray
    count: np.ndarray
    alphas: tuple
    constant_action_dims: tuple

    def score(self, weights=None) -> float:
        """AS (eq. 2) of a replicate (group ``weights``; default all ones)."""
        w = np.ones_like(self.sse) if weights is None else weights
        return 1.0 - float(w @ self.sse) / float(w @ self.count)

    def floor(self, weights=None) -> float:
        """AS of the training mean action (the no-information floor) on the same frames."""
        w = np.ones_like(self.sse) if weights is None else weights
        return 1.0 - float(w @ self.floor_sse) / float(w @ self.count)


@dataclass(frozen=True)
class DomainEvidence:
    """Out-of-fold domain-probe outputs summed per group (for the point estimate and the
    bootstrap).

    Attributes
    ----------
    correct, frames : ndarray of shape (G,)
        Correctly classified frames and frames per group.
    logit_sum, logit_sq : ndarray of shape (G,)
        Sum of the out-of-fold logits of "real" and of their squares per group.
    is_real : ndarray of shape (G,), bool
    """

    correct: np.ndarray
    frames: np.ndarray
    logit_sum: np.ndarray
    logit_sq: np.ndarray
    is_real: np.ndarray

    def recalls(self, weights=None) -> tuple[float, float]:
        """``(recall_sim, recall_real)`` of a replicate."""
        w = np.ones_like(self.frames) if weights is None else weights
        sim, real = ~self.is_real, self.is_real
        return (float((w * self.correct)[sim].sum() / (w * self.frames)[sim].sum()),
                float((w * self.correct)[real].sum() / (w * self.frames)[real].sum()))

    def balanced_accuracy(self, weights=None) -> float:
        """Mean of the two recalls: 0.5 = chance, 1 = separable."""
        return 0.5 * sum(self.recalls(weights))

    def separability(self, weights=None) -> float:
        """``d' = (mean_real - mean_sim) / sqrt((var_real + var_sim) / 2)`` of the logits."""
        w = np.ones_like(self.frames) if weights is None else weights
        moments = []
        for mask in (~self.is_real, self.is_real):
            n = float((w * self.frames)[mask].sum())
            mean = float((w * self.logit_sum)[mask].sum()) / n
            moments.append((mean, max(float((w * self.logit_sq)[mask].sum()) / n - mean ** 2,
                                      0.0)))
        (m_sim, v_sim), (m_real, v_real) = moments
        pooled = np.sqrt(0.5 * (v_sim + v_real))
        if pooled <= 1e-12 * max(1.0, abs(m_real - m_sim)):
            return 0.0 if abs(m_real - m_sim) <= 1e-12 else float(np.sign(m_real - m_sim) * 1e6)
        return float((m_real - m_sim) / pooled)


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
        Fold construction (see :func:`s2r.metrics.folds.episode_folds`).
    memory_mb : float
        Budget for the per-group ``D x D`` statistics (bootstrap speed, not results).
    need_actions : bool
        False when only the domain probe is wanted (``actions`` may be None).
    folds : Folds, optional
        Use these folds (e.g. those of another embedding of the same frames, so that the
        state ceiling and an encoder are scored on identical splits).
    """

    def __init__(self, Z, domain, actions, episode, *, n_folds: int = DEFAULT_N_FOLDS,
                 seed: int = 0, memory_mb: float = 2048.0, need_actions: bool = True,
                 folds: Optional[Folds] = None):
        checked = check_embeddings(Z, domain, actions if need_actions else None, episode)
        if checked.episode is None:
            raise MetricError("episode ids are required (held-out splits and the bootstrap "
                              "group frames by episode)")
        self.Z, self.domain, self.episode = checked.Z, checked.domain, checked.episode
        self.folds = folds or episode_folds(self.domain, self.episode, n_folds=n_folds,
                                            seed=seed)
        f = self.folds
        self.group_is_real = f.group_domain == "real"
        self.gm = None
        self._paths: dict = {}
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

    # --------------------------------------------------------------- penalty selection
    def _ridge_path(self, train) -> "mom.RidgePath":
        """Eigendecomposition of the ridge system of the groups ``train`` (cached: nested
        selection meets each training set twice)."""
        key = np.asarray(train, bool).tobytes()
        if key not in self._paths:
            self._paths[key] = mom.ridge_path(self.gm.combine(np.asarray(train, float)))
        return self._paths[key]

    def select_alpha(self, alphas=ALPHA_GRID, *, groups=None) -> AlphaSelection:
        """Choose the ridge penalty by leave-one-fold-out over the folds of ``groups``.

        Parameters
        ----------
        alphas : sequence of float
            Candidate penalties (fractions of the training variance), each >= 0.
        groups : ndarray of shape (G,), bool, optional
            The groups to choose on (a training set); default all. Each of their folds is
            held out in turn and scored by probes fitted on the others.
        """
        alphas = tuple(float(a) for a in alphas)
        if not alphas:
            raise MetricError("alphas: give at least one ridge penalty to choose from")
        for a in alphas:
            if not a == float("inf"):
                check_number("alpha", a, low=0)
        f = self.folds
        mask = np.ones(f.n_groups, bool) if groups is None else np.asarray(groups, bool)
        ks = np.unique(f.group_fold[mask])
        if ks.size < 2:
            raise MetricError(
                "cannot choose the ridge penalty by cross-validation: the training frames hold "
                f"{ks.size} fold(s) and at least 2 are needed; give a fixed ridge alpha or more "
                "episodes")
        sse = np.zeros((ks.size, len(alphas)))
        count = np.zeros(ks.size)
        for i, k in enumerate(ks):
            test = mask & (f.group_fold == k)
            path = self._ridge_path(mask & ~test)
            m_test = self.gm.combine(test.astype(float))
            sse[i] = mom.sse_alpha_path(path, m_test, alphas)
            count[i] = m_test.n * int(path.model.scored.sum())
        if count.sum() == 0:
            raise MetricError("every action dimension is constant in the training frames of "
                              "every fold: there is nothing for the action probe to predict")
        scores = 1.0 - sse.sum(axis=0) / count.sum()
        per_fold = 1.0 - sse[count > 0] / count[count > 0, None]
        se = (per_fold.std(axis=0, ddof=1) / np.sqrt(len(per_fold)) if len(per_fold) > 1
              else np.zeros(len(alphas)))
        best = max(range(len(alphas)), key=lambda i: (round(scores[i], 12), alphas[i]))
        within = [i for i in range(len(alphas)) if scores[i] >= scores[best] - se[best]]
        chosen = max(within, key=lambda i: alphas[i])
        return AlphaSelection(alphas[chosen], alphas, tuple(float(v) for v in scores),
                              tuple(float(v) for v in se), alphas[best], int(ks.size))

    def resolve_alpha(self, alpha: Alpha, *, groups=None) -> float:
        """``alpha`` itself, or the choice of :meth:`select_alpha` on ``groups`` when it is
        ``"auto"``."""
        if isinstance(alpha, str):
            if alpha != "auto":
                raise MetricError(f"ridge alpha must be a number >= 0 or 'auto', got {alpha!r}")
            return self.select_alpha(groups=groups).alpha
        if alpha == float("inf"):      # the no-information probe (the training mean action)
            return float(alpha)
        check_number("alpha", alpha, low=0)
        return float(alpha)

    # --------------------------------------------------------------- ridge scores
    def domain_moments(self, weights=None) -> tuple["mom.Moments", "mom.Moments"]:
        """``(sim, real)`` sums of a replicate (group ``weights``, default all ones)."""
        w = np.ones(self.folds.n_groups) if weights is None else np.asarray(weights, float)
        return self.gm.combine(w * ~self.group_is_real), self.gm.combine(w * self.group_is_real)

    def fit(self, alpha: float, groups) -> "mom.LinearModel":
        """The ridge probe fitted on the frames of ``groups`` (bool ``(G,)``)."""
        return mom.fit_scored(self.gm.combine(np.asarray(groups, float)), alpha)

    def test_errors(self, fits) -> TestErrors:
        """Per-group errors of probes on their test groups.

        ``fits``: ``(alpha, model, test_groups)`` triples; each probe is scored on the frames
        of its ``test_groups`` (bool ``(G,)``, disjoint between probes).
        """
        f = self.folds
        sse, floor_sse, cnt = (np.zeros(f.n_groups) for _ in range(3))
        alphas, constant = [], set()
        for alpha, model, test_groups in fits:
            alphas.append(float(alpha))
            constant |= {int(j) for j in np.flatnonzero(~model.scored)}
            self.gm.add_errors(model, np.flatnonzero(test_groups[f.group]), sse, floor_sse)
            cnt[test_groups] = self.n_per_group[test_groups] * int(model.scored.sum())
        return TestErrors(sse, floor_sse, cnt, tuple(alphas), tuple(sorted(constant)))

    def heldout(self, alpha: Alpha) -> TestErrors:
        """Out-of-fold errors per group; ``alpha="auto"`` selects the penalty by nested
        cross-validation (inside each outer training set)."""
        f = self.folds
        if isinstance(alpha, str) and f.n_folds < 3:
            raise MetricError(
                f"nested penalty selection needs at least 3 episode folds, got {f.n_folds} "
                "(too few episodes in a domain); give a fixed ridge alpha or more episodes")
        fits = []
        for k in range(f.n_folds):
            train = f.group_fold != k
            a = self.resolve_alpha(alpha, groups=train)
            fits.append((a, self.fit(a, train), ~train))
        return self.test_errors(fits)

    def transfer(self, alpha: Alpha, source: str = "sim") -> TestErrors:
        """Errors on the other domain's frames of the probe fitted on every ``source`` frame
        (``alpha="auto"``: chosen by cross-validation over the ``source`` episodes only); its
        floor predicts the ``source`` mean action."""
        check_choice("source", source, ("sim", "real"))
        train = self.group_is_real if source == "real" else ~self.group_is_real
        a = self.resolve_alpha(alpha, groups=train)
        return self.test_errors([(a, self.fit(a, train), ~train)])

    def train(self, alpha: float) -> TestErrors:
        """Errors of the probe fitted on all frames, on those same frames (the paper's
        training AS; its floor is 0 by construction)."""
        everything = np.ones(self.folds.n_groups, bool)
        return self.test_errors([(alpha, self.fit(alpha, everything), everything)])

    def train_null(self, alpha: float) -> float:
        """Mean training AS over permutations of the actions across all frames (closed form,
        :func:`s2r.metrics._moments.training_null`)."""
        m_sim, m_real = self.domain_moments()
        return mom.training_null(m_sim + m_real, alpha)

    # --------------------------------------------------------------- domain probe
    def domain_evidence(self, C: float) -> tuple[DomainEvidence, list]:
        """Out-of-fold outputs of the domain probe, summed per group, and warnings."""
        f = self.folds
        fold = f.frame_fold
        logit = np.zeros(len(self.Z))
        warns = []
        for k in range(f.n_folds):
            test = fold == k
            probe = DomainProbe(C=C).fit(self.Z[~test], self.domain[~test])
            logit[test] = probe.decision_function(self.Z[test])
            if not probe.converged_:
                warns.append(f"domain probe: logistic regression did not converge in "
                             f"{probe.max_iter} iterations on fold {k}")
        real = self.domain == "real"
        correct = (logit > 0) == real

        def per_group(values):
            return np.bincount(f.group, weights=values, minlength=f.n_groups)

        evidence = DomainEvidence(per_group(correct.astype(float)),
                                  per_group(np.ones(len(logit))), per_group(logit),
                                  per_group(logit ** 2), self.group_is_real)
        return evidence, warns
