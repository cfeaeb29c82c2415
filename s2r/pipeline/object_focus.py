"""The object focus of a registry encoder on a FrameSet with task-object masks (cached).

:func:`object_focus` computes the Grad-CAM maps of the embedding (:mod:`s2r.saliency`,
target ``"embedding"``) of a bounded subset of the **real** frames (:func:`focus_rows`) and
scores their share on the masks with :func:`s2r.metrics.object_focus.focus_record` (floor,
ceiling and the episode-bootstrap interval are described there). The result is cached under
:func:`focus_key`, apart from the score record: a record's key and numbers stay what they
were, and a dataset without masks costs nothing (the answer is None with a reason before any
encoder is built).

Encoders without a Grad-CAM layer (``pixels``; ``state`` has no image model) get None with a
reason: Integrated Gradients would give ``pixels`` a map, but one that only says which pixels
are bright, not where the encoder looks.
"""

from __future__ import annotations

import numpy as np

from s2r.embed.keys import get_or_compute
from s2r.embed.resolve import weights_fingerprint
from s2r.encoders import get_spec
from s2r.metrics.object_focus import focus_record, frame_focus, not_scored

__all__ = ["FOCUS_VERSION", "MAX_FOCUS_FRAMES", "focus_rows", "focus_key", "object_focus",
           "focus_unavailable"]

#: Version of the object-focus procedure; part of its cache key.
FOCUS_VERSION = 1
#: The most real frames whose maps are computed (Grad-CAM costs one forward and backward
#: pass per frame): enough for an interval over the real episodes, cheap next to the embedding.
MAX_FOCUS_FRAMES = 32
#: What the maps explain.
FOCUS_METHOD, FOCUS_TARGET = "gradcam", "embedding"


def focus_rows(domain, max_frames: int = MAX_FOCUS_FRAMES) -> np.ndarray:
    """The FrameSet rows scored: ``max_frames`` real rows evenly spaced over the real frames in
    FrameSet order (every real frame when there are fewer), so every part of every real
    episode is represented alike and the choice is the same for every encoder."""
    real = np.flatnonzero(np.asarray(domain) == "real")
    if real.size <= max_frames:
        return real
    return real[np.unique(np.round(np.linspace(0, real.size - 1, int(max_frames))).astype(int))]


def focus_unavailable(frameset, encoder_id: str, *, settings=None):
    """Why ``encoder_id`` has no object focus on ``frameset`` (None when it can have one)."""
    if not frameset.has_masks:
        return "the dataset has no task-object masks"
    spec = get_spec(encoder_id, settings=settings)
    if not spec.has_image_model or spec.cam_layer is None:
        return f"encoder {encoder_id!r} has no Grad-CAM layer to explain it with"
    return None


def focus_key(frameset, encoder_id: str, params, *, settings=None) -> dict:
    """Cache key of an object focus: the FrameSet, the encoder and its weights, the maps'
    method and target, the subset size and the bootstrap settings."""
    spec = get_spec(encoder_id, settings=settings)
    return {"kind": "object_focus", "version": FOCUS_VERSION,
            "frameset": frameset.fingerprint, "encoder": spec.id,
            "weights": weights_fingerprint(spec, None, settings), "method": FOCUS_METHOD,
            "target": FOCUS_TARGET, "max_frames": MAX_FOCUS_FRAMES,
            "n_boot": int(params.n_boot), "ci": float(params.ci), "seed": int(params.seed)}


def _compute(frameset, encoder_id: str, params, device, settings) -> dict:
    from s2r.encoders import build_encoder
    from s2r.saliency import compute_saliency

    rows = focus_rows(frameset.domain)
    encoder = build_encoder(encoder_id, device=device, settings=settings)
    maps = compute_saliency(encoder, frameset.read_images(rows), method=FOCUS_METHOD,
                            target=FOCUS_TARGET).maps
    focus, area, constant = frame_focus(maps, frameset.read_masks(rows))
    out = focus_record(focus, area, frameset.episode[rows], n_boot=params.n_boot, ci=params.ci,
                       seed=params.seed, constant=constant)
    out["object_focus_reason"] = None
    return out


def object_focus(frameset, encoder_id: str, params, *, cache, device=None,
                 settings=None) -> dict:
    """The object-focus fields of ``encoder_id``'s record on ``frameset``.

    Returns
    -------
    dict
        ``object_focus``, ``object_focus_floor`` (with ``_ci_low`` / ``_ci_high``),
        ``object_focus_frames`` and ``object_focus_reason`` (None when scored; else why not,
        and every number None).

    Raises
    ------
    s2r.cache.NotCached
        From a read-only ``cache`` that does not hold it yet.
    """
    reason = focus_unavailable(frameset, encoder_id, settings=settings)
    if reason is not None:
        return not_scored(reason)
    return get_or_compute(cache, "json",
                          lambda: focus_key(frameset, encoder_id, params, settings=settings),
                          lambda: _compute(frameset, encoder_id, params, device, settings),
                          encoder=encoder_id, settings=settings)
