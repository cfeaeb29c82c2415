"""The closed-form ridge engine at scale (s2r/metrics/_moments.py): the per-block sums, the
penalty path solved one Cholesky per penalty and core, the chunked column moments -- each
against an independent numpy computation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from s2r.metrics import _moments as mom
from s2r.metrics.action_probe import ALPHA_GRID
from s2r.metrics.probe_data import ProbeData


def _regression(n=1200, dim=300, actions=4, seed=0):
    """Well-conditioned features (n >> dim, i.i.d. Gaussian: condition number ~3) with an
    offset, and actions linear in them plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim)) * 0.7 + 3.0
    Y = X[:, :actions] @ rng.standard_normal((actions, actions)) + rng.standard_normal(
        (n, actions))
    return X, Y


def _lstsq_ridge(X, Y, alpha):
    """Independent ridge: the augmented least-squares problem ``[Xc; sqrt(n a) I] B =
    [Y~; 0]`` solved by LAPACK's SVD-based lstsq (no normal equations), with the module's
    conventions (features centred, actions z-scored with the training mean and std, the
    penalty ``alpha`` in units of the total variance ``tau``)."""
    n, d = X.shape
    Xc = X - X.mean(0)
    Yt = (Y - Y.mean(0)) / Y.std(0)
    a = alpha * Xc.var(0).sum()
    A = np.vstack([Xc, np.sqrt(n * a) * np.eye(d)])
    return np.linalg.lstsq(A, np.vstack([Yt, np.zeros((d, Y.shape[1]))]), rcond=None)[0]


def test_penalty_path_equals_an_independent_least_squares_ridge_at_every_penalty():
    # 300-D: above the size from which the penalties are solved in parallel threads.
    assert 300 >= mom._PARALLEL_MIN_DIM
    X, Y = _regression()
    gm = mom.GroupMoments(X, Y, np.zeros(len(X), dtype=np.int64), 1)
    model, coefs = mom.path_coefficients(gm.combine(np.ones(1)), ALPHA_GRID)
    assert coefs.shape == (len(ALPHA_GRID), X.shape[1], Y.shape[1])
    for alpha, B in zip(ALPHA_GRID, coefs):
        if not np.isfinite(alpha):
            assert not B.any()            # the mean action
            continue
        model.B = B
        W, _ = gm.raw_model(model)         # fixed coordinates -> raw features
        expected = _lstsq_ridge(X, Y, alpha)
        np.testing.assert_allclose(W, expected, rtol=1e-8, atol=1e-10 * np.abs(expected).max())


def test_parallel_path_equals_one_solve_per_penalty_and_the_old_solver():
    # The thread-pool path against solve_ridge called in turn and against the general
    # symmetric solver the path used before (scipy.linalg.solve, assume_a="pos"), including
    # a zero shift (minimum-norm eigen solution) on a singular matrix.
    rng = np.random.default_rng(3)
    F = rng.standard_normal((400, 280))
    M = F.T @ F / 400
    R = rng.standard_normal((280, 5))
    shifts = [1e-4, 1e-2, 1.0, 30.0]
    path = mom.solve_ridge_path(M, R, shifts)
    for a, B in zip(shifts, path):
        np.testing.assert_allclose(B, mom.solve_ridge(M, R, a), rtol=1e-12, atol=1e-14)
        old = scipy.linalg.solve(M + a * np.eye(280), R, assume_a="pos")
        np.testing.assert_allclose(B, old, rtol=1e-9, atol=1e-12 * np.abs(old).max())
    low = rng.standard_normal((280, 20))
    singular = low @ low.T                                    # rank 20
    B0 = mom.solve_ridge_path(singular, R, [0.0, 1e-3])
    np.testing.assert_allclose(B0[0], np.linalg.pinv(singular, rcond=1e-10) @ R,
                               rtol=1e-6, atol=1e-9)
    shifted = np.linalg.solve(singular + 1e-3 * np.eye(280), R)   # condition number ~1e6
    np.testing.assert_allclose(B0[1], shifted, rtol=0, atol=1e-9 * np.abs(shifted).max())
    assert mom.solve_ridge_path(M, R, []).shape == (0, 280, 5)


