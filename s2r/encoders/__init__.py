"""Encoders: the registry of the paper's 23 encoders (+ controls and user encoders), their
weights, and one frozen :class:`Encoder` protocol to embed frames.

>>> from s2r.encoders import list_encoders, status, build_encoder
>>> [s.id for s in list_encoders("r3m-*")]
['r3m-resnet18', 'r3m-resnet34', 'r3m-resnet50']
>>> enc = build_encoder("resnet18@random", device="cpu")        # doctest: +SKIP
>>> enc.embed(frames_uint8).shape                                # doctest: +SKIP
(8, 512)

The registry and weights modules import no torch; :func:`build_encoder`, :class:`Encoder`
and :func:`pick_device` load ``s2r.encoders.build`` (and torch) on first use.
"""

from s2r.encoders.registry import (  # noqa: F401
    BUILTIN_SPECS,
    REGISTRY,
    CheckpointSpec,
    EncoderRegistry,
    EncoderSpec,
    get_spec,
    list_encoders,
    random_variant,
    register_encoder,
)
from s2r.encoders.weights import (  # noqa: F401
    EncoderStatus,
    read_checkpoint,
    status,
    weights_dir,
    weights_fingerprint,
)

_LAZY = {
    "build_encoder": "s2r.encoders.build",
    "Encoder": "s2r.encoders.build",
    "pick_device": "s2r.encoders.build",
    "spec_from_timm": "s2r.encoders.custom",
    "spec_from_open_clip": "s2r.encoders.custom",
    "spec_from_checkpoint": "s2r.encoders.custom",
    "load_encoder_config": "s2r.encoders.custom",
}

__all__ = [
    "BUILTIN_SPECS", "REGISTRY", "CheckpointSpec", "EncoderRegistry", "EncoderSpec",
    "EncoderStatus", "get_spec", "list_encoders", "random_variant", "register_encoder",
    "read_checkpoint", "status", "weights_dir", "weights_fingerprint", *_LAZY,
]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 's2r.encoders' has no attribute {name!r}")
