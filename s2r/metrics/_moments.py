"""Closed-form ridge probes from per-group sufficient statistics.

Every ridge fit s2r needs (all frames, sim only, real only, each cross-validation fold, each
bootstrap replicate) is a weighted sum of the same per-group statistics

    n_g, sum x, sum y, sum x x^T, sum x y^T, sum y y^T      (g = one episode or time block)

so the frames are read once; a fit is then one ``r x r`` solve and a score a few matrix
products, with no pass over the frames.

Feature scaling and leakage. A fit sees its training frames only: it centres the features on
its training mean, measures the penalty against its training set's **total variance**
``tau = trace(Cov_train(x))`` and standardises the actions with its training mean and standard
deviation. The ridge problem of a training set is therefore

    minimise  mean_i ||y~_i - (x_i - xbar) B||^2 + alpha * tau * ||B||_F^2

which is invariant to translations, rotations and a global rescaling of the embedding (and
to duplicating features), so ``alpha`` means the same for a 512-D and a 3072-D encoder. (A
per-feature z-scoring blows up features that are nearly constant in the training frames; the
README has the measurement.)

Coordinates. Because every fit is invariant to those maps, the frames are stored once in fixed
coordinates: centred on the mean of all frames, divided by one global scale, and -- when there
are fewer frames than dimensions (``N < D``, typical of the demo and of wide encoders) --
expressed in an orthonormal basis ``V`` of their span (thin SVD, ``r = rank <= N``). These maps
use no label and change no prediction of any fit (the ridge solution of any subset of the
frames lies in their span), they only make every solve ``r x r`` instead of ``D x D``.

Memory. The per-group ``r x r`` sums take ``G * r^2`` numbers: float64 when that fits the
budget, else float32 (relative error ~1e-7; used only by bootstrap replicates -- fits whose
weights are constant within a (domain, fold) block use exact float64 block sums), else they
are not stored and a weighted sum is recomputed from the frames (``N * r^2`` per call).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.linalg

from s2r.errors import MetricError

# Variance (in globally z-scored units) below which an action dimension counts as constant in
# a training set.
CONSTANT_VARIANCE = 1e-12
# Singular values below this fraction of the largest span no direction of the data (rank).
RANK_RTOL = 1e-10
# alpha = 0: eigenvalues below this fraction of the largest are dropped (minimum-norm solution).
PINV_RTOL = 1e-10
_CHUNK = 4096
# Smaller systems are solved one after the other (a thread pool costs more than it saves).
_PARALLEL_MIN_DIM = 256


@dataclass
class Moments:
    """Raw sums over a (weighted) set of frames, in the fixed coordinates (float64)."""

    n: float
    sx: np.ndarray   # (r,)
    sy: np.ndarray   # (A,)
    sxx: np.ndarray  # (r, r)
    sxy: np.ndarray  # (r, A)
    syy: np.ndarray  # (A, A)

    def __add__(self, other: "Moments") -> "Moments":
        return Moments(self.n + other.n, self.sx + other.sx, self.sy + other.sy,
                       self.sxx + other.sxx, self.sxy + other.sxy, self.syy + other.syy)


@dataclass
class LinearModel:
    """A fitted ridge probe in the fixed coordinates.

    ``standardised_action = (x - x_center) @ B`` where ``x`` are the frame's coordinates and
    the standardised action is ``(y - y_center) / y_scale`` (``y`` globally z-scored).
    """

    x_center: np.ndarray  # (r,)
    y_center: np.ndarray  # (A,)
    y_scale: np.ndarray   # (A,)
    scored: np.ndarray    # (A,) bool: action dims that vary in the training set
    B: np.ndarray         # (r, A)
    tau: float = 1.0      # total variance of the training features (the penalty's unit)


def column_moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column ``(mean, variance)`` of ``X (N, D)``, float64, in row chunks.

    The two passes of ``X.mean(0)`` / ``X.var(0)`` (mean, then mean squared deviation) with a
    float64 accumulator, but without their ``N x D`` float64 temporary (800 MB for a
    50,000 x 2,048 float32 matrix): at most ``_CHUNK x D`` float64 at a time.
    """
    n = X.shape[0]
    total = np.zeros(X.shape[1])
    for s in range(0, n, _CHUNK):
        total += X[s:s + _CHUNK].sum(axis=0, dtype=np.float64)
    mean = total / max(n, 1)
    squares = np.zeros(X.shape[1])
    for s in range(0, n, _CHUNK):
        dev = np.subtract(X[s:s + _CHUNK], mean, dtype=np.float64)
        squares += np.einsum("ij,ij->j", dev, dev)
    return mean, squares / max(n, 1)


