"""Projection: live t-SNE of sim vs real embeddings, per encoder (the map drawn as it
optimises, with a Stop that keeps it); click a point to see it."""

from __future__ import annotations

import streamlit as st

from s2r.errors import S2RError
from s2r.figures.projection import projection_frame, projection_scatter
from ui import figures, guards, live_tsne, page_url, pages, projection_map, widgets
from ui import state as S
from ui.loaders import data
from ui.loaders import projection as maps

frameset, records = guards.results_page(
    "Projection",
    "t-SNE maps of each encoder's embeddings (WebGL: tens of thousands of points stay "
    "responsive), sim frames in blue and real frames in red. "
    "Overlapping clouds mean the encoder ignores the domain. The mixing number says the "
    "same without the drawing: 1 = sim and real fully mixed among nearest neighbours, 0 = "
    "fully separated. Click a point to see its frame.",
    "t-SNE maps of the computed encoders")
state = st.session_state

ids = list(records)
shared = state.get(S.SELECTION_ENCODER)
if S.PROJECTION_ENCODERS not in state or not set(state[S.PROJECTION_ENCODERS]) <= set(ids):
    state[S.PROJECTION_ENCODERS] = [shared if shared in ids else ids[0]]
MODES = {"joint": "Joint: fit sim and real together (the paper's plot)",
         "place-real": "Place real: fit on sim, then place each real frame into that map"}
PERPLEXITIES = [5, 10, 20, 30, 50]
state.setdefault(S.PROJECTION_PERPLEXITY, 30)
page_url.sync([page_url.Option("show", S.PROJECTION_ENCODERS, {e: e for e in ids}, many=True,
                               most=3),
               page_url.Option("mode", S.PROJECTION_MODE, {m: m for m in MODES}),
               page_url.Option("perplexity", S.PROJECTION_PERPLEXITY,
                               {str(p): p for p in PERPLEXITIES}),
               page_url.bool_option("all_frames", S.PROJECTION_ALL_FRAMES)])
c1, c2, c3 = st.columns([3, 3, 2])
chosen = c1.multiselect("Encoders (up to 3)", ids, key=S.PROJECTION_ENCODERS,
                        format_func=widgets.encoder_label, max_selections=3)
mode = c2.radio("Mode", list(MODES), key=S.PROJECTION_MODE, format_func=MODES.get,
                help="'Place real' answers: where do real frames land in the map the policy "
                     "was trained on?")
perplexity = c3.select_slider("Perplexity", PERPLEXITIES, key=S.PROJECTION_PERPLEXITY,
                              help="Neighbourhood size of t-SNE (capped at (n - 1) / 3)")
n_frames, cap = len(frameset), maps.MAP_PER_DOMAIN
sampled = sum(min(cap, int((frameset.domain == d).sum())) for d in ("sim", "real"))
if sampled < n_frames:
    all_frames = st.toggle(
        f"Map every frame ({n_frames:,}; t-SNE of every frame takes minutes the first time)",
        key=S.PROJECTION_ALL_FRAMES,
        help=f"Off: the map is fitted on at most {cap:,} frames per domain, drawn from every "
             "episode in proportion to its length. The mixing number always uses every frame.")
else:
    all_frames = True
if not chosen:
    st.info("Pick at least one encoder.")
    st.stop()
if len(chosen) == 1 and chosen[0] in ids:
    state[S.SELECTION_ENCODER] = chosen[0]
    page_url.publish_url()


cols = st.columns(len(chosen))
clicked = None
per_domain = None if all_frames else cap
for col, eid in zip(cols, chosen):
    with col:
        # One chart placeholder: each snapshot of the live t-SNE (deck.gl, its title and
        # legend in ``head``), then the finished, clickable map (Plotly, which carries its
        # title, axis labels and domain legend).
        head, chart, note = st.empty(), st.empty(), st.empty()
        title = f"t-SNE of {widgets.encoder_label(eid)}"
        live = dict(mode=mode, perplexity=perplexity, max_per_domain=per_domain,
                    widget_key=f"{S.PROJECTION_LIVE}.{eid}")
        try:
            proj = live_tsne.live_projection(
                frameset, eid, draw=live_tsne.deck_drawer(head, chart, note, frameset, title),
                **live)
        except S2RError as exc:
            head.empty()
            chart.empty()
            st.error(f"{eid}: {exc}")
            continue
        head.empty()
        event = chart.plotly_chart(
            projection_map.map_figure(proj, frameset,
                                      title=f"{title} · mixing number {proj.mixing:.2f}"),
            on_select="rerun", selection_mode="points", config=projection_map.CONFIG,
            key=f"{S.PROJECTION_MAP}.{eid}.{mode}.{perplexity}.{per_domain or 'all'}")
        note.caption(f"{live_tsne.outcome(proj)}. "
                     + projection_map.describe_sample(len(proj), n_frames) + " Sim blue, real "
                     "red; drag to pan, scroll to zoom, click a point to see its frame.")
        live_tsne.finish_button(proj, frameset, eid, **live)
        # The same map as a static figure (SVG/PDF/PNG, rendered only when asked for).
        chart = projection_scatter(
            projection_frame(frameset, proj), title=widgets.encoder_label(eid),
            subtitle=f"mixing number {proj.mixing:.2f} · {len(proj)} of {n_frames} frames")
        figures.chart_download(chart, f"s2r_tsne_{eid}_{mode}", f"{S.PROJECTION_FIGURE}.{eid}")
        st.metric("Mixing number", f"{proj.mixing:.2f}",
                  help=f"Average share of other-domain frames among each frame's "
                       f"{proj.params.get('k', 15)} nearest neighbours in embedding space, "
                       f"relative to perfect mixing; computed on all {n_frames:,} frames")
        for warning in proj.params.get("warnings", []):
            st.warning(warning, icon=":material/warning:")
        picked = projection_map.selected_frame(event)
        if picked is not None:
            clicked = (eid, picked)

st.subheader("Frame")
if clicked is None:
    st.caption("Click a point of a map to show its frame here.")
else:
    eid, index = clicked
    partner_caption = ""
    f1, f2, f3 = st.columns([2, 2, 3])
    f1.image(data.frames(frameset, [index])[0], caption=widgets.frame_caption(frameset, index),
             width="stretch")
    if frameset.domain[index] == "sim":
        real = int(data.paired_real(frameset, [index])[0])
        f2.image(data.frames(frameset, [real])[0],
                 caption=f"paired real frame · {widgets.frame_caption(frameset, real)}",
                 width="stretch")
        state[S.SELECTION_PAIR] = [index, real]
    f3.markdown(f"**Encoder:** {widgets.encoder_label(eid)}  \n"
                f"**Domain:** {frameset.domain[index]}  \n"
                f"**Episode:** {int(frameset.episode[index])}  \n"
                f"**Step:** {int(frameset.step[index])}  \n"
                f"**Frame index:** {index}  \n"
                f"**Action:** " + ", ".join(f"{n}={v:+.2f}" for n, v in
                                            zip(frameset.action_names, frameset.actions[index])))
    if frameset.domain[index] == "sim":
        pages.link(pages.SALIENCY, "Saliency of this pair", where=f3)
