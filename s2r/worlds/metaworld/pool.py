"""Worker processes that render Meta-World frames and step its rollouts on every core.

A :class:`Pool` holds ``n`` worker processes (:mod:`.worker`, one renderer each), started on
first use and kept for the life of the process (a worker reuses its renderer, model and
environments across episodes and batches). :func:`shared_pool` is the process's pool, one
worker per core this process may run on; it is closed at exit (each worker frees its GL
context) or by :func:`close_pool`.

The workers are plain child processes (``python -m s2r.worlds.metaworld.worker``) talking
over two pipes with pickled tuples; nothing else writes to those pipes. A worker that fails
answers one line, raised here as :class:`~s2r.errors.DataError`; a worker that dies or stops
answering for :data:`TIMEOUT_S` seconds is ended, and the error names the last lines it wrote
on its standard error. Calls are serialised with a lock (the app may call from several
threads).

Mesa's llvmpipe (the CPU renderer behind ``MUJOCO_GL=egl`` without a GPU) rasterises on as
many threads as the machine has cores, in every process: ``n`` workers on ``n`` cores would
run ``n * n`` rasteriser threads. Each worker gets ``LP_NUM_THREADS`` = its share of the cores
(:func:`rasteriser_threads`) unless the user set it.
"""

from __future__ import annotations

import atexit
import itertools
import os
import subprocess
import sys
import tempfile
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Optional, Sequence

from s2r.errors import DataError
from s2r.settings import core_count

__all__ = ["Pool", "TIMEOUT_S", "close_pool", "core_count", "rasteriser_threads",
           "shared_pool"]

#: Longest wait for one answer of a worker (seconds); a stuck worker is ended after it.
TIMEOUT_S = 900.0
_ROOT = Path(__file__).resolve().parents[3]       # the folder that holds the s2r package


def rasteriser_threads(workers: int, environ=None) -> dict:
    """The environment of one of ``workers`` worker processes: ``LP_NUM_THREADS`` (llvmpipe's
    rasteriser threads) = the cores this process may use shared among the workers, at least 1
    (:func:`s2r.settings.share_of_cores`); a value the user set is kept
    (:func:`s2r.settings.rasteriser_environment`)."""
    from s2r.settings import rasteriser_environment, share_of_cores

    return rasteriser_environment(share_of_cores(max(1, int(workers)), core_count()), environ)


