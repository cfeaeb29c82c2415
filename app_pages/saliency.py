"""Saliency: where an encoder looks in a sim frame and its paired real frame."""

from __future__ import annotations

import numpy as np
import streamlit as st

from s2r.errors import S2RError
from s2r.options import METHODS
from ui import figures, guards, page_url, pages, widgets
from ui import state as S
from ui.loaders import data, saliency

frameset, records = guards.results_page(
    "Saliency",
    "Sim and real frames of the same robot state side by side, with the pixels that drive the "
    "chosen target highlighted. Focus = share of the map inside the task-relevant mask (arm, "
    "gripper, parts); agreement = rank correlation of the sim and real maps (1 = the encoder "
    "looks at the same places in both domains).",
    "saliency maps of the computed encoders")
state = st.session_state
ids = widgets.saliency_encoders(records)
if not ids:
    guards.nothing_computed("saliency maps of the computed encoders", " with an image model")

PICK_MODES = {"pair": "By episode and step", "random": "Random sample"}
state.setdefault(S.SALIENCY_N_SAMPLES, 3)
state.setdefault(S.SALIENCY_SAMPLE_SEED, 0)
page_url.sync([page_url.Option("method", S.SALIENCY_METHOD, {m: m for m in METHODS}),
               page_url.Option("target", S.SALIENCY_TARGET, {t: t for t in saliency.TARGETS}),
               page_url.Option("action_dim", S.SALIENCY_ACTION_DIM,
                               {str(j): j for j in range(len(frameset.action_names))}),
               page_url.Option("frames", S.SALIENCY_PICK_MODE, PICK_MODES),
               page_url.Option("pairs", S.SALIENCY_N_SAMPLES, {str(n): n for n in range(1, 7)}),
               page_url.Option("seed", S.SALIENCY_SAMPLE_SEED, page_url.IntRange(0, 10_000)),
               *page_url.pair_options(frameset, S.SALIENCY_PAIR_KEYS)])
with st.container(border=True):
    c1, c2, c3 = st.columns([3, 2, 3])
    with c1:
        encoder_id = widgets.synced_selectbox("Encoder", ids, key=S.SALIENCY_ENCODER,
                                              shared_key=S.SELECTION_ENCODER,
                                              format_func=widgets.encoder_label)
    with c2:
        method = widgets.method_picker(encoder_id, S.SALIENCY_METHOD)
    with c3:
        target = st.selectbox("Target (what the map explains)", list(saliency.TARGETS),
                              key=S.SALIENCY_TARGET, format_func=saliency.TARGETS.get)
    action_dim = 0
    if target == "action":
        names = list(frameset.action_names)
        action_dim = st.selectbox("Action dimension", range(len(names)), key=S.SALIENCY_ACTION_DIM,
                                  format_func=lambda j: f"{j}: {names[j]}")
    p1, p2 = st.columns([2, 5])
    pick_mode = p1.radio("Frames", list(PICK_MODES.values()), key=S.SALIENCY_PICK_MODE)
    with p2:
        if pick_mode == PICK_MODES["pair"]:
            e_col, s_col = st.columns(2)
            pairs = [widgets.pair_picker(frameset, S.SALIENCY_PAIR_KEYS, episode_box=e_col,
                                         step_box=s_col)]
        else:
            s1, s2 = st.columns(2)
            n = s1.slider("Pairs", 1, 6, key=S.SALIENCY_N_SAMPLES)
            seed = s2.number_input("Sample seed", 0, 10_000, step=1, key=S.SALIENCY_SAMPLE_SEED)
            sims = frameset.indices("sim")
            rng = np.random.default_rng(int(seed))
            picks = np.sort(rng.choice(sims, size=min(int(n), sims.size), replace=False))
            reals = data.paired_real(frameset, picks)
            pairs = [(int(s), int(r)) for s, r in zip(picks, reals)]

st.subheader(f"{widgets.encoder_label(encoder_id)}: {saliency.TARGETS[target].split(':')[0]}")
agreements = []
for sim_idx, real_idx in pairs:
    try:
        with st.spinner("Computing saliency maps..."):
            agree = widgets.saliency_pair_row(frameset, encoder_id, sim_idx, real_idx,
                                              method=method, target=target,
                                              action_dim=action_dim)
    except S2RError as exc:
        st.error(str(exc))
        st.stop()
    agreements.append(agree)
    st.markdown(f"**Sim/real agreement: {widgets.fmt(agree, 2)}** "
                f"(Spearman rank correlation of the two maps; sim frame {sim_idx}, "
                f"real frame {real_idx})")
figures.colorbar()
figures.grid_download([figures.pair_row(frameset, encoder_id, s, r, method=method, target=target,
                                        action_dim=action_dim, label=f"sim {s} / real {r}")
                       for s, r in pairs], f"s2r_saliency_{encoder_id}_{target}", S.SALIENCY_FIGURE)
finite = [a for a in agreements if a is not None and np.isfinite(a)]  # flat maps: none
if len(agreements) > 1:
    st.metric("Mean sim/real agreement", widgets.fmt(float(np.mean(finite)) if finite else None,
                                                     2))
if frameset.domain.size and not frameset.has_masks:
    st.caption("This dataset has no task-relevant masks, so focus cannot be computed.")
pages.link(pages.COMPARE, "Compare with another encoder on this pair")
