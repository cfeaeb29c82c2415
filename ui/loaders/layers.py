"""Layer records of the session's encoders (from the session, the disk cache, or computed on
request) and the saliency maps of a frame pair at one layer (cached)."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import streamlit as st

from s2r.settings import current
from ui import state as S
from ui.loaders.data import cache_at, cache_root, get_cache
from ui.loaders.encoders import get_encoder
from ui.loaders.saliency import model_lock


def _held(frameset) -> dict:
    """``{encoder id: [records] or None (not on disk)}`` of this session and dataset."""
    return st.session_state.setdefault(S.LAYERS_RESULTS, {}).setdefault(frameset.fingerprint,
                                                                           {})


def layer_records(frameset, encoder_ids: Sequence[str]) -> tuple[dict, dict]:
    """``({encoder id: its layer records}, {encoder id: error})`` of ``encoder_ids``, from the
    session, else read from the disk cache (never computed here; a miss is remembered)."""
    from s2r.cache import NotCached, ReadOnlyCache
    from s2r.errors import S2RError
    from s2r.pipeline.layers import score_layers

    held, errors = _held(frameset), {}
    for eid in encoder_ids:
        if eid in held:
            continue
        try:
            held[eid] = score_layers(frameset, eid, "all", cache=ReadOnlyCache(get_cache()),
                                     settings=current())
        except NotCached:
            held[eid] = None
        except S2RError as exc:
            errors[eid] = str(exc)
    return {e: held[e] for e in encoder_ids if held.get(e)}, errors


def compute_layers(frameset, encoder_ids: Sequence[str], progress) -> None:
    """Score every layer of ``encoder_ids`` (one pass each, cached) into the session."""
    from s2r.pipeline.layers import score_encoders_layers

    records = score_encoders_layers(frameset, list(encoder_ids), "all", cache=get_cache(),
                                    progress=progress, settings=current())
    held = _held(frameset)
    for eid in encoder_ids:
        held[eid] = [r for r in records if r["encoder"]["id"] == eid]


@st.cache_data(max_entries=64, show_spinner=False)
def _layer_maps(root: str, fingerprint: str, encoder_id: str, layer: str, sim_index: int,
                real_index: int, method: str, target: str, action_dim: int, _frameset):
    from s2r.encoders.taps import layer_view
    from s2r.pipeline.saliency import explain_pairs, pair_targets

    encoder = get_encoder(encoder_id)
    frames = _frameset.read_images(np.asarray([sim_index, real_index], dtype=np.int64))
    targets = pair_targets(_frameset, encoder, target, sim_indices=[sim_index],
                           real_indices=[real_index], action_dim=action_dim,
                           cache=cache_at(root), settings=current(), layer=layer)
    with model_lock(encoder_id):
        res = explain_pairs(layer_view(encoder, layer), frames[:1], frames[1:], targets,
                            sim_indices=[sim_index], real_indices=[real_index], kind=target,
                            method=method)
    return (np.concatenate([res.sim.maps, res.real.maps]),
            np.concatenate([res.sim.constant, res.real.constant]))


def layer_maps(frameset, encoder_id: str, layer: str, sim_index: int, real_index: int, *,
               method: str, target: str = "embedding",
               action_dim: Optional[int] = 0) -> tuple[np.ndarray, np.ndarray]:
    """Saliency maps ``(2, H, W)`` and constant flags ``(2,)`` of a sim/real pair explained
    *at* ``layer`` (:func:`s2r.pipeline.saliency.pair_targets` and ``explain_pairs`` with the
    encoder seen at that layer, :func:`s2r.encoders.taps.layer_view`: what ``python -m s2r``
    computes for the same layer). Cached per (dataset, encoder, layer, pair, method, target).
    """
    return _layer_maps(cache_root(), frameset.fingerprint, encoder_id, layer, int(sim_index),
                       int(real_index), method, target,
                       int(action_dim or 0) if target == "action" else 0, frameset)