def total_scale(X: np.ndarray) -> tuple[np.ndarray, float]:
    """``(mean (D,), sqrt(total variance))`` of ``X`` (scale 1 when ``X`` is constant)."""
    mean, var = column_moments(X)
    total = float(var.sum())
    return mean, (float(np.sqrt(total)) if total > 0 else 1.0)


def prescale(X: np.ndarray, *, center: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per-column ``(shift, scale)``, float64 (the Adam probe's and the domain probe's
    z-scoring of their own training frames).

    ``scale`` is the standard deviation, or 1 for a constant column: one whose standard
    deviation is below ``1e-9 * max(1, |mean|)`` (round-off of a constant is not variation).
    ``shift`` is the mean (0 when ``center`` is False).
    """
    mean, var = column_moments(X)
    std = np.sqrt(var)
    constant = std <= 1e-9 * np.maximum(1.0, np.abs(mean))
    return (mean if center else np.zeros_like(mean)), np.where(constant, 1.0, std)


def standardised(Z: np.ndarray, shift, scale, *, dtype=None) -> np.ndarray:
    """``(Z - shift) / scale`` (per column, float64 arithmetic) stored as ``dtype`` (default:
    ``Z``'s float dtype, float64 for other dtypes), computed in row chunks: the same numbers
    as the one-line expression without its two ``N x D`` float64 temporaries (1.2 GB each for
    50,000 x 3,072 float32 embeddings)."""
    if dtype is None:
        dtype = Z.dtype if Z.dtype in (np.float32, np.float64) else np.float64
    out = np.empty(Z.shape, dtype=dtype)
    for s in range(0, Z.shape[0], _CHUNK):
        out[s:s + _CHUNK] = (np.asarray(Z[s:s + _CHUNK], dtype=np.float64) - shift) / scale
    return out


class GroupMoments:
    """Per-group sufficient statistics of ``(X, Y)`` for fast weighted ridge fits.

    Parameters
    ----------
    Z : ndarray of shape (N, D)
        Embeddings (float32 or float64). Stored centred on their mean and divided by one
        global scale (fits do not depend on either, see the module docstring).
    Y : ndarray of shape (N, A)
        Actions (float64).
    group : ndarray of shape (N,), int
        Group index in ``0..G-1`` per frame.
    n_groups : int
        ``G``.
    block : ndarray of shape (G,), int, optional
        Block index per group (e.g. one per domain and fold). Exact float64 sums are kept
        per block, so any fit whose weights are constant within blocks (all point estimates)
        is exact whatever the storage of the per-group sums. Default: one block.
    center : bool
        Centre the coordinates on the global mean (False only for probes without intercept).
    memory_mb : float
        Budget for the per-group ``r x r`` sums (see module docstring).
    """

    def __init__(self, Z: np.ndarray, Y: np.ndarray, group: np.ndarray, n_groups: int, *,
                 block: Optional[np.ndarray] = None, center: bool = True,
                 memory_mb: float = 2048.0):
        self.Z = Z
        self.group = np.asarray(group, dtype=np.int64)
        self.x_shift, self.x_scale = total_scale(Z)
        if not center:
            self.x_shift = np.zeros_like(self.x_shift)
        self.y_shift, self.y_scale = prescale(Y)
        self.Y = (Y - self.y_shift) / self.y_scale
        N, D = Z.shape
        self.basis = self._row_space() if N < D else None
        r = D if self.basis is None else self.basis.shape[1]
        G, A = int(n_groups), Y.shape[1]
        self.n_groups, self.dim, self.action_dim = G, r, A
        per64 = G * r * r * 8 / 2**20
        self.sxx_dtype = (np.float64 if per64 <= memory_mb
                          else np.float32 if per64 / 2 <= memory_mb else None)
        self.block = (np.zeros(G, dtype=np.int64) if block is None
                      else np.asarray(block, dtype=np.int64))
        self.n = np.bincount(self.group, minlength=G).astype(np.float64)
        self.sx = np.zeros((G, r))
        self.sy = np.zeros((G, A))
        self.sxy = np.zeros((G, r, A))
        self.syy = np.zeros((G, A, A))
        self.sxx = None                 # per-group r x r sums: built on first use (_group_sxx)
        self.block_sxx = np.zeros((int(self.block.max()) + 1, r, r))
        # One pass over the frames in (block, group) order: the r x r products are summed per
        # block over chunks of _CHUNK rows (one BLAS call per chunk, not per episode: the
        # per-group r x r sums, rarely needed, are left to _group_sxx); the small sums are
        # added per run of one group's frames inside a chunk.
        frame_block = self.block[self.group]
        order = np.lexsort((self.group, frame_block))
        bounds = np.searchsorted(frame_block[order], np.arange(self.block_sxx.shape[0] + 1))
        for b in range(self.block_sxx.shape[0]):
            rows = order[bounds[b]:bounds[b + 1]]
            for start in range(0, rows.size, _CHUNK):
                idx = rows[start:start + _CHUNK]
                X, Yc, g = self.x(idx), self.Y[idx], self.group[idx]
                self.block_sxx[b] += X.T @ X
                runs = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
                ends = np.r_[runs[1:], g.size]
                self.sx[g[runs]] += np.add.reduceat(X, runs, axis=0)
                self.sy[g[runs]] += np.add.reduceat(Yc, runs, axis=0)
                for lo, hi in zip(runs, ends):
                    self.sxy[g[lo]] += X[lo:hi].T @ Yc[lo:hi]
                    self.syy[g[lo]] += Yc[lo:hi].T @ Yc[lo:hi]

    def _group_sxx(self) -> Optional[np.ndarray]:
        """Per-group ``r x r`` sums ``(G, r, r)`` in ``sxx_dtype`` (None when over the memory
        budget), computed on the first call: only a fit whose weights vary inside a block
        (e.g. a bootstrap replicate refitted from the sums) needs them."""
        if self.sxx is None and self.sxx_dtype is not None:
            sxx = np.zeros((self.n_groups, self.dim, self.dim), dtype=self.sxx_dtype)
            order = np.argsort(self.group, kind="stable")
            bounds = np.searchsorted(self.group[order], np.arange(self.n_groups + 1))
            for g in range(self.n_groups):
                rows = order[bounds[g]:bounds[g + 1]]
                for start in range(0, rows.size, _CHUNK):
                    X = self.x(rows[start:start + _CHUNK])
                    sxx[g] += X.T @ X
            self.sxx = sxx
        return self.sxx

    def _row_space(self) -> np.ndarray:
        """Orthonormal basis ``(D, r)`` of the span of the z-scored frames (N < D)."""
        X = np.concatenate([self._scaled(np.arange(s, min(s + _CHUNK, len(self.Z))))
                            for s in range(0, len(self.Z), _CHUNK)])
        _, s, vt = np.linalg.svd(X, full_matrices=False)
        keep = s > RANK_RTOL * max(float(s[0]) if s.size else 0.0, 1e-300)
        return np.ascontiguousarray(vt[keep].T)

    def _scaled(self, rows: np.ndarray) -> np.ndarray:
        X = np.subtract(self.Z[rows], self.x_shift, dtype=np.float64)   # one float64 copy
        X /= self.x_scale
        return X

    def x(self, rows: np.ndarray) -> np.ndarray:
        """Coordinates of frames ``rows`` (centred, scaled, in the row-space basis), float64."""
        X = self._scaled(rows)
        return X if self.basis is None else X @ self.basis

    def combine(self, weights: np.ndarray) -> Moments:
        """Weighted sum of the group statistics (``weights`` of shape (G,), >= 0)."""
        w = np.asarray(weights, dtype=np.float64)
        per_block = np.zeros(self.block_sxx.shape[0])
        per_block[self.block] = w
        if np.array_equal(per_block[self.block], w):
            sxx = np.tensordot(per_block, self.block_sxx, axes=1)
        elif self._group_sxx() is not None:
            nz = np.flatnonzero(w)
            lo, hi = (int(nz[0]), int(nz[-1]) + 1) if nz.size else (0, 0)
            flat = self.sxx[lo:hi].reshape(hi - lo, -1)    # a view: no copy of the sums
            sxx = (w[lo:hi].astype(self.sxx.dtype) @ flat).astype(np.float64)
            sxx = sxx.reshape(self.dim, self.dim)
        else:
            sxx = self._weighted_gram(w)
        return Moments(float(w @ self.n), w @ self.sx, w @ self.sy, sxx,
                       np.tensordot(w, self.sxy, axes=1), np.tensordot(w, self.syy, axes=1))

    def _weighted_gram(self, w: np.ndarray) -> np.ndarray:
        fw = w[self.group]
        rows = np.flatnonzero(fw)
        out = np.zeros((self.dim, self.dim))
        for start in range(0, rows.size, _CHUNK):
            idx = rows[start:start + _CHUNK]
            X = self.x(idx)
            out += X.T @ (X * fw[idx, None])
        return out

    def add_errors(self, model: LinearModel, rows: np.ndarray, sse: np.ndarray,
                   floor_sse: np.ndarray) -> None:
        """Add, per group, the squared standardised errors (scored dims) of frames ``rows``
        under ``model`` to ``sse`` and under its training mean action to ``floor_sse``."""
        path_sse = np.zeros((len(sse), 1))
        self.add_path_errors(model, model.B[None], rows, path_sse, floor_sse)
        sse += path_sse[:, 0]

    def add_path_errors(self, model: LinearModel, coefs: np.ndarray, rows: np.ndarray,
                        sse: np.ndarray, floor_sse: np.ndarray) -> None:
        """:meth:`add_errors` for several coefficient matrices of one training set at once.

        ``coefs`` of shape (P, r, A) (e.g. one per ridge penalty, :func:`path_coefficients`)
        share ``model``'s centring and action scaling; ``sse`` of shape (G, P) receives the
        per-group errors of each. One pass over the frames: ``rows * r * P * A`` flops.
        """
        P = coefs.shape[0]
        flat = np.ascontiguousarray(coefs.transpose(1, 0, 2)).reshape(self.dim, -1)
        zero = ~coefs.reshape(P, -1).any(axis=1)    # the mean action: exactly the floor
        G = sse.shape[0]
        for start in range(0, rows.size, _CHUNK):
            r = rows[start:start + _CHUNK]
            target = ((self.Y[r] - model.y_center) / model.y_scale)[:, model.scored]
            pred = ((self.x(r) - model.x_center) @ flat).reshape(len(r), P, -1)
            err = ((target[:, None, :] - pred[:, :, model.scored]) ** 2).sum(axis=2)
            floor = (target ** 2).sum(axis=1)
            err[:, zero] = floor[:, None]
            g = self.group[r]
            for j in range(P):
                sse[:, j] += np.bincount(g, weights=err[:, j], minlength=G)
            floor_sse += np.bincount(g, weights=floor, minlength=G)

    def raw_model(self, model: LinearModel) -> tuple[np.ndarray, np.ndarray]:
        """``(W (D, A), b (A,))`` mapping RAW embeddings to the model's standardised actions."""
        B = model.B if self.basis is None else self.basis @ model.B
        W = B / self.x_scale
        b = -(self.x_shift / self.x_scale) @ B - model.x_center @ model.B
        return W, b

    def raw_action_stats(self, model: LinearModel) -> tuple[np.ndarray, np.ndarray]:
        """``(mean (A,), scale (A,))`` of the model's action standardisation in RAW units."""
        return (self.y_shift + self.y_scale * model.y_center,
                self.y_scale * model.y_scale)


def _centered(m: Moments, cx: np.ndarray, cy: np.ndarray):
    """Second moments about ``(cx, cy)``: ``(Sxx_c, Sxy_c, diag(Syy_c))``."""
    sxx = m.sxx - np.outer(m.sx, cx) - np.outer(cx, m.sx) + m.n * np.outer(cx, cx)
    sxy = m.sxy - np.outer(m.sx, cy) - np.outer(cx, m.sy) + m.n * np.outer(cx, cy)
    syy = np.diag(m.syy) - 2 * m.sy * cy + m.n * cy * cy
    return sxx, sxy, syy


def solve_ridge(M: np.ndarray, R: np.ndarray, alpha: float) -> np.ndarray:
    """Solve ``(M + alpha I) B = R`` for symmetric PSD ``M`` (minimum-norm when alpha = 0).

    A Cholesky factorisation (LAPACK ``potrf``/``potrs``) when ``M + alpha I`` is positive
    definite, else the eigendecomposition of ``M`` with eigenvalues below
    :data:`PINV_RTOL` of the largest dropped.
    """
    if alpha > 0:
        try:
            A = M + alpha * np.eye(M.shape[0])
            return scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, overwrite_a=True,
                                                                  check_finite=False),
                                          R, check_finite=False)
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            pass
    vals, vecs = np.linalg.eigh(M)
    keep = vals + alpha > PINV_RTOL * max(float(vals.max()), 0.0)
    inv = np.where(keep, 1.0 / np.where(keep, vals + alpha, 1.0), 0.0)
    return vecs @ (inv[:, None] * (vecs.T @ R))


