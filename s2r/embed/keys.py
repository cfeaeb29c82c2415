"""The cache key of a FrameSet's embeddings, and the preprocessing version that is part of it.

Resize policy (the same for every encoder, versioned by :data:`PREPROCESS_VERSION`)
-------------------------------------------------------------------------------------
Each built encoder's ``preprocess`` takes a batch of ``uint8 (B, H, W, 3)`` frames and

1. moves the uint8 batch to the encoder's device (4x fewer bytes than float) as
   ``(B, 3, H, W)``;
2. resizes the whole batch at once with
   ``torchvision.transforms.v2.functional.resize(..., antialias=True)`` (bilinear) straight to
   the encoder's square input (224x224 for all Table I encoders): the frame is *squashed*,
   never cropped, so nothing at the image border (gripper, parts) is lost;
3. converts to float in [0, 1] and normalises with the encoder's mean and std.

The paper's reference code resized one frame at a time with PIL for some encoders and used
timm's resize-then-centre-crop for others, so encoders saw different pixels; one batched
policy is both uniform and faster (see README, "Embeddings and the disk cache", and
``bench/bench_embed.py``). Bump :data:`PREPROCESS_VERSION` whenever this policy changes so
stale embeddings are never reused.

The key's fields and values are a contract with caches already on disk
(:func:`s2r.cache.key_hash`): change them and every cached embedding becomes a miss.

Looking never fetches
---------------------
Computing a key never resolves or downloads weights: the weights fingerprint of a file that is
not here is :data:`~s2r.encoders.weights.MISSING`, so a look-up (a page opening, ``cache ls``)
simply misses. Such a key is never written: :func:`get_or_compute` fetches the weights first
(as building the encoder would) and makes the key again from the file that now exists.
"""

from __future__ import annotations

from s2r.embed.resolve import precision_of, runtime_of, spec_of, weights_fingerprint
from s2r.encoders import quantize
from s2r.encoders.runtime import runtime_tag
from s2r.encoders.weights import names_missing_weights, require_weights

__all__ = ["PREPROCESS_VERSION", "embeddings_key", "get_or_compute", "key", "key_fields",
           "names_missing_weights"]

#: Version of the resize/normalise policy above; part of every embeddings cache key.
PREPROCESS_VERSION = 1


def key(frameset, encoder_id: str, weights: str, precision: str = "auto",
        runtime: str = "torch") -> dict:
    """The embeddings key from its parts (``precision``, ``runtime``: the effective ones).

    ``runtime`` is in the key only when it is not torch (``"runtime": "onnxruntime/v1"``), so
    every key made before runtimes existed stays the same: ONNX Runtime's embeddings differ
    from torch's in the last bits, and a result of one must not silently stand for the other.
    """
    out = {"kind": "embeddings", "frameset": frameset.fingerprint, "encoder": str(encoder_id),
           "weights": str(weights), "preprocess": PREPROCESS_VERSION}
    tag = quantize.precision_tag(precision)
    if tag is not None:
        out["precision"] = tag
    runtime = runtime_tag(runtime)
    if runtime is not None:
        out["runtime"] = runtime
    return out


def embeddings_key(frameset, encoder, *, precision: str = "auto", device=None,
                   settings=None, runtime=None) -> dict:
    """The cache key of ``frameset`` embedded by ``encoder`` (id, spec or built Encoder).

    Parameters
    ----------
    precision : {"auto", "int8"}
        As for :func:`~s2r.embed.embed_frameset`; only an effective int8 changes the key.
    device : str or torch.device, optional
        Where the encoder would run (decides whether int8 applies); default: a built
        encoder's device, else the best available.
    settings : s2r.settings.Settings, optional
        Handed down: where the weights file is (its fingerprint is part of the key), and
        the runtime when ``runtime`` is None.
    runtime : {"torch", "onnx", "auto"}, optional
        What runs the embedding pass (:func:`~s2r.embed.resolve.runtime_of`); in the key only
        when it is not torch.

    Returns
    -------
    dict
        ``{"kind": "embeddings", "frameset": <fingerprint>, "encoder": <id>, "weights":
        <weights fingerprint>, "preprocess": PREPROCESS_VERSION}``, plus ``"precision":
        "int8/v1"`` for int8 embeddings.
    """
    spec, built = spec_of(encoder, settings)
    effective = precision_of(spec, built, device, precision)
    return key(frameset, spec.id, weights_fingerprint(spec, built, settings), effective,
               runtime_of(built, device, effective, runtime, settings, spec))


def key_fields(cache_key: dict) -> dict:
    """What a cache key says about embeddings: ``{"encoder", "frameset", "precision"}``.

    For an embeddings key, its own fields; for a key built on one (scores and projections
    hold theirs under ``"embeddings"``), those of that key; ``None`` for fields a key does not
    have. ``precision`` is ``"int8"`` for int8 embeddings, else ``"exact"``.
    """
    inner = cache_key.get("embeddings")
    fields = inner if isinstance(inner, dict) else cache_key
    return {"encoder": fields.get("encoder"), "frameset": fields.get("frameset"),
            "precision": "int8" if fields.get("precision") else "exact"}


def get_or_compute(cache, kind: str, make_key, compute, *, encoder, settings=None):
    """``cache.get_or_compute_<kind>(make_key(), compute)``, never under a key that names
    missing weights.

    Parameters
    ----------
    cache : Cache or a read-only view of one
        A view with ``read_only = True`` (the app's look-ups) is asked with the key as it is:
        a key naming missing weights simply misses there, and nothing is fetched.
    kind : {"json", "array"}
    make_key : callable
        ``make_key() -> dict``; called again after the weights were fetched.
    compute : callable
        What computes the value on a miss.
    encoder : str, EncoderSpec or Encoder
        Whose weights the key names.
    settings : s2r.settings.Settings, optional
        Handed down: where the weights are fetched to.

    Raises
    ------
    EncoderError
        The weights are not here and cannot be downloaded (the message says how to get them).
    """
    method = getattr(cache, f"get_or_compute_{kind}")
    cache_key = make_key()
    if names_missing_weights(cache_key) and not getattr(cache, "read_only", False):
        from s2r.encoders.weights import resolve_weights

        spec, _ = spec_of(encoder, settings)
        # downloads when online, as building would; else raises
        resolve_weights(spec, settings=settings)
        cache_key = require_weights(make_key())
    return method(cache_key, compute)
