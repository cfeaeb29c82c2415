"""Behaviour cloning on embeddings (issue 14 item 2): ridge and MLP policies."""

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.closedloop.policy.bc import Policy, fit_policy, split_episodes


def _data(n_eps=40, per_ep=25, D=8, P=3, A=4, seed=0, fn=None, noise=0.01):
    rng = np.random.default_rng(seed)
    n = n_eps * per_ep
    Z = rng.normal(size=(n, D)) * rng.uniform(0.5, 3, size=D) + rng.normal(size=D)
    proprio = rng.normal(size=(n, P)) * 0.2 + 1.0
    X = np.concatenate([Z, proprio], axis=1)
    W = rng.normal(size=(D + P, A)) / np.sqrt(D + P)
    b = rng.normal(size=A)
    clean = fn(X, W, b) if fn is not None else X @ W + b
    actions = clean + noise * rng.normal(size=clean.shape)
    episode = np.repeat(np.arange(n_eps), per_ep)
    return Z, proprio, actions, episode, W, b


def _nonlinear(X, W, b):
    Xs = (X - X.mean(0)) / X.std(0)
    return np.tanh(2.0 * Xs @ W) * np.cos(Xs[:, :1] * 2.0)


def _mse(policy, Z, proprio, actions):
    return float(((policy.predict(Z, proprio) - actions) ** 2).mean())


def test_ridge_recovers_the_least_squares_map():
    Z, proprio, actions, episode, W, b = _data()
    policy = fit_policy(Z, proprio, actions, episode, kind="ridge", alpha=0.0)
    X1 = np.concatenate([Z, proprio, np.ones((len(Z), 1))], axis=1)
    sol = np.linalg.lstsq(X1, actions, rcond=None)[0]
    W_fit, b_fit = policy.as_linear()
    np.testing.assert_allclose(W_fit, sol[:-1], atol=1e-6)
    np.testing.assert_allclose(b_fit, sol[-1], atol=1e-6)
    np.testing.assert_allclose(W_fit, W, atol=0.01)
    pred = policy.predict(Z, proprio)
    assert isinstance(policy, Policy)
    assert pred.dtype == np.float32 and pred.shape == actions.shape
    np.testing.assert_allclose(pred, X1 @ sol, atol=1e-4)


def test_ridge_without_proprio_and_standardised_on_training_data():
    Z, _, actions, episode, _, _ = _data(P=0)
    policy = fit_policy(Z, None, actions, kind="ridge")
    assert policy.n_proprio == 0
    np.testing.assert_allclose(policy.x_mean, Z.mean(0))
    np.testing.assert_allclose(policy.x_scale, Z.std(0))
    assert policy.predict(Z).shape == actions.shape


def test_mlp_beats_ridge_on_a_nonlinear_policy():
    Z, proprio, actions, episode, _, _ = _data(fn=_nonlinear, D=5, P=2, A=3)
    test = episode >= 32
    tr = ~test
    ridge = fit_policy(Z[tr], proprio[tr], actions[tr], episode[tr], kind="ridge")
    mlp = fit_policy(Z[tr], proprio[tr], actions[tr], episode[tr], kind="mlp",
                     max_epochs=60, patience=10)
    e_ridge = _mse(ridge, Z[test], proprio[test], actions[test])
    e_mlp = _mse(mlp, Z[test], proprio[test], actions[test])
    assert e_mlp < 0.5 * e_ridge
    # the input standardisation comes from the MLP's training episodes only
    fit_rows = np.isin(episode, mlp.train_episodes)
    X = np.concatenate([Z, proprio], axis=1)
    np.testing.assert_allclose(mlp.x_mean, X[fit_rows].mean(0))
    assert not np.intersect1d(mlp.train_episodes, mlp.val_episodes).size
    assert set(mlp.train_episodes) | set(mlp.val_episodes) == set(range(32))


def test_early_stopping_keeps_an_epoch_before_the_last_when_overfitting():
    rng = np.random.default_rng(3)
    n_eps, per_ep = 10, 8
    Z = rng.normal(size=(n_eps * per_ep, 40))
    actions = Z[:, :1] + rng.normal(size=(n_eps * per_ep, 1))
    episode = np.repeat(np.arange(n_eps), per_ep)
    full = fit_policy(Z, None, actions, episode, kind="mlp", max_epochs=80, patience=80,
                      batch_size=16)
    assert full.epochs_run == 80
    assert full.best_epoch < full.epochs_run
    assert full.val_loss[-1] > full.val_loss[full.best_epoch - 1]
    assert full.train_loss[-1] < full.train_loss[full.best_epoch - 1]   # it did overfit
    stopped = fit_policy(Z, None, actions, episode, kind="mlp", max_epochs=80, patience=5,
                         batch_size=16)
    assert stopped.epochs_run < 80
    assert stopped.epochs_run == stopped.best_epoch + 5