def solve_ridge_path(M: np.ndarray, R: np.ndarray, shifts) -> np.ndarray:
    """:func:`solve_ridge` for every shift ``alpha`` of ``shifts``: ``(P, r, A)``.

    One Cholesky factorisation per shift, the shifts spread over the CPU cores (a thread
    each, one BLAS thread per solve). Measured at ``r = 2,048`` on this project's 2 cores
    (bench/bench_score_scale.py; docs/scale.md): a factorisation costs 0.09-0.3 s and a
    symmetric eigendecomposition -- after which every shift is a diagonal rescale, the
    ridge-path trick of scikit-learn's ``RidgeCV`` -- 4-6 s, so the eigendecomposition pays
    only from about 15-45 shifts; the grid has 9 finite ones. OpenBLAS's own threads inside
    one ``r x r`` factorisation lost 2-7x against one thread when the cores were busy with
    other work (their spinning waits), hence the coarser split.
    """
    shifts = [float(a) for a in shifts]
    if not shifts:
        return np.zeros((0,) + R.shape)
    workers = min(len(shifts), _cpu_count())
    if workers == 1 or M.shape[0] < _PARALLEL_MIN_DIM:
        return np.stack([solve_ridge(M, R, a) for a in shifts])
    from concurrent.futures import ThreadPoolExecutor

    with _one_blas_thread(), ThreadPoolExecutor(workers) as pool:
        return np.stack(list(pool.map(lambda a: solve_ridge(M, R, a), shifts)))


