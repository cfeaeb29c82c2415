"""One record per (encoder, dataset): every score with its episode-bootstrap interval.

:func:`score_embeddings` is pure (embeddings in, dict out); :func:`score_encoder` embeds a
FrameSet with a registry encoder (cached), scores it (cached too) and adds the encoder's
metadata; :func:`score_encoders` does several with progress.

The Sim2Real score
------------------
The paper's future work asks for "a Sim2Real score calculated through a cost function
factoring in centroid distance and action probe performance". s2r uses::

    sim2real_score = sqrt( clip(transfer_score, 0, 1) * clip(DIS, 0, 1) )

- ``transfer_score`` (sim -> real AS) replaces the paper's training AS: it is the score of a
  linear policy head trained on sim frames and run on real frames, so it is high only when the
  embedding carries the action information **and** that information reads the same way in both
  domains. Below 0 (worse than predicting the sim mean action) counts as 0.
- ``DIS`` (eq. 1) is the paper's label-free domain-invariance axis; it can be negative for
  large gaps (see :mod:`s2r.metrics.dis`), which counts as 0.
- The geometric mean is in [0, 1], higher is better, is 1 only when both are 1 and 0 when
  either is 0: an encoder cannot buy a good score with invariance alone (a constant embedding
  has DIS = 1 but transfer 0) or with in-domain action information that does not transfer.
- The domain probe accuracy is reported but left out: on real sim/real data a linear probe on
  a 512-2048-D embedding separates the domains almost perfectly for every encoder (the paper's
  t-SNE plots "rarely exhibited any overlap"), so a term built from it would be ~0 for all of
  them and rank nothing.

Its interval comes from the same bootstrap replicates as its two inputs (paired resampling).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Optional, Sequence, Union

import numpy as np

from s2r.errors import MetricError
from s2r.metrics._validation import _check_choice, _check_embeddings, _check_number
from s2r.metrics.bootstrap import (DEFAULT_CI, DEFAULT_N_BOOT, centred_percentile_ci,
                                   group_bootstrap_weights)
from s2r.metrics.dis import DEFAULT_PCA_DIM, DISTANCES, check_pca_dim, dis_from_centroids, \
    fit_dis_space
from s2r.metrics.probes import (DEFAULT_DOMAIN_C, DEFAULT_N_FOLDS, DEFAULT_RIDGE_ALPHA,
                                ProbeData, balanced_accuracy_from_counts)
from s2r.progress import ProgressCallback, report

#: Version of the scoring procedure; part of every score cache key. Bump it whenever a change
#: here or in dis/probes/bootstrap changes any number of a record.
SCORE_VERSION = 2

#: The scores of a record, in display order. Each has ``<name>_ci_low`` and ``<name>_ci_high``.
SCORE_KEYS = ("dis", "action_score_train", "action_score_heldout", "transfer_score",
              "transfer_score_reverse", "domain_probe_accuracy", "sim2real_score")


@dataclass(frozen=True)
class ScoreParams:
    """Every setting a score depends on (recorded in each record and in its cache key).

    Attributes
    ----------
    pca_dim : int, default 16
        DIS common PCA dimension ``k``; keep it fixed across encoders.
    distance : {"squared", "euclidean"}, default "squared"
        DIS distance (eq. 1 squares it; the text says Euclidean).
    ridge_alpha : float or "auto", default "auto"
        Ridge penalty of the action probes (per frame, on z-scored features). ``"auto"``
        picks the best of :data:`s2r.metrics.probes.ALPHA_GRID` (1e-4 ... 1e3) for each
        encoder by the episode-grouped held-out score, then uses it for every probe and
        bootstrap replicate (recorded as ``ridge_alpha_used``).
    seed : int, default 0
        Seed of the PCA solver, the fold assignment and the bootstrap.
    n_boot : int, default 200
        Bootstrap replicates (0 = no intervals: the ``_ci_`` fields are None).
    ci : float, default 0.95
        Coverage of the percentile intervals.
    n_folds : int, default 5
        Episode folds of the held-out scores.
    domain_C : float, default 1.0
        Inverse L2 penalty of the domain probe.
    """

    pca_dim: int = DEFAULT_PCA_DIM
    distance: str = "squared"
    ridge_alpha: Union[float, str] = DEFAULT_RIDGE_ALPHA
    seed: int = 0
    n_boot: int = DEFAULT_N_BOOT
    ci: float = DEFAULT_CI
    n_folds: int = DEFAULT_N_FOLDS
    domain_C: float = DEFAULT_DOMAIN_C

    def validate(self) -> "ScoreParams":
        """Raise :class:`MetricError` naming the first bad field; return ``self``."""
        _check_number("pca_dim", self.pca_dim, low=1, integer=True)
        _check_choice("distance", self.distance, DISTANCES)
        if isinstance(self.ridge_alpha, str):
            if self.ridge_alpha != "auto":
                raise MetricError(f"ridge_alpha must be a number >= 0 or 'auto', got "
                                  f"{self.ridge_alpha!r}")
        else:
            _check_number("ridge_alpha", self.ridge_alpha, low=0)
        _check_number("seed", self.seed, low=0, integer=True)
        _check_number("n_boot", self.n_boot, low=0, integer=True)
        _check_number("ci", self.ci, low=0, high=1, low_open=True)
        if not self.ci < 1:
            raise MetricError(f"ci must be < 1, got {self.ci!r}")
        _check_number("n_folds", self.n_folds, low=2, integer=True)
        _check_number("domain_C", self.domain_C, low=0, low_open=True)
        return self

    def to_dict(self) -> dict:
        """Plain JSON dict (ints and floats as such)."""
        out = asdict(self)
        if not isinstance(out["ridge_alpha"], str):
            out["ridge_alpha"] = float(out["ridge_alpha"])
        out["ci"] = float(out["ci"])
        out["domain_C"] = float(out["domain_C"])
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "ScoreParams":
        """Inverse of :meth:`to_dict` (unknown keys raise :class:`MetricError`)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise MetricError(f"unknown score parameter(s) {unknown}; known: {sorted(names)}")
        return cls(**data).validate()