class _Process:
    """One worker (of ``workers``): its process, pipes and standard-error file."""

    def __init__(self, workers: int = 1):
        from s2r.settings import prefer_headless_rendering

        prefer_headless_rendering()                 # the worker inherits MUJOCO_GL
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "s2r.worlds.metaworld.worker", str(to_child),
             str(from_child)], pass_fds=(to_child, from_child), cwd=str(_ROOT),
            stdin=subprocess.DEVNULL, stdout=self.stderr, stderr=self.stderr,
            env=rasteriser_threads(workers))
        os.close(to_child)
        os.close(from_child)
        self.send_conn = Connection(from_parent, readable=False)
        self.recv_conn = Connection(to_parent, writable=False)

    def send(self, request: tuple) -> None:
        try:
            self.send_conn.send(request)
        except (BrokenPipeError, OSError):
            raise DataError(f"a Meta-World worker stopped: {self.tail()}") from None

    def receive(self):
        if not self.recv_conn.poll(TIMEOUT_S):
            self.kill()
            raise DataError(f"a Meta-World worker did not answer within {TIMEOUT_S:.0f} s and "
                            f"was ended ({self.tail()})")
        try:
            status, value = self.recv_conn.recv()
        except (EOFError, OSError):
            self.kill()
            raise DataError(f"a Meta-World worker stopped: {self.tail()}") from None
        if status != "ok":
            raise DataError(f"Meta-World: {value}")
        return value

    def tail(self) -> str:
        """The last line the worker wrote on its standard error (what it died of)."""
        try:
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - 2000))
            lines = [ln for ln in self.stderr.read().decode(errors="replace").splitlines()
                     if ln.strip()]
        except OSError:
            lines = []
        code = self.proc.poll()
        where = f"exit status {code}" if code is not None else "still running"
        return f"{where}; {lines[-1].strip()[:300]}" if lines else where

    def close(self) -> None:
        try:
            self.send_conn.send(("exit",))
        except (BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_files()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_files()

    def _close_files(self) -> None:
        for conn in (self.send_conn, self.recv_conn):
            conn.close()
        self.stderr.close()


class Pool:
    """``n`` Meta-World worker processes (started on first use).

    Parameters
    ----------
    n : int, optional
        Workers; default one per core (:func:`core_count`).
    """

    def __init__(self, n: Optional[int] = None):
        self.n = int(n) if n else core_count()
        self._procs: list = []
        self._lock = threading.RLock()
        self._ids = itertools.count()

    def _started(self) -> list:
        if not self._procs:
            procs = [_Process(self.n) for _ in range(self.n)]
            try:
                for p in procs:
                    p.send(("hello",))
                for p in procs:
                    p.receive()
            except DataError as exc:
                for p in procs:
                    p.kill()
                raise DataError(f"Meta-World cannot render here ({exc}); install the EGL "
                                "libraries (Debian: apt-get install libegl1 libgl1-mesa-dri) "
                                "or set MUJOCO_GL=osmesa with libosmesa6") from None
            self._procs = procs
        return self._procs

    def call(self, requests: dict) -> dict:
        """Send ``requests = {worker index: request}`` to those workers at once and gather
        their answers ``{worker index: value}``."""
        with self._lock:
            procs = self._started()
            try:
                for i, request in requests.items():
                    procs[i].send(request)
                return {i: procs[i].receive() for i in requests}
            except DataError:
                if any(p.proc.poll() is not None for p in procs):
                    self._reset()
                raise

    def paint(self, groups: Sequence[tuple], progress=None, request: str = "paint") -> list:
        """Draw ``groups`` of snapshots (see :mod:`.worker`), spread over the workers by
        frame count; answers one ``(n, H, W, 3)`` array per group, in order (``request=
        "segment"``: the task objects' masks, ``(n, H, W)``)."""
        import numpy as np

        from s2r.progress import report

        total = sum(len(g[-1]) for g in groups)
        out: list = [None] * len(groups)
        chunks = _chunks(groups, 32)
        done = 0
        for start in range(0, len(chunks), self.n):
            round_ = chunks[start:start + self.n]
            answers = self.call({i: (request, [c[1] for c in round_[i:i + 1]])
                                 for i in range(len(round_))})
            for i, (gi, _) in enumerate(round_):
                frames = answers[i][0]
                out[gi] = frames if out[gi] is None else np.concatenate([out[gi], frames])
                done += len(frames)
            report(progress, done, total, f"rendering Meta-World frames ({done}/{total})")
        return out

    def batch_id(self) -> int:
        return next(self._ids)

    def _reset(self) -> None:
        for p in self._procs:
            p.kill()
        self._procs = []

    def close(self) -> None:
        """End the workers (each frees its renderer first); a later call starts new ones."""
        with self._lock:
            for p in self._procs:
                p.close()
            self._procs = []


def _chunks(groups: Sequence[tuple], size: int) -> list:
    """``(group index, sub-group)`` pieces of at most ``size`` snapshots, in order."""
    out = []
    for gi, (key, textures, look, gap, snapshots) in enumerate(groups):
        for s in range(0, len(snapshots), size):
            out.append((gi, (key, textures, look, gap, list(snapshots[s:s + size]))))
    return out


_SHARED: dict = {}


def shared_pool() -> Pool:
    """This process's pool (one worker per core), made on first use."""
    pool = _SHARED.get("pool")
    if pool is None:
        pool = _SHARED["pool"] = Pool()
    return pool


def close_pool() -> None:
    """End this process's workers (they free their renderers); the next use starts new ones."""
    pool = _SHARED.pop("pool", None)
    if pool is not None:
        pool.close()


atexit.register(close_pool)
