"""Scores: which encoder to pick (on the score the evidence trusts most); the paper's Figure 5
(DIS vs action skill) with floors, ceilings and intervals; which differences are resolved; click
an encoder to look inside it."""

from __future__ import annotations

import streamlit as st

from s2r.errors import S2RError
from s2r.metrics import catalogue
from s2r.figures import axes
from s2r.figures import scores as charts
from s2r.figures import tables as score_tables
from s2r.figures.projection import projection_frame, projection_scatter
from ui import compute, figures, focus, guards, live_tsne, page_url, pages, tables, verdict, widgets
from ui import state as S
from ui.events import selected_values
from ui.loaders import data, saliency

frameset, records = guards.results_page(
    "Scores",
    "Each point is an encoder: x = domain invariance score (DIS, eq. 1 of the paper), y = how "
    "well a linear probe reads the robot's action from the embedding, as a skill: the share "
    "of the gap between the no-information floor (0) and the robot-state ceiling (1) that the "
    "probe recovers. By default y is the action score with the strongest record in the "
    "evidence (closed-loop validation); the paper's Figure 5 is y = transfer skill (a probe "
    "trained on sim frames, scored on real ones). Click a point to see where that encoder "
    "looks, and its t-SNE.",
    "the score scatter and table")
state = st.session_state
rank_score = verdict.pick_box(records, frameset,
                              [e for e in records if not widgets.has_image_model(e)])


def _scores_frame(records: dict):
    """One row per encoder (every score, its interval and its tier on the ranking score) and
    the tiers."""
    frame = charts.scores_frame(list(records.values()))
    groups = score_tables.tiers_of(list(records.values()), rank_score)
    frame["tier"] = [groups.get(e) for e in frame["encoder"]]
    return frame, groups


df, tiers = _scores_frame(records)

# ----------------------------------------------------------------------------- controls
state.setdefault(S.SCORES_Y, verdict.default_score("y", frameset))
state.setdefault(S.SCORES_RANK_METRIC, rank_score)
state.setdefault(S.SCORES_ERRORBARS, True)
state.setdefault(S.SCORES_LABELS, True)
y_choices = catalogue.shorts("y")
page_url.sync([page_url.Option("y", S.SCORES_Y, {c: c for c in y_choices}),
               page_url.bool_option("intervals", S.SCORES_ERRORBARS),
               page_url.bool_option("labels", S.SCORES_LABELS),
               page_url.Option("rank", S.SCORES_RANK_METRIC,
                               {k: k for k in catalogue.ranked_keys()})])
c1, c2, c3 = st.columns([4, 1, 1])
y = c1.radio("Action score (y axis)", list(y_choices), key=S.SCORES_Y, horizontal=True,
             format_func=y_choices.get,
             help="Skills put every encoder between the floor (a probe that predicts the mean "
                  "action: 0) and the ceiling (the same probe on the robot state: 1). Raw "
                  "scores are drawn with that floor and ceiling. Transfer: fitted on sim, "
                  "scored on real. Held-out: fitted on some episodes, scored on others. "
                  "Training: the paper's protocol, with each encoder's shuffled-action null.")
error_bars = c2.checkbox("95% intervals", key=S.SCORES_ERRORBARS,
                         help="Episode-bootstrap (BCa) intervals of both scores")
labels = c3.checkbox("Labels", key=S.SCORES_LABELS)

# ----------------------------------------------------------------------------- chart
chart = charts.score_scatter(df, y=y, error_bars=error_bars, labels=labels,
                             selected=state.get(S.SELECTION_ENCODER),
                             records=verdict.records(["dis", y], frameset))
event = st.altair_chart(figures.themed(chart), on_select="rerun", key=S.SCORES_CHART,
                        selection_mode=charts.PICK, width="stretch")
figures.chart_download(chart, f"s2r_scores_{y}", S.SCORES_FIGURE)
st.caption("Colour: architecture (CNN blue, Transformer orange, as in the paper; grey raw "
           "pixels, green the robot-state reference). Shape: pretraining data (circle = "
           "manipulation, square = general, triangle = none: random init, pixels, state). Size: "
           "parameters. Hover a point for every metric with its 95% interval and its tier. "
           + axes.range_note(["dis", y]))
st.caption(verdict.record_caption(["dis", y], frameset))
note = score_tables.not_estimable_note(list(records.values()), y)
if note:
    st.warning(note)
picked = selected_values(event, charts.PICK, "encoder")
if picked and picked[0] != state.get(S.SCORES_LAST_PICK):
    # A new click: it becomes the shared selection (Saliency and Compare open on it).
    state[S.SELECTION_ENCODER] = picked[0]
state[S.SCORES_LAST_PICK] = picked[0] if picked else None

