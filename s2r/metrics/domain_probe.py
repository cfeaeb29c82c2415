"""The domain probe: a linear classifier telling real frames from sim frames.

:class:`DomainProbe` is an L2 logistic regression (scikit-learn) on the embeddings z-scored
with its training frames' statistics, classes weighted inversely to their frequency. Its
held-out accuracy and separability are in :mod:`s2r.metrics.crossval`.
"""

from __future__ import annotations

import warnings as _warnings

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import _moments as mom
from s2r.checks import check_embeddings, check_features, check_number

DEFAULT_DOMAIN_C = 1.0


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
        X = mom.standardised(checked.Z, mean, std)
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
        return check_features(Z, self.n_features_in_) @ self.coef_[0] + self.intercept_[0]

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
