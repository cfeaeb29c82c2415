"""The paper's Adam protocol for the action probe (s2r.metrics.adam)."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.metrics.action_probe import ActionProbe, action_score
from tests.helpers.metrics_data import linear_data


def test_adam_protocol_approaches_the_closed_form():
    Z, _, Y, _ = linear_data(n_episodes=20, steps=20, dim=10, noise=0.5)
    r = action_score(Z, Y, solver="adam", epochs=150, batch_size=50, lr=1e-2, score_last=20,
                     seed=0)
    curve = np.asarray(r.loss_curve)
    assert curve.shape == (150,)
    assert curve[0] > 2 * curve[-1]                               # it learns
    assert np.mean(curve[-10:]) <= np.mean(curve[10:20])           # and keeps decreasing
    ridge = action_score(Z, Y, alpha=0.0).value
    assert r.value == pytest.approx(ridge, abs=0.02)
    probe = ActionProbe(solver="adam", epochs=5, batch_size=64, seed=1).fit(Z, Y)
    W, b = probe.as_linear()
    assert np.allclose(Z @ W + b, probe.predict(Z))
