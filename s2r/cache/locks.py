"""Per-entry locks, the cache-wide writers' lock, and the one message a process that has to
wait for one gives.

A miss takes an exclusive lock on ``locks/<hash>.lock`` (flock via ``filelock``), so two
processes or threads asking for the same key compute it once. The operating system releases
the lock when its holder dies, so a crashed process (even ``kill -9``) never leaves a stale
lock. A waiter says once what it waits for (see :func:`s2r.cache.keys.describe_key`); after
``timeout`` seconds it goes on without the lock (the work may then be done twice; atomic
writes keep the result consistent).

Around it, every miss holds ``locks/writers.lock`` *shared* (:func:`shared_lock`: any number
of computing processes and threads at once) while it computes and writes; ``cache clear``
takes it *exclusively* without waiting (:func:`exclusive_lock_now`) and refuses when anyone
computes, so a clear never deletes a file a writer is about to rename or record. Where flock
does not exist (Windows) these two are no-ops.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import filelock

try:
    import fcntl
except ImportError:  # Windows: no flock; the writers' lock is a no-op there
    fcntl = None

__all__ = ["key_lock", "human_seconds", "shared_lock", "exclusive_lock_now", "WRITERS_LOCK"]

#: The writers' lock file, in the cache's ``locks/`` folder (not an entry's name: never
#: deleted by ``cache clear``).
WRITERS_LOCK = "writers.lock"

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


def _open_lock_file(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)


@contextmanager
def shared_lock(path: Path, timeout: float) -> Iterator[bool]:
    """Hold the lock file ``path`` shared (with any other shared holder, never while
    :func:`exclusive_lock_now` holds it); yields False when ``timeout`` seconds ran out (the
    caller goes on without it) or where flock does not exist."""
    if fcntl is None:
        yield False
        return
    fd = _open_lock_file(path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                locked = True
                break
            except BlockingIOError:  # a clear is running: it takes a moment
                if time.monotonic() >= deadline:
                    _LOG.warning("%s still held after %s; going on without it", path,
                                 human_seconds(timeout))
                    locked = False
                    break
                time.sleep(0.05)
        yield locked
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def exclusive_lock_now(path: Path) -> Iterator[bool]:
    """Hold the lock file ``path`` exclusively if nobody holds it now; yields False at once
    (without waiting) when someone does. Yields True where flock does not exist."""
    if fcntl is None:
        yield True
        return
    fd = _open_lock_file(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
