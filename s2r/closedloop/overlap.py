"""Rollout runs of one policy stepped side by side, their progress reported from the caller.

A world whose rollouts step and draw in worker processes (Meta-World) leaves its main
process waiting while the workers draw, and its workers waiting while the main process runs
the encoder. :func:`run_overlapped` runs independent jobs (one :func:`~s2r.closedloop.rollout.
run_rollouts` each) on ``lanes`` threads, so one run's encoder pass fills the time another
run's frames are drawn. Each run keeps its own batches, so its encoder sees the same frames in
the same batches as it would alone: the outcomes are the same as one run after another.

Progress callbacks are called only from the calling thread (a dashboard's progress bar belongs
to it): the jobs' reports are relayed and passed on between waits. When the caller is
interrupted or a job fails, the other jobs stop at their next step.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Optional, Sequence, TypeVar

from s2r.progress import ProgressCallback, report

__all__ = ["run_overlapped"]

T = TypeVar("T")
#: Seconds between two relays of the jobs' progress to the caller.
RELAY_S = 0.25


class _Stopped(Exception):
    """Raised inside a job's progress callback when the run as a whole stops."""


class _Relay:
    """The latest ``(done, total, message)`` of every job, passed on from the caller."""

    def __init__(self, n: int):
        self._lock = threading.Lock()
        self._latest: list = [None] * n
        self._changed = False
        self.stopped = threading.Event()

    def lane(self, i: int) -> ProgressCallback:
        def callback(done: int, total: int, message: str = "") -> None:
            if self.stopped.is_set():
                raise _Stopped
            with self._lock:
                self._latest[i], self._changed = (int(done), int(total), message), True
        return callback

    def finish(self, i: int) -> None:
        """Job ``i`` ended: it counts as done, its message is no longer shown."""
        with self._lock:
            if self._latest[i] is not None:
                total = self._latest[i][1]
                self._latest[i], self._changed = (total, total, ""), True

    def flush(self, progress: Optional[ProgressCallback]) -> None:
        """Report the jobs' steps summed (ended jobs' in full) and the running ones' messages."""
        with self._lock:
            known = [x for x in self._latest if x is not None]
            changed, self._changed = self._changed, False
        if changed and known:
            report(progress, sum(x[0] for x in known), sum(x[1] for x in known),
                   " · ".join(x[2] for x in known if x[2]))


def run_overlapped(jobs: Sequence[Callable[[Optional[ProgressCallback]], T]], lanes: int,
                   progress: Optional[ProgressCallback] = None) -> list[T]:
    """Every ``job(progress)``'s result, in order, at most ``lanes`` running at once.

    Parameters
    ----------
    jobs : sequence of callable
        Independent of each other; each takes the progress callback it reports to.
    lanes : int
        Most jobs at once; 1 runs them one after another on the calling thread.
    progress : ProgressCallback, optional
        Called from the calling thread only: the running jobs' steps summed, their messages
        joined.

    Returns
    -------
    list
        ``[job(...) for job in jobs]``.

    Raises
    ------
    Exception
        The first failing job's error (the other jobs are stopped at their next report).
    """
    if int(lanes) <= 1 or len(jobs) <= 1:
        return [job(progress) for job in jobs]
    relay = _Relay(len(jobs))

    def lane(i: int, job: Callable) -> T:
        try:
            return job(relay.lane(i))
        finally:
            relay.finish(i)

    pool = ThreadPoolExecutor(max_workers=int(lanes), thread_name_prefix="s2r-rollouts")
    try:
        futures = [pool.submit(lane, i, job) for i, job in enumerate(jobs)]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=RELAY_S, return_when=FIRST_COMPLETED)
            relay.flush(progress)
            failed = [f for f in done if f.exception() is not None]
            if failed:
                raise failed[0].exception()
        return [f.result() for f in futures]
    except BaseException:
        relay.stopped.set()                 # the running jobs end at their next step
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
