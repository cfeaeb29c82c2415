"""Cached loaders: the only place the dashboard touches Streamlit's caches.

- Models and datasets (objects that must not be copied) sit behind ``st.cache_resource``
  with a bounded ``max_entries``; they are never mutated after they are built.
- Arrays derived from embeddings (saliency maps, frames) sit behind ``st.cache_data``
  (returns copies), keyed by hashable ids; unhashable objects are passed as ``_arguments``.
- Embeddings, score records and t-SNE maps live in the library's disk cache
  (:class:`s2r.cache.Cache`), so a page reload or a new session never recomputes them.

Every key includes the cache root (``$S2R_CACHE_DIR``) so that two caches (tests, benches)
never see each other's results through Streamlit's in-process caches.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np
import streamlit as st

from ui.state import Spec, spec_key

if TYPE_CHECKING:
    import pandas as pd

#: Frames shown per saliency gallery (Scores page) and sampled on the Saliency page.
GALLERY_PAIRS = 3


def cache_root() -> str:
    """Absolute path of the disk cache (``$S2R_CACHE_DIR`` or ``./cache``)."""
    from s2r.settings import current

    return str(Path(current().cache_dir).resolve())


@st.cache_resource(max_entries=4, show_spinner=False)
def _cache(root: str):
    from s2r.cache import Cache

    return Cache(root)


def get_cache():
    """The :class:`s2r.cache.Cache` of the current cache root (one handle per root)."""
    return _cache(cache_root())


# ----------------------------------------------------------------------------- dataset
def _spec(key: str) -> Spec:
    return json.loads(key) if key.startswith("[") else key


@st.cache_resource(max_entries=3, show_spinner=False)
def _frameset(key: str, image_key: Optional[str], action_key: Optional[str],
              state_key: Optional[str], stamp: bytes):
    from s2r.datasets import load_dataset
    from s2r.settings import current

    return load_dataset(_spec(key), image_key=image_key, action_key=action_key,
                        state_key=state_key, settings=current())


@st.cache_data(ttl=2, max_entries=8, show_spinner=False)
def _stamp(key: str) -> bytes:
    from s2r.datasets import storage_identity
    from s2r.settings import current

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


# ----------------------------------------------------------------------------- encoders
@st.cache_resource(max_entries=4, show_spinner=False)
def _encoder(encoder_id: str, device: str):
    from s2r.encoders import build_encoder
    from s2r.settings import current

    return build_encoder(encoder_id, device=device, settings=current())


def device() -> str:
    """The torch device the app computes on (CUDA when available, else CPU)."""
    from s2r.encoders import pick_device

    return str(pick_device())


def precision() -> str:
    """The session's embedding precision for scores and projections (``auto`` or ``int8``;
    saliency always runs the fp32 model)."""
    from ui import state as S

    return str(st.session_state.get(S.PRECISION, "auto"))


def get_encoder(encoder_id: str):
    """A built, frozen encoder (at most 4 kept in memory, least recently used dropped)."""
    return _encoder(encoder_id, device())


def embedder(encoder_id: str):
    """What the library embeds with: the built encoder (its weights fingerprint keys the
    cache without building the model again), or the id of an encoder without an image model
    (the ``state`` reference: nothing to build)."""
    from s2r.encoders import get_spec
    from s2r.settings import current

    image_model = get_spec(encoder_id, settings=current()).has_image_model
    return get_encoder(encoder_id) if image_model else encoder_id


@st.cache_data(ttl=60, show_spinner=False)
def _hub_reachable() -> bool:
    from s2r.encoders.locate import hub_reachable

    return hub_reachable(timeout=2.0)


def downloads_possible() -> bool:
    """Whether weights can be downloaded from here: a mirror is set
    (``$S2R_WEIGHTS_MIRROR``) or the model hub answers (checked at most once a minute)."""
    from s2r.encoders.fetch import mirror
    from s2r.encoders.locate import hub_offline
    from s2r.settings import current

    settings = current()
    return bool(mirror(settings)) or (not hub_offline(settings) and _hub_reachable())


def encoder_table(ids: Sequence[str]) -> list[dict]:
    """Registry metadata and weight status of each encoder id, one dict per id."""
    from s2r.encoders import get_spec, status
    from s2r.settings import current

    settings = current()
    rows = []
    for eid in ids:
        spec = get_spec(eid, settings=settings)
        st_ = status(spec, settings=settings)
        rows.append({"encoder": spec.id, "name": spec.name, "table_number": spec.table_number,
                     "architecture": spec.architecture, "pretraining_group": spec.pretraining_group,
                     "pretraining_data": spec.pretraining_data, "params_m": spec.params_m,
                     "dim": spec.dim, "status": st_.state, "message": st_.message,
                     "file": st_.file, "url": st_.url})
    return rows


# ----------------------------------------------------------------------------- embeddings
@st.cache_resource(max_entries=16, show_spinner=False)
def _embeddings(root: str, fingerprint: str, encoder_id: str, _frameset,
                precision: str = "auto"):
    from s2r.embed import embed_frameset
    from s2r.settings import current

    return embed_frameset(_frameset, embedder(encoder_id), cache=_cache(root),
                          precision=precision, settings=current())


def embeddings(frameset, encoder_id: str, *, precision: str = "auto") -> np.ndarray:
    """``(N, D) float32`` embeddings (a read-only memory map of the disk cache)."""
    return _embeddings(cache_root(), frameset.fingerprint, encoder_id, frameset, precision)


# ----------------------------------------------------------------------------- targets
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
        kind, lambda: _embeddings(root, fingerprint, encoder_id, _frameset),
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
    from s2r.settings import current

    return "gradcam" if get_spec(encoder_id, settings=current()).cam_layer else "ig"


@st.cache_resource(show_spinner=False)
def _model_lock(encoder_id: str, device: str) -> threading.Lock:
    """One lock per shared model: saliency hooks a layer of the model, so two sessions must
    not run it at the same time."""
    return threading.Lock()


@st.cache_data(max_entries=128, show_spinner=False)
def _saliency(root: str, fingerprint: str, encoder_id: str, sim_index: int, real_index: int,
              method: str, target: str, action_dim: int, _frameset):
    from s2r.saliency import pair_maps

    encoder = get_encoder(encoder_id)
    frames = _frameset.read_images(np.asarray([sim_index, real_index], dtype=np.int64))
    targets = make_targets(_frameset, encoder_id, target, sim_indices=[sim_index],
                           real_indices=[real_index], action_dim=action_dim)
    with _model_lock(encoder_id, device()):
        sim, real = pair_maps(encoder, frames[:1], frames[1:], targets, method=method)
    return (np.concatenate([sim.maps, real.maps]),
            np.concatenate([sim.constant, real.constant]))


def saliency(frameset, encoder_id: str, sim_index: int, real_index: int, *, method: str,
             target: str = "embedding", action_dim: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Saliency maps ``(2, H, W)`` in [0, 1] and constant flags ``(2,)`` of one frame pair:
    row 0 the sim frame, row 1 the real frame, each explained toward its own target
    (:func:`make_targets`; the same maps as ``python -m s2r saliency``).

    Cached per (dataset, encoder, pair, method, target): changing back to a pair already
    seen is instant.
    """
    return _saliency(cache_root(), frameset.fingerprint, encoder_id, int(sim_index),
                     int(real_index), method, target,
                     int(action_dim) if target == "action" else 0, frameset)


