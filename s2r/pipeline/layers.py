"""Score records per (encoder, layer): which layer of an encoder transfers best.

:func:`score_layers` scores the layers of one encoder that a request names (``"all"``,
``"last"`` or names of its plan, :mod:`s2r.encoders.taps`): the layers whose records are not
cached are embedded together in one pass (:func:`s2r.embed.layers.embed_layers`), each layer is
scored like an encoder (:func:`s2r.pipeline.scores.scored`, cached under its layer's key), and
every record gets the layer's ``layer`` (name), ``layer_index``, ``layer_depth`` (relative depth
in [0, 1]), ``layer_is_final`` and ``layer_count``; ``embedding_dim`` is the layer's width. The
final layer's record is :func:`~s2r.pipeline.scores.score_encoder`'s (the same key, so the same
record) plus those fields. :func:`score_encoders_layers` does several encoders and marks each
one's best layer (:func:`s2r.metrics.layers.mark_best_layers`).

Entry points: ``settings=None`` reads the settings of the environment here.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

from s2r.cache import as_cache
from s2r.embed.layers import embed_layers, layer_key, plan_of
from s2r.embed.resolve import runtime_of, weights_fingerprint
from s2r.encoders import get_spec
from s2r.encoders.taps import Tap, select_layers
from s2r.errors import EncoderError, MetricError
from s2r.inputs import quoted
from s2r.metrics.dis import check_pca_dim
from s2r.metrics.layers import DEFAULT_LAYER_SCORE, mark_best_layers
from s2r.metrics.scoring import ScoreParams
from s2r.pipeline.scores import (encoder_metadata, for_each_encoder, runtime_fields,
                                 score_encoder, score_key, scored)
from s2r.progress import ProgressCallback
from s2r.settings import current

__all__ = ["layer_fields", "score_layers", "score_encoders_layers", "LayerRequest"]

LayerRequest = Union[str, Sequence[str]]


def layer_fields(tap: Tap, plan: Sequence[Tap]) -> dict:
    """What a record says of its layer: ``layer``, ``layer_index``, ``layer_depth``,
    ``layer_is_final``, ``layer_count``."""
    return {"layer": tap.name, "layer_index": tap.index, "layer_depth": tap.depth,
            "layer_is_final": tap.final, "layer_count": len(plan)}


def score_layers(frameset, encoder_id: str, layers: LayerRequest = "all", *,
                 params: Optional[ScoreParams] = None, cache=None, device=None,
                 precision: str = "auto", progress: Optional[ProgressCallback] = None,
                 settings=None) -> list[dict]:
    """Score records of the layers of ``encoder_id`` named by ``layers``, shallowest first.

    Parameters
    ----------
    frameset : FrameSet
        Both domains required.
    encoder_id : str
    layers : "all", "last" or sequence of str
        See :func:`s2r.encoders.taps.select_layers` (an unknown name: one-line
        :class:`~s2r.errors.EncoderError` listing the encoder's layers).
    params, cache, device, progress, settings
        As for :func:`s2r.pipeline.score_encoder`.
    precision : {"auto", "int8"}
        int8 applies to the final layer alone: asking it of any other is an error.

    Returns
    -------
    list of dict
        One record per layer (:func:`score_encoder`'s fields plus :func:`layer_fields`).
    """
    params = (params or ScoreParams()).validate()
    settings = settings if settings is not None else current()
    cache = as_cache(cache, settings)
    frameset.require_domains()
    spec = get_spec(encoder_id, settings=settings)
    plan = plan_of(spec, cache=cache, settings=settings)
    taps = select_layers(plan, layers, encoder=spec.id)
    inner = [t for t in taps if not t.final]
    if inner and precision != "auto":
        raise EncoderError(f"{spec.id}: layers other than the final one are embedded in "
                           f"precision auto only, not {precision!r}")
    check_pca_dim(params.pca_dim, len(frameset), params.pca_dim)
    for tap in taps:
        if tap.dim is not None and params.pca_dim > tap.dim:
            raise MetricError(f"{spec.id} layer {tap.name!r} is {tap.dim} wide: --pca-dim "
                              f"{params.pca_dim} does not fit it (at most {tap.dim}; keep it "
                              "the same for every layer you compare)")
    meta = encoder_metadata(encoder_id, settings=settings)
    held: dict = {}

    runs = runtime_of(None, device, "auto", None, settings, spec)   # as embed_layers runs

    def key_of(tap: Tap) -> dict:
        emb = layer_key(frameset, spec.id, weights_fingerprint(spec, None, settings), tap, runs)
        return score_key(frameset, spec.id, params, settings=settings, embeddings=emb)

    def embeddings(tap: Tap):
        if tap.name not in held:     # the layers still to score, in one pass
            missing = [t.name for t in inner if t.name not in held
                       and (t is tap or not cache.contains(key_of(t)))]
            held.update(embed_layers(frameset, spec, missing, cache=cache, device=device,
                                     progress=progress, settings=settings))
        return held[tap.name]

    records = []
    for tap in taps:
        if tap.final:
            record = score_encoder(frameset, encoder_id, params=params, cache=cache,
                                   device=device, precision=precision, progress=progress,
                                   settings=settings)
        else:
            body = scored(frameset, spec.id, lambda t=tap: key_of(t),
                          lambda t=tap: embeddings(t), params=params, cache=cache,
                          progress=progress, settings=settings)
            record = {"encoder": dict(meta), "dataset": {"name": frameset.name,
                                                         "fingerprint": frameset.fingerprint},
                      "precision": "auto",
                      **runtime_fields(encoder_id, device=device, settings=settings), **body}
        records.append({**record, **layer_fields(tap, plan)})
    return records


def score_encoders_layers(frameset, encoder_ids: Sequence[str], layers: LayerRequest = "all",
                          *, params: Optional[ScoreParams] = None, cache=None, device=None,
                          precision: str = "auto", best_by: str = DEFAULT_LAYER_SCORE,
                          progress: Optional[ProgressCallback] = None,
                          settings=None) -> list[dict]:
    """:func:`score_layers` for several encoders, each one's best layer on ``best_by`` marked
    (:func:`s2r.metrics.layers.mark_best_layers`: ``layer_best``, and on the best layer
    ``layer_vs_final``, its paired comparison with the final layer).

    ``layers`` names that only some encoders hold: each encoder is scored at the named layers
    it has; an encoder with a single layer (``pixels``, ``state``) at that one; a name no
    encoder holds, or an encoder with several layers and none of the names, is an
    :class:`~s2r.errors.EncoderError` listing the layers. ``progress(done_encoders,
    n_encoders, message)``.
    """
    ids = list(encoder_ids)
    if not ids:
        raise MetricError("no encoders to score: give at least one encoder id")
    params = (params or ScoreParams()).validate()
    settings = settings if settings is not None else current()
    cache = as_cache(cache, settings)
    requests = per_encoder_layers(ids, layers, cache=cache, settings=settings)
    groups = for_each_encoder(ids, progress, lambda encoder_id, inner: score_layers(
        frameset, encoder_id, requests[encoder_id], params=params, cache=cache, device=device,
        precision=precision, progress=inner, settings=settings))
    records = [r for group in groups for r in group]
    return mark_best_layers(records, best_by, ci=params.ci)


def per_encoder_layers(encoder_ids: Sequence[str], layers: LayerRequest, *, cache=None,
                       settings=None) -> dict:
    """``{encoder id: the request for it}``: ``"all"``/``"last"`` as they are; a list of names
    reduced to the names each encoder holds (see :func:`score_encoders_layers`), checked before
    anything is embedded."""
    if isinstance(layers, str):
        return {e: layers for e in encoder_ids}
    names = list(dict.fromkeys(layers))
    plans = {e: plan_of(get_spec(e, settings=settings), cache=cache, settings=settings)
             for e in encoder_ids}
    held = {e: [n for n in names if n == "last" or n in {t.name for t in plan}]
            for e, plan in plans.items()}
    nobody = [n for n in names if not any(n in h for h in held.values())]
    listing = "; ".join(f"{e}: {', '.join(t.name for t in plan)}" for e, plan in plans.items())
    if nobody:
        shown = ", ".join(quoted(n) for n in nobody[:5]) + (
            f" and {len(nobody) - 5} more" if len(nobody) > 5 else "")
        raise EncoderError(f"no encoder has layer {shown}; their layers "
                           f"(or 'last', 'all'): {listing}")
    out = {}
    for e, plan in plans.items():
        if held[e]:
            out[e] = held[e]
        elif len(plan) == 1:
            out[e] = "last"
        else:
            shown = ", ".join(quoted(n) for n in names[:5]) + (
                f" and {len(names) - 5} more" if len(names) > 5 else "")
            raise EncoderError(f"{e} has none of the layers {shown}; its layers: "
                               f"{', '.join(t.name for t in plan)} (or 'last', 'all')")
    return out
