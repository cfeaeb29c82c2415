"""Score parameters (s2r.metrics.params): their dict round trip and unknown names."""

from __future__ import annotations

import pytest

from s2r.errors import MetricError
from s2r.metrics.params import ScoreParams


def test_params_round_trip():
    p = ScoreParams(pca_dim=8, distance="euclidean", ridge_alpha=0.5, n_boot=10)
    assert ScoreParams.from_dict(p.to_dict()) == p
    with pytest.raises(MetricError, match="unknown score parameter"):
        ScoreParams.from_dict({"pca": 3})
