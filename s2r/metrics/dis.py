"""Domain invariance score (DIS), the paper's centroid-distance metric (Section III-C, eq. 1).

Steps, exactly as in the paper:

1. PCA fitted on **all** frames (sim and real together) projects the embeddings to a common
   dimension ``k`` (``pca_dim``), so encoders of different widths are compared in the same
   space;
2. each of the ``k`` components is min-max scaled to [0, 1] over all frames;
3. the sim and real centroids are the per-component means of each domain;
4. ``DIS = 1 - ||c_real - c_sim||_2^2`` (eq. 1, ``distance="squared"``, the default) or
   ``DIS = 1 - ||c_real - c_sim||_2`` (the text's "Euclidean distance",
   ``distance="euclidean"``; the reference code also uses the unsquared distance).

Range: every scaled component lies in [0, 1], so the squared distance lies in [0, k] and the
Euclidean one in [0, sqrt(k)]: DIS is 1 for identical centroids and is *not* bounded below by
0 (it can reach ``1 - k``). Scores are comparable between encoders only at the same ``k``,
which is why ``k`` is a fixed number recorded with every score, not a fraction of ``D``.

Default ``k = 16`` (:data:`DEFAULT_PCA_DIM`): the paper does not state its ``k`` and the
reference repository's ``centroid_distance.py`` has no PCA step (it min-max scales the raw
embeddings and takes the unsquared Euclidean distance). Min-max scaling gives every kept
component the same weight whatever its variance, so a large ``k`` mostly adds low-variance
components whose centroid differences are noise, and pushes DIS below 0 for any real domain
gap; a very small ``k`` can miss a gap that is not in the top components. 16 is well below
the narrowest encoder of the paper's Table I (512) and the demo's frame counts, and on the
demo it keeps DIS inside [0, 1] for the gaps it simulates while still falling steadily as the
gap grows (see ``tests/metrics/test_dis.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from s2r.errors import MetricError
from s2r.checks import check_choice, check_embedding_values, check_embeddings, check_number

DEFAULT_PCA_DIM = 16
DISTANCES = ("squared", "euclidean")
# A PCA component whose variance is below this fraction of the total carries no signal: it is
# floating-point noise that min-max scaling would blow up to [0, 1]; it is held at 0 instead.
_DEGENERATE_VARIANCE = 1e-10
_CHUNK = 4096        # rows per block of DISSpace.transform


@dataclass(frozen=True)
class DISResult:
    """Domain invariance score and everything used to compute it.

    Attributes
    ----------
    value : float
        DIS (higher = more domain-invariant; 1 = identical centroids).
    pca_dim : int
        Number of PCA components ``k``.
    distance : str
        ``"squared"`` (eq. 1) or ``"euclidean"``.
    explained_variance : float
        Fraction of the total variance kept by the ``k`` components, in [0, 1].
    n_sim, n_real : int
        Frames per domain.
    squared_distance : float
        ``||c_real - c_sim||^2`` in the scaled PCA space (in [0, k]).
    random_state : int
        Seed of the PCA solver.
    explained_variance_ratio : tuple of float
        Per-component variance fractions (length ``k``).
    sim_centroid, real_centroid : tuple of float
        Centroids in the scaled PCA space (length ``k``, each in [0, 1]).
    warnings : tuple of str
        Documented fallbacks that applied (e.g. degenerate components held at 0).
    """

    value: float
    pca_dim: int
    distance: str
    explained_variance: float
    n_sim: int
    n_real: int
    squared_distance: float
    random_state: int
    explained_variance_ratio: tuple = field(default=(), repr=False)
    sim_centroid: tuple = field(default=(), repr=False)
    real_centroid: tuple = field(default=(), repr=False)
    warnings: tuple = ()

    def to_dict(self) -> dict:
        """JSON-ready dict of every field."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class DISSpace:
    """The fitted PCA + min-max map of step 1-2 (reused unchanged by the bootstrap).

    Attributes
    ----------
    mean : ndarray of shape (D,)
        PCA centre.
    components : ndarray of shape (k, D)
        PCA axes (rows).
    low : ndarray of shape (k,)
        Minimum of each component over the fitting frames.
    scale : ndarray of shape (k,)
        ``1 / (max - min)`` per component, 0 for degenerate components.
    explained_variance_ratio : ndarray of shape (k,)
    warnings : tuple of str
    """

    mean: np.ndarray
    components: np.ndarray
    low: np.ndarray
    scale: np.ndarray
    explained_variance_ratio: np.ndarray
    warnings: tuple = ()

    def transform(self, Z: np.ndarray) -> np.ndarray:
        """Scaled PCA coordinates, ``(N, k)`` float64 (in [0, 1] for the fitting frames)."""
        P = np.empty((len(Z), len(self.components)))
        for s in range(0, len(Z), _CHUNK):      # no N x D float64 copy of the embeddings
            P[s:s + _CHUNK] = (np.asarray(Z[s:s + _CHUNK], dtype=np.float64)
                               - self.mean) @ self.components.T
        return (P - self.low) * self.scale