def _one_blas_thread():
    """Context in which BLAS/LAPACK calls use one thread (threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _cpu_count() -> int:
    """Cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:     # not on Linux
        return max(1, os.cpu_count() or 1)


def normal_equations(m: Moments, *, fit_intercept: bool = True):
    """``(M, R, template)`` of the ridge system ``(M + alpha * tau * I) B = R`` of a training
    set.

    ``template`` is a :class:`LinearModel` with ``B = None`` holding the centring, the action
    scaling and ``tau = trace(M)`` (the training features' total variance) of that set.
    """
    n = m.n
    mx, my = m.sx / n, m.sy / n
    vy = np.diag(m.syy) / n - my * my
    scored = vy > CONSTANT_VARIANCE
    y_scale = np.where(scored, np.sqrt(np.maximum(vy, 0)), 1.0)
    cx = mx if fit_intercept else np.zeros_like(mx)
    sxx, sxy, _ = _centered(m, cx, my)
    R = sxy / n / y_scale
    R[:, ~scored] = 0.0
    M = sxx / n
    tau = max(float(np.trace(M)), 0.0)
    return M, R, LinearModel(cx, my, y_scale, scored, None, tau)


def fit_moments(m: Moments, alpha: float, *, fit_intercept: bool = True) -> LinearModel:
    """Ridge fit from raw sums.

    Minimises ``mean_i ||y~_i - (x_i - c) B||^2 + alpha * tau * ||B||_F^2`` with ``c`` the
    training mean of the coordinates (0 without intercept), ``tau`` the training features'
    total variance and ``y~`` the actions z-scored with the training mean and standard
    deviation, i.e. solves ``(Xc'Xc / n + alpha tau I) B = Xc'Y~ / n``. Features without any
    variance, or ``alpha = inf``, give ``B = 0``: the training mean action is predicted.
    """
    M, R, model = normal_equations(m, fit_intercept=fit_intercept)
    model.B = (solve_ridge(M, R, alpha * model.tau) if model.tau > 0 and np.isfinite(alpha)
               else np.zeros_like(R))
    return model


