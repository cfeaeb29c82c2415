"""Projection (s2r.projection): openTSNE joint / place-real maps, the mixing number, subsampling."""

from __future__ import annotations

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.projection import (Projection, mixing_number, pca_reduce, project,
                            stratified_subsample)


def _blobs(n_sim, n_real, *, shift, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n_sim + n_real, dim)).astype(np.float32)
    Z[n_sim:, 0] += shift
    domain = np.array(["sim"] * n_sim + ["real"] * n_real)
    return Z, domain


def _mixing_by_loops(Z, domain, k):
    """Independent implementation: full distance matrix, one frame at a time."""
    n = len(Z)
    D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    ratios = {"sim": [], "real": []}
    n_of = {d: int((domain == d).sum()) for d in ("sim", "real")}
    for i in range(n):
        order = [j for j in np.argsort(D[i], kind="stable") if j != i][:k]
        other = sum(domain[j] != domain[i] for j in order) / k
        expected = n_of["real" if domain[i] == "sim" else "sim"] / (n - 1)
        ratios[domain[i]].append(other / expected)
    return 0.5 * (np.mean(ratios["sim"]) + np.mean(ratios["real"]))


# --------------------------------------------------------------------------- mixing number
def test_mixing_number_hand_computed():
    # 1-D points: sim at 0, 1.2, 5; real at 2, 6, 20. k = 1 nearest neighbour:
    # 0 -> 1.2 (sim), 1.2 -> 2 (real), 5 -> 6 (real), 2 -> 1.2 (sim), 6 -> 5 (sim),
    # 20 -> 6 (real).
    Z = np.array([[0.0], [1.2], [5.0], [2.0], [6.0], [20.0]])
    domain = np.array(["sim", "sim", "sim", "real", "real", "real"])
    # f_sim = (0, 1, 1) -> mean 2/3, f_real = (1, 1, 0) -> 2/3; expected 3/5 for both.
    assert mixing_number(Z, domain, k=1) == pytest.approx((2 / 3) / (3 / 5))


def test_mixing_number_matches_independent_implementation_unequal_domains():
    Z, domain = _blobs(70, 25, shift=1.5, dim=6, seed=3)
    for k in (1, 5, 15):
        assert mixing_number(Z, domain, k=k) == pytest.approx(_mixing_by_loops(Z, domain, k))


@pytest.mark.parametrize("n_sim,n_real", [(300, 300), (400, 80)])
def test_mixing_number_is_one_for_one_distribution_and_zero_for_separated_blobs(n_sim, n_real):
    Z, domain = _blobs(n_sim, n_real, shift=0.0, seed=1)
    assert mixing_number(Z, domain) == pytest.approx(1.0, abs=0.08)
    Z, domain = _blobs(n_sim, n_real, shift=50.0, seed=1)
    assert mixing_number(Z, domain) == 0.0


def test_mixing_number_few_frames_lowers_k_so_separation_still_shows():
    """16 frames, k = 15: every other frame is a neighbour, which used to give exactly 1.0
    for any embedding. k is capped at min(n_sim, n_real) - 1 = 7, so separated domains
    score 0 and one distribution scores about 1."""
    Z, domain = _blobs(8, 8, shift=50.0, seed=2)
    assert mixing_number(Z, domain, k=15) == 0.0
    assert mixing_number(Z, domain, k=15) == mixing_number(Z, domain, k=7)
    assert mixing_number(Z, domain, k=15) == pytest.approx(_mixing_by_loops(Z, domain, 7))


def test_mixing_number_rejects_bad_input():
    Z, domain = _blobs(10, 10, shift=0.0)
    with pytest.raises(MetricError, match="'real'"):
        mixing_number(Z[:10], domain[:10])
    with pytest.raises(MetricError, match="k must be"):
        mixing_number(Z, domain, k=0)
    with pytest.raises(MetricError, match="shape"):
        mixing_number(Z, domain[:5])
    bad = Z.copy()
    bad[3, 1] = np.nan
    with pytest.raises(MetricError, match="NaN"):
        mixing_number(bad, domain)


