"""Validation: do the scores predict closed-loop success in a simulated world's real look?"""

from __future__ import annotations

import numpy as np
import streamlit as st

from s2r.cache import NotCached
from s2r.errors import S2RError
from s2r.figures import axes
from s2r.figures import validation as V
from s2r.figures.names import paper_layout
from s2r.metrics import catalogue
from s2r.settings import current
from ui import evidence, figures, guards, page_url, real_results, verdict, widgets, world_specs
from ui import state as S
from ui.loaders import encoders, saliency
from ui.loaders import validation as closed_loop
from ui.progress import progress_bar

guards.page_header(
    "Validation",
    "Ground truth for the scores. For every encoder, a behaviour-cloning policy is trained on "
    "its embeddings of expert demonstrations rendered in a simulated world's **sim** look "
    "(plus the robot's proprioception), then deployed closed "
    "loop in that world's simulator, seeing frames "
    "in the **real** look at each sim-to-real gap. Its real success and graded progress are "
    "what the scores try to predict without a robot; the rank correlations below say how well "
    "each one ranks the image encoders.")
state = st.session_state
guards.encoder_config_or_stop()
real_results.section()  # your robot's results against the scores
evidence.section()  # the evidence the product ranks by

from s2r.closedloop.encoder_rollouts import POLICIES, RolloutParams, task_of
from s2r.closedloop.params import BOUNDS
from s2r.closedloop.validation import default_encoders, demo_options
from s2r.worlds import WORLDS, task_gaps

#: The sim-to-real gaps offered: quarters and every task's own.
GAP_CHOICES = sorted({0.0, 0.25, 0.5, 0.75, 1.0, *(g for gs in task_gaps().values() for g in gs)})

# ----------------------------------------------------------------------------- settings
# The world deployed in (and its choices: a task): the session's dataset when it is that
# world's, else the world's dashboard dataset, at the choices picked. Every option is read
# from the URL first.
WORLD_CHOICES = world_specs.worlds()
current_spec = state.get(S.DATASET_SPEC)
opened_on = world_specs.names_world(current_spec)
state.setdefault(S.VALIDATION_WORLD, opened_on if opened_on in WORLD_CHOICES else WORLD_CHOICES[0])
picks = {w: [o for o in world_specs.declared(w).values() if o.shown and o.choices]
         for w in WORLD_CHOICES}
for o in picks[state[S.VALIDATION_WORLD]]:   # opens on the dataset's choice (a task)
    state.setdefault(S.validation_option(o.name),
                     world_specs.opening_options(current_spec, state[S.VALIDATION_WORLD])[o.name])
all_ids = encoders.offline_encoders()
state.setdefault(S.VALIDATION_ENCODERS, world_specs.world_encoders(
    all_ids, default_encoders(WORLDS[state[S.VALIDATION_WORLD]]), state[S.VALIDATION_WORLD]))
state.setdefault(S.VALIDATION_GAPS, [0.0, 0.5, 1.0])
if "gaps" not in st.query_params:     # a link's gaps stay; else they follow the task (below)
    state.setdefault(S.VALIDATION_GAPS_OF_TASK, [0.0, 0.5, 1.0])
DEFAULTS = RolloutParams()
state.setdefault(S.VALIDATION_ROLLOUTS, DEFAULTS.rollouts)
state.setdefault(S.VALIDATION_DEMOS, DEFAULTS.demos)
state.setdefault(S.VALIDATION_CONTROL_DEMOS, DEFAULTS.control_demos)
state.setdefault(S.VALIDATION_MEMORY, DEFAULTS.memory)
choice_values = {}   # option name -> every world's choices of it (the URL may name any)
for o in (o for w in WORLD_CHOICES for o in picks[w]):
    choice_values.setdefault(o.name, {}).update({c: c for c in o.choices})
#: The rollouts and demonstrations inputs' ranges: a link may name any count the closed loop
#: takes (its BOUNDS), kept within these and the world's share of them (world_specs.link_count).
COUNT_RANGES = {"rollouts": (5, 200), "demos": (10, 500)}


def _link_count(name: str):
    low, high = COUNT_RANGES[name]
    return lambda value: world_specs.link_count(state[S.VALIDATION_WORLD], name, value, low,
                                                high, getattr(DEFAULTS, name))