def sim2real_score(transfer: float, dis: float) -> float:
    """``sqrt(clip(transfer, 0, 1) * clip(dis, 0, 1))`` (see the module docstring).

    Examples
    --------
    >>> sim2real_score(0.81, 1.0)
    0.9
    >>> sim2real_score(-0.2, 0.9)
    0.0
    """
    t = min(max(float(transfer), 0.0), 1.0)
    d = min(max(float(dis), 0.0), 1.0)
    return math.sqrt(t * d)


# Values each score can take (intervals are clipped to them after re-centring).
_RANGES = {"domain_probe_accuracy": (0.0, 1.0), "sim2real_score": (0.0, 1.0)}


def _clip(interval: tuple, key: str) -> tuple:
    low, high = _RANGES.get(key, (-math.inf, 1.0))
    return tuple(min(max(v, low), high) for v in interval)


class _Scorer:
    """All scores of one embedding matrix as functions of the group bootstrap weights."""

    def __init__(self, Z, domain, actions, episode, params: ScoreParams, memory_mb: float):
        self.params = p = params
        self.data = ProbeData(Z, domain, actions, episode, n_folds=p.n_folds, seed=p.seed,
                              memory_mb=memory_mb)
        f = self.data.folds
        self.is_real = f.group_domain == "real"
        self.alpha = self.data.resolve_alpha(p.ridge_alpha)
        # DIS: PCA + min-max fitted once on all frames; a replicate only moves the centroids.
        self.space = fit_dis_space(self.data.Z, pca_dim=p.pca_dim, random_state=p.seed)
        P = self.space.transform(self.data.Z)
        self.p_sum = np.zeros((f.n_groups, P.shape[1]))
        np.add.at(self.p_sum, f.group, P)
        self.n = np.bincount(f.group, minlength=f.n_groups).astype(float)
        # Held-out AS and domain probe: out-of-fold errors per group, computed once.
        self.sse, self.cnt, self.fold_models = self.data.heldout_errors(self.alpha)
        pred, self.domain_warnings = self.data.domain_predictions(p.domain_C)
        self.correct, self.frames = self.data.domain_counts(pred)

    def scores(self, w: np.ndarray) -> dict:
        p, a = self.params, self.alpha
        sim_c = (w * ~self.is_real) @ self.p_sum / ((w * ~self.is_real) @ self.n)
        real_c = (w * self.is_real) @ self.p_sum / ((w * self.is_real) @ self.n)
        dis = dis_from_centroids(sim_c, real_c, p.distance)
        moments = self.data.domain_moments(w)
        train, _ = self.data.train_score(a, moments=moments)
        transfer = self.data.transfer_score(a, source="sim", moments=moments)
        rs, rr = balanced_accuracy_from_counts(self.correct, self.frames, self.is_real, w)
        return {
            "dis": dis,
            "action_score_train": train,
            "action_score_heldout": 1.0 - float(w @ self.sse) / float(w @ self.cnt),
            "transfer_score": transfer,
            "transfer_score_reverse": self.data.transfer_score(a, source="real",
                                                               moments=moments),
            "domain_probe_accuracy": 0.5 * (rs + rr),
            "sim2real_score": sim2real_score(transfer, dis),
        }


