"""The one adapter from the library's progress callbacks to Streamlit's progress bars.

Every long step of the library reports ``progress(done, total, message)``
(:data:`s2r.progress.ProgressCallback`); :func:`progress_bar` draws it on an ``st.progress``
bar, updating at most every ``step`` of the way (or when the message changes), so a callback
fired per frame costs nothing. ``text`` formats what the bar says; ``on_message`` also
receives each new message (e.g. an ``st.status`` box's label).
"""

from __future__ import annotations

from typing import Callable, Optional

from s2r.progress import ProgressCallback

__all__ = ["progress_bar", "count_text", "megabytes_text"]


def count_text(done: int, total: int, message: str) -> str:
    """``"message (done/total)"``."""
    return f"{message} ({done}/{total})"


def megabytes_text(done: int, total: int, message: str) -> str:
    """``"message: 1.5 MB of 40.0 MB"`` (``done``/``total`` in bytes; total 0 = unknown)."""
    return (f"{message}: {done / 2**20:.1f} MB"
            + (f" of {total / 2**20:.1f} MB" if total else ""))


def progress_bar(bar, *, text: Callable[[int, int, str], str] = lambda d, t, m: m,
                 default: str = "working", step: float = 0.02,
                 on_message: Optional[Callable[[str], None]] = None) -> ProgressCallback:
    """A :data:`~s2r.progress.ProgressCallback` drawing on ``bar`` (an ``st.progress``).

    Parameters
    ----------
    bar : streamlit progress element
        What ``st.progress(...)`` (or ``box.progress(...)``) returned.
    text : callable, optional
        ``text(done, total, message) -> str``, the bar's text (default: the message).
    default : str
        The message when the library gives none.
    step : float
        Redraw when the fraction moved by at least this much (or the message changed, or
        the step is done).
    on_message : callable, optional
        Called with each new message.
    """
    last = {"frac": -1.0, "msg": None}

    def progress(done: int, total: int, message: str = "") -> None:
        frac = min(max(done / total, 0.0), 1.0) if total else 0.0
        msg = message or default
        if frac - last["frac"] >= step or msg != last["msg"] or frac >= 1.0:
            bar.progress(frac, text=text(done, total, msg))
            if on_message is not None and msg != last["msg"]:
                on_message(msg)
            last.update(frac=frac, msg=msg)

    return progress
