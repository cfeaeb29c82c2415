"""Cross-validated scores (s2r.metrics.crossval): held-out and transfer scores with their floors,
nested penalty selection, the domain probe's held-out accuracy: against least squares,
scikit-learn and known truths; no leakage; the demo's gap; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.action_probe import ALPHA_GRID
from s2r.metrics.crossval import (domain_probe_accuracy, heldout_action_score,
                                  select_ridge_alpha, transfer_score)
from s2r.metrics.folds import episode_folds
from s2r.metrics.probe_data import ProbeData
from tests.helpers.metrics_data import linear_data


# --------------------------------------------------------------------------- held-out
def test_shuffled_actions_score_at_their_floor():
    Z, domain, Y, episode = linear_data(n_episodes=20, steps=15, dim=20)
    rng = np.random.default_rng(1)
    shuffled = Y[rng.permutation(len(Y))]
    real = heldout_action_score(Z, domain, Y, episode)
    null = heldout_action_score(Z, domain, shuffled, episode)
    assert real.value > 0.8 and real.value > real.floor + 0.8
    # Nothing beats the mean action: the cross-validated choice is the mean or a penalty that
    # shrinks the probe towards it, so the score sits at its floor (~0, slightly below: the
    # test episodes' mean differs), never clearly above it.
    assert sum(a >= 1.0 for a in null.alphas) >= 3
    assert null.value == pytest.approx(null.floor, abs=0.01) and null.value <= null.floor + 1e-3
    assert -0.1 < null.floor < 0.02


def test_shuffled_demo_actions_score_near_zero(pixels_embeddings):
    fs, Z = pixels_embeddings[1]
    rng = np.random.default_rng(0)
    # Shuffle whole episodes' action sequences between episodes: no frame-action link left.
    perm = rng.permutation(len(Z))
    null = heldout_action_score(Z, fs.domain, fs.actions[perm], fs.episode, alpha=0.01).value
    assert null < 0.05
    # The true actions are predictable from pixels (the arm moves).
    true = heldout_action_score(Z, fs.domain, fs.actions, fs.episode, alpha=0.01)
    assert true.value > null + 0.2 and true.value > true.floor + 0.2


def test_heldout_equals_sklearn_ridge_fitted_on_the_training_folds_only():
    from sklearn.linear_model import Ridge

    Z, domain, Y, episode = linear_data(n_episodes=10, steps=12, dim=6, noise=1.0)
    Z = Z * np.arange(1, 7)        # features of different scales
    alpha = 0.05
    f = episode_folds(domain, episode, n_folds=5, seed=0)
    sse, floor, count = 0.0, 0.0, 0
    for k in range(f.n_folds):
        test = f.frame_fold == k
        # Everything fitted sees the training folds only: the feature centring and scale,
        # the action standardisation, the ridge solution.
        total = Z[~test].var(0).sum()
        mu, sd = Y[~test].mean(0), Y[~test].std(0)
        model = Ridge(alpha=alpha * total * (~test).sum()).fit(Z[~test], (Y[~test] - mu) / sd)
        sse += np.sum((model.predict(Z[test]) - (Y[test] - mu) / sd) ** 2)
        floor += np.sum(((Y[test] - mu) / sd) ** 2)
        count += test.sum() * Y.shape[1]
    r = heldout_action_score(Z, domain, Y, episode, alpha=alpha, n_folds=5, seed=0)
    assert r.value == pytest.approx(1 - sse / count, abs=1e-9)
    assert r.floor == pytest.approx(1 - floor / count, abs=1e-9)
    assert r.split == "heldout" and r.alphas == (alpha,) * 5


def test_no_fitted_step_sees_the_test_episodes():
    # Metamorphic: replace one fold's embeddings and actions by garbage. The penalty chosen
    # for that fold and the probe that predicts it come from the other folds only, so they do
    # not move, and the fold's errors equal an independent refit on the training folds.
    from sklearn.linear_model import Ridge

    Z, domain, Y, episode = linear_data(n_episodes=12, steps=10, dim=8, noise=1.0)
    data = ProbeData(Z, domain, Y, episode, seed=2)
    f = data.folds
    before = data.heldout("auto")
    rng = np.random.default_rng(9)
    for k in range(f.n_folds):
        test = f.frame_fold == k
        Z2, Y2 = Z.copy(), Y.copy()
        Z2[test] = 50.0 * rng.normal(size=(test.sum(), Z.shape[1])) + 7.0
        Y2[test] = rng.normal(size=(test.sum(), Y.shape[1])) * 1e3
        after = ProbeData(Z2, domain, Y2, episode, folds=f).heldout("auto")
        assert after.alphas[k] == before.alphas[k]
        a = after.alphas[k]
        mu, sd = Y2[~test].mean(0), Y2[~test].std(0)
        ref = Ridge(alpha=a * Z2[~test].var(0).sum() * (~test).sum()).fit(
            Z2[~test], (Y2[~test] - mu) / sd)
        expected = np.sum((ref.predict(Z2[test]) - (Y2[test] - mu) / sd) ** 2)
        assert after.sse[f.group_fold == k].sum() == pytest.approx(expected, rel=1e-7)


def test_choosing_the_penalty_on_the_test_folds_would_inflate_the_score():
    # Pure noise, many features: picking the penalty with the best cross-validated score and
    # reporting that score (penalty selection that sees the test folds) beats the mean
    # action by chance; nested selection does not.
    rng = np.random.default_rng(0)
    n_ep, steps = 8, 10
    n = 2 * n_ep * steps
    domain = np.repeat(["sim", "real"], n // 2)
    episode = np.repeat(np.arange(2 * n_ep), steps)
    Z, Y = rng.normal(size=(n, 100)), rng.normal(size=(n, 2))
    leaky = max(select_ridge_alpha(Z, domain, Y, episode).cv_scores)
    nested = heldout_action_score(Z, domain, Y, episode)
    assert nested.value <= nested.floor + 1e-3
    assert leaky > nested.value + 0.01


def test_alpha_selection_matches_refitting_each_alpha_and_applies_each_rule():
    Z, domain, Y, episode = linear_data(n_episodes=10, steps=10, dim=30, noise=2.0)
    grid = (1e-5, 1e-3, 1e-1, 10.0, float("inf"))
    sel = select_ridge_alpha(Z, domain, Y, episode, alphas=grid)
    each = [heldout_action_score(Z, domain, Y, episode, alpha=a).value for a in grid[:-1]]
    assert np.allclose(sel.cv_scores[:-1], each, atol=1e-9)
    assert sel.best == grid[int(np.argmax(sel.cv_scores))]
    # The default rule: the best cross-validated score.
    assert sel.rule == "min" and sel.alpha == sel.best
    # One-standard-error rules: the largest penalty within one SE of the best score (the
    # mean action included or not).
    data = ProbeData(Z, domain, Y, episode)
    best = grid.index(sel.best)
    within = [a for a, v in zip(grid, sel.cv_scores) if v >= sel.cv_scores[best] - sel.cv_se[best]]
    assert data.select_alpha(grid, rule="1se").alpha == max(within) >= sel.best
    finite = [a for a in within if np.isfinite(a)]
    assert data.select_alpha(grid, rule="1se-finite").alpha == max(finite)
    assert sel.cv_scores[-1] < max(sel.cv_scores)      # the mean action is worse here
    auto = heldout_action_score(Z, domain, Y, episode)
    assert set(auto.alphas) <= set(ALPHA_GRID)
    with pytest.raises(MetricError, match="'auto'"):
        heldout_action_score(Z, domain, Y, episode, alpha="best")


def test_single_episode_per_domain_falls_back_to_time_blocks():
    Z, domain, Y, _ = linear_data(n_episodes=2, steps=40)
    episode = np.repeat([0, 1], 40)
    r = heldout_action_score(Z, domain, Y, episode)
    assert np.isfinite(r.value) and r.value > 0.5
    assert r.warnings and "time blocks" in r.warnings[0]
    f = episode_folds(domain, episode)
    assert f.unit == {"sim": "time-block", "real": "time-block"}
    with pytest.raises(MetricError, match="at least 2"):
        heldout_action_score(Z[:41], domain[:41], Y[:41], episode[:41])


# --------------------------------------------------------------------------- transfer
def test_transfer_equals_least_squares_on_the_other_domain():
    Z, domain, Y, episode = linear_data(shift=0.7)
    sim, real = domain == "sim", domain == "real"
    ym, ys = Y[sim].mean(0), Y[sim].std(0)
    X1 = np.c_[Z[sim], np.ones(sim.sum())]
    B, *_ = np.linalg.lstsq(X1, (Y[sim] - ym) / ys, rcond=None)
    pred = np.c_[Z[real], np.ones(real.sum())] @ B
    expected = 1 - np.mean((pred - (Y[real] - ym) / ys) ** 2)
    r = transfer_score(Z, domain, Y, alpha=0.0)
    assert r.value == pytest.approx(expected, abs=1e-9)
    # Floor: the sim mean action on real frames, standardised with the sim statistics.
    assert r.floor == pytest.approx(1 - np.mean(((Y[real] - ym) / ys) ** 2), abs=1e-12)
    assert r.split == "transfer:sim->real" and r.n_train == sim.sum()
    assert transfer_score(Z, domain, Y, alpha=0.0, source="real").split == "transfer:real->sim"
    # alpha="auto": chosen on the sim episodes only (the real frames do not change it).
    auto = transfer_score(Z, domain, Y, episode=episode, alpha="auto")
    Y2 = Y.copy()
    Y2[real] = np.random.default_rng(0).normal(size=(real.sum(), Y.shape[1]))
    assert transfer_score(Z, domain, Y2, episode=episode, alpha="auto").alpha == auto.alpha
    with pytest.raises(MetricError, match="episode ids"):
        transfer_score(Z, domain, Y, alpha="auto")
    # Noise actions: "auto" chooses a penalty that shrinks the probe to (almost) the mean
    # action, whose score is the floor.
    noise = np.random.default_rng(5).normal(size=Y.shape)
    null = transfer_score(Z, domain, noise, episode=episode, alpha="auto")
    assert null.alpha >= 1.0 and null.value == pytest.approx(null.floor, abs=0.01)


def test_transfer_drops_when_real_features_shift():
    same = transfer_score(*linear_data(shift=0.0)[:3], alpha=1e-2).value
    shifted = transfer_score(*linear_data(shift=1.0)[:3], alpha=1e-2).value
    assert same > 0.8 and shifted < same - 0.2


# --------------------------------------------------------------------------- domain probe accuracy
def test_domain_probe_chance_and_separable():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(400, 10))
    domain = np.repeat(["sim", "real"], 200)
    episode = np.repeat(np.arange(20), 20)
    chance = domain_probe_accuracy(Z, domain, episode).value
    assert 0.35 < chance < 0.62
    Z2 = Z.copy()
    Z2[domain == "real", 0] += 4.0
    r = domain_probe_accuracy(Z2, domain, episode)
    assert r.value > 0.95 and r.recall_sim > 0.9 and r.recall_real > 0.9
    # Separability keeps growing where the accuracy has saturated at 1.
    Z3 = Z.copy()
    Z3[domain == "real", 0] += 12.0
    far = domain_probe_accuracy(Z3, domain, episode)
    assert far.value == 1.0 and r.value >= 0.95
    assert far.separability > r.separability > 2.0 > abs(domain_probe_accuracy(
        Z, domain, episode).separability)


def test_domain_probe_is_balanced_under_imbalance():
    # 90 % sim, no signal: plain accuracy could reach 0.9 by always saying "sim";
    # the balanced accuracy stays near 0.5.
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(500, 5))
    domain = np.repeat(["sim", "real"], [450, 50])
    episode = np.repeat(np.arange(50), 10)
    r = domain_probe_accuracy(Z, domain, episode)
    assert 0.3 < r.value < 0.65


def test_domain_probe_rises_with_the_demo_gap(pixels_embeddings):
    acc = [domain_probe_accuracy(Z, fs.domain, fs.episode).value for fs, Z in pixels_embeddings]
    assert acc[0] < 0.65            # gap 0: real frames are the sim frames
    assert acc[2] > 0.9             # gap 1: easy to tell apart
    assert acc[2] > acc[0] + 0.3


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("case, message", [
    ("nan", "NaN or inf"),
    ("one_domain", "no 'real' frames"),
    ("actions_rows", "actions must have shape"),
    ("shared_episode", "unique across domains"),
    ("no_episode", "episode ids are required"),
    ("alpha", "alpha must be >= 0"),
    ("folds", "n_folds must be >= 2"),
])
def test_bad_input(case, message):
    Z, domain, Y, episode = linear_data(n_episodes=4, steps=5)
    kwargs = {}
    if case == "nan":
        Z[2, 2] = np.inf
    elif case == "one_domain":
        domain = np.full(len(Z), "sim")
    elif case == "actions_rows":
        Y = Y[:-1]
    elif case == "shared_episode":
        episode = np.zeros(len(Z), dtype=int)
    elif case == "no_episode":
        episode = None
    elif case == "alpha":
        kwargs["alpha"] = -1.0
    elif case == "folds":
        kwargs["n_folds"] = 1
    with pytest.raises(MetricError, match=message):
        heldout_action_score(Z, domain, Y, episode, **kwargs)
