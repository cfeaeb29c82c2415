"""What an action score must be compared to: its floor, its ceiling, the skill between them,
and when a score cannot be estimated at all.

Floor
    The score of the no-information predictor on the same split: the training mean action
    (held-out AS), the sim mean action on real frames (sim -> real transfer). An encoder at its
    floor has told the probe nothing.
Ceiling
    The same probe, same split and same penalty selection, fitted on the robot **state**
    instead of the embedding (datasets with state only): what a perfect state estimator would
    give a linear policy head. None without state.
Skill
    ``(score - floor) / (ceiling - floor)``: the share of the floor-to-ceiling gap the encoder
    recovers (0 = no information, 1 = as good as the state). Without a ceiling, or when the
    ceiling is less than :data:`MIN_CEILING_GAIN` above the floor (the state does not predict
    the actions either, e.g. under the shuffled-action null), the reference is a perfect
    prediction instead: ``(score - floor) / (1 - floor)``.
"""

from __future__ import annotations

import math
from typing import Optional

#: Fewest groups (episodes; time blocks of a single-episode domain) per domain for a held-out
#: or transfer score: penalty selection needs folds inside every training set and the
#: bootstrap needs episodes to resample. With fewer, the score is reported as not estimable.
MIN_EPISODES = 4
#: Fewest frames per time block when a domain's single episode is cut into blocks.
MIN_FRAMES_PER_BLOCK = 10
#: Smallest ceiling - floor gap that the skill is measured against (below it: 1 - floor).
MIN_CEILING_GAIN = 0.05


def skill_reference(floor: float, ceiling: Optional[float]) -> str:
    """``"ceiling"`` when the ceiling is usable (at least :data:`MIN_CEILING_GAIN` above the
    floor), else ``"perfect"`` (skill measured against a perfect prediction, AS = 1)."""
    if ceiling is not None and ceiling - floor >= MIN_CEILING_GAIN:
        return "ceiling"
    return "perfect"


def skill(score: float, floor: float, ceiling: Optional[float], reference: str) -> float:
    """``(score - floor) / (top - floor)`` with ``top`` the ceiling or 1 (``reference``).

    The denominator is kept at least :data:`MIN_CEILING_GAIN` so that a bootstrap replicate in
    which the ceiling happens to fall onto the floor cannot produce an unbounded value.

    Examples
    --------
    >>> skill(0.5, 0.0, 0.8, "ceiling")
    0.625
    >>> skill(0.5, 0.0, None, "perfect")
    0.5
    """
    top = ceiling if reference == "ceiling" else 1.0
    return (float(score) - float(floor)) / max(float(top) - float(floor), MIN_CEILING_GAIN)


def estimability(unit: dict, n_groups: dict, frames_per_group: dict) -> Optional[str]:
    """Why the held-out and transfer scores cannot be estimated, or None when they can.

    Parameters
    ----------
    unit : dict
        ``{"sim": "episode" | "time-block", "real": ...}`` (:class:`~s2r.metrics.folds.Folds`).
    n_groups : dict
        Groups per domain.
    frames_per_group : dict
        Fewest frames in a group of each domain.
    """
    for d in ("sim", "real"):
        if unit[d] == "episode" and n_groups[d] < MIN_EPISODES:
            return (f"the {d} domain has {n_groups[d]} episode(s); held-out and transfer "
                    f"scores need at least {MIN_EPISODES} per domain (penalty selection holds "
                    "out episodes inside every training set, and the interval resamples "
                    "episodes)")
        if unit[d] == "time-block" and frames_per_group[d] < MIN_FRAMES_PER_BLOCK:
            return (f"the {d} domain is one episode cut into time blocks of "
                    f"{frames_per_group[d]} frame(s); at least {MIN_FRAMES_PER_BLOCK} per block "
                    f"are needed (record more frames or more episodes)")
    return None


def sim2real_score(transfer_skill: float, dis: float) -> float:
    """``sqrt(clip(transfer_skill, 0, 1) * clip(dis, 0, 1))``.

    The geometric mean of the sim -> real transfer skill and the domain invariance score: in
    [0, 1], 1 only when a sim-trained probe reads the real robot's actions as well as the
    state does *and* the domain centroids coincide, 0 when either is at or below its floor.

    Examples
    --------
    >>> sim2real_score(0.81, 1.0)
    0.9
    >>> sim2real_score(-0.2, 0.9)
    0.0
    """
    t = min(max(float(transfer_skill), 0.0), 1.0)
    d = min(max(float(dis), 0.0), 1.0)
    return math.sqrt(t * d)


#: The formula recorded in every score record's ``params``.
SIM2REAL_FORMULA = "sqrt(clip(transfer_score_skill, 0, 1) * clip(dis, 0, 1))"