page_url.sync([
    page_url.Option("world", S.VALIDATION_WORLD, {w: w for w in WORLD_CHOICES}),
    *(page_url.Option(name, S.validation_option(name), values)
      for name, values in choice_values.items()),
    page_url.Option("ids", S.VALIDATION_ENCODERS, {e: e for e in all_ids}, many=True),
    page_url.Option("gaps", S.VALIDATION_GAPS, {f"{g:g}": g for g in GAP_CHOICES}, many=True),
    *(page_url.Option(name, key, page_url.IntRange(*BOUNDS[name]), limit=_link_count(name))
      for name, key in (("rollouts", S.VALIDATION_ROLLOUTS), ("demos", S.VALIDATION_DEMOS))),
    page_url.Option("memory", S.VALIDATION_MEMORY, {str(n): n for n in range(21)}),
    page_url.Option("policy", S.VALIDATION_POLICY, {p: p for p in POLICIES})])
w1, w2 = st.columns([2, 3])
world = w1.radio("World", WORLD_CHOICES, horizontal=True, key=S.VALIDATION_WORLD,
                 format_func=world_specs.world_title,
                 help="The simulated world the policies are deployed in: its own simulator, "
                      "expert and stages.")
world_ids = world_specs.world_encoders(all_ids, all_ids, world)
# Another world's controls in the selection (a switch, a link) give way to this world's.
state[S.VALIDATION_ENCODERS] = world_specs.world_encoders(all_ids, state[S.VALIDATION_ENCODERS],
                                                          world)
reason = world_specs.unavailable(world)
if reason:
    st.warning(f"{world_specs.world_title(world)} cannot run here: {reason}.",
               icon=":material/block:")
    st.stop()
options = world_specs.world_options(current_spec, world)
if options is None:
    options = world_specs.opening_options(None, world)
    if opened_on is None:
        st.info("Validation needs a simulated world's frames (only they come from a simulator "
                "a policy can be deployed in): it uses the default "
                f"{world_specs.world_title(world)} dataset here.")
chosen = {}
for o in picks[world]:
    key = S.validation_option(o.name)
    if state.get(key) not in o.choices:
        state[key] = options[o.name]
    chosen[o.name] = w2.selectbox(
        o.label or o.name, list(o.choices), key=key, help=o.help or None,
        format_func=(lambda t: world_specs.task_title(world, t)) if o.name == "task" else str)
# Sim and real frames of the same states (a world with a "paired" switch turns it on).
paired = {"paired": True} if "paired" in world_specs.declared(world) else {}
spec = world_specs.world_spec(world, **{**options, **chosen, **paired})
try:
    options = demo_options(spec)
except S2RError as exc:
    st.error(str(exc))
    st.stop()
# The gaps are the task's own (those measured to inform) until the user picks others.
if state[S.VALIDATION_GAPS] == state.get(S.VALIDATION_GAPS_OF_TASK):
    state[S.VALIDATION_GAPS] = list(task_of(spec).gaps)
state[S.VALIDATION_GAPS_OF_TASK] = list(task_of(spec).gaps)
with st.container(border=True):
    st.markdown(f"**Dataset:** `{spec}` (sim and real frames of the same states, so paired "
                "retrieval is scored; the gap is replaced by each gap below; rollouts are "
                "rendered at its frame size)")
    c1, c2 = st.columns([3, 2])
    ids = c1.multiselect("Encoders (at least 3)", world_ids,
                         key=S.VALIDATION_ENCODERS, format_func=widgets.encoder_label)
    gaps = c2.multiselect("Sim-to-real gaps", GAP_CHOICES, key=S.VALIDATION_GAPS)
    c3, c4, c6, c7, c5 = st.columns([1, 1, 1, 1, 2], vertical_alignment="bottom")
    rollouts = c3.number_input("Rollouts per look and gap", *COUNT_RANGES["rollouts"], step=5,
                               key=S.VALIDATION_ROLLOUTS)
    demos = c4.number_input("Expert demonstrations", *COUNT_RANGES["demos"], step=10,
                            key=S.VALIDATION_DEMOS)
    control_demos = c6.number_input(
        "Control demonstrations", 0, 5000, step=50, key=S.VALIDATION_CONTROL_DEMOS,
        help="two-stage: expert episodes (exact states, nothing rendered) the shared control "
             "MLP is fitted on; 0 = fitted per encoder on its decoded states")
    memory = c7.number_input(
        "Scene memory (frames)", 0, 20, step=1, key=S.VALIDATION_MEMORY,
        help="two-stage: the deployed policy remembers what cannot move (tabletop: mean "
             "decoded pose; a free leg: mean of its first N decoded poses; a held leg: mean "
             "offset from the gripper); 0 = every frame decoded afresh")
    policy = c5.radio("Policy", list(POLICIES), horizontal=True, key=S.VALIDATION_POLICY,
                      help="two-stage: a ridge probe reads the leg and tabletop pose from the "
                           "embedding, an MLP acts on it and the proprioception (default); "
                           "mlp / ridge: one model from [embedding, proprioception] to actions")
