"""Ranking confidence: how sure is it that encoder A beats encoder B?

Every encoder scored on one dataset with the same parameters is resampled with the **same**
episode-bootstrap replicates (their ``bootstrap_id`` is equal), so the replicates of two
encoders are paired: replicate ``b`` of both was computed on the same resampled episodes.
From them:

- ``p_a_beats_b``: the share of replicates in which A scores better than B (higher, or lower
  for a score whose catalogue row says lower is better; ties count half);
- the difference ``A - B`` with the percentile interval of the paired differences;
- ``resolved``: the difference's interval excludes 0 (equivalently ``p`` is beyond
  ``(1 -/+ ci) / 2``), i.e. the data tell the two apart;
- :func:`tiers`: encoders grouped from the best down, each tier holding the encoders its
  leader does not resolve from -- read it as "cannot be told apart from the best of the tier".
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import catalogue
from s2r.metrics.bootstrap import DEFAULT_CI, percentile_ci



def record_label(record: dict) -> str:
    """The encoder id of a record, with `` @ LAYER`` for a layer's record
    (:func:`s2r.pipeline.layers.score_layers`) and `` (int8)`` for int8 embeddings."""
    eid = str(record["encoder"]["id"])
    if record.get("layer") is not None:
        eid = f"{eid} @ {record['layer']}"
    return f"{eid} (int8)" if record.get("precision") == "int8" else eid


def win_probability(a, b) -> float:
    """``P(A > B)`` over paired replicates ``a, b (B,)``, ties counted half."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.size == 0:
        raise MetricError(f"paired replicates must have the same, non-zero length; got "
                          f"{a.size} and {b.size}")
    return float(np.mean(a > b) + 0.5 * np.mean(a == b))


def better_sign(key: str) -> float:
    """+1 when a higher ``key`` is better (the catalogue's ``higher_is_better``; keys it does not
    hold count as higher-is-better), -1 when a lower one is (domain separability, domain probe
    accuracy): "A beats B" and "best first" follow it."""
    try:
        return 1.0 if catalogue.get(key).higher_is_better else -1.0
    except KeyError:
        return 1.0


def _comparable(records: Sequence[dict], key: str) -> list:
    """``(label, estimate, replicates)`` of the records that have replicates of ``key``, all
    resampled identically (one ``bootstrap_id``)."""
    rows = [(record_label(r), r.get(key), (r.get("replicates") or {}).get(key),
             r.get("bootstrap_id")) for r in records]
    rows = [row for row in rows if row[1] is not None and row[2]]
    ids = {row[3] for row in rows}
    if len(ids) > 1:
        raise MetricError(
            f"records of {key!r} were resampled with different bootstrap replicates "
            f"({len(ids)} bootstrap ids): compare only encoders scored on the same dataset "
            "with the same parameters (seed, n_boot, n_folds)")
    return [(label, float(est), np.asarray(reps, dtype=np.float64))
            for label, est, reps, _ in rows]


def pairwise_comparisons(records: Sequence[dict], keys: Optional[Sequence[str]] = None, *,
                         ci: float = DEFAULT_CI) -> list[dict]:
    """Every ordered pair of encoders on every score in ``keys``.

    Parameters
    ----------
    records : sequence of dict
        Score records of one dataset and parameter set (:func:`s2r.pipeline.score_encoder`).
    keys : sequence of str, optional
        Scores to compare (default: the catalogue's ranked scores); records without
        replicates of a key (not estimable, or ``n_boot=0``) are left out of that key.
    ci : float
        Level of the difference intervals and of ``resolved``.

    Returns
    -------
    list of dict
        One row per (score, A, B) with ``metric``, ``encoder_a``, ``encoder_b``,
        ``estimate_a``, ``estimate_b``, ``difference``, ``difference_ci_low``,
        ``difference_ci_high``, ``p_a_beats_b`` and ``resolved``.
    """
    out = []
    for key in (catalogue.ranked_keys() if keys is None else keys):
        rows, sign = _comparable(records, key), better_sign(key)
        for la, ea, ra in rows:
            for lb, eb, rb in rows:
                if la == lb:
                    continue
                diff = ea - eb
                lo, hi = percentile_ci(ra - rb, ci)
                lo, hi = min(lo, diff), max(hi, diff)
                out.append({"metric": key, "encoder_a": la, "encoder_b": lb,
                            "estimate_a": ea, "estimate_b": eb, "difference": diff,
                            "difference_ci_low": float(lo), "difference_ci_high": float(hi),
                            "p_a_beats_b": win_probability(sign * ra, sign * rb),
                            "resolved": bool(lo > 0 or hi < 0)})
    return out


def win_matrix(records: Sequence[dict], key: str):
    """``P(row beats column)`` on ``key`` as a square ``pandas.DataFrame`` (NaN diagonal),
    rows and columns ordered by the estimate, best first."""
    import pandas as pd

    sign = better_sign(key)
    rows = sorted(_comparable(records, key), key=lambda row: -sign * row[1])
    labels = [row[0] for row in rows]
    matrix = np.full((len(rows), len(rows)), np.nan)
    for i, (_, _, ra) in enumerate(rows):
        for j, (_, _, rb) in enumerate(rows):
            if i != j:
                matrix[i, j] = win_probability(sign * ra, sign * rb)
    return pd.DataFrame(matrix, index=labels, columns=labels)


def tiers(records: Sequence[dict], key: str, *, ci: float = DEFAULT_CI) -> list[list[str]]:
    """Encoders grouped by what the data resolve on ``key``, best first.

    The best remaining encoder leads a new tier; it takes every remaining encoder it does not
    resolve from (``P(leader beats it) < (1 + ci) / 2``). Encoders in one tier cannot be told
    apart from its leader; an encoder in a lower tier is resolved below every leader above it.

    Returns
    -------
    list of list of str
        Encoder labels per tier, each ordered by the estimate (best first).
    """
    sign = better_sign(key)
    rows = sorted(_comparable(records, key), key=lambda row: -sign * row[1])
    threshold = (1.0 + ci) / 2.0
    out: list[list[str]] = []
    remaining = list(rows)
    while remaining:
        leader = remaining[0]
        tier = [row[0] for row in remaining
                if row is leader or win_probability(sign * leader[2], sign * row[2]) < threshold]
        out.append(tier)
        remaining = [row for row in remaining if row[0] not in tier]
    return out


def tier_of(records: Sequence[dict], key: str, *, ci: float = DEFAULT_CI) -> dict:
    """``label -> tier number`` (1 = best) of :func:`tiers`."""
    return {label: i + 1 for i, tier in enumerate(tiers(records, key, ci=ci)) for label in tier}

