"""t-SNE maps (disk-cached by the library, kept in memory here) and their WebGL decks."""

from __future__ import annotations

from typing import Optional

import streamlit as st

from ui.loaders.data import cache_at, cache_root
from ui.loaders.encoders import embedder, precision

#: Frames per domain a map is fitted on and draws when the page is not asked for every frame
#: (the map is the stratified sample; the mixing number still uses every frame).
MAP_PER_DOMAIN = 2500
#: Projections kept in memory per server process (each is a few MB at 50,000 frames).
_PROJECTIONS_KEPT = 32


@st.cache_resource(show_spinner=False)
def _projections(root: str) -> dict:
    """The in-process store of Projection objects read or computed for one cache root."""
    return {}


def projection(frameset, encoder_id: str, *, mode: str = "joint", perplexity: float = 30.0,
               max_per_domain: Optional[int] = MAP_PER_DOMAIN, progress=None):
    """The t-SNE :class:`s2r.projection.Projection` of one encoder (disk-cached), from
    embeddings at the session's :func:`~ui.loaders.encoders.precision`; fitted on at most
    ``max_per_domain`` frames per domain (stratified by episode; None: every frame).

    Kept in a plain in-process store rather than behind ``st.cache_resource``: the progress
    bar a computation updates belongs to the page that asked, and Streamlit would replay
    those updates on a later cache hit into a block that no longer exists.
    """
    from s2r.pipeline import project_frameset

    root = cache_root()
    store = _projections(root)
    key = (frameset.fingerprint, encoder_id, mode, float(perplexity), precision(),
           max_per_domain)
    if key not in store:
        proj = project_frameset(frameset, embedder(encoder_id), cache=cache_at(root),
                                mode=mode, perplexity=float(perplexity), precision=key[4],
                                max_per_domain=max_per_domain, progress=progress)
        while len(store) >= _PROJECTIONS_KEPT:
            store.pop(next(iter(store)))
        store[key] = proj
    return store[key]


def projection_deck(frameset, proj, key: tuple):
    """The WebGL map of a projection (:func:`ui.projection_map.deck`, built once per key:
    dataset, encoder and the projection's parameters)."""
    from ui import projection_map

    return projection_map.deck((cache_root(), frameset.fingerprint, *key), proj, frameset)
