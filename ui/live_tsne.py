"""Live t-SNE: the map drawn while openTSNE optimises it, and a button that stops the
optimisation and keeps the map so far.

How it runs. A Streamlit script runs synchronously, and a click while it runs is a rerun
request that Streamlit serves by raising an exception at the script's next ``st.*`` call.
Drawing the snapshots from the library's callback inside the script would draw them, but
then a Stop click -- and any other click -- would abort the optimisation from inside openTSNE
and lose the work. ``st.fragment`` does not help: a fragment's rerun never preempts a running
full run (Streamlit queues it), so a Stop inside a fragment would arrive after the map is done.
So the optimisation runs in a thread the session owns (:class:`Job`, kept in session state
under :data:`ui.state.TSNE_JOBS`), and the script polls it, drawing the latest snapshot into
the page's one chart placeholder (every poll also updates the progress bar: the yield point
where a click's rerun is served). **Stop** is a plain button: its rerun finds the same job
and sets its stop flag; the library's snapshot callback then returns True (openTSNE's own way
to end a run) and :func:`s2r.pipeline.project_frameset` returns the map so far with its mixing
number, marked not converged and never cached. The page shows it (kept in session state,
:data:`ui.state.TSNE_STOPPED`) with a button that finishes the map. Any other click reruns the
page, which picks the running job up where it is; a job whose map is no longer asked for is
stopped when another one starts.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import streamlit as st

from s2r.figures.projection import projection_frame, projection_scatter
from s2r.projection import Projection, map_rows
from ui import projection_map
from ui import state as S
from ui.loaders import projection as maps

#: ``draw(map so far, iteration, KL)``: draws a snapshot into the page's chart placeholder.
Draw = Callable[[Projection, int, float], None]
_POLL_S = 0.1    # between two looks at the job
_STATUS_S = 0.3  # between two progress-bar updates (each is where a click is served)
#: Least seconds between two snapshots drawn: a base, plus what the browser needs to take a
#: new map of that many points (software WebGL: about a second for 50,000).
_DRAW_BASE_S, _DRAW_PER_50K_S = 0.3, 1.0


@dataclass(eq=False)
class Job:
    """One map being computed in a worker thread; the script reads it, the thread writes it
    (each field replaced whole, so a reader never sees half an update)."""

    key: tuple
    rows: np.ndarray  # FrameSet rows of a snapshot's points (s2r.projection.map_rows)
    stop: threading.Event = field(default_factory=threading.Event)
    snapshot: Optional[tuple] = None  # (iteration, Y, KL) of the latest snapshot
    progress: tuple = (0, 1, "starting")
    result: Optional[Projection] = None
    error: Optional[BaseException] = None
    thread: Optional[threading.Thread] = None
    started: float = field(default_factory=time.perf_counter)

    def on_snapshot(self, iteration: int, Y: np.ndarray, kl: float) -> bool:
        self.snapshot = (int(iteration), Y, float(kl))
        return self.stop.is_set()

    def on_progress(self, done: int, total: int, message: str = "") -> None:
        self.progress = (int(done), int(total), message)

    @property
    def finished(self) -> bool:
        return self.thread is not None and not self.thread.is_alive()

    def start(self, compute: Callable) -> "Job":
        def work():
            try:
                self.result = compute(self.on_snapshot, self.on_progress)
            except BaseException as exc:  # raised again in the script that waits for it
                self.error = exc

        self.thread = threading.Thread(target=work, name=f"s2r-tsne-{self.key[1]}",
                                       daemon=True)
        self.thread.start()
        return self


def caption(iteration: int, kl: float) -> str:
    """What a snapshot's caption says: the iteration, the schedule and the KL divergence."""
    most = maps.EARLY_ITER + maps.MAX_ITER
    if iteration == 0:
        return (f"PCA initialisation (iteration 0 of at most {most:,}): the neighbour search "
                "and the affinities come next")
    phase = ("early exaggeration" if iteration <= maps.EARLY_ITER
             else "stops early once the KL divergence levels off")
    return f"t-SNE iteration {iteration:,} of at most {most:,} ({phase}) · KL {kl:.3f}"


def outcome(proj: Projection) -> str:
    """One line on how a map ended: converged after how many iterations, or stopped."""
    kl = f"KL {proj.kl_divergence:.3f}" if np.isfinite(proj.kl_divergence) else "KL n/a"
    if not proj.converged:
        return (f"Not converged: stopped at iteration {proj.params.get('stopped_at', 0):,} of "
                f"at most {maps.EARLY_ITER + maps.MAX_ITER:,} · {kl} · the map so far (not "
                "cached)")
    p = proj.params
    if "n_iter_run" not in p:
        return kl
    return f"t-SNE: {p.get('early_exaggeration_iter', 0)} + {p['n_iter_run']} iterations · {kl}"


def deck_drawer(head, chart, note, frameset, title: str) -> Draw:
    """Draws snapshots as the Projection page's live WebGL map (deck.gl, which takes each
    snapshot into the chart it shows) into ``chart`` (an ``st.empty``), ``title`` and the domain
    legend into ``head`` (deck.gl draws neither), their caption (the iteration) into
    ``note``; the points' frame, domain, episode and step are written into JSON once per map,
    only the coordinates per snapshot."""
    memo = {}

    def draw(proj: Projection, iteration: int, kl: float) -> None:
        if memo.get("rows") is not proj.indices:
            rows = proj.indices
            memo.update(rows=rows, tails=projection_map.point_tails(
                rows, proj.domain, frameset.episode[rows], frameset.step[rows]))
        head.markdown(f"**{title}** · t-SNE running · {projection_map.legend_html()}",
                      unsafe_allow_html=True)
        chart.pydeck_chart(projection_map.live_deck(proj.coords, memo["tails"]),
                           height=projection_map.HEIGHT)
        note.caption(caption(iteration, kl))

    return draw


