"""The two-stage policy: a probe reads the task state from the embedding, an MLP acts on it."""

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.closedloop.policy.two_stage import ALPHAS, fit_two_stage


def _data(n_episodes=30, steps=20, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    n = n_episodes * steps
    task = rng.normal(size=(n, 3))                       # what the camera must supply
    proprio = rng.normal(size=(n, 2))
    mix = np.random.default_rng(99).normal(size=(3, 40))   # one camera for every draw
    Z = task @ mix + noise * rng.normal(size=(n, 40))   # an embedding that holds it linearly
    actions = np.stack([np.tanh(task[:, 0] + proprio[:, 0]), task[:, 1] * proprio[:, 1],
                        task[:, 2]], axis=1)
    episode = np.repeat(np.arange(n_episodes), steps)
    return Z, proprio, task, actions, episode


def test_the_probe_reads_a_linearly_held_task_state_and_the_policy_acts_on_it():
    Z, P, S, A, ep = _data()
    pol = fit_two_stage(Z, P, S, A, ep, max_epochs=150)
    np.testing.assert_allclose(pol.decode(Z), S, atol=0.05)
    np.testing.assert_allclose(pol.predict(Z, P), pol.control.predict(pol.decode(Z), P))
    Zt, Pt, St, At, _ = _data(seed=1)
    err = np.mean((pol.predict(Zt, Pt) - At) ** 2)
    assert err < 0.25 * np.mean((At - At.mean(0)) ** 2)    # far better than the mean action
    assert set(pol.alpha.tolist()) <= set(ALPHAS)


@pytest.mark.slow
def test_an_embedding_without_the_task_state_gives_a_policy_no_better_than_the_mean():
    Z, P, S, A, ep = _data()
    Z = np.random.default_rng(5).normal(size=Z.shape)     # holds nothing about the task
    pol = fit_two_stage(Z, P, S, A, ep, max_epochs=150)
    Zt, Pt, St, At, _ = _data(seed=1)
    informed = fit_two_stage(*_data()[:5], max_epochs=150)
    assert (np.mean((pol.predict(Zt, Pt) - At) ** 2)
            > 3 * np.mean((informed.predict(Zt, Pt) - At) ** 2))


def test_a_fixed_alpha_is_used_and_bad_inputs_are_refused():
    Z, P, S, A, ep = _data(n_episodes=6, steps=5)
    assert np.all(fit_two_stage(Z, P, S, A, ep, alpha=1e-3, max_epochs=5).alpha == 1e-3)
    with pytest.raises(MetricError, match="task_state"):
        fit_two_stage(Z, P, S[:-1], A, ep)
    with pytest.raises(MetricError, match="episode"):
        fit_two_stage(Z, P, S, A, None)


def test_the_penalty_is_chosen_per_column_and_a_column_the_embedding_lacks_is_shrunk():
    Z, P, S, A, ep = _data()
    noise = np.random.default_rng(7).normal(size=(len(S), 1))     # not in Z at all
    constant = np.full((len(S), 1), 0.25)                         # the same in every frame
    S3 = np.concatenate([S, noise, constant], axis=1)
    pol = fit_two_stage(Z, P, S3, A, ep, max_epochs=5)
    assert pol.alpha[:3].max() < pol.alpha[3] == max(ALPHAS)      # held: little; absent: most
    decoded = pol.decode(Z)
    np.testing.assert_allclose(decoded[:, :3], S, atol=0.05)
    assert np.std(decoded[:, 3]) < 0.2 * np.std(noise)            # shrunk toward its mean
    np.testing.assert_allclose(decoded[:, 4], 0.25)
