"""Small encoders of every architecture family for the saliency tests.

Each wraps a small random-weight timm / open_clip model of the family in the real
:class:`s2r.encoders.Encoder` with the registry entry's spec (Grad-CAM layer path, family,
prefix tokens, grid size), at small input sizes so they run in seconds on CPU; EfficientNet-Lite0
is the real one (its weights ship with the package).
"""

from __future__ import annotations

import dataclasses

import torch


FRAME_HW = (48, 64)
"""Height and width of the test frames."""


def wrap_encoder(registry_id, model, input_size, **spec_changes):
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
    return wrap_encoder("resnet18",
                        timm.create_model("resnet18", pretrained=False, num_classes=0), (64, 64))


def _efficientnet():
    from s2r.encoders import build_encoder

    # The one encoder with real ImageNet weights offline (224x224 input).
    return build_encoder("efficientnet-lite0", device="cpu")


def _mobilenet():
    import timm

    torch.manual_seed(0)
    return wrap_encoder("mobilenetv3",
                        timm.create_model("mobilenetv3_small_050", pretrained=False, num_classes=0),
                        (64, 64))


def _vgg():
    from timm.models.vgg import VGG

    torch.manual_seed(0)
    # The registry's VGG layer is features[-1], the last max-pool.
    return wrap_encoder("vgg16", VGG([8, "M", 16, "M", 32, "M", 32, "M", 32, "M"], num_classes=0,
                                     mlp_ratio=0.01), (64, 64))


def _vit():
    from timm.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    # Non-square 3x4 grid and 4 register tokens + CLS: 5 prefix tokens.
    return wrap_encoder("vit", VisionTransformer(img_size=(48, 64), patch_size=16, embed_dim=48,
                                                 depth=2, num_heads=2, num_classes=0,
                                                 reg_tokens=4), (48, 64))


def _swin():
    from timm.models.swin_transformer import SwinTransformer

    torch.manual_seed(0)
    return wrap_encoder("swin", SwinTransformer(img_size=64, patch_size=4, window_size=4,
                                                embed_dim=24, depths=(1, 1), num_heads=(1, 2),
                                                num_classes=0), (64, 64))


def _clip():
    from open_clip.transformer import VisionTransformer

    torch.manual_seed(0)
    return wrap_encoder("clip-base-16",
                        VisionTransformer(image_size=64, patch_size=16, width=48, layers=2,
                                          heads=2, mlp_ratio=2.0, output_dim=32), (64, 64))


# Family name -> builder of a small encoder of that family.
BUILDERS = {"resnet18": _resnet18, "efficientnet": _efficientnet, "mobilenet": _mobilenet,
            "vgg": _vgg, "vit": _vit, "swin": _swin, "clip": _clip}
