"""Saliency maps with Captum (s2r.saliency.methods): Grad-CAM against a hand computation, every
architecture family, integrated gradients and occlusion, per-frame targets, frame checks,
focus on a mask.

Architecture-family tests wrap small random-weight timm / open_clip models of each family in
the real :class:`s2r.encoders.Encoder` with the registry entry's spec (Grad-CAM layer path,
family, prefix tokens, grid size), at small input sizes so they run in seconds on CPU
(:mod:`tests.helpers.saliency_models`).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from s2r.errors import EncoderError, S2RError
from s2r.saliency import (ActionTarget, DomainTarget, PairSimilarityTarget, as_target,
                          compute_saliency, focus_score, normalize_maps, saliency_maps)
from tests.helpers.saliency_models import BUILDERS, FRAME_HW, wrap_encoder


# --------------------------------------------------------------------------- Grad-CAM vs by hand
def _manual_gradcam(encoder, frames, to_grid):
    """Grad-CAM written out: weights = spatial mean of d(norm z)/dA, relu(sum_c w_c A_c)."""
    store = {}

    def hook(module, inputs, output):
        output.retain_grad()
        store["act"] = output

    handle = encoder.cam_layer.register_forward_hook(hook)
    try:
        x = encoder.preprocess(frames).requires_grad_(True)
        encoder(x).norm(dim=1).sum().backward()
    finally:
        handle.remove()
    act = to_grid(store["act"].detach())
    grad = to_grid(store["act"].grad)
    cam = F.relu((grad.mean(dim=(2, 3), keepdim=True) * act).sum(dim=1, keepdim=True))
    up = F.interpolate(cam, size=frames.shape[1:3], mode="bilinear", align_corners=False)
    return normalize_maps(up[:, 0].numpy())[0]


def test_gradcam_matches_hand_computation_cnn_and_vit(encoders, frames):
    res = encoders["resnet18"]
    expected = _manual_gradcam(res, frames, lambda a: a)
    np.testing.assert_allclose(saliency_maps(res, frames), expected, atol=1e-4)

    vit = encoders["vit"]
    # By hand: drop the 5 prefix tokens, rows of 4 patches.
    expected = _manual_gradcam(
        vit, frames, lambda a: a[:, 5:, :].transpose(1, 2).reshape(a.shape[0], -1, 3, 4))
    np.testing.assert_allclose(saliency_maps(vit, frames, batch_size=2), expected, atol=1e-4)


# --------------------------------------------------------------------------- every family
@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_family_gives_non_constant_maps_for_two_targets(encoders, frames, name):
    enc = encoders[name]
    Z = enc.embed(frames[:2])
    # Grad-CAM keeps evidence *for* the target (ReLU): a random linear probe whose prediction
    # is negative on every frame gives an all-zero (flagged) map, so the probe targets here
    # point along the mean embedding; their maps differ from the embedding-norm map.
    direction = Z.mean(axis=0)
    targets = [
        "embedding",
        ActionTarget(np.stack([-direction, direction], axis=1), np.zeros(2), dim=1),
        DomainTarget(direction, -1.0),
    ]
    for target in targets:
        result = compute_saliency(enc, frames[:2], target=target, batch_size=2)
        maps = result.maps
        assert maps.shape == (2, *FRAME_HW) and maps.dtype == np.float32
        assert maps.min() >= 0.0 and maps.max() <= 1.0
        assert not result.constant.any(), (name, as_target(target).name)
        for m in maps:
            assert m.max() == pytest.approx(1.0) and m.min() == pytest.approx(0.0)
            assert np.unique(np.round(m, 3)).size > 10  # a real map, not a few flat levels


def test_integrated_gradients_and_occlusion_on_token_models(encoders, frames):
    for name in ("vit", "clip"):
        for method in ("ig", "occlusion"):
            result = compute_saliency(encoders[name], frames[:2], method=method, batch_size=2,
                                      ig_steps=8, occlusion_grid=4)
            assert result.maps.shape == (2, *FRAME_HW)
            assert not result.constant.any() and result.method == method


@pytest.mark.parametrize("method", ["gradcam", "ig", "occlusion"])
def test_pair_similarity_is_per_frame_whatever_the_batching(encoders, frames, method):
    """Captum expands per-frame target data with the input (IG steps, occlusion windows):
    maps of a batch must equal maps computed one frame at a time."""
    enc = encoders["clip"]
    other = enc.embed(np.roll(frames, 1, axis=0))  # each frame paired with another one
    options = dict(method=method, ig_steps=8, occlusion_grid=4)
    batched = saliency_maps(enc, frames, batch_size=3, target=PairSimilarityTarget(other),
                            **options)
    single = np.concatenate([
        saliency_maps(enc, frames[i:i + 1], target=PairSimilarityTarget(other[i:i + 1]),
                      **options) for i in range(3)])
    np.testing.assert_allclose(batched, single, atol=2e-4)
    assert not np.allclose(batched[0], batched[1])


def test_frames_are_checked_before_any_work(encoders, frames):
    from s2r.errors import DataError
    from s2r.images import check_frames

    check_frames(frames)  # a uint8 (B, H, W, 3) batch passes
    with pytest.raises(DataError, match=r"saliency frames must be a uint8 batch of shape "
                                        r"\(B, H, W, 3\), got shape \(48, 64, 3\)"):
        saliency_maps(encoders["clip"], frames[0])
    with pytest.raises(DataError, match="saliency frames must be uint8 .* got dtype float32"):
        saliency_maps(encoders["clip"], frames.astype(np.float32))
    with pytest.raises(DataError, match=r"^frames must be uint8 \(0-255 RGB\), got dtype "
                                        r"torch.float32$"):
        check_frames(torch.zeros(1, 4, 4, 3))
    with pytest.raises(S2RError, match="at least one frame"):
        saliency_maps(encoders["clip"], frames[:0])


# --------------------------------------------------------------------------- focus on a mask
class MaskedInputModel(nn.Module):
    """Output depends only on pixels inside ``mask`` (input multiplied by it; no conv bias)."""

    def __init__(self, mask):
        super().__init__()
        torch.manual_seed(0)
        self.register_buffer("mask", torch.as_tensor(mask, dtype=torch.float32)[None, None])
        # 1x1 convolutions without bias: activations outside the mask are exactly 0.
        self.conv1 = nn.Conv2d(3, 8, 1, bias=False)
        self.conv2 = nn.Conv2d(8, 16, 1, bias=False)

    def forward(self, x):
        a = F.relu(self.conv2(F.relu(self.conv1(x * self.mask))))
        return a.mean(dim=(2, 3)) + a.amax(dim=(2, 3))


def test_focus_is_one_when_the_output_only_sees_the_mask(frames):
    mask = np.zeros(FRAME_HW, dtype=np.uint8)
    mask[8:24, 16:40] = 1
    enc = wrap_encoder("resnet18", MaskedInputModel(mask), FRAME_HW, cam_layer="conv2",
                       mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    for method in ("ig", "gradcam"):
        maps = saliency_maps(enc, frames, method=method)
        for m in maps:
            f = focus_score(m, mask)
            assert f.area == pytest.approx(mask.mean())
            # Gradients and activations outside the mask are exactly 0.
            assert f.focus > 0.999, (method, f)


def test_pixels_family_has_no_gradcam_but_ig_works(frames):
    from s2r.encoders import build_encoder

    enc = build_encoder("pixels", device="cpu")
    with pytest.raises(EncoderError, match="no Grad-CAM layer"):
        saliency_maps(enc, frames)
    maps = saliency_maps(enc, frames, method="ig")
    assert maps.shape == (3, *FRAME_HW) and maps.max() == pytest.approx(1.0)