def chart_drawer(chart, note, frameset, title: str) -> Draw:
    """Draws snapshots as the static t-SNE chart (Altair; the Scores page's inspect panel)
    into ``chart``, their caption into ``note``."""
    def draw(proj: Projection, iteration: int, kl: float) -> None:
        chart.altair_chart(projection_scatter(projection_frame(frameset, proj), title=title,
                                              subtitle="t-SNE running: the map so far"),
                           width="stretch")
        note.caption(caption(iteration, kl))

    return draw


def live_projection(frameset, encoder_id: str, *, mode: str = "joint",
                    perplexity: float = 30.0,
                    max_per_domain: Optional[int] = maps.MAP_PER_DOMAIN, draw: Draw,
                    widget_key: str) -> Projection:
    """The t-SNE map of ``encoder_id``: at once when this process or the disk cache has it,
    else computed in a worker thread while ``draw`` shows each snapshot and a Stop button
    (``<widget_key>.stop``) offers to keep the map so far. Returns the finished map, or the
    stopped one (``converged`` False; :func:`finish_button` computes it to the end)."""
    key = maps.map_key(frameset, encoder_id, mode, perplexity, max_per_domain)
    done = maps.stored(key)
    if done is not None:
        return done
    state = st.session_state
    stopped = state.setdefault(S.TSNE_STOPPED, {})
    if key in stopped:
        return stopped[key]
    job = _job(frameset, encoder_id, key, mode, max_per_domain)
    bar, stop_slot = st.empty(), st.empty()
    if stop_slot.button("Stop t-SNE and keep this map", key=f"{widget_key}.stop",
                        icon=":material/stop_circle:",
                        help="Ends the optimisation at its next snapshot; the map so far is "
                             "shown, marked as not converged, and is not cached"):
        job.stop.set()
    _follow(job, frameset, draw, bar)
    bar.empty()
    stop_slot.empty()
    state[S.TSNE_JOBS].pop(key, None)
    if job.error is not None:
        raise job.error
    if job.result.converged:
        maps.remember(key, job.result)
    else:
        stopped[key] = job.result
    return job.result


def finish_button(proj: Projection, frameset, encoder_id: str, *, mode: str = "joint",
                  perplexity: float = 30.0,
                  max_per_domain: Optional[int] = maps.MAP_PER_DOMAIN,
                  widget_key: str) -> None:
    """For a stopped map: a button (``<widget_key>.finish``) that computes it to the end."""
    if proj.converged:
        return
    if st.button("Finish this map", key=f"{widget_key}.finish", icon=":material/play_circle:",
                 help="Runs t-SNE again from the start to the end (then cached)"):
        key = maps.map_key(frameset, encoder_id, mode, perplexity, max_per_domain)
        st.session_state.get(S.TSNE_STOPPED, {}).pop(key, None)
        st.rerun()


def _job(frameset, encoder_id: str, key: tuple, mode: str,
         max_per_domain: Optional[int]) -> Job:
    """This session's job for ``key``: the running one, or a new one (any other unfinished
    job of the session is stopped: its map is no longer asked for)."""
    jobs = st.session_state.setdefault(S.TSNE_JOBS, {})
    job = jobs.get(key)
    if job is not None:
        return job
    for other in jobs.values():
        other.stop.set()
    jobs.clear()
    rows = map_rows(frameset.domain, mode=mode, max_per_domain=max_per_domain,
                    episode=frameset.episode)
    job = jobs[key] = Job(key, rows)
    return job.start(maps.computation(frameset, encoder_id, key))


def _follow(job: Job, frameset, draw: Draw, bar) -> None:
    """Poll ``job`` until its thread ends, drawing its newest snapshot at most every
    ``_DRAW_BASE_S + _DRAW_PER_50K_S * n / 50,000`` seconds and the progress in ``bar``."""
    gap = _DRAW_BASE_S + _DRAW_PER_50K_S * job.rows.size / 50_000
    drawn, next_draw, next_status = None, 0.0, 0.0
    domain = frameset.domain[job.rows]
    job.thread.join(timeout=0.05)  # a map in the disk cache: no progress bar flashes
    while not job.finished:
        now, snap = time.perf_counter(), job.snapshot
        if snap is not None and snap[0] != drawn and now >= next_draw:
            iteration, Y, kl = snap
            draw(Projection(coords=Y, indices=job.rows, domain=domain, mixing=float("nan"),
                            params={"snapshot": iteration}), iteration, kl)
            drawn, next_draw = iteration, time.perf_counter() + gap
        if now >= next_status:  # the stage (the caption has the iteration and the KL)
            done, total, message = job.progress
            done = max(done, snap[0] if snap else 0)
            bar.progress(min(max(done / total, 0.0), 1.0) if total else 0.0,
                         text=f"{(message or 't-SNE').split(' (')[0]} · "
                              f"{now - job.started:.0f} s")
            next_status = now + _STATUS_S
        time.sleep(_POLL_S)