# The rollouts' seed is the dataset's, as `python -m s2r validate` takes it without --seed.
params = RolloutParams(rollouts=int(rollouts), demos=int(demos), policy=policy,
                       control_demos=int(control_demos), memory=int(memory),
                       seed=int(options.get("seed", 0))).for_task(task_of(spec))
gaps = sorted(float(g) for g in gaps)
if len(ids) < 3 or not gaps:
    st.warning("Pick at least 3 encoders and one gap.")
    st.stop()

report = None
try:
    report = closed_loop.validation_report(spec, tuple(ids), tuple(gaps), params.to_dict())
except NotCached:
    pass
except S2RError as exc:
    st.error(str(exc))
    st.stop()

if report is None:
    st.caption(f"Not computed yet for these settings. It embeds {params.demos * params.demo_steps}"
               f" demonstration frames and up to {params.rollouts * params.horizon} frames per "
               f"look and gap with each encoder: a few minutes per CNN on 2 CPU cores, "
               f"cached afterwards (`python -m s2r validate` computes the same entries).")
    try:
        untrained = closed_loop.first_use(tuple(ids))
    except S2RError as exc:
        st.error(str(exc))
        st.stop()
    if untrained:
        st.caption("Trained first, with their progress here: "
                   + "; ".join(item.note for item in untrained) + ".")
    if st.button("Run validation", type="primary", key=S.VALIDATION_RUN):
        with st.status("Validating encoders...", expanded=True) as box:
            try:
                report = closed_loop.run_validation(spec, tuple(ids), tuple(gaps),
                                                    params.to_dict(),
                                                    progress=progress_bar(st.progress(0.0)))
            except S2RError as exc:
                box.update(label="Validation failed", state="error")
                st.error(str(exc))
                st.stop()
            box.update(label="Validation done", state="complete", expanded=False)
if report is None:
    st.stop()

# ----------------------------------------------------------------------------- results
df = V.results_frame(report)
st.subheader("Closed-loop outcome")
outcome = st.radio("Outcome", ["progress", "success"], horizontal=True, key=S.VALIDATION_OUTCOME,
                   format_func=lambda o: {"progress": "graded progress (stages reached)",
                                          "success": "success"}[o])
st.caption("Real outcome with its 95% interval, per gap; sim = the same policy in the look it "
           "was trained on (the in-domain reference). Progress = mean fraction of the task's "
           f"{len(report.stages)} stages reached ({', '.join(report.stages)}). "
           "**reference**: not an image encoder (shown, not ranked); **control**: random "
           "init, or a small CNN trained on the sim frames (`simcnn-drS`: appearance "
           "randomisation S, so more S = smaller gap, by construction; "
           "Meta-World's: `mw-simcnn-drS`).")
st.dataframe(V.success_table(df, outcome, settings=current()), width="stretch")
with st.expander("Stage breakdown (share of real-look rollouts that reached each stage)"):
    stage_gap = st.radio("Gap", gaps, horizontal=True, key=S.VALIDATION_STAGE_GAP,
                         format_func=lambda g: f"gap {g:g}")
    st.dataframe(V.stage_table(df, report.stages, stage_gap), width="stretch")

st.subheader(f"Which score predicts real {outcome}?")
head_gap = max(gaps)          # the headline: which encoder to pick at a given (the largest) gap
rows_head = {c["score"]: c for c in report.correlations_at(head_gap, outcome)}
for name, title in catalogue.titles("validation").items():
    if name in rows_head:
        st.markdown(f"- **{title}** at gap {head_gap:g} {V.verdict(rows_head[name])}.")
st.dataframe(V.verdict_table(report, outcome, gaps), width="stretch")
st.caption("Spearman over the image encoders, per gap first (the question a user asks: which "
           "encoder to pick at this gap); pooled over gaps second: pooling mixes the gap's own "
           "effect on both the scores and the outcome into the correlation, which inflates it.")
rows_all = {c["score"]: c for c in report.correlations_at("all", outcome)}
x_choices = {k: v for k, v in catalogue.shorts("validation").items() if k in df.columns}
score = st.radio("Score (x axis)", list(x_choices), horizontal=True, key=S.VALIDATION_SCORE,
                 format_func=x_choices.get, index=list(x_choices).index(
                     V.default_score(report, head_gap, outcome, x_choices,
                                     prefer=verdict.default_score(
                                         "validation", world_name=state[S.VALIDATION_WORLD]))))
