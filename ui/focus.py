"""The Scores page's object-focus control: the score costs a Grad-CAM pass per encoder, so it
is computed when the user asks (never on a first visit, whatever ``$S2R_AUTOCOMPUTE`` says),
through :func:`s2r.pipeline.score_encoder` with ``object_focus=True`` and the page's cache;
later visits read it back from the disk (:func:`ui.compute.stored_record`)."""

from __future__ import annotations

from typing import MutableMapping

import streamlit as st

from s2r.errors import S2RError
from ui import compute, widgets
from ui import state as S

#: Said under the table when the dataset has no task-object masks (the score needs them).
NO_MASKS = ("Object focus needs task-object masks: the demo world has them, Meta-World with "
            "`masks=true`; this dataset has none.")


def button_label() -> str:
    """The control's label: what one press costs."""
    from s2r.pipeline.object_focus import MAX_FOCUS_FRAMES

    return (f"Compute object focus (Grad-CAM of {MAX_FOCUS_FRAMES} real frames an encoder, "
            "~5 s each on a CPU)")


def focus_control(state: MutableMapping, frameset, records: dict, cache) -> bool:
    """The button that computes the object focus of the shown encoders that can have one and
    have none yet, with a progress bar; each record is replaced in ``records`` and in the
    session's records. Returns whether any record changed (the table is then drawn anew).

    Without masks, one caption says why there is no such score; once every encoder has its
    focus (or cannot have one), nothing is drawn.
    """
    if not frameset.has_masks:
        st.caption(NO_MASKS)
        return False
    todo = compute.focus_todo(frameset, records)
    if not todo:
        return False
    slot = st.empty()   # the button, then what it did
    pressed = slot.button(button_label(), key=S.SCORES_FOCUS, icon=":material/center_focus_strong:",
                          help="The share of each encoder's Grad-CAM saliency that falls on the "
                               "task objects' masks in up to 32 real frames, and its floor "
                               "(a uniform map). Cached: computed once per encoder and dataset.")
    if not pressed:
        st.caption(f"Object focus not computed yet for {len(todo)} encoder(s): n/a in the "
                   "table until you press the button.")
        return False
    held = compute.session_records(state, frameset.fingerprint)
    bar = st.progress(0.0, text=f"0 of {len(todo)} encoders")
    changed = False
    for n, eid in enumerate(todo):
        bar.progress(n / len(todo), text=f"{widgets.encoder_label(eid)}: Grad-CAM maps "
                                         f"({n} of {len(todo)} encoders done)")
        try:
            record = compute.score_one(frameset, eid, cache, precision=state[S.PRECISION],
                                       object_focus=True)
        except S2RError as exc:
            st.error(f"{eid}: the object focus could not be computed: {exc}")
            continue
        held[eid] = records[eid] = record
        changed = True
    bar.empty()
    done = sum(records[eid].get("object_focus") is not None for eid in todo)
    slot.caption(f"Object focus computed for {done} of {len(todo)} encoder(s).")
    return changed