def check_pca_dim(pca_dim, n_frames: int, n_features: int) -> None:
    """Raise :class:`MetricError` unless ``1 <= pca_dim <= min(n_frames - 1, n_features)``."""
    check_number("pca_dim", pca_dim, low=1, integer=True)
    limit = min(n_frames - 1, n_features)
    if pca_dim > limit:
        raise MetricError(
            f"pca_dim={pca_dim} is too large for {n_frames} frames of dimension {n_features}: "
            f"PCA can give at most min(frames - 1, dimension) = {limit} components. Use more "
            f"frames or a smaller --pca-dim (keep it the same for every encoder you compare)")


def fit_dis_space(Z, *, pca_dim: int = DEFAULT_PCA_DIM, random_state: int = 0) -> DISSpace:
    """Fit steps 1-2 of the DIS on all frames: PCA to ``pca_dim``, then min-max to [0, 1].

    Parameters
    ----------
    Z : array-like of shape (N, D)
        Embeddings of all frames (both domains).
    pca_dim : int
        Common dimension ``k``; ``1 <= k <= min(N - 1, D)``.
    random_state : int
        Seed of the PCA solver (randomised SVD on large inputs).

    Returns
    -------
    DISSpace
    """
    from sklearn.decomposition import PCA

    Z = check_embedding_values(check_embeddings(Z).Z)
    check_pca_dim(pca_dim, *Z.shape)
    pca = PCA(n_components=int(pca_dim), random_state=int(random_state)).fit(Z)
    P = pca.transform(Z).astype(np.float64)
    low, high = P.min(axis=0), P.max(axis=0)
    ratio = np.asarray(pca.explained_variance_ratio_, dtype=np.float64)
    degenerate = (ratio <= _DEGENERATE_VARIANCE) | (high - low <= 0)
    scale = np.where(degenerate, 0.0, 1.0 / np.where(degenerate, 1.0, high - low))
    warnings = ()
    if degenerate.any():
        warnings = (f"DIS: {int(degenerate.sum())} of {pca_dim} PCA components have no variance "
                    f"(the embeddings have rank < {pca_dim}); they are held at 0 and add "
                    "nothing to the distance",)
    return DISSpace(mean=np.asarray(pca.mean_, dtype=np.float64),
                    components=np.asarray(pca.components_, dtype=np.float64),
                    low=low, scale=scale, explained_variance_ratio=ratio, warnings=warnings)


def dis_from_centroids(sim_centroid, real_centroid, distance: str = "squared") -> float:
    """Eq. (1): ``1 - ||real - sim||^2`` (``"squared"``) or ``1 - ||real - sim||``."""
    check_choice("distance", distance, DISTANCES)
    diff = np.asarray(real_centroid, dtype=np.float64) - np.asarray(sim_centroid, dtype=np.float64)
    sq = float(diff @ diff)
    return 1.0 - (sq if distance == "squared" else float(np.sqrt(sq)))


