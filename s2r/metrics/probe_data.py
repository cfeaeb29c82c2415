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
from s2r.metrics.penalty import (
    DEFAULT_PENALTY_RULE, PENALTY_RULES, check_alpha, check_auto, check_grid, choose_penalty,
    cv_curve)
from s2r.metrics.results import AlphaSelection
from s2r.checks import check_choice, check_embeddings

#: A ridge penalty (fraction of the training embeddings' total variance) or ``"auto"``.
Alpha = Union[float, str]


@dataclass(frozen=True)
class PenaltyPath:
    """One probe's per-group test errors at every grid penalty, and the cross-validation
    errors its penalty is chosen from.

    Attributes
    ----------
    alphas : tuple of float
        The grid, ascending (one value for a fixed penalty).
    sse : ndarray of shape (G, P)
        Summed squared standardised errors of each test group's frames under the probe
        fitted with each penalty (0 outside the test groups).
    floor_sse : ndarray of shape (G,)
        The same under the training mean action.
    count : ndarray of shape (G,)
        ``(frame, scored action dim)`` entries of each test group (0 elsewhere).
    cv_sse : ndarray of shape (G, P) or None
        Validation errors of the inner folds' probes (each training group scored by the probe
        fitted on the other inner folds); None for a fixed penalty.
    cv_count : ndarray of shape (G,) or None
    cv_fold : ndarray of shape (G,), int, or None
        Inner fold of each training group (-1 outside the training set).
    rule : str
    """

    alphas: tuple
    sse: np.ndarray
    floor_sse: np.ndarray
    count: np.ndarray
    cv_sse: Optional[np.ndarray] = None
    cv_count: Optional[np.ndarray] = None
    cv_fold: Optional[np.ndarray] = None
    rule: str = DEFAULT_PENALTY_RULE
    constant_action_dims: tuple = ()

    def choices(self, weights) -> np.ndarray:
        """Index of the penalty chosen in each replicate ``weights (B, G)``, ``(B,)``."""
        B = np.atleast_2d(weights).shape[0]
        if self.cv_sse is None or len(self.alphas) == 1:
            return np.zeros(B, dtype=np.int64)
        scores, se = cv_curve(self.cv_sse, self.cv_count, self.cv_fold, weights)
        return choose_penalty(self.alphas, scores, se, self.rule)


