"""What a rank correlation with its interval says, in one word.

A score's Spearman rho with real success is read against its floor, 0 (the rank a coin would
give), through its 95% interval: the interval above 0 means the score ranked the encoders as
deployment did (``"above chance"``), below 0 against it (``"against"``); an interval that holds
0 cannot be told from chance (``"chance"``); no rho (a constant score or outcome, fewer than 3
encoders) is ``"undefined"``. The evidence table, the Validation page's tables and every
summary read the word from :func:`verdict_of`, so they cannot disagree.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

__all__ = ["ABOVE_CHANCE", "AGAINST", "CHANCE", "UNDEFINED", "VERDICTS", "verdict_of",
           "correlation_verdict"]

ABOVE_CHANCE, AGAINST, CHANCE, UNDEFINED = "above chance", "against", "chance", "undefined"
#: Every verdict, from the best to none.
VERDICTS = (ABOVE_CHANCE, CHANCE, AGAINST, UNDEFINED)


def verdict_of(rho: Optional[float], low: Optional[float], high: Optional[float]) -> str:
    """The verdict of a correlation ``rho`` with its interval ``[low, high]``.

    Parameters
    ----------
    rho, low, high : float or None
        The estimate and its interval; ``rho`` None (undefined) gives :data:`UNDEFINED`.

    Returns
    -------
    str
        One of :data:`VERDICTS`.
    """
    if rho is None:
        return UNDEFINED
    if low > 0:
        return ABOVE_CHANCE
    if high < 0:
        return AGAINST
    return CHANCE


def correlation_verdict(c: Mapping[str, Any]) -> str:
    """:func:`verdict_of` a report's (or the evidence's) correlation row: its ``spearman``,
    ``spearman_ci_low`` and ``spearman_ci_high``."""
    return verdict_of(c.get("spearman"), c.get("spearman_ci_low"), c.get("spearman_ci_high"))
