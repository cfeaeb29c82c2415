"""The action probe (eq. 2; s2r.metrics.action_probe): the training score against least squares,
the penalty's units and invariances, constant action dimensions, unfitted and mismatched probes."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.action_probe import ActionProbe, action_score
from s2r.metrics.domain_probe import DomainProbe
from tests.helpers.metrics_data import linear_data


def standardise(Y):
    return (Y - Y.mean(0)) / Y.std(0)


def trace_scaled(Z):
    """Features centred and divided by the square root of their total variance."""
    Zc = Z - Z.mean(0)
    return Zc / np.sqrt(Zc.var(0).sum())


def test_training_score_equals_numpy_lstsq():
    Z, _, Y, _ = linear_data()
    Ys = standardise(Y)
    X1 = np.c_[Z, np.ones(len(Z))]
    B, *_ = np.linalg.lstsq(X1, Ys, rcond=None)
    expected = 1 - np.mean((X1 @ B - Ys) ** 2)
    r = action_score(Z, Y, alpha=0.0)
    assert r.value == pytest.approx(expected, abs=1e-10)
    assert r.split == "train" and r.solver == "ridge" and r.n_train == len(Z)
    # Per dimension: the training R^2 of each action dimension.
    r2 = 1 - np.mean((X1 @ B - Ys) ** 2, axis=0)
    assert np.allclose(r.per_dim, r2, atol=1e-10)


def test_ridge_equals_augmented_least_squares():
    # The penalty is a fraction of the training features' total variance: ridge on features
    # scaled to total variance 1.
    Z, _, Y, _ = linear_data(n_episodes=6, steps=5, dim=12)   # n=30 frames: ridge matters
    alpha = 0.03
    n = len(Z)
    Xs = trace_scaled(Z)
    Ys = standardise(Y)
    aug_X = np.vstack([Xs, np.sqrt(n * alpha) * np.eye(Z.shape[1])])
    aug_Y = np.vstack([Ys, np.zeros((Z.shape[1], Y.shape[1]))])
    B, *_ = np.linalg.lstsq(aug_X, aug_Y, rcond=None)
    probe = ActionProbe(alpha=alpha).fit(Z, Y)
    W, b = probe.as_linear()
    assert W.shape == (12, 3) and b.shape == (3,)
    assert np.allclose(Z @ W + b, Xs @ B, atol=1e-9)
    assert probe.training_score_ == pytest.approx(1 - np.mean((Xs @ B - Ys) ** 2), abs=1e-10)
    assert probe.score(Z, Y) == pytest.approx(probe.training_score_, abs=1e-10)


def test_fewer_frames_than_dimensions_matches_dense_solution():
    # N < D uses an exact row-space basis; compare with the D x D ridge solution.
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(25, 60)) * np.linspace(0.1, 3.0, 60)
    Y = rng.normal(size=(25, 2))
    alpha = 0.002
    Xs, Ys = trace_scaled(Z), standardise(Y)
    B = np.linalg.solve(Xs.T @ Xs / 25 + alpha * np.eye(60), Xs.T @ Ys / 25)
    probe = ActionProbe(alpha=alpha).fit(Z, Y)
    assert np.allclose(probe.predict(Z), Xs @ B, atol=1e-9)
    scale = np.sqrt((Z - Z.mean(0)).var(0).sum())
    assert np.allclose(probe.coef_.T * scale, B, atol=1e-9)


def test_penalty_is_invariant_to_rotation_scale_and_duplicated_features():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(40, 6)) * np.arange(1, 7)
    Y = Z[:, :2] + rng.normal(size=(40, 2))
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    base = ActionProbe(alpha=0.05).fit(Z, Y).predict(Z)
    for other in (Z @ Q * 7.0 + 3.0, np.c_[Z, Z]):
        assert np.allclose(ActionProbe(alpha=0.05).fit(other, Y).predict(other), base,
                           atol=1e-9)


def test_prediction_units_and_scale_invariance():
    Z, _, Y, _ = linear_data()
    probe = ActionProbe(alpha=1e-3).fit(Z, Y)
    raw = probe.predict_actions(Z)
    assert np.corrcoef(raw[:, 0], Y[:, 0])[0, 1] > 0.9
    Y2 = Y * np.array([1000.0, 1.0, 0.01]) - 7.0    # change the units of each dimension
    assert action_score(Z, Y2, alpha=1e-3).value == pytest.approx(
        action_score(Z, Y, alpha=1e-3).value, abs=1e-10)


def test_constant_action_dimension_is_left_out():
    Z, _, Y, _ = linear_data()
    Yc = np.c_[Y, np.full(len(Y), 0.04)]               # e.g. a gripper that never moves
    r = action_score(Z, Yc, alpha=1e-3)
    assert r.constant_action_dims == (3,) and r.per_dim[3] is None
    assert r.value == pytest.approx(action_score(Z, Y, alpha=1e-3).value, abs=1e-10)
    assert r.warnings and "constant" in r.warnings[0]
    with pytest.raises(MetricError, match="every action dimension is constant"):
        action_score(Z, np.ones((len(Z), 2)))


# --------------------------------------------------------------------------- bad input
def test_unfitted_and_mismatched_probes():
    with pytest.raises(MetricError, match="not fitted"):
        ActionProbe().predict(np.zeros((2, 3)))
    with pytest.raises(MetricError, match="not fitted"):
        DomainProbe().as_linear()
    probe = ActionProbe().fit(np.random.default_rng(0).normal(size=(10, 3)), np.arange(10.0))
    with pytest.raises(MetricError, match="3"):
        probe.predict(np.zeros((2, 4)))
    with pytest.raises(MetricError, match="solver must be one of"):
        ActionProbe(solver="sgd").fit(np.zeros((3, 2)), np.zeros(3))


@pytest.mark.parametrize("n, d", [(90, 12), (60, 150)])
def test_cross_fitted_predictions_equal_a_probe_per_fold_and_penalty(n, d):
    from s2r.metrics.action_probe import cross_fitted_predictions

    rng = np.random.default_rng(3)
    Z = rng.normal(size=(n, d)) * rng.uniform(0.1, 5, d) + 2.0
    Y = np.c_[Z[:, :3] @ rng.normal(size=(3, 2)) + rng.normal(0, 0.5, (n, 2)), np.full(n, 4.0)]
    folds = rng.permutation(np.arange(n) % 4) * 10 + 7          # any fold labels
    alphas = (1e-6, 1e-2, 1.0)
    got = cross_fitted_predictions(Z, Y, folds, alphas)
    assert got.shape == (3, n, 3)
    for i, a in enumerate(alphas):
        for k in np.unique(folds):
            held = folds == k
            want = ActionProbe(alpha=a).fit(Z[~held], Y[~held]).predict_actions(Z[held])
            np.testing.assert_allclose(got[i, held], want, rtol=1e-6, atol=1e-8)
    # the unpenalised-ish probe beats the heavily penalised one held out, and the constant
    # column is predicted as its training mean
    err = ((got[:, :, :2] - Y[:, :2]) ** 2).mean(axis=(1, 2))
    assert err[0] < err[2] and np.allclose(got[:, :, 2], 4.0)
    with pytest.raises(MetricError, match="two folds"):
        cross_fitted_predictions(Z, Y, np.zeros(n), alphas)
    with pytest.raises(MetricError, match="one entry per frame"):
        cross_fitted_predictions(Z, Y, folds[:-1], alphas)
