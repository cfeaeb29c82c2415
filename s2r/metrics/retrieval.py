"""Paired retrieval: does a sim frame's embedding find the real frame of the same situation?

For each sim frame (the query), its *partner* is the real frame whose robot state is nearest
(:mod:`s2r.pairing`). Every real frame is ranked by its embedding distance to the query; the
partner's rank says whether the encoder maps the same situation in the two domains to the
same place:

- ``top1``: share of queries whose partner is the nearest real frame (chance ``1 / R`` for
  ``R`` real frames);
- ``mrr``: mean reciprocal rank of the partner (chance ``H_R / R``, ``H_R`` the harmonic
  number).

Unlike DIS it cannot be bought by collapse: equal distances are ranked at random (the
expected values under random tie-breaking are used), so an embedding that maps every frame to
one point scores exactly chance, and it does not saturate as long as some partner is missed.
Distances are Euclidean after standardising each embedding feature over all frames -- the
standardisation :mod:`s2r.pairing` applies to the state, so the ``state`` reference encoder
retrieves every partner (top-1 = 1) and a feature's units do not decide the ranking. No label
is used, so nothing leaks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from s2r.errors import MetricError
from s2r.metrics import _moments as mom

#: Most sim frames used as queries (evenly spaced over the sim frames); every real frame is
#: always in the gallery. 4,096 queries against 50,000 real frames of 2,048-D take a few
#: seconds on a CPU.
MAX_QUERIES = 4096
_BLOCK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class RetrievalRanks:
    """Expected top-1 hit and reciprocal rank of every query.

    Attributes
    ----------
    queries : ndarray of shape (Q,), int
        Frame index of each query (sim frame).
    top1 : ndarray of shape (Q,)
        Probability that the partner is ranked first (ties broken at random).
    reciprocal_rank : ndarray of shape (Q,)
        Expected ``1 / rank`` of the partner.
    n_gallery : int
        Real frames ranked (``R``).
    """

    queries: np.ndarray
    top1: np.ndarray
    reciprocal_rank: np.ndarray
    n_gallery: int


def chance_levels(n_gallery: int) -> tuple[float, float]:
    """``(top1, mrr)`` of a random ranking of ``n_gallery`` frames: ``1/R`` and ``H_R/R``."""
    if n_gallery < 1:
        raise MetricError("paired retrieval needs at least one real frame")
    harmonic = float(np.sum(1.0 / np.arange(1, n_gallery + 1)))
    return 1.0 / n_gallery, harmonic / n_gallery


def query_frames(sim_indices: np.ndarray, max_queries: int = MAX_QUERIES) -> np.ndarray:
    """Positions (into ``sim_indices``) of the queries: all, or ``max_queries`` evenly spaced."""
    n = len(sim_indices)
    if n <= max_queries:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_queries).round().astype(np.int64))


def _feature_scaling(Z, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and standard deviation (1 where constant) over all rows, in chunks."""
    n = len(Z)
    total = np.zeros(Z.shape[1])
    squares = np.zeros(Z.shape[1])
    for start in range(0, n, chunk):
        block = np.asarray(Z[start:start + chunk], dtype=np.float64)
        total += block.sum(axis=0)
        squares += (block ** 2).sum(axis=0)
    mean = total / n
    std = np.sqrt(np.maximum(squares / n - mean ** 2, 0.0))
    return mean, np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)


def partner_ranks(Z, queries, partners, gallery, *, standardise: bool = True,
                  block_elements: int = _BLOCK_ELEMENTS) -> RetrievalRanks:
    """Rank of each query's partner among the gallery frames by embedding distance.

    Parameters
    ----------
    Z : ndarray of shape (N, D)
        Embeddings of every frame.
    queries : array-like of shape (Q,), int
        Frame index of each query.
    partners : array-like of shape (Q,), int
        Frame index of each query's partner; must be in ``gallery``.
    gallery : array-like of shape (R,), int
        Frame indices ranked for every query.
    standardise : bool, default True
        Standardise each feature over all frames of ``Z`` first (see the module docstring).
    block_elements : int
        Memory bound: queries are ranked in blocks of ``block_elements / R`` rows (the
        result does not depend on it).

    Returns
    -------
    RetrievalRanks
        With ``c`` frames strictly closer than the partner and ``t`` others at the same
        distance, the hit probability is ``1 / (t + 1)`` when ``c = 0`` (else 0) and the
        expected reciprocal rank ``(H_{c+t+1} - H_c) / (t + 1)``.
    """
    queries = np.asarray(queries, dtype=np.int64)
    partners = np.asarray(partners, dtype=np.int64)
    gallery = np.asarray(gallery, dtype=np.int64)
    if queries.shape != partners.shape:
        raise MetricError(f"paired retrieval: {queries.size} queries but {partners.size} "
                          "partners")
    if not np.isin(partners, gallery).all():
        raise MetricError("paired retrieval: every partner must be a gallery (real) frame")
    mean, feature_scale = _feature_scaling(Z) if standardise else (0.0, 1.0)

    def rows(idx):
        return (np.asarray(Z[idx], dtype=np.float64) - mean) / feature_scale

    G = mom.standardised(Z[gallery], mean, feature_scale, dtype=np.float64)  # chunked
    g_sq = (G ** 2).sum(axis=1)
    closer = np.empty(queries.size, dtype=np.int64)
    ties = np.empty(queries.size, dtype=np.int64)
    block = max(1, int(block_elements) // max(1, len(gallery)))
    for start in range(0, queries.size, block):
        q = rows(queries[start:start + block])
        p = rows(partners[start:start + block])
        # Squared distances up to the per-query constant |q|^2.
        d = g_sq[None, :] - 2.0 * (q @ G.T)
        d_partner = ((p ** 2).sum(axis=1) - 2.0 * (q * p).sum(axis=1))[:, None]
        # Equal up to round-off, relative to each query's largest distance term.
        tol = 1e-9 * np.maximum(np.abs(d).max(axis=1, keepdims=True), 1e-300)
        closer[start:start + block] = (d < d_partner - tol).sum(axis=1)
        ties[start:start + block] = (np.abs(d - d_partner) <= tol).sum(axis=1) - 1
    ties = np.maximum(ties, 0)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, len(gallery) + 1))])
    top1 = np.where(closer == 0, 1.0 / (ties + 1), 0.0)
    rr = (harmonic[closer + ties + 1] - harmonic[closer]) / (ties + 1)
    return RetrievalRanks(queries, top1, rr, int(len(gallery)))
