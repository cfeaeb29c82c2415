"""The domain probe (s2r.metrics.domain_probe): its linear form against scikit-learn."""

from __future__ import annotations

import numpy as np

from s2r.metrics.domain_probe import DomainProbe


def test_domain_probe_linear_form_matches_sklearn():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    Z = rng.normal(size=(200, 6)) * np.arange(1, 7) + 3.0
    domain = np.where(Z[:, 0] + rng.normal(size=200) > 3, "real", "sim")
    probe = DomainProbe(C=0.5).fit(Z, domain)
    w, b = probe.as_linear()
    assert w.shape == (6, 1) and b.shape == (1,)
    Xs = (Z - Z.mean(0)) / Z.std(0)
    ref = LogisticRegression(C=0.5, class_weight="balanced", max_iter=1000).fit(
        Xs, domain == "real")
    assert np.allclose((Z @ w + b)[:, 0], ref.decision_function(Xs), atol=1e-4)
    assert set(probe.predict(Z)) <= {"sim", "real"}
    assert 0.5 < probe.score(Z, domain) <= 1.0
