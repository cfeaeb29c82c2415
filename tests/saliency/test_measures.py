"""Saliency measures: focus on a mask, area resampling, rank agreement (hand-computed values
and independent implementations)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

from s2r.errors import MetricError
from s2r.saliency.measures import (downsample, encoder_agreement, focus_score, map_agreement,
                                   sim_real_agreement)


def test_focus_hand_computed():
    h = np.array([[1.0, 2.0, 0.0, 0.0],
                  [0.0, 3.0, 0.0, 4.0]])
    m = np.array([[1, 1, 0, 0],
                  [0, 0, 0, 1]], dtype=np.uint8)
    f = focus_score(h, m)
    # mass inside = 1 + 2 + 4 = 7 of 10; mask area = 3 / 8.
    assert f.focus == pytest.approx(0.7)
    assert f.area == pytest.approx(3 / 8)
    assert f.lift == pytest.approx(0.7 / (3 / 8))


def test_uniform_map_scores_the_mask_area_and_a_lift_of_one():
    rng = np.random.default_rng(0)
    mask = rng.random((30, 40)) < 0.23
    f = focus_score(np.full((30, 40), 0.6), mask)
    assert f.focus == pytest.approx(mask.mean())
    assert f.area == pytest.approx(mask.mean())
    assert f.lift == pytest.approx(1.0)


def test_focus_edge_cases_are_nan_not_errors():
    mask = np.zeros((4, 4), dtype=bool)
    mask[0, 0] = True
    zero = focus_score(np.zeros((4, 4)), mask)
    assert np.isnan(zero.focus) and np.isnan(zero.lift) and zero.area == pytest.approx(1 / 16)
    empty = focus_score(np.ones((4, 4)), np.zeros((4, 4)))
    assert empty.focus == 0.0 and empty.area == 0.0 and np.isnan(empty.lift)


def test_focus_rejects_bad_inputs():
    with pytest.raises(MetricError, match="does not match"):
        focus_score(np.ones((4, 4)), np.ones((4, 5)))
    with pytest.raises(MetricError, match="non-negative"):
        focus_score(-np.ones((4, 4)), np.ones((4, 4)))
    with pytest.raises(MetricError, match="NaN"):
        focus_score(np.full((4, 4), np.nan), np.ones((4, 4)))
    with pytest.raises(MetricError, match="2-D"):
        focus_score(np.ones((2, 4, 4)), np.ones((4, 4)))


def _downsample_by_repetition(h, size):
    """Independent area resampling: repeat pixels up to a common multiple, then block-mean."""
    H, W = h.shape
    LH, LW = np.lcm(H, size), np.lcm(W, size)
    big = np.repeat(np.repeat(h, LH // H, axis=0), LW // W, axis=1)
    return big.reshape(size, LH // size, size, LW // size).mean(axis=(1, 3))


def test_downsample_is_area_averaging():
    rng = np.random.default_rng(1)
    h = rng.random((8, 12))
    # Divisible case: plain block means.
    np.testing.assert_allclose(downsample(h, 4), h.reshape(4, 2, 4, 3).mean(axis=(1, 3)))
    # Non-divisible and upsampling cases against the repetition implementation.
    h = rng.random((15, 21))
    for size in (4, 7, 9, 56):
        out = downsample(h, size)
        assert out.shape == (size, size)
        np.testing.assert_allclose(out, _downsample_by_repetition(h, size), atol=1e-12)
        assert out.mean() == pytest.approx(h.mean())


def test_agreement_hand_computed_spearman():
    # 4x4 maps made of 2x2 constant blocks -> 2x2 after downsampling.
    a = np.kron(np.array([[1.0, 2.0], [3.0, 4.0]]), np.ones((2, 2)))
    b = np.kron(np.array([[2.0, 1.0], [4.0, 3.0]]), np.ones((2, 2)))
    # ranks a = 1 2 3 4, b = 2 1 4 3: d^2 sums to 4, rho = 1 - 6 * 4 / (4 * 15) = 0.6
    assert map_agreement(a, b, size=2) == pytest.approx(0.6)
    assert map_agreement(a, a, size=2) == pytest.approx(1.0)
    assert map_agreement(a, 5.0 - a, size=2) == pytest.approx(-1.0)


def test_agreement_matches_pearson_of_ranks_on_downsampled_maps():
    rng = np.random.default_rng(2)
    a, b = rng.random((112, 112)), rng.random((112, 112))
    b = 0.5 * a + b  # correlated
    da = a.reshape(56, 2, 56, 2).mean(axis=(1, 3)).ravel()
    db = b.reshape(56, 2, 56, 2).mean(axis=(1, 3)).ravel()
    expected = np.corrcoef(rankdata(da), rankdata(db))[0, 1]
    assert map_agreement(a, b) == pytest.approx(expected, abs=1e-12)
    assert sim_real_agreement(a, b) == map_agreement(a, b)
    assert encoder_agreement(a, b) == encoder_agreement(b, a)


def test_agreement_of_maps_of_different_sizes_and_constant_maps():
    y, x = np.mgrid[0:96, 0:128]
    small = np.exp(-((y - 48) ** 2 + (x - 64) ** 2) / 800.0)
    y, x = np.mgrid[0:240, 0:320]
    large = np.exp(-((y - 120) ** 2 + (x - 160) ** 2) / 5000.0)
    assert map_agreement(small, large) > 0.95  # the same centred blob at two resolutions
    assert np.isnan(map_agreement(np.ones((10, 10)), small))