@pytest.mark.parametrize("kind", ["ridge", "mlp"])
def test_shuffled_actions_are_no_better_than_the_mean_action(kind):
    Z, proprio, actions, episode, _, _ = _data(seed=5, noise=0.1)
    test = episode >= 30
    tr = ~test
    shuffled = actions[tr][np.random.default_rng(0).permutation(int(tr.sum()))]
    kw = dict(max_epochs=40, patience=5) if kind == "mlp" else {}
    bad = fit_policy(Z[tr], proprio[tr], shuffled, episode[tr], kind=kind, **kw)
    good = fit_policy(Z[tr], proprio[tr], actions[tr], episode[tr], kind=kind, **kw)
    mean_mse = float(((actions[test] - shuffled.mean(0)) ** 2).mean())
    assert _mse(bad, Z[test], proprio[test], actions[test]) >= 0.97 * mean_mse
    assert _mse(good, Z[test], proprio[test], actions[test]) < 0.2 * mean_mse


def test_mlp_is_deterministic_for_a_seed():
    Z, proprio, actions, episode, _, _ = _data(n_eps=12, per_ep=10)
    fit = lambda seed: fit_policy(Z, proprio, actions, episode, kind="mlp", seed=seed,
                                  max_epochs=5, patience=5)
    a, b, c = fit(0), fit(0), fit(1)
    np.testing.assert_array_equal(a.predict(Z, proprio), b.predict(Z, proprio))
    np.testing.assert_array_equal(a.val_loss, b.val_loss)
    assert not np.array_equal(a.predict(Z, proprio), c.predict(Z, proprio))


def test_mlp_fit_is_the_same_whatever_the_machines_thread_count():
    import torch

    Z, proprio, actions, episode, _, _ = _data(n_eps=40, per_ep=25, D=20, P=3, A=10)
    before = torch.get_num_threads()
    fits = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            fits.append(fit_policy(Z, proprio, actions, episode, kind="mlp", seed=0,
                                   batch_size=256, max_epochs=8, patience=8).to_array())
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(fits[0], fits[1])
    assert torch.get_num_threads() == before


def test_split_episodes_holds_out_whole_episodes():
    episode = np.repeat(np.arange(10), 3)
    train, val = split_episodes(episode, val_fraction=0.2, seed=4)
    assert np.unique(episode[val]).size == 2
    assert not np.intersect1d(episode[train], episode[val]).size
    again = split_episodes(episode, val_fraction=0.2, seed=4)
    np.testing.assert_array_equal(val, again[1])


_Z, _P, _A, _E, _, _ = _data(n_eps=4, per_ep=5)


@pytest.mark.parametrize("call, word", [
    (lambda: fit_policy(_Z[:, 0], _P, _A, _E), "embeddings"),
    (lambda: fit_policy(_Z, _P[:-1], _A, _E), "proprio"),
    (lambda: fit_policy(_Z, np.where(_P > 1, np.nan, _P), _A, _E), "proprio"),
    (lambda: fit_policy(_Z, np.full(_P.shape, "x"), _A, _E), "proprio"),
    (lambda: fit_policy(_Z, _P, _A[:-1], _E), "actions"),
    (lambda: fit_policy(_Z, _P, _A, _E[:-1]), "episode"),
    (lambda: fit_policy(_Z, _P, _A, _E, kind="tree"), "kind"),
    (lambda: fit_policy(_Z, _P, _A, None, kind="mlp"), "episode"),
    (lambda: fit_policy(_Z, _P, _A, np.zeros(len(_Z), int), kind="mlp"), "episode"),
    (lambda: fit_policy(_Z, _P, _A, _E, kind="mlp", patience=0), "patience"),
    (lambda: fit_policy(_Z, _P, _A, _E, kind="mlp", hidden=()), "hidden"),
    (lambda: fit_policy(_Z, _P, _A, _E, alpha=-1.0), "alpha"),
    (lambda: fit_policy(_Z, _P, _A, _E).predict(_Z[:, :3], _P), "embeddings"),
    (lambda: fit_policy(_Z, _P, _A, _E).predict(_Z, None), "proprio"),
    (lambda: fit_policy(_Z, _P, _A, _E).predict(_Z, _P[:, :1]), "proprio"),
    (lambda: fit_policy(_Z, _P, _A, _E, kind="mlp", max_epochs=1).as_linear(), "ridge"),
])
def test_bad_input_gives_one_line_errors(call, word):
    with pytest.raises(MetricError) as info:
        call()
    msg = str(info.value)
    assert "\n" not in msg and word in msg
