"""Embedding + scoring glue of the home page, and the cache look-up every page uses.

The numbers all come from :func:`s2r.pipeline.score_encoder`; this module only decides
*whether* to compute (never twice: the disk cache answers first) and routes progress to
Streamlit widgets through the library's :data:`s2r.progress.ProgressCallback`.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from s2r.cache import NotCached, ReadOnlyCache
from s2r.errors import S2RError
from ui import state as S


def cached_record(frameset, encoder_id: str, cache, *, precision: str = "auto",
                  object_focus: bool = False) -> Optional[dict]:
    """The score record of ``encoder_id`` on ``frameset`` if it is on disk, else None; with
    ``object_focus``, only if its object focus is on disk too (or cannot be computed: then the
    record says why).

    Never embeds, scores, builds the encoder or downloads: the weights fingerprint in the key
    is the hash of the weights file if it is here, else "missing" (a miss).
    """
    from s2r.pipeline import score_encoder

    try:
        return score_encoder(frameset, encoder_id, cache=ReadOnlyCache(cache), precision=precision,
                             object_focus=object_focus)
    except NotCached:
        return None


def stored_record(frameset, encoder_id: str, cache, *, precision: str = "auto"
                  ) -> Optional[dict]:
    """The record on disk with its object focus where that is on disk too, else the plain
    record, else None (nothing is computed: :func:`cached_record`)."""
    record = cached_record(frameset, encoder_id, cache, precision=precision, object_focus=True)
    if record is None and frameset.has_masks:   # without masks the first read says it all
        record = cached_record(frameset, encoder_id, cache, precision=precision)
    return record


def score_one(frameset, encoder_id: str, cache, *, precision: str = "auto",
              progress: Optional[Callable[[int, int, str], None]] = None,
              object_focus: bool = False) -> dict:
    """Embed and score one encoder (cache first); the record of ``score_encoder``. Its object
    focus is computed with ``object_focus``, else read back where the disk holds it."""
    from s2r.pipeline import score_encoder

    record = score_encoder(frameset, encoder_id, cache=cache, precision=precision,
                           progress=progress, object_focus=object_focus)
    if object_focus or not frameset.has_masks:
        return record
    return cached_record(frameset, encoder_id, cache, precision=precision,
                         object_focus=True) or record


def focus_todo(frameset, records: dict) -> list[str]:
    """The ids of ``records`` whose object focus can be computed on ``frameset`` and is not
    (:func:`s2r.pipeline.object_focus.focus_unavailable`: masks, a Grad-CAM layer)."""
    from s2r.pipeline.object_focus import focus_unavailable
    from s2r.settings import current

    if not frameset.has_masks:
        return []
    settings = current()
    return [eid for eid, rec in records.items() if rec.get("object_focus") is None
            and focus_unavailable(frameset, eid, settings=settings) is None]


def results_key(fingerprint: str, precision: str = "auto") -> str:
    """Session key of the records of one dataset at one embedding precision."""
    return fingerprint if precision == "auto" else f"{fingerprint}+{precision}"


def int8_notes(frameset, records: dict, cache) -> list[str]:
    """Why encoders that offer int8 were computed exactly in an int8 session: one sentence
    per encoder, from the cached fidelity check (:func:`s2r.embed.int8_check`)."""
    from s2r.embed import int8_check
    from s2r.encoders import get_spec
    from s2r.settings import current

    settings = current()
    notes = []
    for eid, rec in records.items():
        if rec.get("precision") == "int8" or not get_spec(eid, settings=settings).int8:
            continue
        try:
            check = int8_check(frameset, eid, cache=ReadOnlyCache(cache), settings=settings)
        except NotCached:
            continue
        notes.append(f"{eid}: int8 would be off by {check['error']:.0%} of the spread of the "
                     f"embeddings (limit {check['limit']:.0%}), so it was computed exactly")
    return notes


def session_records(state, fingerprint: str, precision: Optional[str] = None) -> dict:
    """``{encoder_id: record}`` held by this session for the dataset ``fingerprint`` at
    ``precision`` (default: the session's :data:`ui.state.PRECISION`), in
    :data:`ui.state.RESULTS`."""
    precision = precision or state.get(S.PRECISION, "auto")
    return state.setdefault(S.RESULTS, {}).setdefault(results_key(fingerprint, precision), {})


def lookup_records(state, frameset, encoder_ids: Sequence[str], cache) -> tuple[dict, dict]:
    """Records of ``encoder_ids`` from the session, else from the disk cache (no compute;
    with the object focus where the disk holds it: :func:`stored_record`).

    Each id is looked up on disk at most once per session and dataset (a look-up builds the
    encoder to read its weights fingerprint): a miss is remembered, so later reruns of a page
    cost nothing; an encoder computed later on the home page is in the session anyway.

    Returns
    -------
    records : dict
        ``{encoder_id: record}`` in the order of ``encoder_ids`` (found ones only).
    errors : dict
        ``{encoder_id: message}`` for ids the library rejected (unknown id, bad weights...).
    """
    precision = state.get(S.PRECISION, "auto")
    held = session_records(state, frameset.fingerprint, precision)
    misses = state.setdefault(S.MISSES, {}).setdefault(
        results_key(frameset.fingerprint, precision), {})
    records, errors = {}, {}
    for eid in encoder_ids:
        if eid not in held and eid not in misses:
            try:
                rec = stored_record(frameset, eid, cache, precision=precision)
            except S2RError as exc:
                rec, misses[eid] = None, str(exc)
            if rec is None:
                misses.setdefault(eid, "")
            else:
                held[eid] = rec
        if eid in held:
            records[eid] = held[eid]
        elif misses.get(eid):
            errors[eid] = misses[eid]
    return records, errors


def records_file(records: Sequence[dict], suffix: str) -> bytes:
    """Records as the bytes of a leaderboard file (``.csv`` or ``.json``), written by
    :func:`s2r.leaderboard.write_records` -- the CLI's format, so downloads can be
    merged with ``python -m s2r score`` results."""
    import tempfile
    from pathlib import Path

    from s2r.leaderboard import write_records

    with tempfile.TemporaryDirectory() as tmp:
        path = write_records(list(records), Path(tmp) / f"s2r_scores{suffix}")
        return Path(path).read_bytes()
