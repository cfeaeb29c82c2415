"""The Validation page's reads: the report (read from the disk cache, computed on request),
the recorded rollouts and their saliency, and your robot's results against the scores."""

from __future__ import annotations

import numpy as np
import streamlit as st

from s2r.settings import current
from ui.loaders.data import cache_at, cache_root, get_cache
from ui.loaders.encoders import device, get_encoder
from ui.loaders.saliency import model_lock

#: Bootstrap replicates of the Validation page's correlations.
VALIDATION_N_BOOT = 1000
#: Bootstrap replicates of the correlations with your robot's results.
REAL_RESULTS_N_BOOT = 1000


@st.cache_data(max_entries=8, show_spinner="Reading the validation results...")
def _validation_report(root: str, spec: str, ids: tuple, gaps: tuple, params: dict):
    from s2r.cache import ReadOnlyCache
    from s2r.closedloop.encoder_rollouts import RolloutParams
    from s2r.closedloop.validation import validate

    return validate(spec, list(ids), list(gaps), params=RolloutParams(**params),
                    cache=ReadOnlyCache(cache_at(root)), device=device(),
                    n_boot=VALIDATION_N_BOOT)


def first_use(ids: tuple) -> list:
    """The built-in ``simcnn`` controls of ``ids`` a run would train first
    (:class:`s2r.encoders.first_use.FirstUse`: id, measured minutes, where it is saved);
    raises the one-line :class:`~s2r.errors.EncoderError` of a weights folder nothing can be
    saved in, before anything runs."""
    from s2r.encoders.first_use import first_use_controls

    return first_use_controls(ids, settings=current())


def validation_report(spec: str, ids: tuple, gaps: tuple, params: dict):
    """The :class:`s2r.closedloop.ValidationReport` read from the disk cache (computing
    nothing, so the bootstrap of the correlations runs once per settings, not on every
    rerun); raises :class:`s2r.cache.NotCached` when part of it is not on disk (a miss is
    not memoised), or when a selected control is not trained yet (no report can hold it;
    ``validate`` would train it, minutes of CPU, behind a page that only reads)."""
    return _validation_report(cache_root(), spec, ids, gaps, params)


def run_validation(spec: str, ids: tuple, gaps: tuple, params: dict, progress=None):
    """Compute what the validation report needs into the disk cache (the page's "Run
    validation" button), then the report as :func:`validation_report` reads it."""
    from s2r.closedloop.encoder_rollouts import RolloutParams
    from s2r.closedloop.validation import validate

    validate(spec, list(ids), list(gaps), params=RolloutParams(**params), cache=get_cache(),
             device=device(), n_boot=VALIDATION_N_BOOT, progress=progress)
    return validation_report(spec, ids, gaps, params)


@st.cache_data(max_entries=16, show_spinner=False)
def _rollout(root: str, spec: str, encoder_id: str, params: dict, gap: float):
    from s2r.closedloop.encoder_rollouts import RolloutParams, recorded_rollout, rollout_key

    params = RolloutParams(**params)
    frames = recorded_rollout(encoder_id, params, "real", gap, cache_at(root), spec=spec,
                              settings=current())
    key = rollout_key(encoder_id, params, "real", gap, spec=spec, settings=current())
    actions = ((cache_at(root).get_json(key, {}) or {}).get("record") or {}).get("actions", [])
    return (None if frames is None else np.asarray(frames)), actions


def recorded_rollout(spec: str, encoder_id: str, params: dict, gap: float):
    """``(frames (T, H, W, 3) uint8 or None, actions (list of action vectors))`` of the
    recorded real-look rollout 0 of ``encoder_id`` at ``gap`` in the world of ``spec``, read
    from the disk cache once."""
    return _rollout(cache_root(), spec, encoder_id, params, float(gap))


@st.cache_data(max_entries=64, show_spinner=False)
def _sim_look_frame(root: str, spec: str, encoder_id: str, params: dict, gap: float,
                    step: int) -> np.ndarray:
    from s2r.closedloop.encoder_rollouts import RolloutParams
    from s2r.pipeline import rollout_step_frames

    return rollout_step_frames(encoder_id, spec, RolloutParams(**params), gap, step,
                               cache=cache_at(root), settings=current())[1]


def sim_look_frame(spec: str, encoder_id: str, params: dict, gap: float, step: int
                   ) -> np.ndarray:
    """The state of step ``step`` of the recorded real-look rollout drawn in the sim look
    (:func:`s2r.pipeline.rollout_step_frames`), ``(H, W, 3) uint8``; rendered once per
    step."""
    return _sim_look_frame(cache_root(), spec, encoder_id, params, float(gap), int(step))


@st.cache_data(max_entries=32, show_spinner=False)
def _rollout_saliency(root: str, spec: str, encoder_id: str, params: dict, gap: float,
                      step: int, method: str) -> dict:
    from s2r.closedloop.encoder_rollouts import RolloutParams
    from s2r.pipeline import rollout_saliency as explain
    from s2r.saliency import overlay

    with model_lock(encoder_id):
        res = explain(get_encoder(encoder_id), spec, RolloutParams(**params), gap, step,
                      method=method, cache=cache_at(root), settings=current())
    return {"sim_overlay": overlay(res.sim_frames[0], res.sim.maps[0]),
            "real_overlay": overlay(res.real_frames[0], res.real.maps[0]),
            "agreement": res.measures()[0]["agreement"], "method": method}


def rollout_saliency(spec: str, encoder_id: str, params: dict, gap: float, step: int, *,
                     method: str) -> dict:
    """Saliency of the recorded real-look frame ``step`` and of the same state rendered in
    the sim look (:func:`s2r.pipeline.rollout_saliency`): overlays and their agreement (the
    Saliency page's measures); computed once per frame and method."""
    return _rollout_saliency(cache_root(), spec, encoder_id, params, float(gap), int(step),
                             method)


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
