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

from s2r.metrics.bootstrap import DEFAULT_CI
from s2r.metrics.pairwise import better_sign, pairwise_comparisons, record_label

__all__ = ["DEFAULT_LAYER_SCORE", "best_layers", "mark_best_layers"]

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
        best = max(scored, key=lambda r: (sign * float(r[key]), -int(r.get("layer_index", 0))))
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