tables.ranking_section(list(records.values()), S.SCORES_RANK_METRIC, S.SCORES_RANK_CHART,
                       S.SCORES_RANK_FIGURE, frameset)

# ----------------------------------------------------------------------------- inspector
ids = list(records)
chosen = widgets.synced_selectbox(
    "Inspect encoder", ids, key=S.SCORES_INSPECT, shared_key=S.SELECTION_ENCODER,
    format_func=widgets.encoder_label,
    help="Click a point of the chart, or pick an encoder here.")
row = df[df["encoder"] == chosen].iloc[0]
st.subheader(f"Inside {widgets.encoder_label(chosen)}")
st.caption(" · ".join(f"{short} {charts.fmt_ci(row, key)}"
                      for key, short in catalogue.shorts("summary").items())
           + f" · tier {widgets.fmt(row.get('tier'), 0)}")
if not widgets.has_image_model(chosen):  # the state reference: no frames to explain
    st.info(widgets.no_image_model_note([chosen]))
    pages.link(pages.PROJECTION, "Its t-SNE map")
else:
    left, right = st.columns([3, 2])
    try:
        with left:
            method = saliency.default_method(chosen)
            st.markdown(f"**Saliency, sim and real side by side** "
                        f"({'Grad-CAM' if method == 'gradcam' else 'integrated gradients'} of the "
                        "embedding; the real frame is the one whose robot state is nearest)")
            with st.spinner(f"Saliency maps of {chosen}..."):
                for sim_idx, real_idx in widgets.gallery_pairs(frameset):
                    agree = widgets.saliency_pair_row(frameset, chosen, sim_idx, real_idx,
                                                      method=method)
                    st.caption("sim/real agreement (Spearman of the two maps): "
                               f"{widgets.fmt(agree, 2)}")
            figures.colorbar()
            figures.grid_download([figures.pair_row(frameset, chosen, s, r, method=method,
                                                    label=f"sim {s} / real {r}")
                                   for s, r in widgets.gallery_pairs(frameset)],
                                  f"s2r_saliency_{chosen}", S.SCORES_SALIENCY_FIGURE)
        with right:
            st.markdown("**t-SNE of sim and real embeddings** (joint map)")
            chart, note = st.empty(), st.empty()  # each snapshot of the live t-SNE, then the map
            proj = live_tsne.live_projection(
                frameset, chosen, widget_key=S.SCORES_TSNE_LIVE,
                draw=live_tsne.chart_drawer(chart, note, frameset, str(row["label"])))
            tsne = projection_scatter(projection_frame(frameset, proj), title=str(row["label"]),
                                      subtitle=f"mixing number {proj.mixing:.2f} "
                                               "(1 = sim and real fully mixed)")
            chart.altair_chart(tsne, width="stretch", key=S.SCORES_TSNE)
            note.caption(live_tsne.outcome(proj))
            live_tsne.finish_button(proj, frameset, chosen, widget_key=S.SCORES_TSNE_LIVE)
            figures.chart_download(tsne, f"s2r_tsne_{chosen}", S.SCORES_TSNE_FIGURE)
            pages.link(pages.PROJECTION, "More t-SNE options")
            pages.link(pages.SALIENCY, "Pick frames and targets")
    except S2RError as exc:
        st.error(f"{chosen}: {exc}")

# ----------------------------------------------------------------------------- table
st.subheader("Every metric")
if focus.focus_control(state, frameset, records, data.get_cache()):  # computed on this run
    df, tiers = _scores_frame(records)
table, config = tables.score_dataframe(df, "table", tiers, order_by=rank_score,
                                       frameset=frameset)
st.dataframe(table, hide_index=True, width="stretch", column_config=config)
st.caption("Each score: estimate [95% interval]; n/a = not estimable (too few episodes) or not "
           "applicable (no robot state). Skills: 0 = the no-information floor, 1 = the "
           "robot-state ceiling. Train AS null: the paper's training AS on shuffled actions "
           "(the training AS ranks nothing where it is close). Retrieval chance: the MRR of a "
           "random ranking. Object focus: the share of the encoder's Grad-CAM saliency on "
           "the task objects' masks in up to 32 real frames (floor: the masks' share of the "
           "frame), computed when asked.")
penalty_note = score_tables.unstable_penalty_note(df)
if penalty_note:
    st.warning(penalty_note)
d1, d2, _ = st.columns([1, 1, 4])
d1.download_button("Download CSV", compute.records_file(list(records.values()), ".csv"),
                   "s2r_scores.csv", "text/csv", key=S.SCORES_CSV,
                   help="The leaderboard format of `python -m s2r score` (mergeable)")
d2.download_button("Download JSON", compute.records_file(list(records.values()), ".json"),
                   "s2r_scores.json", "application/json", key=S.SCORES_JSON)
