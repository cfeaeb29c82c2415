"""Frames in batches: batch sizes, the host-side batch, the read-ahead thread.

:func:`prefetch` runs the (decoding) frame reader in a background thread, ``PREFETCH_BATCHES``
ahead of the model, so memory holds at most a few batches of pixels. On CUDA the reader also
copies each uint8 batch into pinned memory (:func:`host_batch`) so that the transfer to the
device can run without blocking.
"""

from __future__ import annotations

import queue
import threading
from typing import Iterable, Iterator

import numpy as np

from s2r.errors import S2RError

__all__ = ["DEFAULT_BATCH_SIZE_CPU", "DEFAULT_BATCH_SIZE_CUDA", "PREFETCH_BATCHES",
           "device_type", "check_batch_size", "default_batch_size", "host_batch", "prefetch"]

#: Default frames per forward pass when neither the caller nor the encoder says otherwise.
#: On the CPU small batches are faster a frame: a batch's activations stay in the cores' cache
#: (``bench/bench_batch_size.py``, 2-core EPYC: batch 8 is 1.09-1.69x batch 64 for every
#: encoder measured, ResNet-18 to ViT-B, with the same embeddings at both sizes; a batch of
#: another size, e.g. the ragged last one, can round in the last float bits, as any change of
#: batch could before).
DEFAULT_BATCH_SIZE_CPU = 8
DEFAULT_BATCH_SIZE_CUDA = 256
#: Batches read ahead by the background reader (memory holds at most this + 2 batches).
PREFETCH_BATCHES = 1


def device_type(encoder) -> str:
    """``"cuda"``, ``"cpu"``, ... : the type of the device ``encoder`` runs on."""
    device = getattr(encoder, "device", "cpu")
    return getattr(device, "type", str(device).split(":")[0])


def check_batch_size(batch_size) -> int:
    """``batch_size`` as an int; :class:`S2RError` unless it is a positive integer."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 1:
        raise S2RError(f"batch size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def default_batch_size(encoder) -> int:
    """Frames per forward pass: the encoder's own ``batch_size`` if it has one, else 256 on
    CUDA and 8 elsewhere (:data:`DEFAULT_BATCH_SIZE_CPU`)."""
    own = getattr(encoder, "batch_size", None) or getattr(getattr(encoder, "spec", None),
                                                          "batch_size", None)
    if own:
        return check_batch_size(own)
    return DEFAULT_BATCH_SIZE_CUDA if device_type(encoder) == "cuda" else DEFAULT_BATCH_SIZE_CPU


def host_batch(frames: np.ndarray, pin: bool):
    """The uint8 batch as the encoder should receive it: pinned torch tensor on CUDA."""
    if not pin:
        return frames
    import torch  # only on the CUDA path: importing s2r.embed does not import torch

    return torch.from_numpy(np.ascontiguousarray(frames)).pin_memory()


_DONE = object()


def prefetch(batches: Iterable, depth: int = PREFETCH_BATCHES) -> Iterator:
    """Iterate ``batches`` produced by a background thread, ``depth`` items ahead.

    Exceptions in the producer are re-raised in the consumer; leaving the loop early stops
    the producer.
    """
    q: "queue.Queue" = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce():
        try:
            for item in batches:
                if not put(item):
                    return
                del item
            put(_DONE)
        except BaseException as exc:  # handed to the consumer
            put(exc)

    thread = threading.Thread(target=produce, name="s2r-embed-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
            del item
    finally:
        stop.set()
        thread.join()
