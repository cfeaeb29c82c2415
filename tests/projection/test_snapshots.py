"""Live t-SNE (issue 36): ``project(..., on_snapshot=fn)`` hands out the map while it is
optimised, leaves the final map as it was, and stops cleanly when ``fn`` returns True."""

from __future__ import annotations

import numpy as np
import pytest

import s2r.projection as projection
from s2r.projection import map_rows, pca_reduce, project
from s2r.tsne import CHECK_EVERY, SNAPSHOT_EVERY, pca_initialization, run_tsne


def _blobs(n_sim, n_real, *, shift, dim=24, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n_sim + n_real, dim)).astype(np.float32)
    Z[n_sim:, :3] += shift
    return Z, np.array(["sim"] * n_sim + ["real"] * n_real)


class Recorder:
    """A snapshot callback that keeps what it was handed and a private copy of each ``Y``
    (to see whether the optimiser moved an array after handing it out)."""

    def __init__(self, stop_at=None):
        self.calls, self.copies, self.stop_at = [], [], stop_at

    def __call__(self, iteration, Y, kl):
        self.calls.append((iteration, Y, kl))
        self.copies.append(np.array(Y, copy=True))
        return self.stop_at is not None and iteration >= self.stop_at


@pytest.mark.parametrize("method", ["bh", "fft"])
def test_a_snapshot_callback_leaves_the_map_unchanged(method):
    """The callback runs 5x as often as the KL checks (openTSNE then evaluates the KL at
    every call); the map must be the same to the last bit, with Barnes-Hut and FFT."""
    X = pca_reduce(_blobs(150, 150, shift=4.0)[0], 50, 0)
    plain = run_tsne(X, n_iter=200, early_exaggeration_iter=60, kl_tol=0.0,
                     negative_gradient_method=method)
    seen = Recorder()
    live = run_tsne(X, n_iter=200, early_exaggeration_iter=60, kl_tol=0.0,
                    negative_gradient_method=method, on_snapshot=seen)
    np.testing.assert_array_equal(np.asarray(live.embedding), np.asarray(plain.embedding))
    assert live.n_iter_run == plain.n_iter_run == 200 and live.stopped_at is None
    assert [c[0] for c in seen.calls] == list(range(SNAPSHOT_EVERY, 261, SNAPSHOT_EVERY))


def test_snapshots_start_with_the_pca_map_and_are_copies():
    Z, domain = _blobs(120, 90, shift=3.0)
    seen = Recorder()
    final = project(Z, domain, on_snapshot=seen, n_iter=300, kl_tol=0.0)
    assert final.converged and final.params["converged"] is True
    assert final.params["n_iter_run"] == 300
    iterations = [c[0] for c in seen.calls]
    assert iterations == [0, *range(SNAPSHOT_EVERY, 250 + 300 + 1, SNAPSHOT_EVERY)]
    # Iteration 0: openTSNE's PCA initialisation of the fitted rows, KL not known yet.
    init = pca_initialization(pca_reduce(Z, 50, 0), 0)
    np.testing.assert_array_equal(seen.calls[0][1], init.astype(np.float32))
    assert np.isnan(seen.calls[0][2]) and all(np.isfinite(c[2]) for c in seen.calls[1:])
    for (_, Y, _), kept in zip(seen.calls, seen.copies):
        assert Y.shape == (210, 2) and Y.dtype == np.float32
        # openTSNE moves its embedding in place after each callback: what was handed out
        # must not move with it.
        np.testing.assert_array_equal(Y, kept)
    assert len({Y.tobytes() for _, Y, _ in seen.calls}) == len(seen.calls)
    # The map spreads out from the tiny PCA initialisation (std 1e-4) and its KL falls.
    assert seen.calls[-1][1].std() > 100 * seen.calls[0][1].std()
    assert seen.calls[-1][2] < seen.calls[1][2]
    # The same map as without a callback.
    np.testing.assert_array_equal(final.coords, project(Z, domain, n_iter=300,
                                                        kl_tol=0.0).coords)


