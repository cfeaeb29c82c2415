"""Episode folds (s2r.metrics.folds): whole episodes of both domains held out."""

from __future__ import annotations

import numpy as np

from s2r.metrics.folds import episode_folds


def test_folds_hold_out_whole_episodes_of_both_domains():
    domain = np.repeat(["sim", "real"], [70, 50])
    episode = np.repeat(np.arange(12), 10)
    f = episode_folds(domain, episode, n_folds=5, seed=3)
    assert f.n_folds == 5 and f.unit == {"sim": "episode", "real": "episode"}
    for k in range(f.n_folds):
        test = f.frame_fold == k
        assert not set(episode[test]) & set(episode[~test])     # no episode on both sides
        assert {"sim", "real"} <= set(domain[test])
        assert {"sim", "real"} <= set(domain[~test])
    # 5 real episodes -> K = min(5, 5); fewer -> fewer folds.
    f3 = episode_folds(domain[:100], np.repeat(np.arange(10), 10)[:100], n_folds=5)
    assert f3.n_folds == 3
    assert np.array_equal(episode_folds(domain, episode, seed=3).group_fold, f.group_fold)
