"""Widgets shared by the pages: labels, synced pickers, frame pairs and saliency views (the
page set-up and guards are :mod:`ui.guards`).

Everything shown is computed by the library (through :mod:`ui.loaders`); these functions
only lay it out.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np
import streamlit as st

from s2r.errors import S2RError
from ui import page_url
from ui import state as S
from ui.loaders import data, saliency

STATUS_BADGE = {"ready": "ready", "random": "random init", "weights-missing": "weights missing"}


# ----------------------------------------------------------------------------- labels
def encoder_label(encoder_id: str, records: Optional[dict] = None) -> str:
    """``"#14 ResNet18 (resnet18)"``-style label of an encoder id."""
    try:
        from s2r.encoders import get_spec
        from s2r.settings import current

        spec = get_spec(encoder_id, settings=current())
    except S2RError:
        return encoder_id
    number = f"#{spec.table_number} " if spec.table_number else ""
    return f"{number}{spec.name} ({spec.id})" if spec.name != spec.id else f"{number}{spec.id}"


def has_image_model(encoder_id: str) -> bool:
    """False for an encoder whose embedding is not computed from the frames (the ``state``
    reference): nothing to build, no saliency. Unknown ids count as image encoders (the
    library then reports them)."""
    try:
        from s2r.encoders import get_spec
        from s2r.settings import current

        return get_spec(encoder_id, settings=current()).has_image_model
    except S2RError:
        return True


def no_image_model_note(encoder_ids: Sequence[str]) -> str:
    """Why ``encoder_ids`` (without an image model) have no saliency maps, in one sentence."""
    names = ", ".join(encoder_label(e) for e in encoder_ids)
    return (f"{names}: no image model (the embedding is the dataset's robot state), so no "
            "saliency maps (scores and t-SNE: the Scores and Projection pages).")


def saliency_encoders(encoder_ids: Sequence[str], *, note: bool = True) -> list[str]:
    """The ids of ``encoder_ids`` that saliency can explain, in order; with ``note``, a
    caption names the ones left out (the ``state`` reference: a fact about the pickers, not
    a message about the encoder shown, so no info box)."""
    usable = [e for e in encoder_ids if has_image_model(e)]
    left_out = [e for e in encoder_ids if e not in usable]
    if left_out and note:
        st.caption(no_image_model_note(left_out))
    return usable


def fmt(value, digits: int = 3) -> str:
    """A number for people: ``0.123``, or ``n/a`` for None/NaN."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.{digits}f}"


# ----------------------------------------------------------------------------- pickers
def _copy_key(src: str, dst: str) -> None:
    st.session_state[dst] = st.session_state[src]


def mirrored(key: str, truth_key: str, value: Any = None) -> dict:
    """Keyword arguments of a widget whose value lives in the plain key ``truth_key``.

    The widget key is filled from ``truth_key`` (or ``value``, when given: the truth
    adjusted to this run's options) before the widget is drawn, and a change of the widget
    is copied back by its ``on_change``. Streamlit forgets a widget that a run did not draw
    (another page, a run stopped before it), and one drawn again on a value it kept comes
    back empty in the browser; filled every run, the widget always shows the truth.
    """
    st.session_state[key] = st.session_state[truth_key] if value is None else value
    return {"key": key, "on_change": _copy_key, "args": (key, truth_key)}


def kept(key: str, default: Any) -> dict:
    """:func:`mirrored` on a truth of the widget's own (``default`` until first changed),
    for a widget that no other page reads (the home page's dataset inputs)."""
    truth = f"{S.KEPT}.{key}"
    st.session_state.setdefault(truth, default)
    return mirrored(key, truth)


def synced_selectbox(label: str, options: Sequence, *, key: str, shared_key: str,
                     format_func: Callable = str, help: Optional[str] = None):
    """A selectbox whose value is also the shared selection ``shared_key``.

    It opens on the shared value (set on another page) and writes its own changes back, so
    a click on the Scores chart and a choice on the Saliency page are one selection.
    """
    state = st.session_state
    options = list(options)
    shared = state.get(shared_key)
    if shared in options:
        state[key] = shared
    elif state.get(key) not in options:
        state[key] = options[0]
    value = st.selectbox(label, options, key=key, format_func=format_func, help=help,
                         on_change=_copy_key, args=(key, shared_key))
    state[shared_key] = value
    page_url.publish_url()
    return value


def sim_episodes(frameset) -> list[int]:
    return sorted(int(e) for e in np.unique(frameset.episode[frameset.domain == "sim"]))