def test_group_sums_equal_direct_sums_with_groups_split_across_chunks(monkeypatch):
    # Frames of a group interleaved with others, chunks (7 rows) that split groups: every
    # per-group sum and per-block product sum equals numpy on the group's own rows.
    monkeypatch.setattr(mom, "_CHUNK", 7)
    rng = np.random.default_rng(5)
    n, dim, G = 90, 6, 9
    Z = (rng.standard_normal((n, dim)) * [1, 2, 3, 4, 5, 6] + 10).astype(np.float32)
    Y = rng.standard_normal((n, 3))
    group = rng.permutation(np.repeat(np.arange(G), n // G))
    block = np.array([2, 0, 1, 2, 0, 1, 1, 0, 2])
    gm = mom.GroupMoments(Z, Y, group, G, block=block)
    X = (Z.astype(np.float64) - Z.astype(np.float64).mean(0)) / np.sqrt(
        Z.astype(np.float64).var(0).sum())
    Yz = (Y - Y.mean(0)) / Y.std(0)
    for g in range(G):
        rows = group == g
        np.testing.assert_allclose(gm.sx[g], X[rows].sum(0), atol=1e-12)
        np.testing.assert_allclose(gm.sy[g], Yz[rows].sum(0), atol=1e-12)
        np.testing.assert_allclose(gm.sxy[g], X[rows].T @ Yz[rows], atol=1e-12)
        np.testing.assert_allclose(gm.syy[g], Yz[rows].T @ Yz[rows], atol=1e-12)
    for b in range(3):
        rows = block[group] == b
        np.testing.assert_allclose(gm.block_sxx[b], X[rows].T @ X[rows], atol=1e-12)
    # The per-group r x r sums are built only when a fit needs them (weights varying inside
    # a block), and then equal numpy's.
    assert gm.sxx is None
    w = rng.integers(0, 3, G).astype(float)
    expected = sum(w[g] * X[group == g].T @ X[group == g] for g in range(G))
    np.testing.assert_allclose(gm.combine(w).sxx, expected, atol=1e-12)
    assert gm.sxx is not None and gm.sxx.shape == (G, dim, dim)


def test_column_moments_equal_numpy_without_a_float64_copy(monkeypatch):
    monkeypatch.setattr(mom, "_CHUNK", 64)
    rng = np.random.default_rng(2)
    Z = (rng.standard_normal((1000, 7)) * 3 + 1e3).astype(np.float32)
    mean, var = mom.column_moments(Z)
    np.testing.assert_allclose(mean, Z.mean(0, dtype=np.float64), rtol=1e-13)
    np.testing.assert_allclose(var, Z.var(0, dtype=np.float64), rtol=1e-9)
    shift, scale = mom.prescale(Z)
    np.testing.assert_allclose(scale, Z.std(0, dtype=np.float64), rtol=1e-9)
    const = np.ones((50, 2), np.float32) * 5
    assert np.array_equal(mom.prescale(const)[1], [1.0, 1.0])       # constant: scale 1


def test_scoring_never_builds_the_per_episode_products():
    # Every fit of the held-out, transfer and training scores weights whole (domain, fold)
    # blocks, and a bootstrap replicate reweights test errors, never refits: the G x r x r
    # per-episode sums (32 GB at 1,000 episodes x 2,048-D) are not needed.
    rng = np.random.default_rng(0)
    n_ep, steps, dim = 20, 6, 5
    Z = rng.standard_normal((n_ep * steps, dim))
    Y = Z[:, :2] + 0.1 * rng.standard_normal((n_ep * steps, 2))
    domain = np.repeat(["sim", "real"], n_ep * steps // 2)
    episode = np.repeat(np.arange(n_ep), steps)
    data = ProbeData(Z, domain, Y, episode)
    data.heldout("auto"), data.transfer("auto", "sim"), data.transfer("auto", "real")
    data.train(1e-3), data.train_null(1e-3)
    assert data.gm.sxx is None
    with pytest.raises(AssertionError):      # the test can fail: a replicate refit builds them
        data.domain_moments(rng.integers(0, 3, data.folds.n_groups).astype(float))
        assert data.gm.sxx is None


def test_standardised_equals_the_one_line_expression_bit_for_bit(monkeypatch):
    # The domain probe, the Adam probe and retrieval standardise in row chunks to avoid two
    # N x D float64 temporaries; the numbers must not change at all.
    monkeypatch.setattr(mom, "_CHUNK", 100)
    rng = np.random.default_rng(4)
    Z = (rng.standard_normal((1050, 9)) * 5 + 3).astype(np.float32)
    shift, scale = mom.prescale(Z)
    expected = ((Z - shift) / scale).astype(np.float32)
    out = mom.standardised(Z, shift, scale)
    assert out.dtype == np.float32 and np.array_equal(out, expected)
    out64 = mom.standardised(Z, shift, scale, dtype=np.float64)
    assert out64.dtype == np.float64 and np.array_equal(out64, (Z - shift) / scale)
    ints = np.arange(12).reshape(4, 3)
    assert np.array_equal(mom.standardised(ints, 1.0, 2.0), (ints - 1.0) / 2.0)
