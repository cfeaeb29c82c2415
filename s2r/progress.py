"""One progress-callback type shared by the CLI (tqdm) and the app (``st.progress``).

A progress callback is any callable ``callback(done, total, message)`` with ``done`` and
``total`` in the same unit (frames, encoders, iterations) and a short human message. Library
functions accept ``progress=None`` and call it as work advances; they never print.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Optional

ProgressCallback = Callable[[int, int, str], None]


def report(progress: Optional[ProgressCallback], done: int, total: int, message: str = "") -> None:
    """Call ``progress`` if it is set (a no-op otherwise)."""
    if progress is not None:
        progress(int(done), int(total), message)


@contextmanager
def tqdm_progress(desc: str = "", *, disable: bool = False) -> Iterator[ProgressCallback]:
    """Context manager yielding a progress callback that drives a tqdm bar on stderr.

    Examples
    --------
    >>> with tqdm_progress("embedding") as cb:  # doctest: +SKIP
    ...     embed_frameset(frames, encoder, progress=cb)
    """
    from tqdm.auto import tqdm

    bar = None

    def callback(done: int, total: int, message: str = "") -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=desc, disable=disable, leave=True, dynamic_ncols=True)
        if total != bar.total:
            bar.total = total
        if message:
            bar.set_postfix_str(message, refresh=False)
        bar.update(done - bar.n)

    try:
        yield callback
    except BaseException:
        if bar is not None:  # erase the bar: the error line that follows stands alone
            bar.leave = False
        raise
    finally:
        if bar is not None:
            bar.close()
