"""Saliency maps (s2r.saliency, s2r.pipeline.saliency): token reshapes, Captum methods, targets, every family.

Architecture-family tests wrap small random-weight timm / open_clip models of each family in
the real :class:`s2r.encoders.Encoder` with the registry entry's spec (Grad-CAM layer path,
family, prefix tokens, grid size), at small input sizes so they run in seconds on CPU.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from s2r.errors import EncoderError, S2RError
from s2r.saliency import (ActionTarget, DomainTarget, EmbeddingTarget, PairSimilarityTarget,
                          activations_to_grid, as_target, compute_saliency,
                          focus_score, grid_to_activations, grid_view, normalize_maps, overlay,
                          saliency_maps)

FRAME_HW = (48, 64)


def _wrap(registry_id, model, input_size, **spec_changes):
    """The real :class:`s2r.encoders.Encoder` around a small model of the same architecture
    as the registry entry (same module names, so the entry's Grad-CAM layer path resolves)."""
    from s2r.encoders import get_spec
    from s2r.encoders.build import Encoder

    spec = dataclasses.replace(get_spec(registry_id + "@random"), input_size=input_size,
                               **spec_changes)
    return Encoder(spec, model, device="cpu", weights_fingerprint="test:tiny")


def _resnet18():
    import timm

    torch.manual_seed(0)
    return _wrap("resnet18", timm.create_model("resnet18", pretrained=False, num_classes=0),
                 (64, 64))


def _efficientnet():
    from s2r.encoders import build_encoder

    # The one encoder with real ImageNet weights offline (224x224 input).
    return build_encoder("efficientnet-lite0", device="cpu")


def _mobilenet():
    import timm

    torch.manual_seed(0)
    return _wrap("mobilenetv3",
                 timm.create_model("mobilenetv3_small_050", pretrained=False, num_classes=0),
                 (64, 64))


def _vgg():
    from timm.models.vgg import VGG

    torch.manual_seed(0)
    # The registry's VGG layer is features[-1], the last max-pool.
    return _wrap("vgg16", VGG([8, "M", 16, "M", 32, "M", 32, "M", 32, "M"], num_classes=0,
                              mlp_ratio=0.01), (64, 64))


def _vit():
    from timm.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    # Non-square 3x4 grid and 4 register tokens + CLS: 5 prefix tokens.
    return _wrap("vit", VisionTransformer(img_size=(48, 64), patch_size=16, embed_dim=48,
                                          depth=2, num_heads=2, num_classes=0, reg_tokens=4),
                 (48, 64))


def _swin():
    from timm.models.swin_transformer import SwinTransformer

    torch.manual_seed(0)
    return _wrap("swin", SwinTransformer(img_size=64, patch_size=4, window_size=4, embed_dim=24,
                                         depths=(1, 1), num_heads=(1, 2), num_classes=0),
                 (64, 64))


def _clip():
    from open_clip.transformer import VisionTransformer

    torch.manual_seed(0)
    return _wrap("clip-base-16", VisionTransformer(image_size=64, patch_size=16, width=48,
                                                   layers=2, heads=2, mlp_ratio=2.0,
                                                   output_dim=32), (64, 64))


BUILDERS = {"resnet18": _resnet18, "efficientnet": _efficientnet, "mobilenet": _mobilenet,
            "vgg": _vgg, "vit": _vit, "swin": _swin, "clip": _clip}


@pytest.fixture(scope="module")
def encoders():
    return {name: build() for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, size=(3, *FRAME_HW, 3), dtype=np.uint8)
    base[:, 10:30, 20:44] = [200, 40, 40]  # a red block: some structure to look at
    return base


# --------------------------------------------------------------------------- reshape
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
    enc = _wrap("resnet18", MaskedInputModel(mask), FRAME_HW, cam_layer="conv2",
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


# --------------------------------------------------------------------------- scaling, overlay
def test_normalize_maps_flags_constant_and_non_finite_maps():
    raw = np.stack([np.full((4, 5), 3.0), np.arange(20.0).reshape(4, 5),
                    np.where(np.eye(4, 5) > 0, np.nan, 1.0)])
    maps, constant = normalize_maps(raw)
    assert constant.tolist() == [True, False, True]
    assert not np.isnan(maps).any()
    assert (maps[0] == 0).all() and (maps[2] == 0).all()
    np.testing.assert_allclose(maps[1], np.arange(20.0).reshape(4, 5) / 19.0, rtol=1e-6)


def test_overlay_blends_the_jet_colormap():
    frame = np.full((6, 8, 3), 100, dtype=np.uint8)
    heat = np.zeros((6, 8))
    heat[0, 0] = 1.0
    out = overlay(frame, heat, alpha=0.5)
    assert out.shape == (6, 8, 3) and out.dtype == np.uint8
    # jet(0) = (0, 0, 0.5), jet(1) = (0.5, 0, 0): 8-bit channels blended half and half.
    np.testing.assert_array_equal(out[1, 1], [50, 50, 114])
    np.testing.assert_array_equal(out[0, 0], [114, 50, 50])
    np.testing.assert_array_equal(overlay(frame, heat, alpha=0.0), frame)
    with pytest.raises(S2RError, match="does not match"):
        overlay(frame, np.zeros((5, 8)))
    with pytest.raises(S2RError, match="colormap"):
        overlay(frame, heat, cmap="no-such-map")


# --------------------------------------------------------------------------- frame pairs, CLI
@pytest.fixture(scope="module")
def resnet18_random():
    from s2r.encoders import build_encoder

    return build_encoder("resnet18@random", device="cpu")


def test_pair_saliency_domain_target_explains_each_frame_toward_its_domain(
        paired_demo, resnet18_random):
    from s2r.pairing import pair_frames
    from s2r.pipeline.saliency import pair_saliency, pair_targets

    sim_idx = paired_demo.indices("sim")[[0, 7]]
    result = pair_saliency(paired_demo, resnet18_random, sim_idx, target="domain")
    assert np.array_equal(result.real_indices, pair_frames(paired_demo, sim_idx))
    assert (paired_demo.domain[result.real_indices] == "real").all()
    H, W = paired_demo.image_shape[:2]
    assert result.sim.maps.shape == result.real.maps.shape == (2, H, W)
    assert result.sim.target == "domain[sim]" and result.real.target == "domain[real]"
    measures = result.measures()
    assert len(measures) == 2
    for m in measures:
        assert -1.0 <= m["agreement"] <= 1.0
        assert 0.0 <= m["sim"]["focus"] <= 1.0 and 0.0 < m["sim"]["area"] < 1.0

    t_sim, t_real = pair_targets(paired_demo, resnet18_random, "action", action_dim="pos_y")
    assert t_sim is t_real and t_sim.dim == 1
    with pytest.raises(S2RError, match="unknown action dimension 'yaw'"):
        pair_targets(paired_demo, resnet18_random, "action", action_dim="yaw")


def test_saliency_cli_writes_pair_pngs_and_measures(tmp_path, capsys):
    import json

    from PIL import Image

    from s2r.cli import main

    out = tmp_path / "sal"
    dataset = "demo:episodes=2,steps=6,height=64,width=80,paired=1"
    code = main(["saliency", dataset, "--encoder", "resnet18@random", "--frames", "0,4",
                 "--target", "action", "--action-dim", "2", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "saliency.json").read_text())
    assert report["encoder"] == "resnet18@random" and report["target"] == "action[2]"
    assert [p["sim_index"] for p in report["pairs"]] == [0, 4]
    for pair in report["pairs"]:
        image = np.asarray(Image.open(out / pair["png"]))
        assert image.shape == (64, 2 * 80 + 4, 3)
        assert pair["sim_focus"] is not None and "lift" in pair["real_focus"]
    assert "agreement" in capsys.readouterr().out

    code = main(["saliency", dataset, "--encoder", "pixels", "--frames", "0", "--out", str(out)])
    assert code == 2 and "no Grad-CAM layer" in capsys.readouterr().err
    code = main(["saliency", dataset, "--encoder", "pixels", "--frames", "1,x", "--out",
                 str(out)])
    assert code == 2 and "--frames" in capsys.readouterr().err
