"""One record per (encoder, dataset): every score with its floor, ceiling and interval.

:func:`score_embeddings` is pure: embeddings and labels in, one record out. Embedding a
FrameSet with a registry encoder and caching its record is the pipeline's job
(:func:`s2r.pipeline.score_encoder`).

What a record holds (the rows of :mod:`s2r.metrics.catalogue`; each with an interval has
``_ci_low``/``_ci_high``):

- ``dis`` (eq. 1, unchanged) and ``dis_top_component_share`` (share of the squared centroid
  distance on the first PCA component: near 1 means DIS measures one direction only);
- ``action_score_train``: the paper's training AS, with one fixed penalty
  (:data:`~s2r.metrics.PAPER_TRAIN_ALPHA`) for every encoder; beside it
  ``action_score_train_null``, its mean over permutations of the actions (closed form): the
  training AS cannot rank encoders whose null is near 1 (dimension close to the frames);
- ``action_score_heldout`` and ``transfer_score`` (sim -> real; ``transfer_score_reverse``
  real -> sim), each with ``_floor`` (no-information predictor on the same split),
  ``_ceiling`` (the same probe on the robot state; None without state) and ``_skill``
  (:mod:`s2r.metrics.baselines`);
- ``domain_probe_accuracy`` (held-out balanced accuracy, saturates at 1) and
  ``domain_separability`` (held-out ``d'`` of the probe's logits, does not saturate);
- ``paired_retrieval_top1`` / ``paired_retrieval_mrr`` (:mod:`s2r.metrics.retrieval`; with
  ``paired_retrieval_chance`` / ``paired_retrieval_mrr_chance``; None without pairs);
- ``sim2real_score`` = ``sqrt(clip(transfer_score_skill, 0, 1) * clip(dis, 0, 1))``.

With ``ridge_alpha="auto"`` each held-out and transfer probe (and its state ceiling) chooses
its penalty by episode cross-validation inside its training set
(:func:`s2r.metrics.penalty.choose_penalty`), and every bootstrap replicate chooses it
again from its own resampled cross-validation errors, so the intervals include the choice;
``ridge_alpha_choice`` says how often each value was chosen.

Scores that cannot be estimated (too few episodes, :data:`~s2r.metrics.baselines.MIN_EPISODES`)
are None and ``not_estimable`` says why. Intervals are BCa intervals of the episode bootstrap
(:mod:`s2r.metrics.bootstrap`); the replicates of the ranked scores are kept
(``replicates``, with ``bootstrap_id``) so encoders scored on the same data can be compared
pairwise (:mod:`s2r.metrics.pairwise`).
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional

import numpy as np

from s2r.errors import MetricError
from s2r.metrics.baselines import estimability, sim2real_score, skill, skill_reference
from s2r.metrics.bootstrap import bca_interval, group_bootstrap_weights, jackknife_weights
from s2r.metrics.dis import bootstrap_dis, check_pca_dim, dis_from_centroids, fit_dis_space
from s2r.metrics import catalogue
from s2r.metrics.params import ScoreParams, parse_null, shuffle_actions
from s2r.metrics.probe_data import ProbeData
from s2r.metrics.retrieval import chance_levels, partner_ranks, query_frames
from s2r.checks import check_embeddings
from s2r.pairing import label_partners
from s2r.progress import ProgressCallback, report

#: Version of the scoring procedure; part of every score cache key. Bump it whenever a change
#: here or in a module this one uses (dis, the probes, probe_data, bootstrap, ...) changes any
#: number of a record.
SCORE_VERSION = 4

#: The action scores that get a floor, a ceiling and a skill.
ACTION_SCORES = ("action_score_heldout", "transfer_score", "transfer_score_reverse")



def _action_errors(data: ProbeData, alpha) -> dict:
    """Test errors of the held-out and both transfer probes (:data:`ACTION_SCORES` order)."""
    return {"action_score_heldout": data.heldout(alpha),
            "transfer_score": data.transfer(alpha, "sim"),
            "transfer_score_reverse": data.transfer(alpha, "real")}


class _Scorer:
    """All scores of one embedding matrix as functions of the group bootstrap weights."""

    def __init__(self, Z, domain, actions, episode, state, pairs, params: ScoreParams,
                 memory_mb: float):
        self.params = p = params
        self.frames = (Z, domain, actions)      # for the catalogue's own score functions
        self.data = data = ProbeData(Z, domain, actions, episode, n_folds=p.n_folds,
                                     seed=p.seed, memory_mb=memory_mb)
        f = data.folds
        self.is_real = f.group_domain == "real"
        self.warnings = list(f.warnings)
        # DIS: PCA + min-max fitted once on all frames; a replicate only moves the centroids.
        self.space = fit_dis_space(data.Z, pca_dim=p.pca_dim, random_state=p.seed)
        P = self.space.transform(data.Z)
        self.p_sum = np.zeros((f.n_groups, P.shape[1]))
        np.add.at(self.p_sum, f.group, P)
        self.n = np.bincount(f.group, minlength=f.n_groups).astype(float)
        self.warnings += list(self.space.warnings)
        # Paper's training AS: one fixed penalty; its permutation null in closed form.
        self.train = data.train(p.train_alpha)
        self.train_null = data.train_null(p.train_alpha)
        # Held-out and transfer scores with floors (and state ceilings), when estimable.
        self.reason = estimability(
            f.unit, {d: int((f.group_domain == d).sum()) for d in ("sim", "real")},
            {d: int(self.n[f.group_domain == d].min()) for d in ("sim", "real")})
        # Each action score as per-group test errors of probes fitted once (the bootstrap
        # resamples the test episodes), the same for the state ceiling.
        self.errors, self.ceiling = {}, None
        if self.reason is None:
            self.errors = _action_errors(data, p.ridge_alpha)
            if state is not None:
                ceiling = ProbeData(state, domain, actions, episode, folds=f)
                self.ceiling = _action_errors(ceiling, p.ridge_alpha)
        self.constant = sorted({j for e in [self.train, *self.errors.values()]
                                for j in e.constant_action_dims})
        # Domain probe: out-of-fold logits per group.
        self.evidence, warns = data.domain_evidence(p.domain_C)
        self.warnings += warns
        # Paired retrieval: per sim group, hits and reciprocal ranks of the partners.
        self.retrieval = None
        if pairs is not None:
            sim = np.flatnonzero(data.domain == "sim")
            pos = query_frames(sim)
            ranks = partner_ranks(data.Z, sim[pos], np.asarray(pairs)[pos],
                                  np.flatnonzero(data.domain == "real"))
            group = f.group[ranks.queries]
            self.retrieval = {
                "count": np.bincount(group, minlength=f.n_groups).astype(float),
                "top1": np.bincount(group, weights=ranks.top1, minlength=f.n_groups),
                "mrr": np.bincount(group, weights=ranks.reciprocal_rank, minlength=f.n_groups),
                "chance": chance_levels(ranks.n_gallery), "n_queries": int(ranks.queries.size)}
        self.reference = {}
        point = self._action_scores(np.ones(f.n_groups))
        for k in self.errors:
            self.reference[k] = skill_reference(point[f"{k}_floor"], point.get(f"{k}_ceiling"))
            if self.ceiling is not None and self.reference[k] == "perfect":
                self.warnings.append(
                    f"{k}: the state ceiling ({point[f'{k}_ceiling']:.3f}) is not above the "
                    f"floor ({point[f'{k}_floor']:.3f}), so its skill is measured against a "
                    "perfect prediction instead")

    def _action_scores(self, w: np.ndarray) -> dict:
        """Held-out and transfer scores with floors and ceilings of a replicate (``w (G,)``),
        or of many (``w (B, G)``: arrays); each probe's penalty chosen again on the
        replicate's cross-validation errors."""
        out = {}
        for k, errors in self.errors.items():
            out[k], out[f"{k}_floor"] = errors.score(w), errors.floor(w)
            if self.ceiling is not None:
                out[f"{k}_ceiling"] = self.ceiling[k].score(w)
        return out

    def scores(self, w: np.ndarray, action: Optional[dict] = None) -> dict:
        """Every score of the replicate ``w (G,)``; ``action``: its :meth:`_action_scores`
        when already computed (for many replicates at once)."""
        p = self.params
        sim_w, real_w = w * ~self.is_real, w * self.is_real
        sim_c = sim_w @ self.p_sum / (sim_w @ self.n)
        real_c = real_w @ self.p_sum / (real_w @ self.n)
        diff = real_c - sim_c
        sq = float(diff @ diff)
        out = {"dis": dis_from_centroids(sim_c, real_c, p.distance), "_dis_diff": diff,
               "dis_top_component_share": float(diff[0] ** 2 / sq) if sq > 0 else np.nan,
               "action_score_train": self.train.score(w),
               "domain_probe_accuracy": self.evidence.balanced_accuracy(w),
               "domain_separability": self.evidence.separability(w)}
        out.update(self._action_scores(w) if action is None else action)
        for k, ref in self.reference.items():
            out[f"{k}_skill"] = skill(out[k], out[f"{k}_floor"], out.get(f"{k}_ceiling"), ref)
        if "transfer_score_skill" in out:
            out["sim2real_score"] = sim2real_score(out["transfer_score_skill"], out["dis"])
        if self.retrieval is not None:
            r = self.retrieval
            count = float(w @ r["count"])
            out["paired_retrieval_top1"] = float(w @ r["top1"]) / count
            out["paired_retrieval_mrr"] = float(w @ r["mrr"]) / count
        for row in catalogue.SCORES:
            if row.compute is not None:
                out[row.key] = float(row.compute(*self.frames, w[self.data.folds.group]))
        return out


