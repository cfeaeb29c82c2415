"""The catalogue of scores: the one place a score's name, title, range and uses are written.

Every score s2r reports is one :class:`Score` row of :data:`SCORES`, in reading order (the
order of a score record's keys, of the leaderboard's columns and of every table and axis
choice). The scorer (:mod:`s2r.metrics.scoring`), the leaderboard files, the CLI's table, the
validation report and every page read their lists from here, never from a list of their own:

===================  =======================================================================
field                meaning
===================  =======================================================================
``key``              the record key (``<key>_ci_low`` / ``<key>_ci_high`` when it has an
                     interval)
``title``            axis and tooltip title
``short``            table header and radio-button label
``low``, ``high``    the score's range; intervals are clipped to it
``axis``             the part of it a chart axis shows (its meaningful range; default: the
                     range): a value beyond is drawn at the axis edge, marked off scale
                     (:mod:`s2r.figures.axes`), so one outlier cannot squeeze the others
``higher_is_better`` the direction a reader should rank it in
``interval``         bootstrapped with the record (False: a reference value, no interval)
``ranked``           the bootstrap replicates are kept for pairwise comparisons and tiers
``views``            where it is offered: ``summary`` (the CLI table, the home page's compact
                     table), ``table`` (the Scores page's full table and tooltips), ``y`` (the
                     score scatter's y axis), ``validation`` (correlated with closed-loop
                     success, and the Validation page's x axis)
``compute``          ``None`` for the scores the scorer computes itself; else a pure function
                     ``compute(Z, domain, actions, weights) -> float`` of the embeddings
                     ``(N, D)``, domains ``(N,)``, actions ``(N, A)`` and per-frame bootstrap
                     weights ``(N,)`` (all 1 for the estimate), bootstrapped like the others
``asked``            computed beside the record, and only when asked for (the object focus:
                     a Grad-CAM pass an encoder); a record holds it then, else not at all
===================  =======================================================================

Adding a score is its pure function and one row here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypedDict

__all__ = ["Score", "SCORES", "VIEWS", "ScoreRecord", "get", "scores", "keys", "interval_keys",
           "asked_keys", "held_keys", "reference_keys", "ranked_keys", "computed_keys",
           "titles", "shorts", "score_range", "axis_range"]

#: Where a score can be offered (see the module docstring).
VIEWS = ("summary", "table", "y", "validation")
_INF = math.inf


@dataclass(frozen=True)
class Score:
    """One score of the catalogue (fields: the module docstring's table)."""

    key: str
    title: str
    short: str
    low: float = -_INF
    high: float = _INF
    axis: Optional[tuple[float, float]] = None
    higher_is_better: bool = True
    interval: bool = True
    ranked: bool = False
    views: tuple[str, ...] = ()
    compute: Optional[Callable[..., float]] = None
    asked: bool = False

    def __post_init__(self):
        unknown = set(self.views) - set(VIEWS)
        if unknown:
            raise ValueError(f"score {self.key!r}: unknown views {sorted(unknown)}; "
                             f"expected some of {VIEWS}")
        if not self.low < self.high:
            raise ValueError(f"score {self.key!r}: range [{self.low}, {self.high}] is empty")
        if self.axis is not None and not (math.isfinite(self.axis[0])
                                          and math.isfinite(self.axis[1])
                                          and self.axis[0] < self.axis[1]):
            raise ValueError(f"score {self.key!r}: axis {self.axis} is not a finite interval")


#: Axes of the skills: 0 = the no-information floor, 1 = the robot-state ceiling; -1 = an
#: error above the floor's by as much as the ceiling's is below it; room above the ceiling.
SKILL_AXIS = (-1.0, 1.1)
#: Axes of the raw action scores (an R^2: at most 1; -1 = errors twice the actions' variance)
#: and of DIS (1 = the same centroids; -1 = a squared centroid distance of 2).
AS_AXIS = DIS_AXIS = (-1.0, 1.0)


def _skill(probe: str, title: str, short: str, **kw) -> Score:
    return Score(f"{probe}_skill", title, short, ranked=True, axis=SKILL_AXIS, **kw)


def _raw(probe: str, title: str, short: str, **kw) -> tuple[Score, ...]:
    """An action score and its no-information floor and state ceiling."""
    return (Score(probe, title, short, axis=AS_AXIS, **kw),
            Score(f"{probe}_floor", f"{title}: floor (mean action)", f"{short} floor",
                  axis=AS_AXIS),
            Score(f"{probe}_ceiling", f"{title}: ceiling (robot state)", f"{short} ceiling",
                  axis=AS_AXIS))


#: Every score, in reading order.
SCORES: tuple[Score, ...] = (
    Score("sim2real_score", "Sim2Real score", "Sim2Real", 0.0, 1.0, ranked=True,
          views=("summary", "table", "validation")),
    _skill("transfer_score", "Transfer skill (sim probe on real)", "Transfer skill",
           views=("summary", "table", "y", "validation")),
    *_raw("transfer_score", "Transfer AS (raw)", "Transfer AS", views=("table", "y", "validation")),
    _skill("action_score_heldout", "Held-out skill", "Held-out skill",
           views=("summary", "table", "y", "validation")),
    *_raw("action_score_heldout", "Held-out AS (raw)", "Held-out AS",
          views=("table", "y", "validation")),
    _skill("transfer_score_reverse", "Reverse transfer skill (real -> sim)", "Reverse skill"),
    *_raw("transfer_score_reverse", "Reverse transfer AS (raw)", "Reverse AS"),
    Score("dis", "Domain invariance (DIS)", "DIS", high=1.0, axis=DIS_AXIS, ranked=True,
          views=("summary", "table", "validation")),
    Score("dis_top_component_share", "DIS: share of the top component", "DIS top share",
          0.0, 1.0),
    Score("paired_retrieval_top1", "Paired retrieval (top-1)", "Retrieval top-1", 0.0, 1.0),
    Score("paired_retrieval_mrr", "Paired retrieval (MRR)", "Retrieval MRR", 0.0, 1.0,
          ranked=True, views=("table", "validation")),
    Score("domain_probe_accuracy", "Domain probe acc.", "Domain probe", 0.0, 1.0,
          higher_is_better=False, views=("table",)),
    Score("domain_separability", "Domain separability (d')", "Sep. d'", higher_is_better=False,
          ranked=True, views=("table",)),
    Score("object_focus", "Object focus (real saliency on the task objects)", "Object focus",
          0.0, 1.0, views=("table", "validation"), asked=True),
    Score("object_focus_floor", "Object focus: floor (uniform map)", "Object focus floor",
          0.0, 1.0, views=("table",), asked=True),
    Score("action_score_train", "Training AS (paper)", "Train AS", axis=AS_AXIS,
          views=("table", "y")),
    Score("action_score_train_null", "Training AS: permutation null", "Train AS null",
          axis=AS_AXIS, interval=False),
    Score("paired_retrieval_chance", "Paired retrieval: chance top-1", "Retrieval chance top-1",
          interval=False),
    Score("paired_retrieval_mrr_chance", "Paired retrieval: chance MRR", "Retrieval chance",
          interval=False),
)


def scores(view: Optional[str] = None, *, interval: Optional[bool] = None) -> list[Score]:
    """The catalogue's rows (in reading order), those offered in ``view`` and/or those with
    (``interval=True``) or without an interval."""
    if view is not None and view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; expected one of {VIEWS}")
    return [s for s in SCORES if (view is None or view in s.views)
            and (interval is None or s.interval == interval)]


def get(key: str) -> Score:
    """The row of ``key``; ``KeyError`` naming the known keys otherwise."""
    for s in SCORES:
        if s.key == key:
            return s
    raise KeyError(f"unknown score {key!r}; known: {', '.join(s.key for s in SCORES)}")


def keys(view: Optional[str] = None) -> list[str]:
    """Score keys offered in ``view`` (every key when None), in reading order."""
    return [s.key for s in scores(view)]


def interval_keys() -> list[str]:
    """Every score with an interval that every record holds (``<key>_ci_low`` /
    ``<key>_ci_high``); the ones computed only when asked for are :func:`asked_keys`."""
    return [s.key for s in scores(interval=True) if not s.asked]


def asked_keys() -> list[str]:
    """The scores a record holds only when they were asked for (``asked``)."""
    return [s.key for s in SCORES if s.asked]


def held_keys(view: str, rows) -> list[str]:
    """The scores of ``view`` to report for ``rows`` (records or report rows): every score,
    except one computed only when asked for that no row holds a value of."""
    return [k for k in keys(view) if not get(k).asked
            or any(r.get(k) is not None for r in rows)]


def reference_keys() -> list[str]:
    """Reference values without an interval."""
    return [s.key for s in scores(interval=False)]


def ranked_keys() -> list[str]:
    """Scores whose bootstrap replicates records keep for pairwise comparisons."""
    return [s.key for s in SCORES if s.ranked]


def computed_keys() -> list[str]:
    """Scores computed by a catalogue function (``compute``), not by the scorer itself: part
    of a score record's cache key, so adding one recomputes records instead of reading ones
    without it."""
    return [s.key for s in SCORES if s.compute is not None]


def titles(view: Optional[str] = None) -> dict[str, str]:
    """``key -> title`` of the scores in ``view``."""
    return {s.key: s.title for s in scores(view)}


def shorts(view: Optional[str] = None) -> dict[str, str]:
    """``key -> short label`` of the scores in ``view``."""
    return {s.key: s.short for s in scores(view)}


def score_range(key: str) -> tuple[float, float]:
    """``(low, high)`` of ``key`` (unbounded for a key the catalogue does not hold)."""
    try:
        s = get(key)
    except KeyError:
        return -_INF, _INF
    return s.low, s.high


def axis_range(key: str) -> tuple[float, float]:
    """``(low, high)`` a chart axis of ``key`` shows: its ``axis`` where the row gives one,
    else its range (unbounded for a key the catalogue does not hold)."""
    try:
        s = get(key)
    except KeyError:
        return -_INF, _INF
    return s.axis if s.axis is not None else (s.low, s.high)


class ScoreRecord(TypedDict, total=False):
    """One encoder's score record (:func:`s2r.metrics.scoring.score_embeddings`, then the
    pipeline's ``encoder``/``dataset``/``precision``). Besides these keys it holds, for every
    catalogue row, ``<key>`` (float or None) and, for rows with an interval, ``<key>_ci_low``
    and ``<key>_ci_high``."""

    encoder: dict
    dataset: dict
    precision: str
    not_estimable: dict
    skill_reference: dict
    params: dict
    n_frames: dict
    n_episodes: dict
    heldout_unit: dict
    n_folds: int
    ridge_alpha_used: dict
    ridge_alpha_choice: dict
    embedding_dim: int
    dis_explained_variance: float
    constant_action_dims: list
    paired_retrieval_queries: int
    has_ceiling: bool
    replicates: dict
    bootstrap_id: Any
    score_version: int
    warnings: list
