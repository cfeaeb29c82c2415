"""What runs inside a Ray worker: one encoder loaded once, embedding shard after shard.

:class:`EncoderWorker` is a plain class; :mod:`s2r.embed.ray_backend` turns it into a Ray
actor (``ray.remote(EncoderWorker).options(...)``), so this module does not import Ray. An
actor builds its model once in ``__init__`` (a restarted actor builds it again) and checks
that its weights are the ones the driver keyed the cache with.

Frames reach a worker in one of two ways (:func:`open_frames`):

- a *dataset reference* ``{"spec": ..., "keys": {...}, "fingerprint": ...}``: the worker
  opens the dataset itself from shared storage (once per worker process) and reads only the
  frames of its shards; a worker that sees other files than the driver did (another
  fingerprint) fails instead of embedding them;
- the FrameSet object itself (the driver put it in the object store once, e.g. the demo's
  in-memory frames).

Test hook: with ``S2R_RAY_TEST_KILL_SHARD=<i>`` the worker embedding shard ``i`` exits hard
(``os._exit(1)``) after its first batch, once: the marker file
``S2R_RAY_TEST_KILL_MARKER`` (default: one in the temporary folder) is created first, and a
worker finding it goes on. The tests use it to check that Ray restarts the actor, retries the
shard and that the result still equals a local run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np

from s2r.errors import DataError, EncoderError, S2RError

__all__ = ["EncoderWorker", "open_frames", "KILL_SHARD_ENV", "KILL_MARKER_ENV"]

KILL_SHARD_ENV = "S2R_RAY_TEST_KILL_SHARD"
KILL_MARKER_ENV = "S2R_RAY_TEST_KILL_MARKER"

# Datasets this worker process has opened, by their reference (a worker serves many shards).
_OPENED: dict = {}


def _reference_key(ref: dict) -> tuple:
    spec = ref["spec"]
    spec = tuple(spec) if isinstance(spec, (list, tuple)) else (spec,)
    return spec, tuple(sorted(ref["keys"].items())), ref["fingerprint"]


def open_frames(frames: Any):
    """The FrameSet a worker reads: ``frames`` itself, or the dataset a reference names.

    Parameters
    ----------
    frames : FrameSet or dict
        A FrameSet, or ``{"spec", "keys", "fingerprint"}`` (:func:`s2r.datasets.load_dataset`
        arguments and the fingerprint the driver saw).

    Returns
    -------
    FrameSet

    Raises
    ------
    DataError
        The dataset cannot be opened here, or its fingerprint differs from the driver's (the
        worker does not see the same files: the dataset must be on storage every node
        mounts at the same path).
    """
    if not isinstance(frames, dict):
        return frames
    key = _reference_key(frames)
    if key not in _OPENED:
        from s2r.datasets import load_dataset

        fs = load_dataset(frames["spec"], **frames["keys"])
        if fs.fingerprint != frames["fingerprint"]:
            raise DataError(
                f"dataset {frames['spec']!r} has fingerprint {fs.fingerprint} on Ray worker "
                f"{os.uname().nodename} but {frames['fingerprint']} on the driver: the "
                "workers must read the same files (put the dataset on storage every node "
                "mounts at the same path)")
        _OPENED.clear()  # one dataset at a time per process: bounded memory
        _OPENED[key] = fs
    return _OPENED[key]


def _kill_marker(shard_index: int, hooks: dict) -> Optional[Path]:
    """The marker file of the kill hook when it targets ``shard_index``, else None."""
    target = hooks.get(KILL_SHARD_ENV, os.environ.get(KILL_SHARD_ENV))
    if target is None or str(target).strip() != str(shard_index):
        return None
    marker = hooks.get(KILL_MARKER_ENV, os.environ.get(KILL_MARKER_ENV))
    return Path(marker) if marker else Path(tempfile.gettempdir()) / f"s2r-ray-kill-{target}"


def _claim(marker: Path) -> bool:
    """Create ``marker`` if it does not exist; True when this call created it."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


class EncoderWorker:
    """One encoder built once, embedding shards of frames (the body of a Ray actor).

    Parameters
    ----------
    spec : EncoderSpec
        The encoder to build (the spec itself travels, so user-defined encoders need no
        config file on the workers).
    weights : str
        The weights fingerprint the driver keyed the cache with; a worker whose built model
        has other weights refuses to embed.
    device : str
        ``"cuda"`` for a GPU actor, ``"cpu"`` otherwise.
    batch_size : int, optional
        Frames per forward pass (as :func:`s2r.embed.compute_embeddings`).
    threads : int, optional
        torch's CPU threads (a CPU actor: its CPUs). fp32 sums on a CPU depend on the thread
        count, so a worker with the local run's thread count gives bit-identical embeddings;
        others agree to float rounding (~1e-6).
    hooks : dict, optional
        Test-hook variables forwarded by the driver (``S2R_RAY_TEST_*``).
    """

    def __init__(self, spec, weights: str, device: str, batch_size: Optional[int] = None,
                 threads: Optional[int] = None, hooks: Optional[dict] = None):
        if threads:
            import torch

            torch.set_num_threads(int(threads))
        self.batch_size = batch_size
        self.hooks = dict(hooks or {})
        # An s2r error (weights missing or different here) is kept and raised by each
        # shard: a constructor that raises would make Ray restart the actor in vain.
        self.error: Optional[Exception] = None
        try:
            self.encoder = self._build(spec, weights, device)
        except S2RError as exc:
            self.encoder, self.error = None, exc

    @staticmethod
    def _build(spec, weights: str, device: str):
        """The encoder of ``spec``, checked against the driver's weights fingerprint."""
        from s2r.embed.resolve import build

        encoder = build(spec, device)
        built = str(encoder.weights_fingerprint)
        if built != str(weights):
            raise EncoderError(
                f"encoder {spec.id!r} on Ray worker {os.uname().nodename} has weights "
                f"{built} but the driver expects {weights}: install the same weights on "
                "every node (see 'python -m s2r weights')")
        return encoder

    def embed_shard(self, frames, index: int, start: int, stop: int) -> np.ndarray:
        """Embeddings of frames ``start .. stop - 1``.

        Parameters
        ----------
        frames : FrameSet or dict
            What :func:`open_frames` takes.
        index : int
            The shard's number (for the test hook).
        start, stop : int
            The frame range.

        Returns
        -------
        ndarray of shape (stop - start, D), float32
        """
        from s2r.embed.compute import compute_embeddings

        if self.error is not None:
            raise self.error
        fs = open_frames(frames)
        marker = _kill_marker(index, self.hooks)

        def die_mid_shard(done: int, total: int, message: str = "") -> None:
            if marker is not None and 0 < done < total and _claim(marker):
                os._exit(1)  # the test hook: a worker lost in the middle of a shard

        return compute_embeddings(fs, self.encoder, indices=np.arange(start, stop),
                                  batch_size=self.batch_size, progress=die_mid_shard)

    def device(self) -> str:
        """Where the model runs (``"cuda:0"``, ``"cpu"``)."""
        return str(self.encoder.device)
