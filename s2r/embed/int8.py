"""The int8 option: quantize on frames of the FrameSet, and keep int8 only if it is faithful.

``precision="int8"`` is an opt-in for CPU users with many frames: ResNet/VGG type encoders
are quantized to int8 after calibrating on frames of the same FrameSet
(:mod:`s2r.encoders.quantize`; speed: see README, "Embeddings and the disk cache"). A
fidelity check on the calibration frames (cached as an ``int8-check`` entry) keeps int8 only
when its error is at most :data:`~s2r.encoders.quantize.MAX_INT8_ERROR` of the embeddings'
spread; otherwise the embeddings are computed exactly. :func:`embedding_precision` tells
which one ran.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from s2r.cache import as_cache
from s2r.embed.keys import get_or_compute
from s2r.embed.resolve import build, precision_of, spec_of, weights_fingerprint
from s2r.encoders import quantize
from s2r.progress import ProgressCallback, report

__all__ = ["int8_check", "run_int8_check", "int8_encoder", "embedding_precision"]


def embedding_precision(frameset, encoder, *, precision: str = "auto", device=None,
                        cache=None, settings=None) -> str:
    """The precision ``frameset``'s embeddings by ``encoder`` (id, spec or built Encoder)
    are computed in when ``precision`` is asked for on ``device``: ``"int8"`` or ``"auto"``.

    For an int8 request this is the outcome of the fidelity check (:func:`int8_check`), read
    from ``cache`` (computed when missing, which quantizes the encoder). ``settings``: handed
    down, as for :func:`~s2r.embed.embed_frameset`.
    """
    spec, built = spec_of(encoder, settings)
    if precision_of(spec, built, device, precision) != "int8":
        return "auto"
    if built is not None and getattr(built, "precision", "auto") == "int8":
        return "int8"
    return "int8" if int8_check(frameset, encoder, device=device, cache=cache,
                                settings=settings)["accepted"] else "auto"


def int8_check(frameset, encoder, *, device=None, cache=None, progress=None,
               settings=None) -> dict:
    """Whether int8 embeddings of ``frameset`` by ``encoder`` are faithful enough (cached).

    The encoder is quantized on :func:`~s2r.encoders.quantize.calibration_indices` frames
    and its int8 embeddings of them compared with the fp32 ones.

    Returns
    -------
    dict
        ``{"error": int8_error, "limit": MAX_INT8_ERROR, "accepted": error <= limit,
        "calibration_frames": n}``; the limit is today's, the error the cached one.
    """
    record, _ = run_int8_check(frameset, encoder, device, cache, progress, settings)
    return record


def run_int8_check(frameset, encoder, device, cache, progress, settings=None):
    """(the :func:`int8_check` record, the int8 encoder when it was built on the way, else
    None); ``cache``: a Cache, None for the cache of ``settings``, or False for none."""
    spec, built = spec_of(encoder, settings)
    quantized = None

    def check() -> dict:
        nonlocal quantized
        quantized = int8_encoder(
            frameset, built if built is not None else build(spec, device, settings), progress)
        return {"error": float(quantized.int8_error),
                "calibration_frames": int(_calibration_rows(frameset).size)}

    def make_key() -> dict:
        return {"kind": "int8-check", "frameset": frameset.fingerprint, "encoder": spec.id,
                "weights": weights_fingerprint(spec, built, settings),
                "version": quantize.INT8_VERSION}

    record = get_or_compute(as_cache(cache, settings), "json", make_key, check, encoder=spec,
                            settings=settings)
    limit = quantize.MAX_INT8_ERROR
    record = {**record, "limit": limit, "accepted": record["error"] <= limit}
    return record, quantized


def _calibration_rows(frameset) -> np.ndarray:
    return quantize.calibration_indices(frameset.domain)


def int8_encoder(frameset, encoder, progress: Optional[ProgressCallback]):
    """``encoder`` quantized to int8, calibrated on frames of ``frameset``."""
    rows = _calibration_rows(frameset)
    report(progress, 0, len(frameset),
           f"{encoder.spec.id}: int8 calibration on {rows.size} frames")
    return quantize.quantize_int8(encoder, frameset.read_images(rows))
