"""Saliency targets and the maps of frame pairs (cached per pair, target and method)."""

from __future__ import annotations

import threading
from typing import Optional, Sequence

import numpy as np
import streamlit as st

from s2r.settings import current
from ui.loaders.data import cache_root
from ui.loaders.encoders import device, embeddings, get_encoder

#: Frames shown per saliency gallery (Scores page) and sampled on the Saliency page.
GALLERY_PAIRS = 3


def _target_labels() -> dict:
    from s2r.options import TARGET_KINDS

    labels = {
        "embedding": "Embedding (L2 norm, the paper's Grad-CAM)",
        "action": "Action probe: one action dimension (probe fitted on sim frames)",
        "domain": "Domain probe: sim-vs-real logit toward each frame's own domain",
        "pair": "Pair similarity: cosine to the paired frame's embedding",
    }
    # One label per library target kind, in the library's order (a KeyError names a new
    # kind that has no label yet).
    return {kind: labels[kind] for kind in TARGET_KINDS}


#: Saliency targets offered by the pages: key (``s2r.options.TARGET_KINDS``) -> label.
TARGETS = _target_labels()


@st.cache_resource(max_entries=32, show_spinner=False)
def _targets(root: str, fingerprint: str, encoder_id: str, kind: str, action_dim: int,
             pairs: Optional[tuple], _frameset):
    from s2r.saliency import saliency_targets

    # Probes are fitted on fp32 ("auto") embeddings whatever the session's precision: the
    # saliency maps differentiate the fp32 model.
    sim_rows, real_rows = pairs or (None, None)
    return saliency_targets(
        kind, lambda: embeddings(_frameset, encoder_id),
        domain=_frameset.domain, actions=_frameset.actions, episode=_frameset.episode,
        sim_indices=sim_rows, real_indices=real_rows, action_dim=action_dim)


def make_targets(frameset, encoder_id: str, target: str, *, sim_indices: Sequence[int],
                 real_indices: Sequence[int], action_dim: int = 0) -> tuple:
    """The :mod:`s2r.saliency` targets ``(sim target, real target)`` of frame pairs, built by
    :func:`s2r.saliency.saliency_targets` (the function the CLI calls) on the cached
    embeddings.

    Cached per (dataset, encoder, target, action dimension), so the probes are fitted once;
    the pair target (which depends on the frames) is also keyed by the rows of the pairs.
    ``sim_indices[i]`` and ``real_indices[i]`` form pair ``i``.
    """
    pairs = None
    if target == "pair":
        pairs = (tuple(int(i) for i in sim_indices), tuple(int(i) for i in real_indices))
    return _targets(cache_root(), frameset.fingerprint, encoder_id, target,
                    int(action_dim) if target == "action" else 0, pairs, frameset)


def default_method(encoder_id: str) -> str:
    """``"gradcam"`` when the encoder has a Grad-CAM layer, else ``"ig"`` (the pixel baseline)."""
    from s2r.encoders import get_spec

    return "gradcam" if get_spec(encoder_id, settings=current()).cam_layer else "ig"


@st.cache_resource(show_spinner=False)
def _model_lock(encoder_id: str, device: str) -> threading.Lock:
    """One lock per shared model: saliency hooks a layer of the model, so two sessions must
    not run it at the same time."""
    return threading.Lock()


def model_lock(encoder_id: str) -> threading.Lock:
    """The lock to hold while a shared model (:func:`ui.loaders.encoders.get_encoder`) is
    explained."""
    return _model_lock(encoder_id, device())


@st.cache_data(max_entries=128, show_spinner=False)
def _pair_maps(root: str, fingerprint: str, encoder_id: str, sim_index: int, real_index: int,
               method: str, target: str, action_dim: int, _frameset):
    from s2r.pipeline.saliency import explain_pairs

    frames = _frameset.read_images(np.asarray([sim_index, real_index], dtype=np.int64))
    targets = make_targets(_frameset, encoder_id, target, sim_indices=[sim_index],
                           real_indices=[real_index], action_dim=action_dim)
    with model_lock(encoder_id):
        res = explain_pairs(get_encoder(encoder_id), frames[:1], frames[1:], targets,
                            sim_indices=[sim_index], real_indices=[real_index], kind=target,
                            method=method)
    return (np.concatenate([res.sim.maps, res.real.maps]),
            np.concatenate([res.sim.constant, res.real.constant]))


def pair_maps(frameset, encoder_id: str, sim_index: int, real_index: int, *, method: str,
              target: str = "embedding", action_dim: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Saliency maps ``(2, H, W)`` in [0, 1] and constant flags ``(2,)`` of one frame pair:
    row 0 the sim frame, row 1 the real frame, each explained toward its own target
    (:func:`make_targets`; :func:`s2r.pipeline.saliency.explain_pairs`, the step of
    ``python -m s2r saliency``, so the same maps).

    Cached per (dataset, encoder, pair, method, target): changing back to a pair already
    seen is instant.
    """
    return _pair_maps(cache_root(), frameset.fingerprint, encoder_id, int(sim_index),
                      int(real_index), method, target,
                      int(action_dim) if target == "action" else 0, frameset)


def overlay(frame: np.ndarray, heatmap: np.ndarray) -> np.ndarray:
    """Heatmap blended over the frame (``s2r.saliency.overlay``)."""
    from s2r.saliency import overlay as _overlay

    return _overlay(frame, heatmap)
