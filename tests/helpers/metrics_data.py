"""Synthetic embeddings and actions with a known linear link, for the metrics tests."""

from __future__ import annotations

import numpy as np


def linear_data(n_episodes=20, steps=15, dim=8, actions=3, noise=0.5, seed=0, shift=0.0):
    """Sim then real episodes of ``y = z W + noise``; real embeddings shifted by ``shift``."""
    rng = np.random.default_rng(seed)
    n = n_episodes * steps
    Z = rng.normal(size=(n, dim))
    W = rng.normal(size=(dim, actions))
    Y = Z @ W + noise * rng.normal(size=(n, actions)) + 5.0
    domain = np.repeat(["sim", "real"], n // 2)
    episode = np.repeat(np.arange(n_episodes), steps)
    Z[domain == "real"] += shift
    return Z, domain, Y, episode


def gaussian_probe_error(data, model, beta, mean, cov) -> float:
    """Expected squared standardised error, averaged over the scored action dims, of a ridge
    probe fitted by ``data`` (:class:`s2r.metrics.probe_data.ProbeData`) on frames
    ``x ~ N(mean, cov)`` with actions ``y = x beta + N(0, 1)`` -- in closed form. ``1 -`` it is
    the probe's population action score; a probe with ``B = 0`` (``alpha = inf``) gives its
    training mean action's (the floor)."""
    W, b = data.gm.raw_model(model)
    ymean = data.gm.y_shift + data.gm.y_scale * model.y_center
    yscale = data.gm.y_scale * model.y_scale
    err = []
    for j in np.flatnonzero(model.scored):
        g = beta[:, j] / yscale[j] - W[:, j]
        c = -ymean[j] / yscale[j] - b[j]
        err.append((mean @ g + c) ** 2 + g @ cov @ g + 1.0 / yscale[j] ** 2)
    return float(np.mean(err))


def gaussian_episodes(rng, n_ep: int, steps: int, beta, *, ep_sd: float = 0.7,
                      shift: float = 0.0):
    """``(Z, domain, Y, episode)``: ``n_ep`` sim then ``n_ep`` real episodes of ``steps``
    Gaussian frames ``z = e + N(0, I)`` (episode effect ``e ~ N(0, ep_sd^2 I)``, real frames
    shifted by ``shift`` in every dim) with actions ``y = z beta + N(0, 1)``: frames are
    ``N(mean, (ep_sd^2 + 1) I)``, as :func:`gaussian_probe_error` assumes."""
    dim = beta.shape[0]
    n = 2 * n_ep * steps
    Z = (np.repeat(rng.normal(scale=ep_sd, size=(2 * n_ep, dim)), steps, axis=0)
         + rng.normal(size=(n, dim)))
    domain = np.repeat(["sim", "real"], n // 2)
    Z[domain == "real"] += shift
    Y = Z @ beta + rng.normal(size=(n, beta.shape[1]))
    return Z, domain, Y, np.repeat(np.arange(2 * n_ep), steps)
