"""Episode folds: cross-validation splits that hold out whole episodes of both domains.

Frames of one episode are strongly correlated, so every held-out score, every penalty
selection and the episode bootstrap group frames by episode (or, for a domain recorded as a
single episode, by contiguous time block). :func:`episode_folds` is the one place that
decides those groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from s2r.errors import MetricError
from s2r.checks import check_number

DEFAULT_N_FOLDS = 5


@dataclass(frozen=True)
class Folds:
    """Episode-grouped, domain-stratified cross-validation folds.

    Attributes
    ----------
    group : ndarray of shape (N,), int
        Group (episode, or time block of an episode) of each frame, ``0..G-1``.
    group_domain : ndarray of shape (G,), str
    group_episode : ndarray of shape (G,), int
    group_fold : ndarray of shape (G,), int
        Fold of each group, ``0..n_folds-1``; every fold has groups of both domains.
    n_folds : int
    unit : dict
        ``{"sim": "episode"|"time-block", "real": ...}``: what a group is in each domain.
    warnings : tuple of str
    """

    group: np.ndarray
    group_domain: np.ndarray
    group_episode: np.ndarray
    group_fold: np.ndarray
    n_folds: int
    unit: dict
    warnings: tuple = ()

    @property
    def n_groups(self) -> int:
        return int(self.group_domain.size)

    @property
    def frame_fold(self) -> np.ndarray:
        """Fold of each frame, ``(N,)``."""
        return self.group_fold[self.group]


def episode_folds(domain, episode, *, n_folds: int = DEFAULT_N_FOLDS, seed: int = 0) -> Folds:
    """Split frames into folds of whole episodes, each fold holding episodes of both domains.

    Within each domain the episodes are shuffled (``numpy.random.default_rng(seed)``) and dealt
    round-robin to ``K = min(n_folds, fewest episodes in a domain)`` folds (GroupKFold,
    stratified by domain). Training on ``K - 1`` folds and testing on the last gives a score
    on episodes never seen in training.

    Fallback (documented, with a warning): a domain with a single episode cannot be split by
    episode; its frames -- taken in the given order, which FrameSet loaders keep temporal --
    are cut into ``n_folds`` contiguous time blocks that act as episodes. Held-out scores are
    then optimistic (neighbouring blocks are correlated).

    Parameters
    ----------
    domain : array-like of shape (N,)
    episode : array-like of shape (N,), int
    n_folds : int, default 5
        At least 2.
    seed : int

    Returns
    -------
    Folds

    Raises
    ------
    MetricError
        Fewer than 2 frames in a domain (nothing to hold out).
    """
    check_number("n_folds", n_folds, low=2, integer=True)
    domain = np.asarray(domain)
    episode = np.asarray(episode)
    n = domain.size
    group = np.empty(n, dtype=np.int64)
    g_dom, g_ep, unit, warns = [], [], {}, []
    per_domain = {}
    for d in ("sim", "real"):
        idx = np.flatnonzero(domain == d)
        eps = np.unique(episode[idx])
        if eps.size >= 2:
            unit[d] = "episode"
            keys = np.searchsorted(eps, episode[idx])
            per_domain[d] = (idx, keys, eps, eps.size)
        else:
            if idx.size < 2:
                raise MetricError(
                    f"the {d!r} domain has {idx.size} frame(s): at least 2 are needed to hold "
                    "some out for held-out scores")
            blocks = min(int(n_folds), idx.size)
            unit[d] = "time-block"
            keys = (np.arange(idx.size) * blocks) // idx.size
            per_domain[d] = (idx, keys, np.full(blocks, eps[0]), blocks)
            warns.append(
                f"held-out split: the {d!r} domain has a single episode, so its frames are cut "
                f"into {blocks} contiguous time blocks used as episodes (held-out scores are "
                "optimistic; bootstrap intervals resample these blocks)")
    k = min(int(n_folds), *(v[3] for v in per_domain.values()))
    rng = np.random.default_rng(seed)
    folds = []
    for d in ("sim", "real"):
        idx, keys, ep_of_key, m = per_domain[d]
        base = len(g_dom)
        group[idx] = base + keys
        g_dom += [d] * m
        g_ep += list(ep_of_key)
        fold = np.empty(m, dtype=np.int64)
        fold[rng.permutation(m)] = np.arange(m) % k
        folds.append(fold)
    return Folds(group=group, group_domain=np.array(g_dom), group_episode=np.array(g_ep),
                 group_fold=np.concatenate(folds), n_folds=k, unit=unit, warnings=tuple(warns))
