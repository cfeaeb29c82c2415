"""t-SNE maps (disk-cached by the library, kept in memory here); the page draws them with
:mod:`ui.projection_map`.

A map is computed by :func:`computation` (a closure the live t-SNE runs in its worker thread,
:mod:`ui.live_tsne`) and kept in a per-process store once finished (:func:`stored`,
:func:`remember`); the pages ask through :func:`ui.live_tsne.live_projection`.
"""

from __future__ import annotations

from typing import Callable, Optional

import streamlit as st

from ui.loaders.data import cache_at, cache_root
from ui.loaders.encoders import embedder, precision

#: Frames per domain a map is fitted on and draws when the page is not asked for every frame
#: (the map is the stratified sample; the mixing number still uses every frame).
MAP_PER_DOMAIN = 2500
#: Projections kept in memory per server process (each is a few MB at 50,000 frames).
_PROJECTIONS_KEPT = 32
#: openTSNE's schedule the dashboard asks for (the library's defaults, so the cache key is
#: the same as ``python -m s2r project``'s): early-exaggeration iterations, then at most
#: this many normal ones (the KL early stop usually ends them sooner).
EARLY_ITER, MAX_ITER = 250, 750


@st.cache_resource(show_spinner=False)
def _projections(root: str) -> dict:
    """The in-process store of finished Projection objects for one cache root.

    A plain dict behind ``st.cache_resource`` rather than ``st.cache_resource`` on the
    computation: Streamlit would replay a computation's progress-bar updates on a later cache
    hit into a block that no longer exists.
    """
    return {}


def map_key(frameset, encoder_id: str, mode: str, perplexity: float,
            max_per_domain: Optional[int]) -> tuple:
    """What identifies a map in this process: dataset, encoder, mode, perplexity, the
    session's embedding precision, frames per domain (None: every frame)."""
    return (frameset.fingerprint, encoder_id, mode, float(perplexity), precision(),
            max_per_domain)


def stored(key: tuple):
    """The finished map of ``key`` if this process has it, else None."""
    return _projections(cache_root()).get(key)


def remember(key: tuple, proj) -> None:
    """Keep a finished (converged) map in the store, dropping the oldest beyond a bound."""
    store = _projections(cache_root())
    while len(store) >= _PROJECTIONS_KEPT:
        store.pop(next(iter(store)))
    store[key] = proj


def computation(frameset, encoder_id: str, key: tuple) -> Callable:
    """``compute(on_snapshot, progress) -> Projection`` for the map of ``key``
    (:func:`s2r.pipeline.project_frameset`: disk-cached, a stopped map never cached).

    The encoder, the cache handle and the precision are read here, in the script's thread:
    the closure runs in a worker thread, where Streamlit's caches and session are not.
    """
    from s2r.pipeline import project_frameset

    model, cache = embedder(encoder_id), cache_at(cache_root())
    _, _, mode, perplexity, prec, max_per_domain = key

    def compute(on_snapshot, progress):
        return project_frameset(frameset, model, cache=cache, mode=mode, perplexity=perplexity,
                                precision=prec, max_per_domain=max_per_domain,
                                early_exaggeration_iter=EARLY_ITER, n_iter=MAX_ITER,
                                progress=progress, on_snapshot=on_snapshot)

    return compute