def fit_scored(m: Moments, alpha: float, *, fit_intercept: bool = True) -> LinearModel:
    """:func:`fit_moments`, refusing training frames whose action dims are all constant."""
    model = fit_moments(m, alpha, fit_intercept=fit_intercept)
    if not model.scored.any():
        raise MetricError("every action dimension is constant in the training frames: "
                          "there is nothing for the action probe to predict")
    return model


def transfer_moments(m_train: Moments, m_test: Moments, alpha: float):
    """``(AS, floor, per-dim scores, model)`` of the probe fitted on ``m_train`` and scored on
    ``m_test``; the floor is the score of ``m_train``'s mean action on ``m_test``."""
    model = fit_scored(m_train, alpha)
    sse = sse_moments(model, m_test)
    per_dim = tuple(float(1 - e / m_test.n) if s else None for e, s in zip(sse, model.scored))
    floor = score_from_sse(sse_of_mean(model, m_test), m_test.n, model.scored)
    return score_from_sse(sse, m_test.n, model.scored), floor, per_dim, model


def path_coefficients(m_train: Moments, alphas) -> tuple[LinearModel, np.ndarray]:
    """Ridge fits of one training set for every penalty of a grid.

    Returns the template :class:`LinearModel` (centring, action scaling, ``tau``; ``B``
    unset) and the coefficients ``(len(alphas), r, A)``: for each finite penalty exactly
    :func:`fit_moments`'s (the normal equations formed once, then
    :func:`solve_ridge_path`), 0 for ``inf`` (the mean action).
    """
    M, R, model = normal_equations(m_train)
    out = np.zeros((len(alphas),) + R.shape)
    if model.tau > 0:
        finite = [i for i, a in enumerate(alphas) if np.isfinite(a)]
        out[finite] = solve_ridge_path(M, R, [alphas[i] * model.tau for i in finite])
    return model, out


