"""Inference-only BatchNorm folding: a copy of a CNN whose eval-mode BatchNorms are folded into
the convolutions that feed them.

In eval mode a BatchNorm is a per-channel affine map, ``y = (x - mean) / sqrt(var + eps) *
gamma + beta``; when ``x`` is a convolution's output the map folds into that convolution's
weights and bias exactly (algebraically the same network; in float32 the embeddings agree to
~1e-6 of their scale). On CPU the BatchNorm is a memory-bound pass over every activation, so
the folded copy embeds MobileNetV3 1.46x, EfficientNet-B0 1.45x, Lite2 1.37x, Lite0 1.22x,
Lite1 1.21x and ResNet18 1.08x faster (20 frames at the encoders' input size, 2 idle cores,
``bench/bench_fuse.py``).

Only :meth:`s2r.encoders.build.Encoder.embed` (no gradients) uses the copy: saliency hooks
and differentiates the original module, whose layers keep the outputs upstream defines (a
folded convolution's output would be its BatchNorm's). Which convolution feeds which
BatchNorm is observed, not guessed from layer names: one traced forward pass records the
convolution whose output tensor each BatchNorm received. A BatchNorm is folded only when it
always received the output of one and the same convolution that feeds nothing else, and the
folded copy is kept only when its output matches the original's on the traced input
(:data:`FOLD_RTOL`); otherwise the original module is used, unchanged.
"""

from __future__ import annotations

import copy
from typing import Optional

import torch
import torch.nn as nn

__all__ = ["FOLD_RTOL", "fold_batchnorm"]

#: Largest deviation of the folded copy's output from the original's, relative to the
#: output's largest magnitude, for the copy to be used (float32 folding measures ~2e-6).
FOLD_RTOL = 1e-4


class _AfterNorm(nn.Module):
    """What a timm ``BatchNormAct2d`` does after its normalisation: ``self.drop`` then
    ``self.act``, in that order (upstream: timm ``timm/layers/norm_act.py``,
    ``BatchNormAct2d.forward``, timm 1.0)."""

    def __init__(self, norm: nn.Module):
        super().__init__()
        self.drop = norm.drop
        self.act = norm.act

    def forward(self, x):
        return self.act(self.drop(x))


def _replacement(norm: nn.BatchNorm2d) -> Optional[nn.Module]:
    if type(norm) is nn.BatchNorm2d:
        return nn.Identity()
    if hasattr(norm, "drop") and hasattr(norm, "act"):   # timm.layers.BatchNormAct2d
        return _AfterNorm(norm)
    return None                                          # an unknown subclass: left alone


def _trace_pairs(model: nn.Module, example: torch.Tensor) -> dict:
    """``{batchnorm name: convolution name}`` for the BatchNorms fed only by one
    convolution's output, that convolution feeding nothing else, in one forward pass."""
    outputs = {}      # id(tensor) -> (tensor, conv name); tensors kept alive: ids stay unique
    fed = {}          # bn name -> set of conv names (None: not a convolution's output)
    consumers = {}    # conv name -> number of modules that received its output
    hooks = []

    def conv_hook(name):
        def hook(module, inputs, output):
            outputs[id(output)] = (output, name)
        return hook

    def any_hook(name, is_norm):
        def hook(module, inputs):
            for x in inputs:
                seen = outputs.get(id(x))
                conv = seen[1] if seen is not None and seen[0] is x else None
                if conv is not None:
                    consumers[conv] = consumers.get(conv, 0) + 1
                if is_norm:
                    fed.setdefault(name, set()).add(conv)
        return hook

    for name, module in model.named_modules():
        is_norm = isinstance(module, nn.BatchNorm2d)     # timm's BatchNormAct2d has children
        if list(module.children()) and not is_norm:
            continue                                     # leaves only: who receives what
        if isinstance(module, nn.Conv2d):
            hooks.append(module.register_forward_hook(conv_hook(name)))
        hooks.append(module.register_forward_pre_hook(any_hook(name, is_norm)))
    try:
        with torch.inference_mode():
            model(example)
    finally:
        for h in hooks:
            h.remove()
    return {bn: next(iter(convs)) for bn, convs in fed.items()
            if len(convs) == 1 and None not in convs
            and consumers.get(next(iter(convs))) == 1}


def _fold_pair(conv: nn.Conv2d, norm: nn.BatchNorm2d) -> None:
    with torch.no_grad():
        var, mean = norm.running_var.double(), norm.running_mean.double()
        scale = torch.rsqrt(var + norm.eps)
        if norm.affine:
            scale = scale * norm.weight.double()
        bias = conv.bias.double() if conv.bias is not None else torch.zeros_like(mean)
        bias = (bias - mean) * scale + (norm.bias.double() if norm.affine else 0.0)
        weight = conv.weight.double() * scale.reshape(-1, *([1] * (conv.weight.ndim - 1)))
        layout = (torch.channels_last if conv.weight.is_contiguous(
            memory_format=torch.channels_last) and not conv.weight.is_contiguous()
            else torch.contiguous_format)
        dtype = conv.weight.dtype
        conv.weight = nn.Parameter(weight.to(dtype).contiguous(memory_format=layout),
                                   requires_grad=False)
        conv.bias = nn.Parameter(bias.to(dtype), requires_grad=False)


def fold_batchnorm(model: nn.Module, example: torch.Tensor) -> tuple[nn.Module, int]:
    """A copy of ``model`` (eval mode) with its BatchNorms folded into the convolutions that
    feed them, or ``model`` itself when nothing folds or the copy's output differs.

    Parameters
    ----------
    model : torch.nn.Module
        In eval mode (BatchNorms use their running statistics); not modified.
    example : Tensor of shape (B, 3, h, w)
        A normalised input batch (B = 1 suffices): traced to pair the layers and to check the
        copy.

    Returns
    -------
    (module, n_folded)
        ``n_folded`` = 0 means ``module is model``.
    """
    if model.training or not any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
        return model, 0
    fused = copy.deepcopy(model)
    pairs = _trace_pairs(fused, example)
    modules = dict(fused.named_modules())
    folded = 0
    for norm_name, conv_name in pairs.items():
        norm, conv = modules[norm_name], modules[conv_name]
        new = _replacement(norm)
        if (new is None or norm.running_mean is None or norm.running_var is None
                or conv.out_channels != norm.num_features):
            continue
        _fold_pair(conv, norm)
        parent, _, attr = norm_name.rpartition(".")
        setattr(modules[parent] if parent else fused, attr, new)
        folded += 1
    if not folded:
        return model, 0
    with torch.inference_mode():
        want, got = model(example).float(), fused(example).float()
    scale = float(want.abs().max()) or 1.0
    if want.shape != got.shape or float((want - got).abs().max()) > FOLD_RTOL * scale:
        return model, 0
    return fused, folded
