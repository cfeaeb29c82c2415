"""Coverage of the intervals when the ridge penalty is chosen per data set (issue 22, item 3).

Synthetic episodes of one linear-Gaussian process with a weak signal (population R^2 about
0.1 per action dim, as the demo's image encoders have), the real domain shifted: every data
set chooses its penalties (nested for the held-out probes, on the sim folds for the transfer
probe) and every bootstrap replicate chooses them again (:mod:`s2r.metrics.probe_data`).
The truths are in closed form for the probes the data set actually chose (Gaussian frames):

- transfer skill: the sim probe's expected score on the real population against the sim mean
  action's (skill against a perfect prediction, no state here);
- held-out skill: each outer fold's probe on the population of its test fold's domains;
- Sim2Real: ``sqrt(clip(transfer skill) * clip(DIS))`` with DIS of the population centroids in
  the fitted DIS space (PCA + min-max is affine, so it maps means to means).

The statistics are computed as :func:`s2r.metrics.scoring.score_embeddings` computes them
(``test_recomputation_matches_score_embeddings`` checks one data set against it), replicate
matrices at once, so that 3 x 150 data sets stay affordable.
"""

from __future__ import annotations

import numpy as np
import pytest

from s2r.metrics.baselines import MIN_CEILING_GAIN, sim2real_score
from s2r.metrics.bootstrap import bca_interval, group_bootstrap_weights, jackknife_weights
from s2r.metrics.dis import bootstrap_dis, dis_from_centroids, fit_dis_space
from s2r.metrics.params import ScoreParams
from s2r.metrics.probe_data import ProbeData
from s2r.metrics.scoring import score_embeddings
from tests.helpers.metrics_data import gaussian_episodes, gaussian_probe_error

DIM, STEPS, EP_SD, SHIFT, SIGNAL, PCA_DIM = 24, 24, 0.7, 0.15, 0.12, 4
N_BOOT = 300
COV = (EP_SD ** 2 + 1.0) * np.eye(DIM)
BETA = SIGNAL * np.linspace(-1, 1, DIM * 2).reshape(DIM, 2)


def _data(rng, n_ep):
    return gaussian_episodes(rng, n_ep, STEPS, BETA, ep_sd=EP_SD, shift=SHIFT)


def _expected_error(data, model, mean) -> float:
    return gaussian_probe_error(data, model, BETA, mean, COV)


def _skill(score, floor):
    return (score - floor) / np.maximum(1.0 - floor, MIN_CEILING_GAIN)


def _truths(data, transfer, held, space):
    f = data.folds
    sim = f.group_domain == "sim"
    mean = {"sim": np.zeros(DIM), "real": np.full(DIM, SHIFT)}
    err = _expected_error(data, data.fit(transfer.alphas[0], sim), mean["real"])
    floor = _expected_error(data, data.fit(np.inf, sim), mean["real"])
    t_skill = _skill(1 - err, 1 - floor)
    num = num_floor = 0.0
    for k, alpha in enumerate(held.alphas):
        train = f.group_fold != k
        model, mean_model = data.fit(alpha, train), data.fit(np.inf, train)
        for d in ("sim", "real"):
            n = data.n_per_group[(f.group_fold == k) & (f.group_domain == d)].sum()
            num += n * _expected_error(data, model, mean[d])
            num_floor += n * _expected_error(data, mean_model, mean[d])
    N = data.n_per_group.sum()
    h_skill = _skill(1 - num / N, 1 - num_floor / N)
    dis = dis_from_centroids(*space.transform(np.array([mean["sim"], mean["real"]])))
    return {"transfer_score_skill": t_skill, "action_score_heldout_skill": h_skill,
            "sim2real_score": sim2real_score(t_skill, dis)}


def _statistics(data, transfer, held, space, Z, W):
    """The three statistics for every replicate (rows of ``W``); ``dis_raw`` uncorrected."""
    f = data.folds
    P = np.zeros((f.n_groups, PCA_DIM))
    np.add.at(P, f.group, space.transform(Z))
    real = f.group_domain == "real"
    n = data.n_per_group

    def centroid(mask):
        return (W * mask) @ P / ((W * mask) @ n)[:, None]

    diff = centroid(real) - centroid(~real)
    t = _skill(transfer.score(W), transfer.floor(W))
    return {"transfer_score_skill": t, "action_score_heldout_skill": _skill(held.score(W),
                                                                               held.floor(W)),
            "_diff": diff, "_dis_raw": 1.0 - (diff ** 2).sum(axis=1)}


def _one(seed, n_ep):
    Z, domain, Y, episode = _data(np.random.default_rng(seed), n_ep)
    data = ProbeData(Z, domain, Y, episode, seed=seed)
    f = data.folds
    transfer, held = data.transfer("auto", "sim"), data.heldout("auto")
    space = fit_dis_space(Z, pca_dim=PCA_DIM, random_state=seed)
    W = group_bootstrap_weights(f.group_domain, N_BOOT, seed=seed).astype(float)
    J = jackknife_weights(f.group_domain)
    point = _statistics(data, transfer, held, space, Z, np.ones((1, f.n_groups)))
    reps, jack = (_statistics(data, transfer, held, space, Z, w) for w in (W, J))
    dis = bootstrap_dis(reps["_diff"])
    for s in (point, reps, jack):
        d = dis if s is reps else s["_dis_raw"]
        s["sim2real_score"] = np.array([sim2real_score(t, x) for t, x in
                                        zip(s["transfer_score_skill"], d)])
    out = {}
    for k in ("transfer_score_skill", "action_score_heldout_skill", "sim2real_score"):
        lo, hi = bca_interval(reps[k], float(point[k][0]), jack[k], 0.95, n_groups=n_ep)
        if k == "sim2real_score":
            lo, hi = max(lo, 0.0), min(hi, 1.0)
        out[k] = (lo, hi, float(point[k][0]))
    return out, _truths(data, transfer, held, space), (Z, domain, Y, episode)


def coverage(n_ep: int, n_sets: int) -> dict:
    hits = {}
    for s in range(n_sets):
        intervals, truths, _ = _one(1000 * n_ep + s, n_ep)
        for k, (lo, hi, _) in intervals.items():
            hits.setdefault(k, []).append(lo - 1e-12 <= truths[k] <= hi + 1e-12)
    return {k: float(np.mean(v)) for k, v in hits.items()}


def test_recomputation_matches_score_embeddings():
    intervals, _, (Z, domain, Y, episode) = _one(12_000, 12)
    r = score_embeddings(Z, domain, Y, episode,
                         params=ScoreParams(pca_dim=PCA_DIM, n_boot=N_BOOT, seed=12_000))
    for k, (lo, hi, value) in intervals.items():
        assert r[k] == pytest.approx(value, abs=1e-9), k
        assert (r[f"{k}_ci_low"], r[f"{k}_ci_high"]) == pytest.approx((lo, hi), abs=1e-9), k


@pytest.mark.slow
@pytest.mark.parametrize("n_ep", [6, 12, 24])
def test_intervals_with_penalty_selection_cover_the_truth(n_ep):
    cover = coverage(n_ep, 150)
    for k, c in cover.items():
        assert 0.90 <= c <= 0.98, (n_ep, k, c)
