"""Home: pick the dataset and encoders, compute, see what is cached.

The other pages (Scores, Projection, Saliency, Compare) show what this page computed. Every
number comes from the ``s2r`` library; this page only lays out widgets (see ``ui/``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from s2r.errors import S2RError
from s2r.figures.scores import scores_frame
from s2r.figures.tables import cache_rows, tiers_of
from ui import (compute, guards, home, page_url, pages, sources, tables, verdict, widgets,
                world_specs)
from ui import state as S
from ui.loaders import data, encoders

guards.page_header(
    "s2r: which vision encoder carries a sim-trained policy to the real robot?",
    "Scores pretrained vision encoders on sim and real frames of a robot task: domain "
    "invariance (do sim and real frames land in the same place?) and action inference (can a "
    "linear probe read the action, and does a probe fitted on sim still work on real?).")
state = st.session_state

# ----------------------------------------------------------------------------- sidebar
with st.sidebar:
    st.markdown(f"**Device:** `{encoders.device()}`")
    st.markdown(f"**Cache:** `{data.cache_root()}`")

# ----------------------------------------------------------------------------- 1. dataset
st.header("1. Dataset")

# Every input keeps its value while it is not drawn (another source, another page, a run
# stopped before it): ui.widgets.kept. They open on the spec in effect.
current = state[S.DATASET_SPEC]
source = st.radio("Source", sources.choices(), horizontal=True, format_func=sources.source_title,
                  help="A simulated world draws its expert's episodes in a sim look and a real "
                       "look, with a tunable sim-to-real gap, and needs no download; files on "
                       "disk are your own sim and real recordings.",
                  **widgets.kept(S.HOME_SOURCE, sources.source_of(current)))

if source != sources.FILES:
    if (world_specs.names_world(current) == source and not world_specs.unavailable(source)
            and world_specs.spec_options(current) is None):
        from s2r.datasets import parse_spec

        try:
            parse_spec(current)
        except S2RError as exc:
            st.warning(f"{exc}. Showing the default {world_specs.world_title(source)} dataset "
                       "instead.")
    spec = sources.world_inputs(source, current)
    if spec is None:
        st.stop()
    keys = {"image_key": None, "action_key": None, "state_key": None}
else:
    paths = [current] if isinstance(current, str) else list(current)
    paths = ([] if world_specs.names_world(current) else paths) + ["", ""]
    c1, c2 = st.columns(2)
    sim_path = c1.text_input("Sim: .zarr, .hdf5, a LeRobot folder, or a folder in the s2r layout",
                             placeholder="/data/one_leg_sim.zarr",
                             **widgets.kept(S.HOME_SIM_PATH, paths[0]))
    real_path = c2.text_input("Real: the same kind; empty for an s2r-layout folder",
                              placeholder="/data/one_leg_real.zarr",
                              **widgets.kept(S.HOME_REAL_PATH, paths[1]))
    key_fields = (("image_key", "Image key / camera",
                   "color_image2, agentview or observation.images.top"),
                  ("action_key", "Action key", "action/pos, actions or action"),
                  ("state_key", "State key (pairing)", "robot_state or observation.state"))
    with st.expander("Keys inside the files (optional)"):
        keys = {}
        for col, (name, label, hint) in zip(st.columns(3), key_fields):
            kept = widgets.kept(S.HOME_KEY_INPUTS[name], state[S.DATASET_KEYS].get(name) or "")
            keys[name] = col.text_input(label, placeholder=hint, **kept) or None
    if not sim_path.strip():
        st.info("Enter the path of a FurnitureBench zarr store, a robomimic HDF5 file or a "
                "LeRobot dataset folder (or `hf:ORG/NAME`) for each domain, or of one folder "
                "with `sim/` and `real/` frames (see the README).")
        st.stop()
    spec = [sim_path.strip(), real_path.strip()] if real_path.strip() else sim_path.strip()

if S.spec_key(spec) != S.spec_key(state[S.DATASET_SPEC]) or keys != state[S.DATASET_KEYS]:
    state[S.DATASET_SPEC], state[S.DATASET_KEYS] = spec, keys
    state[S.SELECTION_PAIR] = None  # frame indices of another dataset mean nothing here
page_url.publish_url()

try:
    with st.spinner("Loading the dataset (a simulated world renders its frames once)..."):
        frameset = data.load_frameset(spec, keys)
    frameset.require_domains()
except S2RError as exc:
    st.error(f"The dataset could not be loaded: {exc}")
    st.stop()

info = frameset.summary()
m1, m2, m3, m4 = st.columns(4)
m1.metric("Sim frames", f"{info['frames']['sim']:,}", f"{info['episodes']['sim']} episodes",
          delta_color="off", delta_arrow="off")
m2.metric("Real frames", f"{info['frames']['real']:,}", f"{info['episodes']['real']} episodes",
          delta_color="off", delta_arrow="off")
m3.metric("Frame size", "x".join(str(v) for v in info["image_shape"][:2]))
m4.metric("Action", f"{info['action_dim']}-D", "masks: yes" if info["has_masks"] else "masks: no",
          delta_color="off", delta_arrow="off")
with st.expander("Sample frames (sim above, real below)", expanded=True):
    for domain in ("sim", "real"):
        idx = frameset.indices(domain)
        sample = idx[np.linspace(0, idx.size - 1, 4).astype(int)]
        try:
            images = data.frames(frameset, sample)
        except S2RError as exc:  # a damaged frame file or chunk: say which, keep the page
            st.error(f"{domain} frames could not be read: {exc}")
            continue
        cols = st.columns(len(sample))
        for col, i, img in zip(cols, sample, images):
            col.image(img, caption=widgets.frame_caption(frameset, int(i)), width="stretch")

# ----------------------------------------------------------------------------- 2. encoders
st.header("2. Encoders")
from s2r.encoders import list_encoders
from s2r.settings import current

# The robot-state reference is offered only for a dataset that has state.
all_ids = [s.id for s in list_encoders(include_random=True, settings=current())
           if s.has_image_model or frameset.state is not None]
selected_now = [e for e in state[S.ENCODERS_SELECTED] if e in all_ids]
stateless = [e for e in state[S.ENCODERS_SELECTED]
             if e not in all_ids and not widgets.has_image_model(e)]
unknown = [e for e in state[S.ENCODERS_SELECTED] if e not in all_ids and e not in stateless]
if stateless:
    st.info(f"{', '.join(map(widgets.encoder_label, stateless))} left out: this dataset has "
            "no robot state (a folder's `state.<name>` columns, or the *State key* of "
            ".zarr/.hdf5 files).")
if unknown:
    st.warning(f"Unknown encoder ids left out: {', '.join(unknown)}")
table = {row["encoder"]: row for row in encoders.encoder_table(all_ids)}


def _option_label(eid: str) -> str:
    return f"{widgets.encoder_label(eid)} · {widgets.STATUS_BADGE.get(table[eid]['status'], '')}"


selected = st.multiselect(
    "Encoders to score", all_ids, format_func=_option_label,
    help="The paper's Table I encoders, the offline ones (pixels, EfficientNet-Lite0/1/2), an "
         "ID@random control of each architecture and, for datasets with robot state, the "
         "state itself as a reference (the ceiling of the action scores). Encoders whose "
         "weights are missing say how to get them below.",
    **widgets.mirrored(S.HOME_ENCODERS, S.ENCODERS_SELECTED, selected_now))
# The state reference stays chosen for the next dataset with state (the others skip it).
state[S.ENCODERS_SELECTED] = list(selected) + stateless
page_url.publish_url()
if selected:
    from s2r.encoders.runtime_plan import planned_runtimes_line

    plans = encoders.runtime_plans(selected)
    rows = pd.DataFrame([table[e] for e in selected])
    rows["status"] = rows["status"].map(widgets.STATUS_BADGE)
    rows["runtime"] = [plans[e][0] for e in selected]
    st.dataframe(rows[["name", "encoder", "status", "runtime", "architecture",
                       "pretraining_group", "params_m", "dim", "message"]],
                 hide_index=True, width="stretch",
                 column_config={"name": "Encoder", "encoder": "id", "status": "Status",
                                "runtime": st.column_config.TextColumn(
                                    "Runtime", help="What runs the embedding pass: onnx "
                                    "(ONNX Runtime on the CPU), torch, or - (no model)"),
                                "architecture": "Architecture",
                                "pretraining_group": "Pretraining",
                                "params_m": st.column_config.NumberColumn("Params (M)",
                                                                          format="%.1f"),
                                "dim": "Dim", "message": "Weights"})
    runtime_line = planned_runtimes_line(plans)
    fell_back = [f"{e}: {why}" for e, (_, why) in plans.items() if why.startswith("fell back")]
    if runtime_line:
        st.caption(" ".join([runtime_line, *fell_back]))
missing = [e for e in selected if table[e]["status"] == "weights-missing"]
if missing:
    with st.expander(f":material/warning: {len(missing)} selected encoder(s) need weights: "
                     "how to get them",
                     expanded=True):
        for e in missing:
            st.markdown(f"- **{widgets.encoder_label(e)}**: {table[e]['message']}"
                        + (f" ([download]({table[e]['url']}))" if table[e]["url"] else ""))
        st.caption(f"Or pick `{missing[0]}@random` (same architecture, random weights) as a "
                   "control that runs offline.")
        if encoders.downloads_possible():
            if st.button(f"Download the weights of {len(missing)} encoder(s)",
                         key=S.HOME_DOWNLOAD, icon=":material/download:",
                         help="Same as `python -m s2r weights fetch ID`: streamed, resumable, "
                              "checked loadable before it is put in the weights folder."):
                home.download(missing)
                st.rerun()
        else:
            st.caption("Offline: `python -m s2r weights fetch ID` downloads them on a machine "
                       "with network (or set `S2R_WEIGHTS_MIRROR`).")

# ----------------------------------------------------------------------------- 3. compute
st.header("3. Compute")
PRECISIONS = {"auto": "Exact (fp32 on CPU, fp16 on CUDA)",
              "int8": "int8 on CPU: ResNet/VGG encoders ~1.7x faster where it stays faithful"}
on_cpu = encoders.device() == "cpu"
if not on_cpu:
    state[S.PRECISION] = "auto"
st.radio("Embedding precision", list(PRECISIONS), format_func=PRECISIONS.get, horizontal=True,
         disabled=not on_cpu, **widgets.mirrored(S.HOME_PRECISION, S.PRECISION),
         help="int8 quantizes ResNet/VGG-type encoders (ResNets, R3M, VIP, MCR, HRP, VGG) after "
              "calibrating on 64 frames of this dataset: embeddings stay at cosine ~0.9997 to "
              "fp32. Other encoders, and every encoder on CUDA, run exact. Results are cached "
              "per precision; saliency always uses the exact model.")
state[S.PRECISION] = state[S.HOME_PRECISION]
page_url.publish_url()
st.sidebar.markdown("**Precision:** " + ("int8 (ResNet/VGG)" if state[S.PRECISION] == "int8"
                                          else "exact"))
home.backend_choice(state)  # a Ray toggle, only when $S2R_RAY_ADDRESS is set
cache = data.get_cache()
held = compute.session_records(state, frameset.fingerprint)
run_plan = home.plan(state, selected, held)
c1, c2 = st.columns([1, 3])
pressed = c1.button("Compute scores", type="primary", disabled=not selected,
                    help="Embeds every frame with each encoder and scores it. Results are "
                         "cached on disk: encoders already computed are read back, and an "
                         "interrupted run resumes where it stopped.")
progress_note = c2.empty()
if run_plan.starts(pressed):
    progress_note.caption(f"Scoring {len(run_plan.to_run(pressed))} encoder(s)"
                          + (" automatically on this first visit" if run_plan.auto else "")
                          + " -- you can open other pages meanwhile; this resumes on return.")
    home.run(state, frameset, run_plan.to_run(pressed), held, cache)
home.finish(state)
progress_note.caption(f"{sum(e in held for e in selected)} of {len(selected)} selected encoders "
                      "scored for this dataset")

done = [e for e in selected if e in held]
if done:
    done_records = [held[e] for e in done]
    df = scores_frame(done_records)
    st.subheader("Scores")
    rank_score = verdict.default_score("ranking", frameset)   # the evidence's strongest
    table, config = tables.score_dataframe(df, "summary", tiers_of(done_records, rank_score),
                                           order_by=rank_score, frameset=frameset)
    st.dataframe(table, hide_index=True, width="stretch", column_config=config)
    st.caption("Estimate [95% interval]. Skills: 0 = a probe that predicts the mean action "
               "(no information), 1 = the same probe on the robot state. Sim2Real = "
               "sqrt(transfer skill x DIS), both clipped to [0, 1]. Tier: encoders in one tier "
               "cannot be told apart. n/a: not estimable (the Scores page says why).")
    if state[S.PRECISION] == "int8":
        notes = compute.int8_notes(frameset, {e: held[e] for e in done}, cache)
        st.caption("Rows marked `· int8` come from int8 embeddings; the others are exact. "
                   + " ".join(f"{n}." for n in notes))
    verdict.pick_box({e: held[e] for e in done}, frameset,
                     [e for e in done if not widgets.has_image_model(e)])
    st.markdown("**Next:** explore the results")
    for where, entry, label in zip(st.columns(4), (pages.SCORES, pages.PROJECTION,
                                                   pages.SALIENCY, pages.COMPARE),
                                   ("Scores: DIS vs AS", "Projection: t-SNE", "Saliency maps",
                                    "Compare two encoders")):
        pages.link(entry, label, where=where)
elif selected:
    st.info("Press **Compute scores** to embed and score the selected encoders.")

# ----------------------------------------------------------------------------- cache
with st.expander("What is cached"):
    entries = cache.ls()
    if not entries:
        st.caption("The cache is empty.")
    else:
        rows = cache_rows(entries, frameset.fingerprint)
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch",
                     column_config={"MB": st.column_config.NumberColumn(format="%.2f")})
        st.caption(f"{len(entries)} entries in `{cache.root}` · clear with "
                   "`python -m s2r cache clear`")
