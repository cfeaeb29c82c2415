"""Score records of registry encoders on a FrameSet: embed (cached), score (cached), label.

:func:`score_encoder` embeds a FrameSet with one registry encoder
(:func:`s2r.embed.embed_frameset`, cached), scores the embeddings with the pure
:func:`s2r.metrics.scoring.score_embeddings` (cached under :func:`score_key`) and adds the
encoder's registry metadata, the dataset and the embedding precision;
:func:`score_encoders` does several with progress. What a record holds is described in
:mod:`s2r.metrics.scoring`.

These are entry points: ``settings=None`` reads the settings of the environment here
(:func:`s2r.settings.current`) and hands them down to the embedding step and the encoders.
"""

from __future__ import annotations

from typing import Optional, Sequence

from s2r.cache import as_cache
from s2r.embed import embed_frameset, embedding_precision, embeddings_key
from s2r.embed.keys import get_or_compute
from s2r.embed.resolve import check_world_of
from s2r.encoders import get_spec, status
from s2r.errors import MetricError
from s2r.metrics.dis import check_pca_dim
from s2r.metrics import catalogue
from s2r.metrics.object_focus import FOCUS_KEYS
from s2r.metrics.scoring import SCORE_VERSION, ScoreParams, score_embeddings
from s2r.pairing import pair_frames
from s2r.pipeline.object_focus import object_focus as focus_of
from s2r.progress import ProgressCallback, report
from s2r.settings import current

#: The registry fields a leaderboard row shows, in this order.
METADATA_FIELDS = ("id", "name", "table_number", "architecture", "pretraining_data",
                   "pretraining_group", "params_m", "dim", "random_init")


def encoder_metadata(encoder_id: str, *, settings=None) -> dict:
    """The registry fields a leaderboard row shows (see :mod:`s2r.encoders`) and the
    encoder's weights ``status`` (:func:`s2r.encoders.status`)."""
    settings = settings if settings is not None else current()
    spec = get_spec(encoder_id, settings=settings)
    meta = {name: getattr(spec, name) for name in METADATA_FIELDS}
    meta["random_init"] = bool(meta["random_init"])
    meta["status"] = str(status(spec, settings=settings).state)
    return meta


def runtime_fields(encoder_id: str, *, precision: str = "auto", device=None,
                   settings=None) -> dict:
    """What a record says ran the embedding pass of ``encoder_id``: ``{"runtime":
    "onnxruntime/v1"}`` when its embeddings key names ONNX Runtime
    (:func:`s2r.embed.resolve.runtime_of`, :func:`s2r.encoders.runtime.runtime_tag`), else
    nothing: torch, as in the keys, so every record of torch's embeddings stays as it was
    (a record without ``runtime`` is torch's). A model that fell back to torch after its
    export failed is stored under the ONNX Runtime key, and said so here too."""
    from s2r.embed.resolve import precision_of, runtime_of
    from s2r.encoders.runtime import runtime_tag

    spec = get_spec(encoder_id, settings=settings)
    if not spec.has_image_model:
        return {}
    tag = runtime_tag(runtime_of(None, device, precision_of(spec, None, device, precision),
                                 None, settings, spec))
    return {} if tag is None else {"runtime": tag}


def score_key(frameset, encoder_id: str, params: ScoreParams, *, precision: str = "auto",
              device=None, settings=None, embeddings: Optional[dict] = None) -> dict:
    """Cache key of a score record: the embeddings' key (which carries the precision;
    ``embeddings``: that key when the caller has it, e.g. a layer's,
    :func:`s2r.embed.layers.layer_key`), the parameters, SCORE_VERSION, and the catalogue's own
    score functions when it has any."""
    settings = settings if settings is not None else current()
    if embeddings is None:
        embeddings = embeddings_key(frameset, encoder_id, precision=precision, device=device,
                                    settings=settings)
    key = {"kind": "score", "score_version": SCORE_VERSION, "embeddings": embeddings,
           "params": params.to_dict()}
    computed = catalogue.computed_keys()
    if computed:
        key["computed_scores"] = computed
    return key


def scored(frameset, encoder_id: str, make_key, embed, *, params: ScoreParams, cache,
           progress: Optional[ProgressCallback] = None, settings=None) -> dict:
    """The score record cached under ``make_key()``, else ``embed()`` scored by
    :func:`~s2r.metrics.scoring.score_embeddings` and stored (the step every score record is
    made by: an encoder's, :func:`score_encoder`, and one layer's,
    :func:`s2r.pipeline.layers.score_layers`)."""
    def compute() -> dict:
        return score_embeddings(embed(), frameset.domain, frameset.actions, frameset.episode,
                                state=frameset.state, pairs=pair_frames(frameset),
                                params=params, progress=progress)

    return get_or_compute(cache, "json", make_key, compute, encoder=encoder_id,
                          settings=settings)


