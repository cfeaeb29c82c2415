"""The layers ("taps") of encoders: which, how pooled, checked against upstream's own APIs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from s2r.encoders import build_encoder, get_spec
from s2r.encoders.taps import (LayerEmbedder, LayerView, layer_plan, layer_view, plan_layers,
                               select_layers)
from s2r.errors import EncoderError
from s2r.settings import current


@pytest.fixture(scope="module")
def frames():
    return np.random.default_rng(0).integers(0, 256, (3, 60, 80, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def resnet():
    return build_encoder("resnet18@random", device="cpu", settings=current())


@pytest.fixture(scope="module")
def vit_tiny():
    return build_encoder("timm:vit_tiny_patch16_224@random", device="cpu", settings=current())


def test_efficientnet_lite0_has_named_layers_of_different_widths():
    plan = layer_plan(get_spec("efficientnet-lite0"))
    assert [t.name for t in plan] == ["blocks.0", "blocks.1", "blocks.2", "blocks.4",
                                      "blocks.6", "head"]
    assert [t.dim for t in plan] == [16, 24, 40, 112, 320, 1280]
    assert [t.index for t in plan] == list(range(6))
    depths = [t.depth for t in plan]
    assert depths == sorted(depths) and 0 < depths[0] and depths[-1] == 1.0
    assert [t.final for t in plan] == [False] * 5 + [True]


def test_a_layer_whose_pool_is_the_embedding_is_the_final_layer():
    # ResNet's head is the average of layer4, a ViT's the CLS of its last block (after norm):
    # no separate "head" layer, the final layer takes the module's name
    resnet = layer_plan(get_spec("resnet18@random"))
    assert [t.name for t in resnet] == ["act1", "layer1", "layer2", "layer3", "layer4"]
    assert resnet[-1].final and resnet[-1].module == "layer4"
    vit = layer_plan(get_spec("timm:vit_tiny_patch16_224"))
    assert [t.name for t in vit] == [f"blocks.{i}" for i in range(12)]
    assert vit[-1].final and all(t.dim == 192 for t in vit)
    # ... and a tower whose last block is not the embedding keeps both
    mobilenet = layer_plan(get_spec("mobilenetv3@random"))
    assert mobilenet[-1].name == "head" and mobilenet[-2].name == "blocks.6"
    assert (mobilenet[-2].dim, mobilenet[-1].dim) == (960, 1280)


def test_references_have_one_layer():
    assert [(t.name, t.final) for t in layer_plan(get_spec("pixels"))] == [("pixels", True)]
    assert [(t.name, t.dim) for t in layer_plan(get_spec("state"))] == [("state", None)]


def test_select_layers_names_and_errors():
    plan = layer_plan(get_spec("resnet18@random"))
    assert select_layers(plan, "all") == plan
    assert [t.name for t in select_layers(plan, "last")] == ["layer4"]
    assert [t.name for t in select_layers(plan, ["layer2", "last", "act1"])] == [
        "act1", "layer2", "layer4"]
    with pytest.raises(EncoderError) as err:
        select_layers(plan, ["layer9"], encoder="resnet18@random")
    text = str(err.value)
    assert "\n" not in text and "'layer9'" in text
    assert "act1, layer1, layer2, layer3, layer4" in text


def test_cnn_layers_equal_timm_forward_intermediates_averaged(resnet, frames):
    plan = layer_plan(resnet.spec)
    Z = LayerEmbedder(resnet, plan).embed(frames)
    parts = LayerEmbedder(resnet, plan).split(Z)
    x = resnet.preprocess(frames)
    with torch.inference_mode():
        inter = resnet.model.forward_intermediates(x.float(), indices=[0, 1, 2, 3, 4],
                                                   intermediates_only=True)
    for tap, feat in zip(plan, inter):
        want = feat.float().mean(dim=(2, 3)).numpy()
        np.testing.assert_allclose(parts[tap.name], want, rtol=1e-4, atol=1e-5)
    # the final layer's columns are the encoder's own embedding, bit for bit
    np.testing.assert_array_equal(parts["layer4"], resnet.embed(frames))


def test_vit_layers_are_upstream_intermediates_through_the_models_head(vit_tiny, frames):
    plan = layer_plan(vit_tiny.spec)
    parts = LayerEmbedder(vit_tiny, plan).split(LayerEmbedder(vit_tiny, plan).embed(frames))
    model = vit_tiny.model
    x = vit_tiny.preprocess(frames)
    with torch.inference_mode():
        inter = model.forward_intermediates(x, indices=[3, 7], norm=True, output_fmt="NLC",
                                            return_prefix_tokens=True, intermediates_only=True)
        for (spatial, prefix), i in zip(inter, (3, 7)):
            tokens = torch.cat([prefix, spatial], dim=1)
            want = model.forward_head(tokens, pre_logits=True).numpy()
            np.testing.assert_allclose(parts[f"blocks.{i}"], want, rtol=1e-4, atol=1e-5)
    assert not np.allclose(parts["blocks.3"], parts["blocks.7"])
    np.testing.assert_array_equal(parts["blocks.11"], vit_tiny.embed(frames))


def test_open_clip_last_block_pooled_by_the_tower_is_its_embedding():
    # the clip-head pooling (ln_post, CLS, proj) reproduces open_clip's own forward exactly on
    # the last block: that is how the planner merged it into the final layer
    plan = layer_plan(get_spec("clip-base-32@random"))
    assert plan[-1].name == "transformer.resblocks.11" and plan[-1].final
    assert {t.dim for t in plan} == {512} and len(plan) == 12


def test_simcnn_layers_pool_keypoints_like_its_head():
    from s2r.encoders.backend import get_backend
    from s2r.encoders.simcnn import SimCNN

    spec = get_spec("simcnn-dr0")
    model = SimCNN(dim=spec.dim, input_size=spec.input_size).features.eval()
    assert [s.name for s in get_backend("simcnn").tap_sites(spec, model)] == [
        "conv1", "conv2", "conv3", "conv4"]
    plan = plan_layers(spec, model)
    assert [t.name for t in plan] == ["conv1", "conv2", "conv3", "conv4", "head"]
    conv4 = plan[3]
    x = torch.randn(2, 3, *spec.input_size)
    got = {}
    handle = model[int(conv4.module)].register_forward_hook(lambda m, i, o: got.setdefault("o", o))
    with torch.inference_mode():
        model(x)
        handle.remove()
        from s2r.encoders.taps import POOLS

        keypoints = POOLS["keypoints"](model, got["o"])
        want = model[:13](x)           # the head's own spatial soft-argmax on conv4
    np.testing.assert_allclose(keypoints.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_gradcam_at_an_intermediate_layer(resnet, frames):
    from s2r.saliency import saliency_maps

    view = layer_view(resnet, "layer2")
    assert isinstance(view, LayerView) and view.cam_layer is resnet.model.layer2
    assert view.grid_size == (28, 28)
    assert layer_view(resnet, "layer4") is resnet        # the final layer: the encoder itself
    at2 = saliency_maps(view, frames[:2])
    final = saliency_maps(resnet, frames[:2])
    assert at2.shape == final.shape == (2, 60, 80)
    assert float(at2.max()) == pytest.approx(1.0) and float(at2.min()) == pytest.approx(0.0)
    # a 28x28 map upsampled differs from layer4's 7x7 one
    assert np.abs(at2 - final).mean() > 0.05


def test_int8_encoders_have_no_layers(resnet):
    class Int8:
        spec, device, precision = resnet.spec, resnet.device, "int8"

    with pytest.raises(EncoderError, match="full precision"):
        LayerEmbedder(Int8(), layer_plan(resnet.spec))
