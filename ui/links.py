"""What a page URL says, read as untrusted input: the shared view of a link (dataset,
encoders, inspected encoder, precision) and the URL that says the session's view.

:func:`url_params` writes the view of a session into query parameters; :func:`read_url`
reads a link's back, keeping only what may be used and saying why each other value is left
out. A dataset path from a link is opened only under :func:`data_roots`
(``$S2R_DATA_ROOTS``: folders separated by ``os.pathsep``; default: the working folder and
the home folder), so a link cannot make the server read, or walk, anything else; a world's
dataset from a link is bounded (:func:`link_world`). Pure: no Streamlit (:mod:`ui.page_url`
applies it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Optional, Sequence

from s2r.settings import current
from ui import state as S
from ui import world_specs

#: Query parameters of the page URL: ``?dataset=SPEC`` (twice for SIM REAL files),
#: ``encoders=ID,ID``, ``inspect=ID``, ``precision=int8`` and the optional keys inside the
#: files (``image_key=``, ``action_key=``, ``state_key=``).
Q_DATASET, Q_ENCODERS, Q_INSPECT, Q_PRECISION = "dataset", "encoders", "inspect", "precision"
Q_KEYS = ("image_key", "action_key", "state_key")
PRECISIONS = ("auto", "int8")


def url_params(state) -> dict:
    """The query parameters of the view in ``state`` (one string, or a list for repeats)."""
    spec = state[S.DATASET_SPEC]
    params: dict = {Q_DATASET: spec if isinstance(spec, str) else list(spec)}
    params.update({k: v for k, v in state[S.DATASET_KEYS].items() if v and k in Q_KEYS})
    params[Q_ENCODERS] = ",".join(state[S.ENCODERS_SELECTED])
    if state.get(S.SELECTION_ENCODER):
        params[Q_INSPECT] = state[S.SELECTION_ENCODER]
    if state.get(S.PRECISION, "auto") != "auto":
        params[Q_PRECISION] = state[S.PRECISION]
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
            values[S.DATASET_SPEC] = spec
            values[S.DATASET_KEYS] = {k: (params.get(k) or [None])[-1] or None for k in Q_KEYS}
    if params.get(Q_ENCODERS):
        ids = [e.strip() for v in params[Q_ENCODERS] for e in v.split(",") if e.strip()]
        known = _known_encoders(ids, "encoders", warnings)
        if known:
            values[S.ENCODERS_SELECTED] = known
    if params.get(Q_INSPECT):
        inspect = _known_encoders(list(params[Q_INSPECT])[-1:], "inspect", warnings)
        if inspect:
            values[S.SELECTION_ENCODER] = inspect[0]
    if params.get(Q_PRECISION):
        precision = list(params[Q_PRECISION])[-1]
        if precision in PRECISIONS:
            values[S.PRECISION] = precision
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


#: What a link may open of a world's dataset (docs/dashboard.md, "What a link may open"): each
#: size option within its range (episodes and steps: the home page's inputs; frame sides up to
#: 480 x 640), at most :data:`LINK_WORLD_FRAMES` frames (both domains) and
#: :data:`LINK_WORLD_PIXELS` pixels (frames x height x width). A link asking for more opens the
#: most it may (:func:`link_world`), and a note names each option changed. The largest
#: links render in at most ~10 s and ~250 MB on 2 CPU cores (measured, docs); a person at the
#: home page may ask for more. Both budgets are a demo frame's: a world whose frames cost more
#: to draw (:func:`s2r.worlds.frame_cost`, Meta-World's ~10x) gets that much less.
LINK_WORLD_RANGES = {"episodes": (2, 200), "steps": (4, 400), "height": (64, 480),
                    "width": (64, 640)}
LINK_WORLD_FRAMES = 1_200
LINK_WORLD_PIXELS = 64_000_000
#: The longest ``?dataset=`` value read (characters).
LINK_SPEC_CHARS = 4096


def link_world(spec: str) -> tuple[str, Optional[str]]:
    """The world's dataset a link naming ``spec`` (``NAME[:k=v,...]``) may open, and the note
    saying what changed (None: the link's own spec, unchanged).

    Raises
    ------
    s2r.errors.S2RError
        An option the library does not accept (unknown, not a number, given twice...).
    """
    from s2r.datasets.world import parse_world
    from s2r.worlds import frame_cost

    world = world_specs.names_world(spec)
    cost = frame_cost(world)
    most_frames, most_pixels = link_budget(world)
    # the library's checks of every option, but not its own size limit: the link's is smaller
    options = dict(parse_world(spec, sized=False)["options"])
    asked = {key: int(options[key]) for key in LINK_WORLD_RANGES}
    used = {key: min(max(value, LINK_WORLD_RANGES[key][0]), LINK_WORLD_RANGES[key][1])
            for key, value in asked.items()}
    # Over the budgets: episodes are cut first, down to 4 (the fewest the held-out and
    # transfer scores accept), then steps, then episodes down to their least.
    least = LINK_WORLD_RANGES["episodes"][0]
    for key, floor in (("episodes", max(least, min(used["episodes"], 4))),
                       ("steps", LINK_WORLD_RANGES["steps"][0]), ("episodes", least)):
        per = 2 * used["steps" if key == "episodes" else "episodes"]  # frames per one of key
        fits = min(most_frames // per, most_pixels // (per * used["height"] * used["width"]))
        used[key] = max(floor, min(used[key], fits))
    if used == asked:
        return spec, None
    changes = ", ".join(f"{key}={asked[key]} \u2192 {used[key]}" for key in LINK_WORLD_RANGES
                        if used[key] != asked[key])
    opened = world_specs.world_spec(world, **{**options, **used})
    what = f"{world} dataset"
    why = (f"; each {world_specs.world_title(world)} frame costs ~{cost:g}x a demo frame to draw"
           if cost != 1.0 else "")
    return opened, (f"The link's {what} asks for more than a link may open here: {changes} (a "
                    f"link opens episodes {_range('episodes')}, steps {_range('steps')}, frames "
                    f"up to {LINK_WORLD_RANGES['height'][1]}x{LINK_WORLD_RANGES['width'][1]}, at "
                    f"most {most_frames:,} frames and {most_pixels / 10**6:g} million "
                    f"pixels in all{why}). Showing that {what}; set more on the home page.")


def link_budget(world: str) -> tuple[int, int]:
    """``(frames, pixels)``: the most a link may open of ``world``'s dataset: the demo's
    :data:`LINK_WORLD_FRAMES` and :data:`LINK_WORLD_PIXELS` divided by what its frames cost to
    draw (:func:`s2r.worlds.frame_cost`), never less than the world's own dashboard dataset
    (a reload of the page the dashboard opens is never cut)."""
    from s2r.worlds import frame_cost

    cost = max(frame_cost(world), 1.0)
    opens = world_specs.dashboard_options(world)
    frames = 2 * int(opens["episodes"]) * int(opens["steps"])
    pixels = frames * int(opens["height"]) * int(opens["width"])
    return (max(int(LINK_WORLD_FRAMES / cost), frames),
            max(int(LINK_WORLD_PIXELS / cost), pixels))


def _range(key: str) -> str:
    low, high = LINK_WORLD_RANGES[key]
    return f"{low}-{high}"


def _dataset_from_url(parts: list[str], warnings: list[str]) -> Optional[S.Spec]:
    """The dataset spec of ``?dataset=`` values, or None (and a warning) when the library
    cannot use it, a path lies outside :func:`data_roots`, or a world's spec asks to lift its
    size limit (``large=``: only a person at the command line may); one over what a link may
    open (:func:`link_world`) is cut to it, with a note."""
    from s2r.datasets import LARGE_OPTION, parse_spec
    from s2r.errors import S2RError
    from s2r.inputs import quoted

    notes = []
    for i, part in enumerate(parts):
        if len(part) > LINK_SPEC_CHARS:
            problem = f"{quoted(part)} is longer than {LINK_SPEC_CHARS:,} characters"
        elif world_specs.names_world(part):
            options = part.partition(":")[2].split(",")
            problem = (f"{part!r} lifts the dataset's size limit ({LARGE_OPTION}=), which a link "
                       "may not" if any(o.split("=")[0].strip() == LARGE_OPTION
                                        for o in options) else None)
            if problem is None:
                try:
                    parts[i], note = link_world(part)
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
    spec: S.Spec = parts[0] if len(parts) == 1 else parts
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