def test_the_pca_map_comes_before_the_neighbour_search(monkeypatch):
    """The first map needs only the PCA: at 50,000 frames the exact neighbour search takes
    seconds, the PCA a fraction of one."""
    events = []
    search = projection.nearest_neighbours

    def logged_search(*args, **kwargs):
        events.append("neighbours")
        return search(*args, **kwargs)

    monkeypatch.setattr(projection, "nearest_neighbours", logged_search)
    Z, domain = _blobs(60, 60, shift=2.0)
    project(Z, domain, n_iter=50, early_exaggeration_iter=50,
            on_snapshot=lambda it, Y, kl: events.append(it))
    assert events[:2] == [0, "neighbours"] and events[2] == SNAPSHOT_EVERY


def test_early_stop_ends_on_the_last_snapshot():
    """When the KL plateau stops the run, the map is the one of the last snapshot (openTSNE
    returns the points as they were at that callback) and so is its KL."""
    Z, domain = _blobs(150, 150, shift=3.0, seed=8)
    seen = Recorder()
    p = project(Z, domain, kl_tol=1.0, n_iter=300, on_snapshot=seen)
    assert p.converged and p.params["n_iter_run"] == 2 * CHECK_EVERY
    assert seen.calls[-1][0] == 250 + 2 * CHECK_EVERY
    np.testing.assert_array_equal(p.coords, seen.calls[-1][1])
    assert p.kl_divergence == pytest.approx(seen.calls[-1][2], rel=1e-12)


@pytest.mark.parametrize("stop_at", [0, 120, 330])
def test_returning_true_stops_and_returns_the_map_so_far(stop_at):
    """Stopping in the PCA map, in early exaggeration and in the normal phase."""
    Z, domain = _blobs(100, 80, shift=3.0, seed=2)
    rows = np.arange(180) * 2 + 1
    seen = Recorder(stop_at=stop_at)
    p = project(Z, domain, indices=rows, on_snapshot=seen)
    assert not p.converged and p.params["converged"] is False
    assert p.params["stopped_at"] == stop_at == seen.calls[-1][0]
    assert p.params["n_iter_run"] == max(0, stop_at - 250)
    np.testing.assert_array_equal(p.coords, seen.calls[-1][1])
    if stop_at:
        assert p.kl_divergence == pytest.approx(seen.calls[-1][2], rel=1e-12)
    else:
        assert np.isnan(p.kl_divergence)
    assert p.params["warnings"] == []  # the caller stopped it: nothing to warn about
    np.testing.assert_array_equal(p.indices, rows)
    # The mixing number is of the embeddings, not of the map: the same as when finished.
    assert p.mixing == project(Z, domain, n_iter=50).mixing


def test_place_real_snapshots_are_the_sim_map_and_a_stop_keeps_sim_frames_only():
    Z, domain = _blobs(90, 40, shift=0.5, seed=3)
    episode = np.repeat(np.arange(13), 10)
    fit = map_rows(domain, mode="place-real", max_per_domain=60, episode=episode, seed=0)
    assert np.array_equal(fit, np.sort(fit)) and set(domain[fit]) == {"sim"} and fit.size == 60
    seen = Recorder(stop_at=60)
    p = project(Z, domain, mode="place-real", max_per_domain=60, episode=episode,
                on_snapshot=seen)
    assert all(Y.shape == (60, 2) for _, Y, _ in seen.calls)
    assert not p.converged and np.array_equal(p.indices, fit) and set(p.domain) == {"sim"}
    assert any("real frames are placed" in w for w in p.params["warnings"])
    # Joint mode: the rows of the subsample, in order.
    assert np.array_equal(map_rows(domain, max_per_domain=60, episode=episode),
                          projection.stratified_subsample(domain, 60, episode=episode))
