"""Name suggestions for error messages ("Did you mean: ...?"), a leaf helper."""

from __future__ import annotations

import difflib


def close_matches(name: str, candidates, *, n: int = 5, cutoff: float = 0.5) -> list:
    """Up to ``n`` of ``candidates`` closest to ``name`` (difflib ratio >= ``cutoff``)."""
    return difflib.get_close_matches(name, list(candidates), n=n, cutoff=cutoff)


def did_you_mean(name: str, candidates, *, n: int = 5, cutoff: float = 0.5) -> str:
    """``"Did you mean: a, b?"`` over ``candidates``, or ``"No close names."``."""
    close = close_matches(name, candidates, n=n, cutoff=cutoff)
    return f"Did you mean: {', '.join(close)}?" if close else "No close names."