def overlay(frame: np.ndarray, heatmap: np.ndarray) -> np.ndarray:
    """Heatmap blended over the frame (``s2r.saliency.overlay``)."""
    from s2r.saliency import overlay as _overlay

    return _overlay(frame, heatmap)


# ----------------------------------------------------------------------------- projection
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
    embeddings at the session's :func:`precision`; fitted on at most ``max_per_domain``
    frames per domain (stratified by episode; None: every frame).

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
        proj = project_frameset(frameset, embedder(encoder_id), cache=_cache(root), mode=mode,
                                perplexity=float(perplexity), precision=key[4],
                                max_per_domain=max_per_domain, progress=progress)
        while len(store) >= _PROJECTIONS_KEPT:
            store.pop(next(iter(store)))
        store[key] = proj
    return store[key]


def projection_frame(frameset, proj) -> "pd.DataFrame":
    """Projection points with their episode and step (for the chart)."""
    df = proj.to_frame()
    df["episode"] = frameset.episode[df["index"].to_numpy()]
    df["step"] = frameset.step[df["index"].to_numpy()]
    return df


def projection_deck(frameset, proj, key: tuple):
    """The WebGL map of a projection (:func:`ui.projection_map.deck`, built once per key:
    dataset, encoder and the projection's parameters)."""
    from ui import projection_map

    return projection_map.deck((cache_root(), frameset.fingerprint, *key), proj, frameset)


# ----------------------------------------------------------------------------- frames
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


#: Bootstrap replicates of the Validation page's correlations.
VALIDATION_N_BOOT = 1000


