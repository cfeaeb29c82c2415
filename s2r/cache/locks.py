"""Per-entry locks, and the one message a process that has to wait for one gives.

A miss takes an exclusive lock on ``locks/<hash>.lock`` (flock via ``filelock``), so two
processes or threads asking for the same key compute it once. The operating system releases
the lock when its holder dies, so a crashed process never leaves a stale lock. A waiter says
once what it waits for (see :func:`s2r.cache.keys.describe_key`); after ``timeout`` seconds
it goes on without the lock (the work may then be done twice; atomic writes keep the result
consistent).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import filelock

__all__ = ["key_lock", "human_seconds"]

_LOG = logging.getLogger("s2r.cache")  # one logger for the whole package


def human_seconds(seconds: float) -> str:
    """``30`` -> ``"30 s"``, ``3600`` -> ``"1 h"``."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


@contextmanager
def key_lock(path: Path, timeout: float, waiting_for: Optional[str] = None,
             name: Optional[str] = None) -> Iterator[bool]:
    """Hold the lock file ``path``; yields False (unlocked) when ``timeout`` ran out.

    When the lock is taken and ``waiting_for`` (what the key stands for) is given, says once,
    as a warning, what it waits for. ``name`` names the entry in the timeout warning when
    ``waiting_for`` is not given.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(str(path))
    try:
        try:
            lock.acquire(blocking=False)
        except filelock.Timeout:
            if waiting_for is not None and timeout > 0:
                _LOG.warning("waiting for another process or thread that is computing the "
                             "%s (up to %s; lock file %s)", waiting_for,
                             human_seconds(timeout), path)
            lock.acquire(timeout=timeout)
    except filelock.Timeout:
        _LOG.warning("%s still held after %s; computing the %s without the lock", path,
                     human_seconds(timeout), waiting_for or name or "cache entry")
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