def score_embeddings(Z, domain, actions, episode, *, params: Optional[ScoreParams] = None,
                     memory_mb: float = 2048.0,
                     progress: Optional[ProgressCallback] = None) -> dict:
    """Every s2r score of one embedding matrix, with episode-bootstrap intervals.

    Parameters
    ----------
    Z : array-like of shape (N, D)
        Embeddings of sim and real frames.
    domain : array-like of shape (N,)
        ``"sim"`` / ``"real"``.
    actions : array-like of shape (N, A)
        Action labels.
    episode : array-like of shape (N,), int
        Episode ids, unique across domains.
    params : ScoreParams, optional
        Settings (defaults: ``ScoreParams()``).
    memory_mb : float
        Memory budget for the per-episode statistics that make bootstrap replicates cheap
        (affects speed only).
    progress : ProgressCallback, optional
        ``progress(done, total, message)`` over the bootstrap replicates.

    Returns
    -------
    dict
        ``<score>``, ``<score>_ci_low``, ``<score>_ci_high`` for every name in
        :data:`SCORE_KEYS` (intervals None when ``n_boot == 0``), ``params`` (the settings
        as a dict), ``n_frames`` / ``n_episodes`` (per domain), ``heldout_unit`` (per domain:
        ``"episode"`` or ``"time-block"``), ``n_folds`` (folds actually used),
        ``ridge_alpha_used`` (the penalty, after ``"auto"`` selection),
        ``dis_explained_variance``, ``constant_action_dims``, ``score_version`` and
        ``warnings`` (list of the documented fallbacks that applied; empty normally).

    Raises
    ------
    MetricError
        Bad inputs (one domain, NaN embeddings, pca_dim too large, constant embeddings or
        actions, ...).
    """
    params = (params or ScoreParams()).validate()
    checked = _check_embeddings(Z, domain, actions, episode)
    if checked.episode is None:
        raise MetricError("episode ids are required")
    check_pca_dim(params.pca_dim, *checked.Z.shape)
    report(progress, 0, params.n_boot + 1, "fitting probes")
    scorer = _Scorer(checked.Z, checked.domain, checked.actions, checked.episode, params,
                     memory_mb)
    f = scorer.data.folds
    point = scorer.scores(np.ones(f.n_groups))
    record: dict[str, Any] = {}
    intervals = {k: (None, None) for k in SCORE_KEYS}
    if params.n_boot > 0:
        weights = group_bootstrap_weights(f.group_domain, params.n_boot, seed=params.seed)
        reps = {k: np.empty(params.n_boot) for k in SCORE_KEYS}
        for b, w in enumerate(weights):
            for k, v in scorer.scores(w.astype(np.float64)).items():
                reps[k][b] = v
            report(progress, b + 2, params.n_boot + 1, "bootstrap")
        intervals = {k: _clip(centred_percentile_ci(reps[k], point[k], params.ci), k)
                     for k in SCORE_KEYS}
    for k in SCORE_KEYS:
        record[k] = float(point[k])
        record[f"{k}_ci_low"], record[f"{k}_ci_high"] = intervals[k]
    constant = sorted({int(j) for m in scorer.fold_models for j in np.flatnonzero(~m.scored)})
    warnings = list(f.warnings) + list(scorer.space.warnings) + list(scorer.domain_warnings)
    if constant:
        warnings.append(f"action dims {constant} are constant in (some) training frames and "
                        "left out of the action scores there")
    dom = checked.domain
    record.update({
        "params": params.to_dict(),
        "n_frames": {d: int((dom == d).sum()) for d in ("sim", "real")},
        "n_episodes": {d: int(np.unique(checked.episode[dom == d]).size)
                       for d in ("sim", "real")},
        "heldout_unit": dict(f.unit),
        "n_folds": int(f.n_folds),
        "ridge_alpha_used": float(scorer.alpha),
        "dis_explained_variance": float(scorer.space.explained_variance_ratio.sum()),
        "constant_action_dims": constant,
        "score_version": SCORE_VERSION,
        "warnings": warnings,
    })
    return record


# --------------------------------------------------------------------------- encoders
def encoder_metadata(encoder_id: str) -> dict:
    """The registry fields a leaderboard row shows (see :mod:`s2r.encoders`)."""
    from s2r.encoders import get_spec

    spec = get_spec(encoder_id)
    meta = {name: getattr(spec, name, None) for name in (
        "id", "name", "table_number", "architecture", "pretraining_data", "pretraining_group",
        "params_m", "dim", "random_init")}
    meta["random_init"] = bool(meta["random_init"])
    meta["status"] = _encoder_status(spec.id)
    return meta


