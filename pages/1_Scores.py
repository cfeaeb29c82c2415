"""Scores: the paper's Figure 5 (DIS vs action score), click an encoder to look inside it."""

from __future__ import annotations

import streamlit as st

from s2r.errors import S2RError
from ui import charts, compute, loaders, widgets
from ui import state as S

frameset, records = widgets.results_page(
    "Scores",
    "Each point is an encoder: x = domain invariance score (DIS, eq. 1 of the paper), y = "
    "action score of a linear probe. Up and right is better. Click a point to see where that "
    "encoder looks in sim and real frames, and its t-SNE.",
    "the score scatter and table")
state = st.session_state

df = charts.scores_frame(list(records.values()))

# ----------------------------------------------------------------------------- controls
state.setdefault(S.SCORES_Y, "action_score_heldout")
c1, c2, c3 = st.columns([4, 1, 1])
y = c1.radio("Action score (y axis)", list(charts.Y_CHOICES), key=S.SCORES_Y, horizontal=True,
             format_func=charts.Y_SHORT.get,
             help="Held-out: a ridge probe fitted on some episodes predicts the actions of "
                  "others. Training: the paper's protocol (fit and score on the same frames). "
                  "Transfer: fitted on sim frames, scored on real frames.")
error_bars = c2.checkbox("95% CIs", key=S.SCORES_ERRORBARS,
                         help="Episode-bootstrap intervals of both scores")
labels = c3.checkbox("Labels", value=True, key=S.SCORES_LABELS)

# ----------------------------------------------------------------------------- chart
chart = charts.score_scatter(df, y=y, error_bars=error_bars, labels=labels,
                             selected=state.get(S.SELECTION_ENCODER))
event = st.altair_chart(chart, on_select="rerun", key=S.SCORES_CHART,
                        selection_mode=charts.PICK, width="stretch")
st.caption("Colour: architecture (CNN blue, Transformer orange, as in the paper). Shape: "
           "pretraining data (circle = manipulation, square = general, triangle = none: random "
           "init or raw pixels). Size: parameters. Hover a point for every metric with its "
           "95% episode-bootstrap interval.")
picked = charts.selected_values(event, charts.PICK, "encoder")
if picked and picked[0] != state.get(S.SCORES_LAST_PICK):
    # A new click: it becomes the shared selection (Saliency and Compare open on it).
    state[S.SELECTION_ENCODER] = picked[0]
state[S.SCORES_LAST_PICK] = picked[0] if picked else None

# ----------------------------------------------------------------------------- inspector
ids = list(records)
chosen = widgets.synced_selectbox(
    "Inspect encoder", ids, key=S.SCORES_INSPECT, shared_key=S.SELECTION_ENCODER,
    format_func=widgets.encoder_label,
    help="Click a point of the chart, or pick an encoder here.")
row = df[df["encoder"] == chosen].iloc[0]
st.subheader(f"Inside {widgets.encoder_label(chosen)}")
st.caption(f"DIS {charts.fmt_ci(row, 'dis')} · AS held-out "
           f"{charts.fmt_ci(row, 'action_score_heldout')} · transfer "
           f"{charts.fmt_ci(row, 'transfer_score')} · domain probe "
           f"{widgets.fmt(row.get('domain_probe_accuracy'))}")
if not widgets.has_image_model(chosen):  # the state reference: no frames to explain
    st.info(widgets.no_image_model_note([chosen]))
    st.page_link("pages/2_Projection.py", label="Its t-SNE map", icon=":material/bubble_chart:")
else:
    left, right = st.columns([3, 2])
    try:
        with left:
            method = loaders.default_method(chosen)
            st.markdown(f"**Saliency, sim and real side by side** "
                        f"({'Grad-CAM' if method == 'gradcam' else 'integrated gradients'} of the "
                        "embedding; the real frame is the one whose robot state is nearest)")
            with st.spinner(f"Saliency maps of {chosen}..."):
                for sim_idx, real_idx in widgets.gallery_pairs(frameset):
                    agree = widgets.saliency_pair_row(frameset, chosen, sim_idx, real_idx,
                                                      method=method)
                    st.caption("sim/real agreement (Spearman of the two maps): "
                               f"{widgets.fmt(agree, 2)}")
        with right:
            st.markdown("**t-SNE of sim and real embeddings** (joint map)")
            with st.spinner(f"t-SNE of {chosen} (cached after the first time)..."):
                proj = loaders.projection(frameset, chosen, mode="joint")
            pdf = loaders.projection_frame(frameset, proj)
            st.altair_chart(charts.projection_scatter(pdf, title=str(row["label"]),
                                                      subtitle=f"mixing number {proj.mixing:.2f} "
                                                               "(1 = sim and real fully mixed)"),
                            width="stretch", key="scores.tsne")
            st.page_link("pages/2_Projection.py", label="More t-SNE options",
                         icon=":material/bubble_chart:")
            st.page_link("pages/3_Saliency.py", label="Pick frames and targets",
                         icon=":material/local_fire_department:")
    except S2RError as exc:
        st.error(f"{chosen}: {exc}")

# ----------------------------------------------------------------------------- table
st.subheader("Every metric")
columns = ["label", "encoder", "architecture", "pretraining_group", "params_m",
           *[c for m in charts.METRIC_TITLES for c in (m, f"{m}_ci_low", f"{m}_ci_high")
             if c in df]]
table = df[columns].sort_values("sim2real_score" if "sim2real_score" in df else "dis",
                                ascending=False)
config = {"label": "Encoder", "encoder": "id", "architecture": "Architecture",
          "pretraining_group": "Pretraining",
          "params_m": st.column_config.NumberColumn("Params (M)", format="%.1f")}
for m, title in charts.METRIC_TITLES.items():
    short = charts.METRIC_SHORT[m]
    config[m] = st.column_config.NumberColumn(short, format="%.3f", help=title)
    config[f"{m}_ci_low"] = st.column_config.NumberColumn(f"{short} CI low", format="%.3f")
    config[f"{m}_ci_high"] = st.column_config.NumberColumn(f"{short} CI high", format="%.3f")
st.dataframe(table, hide_index=True, width="stretch", column_config=config)
d1, d2, _ = st.columns([1, 1, 4])
d1.download_button("Download CSV", compute.records_file(list(records.values()), ".csv"),
                   "s2r_scores.csv", "text/csv", key="scores.csv",
                   help="The leaderboard format of `python -m s2r score` (mergeable)")
d2.download_button("Download JSON", compute.records_file(list(records.values()), ".json"),
                   "s2r_scores.json", "application/json", key="scores.json")
