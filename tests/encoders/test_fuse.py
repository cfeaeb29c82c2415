"""BatchNorm folding for inference (s2r.encoders.fuse, Encoder.embed's module)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from timm.layers import BatchNormAct2d

from s2r.encoders import build_encoder
from s2r.encoders.fuse import fold_batchnorm


def _randomise_stats(model: nn.Module, seed: int = 0) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g))
            m.running_var.copy_(torch.rand(n, generator=g) * 3 + 0.1)
            with torch.no_grad():
                m.weight.copy_(torch.randn(n, generator=g))
                m.bias.copy_(torch.randn(n, generator=g))
    return model.eval()


class Plain(nn.Module):
    """conv (no bias) -> BatchNorm2d -> ReLU, conv (bias) -> timm BatchNormAct2d, pooled."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 6, 3, stride=2, groups=2, bias=True)
        self.bn2 = BatchNormAct2d(6, act_layer=nn.SiLU)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        return self.bn2(self.conv2(x)).mean(dim=(2, 3))


class SharedOutput(nn.Module):
    """A convolution whose output also skips its BatchNorm: folding would change the sum."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        y = self.conv(x)
        return (self.bn(y) + y).mean(dim=(2, 3))


class TwoReaders(nn.Module):
    """A convolution read by its BatchNorm and by another layer: not paired."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.side = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        y = self.conv(x)
        return (self.bn(y) + self.side(y)).mean(dim=(2, 3))


X = torch.randn(4, 3, 16, 20, generator=torch.Generator().manual_seed(1))


def _out(model):
    with torch.inference_mode():
        return model(X)


def test_folding_keeps_the_output_and_leaves_the_original_alone():
    model = _randomise_stats(Plain())
    before = _out(model)
    fused, n = fold_batchnorm(model, X[:1])
    assert n == 2 and fused is not model
    torch.testing.assert_close(_out(fused), before, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(_out(model), before, rtol=0, atol=0)   # untouched
    assert isinstance(model.bn1, nn.BatchNorm2d) and isinstance(model.bn2, BatchNormAct2d)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fused.modules())
    assert isinstance(fused.bn2.act, nn.SiLU)          # the activation survives the fold
    assert fused.conv1.bias is not None and model.conv1.bias is None


def test_a_convolution_read_elsewhere_is_not_folded():
    shared = _randomise_stats(SharedOutput())
    assert fold_batchnorm(shared, X[:1]) == (shared, 0)     # the output check refuses it
    two = _randomise_stats(TwoReaders())
    assert fold_batchnorm(two, X[:1]) == (two, 0)           # never paired


def test_training_mode_and_models_without_batchnorm_are_returned_as_they_are():
    model = Plain().train()
    assert fold_batchnorm(model, X[:1]) == (model, 0)
    plain = nn.Sequential(nn.Conv2d(3, 2, 1), nn.Flatten()).eval()
    assert fold_batchnorm(plain, X[:1]) == (plain, 0)


def test_the_encoder_embeds_with_the_folded_copy_and_differentiates_the_original():
    enc = build_encoder("efficientnet-lite0", device="cpu")    # the packaged pretrained CNN
    frames = np.random.default_rng(0).integers(0, 256, (3, 48, 64, 3), dtype=np.uint8)
    embedded = enc.embed(frames)
    with torch.inference_mode():
        exact = enc.forward(enc.preprocess(frames)).numpy()
    assert np.abs(embedded - exact).max() <= 1e-4 * np.abs(exact).max()
    folded = enc.inference_model()
    assert folded is not enc.model
    count = [sum(isinstance(m, nn.BatchNorm2d) for m in net.modules())
             for net in (enc.model, folded)]
    assert count[0] >= 40 and count[1] == 0
    # the copy is a cache, not part of the encoder's state
    assert not any(k.startswith("_inference_model") for k in enc.state_dict())
    x = enc.preprocess(frames).requires_grad_(True)         # saliency's path: the original
    enc.forward(x).sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0


@pytest.mark.parametrize("encoder_id", ["resnet18@random", "mobilenetv3@random"])
def test_random_init_cnns_fold_too(encoder_id):
    enc = build_encoder(encoder_id, device="cpu")
    frames = np.random.default_rng(1).integers(0, 256, (2, 48, 64, 3), dtype=np.uint8)
    embedded = enc.embed(frames)
    with torch.inference_mode():
        exact = enc.forward(enc.preprocess(frames)).numpy()
    assert enc.inference_model() is not enc.model
    np.testing.assert_allclose(embedded, exact, rtol=0, atol=1e-4 * np.abs(exact).max())