def pair_picker(frameset, keys: S.PairKeys, *, episode_box=None,
                step_box=None) -> tuple[int, int]:
    """Pick a sim frame by episode and step; its real partner is the nearest real state.

    Keeps :data:`ui.state.SELECTION_PAIR` (``[sim_index, real_index]``) in sync with the
    page's own widgets (``keys``: :data:`ui.state.SALIENCY_PAIR_KEYS` or
    :data:`ui.state.COMPARE_PAIR_KEYS`).
    """
    state = st.session_state
    episode_box, step_box = episode_box or st, step_box or st
    ep_key, step_key, seen_key = keys.episode, keys.step, keys.seen
    episodes = sim_episodes(frameset)
    shared = state.get(S.SELECTION_PAIR)
    if shared and state.get(seen_key) != shared and 0 <= shared[0] < len(frameset) \
            and frameset.domain[shared[0]] == "sim":
        state[ep_key] = int(frameset.episode[shared[0]])
        state[step_key] = int(frameset.step[shared[0]])
    if state.get(ep_key) not in episodes:
        state[ep_key] = episodes[0]
    episode = episode_box.selectbox("Sim episode", episodes, key=ep_key,
                                    help="Episode of the simulated dataset")
    in_episode = np.flatnonzero((frameset.domain == "sim") & (frameset.episode == episode))
    steps = frameset.step[in_episode]
    lo, hi = int(steps.min()), int(steps.max())
    if state.get(step_key) is None or not lo <= int(state[step_key]) <= hi:
        state[step_key] = (lo + hi) // 2
    step = lo
    if hi > lo:
        step = step_box.slider("Step", lo, hi, key=step_key, help="Time step inside the episode")
    # The frame of that step (the nearest step when the episode skips some).
    sim_idx = int(in_episode[np.argmin(np.abs(steps - int(step)))])
    real_idx = int(data.paired_real(frameset, [sim_idx])[0])
    pair = [sim_idx, real_idx]
    state[S.SELECTION_PAIR] = pair
    state[seen_key] = pair
    return sim_idx, real_idx


def gallery_pairs(frameset, n: int = saliency.GALLERY_PAIRS) -> list[tuple[int, int]]:
    """``n`` sim frames spread over the sim set, each with its paired real frame."""
    sims = frameset.indices("sim")
    picks = sims[np.unique(np.linspace(0, sims.size - 1, n + 2).astype(int)[1:-1])]
    reals = data.paired_real(frameset, picks)
    return [(int(s), int(r)) for s, r in zip(picks, reals)]


def frame_caption(frameset, index: int) -> str:
    return (f"{frameset.domain[index]} · episode {int(frameset.episode[index])} · "
            f"step {int(frameset.step[index])}")


# ----------------------------------------------------------------------------- saliency
def focus_text(heatmap: np.ndarray, mask: Optional[np.ndarray], constant: bool) -> str:
    """``focus 0.42 (1.8x chance)`` for a map and its task mask (or why there is none)."""
    from s2r.saliency import focus_score

    if constant:
        return "flat map (no saliency)"
    if mask is None:
        return "focus n/a (no task mask in this dataset)"
    f = focus_score(heatmap, mask)
    return f"focus {fmt(f.focus, 2)} ({fmt(f.lift, 1)}x chance)"


def agreement(map_a: np.ndarray, map_b: np.ndarray) -> float:
    from s2r.saliency import map_agreement

    return map_agreement(map_a, map_b)


def saliency_pair_row(frameset, encoder_id: str, sim_idx: int, real_idx: int, *,
                      method: str, target: str = "embedding", action_dim: int = 0,
                      show_frames: bool = True) -> float:
    """One sim/real pair side by side (frames and overlays) with focus and agreement.

    Returns the sim/real agreement (Spearman of the two maps; NaN for flat maps).
    """
    idx = [sim_idx, real_idx]
    maps, constant = saliency.pair_maps(frameset, encoder_id, sim_idx, real_idx, method=method,
                                        target=target, action_dim=action_dim)
    imgs = data.frames(frameset, idx)
    msk = data.masks(frameset, idx)
    cols = st.columns(4 if show_frames else 2)
    for j, domain in enumerate(("sim", "real")):
        numbers = focus_text(maps[j], None if msk is None else msk[j], bool(constant[j]))
        if show_frames:
            cols[2 * j].image(imgs[j], caption=frame_caption(frameset, idx[j]), width="stretch")
            cols[2 * j + 1].image(saliency.overlay(imgs[j], maps[j]),
                                  caption=f"{domain} saliency · {numbers}", width="stretch")
        else:
            cols[j].image(saliency.overlay(imgs[j], maps[j]),
                          caption=f"{frame_caption(frameset, idx[j])} · {numbers}",
                          width="stretch")
    return agreement(maps[0], maps[1])


def method_picker(encoder_id: str, key: str) -> str:
    """Saliency method select box (Grad-CAM is offered only where the encoder has a layer)."""
    from s2r.options import METHODS

    labels = {"gradcam": "Grad-CAM", "ig": "Integrated gradients", "occlusion": "Occlusion"}
    options = [m for m in METHODS
               if m != "gradcam" or saliency.default_method(encoder_id) == "gradcam"]
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]
    return st.selectbox("Method", options, key=key, format_func=lambda m: labels.get(m, m),
                        help="Grad-CAM reads the registry's Grad-CAM layer; integrated "
                             "gradients and occlusion work for every encoder (slower).")