# --------------------------------------------------------------------------- subsampling
def test_stratified_subsample_caps_each_domain_reproducibly():
    domain = np.array(["sim"] * 50 + ["real"] * 8)
    keep = stratified_subsample(domain, 10, seed=4)
    assert (domain[keep] == "sim").sum() == 10 and (domain[keep] == "real").sum() == 8
    assert np.all(np.diff(keep) > 0)
    assert np.array_equal(keep, stratified_subsample(domain, 10, seed=4))
    assert not np.array_equal(keep, stratified_subsample(domain, 10, seed=5))
    assert np.array_equal(stratified_subsample(domain, None), np.arange(58))


def test_stratified_subsample_spreads_each_domain_over_its_episodes():
    # sim: episodes 0 (60 frames), 1 (30), 2 (10); real: episode 3 (40 frames, under the cap).
    episode = np.repeat([0, 1, 2, 3], [60, 30, 10, 40])
    domain = np.array(["sim"] * 100 + ["real"] * 40)
    keep = stratified_subsample(domain, 20, episode=episode, seed=1)
    counts = {e: int((episode[keep] == e).sum()) for e in range(4)}
    assert counts == {0: 12, 1: 6, 2: 2, 3: 20}
    # Shares that do not divide evenly: the largest remainders round up, the total is exact.
    keep = stratified_subsample(domain, 7, episode=episode, seed=1)
    counts = {e: int((episode[keep] == e).sum()) for e in range(4)}
    assert counts == {0: 4, 1: 2, 2: 1, 3: 7}
    assert len(set(keep)) == keep.size
    with pytest.raises(MetricError, match="episode must have one entry per row"):
        stratified_subsample(domain, 7, episode=episode[:5])


# --------------------------------------------------------------------------- t-SNE
def _centroid_gap(p: Projection) -> float:
    """Distance between the domain centroids in units of the within-domain spread."""
    sim, real = p.coords[p.domain == "sim"], p.coords[p.domain == "real"]
    spread = np.sqrt(0.5 * (sim.var(axis=0).sum() + real.var(axis=0).sum()))
    return float(np.linalg.norm(sim.mean(0) - real.mean(0)) / spread)