def sse_moments(model: LinearModel, m: Moments) -> np.ndarray:
    """Sum over the frames of ``m`` of squared standardised errors, per action dim ``(A,)``."""
    sxx, sxy, syy = _centered(m, model.x_center, model.y_center)
    Mxy = sxy / model.y_scale
    myy = syy / model.y_scale ** 2
    B = model.B
    sse = myy - 2 * np.einsum("da,da->a", B, Mxy) + np.einsum("da,da->a", B, sxx @ B)
    return np.maximum(sse, 0.0)


def sse_of_mean(model: LinearModel, m: Moments) -> np.ndarray:
    """Squared standardised errors ``(A,)`` over the frames of ``m`` of the no-information
    predictor: the model's training mean action (the floor of every action score)."""
    syy = np.diag(m.syy) - 2 * m.sy * model.y_center + m.n * model.y_center ** 2
    return np.maximum(syy / model.y_scale ** 2, 0.0)


def training_null(m: Moments, alpha: float) -> float:
    """Mean, over every permutation of the actions across the frames, of the training score
    of the ridge probe fitted on ``m`` (all weights 1) -- in closed form.

    With the centred features' SVD ``Xc = U S V'`` (``lambda_k = s_k^2 / n``) the training
    residual of standardised actions ``y~`` is
    ``||y~||^2 - sum_k (1 - (a / (lambda_k + a))^2) ||u_k' y~||^2`` with ``a = alpha * tau``,
    and a random permutation ``P`` gives ``E ||u_k' P y~||^2 = ||y~||^2 / (n - 1)`` for every
    unit ``u_k`` orthogonal to the ones vector. So the null training score is
    ``sum_k (1 - (a / (lambda_k + a))^2) / (n - 1)``: ``rank / (n - 1)`` without a penalty
    (1 as soon as the dimension reaches the number of frames).
    """
    M, _, model = normal_equations(m)
    with _one_blas_thread():       # see solve_ridge_path
        vals = np.linalg.eigvalsh(M)
    top = max(float(vals.max()), 0.0) if vals.size else 0.0
    vals = vals[vals > RANK_RTOL * top] if top > 0 else vals[:0]
    if not np.isfinite(alpha):
        return 0.0
    a = alpha * model.tau
    shrink = a / (vals + a) if a > 0 else np.zeros_like(vals)
    return float(np.sum(1.0 - shrink ** 2) / max(m.n - 1.0, 1.0))


def score_from_sse(sse: np.ndarray, n: float, scored: np.ndarray) -> float:
    """``1 - SSE / (n * n_scored_dims)`` over the scored action dims (eq. 2)."""
    k = int(np.count_nonzero(scored))
    return 1.0 - float(sse[scored].sum()) / (n * k)


def predict(model: LinearModel, X: np.ndarray) -> np.ndarray:
    """Standardised action predictions for coordinates ``X (n, r)``."""
    return (X - model.x_center) @ model.B
