"""Glue of the Validation page: the report as tables and charts (pure: data in, chart out).

The report is :func:`s2r.pipeline.validation.validate`'s dict: ``results`` (one row per
encoder and gap), ``correlations`` (one per score and gap, plus ``"all"``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import altair as alt
import pandas as pd

#: Scores on the scatter's x axis, with their axis titles.
SCORE_TITLES = {
    "transfer_score_skill": "Transfer skill (sim probe on real)",
    "sim2real_score": "Sim2Real score",
    "action_score_heldout_skill": "Held-out skill",
    "dis": "Domain invariance (DIS)",
    "paired_retrieval_mrr": "Paired retrieval (MRR)",
    "transfer_score": "Transfer AS (raw)",
    "action_score_heldout": "Held-out AS (raw)",
}


def results_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (encoder, gap) with the success rates, their intervals and every score."""
    df = pd.DataFrame(report.get("results", []))
    if len(df):
        df["gap"] = df["gap"].astype(float)
        df["gap_label"] = [f"gap {g:g}" for g in df["gap"]]
    return df


def success_table(df: pd.DataFrame) -> pd.DataFrame:
    """Encoders x gaps: real success with its Wilson interval, and the sim success."""
    if not len(df):
        return pd.DataFrame()
    cells = df.assign(text=[f"{r:.2f} [{lo:.2f}, {hi:.2f}]" for r, lo, hi in
                            zip(df["success_real"], df["success_real_ci_low"],
                                df["success_real_ci_high"])])
    table = cells.pivot(index="encoder", columns="gap_label", values="text")
    sim = df.groupby("encoder")["success_sim"].first().map(lambda v: f"{v:.2f}")
    table.insert(0, "sim (in-domain)", sim)
    order = df.groupby("encoder")["success_real"].mean().sort_values(ascending=False).index
    return table.loc[order]


def correlation_table(report: Mapping[str, Any], gap: Any = "all") -> pd.DataFrame:
    """Spearman and Kendall of every score with real success at ``gap``, best first."""
    rows = []
    for c in report.get("correlations", []):
        if str(c["gap"]) != str(gap):
            continue
        if c["spearman"] is None:
            rows.append({"score": c["score"], "Spearman": None, "95% interval": "undefined",
                         "Kendall": None, "n": c["n"]})
            continue
        rows.append({"score": c["score"], "Spearman": round(c["spearman"], 2),
                     "95% interval": f"[{c['spearman_ci_low']:+.2f}, "
                                     f"{c['spearman_ci_high']:+.2f}]",
                     "Kendall": round(c["kendall"], 2), "n": c["n"]})
    df = pd.DataFrame(rows)
    if len(df):
        df = df.sort_values("Spearman", ascending=False, na_position="last")
    return df.reset_index(drop=True)


def success_scatter(df: pd.DataFrame, score: str, *,
                    correlation: Optional[Mapping[str, Any]] = None) -> alt.LayerChart:
    """Real success (y, Wilson interval) against ``score`` (x, bootstrap interval): one point
    per encoder and gap, one colour per gap."""
    title = SCORE_TITLES.get(score, score)
    data = df[pd.to_numeric(df.get(score), errors="coerce").notna()] if score in df else df[:0]
    base = alt.Chart(data)
    x = alt.X(f"{score}:Q", title=title, scale=alt.Scale(zero=False, nice=True, padding=20))
    y = alt.Y("success_real:Q", title="Real success rate (closed loop)",
              scale=alt.Scale(domain=[0, 1]))
    color = alt.Color("gap_label:N", title="Sim-to-real gap",
                      scale=alt.Scale(scheme="viridis"))
    tooltip = [alt.Tooltip("encoder:N", title="Encoder"), alt.Tooltip("gap:Q", title="Gap"),
               alt.Tooltip("success_real:Q", title="Real success", format=".2f"),
               alt.Tooltip("success_sim:Q", title="Sim success", format=".2f"),
               alt.Tooltip(f"{score}:Q", title=title, format=".3f")]
    layers = [base.mark_rule(opacity=0.5).encode(x=x, y="success_real_ci_low:Q",
                                                 y2="success_real_ci_high:Q", color=color)]
    if f"{score}_ci_low" in data:
        layers.append(base.mark_rule(opacity=0.5).encode(
            x=f"{score}_ci_low:Q", x2=f"{score}_ci_high:Q", y="success_real:Q", color=color))
    layers.append(base.mark_point(filled=True, size=90, opacity=0.9).encode(
        x=x, y=y, color=color, shape=alt.Shape("gap_label:N", title="Sim-to-real gap"),
        tooltip=tooltip))
    layers.append(base.mark_text(align="left", dx=8, dy=-6, fontSize=10).encode(
        x=x, y="success_real:Q", text="encoder:N", color=color))
    subtitle = "One point per encoder and gap; bars: 95% intervals (Wilson on success)."
    if correlation and correlation.get("spearman") is not None:
        subtitle += (f" Spearman over all gaps {correlation['spearman']:+.2f} "
                     f"[{correlation['spearman_ci_low']:+.2f}, "
                     f"{correlation['spearman_ci_high']:+.2f}].")
    return alt.layer(*layers).properties(
        title=alt.TitleParams(f"Real success vs {title}", subtitle=subtitle, anchor="start"),
        height=420).configure_legend(orient="bottom", direction="horizontal",
                                     titleOrient="left")


