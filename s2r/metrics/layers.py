"""Which layer of each encoder scores best, and is it resolved from the final one?

Score records of several layers of one encoder (:func:`s2r.pipeline.layers.score_layers`:
``layer``, ``layer_index``, ``layer_depth``, ``layer_is_final`` beside every score) are
compared with the pairwise machinery of :mod:`s2r.metrics.pairwise`: every layer of every
encoder is resampled with the same episode-bootstrap replicates, so the difference between an
encoder's best layer and its final layer has a paired interval, and "resolved" means that
interval excludes 0. Pure: records in, rows out.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from s2r.metrics.bootstrap import DEFAULT_CI, percentile_ci
from s2r.metrics.pairwise import better_sign, pairwise_comparisons, record_label

__all__ = ["DEFAULT_LAYER_SCORE", "best_layers", "mark_best_layers", "paired_effect"]

#: The score that picks an encoder's best layer unless told otherwise: the Sim2Real score, the
#: paper's one number (domain invariance and transfer action score together).
DEFAULT_LAYER_SCORE = "sim2real_score"


def _groups(records: Sequence[dict]) -> dict:
    """``{(encoder id, precision): [records]}`` of the records that carry a layer."""
    out: dict = {}
    for r in records:
        if r.get("layer") is None:
            continue
        out.setdefault((str(r["encoder"]["id"]), r.get("precision") or "auto"), []).append(r)
    return out


def best_layers(records: Sequence[dict], key: str = DEFAULT_LAYER_SCORE, *,
                ci: float = DEFAULT_CI) -> list[dict]:
    """Per encoder: its best layer on ``key`` and how it compares with its final layer.

    Parameters
    ----------
    records : sequence of dict
        Layer records of one dataset and parameter set (several encoders may be mixed; records
        without ``layer`` are ignored).
    key : str
        The score that ranks the layers (a catalogue key; "best" follows its direction).
    ci : float
        Level of the difference interval and of ``resolved``.

    Returns
    -------
    list of dict
        One row per encoder (in the order of first appearance) with ``encoder``, ``score``
        (= ``key``), ``best_layer``, ``best_index``, ``best_depth``, ``best_estimate``,
        ``final_layer``, ``final_estimate``, ``best_is_final``, ``difference`` (best - final),
        ``difference_ci_low``, ``difference_ci_high``, ``p_best_beats_final`` and ``resolved``
        (None when the best layer is the final one, or without replicates). Encoders none of
        whose layers has an estimate of ``key`` are left out.
    """
    sign = better_sign(key)
    rows = []
    for (encoder, _), group in _groups(records).items():
        scored = [r for r in group if r.get(key) is not None]
        if not scored:
            continue
        # a tie goes to the final layer (keeping the embedding is the default), then deeper
        best = max(scored, key=lambda r: (sign * float(r[key]), bool(r.get("layer_is_final")),
                                          int(r.get("layer_index", 0))))
        final = next((r for r in group if r.get("layer_is_final")), None)
        row = {"encoder": encoder, "score": key, "best_layer": best["layer"],
               "best_index": best.get("layer_index"), "best_depth": best.get("layer_depth"),
               "best_estimate": float(best[key]),
               "final_layer": None if final is None else final["layer"],
               "final_estimate": None if final is None or final.get(key) is None
               else float(final[key]),
               "best_is_final": final is not None and best is final,
               "difference": None, "difference_ci_low": None, "difference_ci_high": None,
               "p_best_beats_final": None, "resolved": None}
        if final is not None and best is not final and row["final_estimate"] is not None:
            row["difference"] = row["best_estimate"] - row["final_estimate"]
            pair = [r for r in pairwise_comparisons([best, final], [key], ci=ci)
                    if r["encoder_a"] == record_label(best)]
            if pair:
                row.update(difference_ci_low=pair[0]["difference_ci_low"],
                           difference_ci_high=pair[0]["difference_ci_high"],
                           p_best_beats_final=pair[0]["p_a_beats_b"],
                           resolved=pair[0]["resolved"])
        rows.append(row)
    return rows


def mark_best_layers(records: Sequence[dict], key: str = DEFAULT_LAYER_SCORE, *,
                     ci: float = DEFAULT_CI, rows: Optional[list] = None) -> list[dict]:
    """Copies of ``records`` with ``layer_best`` (True on each encoder's best layer on ``key``,
    False on its other layers) and, on the best one, ``layer_best_score`` (= ``key``) and
    ``layer_vs_final``: the :func:`best_layers` comparison with the final layer
    (``difference``, ``difference_ci_low``, ``difference_ci_high``, ``p_best_beats_final``,
    ``resolved``). Records without ``layer`` are returned unchanged."""
    rows = best_layers(records, key, ci=ci) if rows is None else rows
    by_encoder = {r["encoder"]: r for r in rows}
    out = []
    for r in records:
        if r.get("layer") is None:
            out.append(r)
            continue
        row = by_encoder.get(str(r["encoder"]["id"]))
        best = row is not None and row["best_layer"] == r["layer"]
        extra = {"layer_best": bool(best)}
        if best:
            extra["layer_best_score"] = key
            extra["layer_vs_final"] = {k: row[k] for k in (
                "difference", "difference_ci_low", "difference_ci_high", "p_best_beats_final",
                "resolved")}
        out.append({**r, **extra})
    return out


def paired_effect(final: Sequence, chosen: Sequence, *, n_boot: int = 2000, seed: int = 0,
                  ci: float = DEFAULT_CI) -> dict:
    """How much an outcome changed from the final layer to the chosen one, across encoders.

    Parameters
    ----------
    final, chosen : sequence of array-like
        Per encoder, its per-rollout outcome (success 0/1 or progress in [0, 1]) with the final
        layer's policy and with the chosen layer's, rollout ``j`` of both on the same seeded
        layout (so the two arms are paired rollout by rollout).
    n_boot, seed, ci
        Bootstrap replicates, their seed, the interval's level.

    Returns
    -------
    dict
        ``n_encoders``; ``difference``: the mean over encoders of each encoder's mean
        per-rollout difference (chosen - final); ``ci_low``/``ci_high``: its percentile
        interval from a two-level paired bootstrap (encoders resampled, then each encoder's
        rollouts, the same rollouts in both arms; widened to hold the estimate);
        ``p_chosen_better``: the share of replicates above 0 (ties half); ``resolved``: the
        interval excludes 0. ``None`` values without encoders.
    """
    diffs = []
    for f, c in zip(final, chosen):
        f, c = np.asarray(f, dtype=np.float64), np.asarray(c, dtype=np.float64)
        if f.shape != c.shape or f.ndim != 1 or not f.size:
            raise ValueError(f"paired outcomes need equal, non-empty 1-D shapes; got {f.shape} "
                             f"and {c.shape}")
        diffs.append(c - f)
    out = {"n_encoders": len(diffs), "difference": None, "ci_low": None, "ci_high": None,
           "p_chosen_better": None, "resolved": None}
    if not diffs:
        return out
    estimate = float(np.mean([d.mean() for d in diffs]))
    rng = np.random.default_rng(seed)
    # each encoder's rollouts resampled B times, then the encoders resampled per replicate
    means = np.stack([d[rng.integers(0, d.size, (n_boot, d.size))].mean(axis=1)
                      for d in diffs])                                  # (E, B)
    pick = rng.integers(0, len(diffs), (n_boot, len(diffs)))            # (B, E)
    reps = means[pick, np.arange(n_boot)[:, None]].mean(axis=1)
    lo, hi = percentile_ci(reps, ci)
    lo, hi = min(lo, estimate), max(hi, estimate)
    out.update(difference=estimate, ci_low=float(lo), ci_high=float(hi),
               p_chosen_better=float(np.mean(reps > 0) + 0.5 * np.mean(reps == 0)),
               resolved=bool(lo > 0 or hi < 0))
    return out
