"""What the probe scores return: frozen records of a score and how it was obtained.

- :class:`ActionScoreResult` -- an action score (eq. 2): training, held-out or transfer;
- :class:`DomainProbeResult` -- the held-out sim-vs-real classification;
- :class:`AlphaSelection` -- a cross-validated choice of the ridge penalty;

and :func:`constant_dims_warning`, the warning of action scores that leave dims out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


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


@dataclass(frozen=True)
class AlphaSelection:
    """Result of a cross-validated choice of the ridge penalty.

    Attributes
    ----------
    alpha : float
        The chosen penalty (see ``rule``; ``inf``: the mean action).
    alphas : tuple of float
        The grid.
    cv_scores : tuple of float
        Held-out AS of each grid value (pooled out-of-fold errors).
    cv_se : tuple of float
        Standard error of each value's score over the folds.
    best : float
        The penalty with the best cross-validated score.
    n_folds : int
        Folds the choice was made on.
    rule : str
        ``"min"``: the best cross-validated score; ``"1se-finite"``: the largest finite
        penalty within one standard error of the best (the one-standard-error rule of Breiman
        et al. and glmnet's ``lambda.1se``), the mean action only when it is the best;
        ``"1se"``: the same with the mean action among the candidates
        (:data:`s2r.metrics.penalty.PENALTY_RULES`).
    """

    alpha: float
    alphas: tuple
    cv_scores: tuple
    cv_se: tuple
    best: float
    n_folds: int
    rule: str = "min"


def constant_dims_warning(constant) -> tuple:
    """The ``warnings`` of an action score that left the ``constant`` dims out (or ``()``)."""
    if not constant:
        return ()
    return (f"action dims {list(constant)} are constant in the training frames and left out "
            "of the action scores",)
