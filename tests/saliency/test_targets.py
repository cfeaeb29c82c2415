"""Saliency targets (s2r.saliency.targets): what each computes, and their errors as user errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from s2r.errors import S2RError
from s2r.saliency import (ActionTarget, DomainTarget, EmbeddingTarget, PairSimilarityTarget,
                          as_target, saliency_maps)


def test_targets_compute_what_they_say():
    z = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    assert torch.allclose(EmbeddingTarget()(z), torch.tensor([5.0, 1.0]))
    assert torch.allclose(as_target("embedding-sum")(z), torch.tensor([7.0, 1.0]))
    W, b = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.1, 0.2])
    assert torch.allclose(ActionTarget(W, b, dim=1)(z), torch.tensor([6.0 - 4.0 + 0.2, 2.2]))
    assert torch.allclose(DomainTarget(np.array([1.0, -1.0]), 2.0)(z), torch.tensor([1.0, 3.0]))
    assert torch.allclose(DomainTarget(np.array([1.0, -1.0]), 2.0, toward="sim")(z),
                          torch.tensor([-1.0, -3.0]))
    other = torch.tensor([[4.0, 3.0], [0.0, 1.0]])
    sim = PairSimilarityTarget(other.numpy())(z, other)
    assert torch.allclose(sim, torch.tensor([24.0 / 25.0, 0.0]))


def test_target_errors_are_user_errors(encoders, frames):
    with pytest.raises(S2RError, match="out of range"):
        ActionTarget(np.zeros((4, 3)), np.zeros(3), dim=3)
    with pytest.raises(S2RError, match="unknown saliency target"):
        as_target("gripper")
    with pytest.raises(S2RError, match="expects 7-D"):
        saliency_maps(encoders["clip"], frames, target=DomainTarget(np.ones(7), 0.0))
    with pytest.raises(S2RError, match="per-frame data for 2 frames"):
        saliency_maps(encoders["clip"], frames, target=PairSimilarityTarget(np.ones((2, 32))))
    with pytest.raises(S2RError, match="uint8"):
        saliency_maps(encoders["clip"], frames.astype(np.float32))
    with pytest.raises(S2RError, match="unknown saliency method"):
        saliency_maps(encoders["clip"], frames, method="lime")
