"""Live t-SNE in the dashboard (ui.live_tsne): the script draws a worker's snapshots as they
come, a stopped map is shown as such and finished on request, the pages say how a map ended.
The Stop click itself needs a browser (tests/ui/test_live_tsne_browser.py)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tests.ui.apptest import TINY, no_exception, open_app, use_env
from ui import live_tsne
from ui import state as S
from ui import pages


class _Frames:
    domain = np.array(["sim", "real"] * 3)


class _Bar:
    """An ``st.progress`` placeholder; its first update lets the worker go on (so the bar
    is seen while the worker is still in its neighbour search)."""

    def __init__(self, release=None):
        self.texts, self.release = [], release

    def progress(self, value, text=""):
        assert 0.0 <= value <= 1.0
        self.texts.append(text)
        if self.release is not None:
            self.release.set()


def _publisher(n_snapshots: int, every_s: float, started: threading.Event):
    """A stand-in for the library: snapshots ``(iteration, Y, kl)`` at a steady pace."""
    def compute(on_snapshot, progress):
        progress(0, 100, "nearest neighbours")
        started.wait(5)
        for k in range(n_snapshots):
            progress(10 * k, 10 * n_snapshots, f"t-SNE (KL {1 / (k + 1):.3f})")
            if on_snapshot(10 * k, np.full((6, 2), k, np.float32), 1.0 / (k + 1)):
                return "stopped"
            time.sleep(every_s)
        return "finished"

    return compute


def test_the_script_draws_new_snapshots_at_most_every_gap_until_the_worker_ends(monkeypatch):
    monkeypatch.setattr(live_tsne, "_POLL_S", 0.005)
    monkeypatch.setattr(live_tsne, "_DRAW_BASE_S", 0.05)
    started = threading.Event()
    job = live_tsne.Job(("fingerprint", "enc"), np.array([5, 1, 4, 0, 3, 2]))
    job.start(_publisher(40, 0.01, started))
    drawn, bar = [], _Bar(release=started)

    def draw(proj, iteration, kl):
        drawn.append((time.perf_counter(), iteration, proj, kl))

    live_tsne._follow(job, _Frames(), draw, bar)
    assert job.finished and job.result == "finished"
    iterations = [d[1] for d in drawn]
    assert len(drawn) >= 2 and iterations == sorted(set(iterations))
    # Not every snapshot (0.4 s of them, one draw per 0.05 s at most), each drawn as it was.
    assert len(drawn) < 40
    assert all(np.diff([d[0] for d in drawn]) >= 0.05 - 1e-3)
    for _, iteration, proj, kl in drawn:
        assert np.all(proj.coords == iteration // 10) and kl == pytest.approx(
            1 / (iteration // 10 + 1))
        assert proj.indices.tolist() == [5, 1, 4, 0, 3, 2]
        assert proj.domain.tolist() == _Frames.domain[[5, 1, 4, 0, 3, 2]].tolist()
    assert any(t.startswith("nearest neighbours · ") for t in bar.texts)
    assert all("KL" not in t for t in bar.texts)  # the caption says the KL, the bar the stage


def test_a_set_stop_flag_ends_the_worker_at_its_next_snapshot(monkeypatch):
    monkeypatch.setattr(live_tsne, "_POLL_S", 0.005)
    started = threading.Event()
    job = live_tsne.Job(("fingerprint", "enc"), np.arange(6))
    job.start(_publisher(10_000, 0.01, started))
    started.set()
    while job.snapshot is None or job.snapshot[0] < 30:
        time.sleep(0.005)
    job.stop.set()
    live_tsne._follow(job, _Frames(), lambda *a: None, _Bar())
    assert job.result == "stopped" and job.snapshot[0] < 1000


def test_captions_say_the_iteration_the_kl_and_how_a_map_ended():
    from s2r.projection import Projection

    assert live_tsne.caption(0, float("nan")).startswith("PCA initialisation (iteration 0 of "
                                                         "at most 1,000)")
    assert live_tsne.caption(120, 2.5) == ("t-SNE iteration 120 of at most 1,000 (early "
                                           "exaggeration) · KL 2.500")
    assert "KL 0.731" in live_tsne.caption(400, 0.7312)
    base = dict(coords=np.zeros((2, 2), np.float32), indices=np.arange(2),
                domain=np.array(["sim", "real"]), mixing=0.5, kl_divergence=1.25)
    done = Projection(**base, params={"early_exaggeration_iter": 250, "n_iter_run": 350})
    assert live_tsne.outcome(done) == "t-SNE: 250 + 350 iterations · KL 1.250"
    stopped = Projection(**base, params={"converged": False, "stopped_at": 180})
    assert live_tsne.outcome(stopped).startswith("Not converged: stopped at iteration 180 of "
                                                 "at most 1,000 · KL 1.250")


@pytest.fixture
def app(computed, monkeypatch):
    cache_dir, _ = computed
    use_env(monkeypatch, cache_dir)
    return open_app(), cache_dir


def _captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_scores_inspect_panel_draws_the_finished_map_and_says_how_it_ended(app):
    at, _ = app
    at.switch_page(pages.SCORES.path).run()
    no_exception(at)
    assert any(c.startswith("t-SNE: 250 + ") and " · KL " in c for c in _captions(at))
    # The job ended and was collected (no job at all when another test of the session had
    # already cached this map).
    assert S.TSNE_JOBS not in at.session_state or not at.session_state[S.TSNE_JOBS]


def test_a_stopped_map_is_shown_as_not_converged_until_finish_is_clicked(app):
    """A map the user stopped (kept in session state, never cached) is what the Projection
    page shows, saying so, until "Finish this map" computes it to the end."""
    from s2r.cache import NullCache
    from s2r.datasets import load_dataset
    from s2r.pipeline import project_frameset
    from ui.loaders.projection import EARLY_ITER, MAX_ITER

    at, _ = app
    eid = "pixels"
    fs = load_dataset(TINY)
    stopped = project_frameset(fs, eid, cache=NullCache(), perplexity=20.0,
                               max_per_domain=None, early_exaggeration_iter=EARLY_ITER,
                               n_iter=MAX_ITER, on_snapshot=lambda it, Y, kl: it >= 20)
    assert not stopped.converged
    # ui.loaders.projection.map_key: perplexity 20, a map no other test of this process
    # finished (finished maps are kept in a per-process store and come before a stopped
    # one); every frame (None: the tiny demo is below the page's sample size).
    key = (fs.fingerprint, eid, "joint", 20.0, "auto", None)
    at.session_state[S.TSNE_STOPPED] = {key: stopped}
    at.session_state[S.PROJECTION_ENCODERS] = [eid]
    at.session_state[S.PROJECTION_PERPLEXITY] = 20
    at.switch_page(pages.PROJECTION.path).run()
    no_exception(at)
    assert any(c.startswith("Not converged: stopped at iteration 20 of at most 1,000")
               for c in _captions(at)), _captions(at)
    finish = at.button(key=f"{S.PROJECTION_LIVE}.{eid}.finish")
    finish.click().run()
    no_exception(at)
    assert not at.session_state[S.TSNE_STOPPED]
    assert any(c.startswith("t-SNE: 250 + ") for c in _captions(at)), _captions(at)
    assert not any(c.startswith("Not converged") for c in _captions(at))