@dataclass(frozen=True)
class TestErrors:
    """Squared errors of probes on their test frames, summed per group (episode or time block),
    at every penalty of each probe's grid: the held-out, transfer and training scores and their
    floors are ratios of weighted sums of these. A bootstrap replicate (group weights) chooses
    each probe's penalty again from its reweighted cross-validation errors and then costs a
    few dot products.

    Attributes
    ----------
    paths : tuple of PenaltyPath
        One per probe (one per outer fold for the held-out score), on disjoint test groups.
    """

    paths: tuple

    @property
    def constant_action_dims(self) -> tuple:
        """Dims constant in some training set (left out there)."""
        return tuple(sorted({j for p in self.paths for j in p.constant_action_dims}))

    @staticmethod
    def _weights(weights, G):
        w = np.ones(G) if weights is None else np.asarray(weights, dtype=float)
        return np.atleast_2d(w), w.ndim == 2

    def choices(self, weights=None) -> np.ndarray:
        """Chosen grid index of each probe, ``(P,)`` (or ``(B, P)`` for weights ``(B, G)``)."""
        W, many = self._weights(weights, self.count.size)
        out = np.stack([p.choices(W) for p in self.paths], axis=1)
        return out if many else out[0]

    def score(self, weights=None, choices=None):
        """AS (eq. 2) of a replicate (group ``weights`` ``(G,)``, default all ones; or ``(B, G)``
        for many, then an array), each probe with the penalty the replicate chooses."""
        W, many = self._weights(weights, self.count.size)
        idx = self.choices(W) if choices is None else np.atleast_2d(choices)
        num = np.zeros(len(W))
        for j, p in enumerate(self.paths):
            num += np.take_along_axis(W @ p.sse, idx[:, j:j + 1], axis=1)[:, 0]
        out = 1.0 - num / (W @ self.count)
        return out if many else float(out[0])

    def floor(self, weights=None):
        """AS of the training mean action (the no-information floor) on the same frames
        (summed probe by probe like :meth:`score`, so a probe that chose the mean action
        scores its floor exactly)."""
        W, many = self._weights(weights, self.count.size)
        out = 1.0 - sum(W @ p.floor_sse for p in self.paths) / (W @ self.count)
        return out if many else float(out[0])

    @property
    def count(self) -> np.ndarray:
        """``(G,)`` scored entries of each test group."""
        return sum(p.count for p in self.paths)

    @property
    def floor_sse(self) -> np.ndarray:
        return sum(p.floor_sse for p in self.paths)

    @property
    def sse(self) -> np.ndarray:
        """``(G,)`` errors of each group under its probe with the penalty chosen on all data."""
        idx = self.choices()
        return sum(p.sse[:, i] for p, i in zip(self.paths, idx))

    @property
    def alphas(self) -> tuple:
        """Penalty of each probe chosen on all data (one per outer fold for held-out)."""
        return tuple(float(p.alphas[i]) for p, i in zip(self.paths, self.choices()))

    def choice_shares(self, weights) -> dict:
        """Share of (replicate, probe) choices that fell on each grid value: ``alpha -> share``
        (the probes of one score share one grid)."""
        idx = self.choices(weights)
        grid = self.paths[0].alphas
        return {float(a): float(np.mean(idx == i)) for i, a in enumerate(grid)}


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
    rule : str, optional
        How ``alpha="auto"`` chooses the penalty (:data:`PENALTY_RULES`; default
        :data:`DEFAULT_PENALTY_RULE`).
    """

    def __init__(self, Z, domain, actions, episode, *, n_folds: int = DEFAULT_N_FOLDS,
                 seed: int = 0, memory_mb: float = 2048.0, need_actions: bool = True,
                 folds: Optional[Folds] = None, rule: Optional[str] = None):
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
        self.rule = DEFAULT_PENALTY_RULE if rule is None else rule
        check_choice("rule", self.rule, PENALTY_RULES)
        self._errs: dict = {}
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
    def _errors(self, train, test, alphas: tuple):
        """Per-group errors on the groups ``test`` of the probes fitted on ``train`` with each
        penalty: ``(sse (G, P), floor_sse (G,), count (G,), scored (A,))`` (cached).

        The training set's normal equations are formed once and solved for each penalty;
        one pass over the test frames scores every penalty.
        """
        train, test = np.asarray(train, bool), np.asarray(test, bool)
        key = (train.tobytes(), test.tobytes(), alphas)
        if key in self._errs:
            return self._errs[key]
        G = self.folds.n_groups
        model, coefs = mom.path_coefficients(self.gm.combine(train.astype(float)), alphas)
        sse, floor_sse = np.zeros((G, len(alphas))), np.zeros(G)
        if model.scored.any():
            self.gm.add_path_errors(model, coefs, np.flatnonzero(test[self.folds.group]), sse,
                                    floor_sse)
        count = np.where(test, self.n_per_group * int(model.scored.sum()), 0.0)
        self._errs[key] = out = (sse, floor_sse, count, model.scored)
        return out

    def _cv_errors(self, mask: np.ndarray, alphas: tuple, scope: np.ndarray):
        """Leave-one-fold-out errors inside the training groups ``mask``:
        ``(cv_sse (G, P), cv_count (G,), cv_fold (G,))``. Each inner probe is fitted on
        ``mask`` minus one fold and scores that fold's groups; ``scope`` (containing ``mask``)
        only widens the frames scored at once so that nested selections share passes."""
        f = self.folds
        ks = np.unique(f.group_fold[mask])
        if ks.size < 2:
            raise MetricError(
                "cannot choose the ridge penalty by cross-validation: the training frames hold "
                f"{ks.size} fold(s) and at least 2 are needed; give a fixed ridge alpha or more "
                "episodes")
        cv_sse, cv_count = np.zeros((f.n_groups, len(alphas))), np.zeros(f.n_groups)
        cv_fold = np.full(f.n_groups, -1, dtype=np.int64)
        for k in ks:
            held = mask & (f.group_fold == k)
            sse, _, count, _ = self._errors(mask & ~held, scope & ~(mask & ~held), alphas)
            cv_sse[held], cv_count[held], cv_fold[held] = sse[held], count[held], k
        if cv_count.sum() == 0:
            raise MetricError("every action dimension is constant in the training frames of "
                              "every fold: there is nothing for the action probe to predict")
        return cv_sse, cv_count, cv_fold

    def select_alpha(self, alphas=ALPHA_GRID, *, groups=None,
                     rule: Optional[str] = None) -> AlphaSelection:
        """Choose the ridge penalty by leave-one-fold-out over the folds of ``groups``.

        Parameters
        ----------
        alphas : sequence of float
            Candidate penalties (fractions of the training variance), each >= 0.
        groups : ndarray of shape (G,), bool, optional
            The groups to choose on (a training set); default all. Each of their folds is
            held out in turn and scored by probes fitted on the others.
        rule : str, optional
            :data:`PENALTY_RULES` (default: this object's rule).
        """
        alphas = check_grid(alphas)
        mask = np.ones(self.folds.n_groups, bool) if groups is None else np.asarray(groups, bool)
        cv = self._cv_errors(mask, alphas, mask)
        scores, se = cv_curve(*cv, np.ones((1, self.folds.n_groups)))
        rule = rule or self.rule
        chosen = int(choose_penalty(alphas, scores, se, rule)[0])
        best = int(choose_penalty(alphas, scores, se, "min")[0])
        return AlphaSelection(alphas[chosen], alphas, tuple(float(v) for v in scores[0]),
                              tuple(float(v) for v in se[0]), alphas[best],
                              int(np.unique(cv[2][cv[2] >= 0]).size), rule)

    def resolve_alpha(self, alpha: Alpha, *, groups=None) -> float:
        """``alpha`` itself, or the choice of :meth:`select_alpha` on ``groups`` when it is
        ``"auto"``."""
        if isinstance(alpha, str):
            check_auto(alpha)
            return self.select_alpha(groups=groups).alpha
        return check_alpha(alpha)

    def penalty_path(self, alpha: Alpha, train, test, *, scope=None) -> PenaltyPath:
        """The probe fitted on the groups ``train`` and scored on ``test``: at the fixed
        ``alpha``, or (``"auto"``) at every value of the grid with the cross-validation errors
        inside ``train`` that choose among them (again in every bootstrap replicate)."""
        train, test = np.asarray(train, bool), np.asarray(test, bool)
        if isinstance(alpha, str):
            check_auto(alpha)
            alphas = check_grid(ALPHA_GRID)
            cv = self._cv_errors(train, alphas, train if scope is None else scope)
        else:
            alphas, cv = (check_alpha(alpha),), (None, None, None)
        sse, floor_sse, count, scored = self._errors(train, test, alphas)
        if not scored.any():
            raise MetricError("every action dimension is constant in the training frames: "
                              "there is nothing for the action probe to predict")
        return PenaltyPath(alphas, sse, floor_sse, count, *cv, rule=self.rule,
                           constant_action_dims=tuple(int(j) for j in np.flatnonzero(~scored)))

    # --------------------------------------------------------------- ridge scores
    def domain_moments(self, weights=None) -> tuple["mom.Moments", "mom.Moments"]:
        """``(sim, real)`` sums of a replicate (group ``weights``, default all ones)."""
        w = np.ones(self.folds.n_groups) if weights is None else np.asarray(weights, float)
        return self.gm.combine(w * ~self.group_is_real), self.gm.combine(w * self.group_is_real)

    def fit(self, alpha: float, groups) -> "mom.LinearModel":
        """The ridge probe fitted on the frames of ``groups`` (bool ``(G,)``)."""
        return mom.fit_scored(self.gm.combine(np.asarray(groups, float)), alpha)

    def test_errors(self, fits) -> TestErrors:
        """Per-group errors of fitted probes on their test groups.

        ``fits``: ``(alpha, model, test_groups)`` triples; each probe is scored on the frames
        of its ``test_groups`` (bool ``(G,)``, disjoint between probes).
        """
        G = self.folds.n_groups
        paths = []
        for alpha, model, test_groups in fits:
            test_groups = np.asarray(test_groups, bool)
            sse, floor_sse = np.zeros((G, 1)), np.zeros(G)
            self.gm.add_path_errors(model, model.B[None], np.flatnonzero(test_groups[
                self.folds.group]), sse, floor_sse)
            count = np.where(test_groups, self.n_per_group * int(model.scored.sum()), 0.0)
            paths.append(PenaltyPath((float(alpha),), sse, floor_sse, count, rule=self.rule,
                                     constant_action_dims=tuple(
                                         int(j) for j in np.flatnonzero(~model.scored))))
        return TestErrors(tuple(paths))

    def heldout(self, alpha: Alpha) -> TestErrors:
        """Out-of-fold errors per group; ``alpha="auto"`` selects the penalty by nested
        cross-validation (inside each outer training set; again in each replicate)."""
        f = self.folds
        if isinstance(alpha, str) and f.n_folds < 3:
            raise MetricError(
                f"nested penalty selection needs at least 3 episode folds, got {f.n_folds} "
                "(too few episodes in a domain); give a fixed ridge alpha or more episodes")
        everything = np.ones(f.n_groups, bool)
        return TestErrors(tuple(
            self.penalty_path(alpha, f.group_fold != k, f.group_fold == k, scope=everything)
            for k in range(f.n_folds)))

    def transfer(self, alpha: Alpha, source: str = "sim") -> TestErrors:
        """Errors on the other domain's frames of the probe fitted on every ``source`` frame
        (``alpha="auto"``: chosen by cross-validation over the ``source`` episodes only, with
        the rule of the held-out probes); its floor predicts the ``source`` mean action."""
        check_choice("source", source, ("sim", "real"))
        train = self.group_is_real if source == "real" else ~self.group_is_real
        return TestErrors((self.penalty_path(alpha, train, ~train),))

    def train(self, alpha: float) -> TestErrors:
        """Errors of the probe fitted on all frames, on those same frames (the paper's
        training AS; its floor is 0 by construction)."""
        everything = np.ones(self.folds.n_groups, bool)
        return TestErrors((self.penalty_path(alpha, everything, everything),))

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
