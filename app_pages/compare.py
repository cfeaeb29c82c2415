"""Compare: two encoders on one sim/real frame pair, in a 2 x 2 grid with agreement numbers."""

from __future__ import annotations

import streamlit as st

from s2r.errors import S2RError
from ui import figures, guards, page_url, pages, widgets
from ui import state as S
from ui.loaders import data, saliency

frameset, records = guards.results_page(
    "Compare",
    "Two encoders on the same sim frame and its paired real frame. Rows: encoders; columns: "
    "domains. Sim/real agreement (per row): does the encoder look at the same places in both "
    "domains? Encoder agreement (per column): do the two encoders look at the same places?",
    "two encoders side by side on one frame pair")
state = st.session_state
ids = widgets.saliency_encoders(records, note=False)  # only the two shown get notes
if len(ids) < 2:
    st.info("Compute at least two image encoders on the home page to compare them.")
    pages.link(pages.HOME, "Go to the home page")
    st.stop()

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([3, 3, 2, 3])
    with c1:
        enc_a = widgets.synced_selectbox("Encoder A", ids, key=S.COMPARE_ENCODER_A,
                                         shared_key=S.SELECTION_ENCODER,
                                         format_func=widgets.encoder_label)
    others = [e for e in ids if e != enc_a]
    page_url.sync([page_url.Option("b", S.COMPARE_ENCODER_B, {e: e for e in others}),
                   *page_url.pair_options(frameset, S.COMPARE_PAIR_KEYS)])
    if state.get(S.COMPARE_ENCODER_B) not in others:
        state[S.COMPARE_ENCODER_B] = others[0]
    enc_b = c2.selectbox("Encoder B", others, key=S.COMPARE_ENCODER_B,
                         format_func=widgets.encoder_label)
    sim_idx, real_idx = widgets.pair_picker(frameset, S.COMPARE_PAIR_KEYS, episode_box=c3,
                                            step_box=c4)
    st.caption("Saliency: Grad-CAM of the embedding where the encoder has a Grad-CAM layer, "
               "integrated gradients otherwise (the pixel baseline).")

maps = {}
try:
    with st.spinner("Computing saliency maps..."):
        for eid in (enc_a, enc_b):
            maps[eid] = saliency.pair_maps(frameset, eid, sim_idx, real_idx,
                                           method=saliency.default_method(eid))[0]
except S2RError as exc:
    st.error(str(exc))
    st.stop()

imgs = data.frames(frameset, [sim_idx, real_idx])
msk = data.masks(frameset, [sim_idx, real_idx])
head = st.columns([1, 2, 2, 1.2])
for col, domain, index in ((head[1], "Sim", sim_idx), (head[2], "Real", real_idx)):
    col.markdown(f"**{domain} frame** · episode {int(frameset.episode[index])} · "
                 f"step {int(frameset.step[index])}")
head[3].markdown("**Sim/real agreement**")
for eid in (enc_a, enc_b):
    row = st.columns([1, 2, 2, 1.2], vertical_alignment="center")
    row[0].markdown(f"**{widgets.encoder_label(eid)}**")
    for j in range(2):
        focus = widgets.focus_text(maps[eid][j], None if msk is None else msk[j],
                                   bool(maps[eid][j].max() == 0))
        row[1 + j].image(saliency.overlay(imgs[j], maps[eid][j]), caption=focus, width="stretch")
    row[3].metric(f"sim/real ({eid})", widgets.fmt(widgets.agreement(maps[eid][0],
                                                                     maps[eid][1]), 2),
                  label_visibility="collapsed")
foot = st.columns([1, 2, 2, 1.2])
foot[0].markdown("**Encoder agreement**")
for j, domain in enumerate(("sim", "real")):
    foot[1 + j].metric(f"A vs B on the {domain} frame",
                       widgets.fmt(widgets.agreement(maps[enc_a][j], maps[enc_b][j]), 2))
figures.colorbar()
figures.grid_download([figures.pair_row(frameset, e, sim_idx, real_idx,
                                        method=saliency.default_method(e),
                                        label=widgets.encoder_label(e)) for e in (enc_a, enc_b)],
                      f"s2r_compare_{enc_a}_{enc_b}", S.COMPARE_FIGURE,
                      columns=(f"sim frame {sim_idx}", f"real frame {real_idx}"))
