"""What runs inside a Ray worker: one encoder loaded once, embedding shard after shard.

:class:`EncoderWorker` is a plain class; :mod:`s2r.embed.ray_backend` turns it into a Ray
actor (``ray.remote(EncoderWorker).options(...)``), so this module does not import Ray. An
actor builds its model once in ``__init__`` (a restarted actor builds it again) and checks
that its weights are the ones the driver keyed the cache with.

Frames reach a worker in one of two ways (:func:`open_frames`):

- a *dataset reference* ``{"spec": ..., "keys": {...}, "fingerprint": ..., "settings":
  ...}``: the worker
  opens the dataset itself from shared storage (once per worker process) and reads only the
  frames of its shards; a worker that sees other files than the driver did (another
  fingerprint) fails instead of embedding them;
- the FrameSet object itself (the driver put it in the object store once, e.g. the demo's
  in-memory frames).

:meth:`EncoderWorker.shard_progress` is the one place a subclass may watch a shard's batches
(the tests' worker that dies in the middle of a shard, to check that Ray restarts the actor
and retries the shard, lives in the tests); production code has no test hook.

A worker uses the driver's settings (:class:`s2r.settings.Settings`, sent with each actor and
dataset reference), never the worker's environment: the weights folder and the hub cache are
the run's, as the spec and the dataset are (shared storage at the same path on every node).
"""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from s2r.errors import DataError, EncoderError, S2RError

__all__ = ["EncoderWorker", "open_frames"]

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

        fs = load_dataset(frames["spec"], **frames["keys"], settings=frames.get("settings"))
        if fs.fingerprint != frames["fingerprint"]:
            raise DataError(
                f"dataset {frames['spec']!r} has fingerprint {fs.fingerprint} on Ray worker "
                f"{os.uname().nodename} but {frames['fingerprint']} on the driver: the "
                "workers must read the same files (put the dataset on storage every node "
                "mounts at the same path)")
        _OPENED.clear()  # one dataset at a time per process: bounded memory
        _OPENED[key] = fs
    return _OPENED[key]


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
        The embedding pass's CPU threads, torch's and ONNX Runtime's (a CPU actor: its CPUs).
        fp32 sums on a CPU depend on the thread count, so a worker with the local run's
        thread count gives bit-identical embeddings; others agree to float rounding (~1e-6).
    settings : s2r.settings.Settings, optional
        The driver's (where the weights file is).
    runtime : {"torch", "onnx"}, optional
        What runs the pass (:mod:`s2r.encoders.runtime`): the one the driver keyed the cache
        with (default the settings').
    """

    def __init__(self, spec, weights: str, device: str, batch_size: Optional[int] = None,
                 threads: Optional[int] = None, settings=None, runtime: Optional[str] = None):
        if threads:
            import torch

            torch.set_num_threads(int(threads))
        self.batch_size = batch_size
        # An s2r error (weights missing or different here) is kept and raised by each
        # shard: a constructor that raises would make Ray restart the actor in vain.
        self.error: Optional[Exception] = None
        try:
            self.encoder = self._build(spec, weights, device, settings, runtime, threads)
        except S2RError as exc:
            self.encoder, self.error = None, exc

    @staticmethod
    def _build(spec, weights: str, device: str, settings=None, runtime=None, threads=None):
        """The encoder of ``spec`` in ``runtime`` on ``threads``, checked against the
        driver's weights fingerprint."""
        from s2r.embed.resolve import build

        encoder = build(spec, device, settings, runtime, threads)
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
            The shard's number (:meth:`shard_progress`).
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
        return compute_embeddings(fs, self.encoder, indices=np.arange(start, stop),
                                  batch_size=self.batch_size, progress=self.shard_progress(index))

    def shard_progress(self, index: int):
        """The progress callback of shard ``index``'s batches (none here; a subclass may
        watch them)."""
        return None

    def device(self) -> str:
        """Where the model runs (``"cuda:0"``, ``"cpu"``)."""
        return str(self.encoder.device)