def best_image_encoder(df: pd.DataFrame) -> Optional[str]:
    """The encoder with an image model and the highest mean real success (None if none)."""
    from s2r.encoders import get_spec

    if not len(df):
        return None
    means = df.groupby("encoder")["success_real"].mean().sort_values(ascending=False)
    return next((e for e in means.index if get_spec(e).has_image_model), None)


def action_frame(actions, names) -> pd.DataFrame:
    """The recorded rollout's actions as a table (one row per step)."""
    df = pd.DataFrame([list(a) for a in actions], columns=list(names))
    df.index.name = "step"
    return df


# ----------------------------------------------------------------------------- page state
ENCODERS = "validation.encoders"
GAPS = "validation.gaps"
ROLLOUTS = "validation.rollouts"
DEMOS = "validation.demos"
POLICY = "validation.policy"
RUN = "validation.run"
SCORE = "validation.score"
CORR_GAP = "validation.corr_gap"
VIEW_ENCODER = "validation.view_encoder"
VIEW_GAP = "validation.view_gap"
VIEW_STEP = "validation.view_step"
VIEW_SALIENCY = "validation.view_saliency"
GAP_CHOICES = [0.0, 0.25, 0.5, 0.75, 1.0]


def offline_encoders() -> list:
    """Encoders that run here without downloading weights (ready ones and the random-init
    controls of every architecture)."""
    from s2r.encoders import list_encoders, status

    ready = [s.id for s in list_encoders() if str(status(s.id).state) == "ready"]
    randoms = [s.id for s in list_encoders("*@random", include_random=True)]
    return ready + [r for r in randoms if r not in ready]


def _record(cache, encoder_id: str, params, gap: float) -> dict:
    from s2r.pipeline.rollouts import rollout_key

    return cache.get_json(rollout_key(encoder_id, params.validate(), "real", gap), {})


def recorded_actions(cache, encoder_id: str, params, gap: float) -> list:
    """The recorded real-look rollout's actions (one 10-vector per step)."""
    return _record(cache, encoder_id, params, gap).get("record", {}).get("actions", [])


def rollout_saliency(encoder_id: str, params, gap: float, step: int, cache, *,
                     method: str) -> dict:
    """Saliency of the recorded real-look frame ``step`` and of the same state rendered in
    the sim look: overlays and their agreement (the Saliency page's measures)."""
    import numpy as np

    from s2r.pipeline.rollouts import recorded_rollout
    from s2r.policy.rollout import render_rollout_frame
    from s2r.saliency import overlay, saliency_maps, sim_real_agreement
    from ui import loaders

    params = params.validate()
    record = _record(cache, encoder_id, params, gap)["record"]
    real = np.asarray(recorded_rollout(encoder_id, params, "real", gap, cache)[step])
    sim = render_rollout_frame(record["states"][step], k=record["index"], look="sim",
                               seed=params.seed, height=params.height, width=params.width,
                               step=step)
    maps = saliency_maps(loaders.get_encoder(encoder_id), np.stack([sim, real]), method=method)
    return {"sim_overlay": overlay(sim, maps[0]), "real_overlay": overlay(real, maps[1]),
            "agreement": sim_real_agreement(maps[0], maps[1]), "method": method}

