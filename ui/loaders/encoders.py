"""Built encoders, where they run, their weights' status, and embeddings (cached)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import streamlit as st

from s2r.settings import current
from ui import state as S
from ui.loaders.data import cache_at, cache_root


@st.cache_resource(max_entries=4, show_spinner=False)
def _encoder(encoder_id: str, device: str):
    from s2r.encoders import build_encoder

    return build_encoder(encoder_id, device=device, settings=current())


def device() -> str:
    """The torch device the app computes on (CUDA when available, else CPU)."""
    from s2r.encoders import pick_device

    return str(pick_device())


def precision() -> str:
    """The session's embedding precision for scores and projections (``auto`` or ``int8``;
    saliency always runs the fp32 model)."""
    return str(st.session_state.get(S.PRECISION, "auto"))


def get_encoder(encoder_id: str):
    """A built, frozen encoder (at most 4 kept in memory, least recently used dropped); a
    built-in control not trained yet is announced and trained first (:func:`first_use`)."""
    first_use(encoder_id)
    return _encoder(encoder_id, device())


def first_use(encoder_id: str) -> None:
    """Before ``encoder_id`` is built: when it is a built-in control whose weights are not
    here yet, one ``st.info`` line says it is trained now (measured minutes, where it is
    saved) and a progress bar shows the training
    (:func:`s2r.encoders.first_use.first_use_controls`: a weights folder nothing can be
    saved in raises its one-line :class:`~s2r.errors.EncoderError` first)."""
    import contextlib

    from s2r.encoders.first_use import first_use_controls, train_first_use
    from ui.progress import progress_bar

    items = first_use_controls([encoder_id], settings=current())
    for item in items:
        st.info(f"{item.note[0].upper()}{item.note[1:]}.", icon=":material/model_training:")
    train_first_use(items, settings=current(), progress_for=lambda item: contextlib.nullcontext(
        progress_bar(st.progress(0.0, text=f"training {item.id}"))))


def embedder(encoder_id: str):
    """What the library embeds with: the built encoder (its weights fingerprint keys the
    cache without building the model again), or the id of an encoder without an image model
    (the ``state`` reference: nothing to build)."""
    from s2r.encoders import get_spec

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

    settings = current()
    return bool(mirror(settings)) or (not hub_offline(settings) and _hub_reachable())


def encoder_table(ids: Sequence[str]) -> list[dict]:
    """Registry metadata and weight status of each encoder id, one dict per id."""
    from s2r.encoders import get_spec, status

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


def runtime_plans(ids: Sequence[str]) -> dict:
    """``{id: (runtime, reason)}``: what will run each encoder's embedding pass here, at the
    session's precision (:func:`s2r.encoders.runtime_plan.planned_runtime`; nothing built)."""
    from s2r.encoders import get_spec
    from s2r.encoders.runtime_plan import planned_runtime

    settings = current()
    return {eid: planned_runtime(get_spec(eid, settings=settings), settings, device(),
                                 precision()) for eid in ids}


def offline_encoders() -> list:
    """Encoders that run here without downloading weights (ready ones and the random-init
    controls of every architecture)."""
    from s2r.encoders import list_encoders, status

    settings = current()
    ready = [s.id for s in list_encoders(settings=settings)
             if str(status(s, settings=settings).state) == "ready"]
    randoms = [s.id for s in list_encoders("*@random", include_random=True, settings=settings)]
    return ready + [r for r in randoms if r not in ready]


@st.cache_resource(max_entries=16, show_spinner=False)
def _embeddings(root: str, fingerprint: str, encoder_id: str, _frameset,
                precision: str = "auto"):
    from s2r.embed import embed_frameset

    return embed_frameset(_frameset, embedder(encoder_id), cache=cache_at(root),
                          precision=precision, settings=current())


def embeddings(frameset, encoder_id: str, *, precision: str = "auto") -> np.ndarray:
    """``(N, D) float32`` embeddings (a read-only memory map of the disk cache)."""
    return _embeddings(cache_root(), frameset.fingerprint, encoder_id, frameset, precision)