def test_joint_projection_separates_blobs_and_keeps_frame_indices():
    Z, domain = _blobs(120, 80, shift=12.0, seed=2)
    frame_rows = np.arange(200) * 3 + 7  # embeddings of every third frame of a FrameSet
    calls = []
    p = project(Z, domain, indices=frame_rows, max_per_domain=100,
                progress=lambda done, total, msg: calls.append((done, total)))
    assert p.coords.shape == (180, 2) and p.coords.dtype == np.float32
    assert np.isfinite(p.coords).all()
    assert (p.domain == "sim").sum() == 100 and (p.domain == "real").sum() == 80
    assert set(p.indices) <= set(frame_rows)
    assert np.array_equal(p.domain, domain[(p.indices - 7) // 3])
    assert _centroid_gap(p) > 3.0
    assert p.mixing == 0.0
    assert p.params["mode"] == "joint" and p.params["pca_dim"] == 32
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and calls[-1] == (1000, 1000)

    again = project(Z, domain, indices=frame_rows, max_per_domain=100)
    np.testing.assert_array_equal(again.coords, p.coords)  # fixed seed: reproducible


def test_place_real_returns_every_real_frame_inside_the_sim_map():
    Z, domain = _blobs(150, 40, shift=0.0, dim=64, seed=5)
    calls = []
    p = project(Z, domain, mode="place-real", progress=lambda *a: calls.append(a))
    real = p.domain == "real"
    assert real.sum() == 40 and np.array_equal(np.sort(p.indices[real]), np.arange(150, 190))
    assert np.isfinite(p.coords).all()
    sim_xy, real_xy = p.coords[~real], p.coords[real]
    lo, hi = sim_xy.min(0), sim_xy.max(0)
    # Same distribution: real frames land among the sim frames (the map is re-centred after
    # placing, so the sim coordinates are those of the same, final frame).
    assert np.all((real_xy >= lo) & (real_xy <= hi))
    assert _centroid_gap(p) < 1.0
    assert calls[-1][:2] == (1250, 1250) and p.params["mode"] == "place-real"


def test_place_real_puts_each_real_frame_next_to_its_sim_situation():
    """Three sim clusters (three situations); real frames of each situation, offset by a
    domain shift, must land in their own situation's region of the sim map."""
    rng = np.random.default_rng(6)
    centres = rng.normal(scale=10.0, size=(3, 16))
    label_sim, label_real = np.repeat(np.arange(3), 50), np.repeat(np.arange(3), 12)
    shift = np.full(16, 1.5)
    Z = np.concatenate([centres[label_sim] + rng.normal(size=(150, 16)),
                        centres[label_real] + shift + rng.normal(size=(36, 16))])
    domain = np.array(["sim"] * 150 + ["real"] * 36)
    p = project(Z, domain, mode="place-real")
    label = np.concatenate([label_sim, label_real])[p.indices]
    sim = p.domain == "sim"
    sim_centres = np.stack([p.coords[sim & (label == c)].mean(0) for c in range(3)])
    real_xy = p.coords[~sim]
    nearest = np.argmin(((real_xy[:, None, :] - sim_centres[None]) ** 2).sum(-1), axis=1)
    assert np.array_equal(nearest, label[~sim])


def test_project_reports_bad_parameters():
    Z, domain = _blobs(20, 20, shift=0.0)
    with pytest.raises(MetricError, match="projection mode"):
        project(Z, domain, mode="sideways")
    with pytest.raises(MetricError, match="at least 4 frames of each domain"):
        project(Z[:23], domain[:23])
    with pytest.raises(MetricError, match="max_per_domain"):
        project(Z, domain, max_per_domain=0)


def test_projection_json_round_trip_is_exact():
    p = Projection(coords=np.array([[0.1, -2.5], [1e-7, 3.25]], dtype=np.float32),
                   indices=np.array([4, 9]), domain=np.array(["sim", "real"]), mixing=0.25,
                   params={"mode": "joint"})
    q = Projection.from_json(p.to_json())
    np.testing.assert_array_equal(q.coords, p.coords)
    assert q.coords.dtype == np.float32 and q.indices.tolist() == [4, 9]
    assert q.domain.tolist() == ["sim", "real"] and q.mixing == 0.25
    assert list(p.to_frame().columns) == ["index", "domain", "x", "y"]


def _kl_of_map(P, Y) -> float:
    """Independent KL(P || Q) of a 2-D map: Q from every pair's Student-t kernel."""
    Y = np.asarray(Y, dtype=np.float64)
    W = 1.0 / (1.0 + ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(W, 0.0)
    P = P.tocoo()
    p = P.data / P.data.sum()
    q = W[P.row, P.col] / W.sum()
    return float((p * np.log(p / q)).sum())


def test_mixing_number_uses_every_frame_not_the_fitted_sample():
    Z, domain = _blobs(300, 200, shift=1.0, dim=60, seed=7)
    p = project(Z, domain, max_per_domain=60, n_iter=100, pca_dim=20)
    assert len(p) == 120 and p.params["n_frames"] == 500 and p.params["mixing_frames"] == 500
    assert p.mixing == pytest.approx(mixing_number(pca_reduce(Z, 20, 0), domain))
    sample = p.indices
    assert p.mixing != pytest.approx(mixing_number(pca_reduce(Z, 20, 0)[sample], domain[sample]))


def test_kl_divergence_is_reported_and_early_stop_ends_the_normal_phase():
    from openTSNE.affinity import PerplexityBasedNN

    Z, domain = _blobs(150, 150, shift=3.0, dim=20, seed=8)
    full = project(Z, domain, kl_tol=0.0, n_iter=300)
    assert full.params["n_iter_run"] == 300
    # Independent check of the reported KL: openTSNE's exact affinities of the same PCA input
    # and Q from all pairs of the final map.
    P = PerplexityBasedNN(pca_reduce(Z, 50, 0), perplexity=30, method="exact").P
    assert full.kl_divergence == pytest.approx(_kl_of_map(P, full.coords), rel=0.05)
    # A tolerance no step can beat stops at the second check (iteration 100).
    stopped = project(Z, domain, kl_tol=1.0, n_iter=300)
    assert stopped.params["n_iter_run"] == 100
    assert stopped.kl_divergence > full.kl_divergence  # KL still falls after iteration 100
    assert Projection.from_json(full.to_json()).kl_divergence == full.kl_divergence
