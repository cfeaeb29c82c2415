"""Token activations <-> grids (s2r.saliency.tokens): ViT prefixes, non-square and inferred grids,
sequence-first CLIP, Swin NHWC, errors, and the grid hook that leaves the output unchanged."""

from __future__ import annotations

import pytest
import torch

from s2r.errors import EncoderError
from s2r.saliency import activations_to_grid, grid_to_activations, grid_view


def test_activations_to_grid_vit_drops_prefix_and_handles_non_square_grid():
    B, prefix, h, w, C = 2, 5, 3, 4, 6
    act = torch.arange(B * (prefix + h * w) * C, dtype=torch.float32).reshape(B, prefix + h * w, C)
    grid = activations_to_grid(act, "vit", prefix, (h, w))
    assert grid.shape == (B, C, h, w)
    # Token prefix + r * w + c holds grid cell (r, c); check every cell against the tokens.
    for r in range(h):
        for c in range(w):
            assert torch.equal(grid[:, :, r, c], act[:, prefix + r * w + c, :])
    back = grid_to_activations(grid, act, "vit", prefix, (h, w))
    assert torch.equal(back, act)


def test_activations_to_grid_sequence_first_clip_and_square_inference():
    B, N, C = 3, 1 + 16, 5
    bnc = torch.randn(B, N, C)
    nbc = bnc.transpose(0, 1).contiguous()
    g1 = activations_to_grid(bnc, "clip", 1, (4, 4))
    g2 = activations_to_grid(nbc, "clip", 1, (4, 4), batch_size=B)
    g3 = activations_to_grid(bnc, "clip", 1, None)  # square grid inferred
    assert torch.equal(g1, g2) and torch.equal(g1, g3)
    assert torch.equal(grid_to_activations(g2, nbc, "clip", 1, (4, 4), batch_size=B), nbc)


def test_activations_to_grid_swin_nhwc_and_cnn_identity():
    nhwc = torch.randn(2, 3, 5, 7)
    grid = activations_to_grid(nhwc, "swin")
    assert grid.shape == (2, 7, 3, 5)
    assert torch.equal(grid[:, :, 1, 2], nhwc[:, 1, 2, :])
    assert torch.equal(grid_to_activations(grid, nhwc, "swin"), nhwc)
    nchw = torch.randn(2, 4, 3, 3)
    assert activations_to_grid(nchw, "cnn") is nchw


def test_activations_to_grid_errors_name_the_problem():
    with pytest.raises(EncoderError, match="prefix"):
        activations_to_grid(torch.randn(2, 20, 4), "vit", 1, (4, 4))  # 1 + 16 != 20
    with pytest.raises(EncoderError, match="not a square"):
        activations_to_grid(torch.randn(2, 1 + 12, 4), "vit", 1, None)
    with pytest.raises(EncoderError, match="pixels"):
        activations_to_grid(torch.randn(2, 4, 3, 3), "pixels")
    with pytest.raises(EncoderError, match="does not fit"):
        activations_to_grid(torch.randn(2, 4, 3), "cnn")


def test_grid_hook_leaves_encoder_output_unchanged(encoders, frames):
    for name in ("vit", "swin", "clip", "vgg"):
        enc = encoders[name]
        x = enc.preprocess(frames)
        with torch.no_grad():
            plain = enc(x)
            with grid_view(enc, {"batch": x.shape[0]}):
                hooked = enc(x)
        assert torch.allclose(plain, hooked, atol=0, rtol=0), name