def bootstrap_dis(diffs, distance: str = "squared") -> np.ndarray:
    """DIS of bootstrap replicates, with the resampling inflation of the distance removed.

    Resampling episodes moves both centroids at random, which adds the variance of their
    difference to every replicate's squared distance: ``E*||d*||^2 = ||d||^2 + tr Cov*(d*)``.
    The replicates of the squared distance are therefore nearly all larger than the estimate's
    and a percentile or BCa interval degenerates. Each replicate's squared distance is corrected by
    ``tr Cov*(d*)``, the
    bootstrap's own estimate of that inflation, before DIS is formed; the corrected replicates
    scatter around the estimate with the spread of the centroids.

    Parameters
    ----------
    diffs : array-like of shape (B, k)
        ``c_real - c_sim`` of each replicate, in the fitted DIS space.
    distance : {"squared", "euclidean"}

    Returns
    -------
    ndarray of shape (B,)
        DIS of each replicate (may exceed 1 where the corrected distance falls below 0; the
        interval is clipped to DIS's range afterwards).
    """
    check_choice("distance", distance, DISTANCES)
    d = np.asarray(diffs, dtype=np.float64)
    inflation = float(((d - d.mean(axis=0)) ** 2).sum(axis=1).mean())
    sq = (d ** 2).sum(axis=1) - inflation
    if distance == "squared":
        return 1.0 - sq
    return 1.0 - np.sign(sq) * np.sqrt(np.abs(sq))


def domain_invariance_score(Z, domain, *, pca_dim: int = DEFAULT_PCA_DIM,
                            distance: str = "squared", random_state: int = 0) -> DISResult:
    """Domain invariance score, eq. (1) of the paper.

    Parameters
    ----------
    Z : array-like of shape (N, D)
        Embeddings of sim and real frames.
    domain : array-like of shape (N,)
        ``"sim"`` or ``"real"`` per frame.
    pca_dim : int, default 16
        Common PCA dimension ``k`` (fitted on all frames). Keep it fixed across the encoders
        being compared; ``k <= min(N - 1, D)``.
    distance : {"squared", "euclidean"}, default "squared"
        Eq. (1) squares the centroid distance; the text (and the reference code) use the plain
        Euclidean distance.
    random_state : int, default 0
        Seed of the PCA solver.

    Returns
    -------
    DISResult
        ``value`` in ``[1 - k, 1]`` (squared) or ``[1 - sqrt(k), 1]`` (euclidean).

    Raises
    ------
    MetricError
        One domain missing, ``pca_dim`` too large, constant or non-finite embeddings.

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.array([[0., 0.], [1., 2.], [0., 2.], [1., 0.]])
    >>> round(domain_invariance_score(Z, ["sim", "sim", "real", "real"], pca_dim=2).value, 6)
    1.0
    """
    check_choice("distance", distance, DISTANCES)
    checked = check_embeddings(Z, domain)
    space = fit_dis_space(checked.Z, pca_dim=pca_dim, random_state=random_state)
    P = space.transform(checked.Z)
    is_real = checked.domain == "real"
    c_sim, c_real = P[~is_real].mean(axis=0), P[is_real].mean(axis=0)
    diff = c_real - c_sim
    return DISResult(
        value=dis_from_centroids(c_sim, c_real, distance), pca_dim=int(pca_dim),
        distance=distance, explained_variance=float(space.explained_variance_ratio.sum()),
        n_sim=int((~is_real).sum()), n_real=int(is_real.sum()),
        squared_distance=float(diff @ diff), random_state=int(random_state),
        explained_variance_ratio=tuple(float(v) for v in space.explained_variance_ratio),
        sim_centroid=tuple(float(v) for v in c_sim),
        real_centroid=tuple(float(v) for v in c_real), warnings=space.warnings)