def score_encoder(frameset, encoder_id: str, *, params: Optional[ScoreParams] = None,
                  cache=None, device=None, precision: str = "auto",
                  progress: Optional[ProgressCallback] = None, settings=None,
                  object_focus: bool = False) -> dict:
    """Embed ``frameset`` with one encoder (cached) and score it (cached).

    Parameters
    ----------
    frameset : FrameSet
        Both domains required.
    encoder_id : str
        Registry id (``"resnet18"``, ``"pixels"``, ``"vit@random"``...).
    params : ScoreParams, optional
    cache : CacheLike, None or False
        A :class:`~s2r.cache.Cache`, :class:`~s2r.cache.NullCache` or
        :class:`~s2r.cache.ReadOnlyCache`; None = the cache folder of the settings
        (``$S2R_CACHE_DIR`` or ``./cache``); False = ``NullCache()``
        (:func:`s2r.cache.as_cache`).
    device : str, optional
        Where to run the encoder (not part of any key).
    precision : {"auto", "int8"}
        Embedding precision (:func:`s2r.embed.embed_frameset`); int8 applies on CPU to the
        encoders that offer it and is part of the keys.
    progress : ProgressCallback, optional
        Embedding progress (frames), then bootstrap progress (replicates).
    settings : s2r.settings.Settings, optional
        Default: :func:`s2r.settings.current` (this is an entry point); handed down.
    object_focus : bool
        Also compute the object focus (:mod:`s2r.pipeline.object_focus`: Grad-CAM maps of up
        to 32 real frames, a few seconds an encoder on a CPU, cached). Asked for, not by
        default: scoring stays an embedding pass and a bootstrap.

    Returns
    -------
    dict
        :func:`~s2r.metrics.scoring.score_embeddings`'s record plus ``encoder``
        (:func:`encoder_metadata`), ``dataset`` (``name``, ``fingerprint``) and
        ``precision`` (``"auto"`` or ``"int8"``: what the embeddings were computed in) and
        ``runtime`` when ONNX Runtime computed them (:func:`runtime_fields`); the object
        focus when asked for (:func:`with_object_focus`: None, with its reason in
        ``not_estimable``, on a dataset without masks or for an encoder without a Grad-CAM
        layer; not asked for, the record has no object-focus field).
    """
    params = (params or ScoreParams()).validate()
    settings = settings if settings is not None else current()
    cache = as_cache(cache, settings)
    frameset.require_domains()
    check_world_of(get_spec(encoder_id, settings=settings), frameset)   # before any training
    meta = encoder_metadata(encoder_id, settings=settings)
    # Fail before embedding when the PCA dimension cannot fit these frames.
    check_pca_dim(params.pca_dim, len(frameset), int(meta["dim"] or params.pca_dim))

    record = scored(frameset, encoder_id, lambda: score_key(
        frameset, encoder_id, params, precision=precision, device=device, settings=settings),
        lambda: embed_frameset(frameset, encoder_id, cache=cache, device=device,
                               precision=precision, progress=progress, settings=settings),
        params=params, cache=cache, progress=progress, settings=settings)
    if meta["dim"] is None:       # the width of a dataset-dependent "embedding" (state)
        meta["dim"] = record.get("embedding_dim")
    if object_focus:
        record = with_object_focus(record, focus_of(frameset, encoder_id, params, cache=cache,
                                                     device=device, settings=settings))
    return {"encoder": meta, "dataset": {"name": frameset.name,
                                         "fingerprint": frameset.fingerprint},
            "precision": embedding_precision(frameset, encoder_id, precision=precision,
                                             device=device, cache=cache, settings=settings),
            **runtime_fields(encoder_id, precision=precision, device=device,
                             settings=settings),
            **record}


def with_object_focus(record: dict, focus: dict) -> dict:
    """``record`` with the object-focus fields of :func:`s2r.pipeline.object_focus.
    object_focus` (the record's own are None: the scorer never computes them); the reason
    of a missing focus goes to ``not_estimable``."""
    out = {**record, **{k: v for k, v in focus.items() if k != "object_focus_reason"}}
    reason = focus.get("object_focus_reason")
    if reason is not None:
        out["not_estimable"] = {**record.get("not_estimable", {}),
                                **{k: reason for k in FOCUS_KEYS}}
    return out


def score_encoders(frameset, encoder_ids: Sequence[str], *,
                   params: Optional[ScoreParams] = None, cache=None, device=None,
                   precision: str = "auto",
                   progress: Optional[ProgressCallback] = None, settings=None,
                   object_focus: bool = False) -> list[dict]:
    """:func:`score_encoder` for several encoders, in order.

    ``progress(done_encoders, n_encoders, message)``; the message names the encoder and
    its stage (embedding frames, bootstrap replicates).
    """
    ids = list(encoder_ids)
    if not ids:
        raise MetricError("no encoders to score: give at least one encoder id")
    params = (params or ScoreParams()).validate()
    settings = settings if settings is not None else current()
    return for_each_encoder(ids, progress, lambda encoder_id, inner: score_encoder(
        frameset, encoder_id, params=params, cache=cache, device=device, precision=precision,
        progress=inner, settings=settings, object_focus=object_focus))


def for_each_encoder(ids: Sequence[str], progress: Optional[ProgressCallback], run) -> list:
    """``[run(encoder_id, its progress) for each id]``, with ``progress(done_encoders,
    n_encoders, message)``: each message names the encoder and its stage (what ``run``
    reports: embedding frames, bootstrap replicates)."""
    out = []
    for i, encoder_id in enumerate(ids):
        report(progress, i, len(ids), f"{encoder_id}")

        def inner(done, total, message="", _i=i, _id=encoder_id):
            text = message if message.startswith(f"{_id}:") else f"{_id}: {message}"
            report(progress, _i, len(ids), f"{text} {done}/{total}")

        out.append(run(encoder_id, inner))
        report(progress, i + 1, len(ids), f"{encoder_id}: done")
    return out