def _alpha_json(alpha: float):
    """A penalty for a JSON record: the number, or ``"inf"`` for the mean-action probe."""
    return float(alpha) if np.isfinite(alpha) else "inf"


#: A penalty choice is flagged unstable when more than this share of the bootstrap replicates
#: (of each outer fold's choice, for the held-out score) flips between the mean action and a
#: fitted probe against the choice on all data.
UNSTABLE_CHOICE_SHARE = 1.0 / 3.0


def _choice_record(errors, weights: Optional[np.ndarray]) -> dict:
    """How stable a score's penalty choice is: the choice on all data, the share of bootstrap
    replicates choosing each grid value, and whether the mean action / fitted probe decision
    flips in more than :data:`UNSTABLE_CHOICE_SHARE` of them."""
    grid = errors.paths[0].alphas
    point = errors.choices()
    rec = {"alpha": [_alpha_json(grid[i]) for i in point], "grid": [_alpha_json(a) for a in grid],
           "share": None, "mean_action_share": None, "flip_share": None, "unstable": False}
    if weights is not None and len(weights) and len(grid) > 1:
        reps = errors.choices(np.asarray(weights, dtype=np.float64))        # (B, P)
        mean_action = ~np.isfinite(np.asarray(grid))
        flip = float(np.mean(mean_action[reps] != mean_action[point][None, :]))
        rec.update(share=[float(np.mean(reps == i)) for i in range(len(grid))],
                   mean_action_share=float(np.mean(mean_action[reps])), flip_share=flip,
                   unstable=bool(flip > UNSTABLE_CHOICE_SHARE))
    return rec


