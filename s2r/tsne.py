"""openTSNE's optimisation as :func:`s2r.projection.project` runs it: the two phases, the KL
early stop, and live snapshots of the map.

openTSNE calls its ``callbacks`` as ``(iteration, error, embedding)`` every
``callbacks_every_iters`` iterations of a phase, with ``iteration`` counted from the phase's
start; a callback returning True ends the phase cleanly and the embedding keeps the points as
they were at that call (``TSNEEmbedding.optimize``, openTSNE/tsne.py). Between two calls
openTSNE moves the points *in place* (``embedding += update``, then re-centres them), so an
array handed to a callback is the live embedding: :func:`run_tsne` hands out copies.

A snapshot callback (:data:`SnapshotCallback`) receives ``(iteration, Y, kl)``: ``iteration``
counts both phases (early exaggeration first), ``Y`` is a float32 copy of shape ``(n, 2)``
and ``kl`` the KL divergence of the map at that iteration (openTSNE's estimate, corrected for
the exaggeration; NaN for the initial map). Returning True stops the optimisation: the map so
far is the result, marked as stopped.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np

from s2r.checks import check_embedding_values

#: ``fn(iteration, Y, kl) -> bool | None``; True stops the optimisation (module docstring).
SnapshotCallback = Callable[[int, np.ndarray, float], Optional[bool]]
#: Iterations between KL checks: progress and the early stop (always on this grid, so a
#: snapshot callback never changes where the optimisation stops).
CHECK_EVERY = 50
#: Iterations between snapshots when a snapshot callback is given. openTSNE evaluates the KL
#: divergence at every callback inside its positive-gradient pass (the gradient itself is the
#: same), so calling back 5x as often leaves the map unchanged.
SNAPSHOT_EVERY = 10
EARLY_EXAGGERATION = 12.0  # openTSNE's TSNE(early_exaggeration="auto") for N > 0


class TSNERun(NamedTuple):
    """What :func:`run_tsne` returns."""

    #: openTSNE.TSNEEmbedding of shape (n, 2): the final map, or the map when stopped.
    embedding: object
    #: Normal-phase iterations run (0 when stopped during early exaggeration).
    n_iter_run: int
    #: Iterations (both phases) done when a snapshot callback stopped the run; None if not.
    stopped_at: Optional[int]


def pca_initialization(X: np.ndarray, seed: int) -> np.ndarray:
    """openTSNE's PCA initialisation of ``X``: the same numbers as
    ``TSNE(initialization="pca", random_state=seed).prepare_initial(X)`` (2 principal
    components rescaled to a standard deviation of 1e-4, plus openTSNE's seeded jitter), so a
    map optimised from it is the map openTSNE would make; computed first, it is the map shown
    before the neighbour search and the affinities are done.

    Returns
    -------
    ndarray of shape (n, 2), float64
    """
    from openTSNE.initialization import pca

    return pca(X, 2, random_state=seed)


class _KLPlateau:
    """Stop once the KL divergence fell by less than ``tol`` (relative) since the previous
    check; ``stopped_at`` is the phase iteration where it did."""

    def __init__(self, tol: float):
        self.tol, self.last, self.stopped_at = float(tol), None, None

    def __call__(self, iteration: int, error: float) -> bool:
        previous, self.last = self.last, float(error)
        if previous is not None and previous - self.last < self.tol * previous:
            self.stopped_at = int(iteration)
            return True
        return False


class _Watch:
    """The one callback openTSNE calls in a phase: KL checks on the :data:`CHECK_EVERY` grid
    (progress, early stop), snapshots (copies) on the :data:`SNAPSHOT_EVERY` grid."""

    def __init__(self, on_check, on_snapshot):
        self.on_check, self.on_snapshot = on_check, on_snapshot
        self.offset, self.plateau, self.stopped_at = 0, None, None

    def phase(self, offset: int, plateau: Optional[_KLPlateau]) -> "_Watch":
        self.offset, self.plateau = int(offset), plateau
        return self

    def __call__(self, iteration, error, embedding) -> bool:
        done, stop = self.offset + int(iteration), False
        if iteration % CHECK_EVERY == 0:
            if self.on_check is not None:
                self.on_check(done, float(error))
            stop = self.plateau is not None and self.plateau(iteration, error)
        if self.on_snapshot is not None and self.on_snapshot(
                done, np.array(embedding, dtype=np.float32), float(error)):
            self.stopped_at, stop = done, True
        return bool(stop)


def run_tsne(X: np.ndarray, *, affinities=None, initialization=None, perplexity: float = 30.0,
             seed: int = 0, n_iter: int = 750, early_exaggeration_iter: int = 250,
             kl_tol: float = 0.005, n_jobs: int = -1, on_check=None,
             on_snapshot: Optional[SnapshotCallback] = None,
             negative_gradient_method: str = "auto") -> TSNERun:
    """openTSNE's two phases on ``X`` (its documented step-by-step use), with early stop.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Input of the PCA initialisation (and of the affinities when ``affinities`` is None).
    affinities : openTSNE.affinity.Affinities, optional
        Precomputed affinities (default: openTSNE's own ``PerplexityBasedNN`` of ``X``).
    initialization : ndarray of shape (n, 2), optional
        Starting map (default: :func:`pca_initialization` of ``X``, what openTSNE does).
    n_iter : int
        Most iterations of the normal phase (learning rate ``n``); it stops earlier once the
        KL divergence falls by less than ``kl_tol`` over :data:`CHECK_EVERY` iterations
        (``kl_tol=0``: never).
    early_exaggeration_iter : int
        Iterations at exaggeration 12, learning rate ``n / 12``, momentum 0.5.
    on_check : callable, optional
        Called as ``(iterations done, KL)`` every :data:`CHECK_EVERY` iterations.
    on_snapshot : SnapshotCallback, optional
        Called as ``(iterations done, Y, KL)`` every :data:`SNAPSHOT_EVERY` iterations with a
        float32 copy ``Y`` of the map; returning True stops the optimisation there.
    negative_gradient_method : {"auto", "bh", "fft"}
        openTSNE's (``auto``: Barnes-Hut below 10,000 points, FFT from 10,000).

    Returns
    -------
    TSNERun
        ``(embedding, n_iter_run, stopped_at)``.

    Raises
    ------
    DegenerateEmbeddingsError
        ``X`` has NaN or inf, or every row is the same (:func:`s2r.checks.
        check_embedding_values`): openTSNE would return NaN coordinates.
    """
    from openTSNE import TSNE

    check_embedding_values(X)
    watch = _Watch(on_check, on_snapshot)
    every = SNAPSHOT_EVERY if on_snapshot is not None else CHECK_EVERY
    tsne = TSNE(n_components=2, perplexity=perplexity, initialization="pca",
                random_state=seed, n_jobs=n_jobs,
                negative_gradient_method=negative_gradient_method,
                callbacks_every_iters=every, verbose=False)
    if initialization is None:
        initialization = pca_initialization(X, seed)
    embedding = tsne.prepare_initial(X, affinities=affinities, initialization=initialization)
    # openTSNE's TSNE.fit, phase by phase (openTSNE/tsne.py): learning_rate "auto" is
    # max(200, n / exaggeration) in each phase.
    embedding = embedding.optimize(early_exaggeration_iter, exaggeration=EARLY_EXAGGERATION,
                                   momentum=0.5, inplace=True,
                                   callbacks=[watch.phase(0, None)])
    if watch.stopped_at is not None:
        return TSNERun(embedding, 0, watch.stopped_at)
    plateau = _KLPlateau(kl_tol) if kl_tol > 0 else None
    embedding = embedding.optimize(n_iter, exaggeration=None, momentum=0.8, inplace=True,
                                   callbacks=[watch.phase(early_exaggeration_iter, plateau)])
    if watch.stopped_at is not None:
        return TSNERun(embedding, watch.stopped_at - early_exaggeration_iter, watch.stopped_at)
    n_run = plateau.stopped_at if plateau is not None and plateau.stopped_at else n_iter
    return TSNERun(embedding, int(n_run), None)