@st.cache_data(max_entries=8, show_spinner="Reading the validation results...")
def _validation_report(root: str, spec: str, ids: tuple, gaps: tuple, params: dict) -> dict:
    from s2r.closedloop.encoder_rollouts import RolloutParams
    from s2r.closedloop.validation import validate
    from s2r.cache import ReadOnlyCache

    return validate(spec, list(ids), list(gaps), params=RolloutParams(**params),
                    cache=ReadOnlyCache(_cache(root)), device=device(), n_boot=VALIDATION_N_BOOT)


def validation_report(spec: str, ids: tuple, gaps: tuple, params: dict) -> dict:
    """The validation report read from the disk cache (computing nothing, so the bootstrap
    of the correlations runs once per settings, not on every rerun); raises
    :class:`s2r.cache.NotCached` when part of it is not on disk (a miss is not memoised)."""
    return _validation_report(cache_root(), spec, ids, gaps, params)


def run_validation(spec: str, ids: tuple, gaps: tuple, params: dict, progress=None) -> dict:
    """Compute what the validation report needs into the disk cache (the page's "Run
    validation" button), then the report as :func:`validation_report` reads it."""
    from s2r.closedloop.encoder_rollouts import RolloutParams
    from s2r.closedloop.validation import validate

    validate(spec, list(ids), list(gaps), params=RolloutParams(**params), cache=get_cache(),
             device=device(), n_boot=VALIDATION_N_BOOT, progress=progress)
    return validation_report(spec, ids, gaps, params)


def _rollout_record(root: str, encoder_id: str, params: dict, gap: float) -> dict:
    from s2r.closedloop.encoder_rollouts import RolloutParams, rollout_key
    from s2r.settings import current

    key = rollout_key(encoder_id, RolloutParams(**params).validate(), "real", gap, current())
    return (_cache(root).get_json(key, {}) or {}).get("record", {})


@st.cache_data(max_entries=16, show_spinner=False)
def _rollout(root: str, encoder_id: str, params: dict, gap: float):
    from s2r.closedloop.encoder_rollouts import RolloutParams, recorded_rollout
    from s2r.settings import current

    frames = recorded_rollout(encoder_id, RolloutParams(**params), "real", gap, _cache(root),
                              current())
    actions = _rollout_record(root, encoder_id, params, gap).get("actions", [])
    return (None if frames is None else np.asarray(frames)), actions


def recorded_rollout(encoder_id: str, params: dict, gap: float):
    """``(frames (T, H, W, 3) uint8 or None, actions (list of 10-vectors))`` of the recorded
    real-look rollout 0 of ``encoder_id`` at ``gap``, read from the disk cache once."""
    return _rollout(cache_root(), encoder_id, params, float(gap))


@st.cache_data(max_entries=32, show_spinner=False)
def _rollout_saliency(root: str, encoder_id: str, params: dict, gap: float, step: int,
                      method: str) -> dict:
    from s2r.closedloop.rollout import render_rollout_frame
    from s2r.saliency import overlay, saliency_maps, sim_real_agreement

    record = _rollout_record(root, encoder_id, params, gap)
    frames, _ = _rollout(root, encoder_id, params, gap)
    real = np.asarray(frames[step])
    sim = render_rollout_frame(record["states"][step], k=record["index"], look="sim",
                               seed=params["seed"], height=params["height"],
                               width=params["width"], step=step)
    maps = saliency_maps(get_encoder(encoder_id), np.stack([sim, real]), method=method)
    return {"sim_overlay": overlay(sim, maps[0]), "real_overlay": overlay(real, maps[1]),
            "agreement": sim_real_agreement(maps[0], maps[1]), "method": method}


def rollout_saliency(encoder_id: str, params: dict, gap: float, step: int, *,
                     method: str) -> dict:
    """Saliency of the recorded real-look frame ``step`` and of the same state rendered in
    the sim look: overlays and their agreement (the Saliency page's measures); computed once
    per frame and method."""
    return _rollout_saliency(cache_root(), encoder_id, params, float(gap), int(step), method)


#: Bootstrap replicates of the correlations with your robot's results.
REAL_RESULTS_N_BOOT = 1000


@st.cache_data(max_entries=16, show_spinner="Correlating your results with the scores...")
def _real_results(data: bytes, name: str, fingerprint: str, found: tuple, _records: dict):
    from s2r.pipeline.real_results import read_real_results, real_results_report

    return real_results_report(read_real_results(data, name=name), _records,
                               n_boot=REAL_RESULTS_N_BOOT)


def real_results(data: bytes, name: str, frameset, records: dict) -> dict:
    """:func:`s2r.pipeline.real_results.real_results_report` of an uploaded table against
    ``records`` (the dataset's computed scores), once per table, dataset and set of scored
    encoders (the bootstrap is not rerun on every widget change)."""
    return _real_results(data, name, frameset.fingerprint, tuple(records), records)
