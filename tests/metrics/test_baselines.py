"""Floors, ceilings, skills, the training AS's permutation null, estimability, the Sim2Real
formula (s2r.metrics.baselines)."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.metrics.action_probe import action_score
from s2r.metrics.baselines import (MIN_CEILING_GAIN, MIN_EPISODES, MIN_FRAMES_PER_BLOCK,
                                   estimability, sim2real_score, skill, skill_reference)
from s2r.metrics.probe_data import ProbeData


def test_skill_by_hand():
    assert skill(0.5, 0.0, 0.8, "ceiling") == pytest.approx(0.625)
    assert skill(0.8, 0.0, 0.8, "ceiling") == pytest.approx(1.0)      # at the ceiling
    assert skill(-0.1, -0.1, 0.8, "ceiling") == 0.0                   # at the floor
    assert skill(-0.3, -0.1, 0.8, "ceiling") == pytest.approx(-0.2 / 0.9)
    assert skill(0.5, -0.2, None, "perfect") == pytest.approx(0.7 / 1.2)
    # A replicate whose ceiling fell onto its floor cannot explode.
    assert abs(skill(0.02, 0.0, 0.0, "ceiling")) <= 0.02 / MIN_CEILING_GAIN


def test_skill_reference_needs_a_ceiling_above_the_floor():
    assert skill_reference(0.0, 0.8) == "ceiling"
    assert skill_reference(0.0, None) == "perfect"
    assert skill_reference(0.0, MIN_CEILING_GAIN / 2) == "perfect"


def test_estimability_rules():
    ok = estimability({"sim": "episode", "real": "episode"},
                      {"sim": MIN_EPISODES, "real": 9}, {"sim": 3, "real": 3})
    assert ok is None
    few = estimability({"sim": "episode", "real": "episode"},
                       {"sim": 9, "real": MIN_EPISODES - 1}, {"sim": 3, "real": 3})
    assert "real domain has 3 episode(s)" in few
    blocks = estimability({"sim": "time-block", "real": "episode"},
                          {"sim": 5, "real": 6}, {"sim": MIN_FRAMES_PER_BLOCK - 1, "real": 3})
    assert "time blocks" in blocks and "sim" in blocks


def _data(n=60, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, dim)) * np.linspace(0.5, 2, dim)
    Y = Z[:, :2] @ np.array([[1.0, -0.5], [0.3, 2.0]]) + rng.normal(size=(n, 2))
    domain = np.repeat(["sim", "real"], n // 2)
    episode = np.repeat(np.arange(n // 5), 5)
    return Z, Y, domain, episode


@pytest.mark.parametrize("alpha", [0.0, 1e-3, 0.1])
def test_training_null_equals_the_mean_over_shuffles(alpha):
    # The closed form against Monte Carlo: the mean training AS of actions permuted across
    # frames (its standard error over 3,000 shuffles is ~1e-3).
    Z, Y, domain, episode = _data()
    data = ProbeData(Z, domain, Y, episode)
    closed = data.train_null(alpha)
    rng = np.random.default_rng(1)
    shuffles = [action_score(Z, Y[rng.permutation(len(Y))], alpha=alpha).value
                for _ in range(3000)]
    assert closed == pytest.approx(np.mean(shuffles), abs=4 * np.std(shuffles) / np.sqrt(3000))


def test_training_null_reaches_one_when_the_dimension_reaches_the_frames():
    # The paper's training AS cannot rank then: noise scores 1.
    rng = np.random.default_rng(2)
    Z, Y = rng.normal(size=(30, 40)), rng.normal(size=(30, 3))
    domain, episode = np.repeat(["sim", "real"], 15), np.repeat(np.arange(6), 5)
    data = ProbeData(Z, domain, Y, episode)
    assert data.train_null(0.0) == pytest.approx(1.0)
    assert action_score(Z, Y, alpha=0.0).value == pytest.approx(1.0)
    # Few features: the null is about rank / (n - 1).
    small = ProbeData(Z[:, :3], domain, Y, episode)
    assert small.train_null(0.0) == pytest.approx(3 / 29)
    assert small.train_null(float("inf")) == 0.0


def test_sim2real_formula():
    # sqrt(clip(transfer_skill, 0, 1) * clip(DIS, 0, 1))
    assert sim2real_score(0.81, 1.0) == pytest.approx(0.9)
    assert sim2real_score(0.5, 0.5) == pytest.approx(0.5)
    assert sim2real_score(0.64, 0.25) == pytest.approx(0.4)
    assert sim2real_score(-0.3, 0.9) == 0.0           # transfer worse than the mean action
    assert sim2real_score(0.9, -2.0) == 0.0           # DIS below 0 (big gap)
    assert sim2real_score(1.0, 1.0) == 1.0
    assert sim2real_score(1.7, 1.0) == 1.0            # beyond the state ceiling
    # Higher transfer or higher DIS never lowers it.
    grid = np.linspace(-0.5, 1.0, 7)
    for t0, t1 in zip(grid, grid[1:]):
        assert sim2real_score(t1, 0.7) >= sim2real_score(t0, 0.7)
        assert sim2real_score(0.7, t1) >= sim2real_score(0.7, t0)