scatter = V.success_scatter(df, score, correlation=rows_all.get(score), outcome=outcome)
st.altair_chart(figures.themed(scatter), width="stretch")
figures.chart_download(scatter, f"s2r_validation_{score}", S.VALIDATION_FIGURE,
                       lambda: V.success_scatter(df, score, correlation=rows_all.get(score),
                                                 outcome=outcome, layout=paper_layout()))
st.caption(axes.range_note([score]))
gap_pick = st.radio("Correlations at", [*gaps, "all"], index=len(gaps) - 1, horizontal=True,
                    key=S.VALIDATION_CORR_GAP,
                    format_func=lambda g: "pooled over gaps" if g == "all" else f"gap {g:g}")
st.dataframe(V.correlation_table(report, gap_pick, outcome), width="stretch", hide_index=True)
st.caption(f"Spearman's rho and Kendall's tau between each score and real {outcome} across "
           "the image encoders (pooled: every image encoder at every gap; the state "
           "reference is not ranked). Intervals: bootstrap over encoders (an encoder's gaps "
           "together) and over each encoder's rollouts; an interval that holds 0 means this "
           "run cannot tell the score from chance.")
evidence.add_button(report, S.VALIDATION_ADD_EVIDENCE)

# ----------------------------------------------------------------------------- rollout viewer
st.subheader("A rollout in both looks")
v1, v2 = st.columns(2)
if state.get(S.VALIDATION_VIEW_ENCODER) not in ids:   # open on the image encoder that did best
    state[S.VALIDATION_VIEW_ENCODER] = V.best_image_encoder(df) or ids[0]
enc = v1.selectbox("Encoder", ids, key=S.VALIDATION_VIEW_ENCODER, format_func=widgets.encoder_label)
if state.get(S.VALIDATION_VIEW_GAP) not in gaps:    # open on the largest gap: the real look
    state[S.VALIDATION_VIEW_GAP] = max(gaps)        # that differs most (gap 0 = the sim look)
gap = v2.selectbox("Gap", gaps, key=S.VALIDATION_VIEW_GAP, format_func=lambda g: f"{g:g}")
full = RolloutParams(**{**params.to_dict(), "height": int(options["height"]),
                        "width": int(options["width"])})
frames, actions = closed_loop.recorded_rollout(spec, enc, full.to_dict(), gap)
row = df[(df["encoder"] == enc) & (df["gap"] == gap)]
rollout = report.outcome(enc, gap)
if frames is None or not len(frames):
    st.info("The recorded rollout is not in the cache (run the validation again).")
    st.stop()
ok = bool(rollout["successes"][0])
st.caption(f"Rollout 0 of {len(rollout['successes'])}: "
           f"{'succeeded' if ok else 'failed'} after {len(frames)} steps. Real success of "
           f"this encoder at gap {gap:g}: {float(row['success_real'].iloc[0]):.2f}, progress "
           f"{float(row['progress_real'].iloc[0]):.2f}.")
step = st.slider("Step", 0, len(frames) - 1, 0, key=S.VALIDATION_VIEW_STEP)
f_sim, f_real, f3 = st.columns([2, 2, 2])   # sim left, real right, as the saliency pair below
try:
    with st.spinner("Drawing the same state in the sim look..."):
        f_sim.image(closed_loop.sim_look_frame(spec, enc, full.to_dict(), gap, step),
                    caption="sim look, same state (the look the policy was trained on)",
                    width="stretch")
except S2RError as exc:
    f_sim.warning(f"The sim look of this step could not be drawn: {exc}")
f_real.image(np.asarray(frames[step]), caption=f"real look at gap {gap:g}, step {step} (what "
             "the policy saw)", width="stretch")
f3.markdown("**Action the policy took**")
f3.dataframe(V.action_frame(actions[step:step + 1], task_of(spec).columns.action_names).T,
             width="stretch")
if widgets.has_image_model(enc):
    if st.toggle("Saliency of this frame (and the same state in the sim look)",
                 key=S.VALIDATION_VIEW_SALIENCY):
        with st.spinner("Computing saliency maps..."):
            pair = closed_loop.rollout_saliency(spec, enc, full.to_dict(), gap, step,
                                                method=saliency.default_method(enc))
        s1, s2 = st.columns(2)
        s1.image(pair["sim_overlay"], caption="sim look, same state", width="stretch")
        s2.image(pair["real_overlay"], caption="real look (seen by the policy)",
                 width="stretch")
        figures.colorbar()
        st.markdown(f"**Sim/real agreement: {widgets.fmt(pair['agreement'], 2)}** (Spearman "
                    f"rank correlation of the two maps; {pair['method']}, target: embedding)")
else:
    st.caption(widgets.no_image_model_note([enc]))