def _bootstrap_id(weights: np.ndarray, strata: np.ndarray) -> str:
    """Digest of the replicate weights: records with equal ids were resampled identically."""
    h = hashlib.sha1(np.ascontiguousarray(weights, dtype=np.int64).tobytes())
    h.update(("|".join(map(str, strata))).encode())
    return h.hexdigest()[:16]


def _interval(key: str, reps: np.ndarray, estimate: float, jack: np.ndarray, ci: float,
              n_groups: int):
    """Expanded BCa interval from the finite replicates, clipped to the score's catalogue range
    (BCa intervals respect monotone transformations, so clipping after is clipping the
    statistic); ``(None, None)`` when too few replicates are finite."""
    ok = np.isfinite(reps)
    if not np.isfinite(estimate) or ok.sum() < max(2, reps.size // 2):
        return None, None
    lo, hi = bca_interval(reps[ok], estimate, jack[np.isfinite(jack)], ci, n_groups=n_groups)
    low, high = catalogue.score_range(key)
    return float(min(max(lo, low), high)), float(min(max(hi, low), high))


def _replicates(scorer: "_Scorer", weights: np.ndarray, keys, progress, offset: int) -> dict:
    """Every score of every replicate (rows of ``weights``): ``key -> (B,)``."""
    out = {k: np.empty(len(weights)) for k in keys}
    diffs = []
    W = np.asarray(weights, dtype=np.float64)
    action = scorer._action_scores(W) if len(W) else {}
    for b, w in enumerate(W):
        values = scorer.scores(w, {k: float(v[b]) for k, v in action.items()})
        diffs.append(values["_dis_diff"])
        for k in keys:
            out[k][b] = values[k]
        if progress is not None:
            report(progress, offset + b + 1, offset + len(weights), "bootstrap")
    out["_dis_diff"] = np.asarray(diffs)
    return out


def score_embeddings(Z, domain, actions, episode, *, state=None, pairs=None,
                     params: Optional[ScoreParams] = None, memory_mb: float = 2048.0,
                     progress: Optional[ProgressCallback] = None) -> dict:
    """Every s2r score of one embedding matrix, with floors, ceilings and intervals.

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
    state : array-like of shape (N, S), optional
        Robot state: the ceiling of the action scores is the same probe fitted on it.
    pairs : array-like of shape (n_sim,), int, optional
        Row of the real partner of each sim frame (sim frames in order), for paired retrieval;
        default: the nearest real frame by standardised ``state`` when it is given
        (:func:`s2r.pairing.label_partners`), else no retrieval scores.
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
        ``<key>``, ``<key>_ci_low``, ``<key>_ci_high`` for every catalogue score with an interval
        (None when not estimable, not applicable, or ``n_boot == 0`` for intervals), the
        catalogue's reference values, ``not_estimable`` (key -> reason), ``skill_reference`` (per
        action score: ``"ceiling"`` or ``"perfect"``), ``params``, ``n_frames`` /
        ``n_episodes`` (per domain), ``heldout_unit``, ``n_folds``, ``ridge_alpha_used``,
        ``ridge_alpha_choice`` (per action score: ``alpha`` chosen on all data per probe,
        ``grid``, ``share`` of bootstrap replicates choosing each grid value,
        ``mean_action_share``, ``flip_share``, ``unstable``),
        ``dis_explained_variance``, ``constant_action_dims``, ``paired_retrieval_queries``,
        ``replicates`` (key -> bootstrap values of the ranked scores), ``bootstrap_id``,
        ``score_version`` and ``warnings``.

    Raises
    ------
    MetricError
        Bad inputs (one domain, NaN embeddings, pca_dim too large, constant embeddings or
        actions, a bad null, ...).
    """
    params = (params or ScoreParams()).validate()
    checked = check_embeddings(Z, domain, actions, episode)
    if checked.episode is None:
        raise MetricError("episode ids are required")
    check_pca_dim(params.pca_dim, *checked.Z.shape)
    act = checked.actions
    null_seed = parse_null(params.null)
    if null_seed is not None:
        act = shuffle_actions(act, checked.domain, null_seed)
    if state is not None:
        state = check_embeddings(state, checked.domain).Z
        if len(state) != len(checked.Z):
            raise MetricError(f"state must have one row per frame ({len(checked.Z)}), got "
                              f"{len(state)}")
        if pairs is None:
            pairs = label_partners(state, checked.domain)
    n_boot = params.n_boot
    report(progress, 0, n_boot + 1, "fitting probes")
    scorer = _Scorer(checked.Z, checked.domain, act, checked.episode, state, pairs, params,
                     memory_mb)
    f = scorer.data.folds
    point = scorer.scores(np.ones(f.n_groups))
    score_keys = catalogue.interval_keys()
    keys = [k for k in score_keys if k in point]
    intervals = {k: (None, None) for k in keys}
    replicates, boot_id, weights = {}, None, None
    if n_boot > 0:
        weights = group_bootstrap_weights(f.group_domain, n_boot, seed=params.seed)
        boot_id = _bootstrap_id(weights, f.group_domain)
        reps = _replicates(scorer, weights, keys, progress, 1)
        # DIS: remove the resampling inflation of the squared distance (dis.bootstrap_dis);
        # the Sim2Real score follows from the corrected replicates.
        reps["dis"] = bootstrap_dis(reps["_dis_diff"], params.distance)
        if "sim2real_score" in reps:
            reps["sim2real_score"] = np.array([sim2real_score(t, d) for t, d in
                                               zip(reps["transfer_score_skill"], reps["dis"])])
        jack = _replicates(scorer, jackknife_weights(f.group_domain), keys, None, 0)
        m = min(int((f.group_domain == d).sum()) for d in ("sim", "real"))
        intervals = {k: _interval(k, reps[k], point[k], jack[k], params.ci, m) for k in keys}
        replicates = {k: [float(f"{v:.6g}") for v in reps[k]]
                      for k in catalogue.ranked_keys() if k in reps}
    record: dict[str, Any] = {}
    for k in score_keys:
        value = point.get(k)
        record[k] = float(value) if value is not None and np.isfinite(value) else None
        record[f"{k}_ci_low"], record[f"{k}_ci_high"] = intervals.get(k, (None, None))
    chance = scorer.retrieval["chance"] if scorer.retrieval else (None, None)
    record.update({"action_score_train_null": float(scorer.train_null),
                   "paired_retrieval_chance": chance[0],
                   "paired_retrieval_mrr_chance": chance[1]})
    not_estimable = {}
    if scorer.reason is not None:
        for k in ACTION_SCORES:
            for suffix in ("", "_floor", "_ceiling", "_skill"):
                not_estimable[k + suffix] = scorer.reason
        not_estimable["sim2real_score"] = scorer.reason
    warnings = list(scorer.warnings)
    if scorer.constant:
        warnings.append(f"action dims {scorer.constant} are constant in (some) training frames "
                        "and left out of the action scores there")
    if scorer.reason is not None:
        warnings.append(f"action scores not estimable: {scorer.reason}")
    dom = checked.domain
    record.update({
        "not_estimable": not_estimable,
        "skill_reference": dict(scorer.reference),
        "params": params.to_dict(),
        "n_frames": {d: int((dom == d).sum()) for d in ("sim", "real")},
        "n_episodes": {d: int(np.unique(checked.episode[dom == d]).size)
                       for d in ("sim", "real")},
        "heldout_unit": dict(f.unit),
        "n_folds": int(f.n_folds),
        "ridge_alpha_used": {
            "action_score_train": float(params.train_alpha),
            **{k: ([_alpha_json(a) for a in e.alphas] if k == "action_score_heldout"
                   else _alpha_json(e.alphas[0])) for k, e in scorer.errors.items()}},
        "ridge_alpha_choice": {k: _choice_record(e, weights) for k, e in scorer.errors.items()},
        "embedding_dim": int(checked.Z.shape[1]),
        "dis_explained_variance": float(scorer.space.explained_variance_ratio.sum()),
        "constant_action_dims": scorer.constant,
        "paired_retrieval_queries": scorer.retrieval["n_queries"] if scorer.retrieval else 0,
        "has_ceiling": scorer.ceiling is not None,
        "replicates": replicates,
        "bootstrap_id": boot_id,
        "score_version": SCORE_VERSION,
        "warnings": warnings,
    })
    return record
