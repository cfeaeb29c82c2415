"""The home page's compute step: which encoders to score now, and the run with its progress.

The page reads top to bottom; the decisions and the Streamlit progress widgets of a compute
run live here so ``app.py`` only lays out the page.

A run starts when the user presses the button, on the first visit of a session (the default
set, unless ``$S2R_AUTOCOMPUTE=0``), or to resume a run interrupted by opening another page
(:data:`ui.state.HOME_PENDING`). A reload starts a new session that computes again: the disk
cache hands back every encoder already done.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import MutableMapping, Sequence

import streamlit as st

from s2r.errors import S2RError
from ui import compute, widgets
from ui import state as S
from ui.progress import count_text, megabytes_text, progress_bar


@dataclass(frozen=True)
class Plan:
    """What the home page computes on this run.

    todo : encoder ids selected and not yet scored in this session.
    auto : a first visit: compute the selection without a click.
    resume : a run was interrupted (another page was opened): finish it.
    missing : those of ``todo`` whose weights are not here: only a click computes them
        (building fetches the weights); opening the page never downloads.
    """

    todo: list
    auto: bool
    resume: bool
    missing: tuple = ()

    def to_run(self, pressed: bool) -> list:
        """The encoders a run computes: all of ``todo`` on a click, else those whose
        weights are here."""
        return list(self.todo) if pressed else [e for e in self.todo if e not in self.missing]

    def starts(self, pressed: bool) -> bool:
        """Whether a run starts (there is work and a reason to do it now)."""
        return bool(self.to_run(pressed)) and (pressed or self.auto or self.resume)


def plan(state: MutableMapping, selected: Sequence[str], held: dict) -> Plan:
    """The :class:`Plan` of a run of the home page."""
    from s2r.encoders import status
    from s2r.settings import current

    settings = current()
    todo = [e for e in selected if e not in held]
    auto = S.autocompute_enabled() and bool(todo) and state.get(S.HOME_AUTOCOMPUTED) != "done"
    missing = tuple(e for e in todo
                    if str(status(e, settings=settings).state) == "weights-missing")
    return Plan(todo=todo, auto=auto, resume=bool(todo) and bool(state.get(S.HOME_PENDING)),
                missing=missing)


def _progress_box(label: str):
    """An ``st.status`` box with a progress bar, and the progress callback that drives it
    (updated at most every 2 % or when the message changes)."""
    box = st.status(f"{label}: starting", expanded=False)
    bar = box.progress(0.0, text="starting")
    draw = progress_bar(bar, text=count_text,
                        on_message=lambda msg: box.update(label=f"{label}: {msg}"))

    def progress(done: int, total: int, message: str = "") -> None:
        draw(done, total, message.split(":")[-1].strip())   # "encoder: stage" -> "stage"

    return box, bar, progress


def ray_address():
    """The cluster named by ``$S2R_RAY_ADDRESS``, or None (then the app computes locally)."""
    from s2r.settings import current

    return current().ray_address


def backend_choice(state: MutableMapping) -> None:
    """The compute section's backend toggle, drawn only when a cluster address is set."""
    address = ray_address()
    if address is None:
        state[S.HOME_RAY] = False
        return
    st.toggle(f"Compute on the Ray cluster at {address}", key=S.HOME_RAY,
              help="Embeds every selected encoder at once on the cluster's workers (one "
                   "actor per encoder); scores are fitted here as each one completes. Same "
                   "cache as a local run. Exact precision only.")


def _run_on_ray(state: MutableMapping, frameset, encoder_ids: Sequence[str], held: dict,
                cache) -> None:
    """Score ``encoder_ids`` with their embeddings computed on the Ray cluster, in one box."""
    from s2r.pipeline.ray_grid import score_encoders_ray

    box, bar, progress = _progress_box(f"{len(encoder_ids)} encoder(s) on Ray")
    with box:
        try:
            records = score_encoders_ray(frameset, encoder_ids, cache=cache,
                                         address=ray_address(), progress=progress,
                                         precision=state[S.PRECISION])
        except S2RError as exc:
            box.update(label="Ray run: failed", state="error", expanded=True)
            box.error(str(exc))
            return
    held.update({eid: rec for eid, rec in zip(encoder_ids, records, strict=True)})
    bar.progress(1.0, text="done")
    box.update(label=f"{len(encoder_ids)} encoder(s) on Ray: done", state="complete")


def run(state: MutableMapping, frameset, encoder_ids: Sequence[str], held: dict, cache) -> None:
    """Score each encoder with a progress box; records go into ``held`` (the session's
    records of this dataset). S2R errors are shown in the encoder's box, never raised.
    With the Ray toggle on (:func:`backend_choice`), all encoders run at once on the
    cluster instead.

    :data:`ui.state.HOME_PENDING` is set while the run lasts, so leaving the page resumes it
    on return.
    """
    if state.get(S.HOME_RAY) and ray_address():
        state[S.HOME_PENDING] = True
        _run_on_ray(state, frameset, encoder_ids, held, cache)
        return
    state[S.HOME_PENDING] = True
    overall = st.progress(0.0, text=f"0 of {len(encoder_ids)} encoders")
    for n, eid in enumerate(encoder_ids):
        label = widgets.encoder_label(eid)
        box, bar, progress = _progress_box(label)
        with box:
            start = time.perf_counter()
            try:
                held[eid] = compute.score_one(frameset, eid, cache, progress=progress,
                                              precision=state[S.PRECISION])
            except S2RError as exc:
                box.update(label=f"{label}: failed", state="error", expanded=True)
                box.error(str(exc))
            else:
                bar.progress(1.0, text="done")
                box.update(label=f"{label}: done in {time.perf_counter() - start:.1f} s",
                           state="complete")
        overall.progress((n + 1) / len(encoder_ids), text=f"{n + 1} of {len(encoder_ids)} encoders")


def finish(state: MutableMapping) -> None:
    """Mark the session's first visit done and no run pending (the page got to its end)."""
    state[S.HOME_AUTOCOMPUTED] = "done"
    state[S.HOME_PENDING] = False


def download(encoder_ids: Sequence[str]) -> None:
    """Fetch the weights of ``encoder_ids`` (:func:`s2r.encoders.fetch.fetch_many`) with a
    progress bar; each failure is shown, the others go on."""
    from s2r.encoders.fetch import fetch_many
    from s2r.settings import current

    with st.status(f"Downloading the weights of {len(encoder_ids)} encoder(s)",
                   expanded=True) as box:
        progress = progress_bar(box.progress(0.0, text="starting"), text=megabytes_text)

        try:
            fetch_many(encoder_ids, settings=current(), progress=progress, report=box.write)
        except S2RError as exc:
            box.update(state="error")
            box.error(str(exc))
            return
        box.update(label="Weights downloaded", state="complete")
