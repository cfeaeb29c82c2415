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
