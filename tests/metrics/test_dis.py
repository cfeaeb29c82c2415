"""Domain invariance score (eq. 1): hand-computed values, an independent implementation,
the demo's gap, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from s2r.errors import MetricError
from s2r.metrics.dis import (DEFAULT_PCA_DIM, dis_from_centroids, domain_invariance_score,
                             fit_dis_space)


def test_hand_computed_1d():
    # PCA of 1-D data is a shift (and maybe a sign flip); min-max maps 0,1,3,4 to
    # 0, .25, .75, 1. Sim centroid .125, real .875: squared distance .5625.
    Z = np.array([[0.0], [1.0], [3.0], [4.0]])
    domain = ["sim", "sim", "real", "real"]
    sq = domain_invariance_score(Z, domain, pca_dim=1)
    assert sq.value == pytest.approx(1 - 0.5625, abs=1e-12)
    assert sq.squared_distance == pytest.approx(0.5625, abs=1e-12)
    eu = domain_invariance_score(Z, domain, pca_dim=1, distance="euclidean")
    assert eu.value == pytest.approx(0.25, abs=1e-12)
    assert (sq.n_sim, sq.n_real, sq.pca_dim) == (2, 2, 1)


def test_hand_computed_2d():
    # x has variance 4, y 0.25, no covariance: the PCA axes are x then y. After min-max
    # x -> 0,1,0,1 and y -> 0,0,1,1. Sim = rows 0-2: centroid (1/3, 1/3); real = row 3: (1, 1).
    # Squared distance 2 * (2/3)^2 = 8/9.
    Z = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 1.0], [4.0, 1.0]])
    domain = ["sim", "sim", "sim", "real"]
    r = domain_invariance_score(Z, domain, pca_dim=2)
    assert r.value == pytest.approx(1 - 8 / 9, abs=1e-12)
    assert r.explained_variance == pytest.approx(1.0)
    assert sorted(r.real_centroid) == pytest.approx([1.0, 1.0])
    assert sorted(r.sim_centroid) == pytest.approx([1 / 3, 1 / 3])
    e = domain_invariance_score(Z, domain, pca_dim=2, distance="euclidean")
    assert e.value == pytest.approx(1 - math.sqrt(8 / 9), abs=1e-12)
    # k = 1 keeps only x: (1/3 - 1)^2 = 4/9.
    assert domain_invariance_score(Z, domain, pca_dim=1).value == pytest.approx(5 / 9)


def test_matches_independent_implementation():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(3)
    Z = rng.normal(size=(300, 12)) @ rng.normal(size=(12, 12))
    domain = np.where(rng.random(300) < 0.4, "real", "sim")
    Z[domain == "real"] += rng.normal(size=12)
    k = 5
    P = PCA(n_components=k, svd_solver="full").fit_transform(Z)
    P = (P - P.min(0)) / (P.max(0) - P.min(0))
    d = P[domain == "real"].mean(0) - P[domain == "sim"].mean(0)
    r = domain_invariance_score(Z, domain, pca_dim=k)
    assert r.value == pytest.approx(1 - d @ d, abs=1e-9)
    assert domain_invariance_score(Z, domain, pca_dim=k, distance="euclidean").value == \
        pytest.approx(1 - np.sqrt(d @ d), abs=1e-9)


def test_identical_domains_score_one_and_range():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 30))
    both = np.concatenate([Z, Z])
    domain = np.repeat(["sim", "real"], 40)
    assert domain_invariance_score(both, domain, pca_dim=10).value == pytest.approx(1.0, abs=1e-12)
    # Two far-apart clusters: PC1 separates them, so DIS ~ 1 - 1 = 0; never below 1 - k.
    far = np.concatenate([Z, Z + 100.0])
    r = domain_invariance_score(far, domain, pca_dim=10)
    assert 1 - 10 <= r.value < 0.05
    assert r.value >= 1 - r.pca_dim


def test_invariant_to_affine_maps_of_the_embedding():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(120, 8))
    domain = np.repeat(["sim", "real"], 60)
    Z[60:, 0] += 1.5
    Q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    a = domain_invariance_score(Z, domain, pca_dim=4).value
    b = domain_invariance_score(3.0 * Z @ Q + 7.0, domain, pca_dim=4).value
    assert a == pytest.approx(b, abs=1e-9)


def test_dis_space_transform_is_in_unit_box():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(50, 6))
    space = fit_dis_space(Z, pca_dim=3)
    P = space.transform(Z)
    assert P.shape == (50, 3)
    assert P.min() == pytest.approx(0.0) and P.max() == pytest.approx(1.0)
    assert dis_from_centroids([0, 0, 0], [1, 1, 1]) == pytest.approx(-2.0)
    assert dis_from_centroids([0, 0, 0], [1, 1, 1], "euclidean") == pytest.approx(1 - math.sqrt(3))


def test_rank_deficient_components_are_held_at_zero():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 1))
    Z = np.hstack([x, 2 * x, -x])                  # rank 1
    domain = np.repeat(["sim", "real"], 15)
    r = domain_invariance_score(Z, domain, pca_dim=3)
    ref = domain_invariance_score(Z[:, :1], domain, pca_dim=1)
    assert r.value == pytest.approx(ref.value, abs=1e-9)
    assert r.warnings and "no variance" in r.warnings[0]


def test_dis_falls_as_the_demo_gap_grows(pixels_embeddings):
    values = [domain_invariance_score(Z, fs.domain).value for fs, Z in pixels_embeddings]
    gap0 = values[0]
    assert gap0 == pytest.approx(1.0, abs=1e-9)      # gap 0, paired: identical frames
    assert values[0] > values[1] > values[2]          # gaps 0 < 0.5 < 1


@pytest.mark.parametrize("case, message", [
    ("one_domain", "no 'real' frames"),
    ("nan", "NaN or inf"),
    ("too_few_frames", "too large"),
    ("constant", "constant"),
    ("bad_distance", "distance must be one of"),
    ("bad_domain", "'sim' or 'real'"),
    ("one_d", "2-D"),
])
def test_bad_input_raises_metric_error(case, message):
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(20, 5))
    domain = np.repeat(["sim", "real"], 10)
    kwargs = {"pca_dim": 3}
    if case == "one_domain":
        domain = np.full(20, "sim")
    elif case == "nan":
        Z[3, 2] = np.nan
    elif case == "too_few_frames":
        Z, domain = Z[:3], np.array(["sim", "real", "real"])
    elif case == "constant":
        Z = np.ones((20, 5))
    elif case == "bad_distance":
        kwargs["distance"] = "manhattan"
    elif case == "bad_domain":
        domain = np.repeat(["sim", "robot"], 10)
    elif case == "one_d":
        Z = Z[:, 0]
    with pytest.raises(MetricError, match=message):
        domain_invariance_score(Z, domain, **kwargs)


def test_default_pca_dim_is_recorded():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(60, 40))
    r = domain_invariance_score(Z, np.repeat(["sim", "real"], 30))
    assert r.pca_dim == DEFAULT_PCA_DIM and r.distance == "squared" and r.random_state == 0
    assert set(r.to_dict()) >= {"value", "pca_dim", "distance", "explained_variance"}