def _encoder_status(encoder_id: str) -> Optional[str]:
    import s2r.encoders as encoders

    status = getattr(encoders, "status", None)
    if status is None:
        return None
    return str(getattr(status(encoder_id), "state", status(encoder_id)))


def score_key(frameset, encoder_id: str, params: ScoreParams, *, precision: str = "auto",
              device=None) -> dict:
    """Cache key of a score record: the embeddings' key (which carries the precision), the
    parameters, SCORE_VERSION."""
    from s2r.embed import embeddings_key

    return {"kind": "score", "score_version": SCORE_VERSION,
            "embeddings": embeddings_key(frameset, encoder_id, precision=precision,
                                         device=device),
            "params": params.to_dict()}


def score_encoder(frameset, encoder_id: str, *, params: Optional[ScoreParams] = None,
                  cache=None, device=None, precision: str = "auto",
                  progress: Optional[ProgressCallback] = None) -> dict:
    """Embed ``frameset`` with one encoder (cached) and score it (cached).

    Parameters
    ----------
    frameset : FrameSet
        Both domains required.
    encoder_id : str
        Registry id (``"resnet18"``, ``"pixels"``, ``"vit@random"``...).
    params : ScoreParams, optional
    cache : Cache, False or None
        None = ``Cache()`` (``$S2R_CACHE_DIR`` or ``./cache``); False = no caching.
    device : str, optional
        Where to run the encoder (not part of any key).
    precision : {"auto", "int8"}
        Embedding precision (:func:`s2r.embed.embed_frameset`); int8 applies on CPU to the
        encoders that offer it and is part of the keys.
    progress : ProgressCallback, optional
        Embedding progress (frames), then bootstrap progress (replicates).

    Returns
    -------
    dict
        :func:`score_embeddings`'s record plus ``encoder`` (:func:`encoder_metadata`),
        ``dataset`` (``name``, ``fingerprint``) and ``precision`` (``"auto"`` or ``"int8"``:
        what the embeddings were computed in).
    """
    from s2r.embed import embed_frameset

    params = (params or ScoreParams()).validate()
    frameset.require_domains()
    meta = encoder_metadata(encoder_id)
    # Fail before embedding when the PCA dimension cannot fit these frames.
    check_pca_dim(params.pca_dim, len(frameset), int(meta["dim"] or params.pca_dim))

    def compute() -> dict:
        Z = embed_frameset(frameset, encoder_id, cache=cache, device=device,
                           precision=precision, progress=progress)
        return score_embeddings(Z, frameset.domain, frameset.actions, frameset.episode,
                                params=params, progress=progress)

    if cache is False:
        record = compute()
    else:
        if cache is None:
            from s2r.cache import Cache

            cache = Cache()
        key = score_key(frameset, encoder_id, params, precision=precision, device=device)
        record = cache.get_or_compute_json(key, compute)
    from s2r.embed import embedding_precision

    return {"encoder": meta, "dataset": {"name": frameset.name,
                                         "fingerprint": frameset.fingerprint},
            "precision": embedding_precision(frameset, encoder_id, precision=precision,
                                             device=device, cache=cache),
            **record}


def score_encoders(frameset, encoder_ids: Sequence[str], *,
                   params: Optional[ScoreParams] = None, cache=None, device=None,
                   precision: str = "auto",
                   progress: Optional[ProgressCallback] = None) -> list[dict]:
    """:func:`score_encoder` for several encoders, in order.

    ``progress(done_encoders, n_encoders, message)``; the message names the encoder and
    its stage (embedding frames, bootstrap replicates).
    """
    ids = list(encoder_ids)
    if not ids:
        raise MetricError("no encoders to score: give at least one encoder id")
    params = (params or ScoreParams()).validate()
    records = []
    for i, encoder_id in enumerate(ids):
        report(progress, i, len(ids), f"{encoder_id}")

        def inner(done, total, message="", _i=i, _id=encoder_id):
            text = message if message.startswith(f"{_id}:") else f"{_id}: {message}"
            report(progress, _i, len(ids), f"{text} {done}/{total}")

        records.append(score_encoder(frameset, encoder_id, params=params, cache=cache,
                                     device=device, precision=precision, progress=inner))
        report(progress, i + 1, len(ids), f"{encoder_id}: done")
    return records
