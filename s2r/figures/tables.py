"""Score tables and the notes beside them (pure pandas: no Streamlit), for the home page's
compact table and the Scores page's full one.

Every score is shown with its interval (``0.312 [0.210, 0.401]``), next to what it must be
compared to, and encoders that the data cannot tell apart are grouped into tiers
(:mod:`s2r.metrics.pairwise`).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from s2r.errors import MetricError
from s2r.evidence import default_score
from s2r.metrics import catalogue, pairwise

#: What the ``Tier`` column means (its header's help).
TIER_HELP = ("Tier on the ranking score: encoders in one tier cannot be told apart from its "
             "best at 95% (paired episode bootstrap); 1 = the best group")


def tiers_of(records: Sequence[dict], key: Optional[str] = None) -> dict:
    """``label -> tier`` (1 = best group) on ``key`` (default: the score with the strongest
    record in the shipped evidence); empty when it cannot be computed."""
    key = key or default_score("ranking")
    try:
        return pairwise.tier_of(records, key)
    except MetricError:
        return {}


def score_table(df: pd.DataFrame, view: str, tiers: Optional[dict] = None,
                order_by: Optional[str] = None) -> pd.DataFrame:
    """One row per encoder, best ``order_by`` first, each score of the catalogue's ``view``
    (``"summary"``: the home page's compact table, ``"table"``: the Scores page's full one)
    as ``value [low, high]`` text (``n/a`` when not estimable), headed by its short label.

    Parameters
    ----------
    df : DataFrame
        :func:`s2r.figures.scores.scores_frame` of the records.
    view : str
        A view of :mod:`s2r.metrics.catalogue`.
    tiers : dict, optional
        ``encoder id -> tier`` (:func:`tiers_of`): adds a ``Tier`` column.
    order_by : str, optional
        The score the rows are sorted by, in its direction (default: the score with the
        strongest record in the shipped evidence, :func:`s2r.evidence.default_score`); shown
        first when ``view`` holds no column of it.
    """
    key = order_by or default_score("ranking")
    metrics, short = list(catalogue.keys(view)), catalogue.shorts()
    if key not in metrics and key in df:     # the table shows the score it is sorted by
        metrics.insert(0, key)
    table = pd.DataFrame({"Encoder": df["label"], "id": df["encoder"]})
    if tiers:
        table["Tier"] = [tiers.get(e) for e in df["encoder"]]
    for m in metrics:
        if m in df:
            table[short[m]] = df[f"{m}_txt"] if f"{m}_txt" in df else df[m]
    if "action_score_train_null" in df and "action_score_train" in metrics:
        table[short["action_score_train_null"]] = df["action_score_train_null"].map(
            lambda v: f"{v:.3f}")
    if "paired_retrieval_mrr_chance" in df and "paired_retrieval_mrr" in metrics:
        chance = pd.to_numeric(df["paired_retrieval_mrr_chance"], errors="coerce")
        table[short["paired_retrieval_mrr_chance"]] = chance.map(
            lambda v: "n/a" if pd.isna(v) else f"{v:.3f}")
    return table.iloc[best_first(df, key)]


def best_first(df: pd.DataFrame, key: str):
    """Row positions of ``df`` (an ndarray), the best value of ``key`` first (in the
    catalogue's direction; rows without a value last, ties in their order)."""
    if key not in df:
        return np.arange(len(df))
    values = pd.to_numeric(df[key], errors="coerce") * pairwise.better_sign(key)
    return (-values.fillna(-np.inf)).to_numpy().argsort(kind="stable")


def column_help(view: str) -> dict:
    """``column header -> what it is`` for the columns of :func:`score_table` (the scores'
    full titles, and the tier)."""
    short, title = catalogue.shorts(), catalogue.titles()
    return {**{short[m]: title[m] for m in catalogue.keys(view)}, "Tier": TIER_HELP}


def unstable_penalty_note(df: pd.DataFrame) -> Optional[str]:
    """How to read the scores marked :data:`s2r.figures.scores.UNSTABLE_MARK` (the encoders
    whose probe penalty choice flips in many bootstrap replicates), or None when there are
    none."""
    if "penalty_note" not in df:
        return None
    flagged = [f"{label} ({note})" for label, note in zip(df["label"], df["penalty_note"]) if note]
    if not flagged:
        return None
    return ("⚠ Unstable penalty choice: " + "; ".join(flagged) + ". The data cannot tell whether "
            "a fitted probe beats the mean action for these encoders: read the whole interval, "
            "not the value (it may be the floor, skill 0, on other episodes).")


def not_estimable_note(records: Sequence[dict], key: str) -> Optional[str]:
    """One sentence naming the encoders whose ``key`` could not be estimated, and why."""
    reasons = {r["encoder"]["id"]: (r.get("not_estimable") or {}).get(key)
               for r in records if r.get(key) is None}
    if not reasons:
        return None
    why = next((v for v in reasons.values() if v), "no value in the record")
    return (f"Not estimable for {', '.join(sorted(reasons))}: {why}. They are left out of "
            "the chart.")


def tier_sentence(groups: Sequence[Sequence[str]]) -> str:
    """What the tiers of :func:`s2r.metrics.pairwise.tiers` say, in one or two sentences."""
    together = [t for t in groups if len(t) > 1]
    text = (f"{len(groups)} tier(s), best first: an encoder is resolved below every tier "
            "above its own.")
    if together:
        text += " Cannot be told apart: " + "; ".join(", ".join(t) for t in together) + "."
    return text


def cache_rows(entries, fingerprint: str) -> list[dict]:
    """The "What is cached" table: one row per cache entry (kind, encoder, precision,
    dataset fingerprint, whether it belongs to the dataset shown, size, creation time)."""
    from s2r.embed import key_fields

    rows = []
    for e in entries:
        about = key_fields(e.key)
        rows.append({"kind": e.kind, "encoder": about["encoder"] or "",
                     "precision": about["precision"], "dataset": about["frameset"] or "",
                     "this dataset": about["frameset"] == fingerprint,
                     "MB": e.size_bytes / 2**20,
                     "created": pd.Timestamp(e.created, unit="s").strftime("%Y-%m-%d %H:%M")})
    return rows
