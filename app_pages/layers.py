"""Layers: which layer of each encoder transfers best. A score of every layer against its relative
depth (one line per encoder, interval bands); click a layer to see Grad-CAM at that layer on a
sim/real pair."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from s2r.errors import S2RError
from s2r.figures.layers import PICK, depth_profile, layer_choices, layers_frame
from s2r.metrics.layers import best_layers, mark_best_layers
from s2r.metrics.pairwise import better_sign
from ui import compute, figures, guards, page_url, progress, verdict, widgets
from ui import state as S
from ui.events import selected_values
from ui.loaders import data, layers, saliency

frameset, records = guards.results_page(
    "Layers",
    "Which layer of an encoder carries a policy from sim to real? Every layer of each computed "
    "encoder (its trunk's stages or blocks, each pooled as the encoder's head pools) is scored "
    "like an encoder, and drawn against its relative depth (1 = the encoder's embedding). The "
    "best layer of each encoder is marked, and whether the data tell it apart from the final "
    "one. Click a layer to see where the encoder looks at that layer.",
    "the depth profile of the computed encoders")
state = st.session_state
ids = list(records)
found, errors = layers.layer_records(frameset, ids)
for eid, message in errors.items():
    st.warning(f"{eid}: {message}")
missing = [e for e in ids if e not in found and e not in errors]
if missing:
    st.info(f"Layers not scored yet: {', '.join(widgets.encoder_label(e) for e in missing)}. "
            "Scoring embeds every layer of an encoder in one pass over the frames (about the "
            "time of its final embedding), then scores each layer like an encoder (cached).",
            icon=":material/stacked_line_chart:")
    if st.button(f"Score every layer of {len(missing)} encoder(s)", key=S.LAYERS_COMPUTE,
                 type="primary"):
        bar = st.progress(0.0, text="Scoring layers...")
        try:
            layers.compute_layers(frameset, missing, progress.progress_bar(
                bar, text=progress.count_text, default="scoring layers"))
        except S2RError as exc:
            st.error(str(exc))
            st.stop()
        st.rerun()
if not found:
    st.stop()

flat = [r for e in ids if e in found for r in found[e]]
points = {f"{r['encoder']['id']} @ {r['layer']}": r for r in flat}
state.setdefault(S.LAYERS_Y, verdict.default_score("ranking", frameset))
state.setdefault(S.LAYERS_BANDS, True)
state.setdefault(S.LAYERS_TARGET, "embedding")
choices = layer_choices()
page_url.sync([page_url.Option("y", S.LAYERS_Y, {k: k for k in choices}),
               page_url.bool_option("bands", S.LAYERS_BANDS),
               page_url.Option("layer", S.LAYERS_PICK, {p: p for p in points}),
               page_url.Option("target", S.LAYERS_TARGET, {t: t for t in saliency.TARGETS}),
               *page_url.pair_options(frameset, S.LAYERS_PAIR_KEYS)])
c1, c2 = st.columns([5, 1])
y = c1.radio("Score against depth", list(choices), key=S.LAYERS_Y, horizontal=True,
             format_func=choices.get,
             help="The best layer of each encoder is picked on this score.")
bands = c2.checkbox("95% intervals", key=S.LAYERS_BANDS)

rows = best_layers(flat, y)
marked = mark_best_layers(flat, y, rows=rows)
if state.get(S.LAYERS_PICK) not in points:      # default: the best layer of an image encoder
    first = next((r for r in rows if widgets.has_image_model(r["encoder"])), rows[0] if rows
                 else None)
    state[S.LAYERS_PICK] = (f"{first['encoder']} @ {first['best_layer']}" if first
                            else next(iter(points)))
# the chart's selection is in session state before the chart is drawn: a new click moves the
# pick first, so the chart outlines the layer explained below (not the previous one)
event = state.get(S.LAYERS_CHART)
clicked = [f"{e} @ {n}" for e, n in zip(selected_values(event, PICK, "encoder"),
                                         selected_values(event, PICK, "layer"))]
if clicked and clicked[0] != state.get(S.LAYERS_LAST_PICK) and clicked[0] in points:
    state[S.LAYERS_PICK] = clicked[0]             # a new click: explain that layer below
    page_url.publish_url()
state[S.LAYERS_LAST_PICK] = clicked[0] if clicked else None
pick = state[S.LAYERS_PICK]
pick_encoder, pick_layer = pick.split(" @ ", 1)
chart = depth_profile(layers_frame(marked), y, bands=bands, selected=(pick_encoder, pick_layer))
st.altair_chart(figures.themed(chart), on_select="rerun", key=S.LAYERS_CHART, selection_mode=PICK,
                width="stretch", height=620)
figures.chart_download(chart, f"s2r_layers_{y}", S.LAYERS_FIGURE)
st.caption(verdict.record_caption([y], frameset))


def _ci(row: dict, key: str, low: str, high: str) -> str:
    if row.get(key) is None:
        return "n/a"
    if row.get(low) is None:
        return f"{row[key]:+.3f}"
    return f"{row[key]:+.3f} [{row[low]:+.3f}, {row[high]:+.3f}]"


st.subheader("Best layer of each encoder")
st.dataframe(pd.DataFrame([{
    "Encoder": widgets.encoder_label(r["encoder"]), "Best layer": r["best_layer"],
    "Relative depth": r["best_depth"], choices[y]: round(r["best_estimate"], 3),
    "Final layer": r["final_layer"],
    "Final layer's score": None if r["final_estimate"] is None else round(r["final_estimate"], 3),
    "Best - final [95% CI]": ("(the final layer)" if r["best_is_final"] else
                              _ci(r, "difference", "difference_ci_low", "difference_ci_high")),
    "Resolved": ("-" if r["resolved"] is None else "yes" if r["resolved"] else "no")}
    for r in rows]), hide_index=True, width="stretch")
st.caption("Resolved: the paired episode-bootstrap interval of the difference excludes 0 (every "
           "layer is resampled with the same episodes), i.e. the data tell the best layer from "
           "the final one. Every (encoder, layer) pair, best first:")
sign = better_sign(y)
ranked = sorted(marked, key=lambda r: (r.get(y) is None, -sign * (r.get(y) or 0.0)))
st.dataframe(pd.DataFrame([{
    "Encoder": r["encoder"]["id"], "Layer": r["layer"] + (" (best)" if r.get("layer_best") else "")
    + (" (final)" if r["layer_is_final"] else ""), "Depth": round(r["layer_depth"], 2),
    "Width": r.get("embedding_dim"), choices[y]: _ci(r, y, f"{y}_ci_low", f"{y}_ci_high")}
    for r in ranked]), hide_index=True, width="stretch", height=240)
st.download_button("Download the layer records (CSV)", compute.records_file(marked, ".csv"),
                   "s2r_layers.csv", "text/csv", key=S.LAYERS_CSV,
                   help="The leaderboard format of `python -m s2r score --layers all`")

# ----------------------------------------------------------------------------- saliency
st.subheader(f"Grad-CAM at {pick_layer} of {widgets.encoder_label(pick_encoder)}")
if not widgets.has_image_model(pick_encoder):
    st.info(widgets.no_image_model_note([pick_encoder]))
    st.stop()
r = points[pick]
method = "gradcam" if not r["layer_is_final"] else saliency.default_method(pick_encoder)
t1, t2, t3 = st.columns([3, 2, 2])
target = t1.selectbox("Target (what the map explains)", list(saliency.TARGETS),
                      key=S.LAYERS_TARGET, format_func=saliency.TARGETS.get,
                      help="Computed on this layer's pooled embedding (the probes are fitted "
                           "on this layer's embeddings of the dataset).")
sim_idx, real_idx = widgets.pair_picker(frameset, S.LAYERS_PAIR_KEYS, episode_box=t2,
                                        step_box=t3)
try:
    with st.spinner(f"Saliency at {pick_layer}..."):
        maps, constant = layers.layer_maps(frameset, pick_encoder, pick_layer, sim_idx,
                                           real_idx, method=method, target=target)
except S2RError as exc:
    st.error(str(exc))
    st.stop()
idx = [sim_idx, real_idx]
imgs, msk = data.frames(frameset, idx), data.masks(frameset, idx)
cols = st.columns(4)
for j, domain in enumerate(("sim", "real")):
    note = widgets.focus_text(maps[j], None if msk is None else msk[j], bool(constant[j]))
    cols[2 * j].image(imgs[j], caption=widgets.frame_caption(frameset, idx[j]), width="stretch")
    cols[2 * j + 1].image(saliency.overlay(imgs[j], maps[j]), width="stretch",
                          caption=f"{domain} at {pick_layer} · {note}")
how = "Grad-CAM on that layer's output" if method == "gradcam" else "integrated gradients"
st.markdown(f"**Sim/real agreement at {pick_layer}: "
            f"{widgets.fmt(widgets.agreement(maps[0], maps[1]), 2)}** (Spearman rank "
            f"correlation of the two maps; {how}, toward the target on that layer's pooled "
            f"embedding; depth {r['layer_depth']:.2f}, {r.get('embedding_dim')} wide)")
figures.colorbar()
