"""The disk cache, datasets and their frames (cached per server process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import streamlit as st

from s2r.settings import current
from ui.state import Spec, spec_key


def cache_root() -> str:
    """Absolute path of the disk cache (``$S2R_CACHE_DIR`` or ``./cache``)."""
    return str(Path(current().cache_dir).resolve())


@st.cache_resource(max_entries=4, show_spinner=False)
def cache_at(root: str):
    """The :class:`s2r.cache.Cache` of the folder ``root`` (one handle per root)."""
    from s2r.cache import Cache

    return Cache(root)


def get_cache():
    """The :class:`s2r.cache.Cache` of the current cache root (one handle per root)."""
    return cache_at(cache_root())


def _spec(key: str) -> Spec:
    return json.loads(key) if key.startswith("[") else key


@st.cache_resource(max_entries=3, show_spinner=False)
def _frameset(key: str, image_key: Optional[str], action_key: Optional[str],
              state_key: Optional[str], stamp: bytes):
    from s2r.datasets import load_dataset

    return load_dataset(_spec(key), image_key=image_key, action_key=action_key,
                        state_key=state_key, settings=current())


@st.cache_data(ttl=2, max_entries=8, show_spinner=False)
def _stamp(key: str) -> bytes:
    from s2r.datasets import storage_identity

    return storage_identity(_spec(key), settings=current())


def load_frameset(spec: Spec, keys: Optional[dict] = None):
    """The FrameSet of a dataset spec, loaded once per server process and loaded again when
    its files change on disk (checked at most every 2 s by
    :func:`s2r.datasets.storage_identity`), so no page shows numbers of an edited dataset's
    old frames.

    Raises
    ------
    s2r.errors.S2RError
        When the spec names nothing loadable (the message says what and why).
    """
    keys = keys or {}
    key = spec_key(spec)
    return _frameset(key, keys.get("image_key") or None, keys.get("action_key") or None,
                     keys.get("state_key") or None, _stamp(key))


@st.cache_resource(max_entries=3, show_spinner=False)
def _pairer(fingerprint: str, _frameset):
    from s2r.pairing import FramePairer

    return FramePairer(_frameset)


def paired_real(frameset, sim_indices: Sequence[int]) -> np.ndarray:
    """FrameSet index of the real frame paired with each sim frame (nearest state)."""
    return _pairer(frameset.fingerprint, frameset).query(np.asarray(sim_indices, dtype=np.int64))


@st.cache_data(max_entries=256, show_spinner=False)
def _frames(fingerprint: str, indices: tuple, _frameset) -> np.ndarray:
    return _frameset.read_images(np.asarray(indices, dtype=np.int64))


def frames(frameset, indices: Sequence[int]) -> np.ndarray:
    """uint8 frames ``(n, H, W, 3)`` (cached per dataset and indices)."""
    return _frames(frameset.fingerprint, tuple(int(i) for i in indices), frameset)


def masks(frameset, indices: Sequence[int]) -> Optional[np.ndarray]:
    """Task-relevant masks ``(n, H, W)`` or None when the dataset has none."""
    if not frameset.has_masks:
        return None
    return frameset.read_masks(np.asarray(list(indices), dtype=np.int64))
