"""The settings a score record depends on, and the null control.

:class:`ScoreParams` holds every setting of :func:`s2r.metrics.scoring.score_embeddings`
(recorded in each record and in its cache key); :func:`parse_null` and
:func:`shuffle_actions` implement the ``null="shuffle[:SEED]"`` control.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Optional, Union

import numpy as np

from s2r.errors import MetricError
from s2r.inputs import is_integer_text
from s2r.metrics.action_probe import DEFAULT_RIDGE_ALPHA, PAPER_TRAIN_ALPHA
from s2r.metrics.baselines import SIM2REAL_FORMULA
from s2r.metrics.bootstrap import DEFAULT_CI, DEFAULT_N_BOOT
from s2r.metrics.dis import DEFAULT_PCA_DIM, DISTANCES
from s2r.metrics.domain_probe import DEFAULT_DOMAIN_C
from s2r.metrics.folds import DEFAULT_N_FOLDS
from s2r.checks import check_choice, check_number

#: Actions permuted within each domain: ``"shuffle"`` or ``"shuffle:SEED"``.
NULL_PREFIX = "shuffle"


def parse_null(null: Optional[str]) -> Optional[int]:
    """Seed of a ``"shuffle[:SEED]"`` null control (0 when no seed is given), None for none."""
    if null is None:
        return None
    text = str(null)
    head, _, seed = text.partition(":")
    if head != NULL_PREFIX or (seed and not (is_integer_text(seed) and int(seed) >= 0)):
        raise MetricError(f"null must be 'shuffle' or 'shuffle:SEED' (SEED a non-negative "
                          f"integer), got {null!r}")
    return int(seed or 0)


@dataclass(frozen=True)
class ScoreParams:
    """Every setting a score depends on (recorded in each record and in its cache key).

    Attributes
    ----------
    pca_dim : int, default 16
        DIS common PCA dimension ``k``; keep it fixed across encoders.
    distance : {"squared", "euclidean"}, default "squared"
        DIS distance (eq. 1 squares it; the text says Euclidean).
    ridge_alpha : float or "auto", default "auto"
        Ridge penalty of the held-out and transfer probes (and of their state ceilings), as a
        fraction of the training embeddings' total variance. ``"auto"`` chooses it from
        :data:`s2r.metrics.ALPHA_GRID` inside each training set (nested
        cross-validation for the held-out score; cross-validation over the source domain's
        episodes for the transfer scores); the choices are in ``ridge_alpha_used``.
    train_alpha : float, default 1e-3
        The fixed penalty of the paper's training AS, the same for every encoder.
    seed : int, default 0
        Seed of the PCA solver, the fold assignment and the bootstrap.
    n_boot : int, default 200
        Bootstrap replicates (0 = no intervals: the ``_ci_`` fields are None).
    ci : float, default 0.95
        Coverage of the intervals.
    n_folds : int, default 5
        Episode folds of the held-out scores.
    domain_C : float, default 1.0
        Inverse L2 penalty of the domain probe.
    null : str or None, default None
        ``"shuffle[:SEED]"``: permute the actions across frames within each domain before
        scoring (a null control: every skill should then be 0 within its interval).
    """

    pca_dim: int = DEFAULT_PCA_DIM
    distance: str = "squared"
    ridge_alpha: Union[float, str] = DEFAULT_RIDGE_ALPHA
    train_alpha: float = PAPER_TRAIN_ALPHA
    seed: int = 0
    n_boot: int = DEFAULT_N_BOOT
    ci: float = DEFAULT_CI
    n_folds: int = DEFAULT_N_FOLDS
    domain_C: float = DEFAULT_DOMAIN_C
    null: Optional[str] = None

    def validate(self) -> "ScoreParams":
        """Raise :class:`MetricError` naming the first bad field; return ``self``."""
        check_number("pca_dim", self.pca_dim, low=1, integer=True)
        check_choice("distance", self.distance, DISTANCES)
        if isinstance(self.ridge_alpha, str):
            if self.ridge_alpha != "auto":
                raise MetricError(f"ridge_alpha must be a number >= 0 or 'auto', got "
                                  f"{self.ridge_alpha!r}")
        else:
            check_number("ridge_alpha", self.ridge_alpha, low=0)
        check_number("train_alpha", self.train_alpha, low=0)
        check_number("seed", self.seed, low=0, integer=True)
        check_number("n_boot", self.n_boot, low=0, integer=True)
        check_number("ci", self.ci, low=0, high=1, low_open=True)
        if not self.ci < 1:
            raise MetricError(f"ci must be < 1, got {self.ci!r}")
        check_number("n_folds", self.n_folds, low=2, integer=True)
        check_number("domain_C", self.domain_C, low=0, low_open=True)
        parse_null(self.null)
        return self

    def to_dict(self) -> dict:
        """Plain JSON dict (ints and floats as such) with the Sim2Real formula."""
        out = asdict(self)
        if not isinstance(out["ridge_alpha"], str):
            out["ridge_alpha"] = float(out["ridge_alpha"])
        for name in ("train_alpha", "ci", "domain_C"):
            out[name] = float(out[name])
        out["sim2real"] = SIM2REAL_FORMULA
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "ScoreParams":
        """Inverse of :meth:`to_dict` (unknown keys raise :class:`MetricError`)."""
        data = dict(data)
        formula = data.pop("sim2real", SIM2REAL_FORMULA)
        if formula != SIM2REAL_FORMULA:
            raise MetricError(f"these parameters were recorded with the Sim2Real score "
                              f"{formula!r}; this version computes {SIM2REAL_FORMULA!r}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise MetricError(f"unknown score parameter(s) {unknown}; known: {sorted(names)}")
        return cls(**data).validate()


def shuffle_actions(actions, domain, seed: int) -> np.ndarray:
    """Actions permuted across frames within each domain (``numpy.random.default_rng(seed)``)."""
    actions = np.array(actions, copy=True)
    domain = np.asarray(domain)
    rng = np.random.default_rng(seed)
    for d in ("sim", "real"):
        idx = np.flatnonzero(domain == d)
        actions[idx] = actions[rng.permutation(idx)]
    return actions
