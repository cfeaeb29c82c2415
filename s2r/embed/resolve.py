"""What an encoder argument stands for: its spec, the built model, the weights fingerprint,
and the precision its embeddings are computed in on a device.

The embedding functions take an encoder id, an :class:`~s2r.encoders.EncoderSpec` or an
already built encoder. Nothing here builds a model unless asked to (:func:`build`): the
weights fingerprint comes from :func:`s2r.encoders.weights_fingerprint`, so a cache hit never
loads the model.

Where weights files are and the user's encoder config are settings: each function here takes
``settings`` (:class:`s2r.settings.Settings`, handed down by the caller) and passes it on.

Precision: ``"auto"`` runs fp16 on CUDA and fp32 on CPU; ``"int8"`` applies only on CPU and
only to encoders whose registry entry allows it
(:func:`s2r.encoders.quantize.effective_precision`); whether int8 is then *used* depends on
the fidelity check (:mod:`s2r.embed.int8`).
"""

from __future__ import annotations

import s2r.encoders as encoders
from s2r.encoders import quantize
from s2r.errors import EncoderError

__all__ = ["spec_of", "build", "weights_fingerprint", "precision_of", "runtime_of",
           "check_world_of"]


def spec_of(encoder, settings=None):
    """``(spec, built encoder or None)`` for an id, an EncoderSpec or a built Encoder."""
    if hasattr(encoder, "embed") and hasattr(encoder, "spec"):
        return encoder.spec, encoder
    if isinstance(encoder, str):
        return encoders.get_spec(encoder, settings=settings), None
    if hasattr(encoder, "id") and hasattr(encoder, "dim"):
        return encoder, None
    raise EncoderError(f"expected an encoder id, EncoderSpec or built Encoder, got "
                       f"{type(encoder).__name__}: {encoder!r}")


def build(spec, device=None, settings=None, runtime=None, threads=None):
    """The encoder of ``spec`` built on ``device`` (:func:`s2r.encoders.build_encoder`;
    ``runtime``, ``threads``: default the settings')."""
    return encoders.build_encoder(spec, device=device, settings=settings, runtime=runtime,
                                  threads=threads)


def weights_fingerprint(spec, built=None, settings=None) -> str:
    """The weights fingerprint of a built encoder, else computed from ``spec`` without
    building the model or downloading anything (:func:`s2r.encoders.weights_fingerprint`:
    ``"missing"`` when the weights file is not here)."""
    if built is not None:
        return str(built.weights_fingerprint)
    return str(encoders.weights_fingerprint(spec, settings=settings))


def precision_of(spec, built, device, precision: str) -> str:
    """The effective precision: a built int8 encoder's, else what ``precision`` yields for
    ``spec`` on ``device`` (:func:`s2r.encoders.quantize.effective_precision`)."""
    if built is not None and getattr(built, "precision", "auto") == "int8":
        return "int8"
    if quantize.check_precision(precision) == "auto":
        return "auto"
    return quantize.effective_precision(spec, built.device if built is not None else device,
                                        precision)


def runtime_of(built, device, precision: str, runtime=None, settings=None, spec=None) -> str:
    """The runtime embeddings are computed in: ``"onnx"`` when ONNX Runtime is asked for
    (``runtime``, else the settings', else torch) and applies (CPU, precision auto, a model
    worth a graph: :func:`s2r.encoders.runtime.has_graph` of ``spec``; a built encoder's
    :attr:`~s2r.encoders.build.Encoder.runs_graphs`), else ``"torch"``. A model that then
    does not export runs torch under the same key (torch's numbers are the reference)."""
    from s2r.encoders.runtime import check_runtime, has_graph

    if built is not None:
        return "onnx" if getattr(built, "runs_graphs", False) else "torch"
    asked = check_runtime(runtime if runtime is not None else getattr(settings, "runtime", None))
    if asked == "torch" or precision != "auto" or (spec is not None and not has_graph(spec)):
        return "torch"
    where = encoders.pick_device() if device is None else device
    return "onnx" if str(where).split(":")[0] == "cpu" else "torch"


def check_world_of(spec, frameset) -> None:
    """Refuse a world's built-in control on another dataset than its world's, before anything
    is built or trained (:func:`s2r.worlds.check_control_world`); a random-init variant
    (``simcnn-dr0@random``) was never trained and embeds anything."""
    from s2r.worlds import WORLDS, check_control_world

    if getattr(spec, "random_init", False):
        return
    source = getattr(frameset, "source", None)
    world = source.get("kind") if isinstance(source, dict) else None
    dataset = (f"this {WORLDS[world].title} dataset" if world in WORLDS
               else f"the dataset {str(getattr(frameset, 'name', '?'))!r}")
    check_control_world(spec.id, world, dataset)
