"""Encoders: the registry of the paper's 23 encoders (+ controls and user encoders), their
weights, and one frozen :class:`Encoder` protocol to embed frames.

>>> from s2r.encoders import list_encoders, status, build_encoder
>>> [s.id for s in list_encoders("r3m-*")]
['r3m-resnet18', 'r3m-resnet34', 'r3m-resnet50']
>>> enc = build_encoder("resnet18@random", device="cpu")        # doctest: +SKIP
>>> enc.embed(frames_uint8).shape                                # doctest: +SKIP
(8, 512)

Layers (each imports only the ones above it)::

    backend (the Backend protocol + table), suggest, safe_load, locate   leaves
    spec (EncoderSpec), checkpoints (key mappings), fields, factory
    backends/ (timm, open_clip, checkpoint, packaged, pixels, state)     one module each
    builtins (the built-in entries), config (user references, config file)
    registry (look-up), weights (status, fingerprints)
    build (Encoder, build_encoder; torch), quantize (int8)

The backends are registered first (``s2r.encoders.backends``): registry entries are checked
against them. Nothing here imports torch; :func:`build_encoder`, :class:`Encoder` and
:func:`pick_device` load ``s2r.encoders.build`` (and torch) on first use.
"""

from s2r.encoders import backends
from s2r.encoders.backends.checkpoint import spec_from_checkpoint
from s2r.encoders.backends.open_clip import spec_from_open_clip
from s2r.encoders.backends.timm import spec_from_timm
from s2r.encoders.builtins import BUILTIN_SPECS
from s2r.encoders.config import load_encoder_config
from s2r.encoders.registry import (
    REGISTRY,
    EncoderRegistry,
    get_spec,
    list_encoders,
    random_variant,
    register_encoder,
)
from s2r.encoders.spec import CheckpointSpec, EncoderSpec
from s2r.encoders.weights import (
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
}

__all__ = [
    "BUILTIN_SPECS", "REGISTRY", "CheckpointSpec", "EncoderRegistry", "EncoderSpec",
    "EncoderStatus", "get_spec", "list_encoders", "random_variant", "register_encoder",
    "read_checkpoint", "status", "weights_dir", "weights_fingerprint", "spec_from_timm",
    "spec_from_open_clip", "spec_from_checkpoint", "load_encoder_config", *_LAZY,
]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 's2r.encoders' has no attribute {name!r}")
